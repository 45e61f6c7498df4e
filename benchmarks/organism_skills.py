"""The organism's skills on calibration problems, measured through the real pipeline.

    .venv/bin/python benchmarks/organism_skills.py                 # the committed adapter
    .venv/bin/python benchmarks/organism_skills.py --model PATH    # another merged model folder

On ``--n`` calibration problems of levels 1-3 (the eval split, disjoint by content from every
training set; seed ``organism.EVAL_SEEDS["calibrate"]``, never recorded) the single agent answers
zero-shot; on the first ``--n-chain`` of them the full LASE chain runs with every stage forced,
and gated LASE runs on all ``--n`` at the default thresholds. It reports solve accuracy per
level, the gate's AUROC and reliability bins, how often each supporter's note flags a failing
step on wrong and on right attempts, how many notes state the answer (:mod:`lase_nb.notes`), and
among escalated problems how many wrong first answers end right (fixed) and right ones end wrong
(broken), forced and gated, with the gated gain's exact McNemar test and paired bootstrap
interval. Runs go to ``build/organism/eval`` (not ``data/traces``); ``--manifest`` writes the
numbers into the manifest given (``data/organism/manifest.json`` by default).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "data" / "organism"))  # round 3's readers: data/organism/round3.py

import round3  # noqa: E402
from lase_nb import stats  # noqa: E402
from lase_nb.organism import recipe as organism  # noqa: E402
from lase_nb.backends.local import ORGANISM_DIR, ORGANISM_MODEL, LocalBackend  # noqa: E402
from lase_nb.cache import CallCache  # noqa: E402
from lase_nb.notes import count_answer_notes  # noqa: E402
from lase_nb.confidence import uncertain_mask  # noqa: E402
from lase_nb.engine import Engine  # noqa: E402
from lase_nb.runner import run_problems  # noqa: E402
from lase_nb.strategies import StrategyConfig  # noqa: E402
from lase_nb.traces import call_rows, provenance, stage_rows, write_run  # noqa: E402

BINS = [0.0, 0.5, 0.8, 0.99, 1.0]


def _rate(k: int, n: int) -> dict:
    lo, hi = stats.wilson_interval(k, n) if n else (float("nan"), float("nan"))
    return {"k": int(k), "n": int(n), "rate": round(k / n, 4) if n else None,
            "ci": [round(lo, 4), round(hi, 4)] if n else None}


def solve_report(problems, results, cfg) -> dict:
    level = np.array([p.meta["level"] for p in problems])
    ok = np.array([r.correct for r in results])
    strict = np.array([r.correct_strict for r in results])
    p_min = np.array([np.nan if r.calls[-1].p_min is None else r.calls[-1].p_min for r in results])
    h_max = np.array([np.nan if r.calls[-1].h_max is None else r.calls[-1].h_max for r in results])
    auc, lo, hi = stats.auroc_with_ci(-p_min, ok)
    auc_h, lo_h, hi_h = stats.auroc_with_ci(h_max, ok)
    unsure = uncertain_mask(p_min, h_max, cfg.tau_lp, cfg.tau_h)
    table = stats.reliability_table(np.nan_to_num(p_min, nan=0.0), ok, BINS)
    return {
        "problems": len(problems),
        "accuracy": _rate(ok.sum(), len(ok)),
        "accuracy_strict": _rate(strict.sum(), len(ok)),
        "by_level": {int(lv): _rate(ok[level == lv].sum(), int((level == lv).sum())) for lv in sorted(set(level))},
        "no_box": int(sum(r.answer_strict is None for r in results)),
        "gate": {"auroc_p_min": [round(auc, 3), round(lo, 3), round(hi, 3)],
                 "auroc_h_max": [round(auc_h, 3), round(lo_h, 3), round(hi_h, 3)],
                 "tau_lp": cfg.tau_lp, "tau_h": cfg.tau_h,
                 "escalated": _rate(unsure.sum(), len(ok)),
                 "accuracy_escalated": _rate(ok[unsure].sum(), int(unsure.sum())),
                 "accuracy_kept": _rate(ok[~unsure].sum(), int((~unsure).sum())),
                 "reliability_p_min": [
                     {"bin": str(row.bin), "count": int(row.count),
                      "accuracy": None if row.count == 0 else round(float(row.accuracy), 3)}
                     for row in table.itertuples()]},
        "common_answers": Counter(r.answer for r in results).most_common(5),
    }


def chain_report(problems, results) -> dict:
    """Reviewer flags, fixes and breaks, from full chains (every stage forced)."""
    flags: dict[str, dict[str, list[int]]] = {}
    for r in results:
        calls = r.calls + r.recording_calls
        for c in calls:
            if c.role not in organism.NOTES:
                continue
            before = r.stages[c.stage - 1].correct
            f = flags.setdefault(c.role, {"wrong": [0, 0], "right": [0, 0]})
            key = "right" if before else "wrong"
            f[key][0] += organism.note_flags(c.text)
            f[key][1] += 1
    esc = [r for r in results if r.stages[0].uncertain]
    first_wrong = [r for r in esc if not r.stages[0].correct]
    first_right = [r for r in esc if r.stages[0].correct]
    n = len(results)
    return {
        "problems": n,
        "stage_accuracy": [round(float(np.mean([r.stages[t].correct for r in results])), 4)
                           for t in range(len(results[0].stages))],
        "reviewer_flags": {role: {"on_wrong_attempts": _rate(*v["wrong"]), "on_right_attempts": _rate(*v["right"])}
                           for role, v in flags.items()},
        "escalated": len(esc),
        "forced_chain": {"fixed": _rate(sum(r.stages[-1].correct for r in first_wrong), len(first_wrong)),
                         "broken": _rate(sum(not r.stages[-1].correct for r in first_right), len(first_right))},
        "gated": {"fixed": _rate(sum(r.correct for r in first_wrong), len(first_wrong)),
                  "broken": _rate(sum(not r.correct for r in first_right), len(first_right)),
                  "accuracy": _rate(sum(r.correct for r in results), n),
                  "single_accuracy": _rate(sum(r.stages[0].correct for r in results), n)},
        "notes_stating_answer": _answer_notes(results, problems),
    }


def _answer_notes(results, problems) -> dict:
    counts = count_answer_notes(call_rows(results), stage_rows(results), problems)
    return {role: {k: _rate(v["k"], v["n"]) for k, v in d.items()} for role, d in counts.items()}


def stage_report(problems, results) -> dict:
    """Round 3's targets read stage by stage from forced chains: the devil's flags on wrong and on
    right attempts, whether it names the first failing step, and what each revision did with its
    note (:func:`round3.read_revision`): redid a step right, carried a changed value,
    boxed its chain's last result, kept a right answer after a false alarm, contradicted itself."""
    by_id = {p.id: p for p in problems}
    per: dict[str, Counter] = {}
    for r in results:
        p = by_id[r.problem_id]
        calls = r.calls + r.recording_calls
        leader = {c.stage: c for c in calls if c.role == "leader"}
        notes = {c.stage: c for c in calls if c.role in organism.NOTES}
        for t, note in sorted(notes.items()):
            if t not in leader or t - 1 not in leader:
                continue
            attempt, rev = leader[t - 1].text, leader[t].text
            right_before, right_after = r.stages[t - 1].correct, r.stages[t].correct
            d = per.setdefault(note.role, Counter())
            flags = organism.note_flags(note.text)
            side = "right" if right_before else "wrong"
            d[f"flags_on_{side}"] += flags
            d[f"attempts_{side}"] += 1
            if flags and not right_before:
                d["flagged_wrong"] += 1
                d["names_first_failing"] += organism.flagged_step(note.text) == organism.departure_step(p, attempt)
            if flags and right_before:
                d["false_alarms"] += 1
                d["kept_after_false_alarm"] += right_after
            rd = round3.read_revision(p, attempt, note.text, rev)
            if rd["flagged"] is not None:
                d["named_a_step"] += 1
                d["redid_named_step"] += rd["redone"] == rd["flagged"]
                d["redid_named_step_right"] += bool(rd["redone"] == rd["flagged"] and rd["recomputed_right"])
            d["recomputed"] += rd["recomputed"]
            d["recomputed_right"] += bool(rd["recomputed_right"])
            d["changed"] += bool(rd["changed"])
            d["carried"] += bool(rd["carried"])
            d["with_chain"] += rd["box_is_chain_end"] is not None
            d["box_is_chain_end"] += bool(rd["box_is_chain_end"])
            d["contradicts"] += rd["contradicts"]
            d["fixed"] += (not right_before) and right_after
            d["broken"] += right_before and not right_after
    out = {}
    for role, d in per.items():
        out[role] = {
            "flags_on_wrong": _rate(d["flags_on_wrong"], d["attempts_wrong"]),
            "flags_on_right": _rate(d["flags_on_right"], d["attempts_right"]),
            "names_first_failing_step": _rate(d["names_first_failing"], d["flagged_wrong"]),
            "revision_redoes_named_step_right": _rate(d["redid_named_step_right"], d["named_a_step"]),
            "revision_recomputes_right": _rate(d["recomputed_right"], d["recomputed"]),
            "revision_carries_changed_value": _rate(d["carried"], d["changed"]),
            "revision_box_is_chain_end": _rate(d["box_is_chain_end"], d["with_chain"]),
            "revision_keeps_right_after_false_alarm": _rate(d["kept_after_false_alarm"], d["false_alarms"]),
            "revision_contradicts_itself": _rate(d["contradicts"], d["attempts_wrong"] + d["attempts_right"]),
            "fixed": _rate(d["fixed"], d["attempts_wrong"]), "broken": _rate(d["broken"], d["attempts_right"]),
        }
    return out


