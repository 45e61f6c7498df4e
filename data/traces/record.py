"""Record the traces the chapters read by default: the embedded model on the default arithmetic set.

    python data/traces/record.py [--n-full 60] [--n-baselines 30] [--device cpu] [--max-batch 8]
    python data/traces/record.py --model organism --levels 1 2 3 --split eval --seed 22 --out data/traces/arith-organism
    python data/traces/record.py --model organism ... --strategies lase-large --n-large 600

``lase-large`` is gated LASE at the preregistered thresholds (``data/traces/preregistration.json``)
on the ``--n-large`` problems that follow ``lase-full``'s in the same seed's list (so none is shared);
its stage 0 is the leader alone, which makes it the large paired comparison the preregistration names.

Writes one run folder per strategy under ``--out`` (``lase-full`` is LASE with every stage
recorded, for replay; the baselines run on the first ``--n-baselines`` of the same problems).
Every call goes through the call cache, so an interrupted recording resumes where it stopped.
This is the library-level twin of ``lase-nb run`` (see ``lase-nb run --help``), with the extra knobs a fast
machine needs (device, batch size).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import asdict, replace
from pathlib import Path

from lase_nb import preregistration, traces
from lase_nb.answers import grade
from lase_nb.backends.local import MARKER, LocalBackend
from lase_nb.cache import CallCache
from lase_nb.datasets import load_dataset
from lase_nb.engine import Engine
from lase_nb.notes import count_answer_notes
from lase_nb.organism import EVAL_SEEDS, ORGANISM
from lase_nb.replay import DOWN_THRESHOLD_RULE, choose_down_threshold, down_threshold_table
from lase_nb.runner import run_problems
from lase_nb.strategies import SPECS, StrategyConfig, default_examples, recorded


def _model_info(backend: LocalBackend) -> dict:
    """What the manifest says about the weights: the merged folder and, for the organism, its adapter."""
    info = {"path": str(backend.path)}
    marker = Path(backend.path) / MARKER
    if marker.is_file():
        info.update(json.loads(marker.read_text()))
    return info


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="data/traces/arith-smollm2")
    ap.add_argument("--n-full", type=int, default=60)
    ap.add_argument("--n-baselines", type=int, default=30)
    ap.add_argument("--strategies", nargs="*", default=recorded(), choices=recorded() + [LARGE],
                    help="run folders to write (default: all but lase-large; LASE at any thresholds is "
                         "replayed from lase-full)")
    ap.add_argument("--n-large", type=int, default=600,
                    help="lase-large: gated LASE on this many problems after lase-full's")
    ap.add_argument("--model", default="smollm2-135m", help="alias, model folder or .gguf file")
    ap.add_argument("--model-label", default=None, help="model name written to the manifests")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--max-batch", type=int, default=8)
    ap.add_argument("--window", type=int, default=32)
    ap.add_argument("--cache", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-down-calibration", type=int, default=20,
                    help="problems (disjoint from the evaluated ones) on which DOWN's threshold is chosen")
    ap.add_argument("--tau-lp", type=float, default=None, help="gate threshold on exp(LP_min) (default 0.8)")
    ap.add_argument("--tau-h", type=float, default=None, help="gate threshold on H_max in nats (default 0.5)")
    ap.add_argument("--thresholds-from", default=None,
                    help="a full-chain LASE run folder on other problems: choose the thresholds there, the "
                         "most accurate pair costing at most --budget times the leader alone")
    ap.add_argument("--budget", type=float, default=1.5, help="with --thresholds-from: the token ratio to the leader alone")
    ap.add_argument("--levels", type=int, nargs="+", default=None,
                    help="arith difficulty levels to mix, e.g. --levels 1 2 3 (default: the data set's)")
    ap.add_argument("--split", choices=["eval"], default=None,
                    help="arith: draw from the eval split (disjoint by content from the organism's training "
                         f"problems); the organism's recordings use --split eval --seed {EVAL_SEEDS['record']}")
    args = ap.parse_args()
    if args.model == ORGANISM and args.split != "eval":
        ap.error("the organism was trained on the train split; record it on held-out problems: "
                 f"--split eval --seed {EVAL_SEEDS['record']} (the skill evaluation uses {EVAL_SEEDS['calibrate']})")

    backend = LocalBackend(args.model, device=args.device, max_batch=args.max_batch)
    engine = Engine(backend, CallCache(args.cache))
    base = StrategyConfig(seed=args.seed, examples=default_examples("local", args.model))
    gate = {}
    if args.thresholds_from:
        base, gate = _thresholds_from(base, args)
    elif args.tau_lp is not None or args.tau_h is not None:
        base = replace(base, **{k: v for k, v in (("tau_lp", args.tau_lp), ("tau_h", args.tau_h)) if v is not None})
        gate = {"gate": {"tau_lp": base.tau_lp, "tau_h": base.tau_h, "rule": "given on the command line"}}
    model_info = _model_info(backend)
    for name in args.strategies:
        extra = {}
        if name == LARGE:
            strategy, cfg, problems, extra = _large(base, args)
        else:
            strategy, cfg = SPECS[name].recording(base)
            n = args.n_full if cfg.full_chain else args.n_baselines
            problems = load_dataset("arith", None, n, args.seed, levels=args.levels, split=args.split)
        t0 = time.perf_counter()
        if strategy == "down":
            cfg, extra = _calibrate_down(cfg, engine, args, problems)
        results = run_problems(strategy, problems, engine, cfg, window=args.window)
        wall = time.perf_counter() - t0
        answers = answer_distribution(results)
        manifest = traces.provenance(
            command="python data/traces/record.py " + " ".join(sys.argv[1:]),
            strategy=strategy, run_name=name, backend="local", model=args.model_label or backend.model,
            device=args.device, max_batch=args.max_batch, dataset="arith", n=len(problems),
            levels=args.levels, model_files=model_info, seed=args.seed, config=asdict(cfg),
            engine=asdict(engine.stats), wall_s=round(wall, 1), answers=answers,
            notes_stating_answer=count_answer_notes(traces.call_rows(results), traces.stage_rows(results), problems),
            **{**gate, **extra})
        if args.split:
            manifest["split"] = args.split
        traces.write_run(Path(args.out) / name, results, problems, manifest)
        print(f"{name}: {len(problems)} problems in {wall:.0f} s, "
              f"accuracy {sum(r.correct for r in results) / len(results):.3f}", flush=True)
        for role, d in answers.items():
            print(f"  {role:>13}: {d['n']} answers, most common {d['top'][:3]} "
                  f"(top share {d['top_share']:.0%})", flush=True)
    return 0


#: The run folder of gated LASE at the preregistered thresholds on further problems.
LARGE = "lase-large"


def _large(base: StrategyConfig, args) -> tuple[str, StrategyConfig, list, dict]:
    """Gated LASE at the preregistered thresholds on the ``--n-large`` problems after ``lase-full``'s."""
    prereg = preregistration.load()
    th = prereg["thresholds"]
    cfg = replace(base, tau_lp=float(th["tau_lp"]), tau_h=float(th["tau_h"]), full_chain=False)
    every = load_dataset("arith", None, args.n_full + args.n_large, args.seed, levels=args.levels, split=args.split)
    problems = every[args.n_full:]
    return "lase", cfg, problems, {"gate": {
        "tau_lp": cfg.tau_lp, "tau_h": cfg.tau_h, "rule": "preregistered (data/traces/preregistration.json)",
        "preregistration_date": prereg.get("date")},
        "offset": args.n_full}


