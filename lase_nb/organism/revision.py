"""The leader's first revision under gated LASE: what a note is worth, and whether the leader can use it.

Gated LASE's first stage is one devil's note and one revision, on the problems the gate escalates.
This module replays that stage exactly with any revision model: the recorded first answer, the
recorded devil's note (as the pipeline passed it), and the model's revision call, then counts the
escalated wrong first answers it **fixes** and the escalated right ones it **breaks**. The same
counts from the recording itself (v5's own revision) and from the ceiling's perfect notes
(:mod:`lase_nb.organism.ceiling`) give the decomposition of chapter 06: how good the note is, and whether
the leader can act on it (the paper's Appendix H).

It also writes the training targets of a revision trained on the organism's *own* notes, and the
stop rules those runs are judged by (:data:`STAGE1_RULE`, :data:`GAIN_RULE`), fixed before any
of them ran.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from .ceiling import obeys_rule, outcome, rate
from ..confidence import uncertain_mask
from .stage_one import StageOneCase, stage_one_cases
from .recipe import Label, first_fault, flagged_step, label_attempt, note_flags, revision_text
from ..paths import DATA_DIR
from ..replay import Chains, replay, stop_stages
from ..stats import clears_both, mcnemar, paired_test
from ..types import Problem

#: Issue 48, step 2: at the best training size, stage 1 of gated LASE (exact replay on the held-out
#: recording) must fix at least 25% of escalated wrong first answers and break at most 5% of
#: escalated right ones; otherwise the round stops and nothing ships.
STAGE1_RULE = {"fix": 0.25, "break_": 0.05}

#: Issue 48, step 3 (run only if step 2 passes): the whole gated chain with the new revision must
#: beat the leader alone by at least 2 points, with the paired bootstrap's lower end above 0.
GAIN_RULE = {"points": 2.0, "ci_low_above": 0.0}

#: What we expected before any replay ran (committed with the rules): on the 104 problems the
#: default gate escalates on v5's recording (64 wrong first answers, 33 of them with a devil's note
#: that names the failing step), a revision trained on v5's own notes keeps the pilot's low break
#: rate (2-5% of 40 right answers) but fixes about as often after a pointer as the pilot did after a
#: perfect one (about 30%), so about 10 of 64 (15%) overall: below the 25% bar. The perfect
#: note's rows (ceiling) fix more than v5's own notes do for the same leader, since every wrong
#: answer gets a pointer there.
PREDICTION = {"fix": 0.15, "break_": 0.05, "stage1_rule_passes": False}

#: What the revision is taught for each kind of note (issue 48: say what you chose and why).
TARGETS = {
    "pointed": "wrong attempt, the note names its first failing step: that step recomputed, changed "
               "and carried through the gold chain",
    "pointed-late": "wrong attempt, the note names a later step: handled as 'holds' (below)",
    "holds": "wrong attempt, the note names a step that holds, or no step: the named step recomputed, "
             "found to agree, and the attempt kept. From the leader's side such a note looks exactly "
             "like a false alarm on a right answer; teaching it to change its answer here teaches it "
             "to change answers its own recomputation confirms, which is how v5 breaks right answers",
    "alarm": "right attempt, the note names a step (a false alarm): the step recomputed, found to "
             "agree, the attempt kept",
    "clear": "right attempt, the note names no step: the attempt kept",
}


def right_after(first_correct: bool, outcome: str) -> bool:
    """Whether the answer is right after the revision, from :func:`lase_nb.organism.ceiling.outcome`'s label."""
    return outcome == "fixed" or (bool(first_correct) and outcome == "kept")


def tally(rows: pd.DataFrame) -> tuple[int, int, int, int]:
    """``(fixed, wrong first answers, broken, right first answers)`` of stage-1 rows."""
    first = rows["first_correct"].astype(bool)
    return (int((rows.loc[~first, "outcome"] == "fixed").sum()), int((~first).sum()),
            int((rows.loc[first, "outcome"] == "broken").sum()), int(first.sum()))


def score(cases: Sequence[StageOneCase], revisions: Sequence[str], source: str) -> pd.DataFrame:
    """One row per escalated problem: what the revision did (``fixed`` / ``kept`` / ``changed`` /
    ``broken`` / ``unboxed``, as :func:`lase_nb.organism.ceiling.outcome` grades the ceiling), whether it is
    right after stage 1, and how the note relates to the attempt (``note_kind``)."""
    rows = []
    for c, text in zip(cases, revisions, strict=True):
        result, answer = outcome(c.first_correct, c.first_answer, text, c.problem.gold, c.problem.kind)
        rows.append({"source": source, "problem_id": c.problem.id, "first_correct": c.first_correct,
                     "first_answer": c.first_answer, "note_kind": note_kind(c.problem, c.attempt, c.note),
                     "outcome": result, "answer": answer, "correct": right_after(c.first_correct, result),
                     "note": c.note, "revision": text})
    return pd.DataFrame(rows)