def followups_report(problems, engine) -> dict:
    """Whether MAD's round-2 debaters, DOWN's debate rounds and judge (debate forced: threshold 1.0)
    and MoA's later proposers and aggregator write their own strategy's format
    (:func:`round3.follow_up_format`), with each strategy's accuracy on these problems."""
    out = {}
    for name, cfg in (("mad", StrategyConfig(examples=0)), ("moa", StrategyConfig(examples=0)),
                      ("down", StrategyConfig(examples=0, down_threshold=1.0, down_final="judge"))):
        results = run_problems(name, problems, engine, cfg)
        counts: dict[str, Counter] = {}
        for r in results:
            for c in r.calls:
                follow = (c.role in ("debater", "proposer") and c.stage >= 1) or c.role in ("aggregator", "judge")
                if follow:
                    kind = "peers" if c.role == "debater" else "aggregate"
                    counts.setdefault(c.role, Counter())[round3.follow_up_format(c.text, kind)] += 1
        out[name] = {"accuracy": _rate(sum(r.correct for r in results), len(results)),
                     **{role: {"own_format": _rate(v["own"], sum(v.values())), "lase_text": v["lase"],
                               "other": v["other"]} for role, v in counts.items()}}
    return out


def gated_report(problems, results) -> dict:
    """Gated LASE against its own stage 0 (the leader alone) on the same problems."""
    alone = np.array([r.stages[0].correct for r in results])
    lase = np.array([r.correct for r in results])
    esc = np.array([r.stages[0].uncertain for r in results])
    test = stats.paired_test(lase, alone, n_boot=5000)
    tokens = np.array([sum(c.prompt_tokens + c.completion_tokens for c in r.calls) for r in results])
    lead = np.array([sum(c.prompt_tokens + c.completion_tokens for c in r.calls if c.stage == 0) for r in results])
    return {"problems": len(results), "accuracy": _rate(lase.sum(), len(lase)),
            "leader_alone": _rate(alone.sum(), len(alone)), "escalated": _rate(esc.sum(), len(esc)),
            "fixed": _rate(int((esc & ~alone & lase).sum()), int((esc & ~alone).sum())),
            "broken": _rate(int((esc & alone & ~lase).sum()), int((esc & alone).sum())),
            "gain": {k: (round(float(v), 4) if isinstance(v, float) else v) for k, v in test.items()},
            "token_ratio": round(float(tokens.sum() / lead.sum()), 3),
            "notes_stating_answer": _answer_notes(results, problems)}