def answer_distribution(results) -> dict:
    """Per role (the extraction step apart), how many answers and the most common ones: a value
    that dominates (an example's answer copied) shows here first."""
    by_role: dict[str, Counter] = {}
    for r in results:
        for c in list(r.calls) + list(r.recording_calls):
            if c.answer is not None:
                by_role.setdefault(c.role, Counter())[c.answer] += 1
    return {role: {"n": sum(cnt.values()), "top": cnt.most_common(5),
                   "top_share": round(cnt.most_common(1)[0][1] / sum(cnt.values()), 4)}
            for role, cnt in by_role.items()}


def _thresholds_from(base: StrategyConfig, args) -> tuple[StrategyConfig, dict]:
    """LASE's thresholds chosen on a full-chain run of other problems (:func:`lase_nb.replay.gate_for_budget`);
    chains whose question is among the problems recorded here are left out."""
    from lase_nb.replay import chains_from_stages, gate_for_budget
    from lase_nb.runs import problems_from_manifest

    run = traces.load_run(args.thresholds_from)
    n = max(args.n_full, args.n_baselines)
    evaluated = {p.question for p in load_dataset("arith", None, n, args.seed, levels=args.levels, split=args.split)}
    by_id = problems_from_manifest(run.manifest)
    if not by_id:
        raise SystemExit(f"{args.thresholds_from}: cannot rebuild its problems from the manifest")
    keep = [i for i, p in by_id.items() if p.question not in evaluated]
    chains = chains_from_stages(run.stages[run.stages["problem_id"].isin(keep)])
    row = gate_for_budget(chains, args.budget)
    print(f"gate: tau_lp {row.tau_lp:.3f}, tau_h {row.tau_h:.3f} chosen on {len(keep)} problems of "
          f"{args.thresholds_from} (accuracy {row.accuracy:.3f}, escalation {row.escalation_rate:.3f}, "
          f"{row.avg_tokens:.0f} tokens against {row.leader_tokens:.0f} alone)", flush=True)
    return replace(base, tau_lp=float(row.tau_lp), tau_h=float(row.tau_h)), {"gate": {
        "tau_lp": float(row.tau_lp), "tau_h": float(row.tau_h),
        "rule": f"the most accurate pair on a 41 x 42 grid costing at most {args.budget}x the leader alone's "
                "tokens, replayed on a calibration run (ties: fewer tokens, then higher tau_lp)",
        "calibration_run": str(args.thresholds_from), "calibration_seed": run.manifest.get("seed"),
        "calibration_n": len(keep), "calibration": {k: float(row[k]) for k in
                                                    ("accuracy", "avg_tokens", "escalation_rate", "leader_tokens")}}}