def note_kind(problem: Problem, attempt: str, note: str) -> str:
    """How a note relates to the attempt it reads: ``pointed`` (a wrong attempt, the note names its
    first failing step), ``pointed-late`` (a later step), ``holds`` (another step or none, on a
    wrong attempt), ``alarm`` (a right attempt, a step named), ``clear`` (a right attempt, none
    named), ``other`` (no chain to compare)."""
    label = label_attempt(problem, attempt)
    k = flagged_step(note) if note_flags(note) else None
    if label.status == "right":
        return "clear" if k is None else "alarm"
    if label.status != "wrong":
        return "other"
    fault = first_fault(problem, label)
    if k is None or fault is None:
        return "holds"
    if k == fault.step:
        return "pointed"
    return "pointed-late" if k > fault.step else "holds"


def target(problem: Problem, attempt: str, note: str) -> tuple[str, str] | None:
    """The revision to teach after ``note`` on ``attempt`` (see :data:`TARGETS`), with the case's
    name; None when the attempt has no chain to compare."""
    label = label_attempt(problem, attempt)
    kind = note_kind(problem, attempt, note)
    if kind == "other":
        return None
    if kind == "pointed":
        return revision_text(problem, label, first_fault(problem, label).step), kind
    return keep_text(problem, label, flagged_step(note) if note_flags(note) else None, attempt), kind


def keep_text(problem: Problem, label: Label, flagged: int | None, attempt: str) -> str:
    """The revision that keeps the attempt: the named step recomputed column by column and found to
    agree (when one is named and the attempt wrote it), then the attempt's own chain."""
    from .recipe import column, solution_text

    chain = solution_text(label.steps) if label.steps else attempt.strip()
    if flagged is None or flagged >= len(label.steps):
        return f"The checks hold, so my answer stands.\n{chain}"
    s = label.steps[flagged]
    work, c = column(s.a, s.op, s.b)
    if c != s.c:  # the named step does not hold after all: a wrong attempt's later step
        return f"The checks hold, so my answer stands.\n{chain}"
    return f"Step {flagged + 1} again: {s.expr}: {work}. That is what I had, so my answer stands.\n{chain}"