def unit_report(backend, steps) -> dict:
    """The careful method on its own (the unit skill): each held-out step asked for greedily, its
    line parsed and checked (:func:`round3.read_careful`); right = the line's value is
    the step's true result. Per operation, with Wilson intervals, and the first failures verbatim."""
    from lase_nb.prompts import careful_messages
    from lase_nb.types import GenParams

    params = GenParams(temperature=0.0, max_tokens=200, top_logprobs=0, repeat_stop=32)
    gens = backend.generate_many([(careful_messages(s.expr), params) for s in steps])
    rows = []
    for s, g in zip(steps, gens):
        w = round3.read_careful(g.text)
        rows.append({"step": s.expr, "op": s.op, "right": bool(w and w.right),
                     "facts_true": bool(w and w.facts_true), "parsed": w is not None, "text": g.text})
    by_op = {op: _rate(sum(r["right"] for r in rows if r["op"] == op), sum(r["op"] == op for r in rows))
             for op in "+-*/"}
    return {"steps": len(rows), "right": _rate(sum(r["right"] for r in rows), len(rows)),
            "facts_true": _rate(sum(r["facts_true"] for r in rows), len(rows)),
            "parsed": _rate(sum(r["parsed"] for r in rows), len(rows)), "by_op": by_op,
            "failures": [{"step": r["step"], "text": r["text"]} for r in rows if not r["right"]][:12]}