def _calibrate_down(cfg: StrategyConfig, engine: Engine, args, evaluated) -> tuple[StrategyConfig, dict]:
    """DOWN's threshold by :data:`lase_nb.replay.DOWN_THRESHOLD_RULE`, on problems the
    evaluated run never sees (another seed, any evaluated question removed)."""
    seen = {p.question for p in evaluated}
    pool = load_dataset("arith", None, 3 * args.n_down_calibration, args.seed + 1000, levels=args.levels,
                        split=args.split)
    cal = [p for p in pool if p.question not in seen][:args.n_down_calibration]
    always = run_problems("down", cal, engine, replace(cfg, down_threshold=1.0), window=args.window)
    first = [grade(r.extra["first_answer"], p.gold, p.kind) for r, p in zip(always, cal)]
    scores = [r.extra["score"] for r in always]
    debated = [r.correct for r in always]
    theta = choose_down_threshold(scores, first, debated)
    table = down_threshold_table(scores, first, debated)
    print(f"down: theta {theta:.3f} chosen on {len(cal)} calibration problems", flush=True)
    return replace(cfg, down_threshold=theta), {"down_threshold": {
        "theta": theta, "rule": DOWN_THRESHOLD_RULE, "calibration_seed": args.seed + 1000,
        "calibration_n": len(cal), "calibration_ids": [p.id for p in cal],
        "table": table.round(4).to_dict(orient="records")}}


if __name__ == "__main__":
    sys.exit(main())