def stage_one_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per source: escalated wrong first answers fixed and escalated right ones broken at stage 1
    (Wilson intervals), net problems, and stage 1 minus the leader alone on all escalated problems
    with a paired bootstrap interval (points)."""
    out = []
    for source, g in rows.groupby("source", sort=False):
        fixed, n_wrong, broken, n_right = tally(g)
        t = paired_test(g["correct"].to_numpy(bool), g["first_correct"].to_numpy(bool))
        out.append({"source": source, "escalated": len(g),
                    "fixed": rate(fixed, n_wrong), "broken": rate(broken, n_right),
                    "net": fixed - broken,
                    "vs alone (points, escalated)": f"{100 * t['diff']:+.1f} [{100 * t['diff_lo']:+.1f}, "
                                                    f"{100 * t['diff_hi']:+.1f}]",
                    "McNemar p": round(t["p_value"], 3)})
    return pd.DataFrame(out)


def stage1_verdict(curve: Mapping[str, pd.DataFrame], rule: Mapping[str, float] = STAGE1_RULE) -> str:
    """The stop rule of step 2 on a learning curve ``{size label: rows}``: the best size (most
    net problems) and whether it meets both bars."""
    if not curve:
        return "No training size was measured."
    counts = {k: tally(v) for k, v in curve.items()}
    net = {k: c[0] - c[2] for k, c in counts.items()}
    fix = {k: c[0] / c[1] if c[1] else 0.0 for k, c in counts.items()}
    brk = {k: c[2] / c[3] if c[3] else 0.0 for k, c in counts.items()}
    best = max(net, key=lambda k: (net[k], fix[k]))
    r = {"fix": fix[best], "break_": brk[best]}
    ok_fix, ok_break = r["fix"] >= rule["fix"], r["break_"] <= rule["break_"]
    parts = [f"fixes {100 * r['fix']:.0f}% ({'meets' if ok_fix else 'below'} the {100 * rule['fix']:.0f}% bar)",
             f"breaks {100 * r['break_']:.0f}% ({'meets' if ok_break else 'above'} the {100 * rule['break_']:.0f}% bar)"]
    head = f"At the best size ({best}, net {net[best]:+d} problems) stage 1 " + " and ".join(parts) + ": "
    return head + ("the stop rule passes; step 3 runs." if ok_fix and ok_break
                   else "the stop rule stops the round; nothing ships.")


def examples_from_notes(rows: Iterable[Mapping[str, Any]], problems: Mapping[str, Problem]
                        ) -> tuple[list[tuple[list[dict], str]], dict[str, int]]:
    """(revision messages, target) pairs from recorded ``{id, attempt, note}`` rows, and counts by
    case (:data:`TARGETS`). A note that breaks the rule (states the answer, :func:`lase_nb.organism.ceiling.obeys_rule`)
    makes no example: a fix taught after it would teach the leader to copy a told answer."""
    from ..prompts import revise_messages

    out, counts = [], {}
    for r in rows:
        p = problems.get(r["id"])
        if p is not None and not obeys_rule(r["note"], p, r["attempt"]):  # never teach from a note that tells
            counts["note_states_answer"] = counts.get("note_states_answer", 0) + 1
            continue
        t = None if p is None else target(p, r["attempt"], r["note"])
        if t is None:
            counts["skipped"] = counts.get("skipped", 0) + 1
            continue
        text, kind = t
        out.append((revise_messages(p, r["attempt"], "devil", r["note"], examples=0), text))
        counts[kind] = counts.get(kind, 0) + 1
    return out, counts


def ceiling_stage_one(ceiling_rows: pd.DataFrame, model: str, cases: Sequence[StageOneCase],
                      wrong_variant: str = "a", right_variant: str = "alarm-a") -> pd.DataFrame:
    """The ceiling's rows (:mod:`lase_nb.organism.ceiling`) for the escalated problems, as stage-1 rows: a
    perfect pointer (``wrong_variant``) on each escalated wrong first answer and the paper's attack,
    a false alarm (``right_variant``), on each escalated right one. Escalated problems the ceiling
    could not write a note for (no comparable chain) are left out; :func:`decomposition` keeps their
    first answer."""
    ids = {c.problem.id for c in cases}
    r = ceiling_rows[(ceiling_rows["model"] == model) & ceiling_rows["problem_id"].isin(ids)]
    r = r[(~r["first_correct"] & (r["variant"] == wrong_variant)) | (r["first_correct"] & (r["variant"] == right_variant))]
    out = r[["problem_id", "first_correct", "first_answer", "outcome", "answer", "note", "revision"]].copy()
    out["correct"] = [right_after(f, o) for f, o in zip(out["first_correct"], out["outcome"])]
    return out


def gated_final(stages: pd.DataFrame, tau_lp: float, tau_h: float, last_stage: int | None = None) -> pd.Series:
    """Correctness of gated LASE's output per problem on a full-chain recording: the first stage the
    gate accepts, else the last stage (``last_stage`` caps the chain, e.g. 1 for the first stage only)."""
    out = {}
    for pid, g in stages.sort_values("stage").groupby("problem_id", sort=False):
        if last_stage is not None:
            g = g[g["stage"] <= last_stage]
        p = g["p_min"].astype(float).to_numpy()
        h = g["h_max"].astype(float).to_numpy()
        unsure = uncertain_mask(p, h, tau_lp, tau_h)
        stop = next((i for i, u in enumerate(unsure) if not u), len(g) - 1)
        out[pid] = bool(g["correct"].iloc[stop])
    return pd.Series(out, name="correct")


def decomposition(first: pd.Series, sources: Mapping[str, pd.DataFrame], whole_chain: pd.Series | None = None
                  ) -> pd.DataFrame:
    """Gated LASE's first revision stage against the leader alone, per source of stage-1 rows.

    ``first``: the leader alone, correct per problem (every problem of the recording). ``sources``:
    ``{label: stage-1 rows}`` (``problem_id``, ``first_correct``, ``outcome``, ``correct``) on the
    escalated problems; a problem without a row keeps its first answer. ``whole_chain``: gated LASE's
    output per problem over the whole recorded chain, a last row. Columns: fixes of escalated wrong
    answers, breaks of escalated right ones, net, and the accuracy difference from the leader alone on
    all problems with its paired bootstrap interval and the exact McNemar p."""
    rows = []

    def add(label: str, after: pd.Series, fixed: str, broken: str) -> None:
        t = paired_test(after.reindex(first.index).to_numpy(bool), first.to_numpy(bool))
        rows.append({"stage 1 of gated LASE": label, "fixed": fixed, "broken": broken, "net": t["b"] - t["c"],
                     "vs alone (points)": f"{100 * t['diff']:+.1f} [{100 * t['diff_lo']:+.1f}, {100 * t['diff_hi']:+.1f}]",
                     "McNemar p": round(t["p_value"], 3)})

    for label, r in sources.items():
        after = first.copy()
        after.loc[r["problem_id"].to_numpy()] = r["correct"].to_numpy(bool)
        fixed, n_wrong, broken, n_right = tally(r)
        add(label, after, rate(fixed, n_wrong), rate(broken, n_right))
    if whole_chain is not None:
        add("v5, whole chain (recorded)", whole_chain, "-", "-")
    return pd.DataFrame(rows)


def contrast(a: pd.DataFrame, b: pd.DataFrame, a_name: str, b_name: str) -> str:
    """One sentence comparing two sources of stage-1 rows on the same escalated problems: fixes of
    wrong first answers and breaks of right ones, each with the exact McNemar p of the paired
    difference; comparison words only where p < 0.05 ("no detectable difference" otherwise)."""
    m = a[["problem_id", "first_correct", "outcome"]].merge(b[["problem_id", "outcome"]], on="problem_id",
                                                            suffixes=("_a", "_b"))
    parts = []
    for what, first, bad in (("fixes", False, "fixed"), ("breaks", True, "broken")):
        g = m[m["first_correct"].astype(bool) == first]
        ka, kb = g["outcome_a"].eq(bad).to_numpy(), g["outcome_b"].eq(bad).to_numpy()
        _, _, p = mcnemar(ka, kb)
        word = ("more" if ka.sum() > kb.sum() else "fewer") if p < 0.05 else "no detectable difference"
        target = "escalated wrong first answers" if not first else "escalated right ones"
        parts.append(f"{what} {int(ka.sum())} of {len(g)} {target} against {int(kb.sum())} "
                     f"({word}, McNemar p = {p:.3g})")
    return f"{a_name} against {b_name}: " + "; ".join(parts) + "."


#: Where the stage-1 replays and the learning curve are committed (``data/organism/revision_own.py``).
REVISION_DIR = DATA_DIR / "revision"

#: The committed replays, by file name: what each row of the decomposition is called.
REPLAYS = {"pilot": "pilot reads v5's devil",
           "own-size-0.25": "own-notes 1/4 reads v5's devil",
           "own-size-0.5": "own-notes 1/2 reads v5's devil",
           "own-size-1": "own-notes, all, reads v5's devil"}


def load_replay(name: str, folder: Path | None = None) -> pd.DataFrame | None:
    """A committed stage-1 replay (``data/revision/<name>.jsonl``), or None when it was not run."""
    path = Path(folder or REVISION_DIR) / f"{name}.jsonl"
    return pd.read_json(path, lines=True, dtype={"problem_id": str}) if path.is_file() else None


def decomposition_sources(run: Any, problems: Mapping[str, Problem], ceiling_rows: pd.DataFrame,
                          tau_lp: float, tau_h: float, folder: Path | None = None) -> dict[str, pd.DataFrame]:
    """The decomposition's rows, in order: v5 after its own devil note (from the recording) and after
    a perfect note (the ceiling's rows), then every committed replay (:data:`REPLAYS`), the pilot's
    perfect-note rows beside its own-note replay."""
    cases = stage_one_cases(run, problems, tau_lp, tau_h)
    out = {"v5 reads v5's devil (recorded)": score(cases, [c.recorded_revision for c in cases], "v5"),
           "v5 reads a perfect note": ceiling_stage_one(ceiling_rows, "organism v5", cases)}
    for name, label in REPLAYS.items():
        r = load_replay(name, folder)
        if r is not None:
            out[label] = r
        if name == "pilot" and (ceiling_rows["model"] == "v5 + revision pilot").any():
            out["pilot reads a perfect note"] = ceiling_stage_one(
                ceiling_rows, "v5 + revision pilot", cases)
    v6_full = V6_STUDY / "lase-full"
    if (v6_full / "manifest.json").is_file() and folder is None:
        from ..traces import load_run

        rows = v6_stage_one(load_run(v6_full), problems, tau_lp, tau_h, cases)
        if rows is not None:
            out[NOTE_LEADER[("v6", "v5's own devil note")]] = rows
    return out



def learning_curve(folder: Path | None = None) -> dict[str, pd.DataFrame]:
    """The committed replays of the revision trained on v5's own notes, by training size
    (``{"<k> examples": rows}``, smallest first; sizes from ``train_log.json``'s checkpoints)."""
    import json

    folder = Path(folder or REVISION_DIR)
    log = folder / "train_log.json"
    seen = json.loads(log.read_text()).get("checkpoints", {}) if log.is_file() else {}
    out = {}
    for name in sorted(seen, key=seen.get):
        rows = load_replay(f"own-{name}", folder)
        if rows is not None:
            out[f"{seen[name]} examples"] = rows
    return out


def learning_curve_verdict(folder: Path | None = None) -> str:
    """Step 2's stop rule on the committed learning curve, with each size's fixes and breaks."""
    curve = learning_curve(folder)
    if not curve:
        return "The revision trained on v5's own notes has not been measured here (data/organism/revision_own.py)."
    sizes = "; ".join("{}: fixes {} of {}, breaks {} of {}".format(k, *tally(v)) for k, v in curve.items())
    return f"Learning curve of the revision on v5's own notes (stage 1, held out): {sizes}. " + stage1_verdict(curve)


# ---------------------------------------------------------------- the whole chain (organism v6)

#: Where the organism v6's study lives: ``lase-full`` (the whole chain on the 200 spent problems of
#: the v5 recording), the preregistration, then ``lase-large`` and ``mv`` on fresh problems.
V6_STUDY = DATA_DIR / "traces" / "arith-organism-v6"
#: v5's whole chain on the same 200 problems (the recording every replay above reads).
V5_FULL = DATA_DIR / "traces" / "arith-organism-point" / "lase-full"


def stage_flow(chains: Chains, tau_lp: float, tau_h: float) -> pd.DataFrame:
    """Gated LASE stage by stage on full chains: per stage, the problems the gate sends to it, the
    wrong answers it fixes and the right ones it breaks (against the answer before it), how many
    stop there, and the mean tokens (prompt + completion) of the problems that stop there. Stage 0
    is the leader alone (every problem reaches it; fixes and breaks are not defined)."""
    stop = stop_stages(chains, tau_lp, tau_h)
    rows = []
    for s in range(chains.n_stages):
        reach = stop >= s
        before = chains.correct[:, max(s - 1, 0)]
        now = chains.correct[:, s]
        ends = stop == s
        rows.append({"stage": s, "reached": int(reach.sum()),
                     "fixed": int((reach & now & ~before).sum()) if s else 0,
                     "broken": int((reach & ~now & before).sum()) if s else 0,
                     "stopped": int(ends.sum()),
                     "mean tokens when stopped": round(float(chains.total_tokens[ends, s].mean()), 1) if ends.any() else None})
    return pd.DataFrame(rows)


def whole_chain_test(chains: Chains, tau_lp: float, tau_h: float, n_boot: int = 5000) -> dict[str, Any]:
    """Gated LASE over the whole chain against the leader alone (its stage 0), paired: the exact
    McNemar test and the paired bootstrap interval (:func:`~lase_nb.stats.paired_test`), with the
    escalation rate and the token ratio to the leader alone."""
    r = replay(chains, tau_lp, tau_h)
    t = paired_test(r["correct"].to_numpy(bool), chains.correct[:, 0], n_boot=n_boot, seed=0)
    t["escalated"] = int((r["stop_stage"] > 0).sum())
    t["token_ratio"] = float(r["total_tokens"].mean() / chains.total_tokens[:, 0].mean())
    t["claimed"] = clears_both(t)
    return t


def describe_whole_chain(tests: Mapping[str, Mapping[str, Any]], tau_lp: float, tau_h: float) -> str:
    """One sentence per model (``{label: whole_chain_test}``): gated LASE against the leader alone
    over the whole chain, with both tests and whether both clear (the project's claim rule)."""
    parts = []
    for label, t in tests.items():
        parts.append(f"{label}: {100 * t['acc_a']:.1f}% against {100 * t['acc_b']:.1f}% alone on {t['n']} problems "
                     f"({t['escalated']} escalated), {100 * t['diff']:+.1f} points "
                     f"[{100 * t['diff_lo']:+.1f}, {100 * t['diff_hi']:+.1f}], {t['b']} fixed and {t['c']} broken, "
                     f"exact McNemar p = {t['p_value']:.3g}, {t['token_ratio']:.2f}x the leader's tokens; "
                     f"the claim rule (both tests clear) is {'met' if t['claimed'] else 'not met'}")
    return f"Gated LASE at {tau_lp:g} / {tau_h:g} over the whole chain. " + "; ".join(parts) + "."


def reproduces(calls: pd.DataFrame, recorded: pd.DataFrame, roles: Sequence[tuple[str, int]]) -> dict[str, tuple[int, int]]:
    """How many calls of each ``(role, stage)`` have exactly the text of the same call in ``recorded``
    (two ``calls.jsonl`` tables of the same problems): ``{"role@stage": (identical, compared)}``."""
    out = {}
    for role, stage in roles:
        pick = [t[(t["role"] == role) & (t["stage"] == stage)].drop_duplicates("problem_id").set_index("problem_id")["text"]
                for t in (calls, recorded)]
        ids = pick[0].index.intersection(pick[1].index)
        out[f"{role}@{stage}"] = (int((pick[0].loc[ids] == pick[1].loc[ids]).sum()), len(ids))
    return out


#: Chapter 06's figure: which leader reads which note, as the decomposition's sources name them.
NOTE_LEADER = {("v5", "v5's own devil note"): "v5 reads v5's devil (recorded)",
               ("v5", "a perfect note"): "v5 reads a perfect note",
               ("pilot", "v5's own devil note"): "pilot reads v5's devil",
               ("pilot", "a perfect note"): "pilot reads a perfect note",
               ("v6", "v5's own devil note"): "v6 reads v5's devil (recorded chain)"}


def v6_stage_one(v6_run: Any, problems: Mapping[str, Problem], tau_lp: float, tau_h: float,
                 v5_cases: Sequence[StageOneCase]) -> pd.DataFrame | None:
    """v6's stage 1 from its recorded whole chain, as stage-1 rows on the problems v5's gate escalates
    (None when v6's first answers or devil notes there are not v5's: then it read other notes)."""
    cases = {c.problem.id: c for c in stage_one_cases(v6_run, problems, tau_lp, tau_h)}
    same = [c for c in v5_cases if c.problem.id in cases and cases[c.problem.id].attempt == c.attempt
            and cases[c.problem.id].note == c.note]
    if len(same) != len(v5_cases):
        return None
    return score([cases[c.problem.id] for c in v5_cases], [cases[c.problem.id].recorded_revision for c in v5_cases], "v6")


def note_leader_grid(sources: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Fixes and breaks of stage 1 for each leader and note of :data:`NOTE_LEADER` present in
    ``sources`` (:func:`decomposition_sources`), on the escalated problems every source holds: one
    denominator (``attrs["left_out"]``: the problems some source lacks, e.g. a right answer the ceiling
    wrote no false alarm for)."""
    present = [label for label in NOTE_LEADER.values() if label in sources]
    common = set.intersection(*(set(sources[label]["problem_id"]) for label in present)) if present else set()
    every = set().union(*(set(sources[label]["problem_id"]) for label in present)) if present else set()
    rows = []
    for (leader, note), label in NOTE_LEADER.items():
        if label in sources:
            fixed, wrong, broken, right = tally(sources[label][sources[label]["problem_id"].isin(common)])
            rows.append({"leader": leader, "note": note, "fixed": fixed, "wrong": wrong, "broken": broken,
                         "right": right, "net": fixed - broken})
    out = pd.DataFrame(rows)
    out.attrs["left_out"] = sorted(every - common)
    return out


def describe_note_leader(grid: pd.DataFrame, rule: Mapping[str, float] = STAGE1_RULE) -> str:
    """The figure in words, from its rows: per leader, what a perfect note adds over its own devil's
    note, and per note, what the trained leader adds over v5; each cell against the round's bar
    (:data:`STAGE1_RULE`, not LASE's early stop)."""
    g = grid.set_index(["leader", "note"])
    cells = []
    for (leader, note), r in g.iterrows():
        ok = r["fixed"] >= rule["fix"] * r["wrong"] and r["broken"] <= rule["break_"] * r["right"]
        cells.append(f"{leader} reading {note} fixes {r['fixed']} of {r['wrong']} and breaks {r['broken']} of "
                     f"{r['right']} ({'meets' if ok else 'misses'} the round's bar)")
    left = grid.attrs.get("left_out") or []
    where = (f"On the same escalated problems ({len(left)} left out that a note could not be written for)"
             if left else "On the same escalated problems")
    return (where + ": " + "; ".join(cells) + f". The round's bar: at least {rule['fix']:.0%} of "
            f"the escalated wrong first answers fixed and at most {rule['break_']:.0%} of the escalated right ones broken.")


#: The organisms' studies, oldest first: what each was and where its recordings are.
ROUNDS = {"v4 (telling)": "arith-organism-tell", "v5 (pointing)": "arith-organism-point",
          "v6 (v5 + a revision adapter)": "arith-organism-v6"}


def rounds_table(traces_root: Path | None = None, tau_lp: float = 0.8, tau_h: float = 0.5,
                 prereg: Mapping[str, Any] | None = None, prereg_v6: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """One row per organism of :data:`ROUNDS` whose study is committed: gated LASE over the whole chain
    against the leader alone on its 200 recorded problems (replayed at the thresholds), the devil's
    notes that state the answer on wrong first answers, and its preregistered test on fresh problems
    (``lase-large`` against its own stage 0), with the claim rule's verdict, or why there is none."""
    from .preregistration import chains_of, primary_from_gated_run
    from ..traces import load_run

    root = Path(traces_root) if traces_root else V6_STUDY.parent
    rows = []
    for label, folder in ROUNDS.items():
        full = root / folder / "lase-full"
        if not (full / "manifest.json").is_file():
            continue
        run = load_run(full)
        t = whole_chain_test(chains_of(run), tau_lp, tau_h)
        devil = (run.manifest.get("notes_stating_answer") or {}).get("devil", {}).get("on_wrong", {})
        large = root / folder / "lase-large"
        pre = prereg_v6 if folder == "arith-organism-v6" else prereg if folder == "arith-organism-point" else None
        if pre is not None and (large / "manifest.json").is_file():
            p = primary_from_gated_run(pre, load_run(large))
            fresh = (f"{100 * p['diff']:+.1f} [{100 * p['diff_lo']:+.1f}, {100 * p['diff_hi']:+.1f}] on {p['n']}, "
                     f"p = {p['p_value']:.2g}: {'claimed' if p['claimed'] else 'not claimed'}")
        elif pre is not None:
            fresh = f"preregistered {pre.get('date')}, not yet recorded"
        else:
            fresh = "none (held out by seed only)"
        rows.append({"organism": label,
                     "whole chain, recorded problems": f"{100 * t['diff']:+.1f} [{100 * t['diff_lo']:+.1f}, "
                                                       f"{100 * t['diff_hi']:+.1f}], p = {t['p_value']:.2g}",
                     "fixed / broken": f"{t['b']} / {t['c']}", "tokens vs alone": f"{t['token_ratio']:.1f}x",
                     "devil's notes on wrong attempts stating the answer": f"{devil.get('k', '?')} of {devil.get('n', '?')}",
                     "preregistered test, fresh problems": fresh})
    return pd.DataFrame(rows)


def pilot_audit(rows: pd.DataFrame, problems: Mapping[str, Problem], first: pd.Series) -> dict[str, Any]:
    """Stage-1 rows (the pilot's replay on v5's notes) less what the audit of the lead found inflates
    them: escalated problems whose chain a pilot training problem computes (the "sample" training set,
    which the recording's eval split left in), and fixes after a note that states the gold answer
    (:func:`lase_nb.notes.states_answer`). The removed problems keep their first answer; ``first``:
    the leader alone, correct per problem (all the recording's problems). Returns the counts removed,
    the tally left, and the paired test on all problems."""
    from ..notes import states_answer
    from .recipe import chain_key, training_problems

    trained = {chain_key(p) for p in training_problems("sample")}
    overlap = {pid for pid in rows["problem_id"] if pid in problems and chain_key(problems[pid]) in trained}
    told = {r.problem_id for r in rows.itertuples() if r.outcome == "fixed" and r.problem_id in problems
            and states_answer(r.note, problems[r.problem_id].gold, problems[r.problem_id].question,
                              problems[r.problem_id].question)}
    keep = rows[~rows["problem_id"].isin(overlap | told)]
    after = first.copy()
    after.loc[keep["problem_id"].to_numpy()] = keep["correct"].to_numpy(bool)
    fixed, wrong, broken, right = tally(keep)
    t = paired_test(after.to_numpy(bool), first.to_numpy(bool), n_boot=5000)
    return {"overlap": len(overlap), "overlap_fixed": int(rows[rows["problem_id"].isin(overlap)]["outcome"].eq("fixed").sum()),
            "told": len(told - overlap), "fixed": fixed, "wrong": wrong, "broken": broken, "right": right, "test": t}


def describe_pilot_audit(raw: pd.DataFrame, audit: Mapping[str, Any], first: pd.Series) -> str:
    """The pilot's stage-1 lead as found (after the fact) and as audited, in one paragraph."""
    fixed, wrong, broken, right = tally(raw)
    after = first.copy()
    after.loc[raw["problem_id"].to_numpy()] = raw["correct"].to_numpy(bool)
    t0, t = paired_test(after.to_numpy(bool), first.to_numpy(bool), n_boot=5000), audit["test"]
    return (f"*Found after the fact* (issue 48's replays, the best of five candidates): the pilot reading v5's own "
            f"devil notes fixes {fixed} of {wrong} and breaks {broken} of {right} at stage 1, "
            f"{100 * t0['diff']:+.1f} points on all {t0['n']} problems (McNemar p = {t0['p_value']:.2g}); its break rate "
            f"{'misses' if broken > STAGE1_RULE['break_'] * right else 'meets'} the {STAGE1_RULE['break_']:.0%} bar. "
            f"*Audited:* {audit['overlap']} escalated problems compute the same chain as a pilot training problem "
            f"({audit['overlap_fixed']} of them fixed) and {audit['told']} other "
            f"{'fix follows a note' if audit['told'] == 1 else 'fixes follow notes'} that state{'s' if audit['told'] == 1 else ''} "
            f"the gold answer; without them the pilot fixes {audit['fixed']} of {audit['wrong']} and breaks {audit['broken']} of "
            f"{audit['right']}: {100 * t['diff']:+.1f} points [{100 * t['diff_lo']:+.1f}, {100 * t['diff_hi']:+.1f}] "
            f"on all {t['n']} problems, the removed ones kept at their first answer (McNemar p = {t['p_value']:.2g}). "
            "Stage 1 only: the whole chain and fresh problems are v6's test.")


def describe_v6_verdict(prereg: Mapping[str, Any] | None, study: Path | None = None, sensitivity: bool = True) -> str:
    """v6's preregistered verdict (with ``sensitivity``, the analysis that sets aside the problems whose
    notes state the answer), or what stands in its way: no preregistration yet, or no fresh
    recording yet (then the prediction and the test's power, as fixed). :func:`lase_nb.controls.describe_v6`
    adds the overlap recount and what the gain is made of."""
    from .preregistration import (describe_primary, describe_told_answer_sensitivity, primary_from_gated_run,
                                  told_answer_sensitivity)
    from ..runs import problems_from_manifest
    from ..traces import load_run

    if prereg is None:
        return "Organism v6 has no committed preregistration yet, so no fresh test and no verdict."
    large = Path(study or V6_STUDY) / "lase-large"
    if (large / "manifest.json").is_file():
        run = load_run(large)
        text = ("Organism v6 (v5, with a second adapter for the leader's revision after a note): "
                + describe_primary(primary_from_gated_run(prereg, run), prereg))
        problems = problems_from_manifest(run.manifest) if sensitivity else {}
        if problems:
            text += " " + describe_told_answer_sensitivity(told_answer_sensitivity(prereg, run, problems))
        return text
    pred = prereg["prediction"]
    lo, hi = pred["range"]
    return (f"Organism v6's preregistration was committed on {prereg['date']} before any fresh recording: predicted "
            f"{100 * pred['effect']:+.1f} points ({100 * lo:+.1f} to {100 * hi:+.1f}), power {pred['power']:.0%} on "
            f"{prereg['problems']['n']} fresh problems. The fresh recordings are not made yet: no verdict.")


def agrees_with_replay(run: Any, rows: pd.DataFrame, stage: int = 1) -> dict[str, int]:
    """How far a recorded chain's revisions at ``stage`` agree with a committed stage-1 replay of the
    same problems (``rows``: :func:`load_replay`): identical texts, and the same answer when not."""
    calls = run.calls
    rec = calls[(calls["role"] == "leader") & (calls["stage"] == stage)].drop_duplicates("problem_id").set_index("problem_id")
    ids = [pid for pid in rows["problem_id"] if pid in rec.index]
    mine = rows.set_index("problem_id").loc[ids]
    same_text = int((rec.loc[ids, "text"].astype(str) == mine["revision"].astype(str)).sum())
    same_answer = int(sum(str(a) == str(b) for a, b in zip(rec.loc[ids, "answer"], mine["answer"])))
    return {"compared": len(ids), "identical": same_text, "same_answer": same_answer}


#: Organism v6's control pair (``control-level1-v6/<model>/lase-full``: the preregistration's level-1 problems).
V6_CONTROL = V6_STUDY.parent / "control-level1-v6"


def v6_secondary(prereg: Mapping[str, Any], study: Path | None = None, control: Path | None = None) -> pd.DataFrame:
    """Organism v6's preregistered secondary endpoints, each with the numbers it names and, where it
    compares two answers per problem, the paired bootstrap interval and the exact p (McNemar; for
    the control's difference of two gains, the sign test of :func:`lase_nb.stats.gain_difference`)
    (reported, no claim: the preregistration claims only the primary test). The bootstrap is the
    preregistration's own (its resamples and seed: "the same two tests"). Rows for recordings
    not made yet say so. ``study``: v6's folder (``lase-large``, ``mv``); ``control``: the control
    pair's folder (``organism-v6`` and ``smollm2``, each ``lase-full``)."""
    from .preregistration import AIM, aim_result, bootstrap_settings, chains_of
    from .regimes import compare_gains
    from ..traces import load_run

    study, control = Path(study or V6_STUDY), Path(control or V6_CONTROL)
    th = prereg["thresholds"]
    same_tests = bootstrap_settings(prereg)
    rows: list[dict[str, Any]] = []

    def add(endpoint: str, result: str, t: Mapping[str, Any] | None = None) -> None:
        rows.append({"endpoint": endpoint, "result": result,
                     "difference, points [95% CI]": (f"{100 * t['diff']:+.1f} [{100 * t['diff_lo']:+.1f}, "
                                                     f"{100 * t['diff_hi']:+.1f}]" if t else ""),
                     "exact p": f"{t['p_value']:.2g}" if t else ""})

    large = study / "lase-large"
    if not (large / "manifest.json").is_file():
        add("all", "lase-large is not recorded yet")
        return pd.DataFrame(rows).set_index("endpoint")
    run = load_run(large)
    st = run.stages
    s0 = st[st["stage"] == 0].set_index("problem_id")
    s1 = st[st["stage"] == 1].set_index("problem_id")
    ids = s1.index.intersection(s0.index)
    first, second = s0.loc[ids, "correct"].to_numpy(bool), s1.loc[ids, "correct"].to_numpy(bool)
    t1 = paired_test(second, first, **same_tests)
    add("stage 1 on the escalated problems", f"{len(ids)} escalated: fixes {int((~first & second).sum())} of {int((~first).sum())} wrong "
        f"first answers, breaks {int((first & ~second).sum())} of {int(first.sum())} right ones", t1)
    final = run.problems.set_index("problem_id")
    alone_tokens = (s0["prompt_tokens"] + s0["completion_tokens"]).reindex(final.index)
    add("tokens against the leader alone", f"{final['total_tokens'].mean():.0f} vs {alone_tokens.mean():.0f} per "
        f"problem: {final['total_tokens'].mean() / alone_tokens.mean():.2f}x")
    mv = study / "mv"
    if (mv / "manifest.json").is_file():
        mv_run = load_run(mv)
        aim = aim_result(run.problems, mv_run.problems)
        pair = final.join(mv_run.problems.set_index("problem_id")["correct"].rename("mv"), how="inner")
        add("the paper's headline against MV(7)", f"LASE {100 * aim['acc_lase']:.1f}% vs MV(7) {100 * aim['acc_mv']:.1f}% "
            f"on {aim['n']} problems at {aim['token_ratio']:.2f}x its tokens: the aim (within "
            f"{100 * AIM['points']:g} point, at most {AIM['token_ratio']:g}x) is {'met' if aim['met'] else 'not met'}",
            paired_test(pair["correct"].to_numpy(bool), pair["mv"].to_numpy(bool), **same_tests))
    else:
        add("the paper's headline against MV(7)", "mv is not recorded yet")
    notes = run.manifest.get("notes_stating_answer") or {}
    add("notes stating the final answer", "; ".join(f"{role} {c['on_wrong']['k']} of {c['on_wrong']['n']}"
                                                    for role, c in notes.items()) + " (on wrong attempts)")
    pair = {m: control / m / "lase-full" for m in ("organism-v6", "smollm2")}
    if all((p / "manifest.json").is_file() for p in pair.values()):
        c = compare_gains(chains_of(load_run(pair["organism-v6"])), chains_of(load_run(pair["smollm2"])),
                          th["tau_lp"], th["tau_h"], **same_tests)
        ra, rb = c["regime_a"], c["regime_b"]
        add("the control: each model's gain on its level-1 problems",
            f"organism v6 {100 * ra['gain']:+.1f} [{100 * ra['gain_lo']:+.1f}, {100 * ra['gain_hi']:+.1f}] "
            f"(p = {ra['p_value']:.2g}), SmolLM2 {100 * rb['gain']:+.1f} [{100 * rb['gain_lo']:+.1f}, "
            f"{100 * rb['gain_hi']:+.1f}] (p = {rb['p_value']:.2g}) on {c['n']} problems; the difference of the gains "
            "(sign test)",
            c["difference"])
    else:
        add("the control: each model's gain on its level-1 problems", "the control pair is not recorded yet")
    return pd.DataFrame(rows).set_index("endpoint")