def _pct(d: dict | None) -> str:
    return "—" if not d or d.get("n") in (0, None) else f"{100 * d['k'] / d['n']:.0f}% ({d['k']}/{d['n']})"


def target_table(report: dict, unit: dict | None = None) -> str:
    """The round-3 targets, row by row, from a report written by this script (and the unit skill's)."""
    st, ch, gd, so = report.get("stages", {}), report["chain"], report["gated"], report["solve"]
    dv = st.get("devil", {})
    revs = [v for v in st.values()]

    def pooled(key: str) -> dict:
        k = sum(v[key]["k"] for v in revs if v.get(key))
        n = sum(v[key]["n"] for v in revs if v.get(key))
        return {"k": k, "n": n}

    notes = ch.get("notes_stating_answer", {})
    follow = report.get("follow_ups") or {}
    fmt = {name: {role: d["own_format"] for role, d in v.items() if isinstance(d, dict) and "own_format" in d}
           for name, v in follow.items()}
    g = gd["gain"]
    rows = [
        ("the careful method alone, held-out steps", _pct((unit or {}).get("right")), ">= 97%"),
        ("first answers right; gate AUROC", f"{_pct(so['accuracy'])}; {so['gate']['auroc_p_min'][0]:.2f}",
         "60-80%; >= 0.75"),
        ("devil flags wrong / right first answers (forced chains)",
         f"{_pct(dv.get('flags_on_wrong'))} / {_pct(dv.get('flags_on_right'))}", ">= 70% / <= 15%"),
        ("devil names the first failing step, of flagged wrong answers", _pct(dv.get("names_first_failing_step")),
         ">= 75%"),
        ("revision recomputes a named step right (all stages)", _pct(pooled("revision_redoes_named_step_right")),
         ">= 85%"),
        ("revision carries a changed value; box = the chain's last result",
         f"{_pct(pooled('revision_carries_changed_value'))}; {_pct(pooled('revision_box_is_chain_end'))}",
         ">= 90%; >= 95%"),
        ("revision keeps a right answer after a devil's false alarm",
         _pct(dv.get("revision_keeps_right_after_false_alarm")), ">= 90%"),
        ("notes that state the answer, on wrong first answers (forced chains)",
         "; ".join(f"{r} {_pct(d.get('on_wrong'))}" for r, d in notes.items()), "<= 2% per role"),
        ("MAD / DOWN / MoA follow-ups in their own format",
         " / ".join("; ".join(f"{role} {_pct(d)}" for role, d in fmt.get(n, {}).items()) or "—"
                    for n in ("mad", "down", "moa")), ">= 95% each"),
        ("gated LASE: fixes of escalated wrong / breaks of escalated right",
         f"{_pct(gd['fixed'])} / {_pct(gd['broken'])}", ">= 35% / <= 5%"),
        ("gated LASE vs the leader alone",
         f"{_pct(gd['accuracy'])} vs {_pct(gd['leader_alone'])}: {100 * g.get('diff', float('nan')):+.1f} points "
         f"[{100 * g.get('diff_lo', float('nan')):+.1f}, {100 * g.get('diff_hi', float('nan')):+.1f}], "
         f"McNemar {stats.p_text(g['p_value']) if 'p_value' in g else 'p = n/a'} ({g.get('b')} fixed, {g.get('c')} broken)", "CI > 0 and p < 0.05"),
    ]
    out = ["| stage | measured | target |", "|---|---|---|"]
    out += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=ORGANISM_MODEL)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--n-chain", type=int, default=100)
    ap.add_argument("--max-batch", type=int, default=16)
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "organism" / "eval")
    ap.add_argument("--seed", type=int, default=organism.EVAL_SEEDS["calibrate3"],
                    help="calibration problems' seed (round 3: a seed no recording uses)")
    ap.add_argument("--n-follow", type=int, default=30, help="problems MAD, DOWN and MoA run on (format check)")
    ap.add_argument("--table", type=Path, metavar="DIR",
                    help="print the round-3 target table from DIR/report.json (and DIR/unit.json) and stop")
    ap.add_argument("--unit", type=int, default=0, metavar="N",
                    help="measure only the careful method on N held-out steps (the unit skill) and stop")
    ap.add_argument("--manifest", action="store_true", help="write the numbers into --manifest-path")
    ap.add_argument("--manifest-path", type=Path, default=ORGANISM_DIR / "manifest.json")
    args = ap.parse_args(argv)

    if args.table:
        unit = args.table / "unit.json"
        print(target_table(json.loads((args.table / "report.json").read_text()),
                           json.loads(unit.read_text())["unit_skill"] if unit.is_file() else None))
        return 0
    t0 = time.perf_counter()
    backend = LocalBackend(args.model, max_batch=args.max_batch)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.unit:
        report = {"model": args.model, "unit_skill": unit_report(
            backend, round3.unit_steps(args.unit, args.seed, "eval")),
            "wall_s": round(time.perf_counter() - t0, 1), "date": time.strftime("%Y-%m-%d")}
        (args.out / "unit.json").write_text(json.dumps(report, indent=1) + "\n")
        print(json.dumps({k: v for k, v in report["unit_skill"].items() if k != "failures"}, indent=1))
        return 0
    engine = Engine(backend, CallCache(args.out / "calls.sqlite"))
    cfg = StrategyConfig(examples=0)
    problems = organism.eval_problems(args.n, seed=args.seed)
    meta = provenance(backend="local", model=args.model, dataset="arith", levels=[1, 2, 3],
                      seed=args.seed, split="eval", examples=0, problem_set="organism-eval")
    single = run_problems("single", problems, engine, cfg)
    write_run(args.out / "single", single, problems, {**meta, "strategy": "single", "n": len(problems)})
    chain_problems = problems[:args.n_chain]
    full_cfg = StrategyConfig(examples=0, full_chain=True)
    chains = run_problems("lase", chain_problems, engine, full_cfg)
    write_run(args.out / "lase-full", chains, chain_problems,
              {**meta, "strategy": "lase", "full_chain": True, "n": len(chain_problems)})
    gated = run_problems("lase", problems, engine, cfg)
    write_run(args.out / "lase", gated, problems, {**meta, "strategy": "lase", "n": len(problems)})
    follow = followups_report(problems[:args.n_follow], engine) if args.n_follow else None
    report = {"model": args.model, "problems_seed": args.seed, "split": "eval",
              "levels": [1, 2, 3],
              "solve": solve_report(problems, single, cfg), "chain": chain_report(chain_problems, chains),
              "stages": stage_report(chain_problems, chains),
              "gated": gated_report(problems, gated), "follow_ups": follow,
              "wall_s": round(time.perf_counter() - t0, 1), "device": "cpu",
              "date": time.strftime("%Y-%m-%d")}
    (args.out / "report.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    print(json.dumps(report, indent=1, default=str))
    if args.manifest:
        path = args.manifest_path
        manifest = json.loads(path.read_text())
        manifest["evaluation"] = report
        path.write_text(json.dumps(manifest, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
