"""Chapter 06 (notebooks/06_failure_modes): failure modes of confidence-gated debate, from recorded traces.

- :func:`confident_errors`: wrong leader answers with U = 0, which LASE accepts without a second look;
- :func:`revision_outcomes` / :func:`execution_failures`: what the leader did with a supporter's
  note; an *execution failure* is, heuristically, a note that flags a real error (the previous
  answer was wrong and the note says so) followed by a revision that is still wrong or has no
  boxed answer. Whether the note was actually *right* is not checked: see :func:`flags_error`;
- :func:`escalation_by_level` / :func:`cost_by_level`: how often the gate escalates, and what it
  costs, as problems get harder (problem level as a stand-in for a weaker model);
- :func:`escalation_by_model` / :func:`describe_escalation_by_model`: the same question across
  models: does the weaker model (lower leader accuracy) escalate more?
- :func:`unparsed_by_stage`: leader answers that never got boxed, and why (ran out of tokens or
  stopped without a box);
- :func:`render_exchange` / :func:`render_answer`: one attempt -> note -> revision exchange, or one
  answer, drawn by the package's one transcript renderer (:mod:`lase_nb.chapters.transcripts`).

Runs are loaded by :func:`lase_nb.runs.load_runs`; the strategies' table is
:func:`lase_nb.tables.comparison_table`, as in chapter 04.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .. import reference
from ..confidence import uncertain_mask
from ..errors import DataError
from ..notes import mentions
from ..stats import AUROC_N_BOOT, p_text, pct, points, proportions_test, wilson_interval
from ..strategies import EXTRACT_ROLE, SPECS
from ..answers import answer_or_none
from ..transcripts import ANSWERER_ROLES, render_transcript, transcript_entries
from ..plots import NEUTRAL_DARK, NEUTRAL_LIGHT, NEUTRAL_MID

__all__ = [
    "describe_separation",
    "APPENDIX_H_RULES",
    "appendix_h_cases",
    "ERROR_WORDS",
    "with_gate",
    "confident_errors",
    "flags_error",
    "revision_outcomes",
    "execution_failures",
    "outcome_counts",
    "escalation_by_level",
    "level_view",
    "cost_by_level",
    "paper_escalation",
    "unparsed_by_stage",
    "render_exchange",
    "render_answer",
    "plot_confident_errors",
    "confidence_coords",
    "gate_counts",
    "debate_runs",
    "plot_revision_outcomes",
    "plot_escalation",
    "plot_unparsed",
    "describe_revisions",
    "describe_escalation",
    "escalation_by_model",
    "describe_escalation_by_model",
    "why_no_gain",
    "describe_why_no_gain",
]

#: Words and phrases taken as "this note says the attempt is wrong" (the heuristic of :func:`flags_error`).
ERROR_WORDS = (r"incorrect", r"wrong", r"mistake", r"error", r"not correct", r"isn't correct",
               r"is not right", r"flaw", r"miscalculat", r"should be", r"instead of", r"missed",
               r"overlook", r"does not account", r"doesn't account")
_ERROR_RE = re.compile("|".join(ERROR_WORDS), re.IGNORECASE)

#: Outcome labels of a revision, by whether the answer before it was right.
FROM_WRONG = ("fixed", "same wrong answer", "new wrong answer", "no boxed answer")
FROM_RIGHT = ("kept right", "broke: new wrong answer", "broke: no boxed answer")


# ---------------------------------------------------------------------------------------------
# loading


def with_gate(frame: pd.DataFrame, tau_lp: float, tau_h: float) -> pd.DataFrame:
    """A copy of a :func:`lase_nb.chapters.calibration.confidence_frame` with the gate recomputed: ``U``."""
    out = frame.copy()
    out["U"] = uncertain_mask(out["p_min"].to_numpy(float), out["h_max"].to_numpy(float), tau_lp, tau_h)
    return out


# ---------------------------------------------------------------------------------------------
# confident errors


def confident_errors(stages: pd.DataFrame, tau_lp: float, tau_h: float) -> pd.DataFrame:
    """Leader answers at stage 0 that are wrong with U = 0, from a full-chain stages table.

    Columns: problem_id, answer, p_min, h_max, and from the (counterfactual) full chain:
    ``later_right`` (some later stage was right) and ``final_answer`` / ``final_correct`` (last
    stage): what escalating anyway would have bought.
    """
    st = stages.sort_values(["problem_id", "stage"], kind="stable")
    first = st[st["stage"] == 0].set_index("problem_id")
    u = uncertain_mask(pd.to_numeric(first["p_min"], errors="coerce").to_numpy(float),
                       pd.to_numeric(first["h_max"], errors="coerce").to_numpy(float), tau_lp, tau_h)
    wrong = ~first["correct"].astype(bool).to_numpy()
    sel = first[~u & wrong]
    last = st.groupby("problem_id").tail(1).set_index("problem_id")
    any_right = st[st["stage"] > 0].groupby("problem_id")["correct"].any()
    out = pd.DataFrame({
        "problem_id": sel.index.astype(str),
        "answer": sel["answer"].to_numpy(object),
        "p_min": pd.to_numeric(sel["p_min"]).to_numpy(float),
        "h_max": pd.to_numeric(sel["h_max"]).to_numpy(float),
        "later_right": [bool(any_right.get(i, False)) for i in sel.index],
        "final_answer": [last["answer"].get(i) for i in sel.index],
        "final_correct": [bool(last["correct"].get(i, False)) for i in sel.index],
    })
    return out.sort_values("p_min", ascending=False, kind="stable").reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# what the leader does with a note


def flags_error(note: str | None) -> bool:
    """Heuristic: does a supporter's note claim the attempt is wrong? (a word list, :data:`ERROR_WORDS`).

    It reads words, not reasoning: a note can say "incorrect" about the right step, or point at
    the real error in words the list misses. Small models also contradict themselves within one
    note. Treat counts built on it as rough.
    """
    return bool(note) and _ERROR_RE.search(str(note)) is not None


def _outcome(prev_ok: bool, prev_ans: str | None, ok: bool, ans: str | None) -> str:
    if prev_ok:
        if ok:
            return FROM_RIGHT[0]
        return FROM_RIGHT[2] if ans is None else FROM_RIGHT[1]
    if ok:
        return FROM_WRONG[0]
    if ans is None:
        return FROM_WRONG[3]
    return FROM_WRONG[1] if prev_ans is not None and ans == prev_ans else FROM_WRONG[2]


def revision_outcomes(run: Any, problems: dict[str, Any] | None = None) -> pd.DataFrame:
    """One row per revision (stage t >= 1) of a full-chain LASE run: the note and what followed.

    Columns: problem_id, stage, supporter, note (the supporter's raw text), note_flags_error
    (:func:`flags_error`), note_has_gold, revision_has_gold, leaked (boxed answers the supporter
    wrote, which the leader saw withheld), prev_answer, prev_correct, answer, correct, outcome (see
    :data:`FROM_WRONG`, :data:`FROM_RIGHT`), ``answer_strict`` (the revision's own boxed answer,
    None when it has none and the answer came from the extraction step), finish_reason of the revision.

    ``note_has_gold``: the gold answer appears in the note as a whole word while it appears
    neither in the question (when ``problems`` maps ids to problems) nor in the attempt the note
    answered, so the note brought it in: it all but handed over the answer.
    ``revision_has_gold``: the same test on the leader's revised text (against the question
    only): the leader wrote the right number, boxed or not.
    """
    st, calls = run.stages, run.calls
    if st.empty:
        raise DataError(f"{run.path} has no LASE stages; record with --strategy lase --full-chain")
    st = st.sort_values(["problem_id", "stage"], kind="stable")
    lead = calls[calls["role"] == "leader"].drop_duplicates(["problem_id", "stage"]).set_index(["problem_id", "stage"])
    sup = calls[~calls["role"].isin(list(ANSWERER_ROLES))].drop_duplicates(["problem_id", "stage"]) \
        .set_index(["problem_id", "stage"])
    golds = dict(zip(run.problems["problem_id"].astype(str), run.problems["gold"].astype(str))) \
        if "gold" in run.problems else {}
    rows = []
    for pid, g in st.groupby("problem_id", sort=False):
        g = g.reset_index(drop=True)
        gold = golds.get(str(pid))
        question = getattr((problems or {}).get(str(pid)), "question", None)
        in_question = mentions(question, gold)
        for t in range(1, len(g)):
            prev, cur = g.iloc[t - 1], g.iloc[t]
            key = (pid, int(cur["stage"]))
            note = sup["text"].get(key) if key in sup.index else None
            attempt = lead["text"].get((pid, int(prev["stage"]))) if (pid, int(prev["stage"])) in lead.index else None
            revision = lead["text"].get(key) if key in lead.index else None
            prev_ans, ans = answer_or_none(prev["answer"]), answer_or_none(cur["answer"])
            prev_ok, ok = bool(prev["correct"]) and prev_ans is not None, bool(cur["correct"]) and ans is not None
            rows.append({
                "problem_id": pid, "stage": int(cur["stage"]), "supporter": cur.get("supporter"),
                "note": note, "note_flags_error": flags_error(note),
                "note_has_gold": mentions(note, gold) and not in_question and not mentions(attempt, gold),
                "revision_has_gold": mentions(revision, gold) and not in_question,
                "leaked": int(sup["leaked"].get(key, 0)) if key in sup.index else 0,
                "prev_answer": prev_ans, "prev_correct": prev_ok, "answer": ans, "correct": ok,
                "answer_strict": answer_or_none(cur.get("answer_strict", cur["answer"])),
                "outcome": _outcome(prev_ok, prev_ans, ok, ans),
                "finish_reason": lead["finish_reason"].get(key) if key in lead.index else None,
            })
    return pd.DataFrame(rows)


def execution_failures(outcomes: pd.DataFrame, require_flag: bool = True) -> pd.DataFrame:
    """Revisions that follow a note on a WRONG answer and are still wrong or unboxed.

    With ``require_flag`` the note must also claim an error (:func:`flags_error`): the closest a
    word list gets to "the critique was correct". A heuristic, not a judgement of the note.
    """
    m = ~outcomes["prev_correct"] & ~outcomes["correct"] & outcomes["note"].notna()
    if require_flag:
        m &= outcomes["note_flags_error"]
    return outcomes[m].reset_index(drop=True)


#: The two failure kinds of the paper's Appendix H, as rules on a full-chain recording.
APPENDIX_H_RULES = {
    "right critique, failed execution": "the devil's advocate names as failing the first step where the leader's "
                                        "wrong attempt departs from the gold chain, and the revision is still wrong",
    "expert undoes a right answer": "the answer before the senior expert's note was right, the revision after it "
                                    "is wrong (first where an earlier supporter had fixed it)",
}


def appendix_h_cases(run: Any, problems: Mapping[str, Any]) -> pd.DataFrame:
    """The revisions of a full-chain run that match :data:`APPENDIX_H_RULES` (arith problems with a
    recorded gold chain; the step a note names is read by :func:`lase_nb.organism.recipe.flagged_step`).
    Columns: kind, problem_id, stage, supporter, departure (the attempt's first wrong step, from 1),
    named (the step the note names, from 1), fixed_earlier (the leader alone was wrong: a supporter
    had fixed the answer the expert undid), prev_answer, answer."""
    from ..organism.recipe import departure_step, flagged_step

    out = revision_outcomes(run, dict(problems))
    lead = run.calls[run.calls["role"] == "leader"].drop_duplicates(["problem_id", "stage"]) \
        .set_index(["problem_id", "stage"])["text"]
    alone_ok = run.stages[run.stages["stage"] == 0].set_index("problem_id")["correct"].astype(bool)
    rows = []
    for r in out.itertuples():
        problem = problems.get(str(r.problem_id))
        if problem is None:
            continue
        if r.supporter == "devil" and not r.prev_correct and not r.correct and isinstance(r.note, str):
            dep = departure_step(problem, lead.get((r.problem_id, r.stage - 1)))
            named = flagged_step(r.note)
            if dep is not None and named == dep:
                rows.append({"kind": "right critique, failed execution", "problem_id": r.problem_id, "stage": r.stage,
                             "supporter": r.supporter, "departure": dep + 1, "named": named + 1,
                             "fixed_earlier": False, "prev_answer": r.prev_answer, "answer": r.answer})
        if r.supporter == "expert" and r.prev_correct and not r.correct:
            named = flagged_step(r.note) if isinstance(r.note, str) else None
            rows.append({"kind": "expert undoes a right answer", "problem_id": r.problem_id, "stage": r.stage,
                         "supporter": r.supporter, "departure": None, "named": None if named is None else named + 1,
                         "fixed_earlier": not bool(alone_ok.get(r.problem_id, True)),
                         "prev_answer": r.prev_answer, "answer": r.answer})
    cols = ["kind", "problem_id", "stage", "supporter", "departure", "named", "fixed_earlier", "prev_answer", "answer"]
    out = pd.DataFrame(rows, columns=cols)
    return out.sort_values(["kind", "fixed_earlier"], ascending=[False, False], kind="stable").reset_index(drop=True)


def describe_separation(label: str, frame: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> str:
    """One sentence on how well ``exp(LP_min)`` tells a model's wrong first answers from its right ones
    (AUROC for errors with its bootstrap interval, answered rows; median confidence of each), and what
    that means for escalation with difficulty."""
    from ..stats import auroc_test

    ans = frame[frame["answered"].astype(bool)]
    ok = ans["correct"].to_numpy(bool)
    p = ans["p_min"].to_numpy(float)
    if ok.all() or (~ok).all():
        return f"{label}: every answered first answer is {'right' if ok.all() else 'wrong'}; no separation to measure."
    t = auroc_test(-p, ok, n_boot=n_boot, seed=seed)
    med_r, med_w = float(np.median(p[ok])), float(np.median(p[~ok]))
    if t["separates"]:
        how = ("its gate sees its errors on average: wrong answers are less confident. That alone does not make a "
               "level where it fails more often escalate more often (a level's escalation also follows how sure its "
               "right answers are): the figure above shows each level")
    else:
        how = ("its gate cannot be shown to tell its errors apart (interval and Mann-Whitney test, both needed): "
               "a level where it fails more often need not escalate more often")
    return (f"{label}: AUROC of exp(LP_min) for errors {t['auroc']:.2f} [{t['lo']:.2f}, {t['hi']:.2f}], Mann-Whitney "
            f"p = {t['p_value']:.2g}; median exp(LP_min) "
            f"{med_r:.2f} on right and {med_w:.2f} on wrong first answers; {how}.")


def outcome_counts(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Counts of revision outcomes per stage/supporter, split by whether the answer before was right."""
    o = outcomes.assign(before=np.where(outcomes["prev_correct"], "answer before was right",
                                        "answer before was wrong or missing"))
    out = o.groupby(["before", "stage", "supporter", "outcome"]).size().rename("count").reset_index()
    return out


# ---------------------------------------------------------------------------------------------
# escalation vs difficulty, and cost


def escalation_by_level(frame: pd.DataFrame, tau_lp: float, tau_h: float) -> pd.DataFrame:
    """Per problem level: answers, solo accuracy and escalation rate P(U=1), each with a Wilson CI.

    ``frame`` is a stage-0 :func:`lase_nb.chapters.calibration.confidence_frame` with a ``level`` column.
    A final row ``all`` pools every level; a study without levels (GSM8K, a file without a level
    field) has that row alone, which :func:`describe_escalation` says in one line.
    """
    f = with_gate(frame, tau_lp, tau_h)
    levels = f["level"] if "level" in f else pd.Series(np.nan, index=f.index)
    groups = [(str(int(lv)) if isinstance(lv, (int, float, np.integer, np.floating)) else str(lv), g)
              for lv, g in f.assign(level=levels).groupby("level", sort=True)] + [("all", f)]
    rows = []
    for name, g in groups:
        n = len(g)
        k_ok, k_u = int(g["correct"].sum()), int(g["U"].sum())
        alo, ahi = wilson_interval(k_ok, n)
        elo, ehi = wilson_interval(k_u, n)
        rows.append({"level": name, "n": n, "accuracy": k_ok / n, "acc_lo": alo, "acc_hi": ahi,
                     "escalation_rate": k_u / n, "esc_lo": elo, "esc_hi": ehi,
                     "unanswered": float((~g["answered"]).mean())})
    return pd.DataFrame(rows)


def cost_by_level(chains: Any, levels: pd.Series, tau_lp: float, tau_h: float) -> pd.DataFrame:
    """Per level: average total tokens of solo and of LASE at (tau_lp, tau_h) by replay, their ratio,
    and the accuracies. ``levels`` maps problem_id -> level."""
    from ..replay import replay

    r = replay(chains, tau_lp, tau_h)
    r["solo_tokens"] = chains.total_tokens[:, 0]
    r["solo_correct"] = chains.correct[:, 0]
    r["level"] = r["problem_id"].astype(str).map(levels.to_dict())
    rows = []
    for name, g in [*((str(lv), g) for lv, g in r.groupby("level", sort=True)), ("all", r)]:
        rows.append({"level": name, "n": len(g), "solo_tokens": g["solo_tokens"].mean(),
                     "lase_tokens": g["total_tokens"].mean(),
                     "multiplier": g["total_tokens"].mean() / g["solo_tokens"].mean(),
                     "escalation_rate": (g["stop_stage"] > 0).mean(),
                     "solo_accuracy": g["solo_correct"].mean(), "lase_accuracy": g["correct"].mean()})
    return pd.DataFrame(rows)


def level_view(run: Any, tau_lp: float, tau_h: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`escalation_by_level` and :func:`cost_by_level` of one full-chain LASE run (a
    :class:`lase_nb.runs.Run`): its leader's first answers, its chains and its problems' levels."""
    from ..replay import chains_from_stages
    from ..confidence import confidence_frame

    levels = run.problems.set_index(run.problems["problem_id"].astype(str))["level"]
    esc = escalation_by_level(confidence_frame(run, stage=0), tau_lp, tau_h)
    return esc, cost_by_level(chains_from_stages(run.stages), levels, tau_lp, tau_h)


def paper_escalation(tau_lp: float | None = None, sweep: bool = True) -> dict[str, float]:
    """The paper's reference numbers for escalation and cost (from :mod:`lase_nb.reference`):

    ``escalation_rate`` at the sweep row closest to ``tau_lp`` (GPT-4.1-mini, MATH-500, fraction),
    its ``tau_lp``; ``multiplier_gpt41mini`` = LASE / single avg tokens on MATH-500 (Table 1);
    ``multiplier_llama3_8b`` = LASE / single tokens on Llama-3-8B, MATH-500, as the paper states it (4.6x).
    With ``sweep=False`` only the two multipliers: the threshold sweep (Table 5) is shown in chapter 05
    alone, and the figure and sentence of this chapter then leave it out.
    """
    sw = reference.THRESHOLD_SWEEP
    i = 2 if tau_lp is None else int((sw["tau_lp"] - tau_lp).abs().idxmin())
    t1 = reference.TABLE1
    m = t1[(t1["model"] == "GPT-4.1-mini") & (t1["dataset"] == "MATH-500")].set_index("method")["avg_tokens"]
    costs = {"multiplier_gpt41mini": float(m["lase"] / m["single"]), "multiplier_llama3_8b": reference.llama3_multiplier()}
    if not sweep:
        return costs
    return {"escalation_rate": float(sw.loc[i, "escalation_rate"]) / 100.0, "tau_lp": float(sw.loc[i, "tau_lp"]),
            "escalation_min": float(sw["escalation_rate"].min()) / 100.0,
            "escalation_max": float(sw["escalation_rate"].max()) / 100.0, **costs}


# ---------------------------------------------------------------------------------------------
# unparsed answers


def unparsed_by_stage(run: Any) -> pd.DataFrame:
    """Per stage of a LASE run: leader answers, share with no boxed answer of their own, and how
    those ended: ``truncated`` (hit max_tokens), ``looped`` (the local backend stopped a verbatim
    repeat) or ``stopped`` (ended on its own without a box); ``extracted`` of them got an answer
    from the answer-extraction step."""
    lead = run.calls[run.calls["role"].isin(list(ANSWERER_ROLES))].drop_duplicates(["problem_id", "stage"])
    rows = []
    for t, g in lead.groupby("stage", sort=True):
        none = g["answer"].map(answer_or_none).isna()
        n, k = len(g), int(none.sum())
        lo, hi = wilson_interval(k, n)
        fin = g["finish_reason"]
        got = run.calls[(run.calls["role"] == EXTRACT_ROLE) & (run.calls["stage"] == t)]
        got = got[got["problem_id"].isin(g["problem_id"]) & got["answer"].map(answer_or_none).notna()]
        rows.append({"stage": int(t), "answers": n, "unparsed": k, "unparsed_rate": k / n, "ci_lo": lo,
                     "ci_hi": hi, "truncated": int((none & (fin == "length")).sum()),
                     "looped": int((none & (fin == "repeat")).sum()),
                     "stopped": int((none & ~fin.isin(["length", "repeat"])).sum()),
                     "extracted": int(got["problem_id"].nunique())})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# rendering transcripts


def _stage_entries(run: Any, problem_id: str, keep, problem: Any) -> list[dict[str, Any]]:
    """Transcript entries of ``problem_id`` that ``keep(entry)`` selects, graded as the stages table says."""
    gold = getattr(problem, "gold", None)
    entries = [e for e in transcript_entries(run.calls, problem_id, stop_stage=10 ** 9, gold=gold,
                                             kind=getattr(problem, "kind", "number")) if keep(e)]
    st = run.stages[run.stages["problem_id"] == problem_id].set_index("stage")["correct"]
    for e in entries:
        if e["role"] in ANSWERER_ROLES and e["stage"] in st.index:
            e["correct"] = bool(st[e["stage"]]) and e["answer"] is not None
    return entries


def render_exchange(run: Any, problem_id: str, stage: int, problem: Any = None, max_chars: int = 500,
                    fmt: str = "html") -> str:
    """One attempt -> supporter note -> revision exchange of a LASE run, drawn by
    :func:`lase_nb.chapters.transcripts.render_transcript` (``fmt``: "html", "markdown" or "text").

    Shows the problem (if ``problem`` is given), the leader's attempt before ``stage``, the
    supporter's note at ``stage`` and the leader's revision, each clipped to ``max_chars``.
    """
    keep = lambda e: e["stage"] == stage or (e["stage"] == stage - 1 and e["role"] in ANSWERER_ROLES)  # noqa: E731
    return render_transcript(_stage_entries(run, problem_id, keep, problem), fmt, max_chars, problem)


def render_answer(run: Any, problem_id: str, stage: int = 0, problem: Any = None, max_chars: int = 500,
                  fmt: str = "html") -> str:
    """One leader answer (problem, response, answer, confidence, finish reason), drawn by
    :func:`lase_nb.chapters.transcripts.render_transcript`."""
    keep = lambda e: e["stage"] == stage and e["role"] in ANSWERER_ROLES  # noqa: E731
    return render_transcript(_stage_entries(run, problem_id, keep, problem), fmt, max_chars, problem)


# ---------------------------------------------------------------------------------------------
# figures


#: Floors of the log axes of :func:`plot_confident_errors`: 1 - exp(LP_min) and H_max below them are drawn on them.
_FLOOR_P, _FLOOR_H = 1e-4, 1e-3


def confidence_coords(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The axes of :func:`plot_confident_errors`: 1 - exp(LP_min) and H_max, floored for log scales.

    Most answers of a confident model sit at exp(LP_min) near 1 and H_max near 0; on log scales
    of the *distance* from certainty (1 - p, H) that corner opens up instead of piling into one spot.
    """
    return (np.clip(1 - frame["p_min"].to_numpy(float), _FLOOR_P, 1.0),
            np.clip(frame["h_max"].to_numpy(float), _FLOOR_H, None))


def gate_counts(frame: pd.DataFrame, tau_lp: float, tau_h: float) -> pd.DataFrame:
    """Boxed first answers by gate verdict and grade: the counts printed on the confident-errors figure."""
    f = with_gate(frame[frame["answered"]], tau_lp, tau_h)
    u, ok = f["U"].to_numpy(bool), f["correct"].to_numpy(bool)
    return pd.DataFrame({"right": [int((~u & ok).sum()), int((u & ok).sum())],
                         "wrong": [int((~u & ~ok).sum()), int((u & ~ok).sum())]},
                        index=pd.Index(["accepted (U = 0)", "escalated (U = 1)"], name="gate"))


def plot_confident_errors(frame: pd.DataFrame, tau_lp: float, tau_h: float, seed: int = 0):
    """Stage-0 answers by their distance from certainty: x = 1 - exp(LP_min), y = H_max, both on log
    scales (confident answers bottom right), the U = 1 region shaded, right and wrong answers with a
    little jitter so that equal values stay visible (never across a threshold), confident errors (wrong with U = 0) as
    crosses, and the counts of each region printed in it."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    measured = frame["answered"].astype(bool) & frame["p_min"].notna() & frame["h_max"].notna()
    f = with_gate(frame[measured], tau_lp, tau_h)  # a reply without log-probabilities has no point to draw
    x, y = confidence_coords(f)
    rng = np.random.default_rng(seed)
    jx, jy = x * np.exp(rng.normal(0, 0.12, len(x))), y * np.exp(rng.normal(0, 0.12, len(y)))
    ok, u = f["correct"].to_numpy(bool), f["U"].to_numpy(bool)
    ce = ~ok & ~u
    fig, ax = plt.subplots(figsize=(10, 6.5))
    xlo, xhi = (float(np.min(x)) / 2 if len(x) else _FLOOR_P / 2), 1.0
    ylo = float(np.min(y)) / 2 if len(y) else _FLOOR_H / 2
    yhi = max(3.0, float(np.nanmax(y)) * 2) if len(y) else 3.0
    xg, yg = max(1 - tau_lp, _FLOOR_P), max(tau_h, _FLOOR_H)
    # the jitter never carries a point across a threshold: each stays on its own side of the gate
    jx = np.where(x > xg, np.maximum(jx, xg * 1.02), np.minimum(jx, xg / 1.02))
    jy = np.where(y > yg, np.maximum(jy, yg * 1.02), np.minimum(jy, yg / 1.02))
    # LASE's colour for where it escalates; right and wrong in neutral ink (plots.MEANINGS): black
    # crosses for the confident errors the figure is about, hollow circles for right answers
    ax.add_patch(Rectangle((xg, ylo), xhi - xg, yhi - ylo, color=SPECS["lase"].color, alpha=0.13, lw=0,
                           label="U = 1: LASE escalates"))
    ax.add_patch(Rectangle((xlo, yg), xg - xlo, yhi - yg, color=SPECS["lase"].color, alpha=0.13, lw=0))
    ax.scatter(jx[ok], jy[ok], s=45, color="white", edgecolor=NEUTRAL_DARK, lw=1.2, zorder=5,
               label=f"right ({int(ok.sum())})")
    ax.scatter(jx[~ok & u], jy[~ok & u], s=22, color="0.45", marker="o", alpha=0.45, lw=0, zorder=2,
               label=f"wrong, escalated ({int((~ok & u).sum())})")
    ax.scatter(jx[ce], jy[ce], s=42, color="black", marker="X", edgecolor="none", alpha=0.85, zorder=4,
               label=f"confident error: wrong, accepted ({int(ce.sum())})")
    ax.axvline(xg, color="k", ls=":", lw=1.2)
    ax.axhline(yg, color="k", ls=":", lw=1.2)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(xhi, xlo)  # inverted: more confident to the right
    ax.set_ylim(ylo, yhi)
    ticks = [v for v in (1e-4, 1e-3, 1e-2, 0.1, 0.5) if v >= xlo]
    ax.set_xticks(ticks, [f"{1 - v:g}" for v in ticks])
    ax.set(xlabel="exp(LP_min): lowest answer-token probability (log scale of 1 - p; surer to the right)",
           ylabel="H_max, nats (log scale; surer lower down)",
           title=f"Leader's first answers at tau_lp = {tau_lp:g}, tau_h = {tau_h:g}")
    counts = gate_counts(frame, tau_lp, tau_h)
    acc, esc = counts.loc["accepted (U = 0)"], counts.loc["escalated (U = 1)"]
    ax.text(0.985, 0.03, f"accepted: {acc['right']} right, {acc['wrong']} wrong", transform=ax.transAxes,
            ha="right", va="bottom", fontsize="small", bbox=dict(fc="white", ec="0.6", alpha=0.9), zorder=6)
    ax.text(0.015, 0.97, f"escalated: {esc['right']} right, {esc['wrong']} wrong", transform=ax.transAxes,
            ha="left", va="top", fontsize="small", bbox=dict(fc="white", ec="0.6", alpha=0.9), zorder=6)
    n_na = int((~frame["answered"]).sum())
    note = "points jittered slightly; exp(LP_min) = 1 or H_max = 0 drawn at the axis floor"
    if n_na:
        note = f"+{n_na} without a boxed answer (U = 1), not drawn; " + note
    n_unmeasured = int((frame["answered"].astype(bool) & ~measured).sum())
    if n_unmeasured:
        note = f"+{n_unmeasured} answered without log-probabilities (U = 1), not drawn; " + note
    ax.set_xlabel(ax.get_xlabel() + "\n" + note, fontsize="small")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize="small")
    ax.grid(True, which="major", alpha=0.4)
    fig.tight_layout()
    return fig


def plot_revision_outcomes(outcomes: pd.DataFrame):
    """Stacked bars per supporter stage: what the leader's revision did, starting from a wrong
    answer (left) and from a right one (right)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11.5, 5.4), gridspec_kw={"width_ratios": [3, 2]})
    colours = {"fixed": "C2", "same wrong answer": "C3", "new wrong answer": "C1", "no boxed answer": "0.55",
               "kept right": "C2", "broke: new wrong answer": "C1", "broke: no boxed answer": "0.55"}
    for ax, prev_ok, labels, title in ((axes[0], False, FROM_WRONG, "answer before the note: WRONG or none"),
                                       (axes[1], True, FROM_RIGHT, "answer before the note was RIGHT")):
        sub = outcomes[outcomes["prev_correct"] == prev_ok]
        stages = sorted(outcomes["stage"].unique())
        names = [f"{outcomes.loc[outcomes['stage'] == s, 'supporter'].iloc[0]}\n(stage {s})" for s in stages]
        bottom = np.zeros(len(stages))
        present = [lab for lab in labels if (sub["outcome"] == lab).any()]
        for lab in labels:
            vals = np.array([((sub["stage"] == s) & (sub["outcome"] == lab)).sum() for s in stages], float)
            ax.bar(names, vals, bottom=bottom, color=colours[lab], edgecolor="white",
                   label=lab if lab in present else "_nolegend_")  # the legend lists only outcomes that occur
            top = max(1.0, float(outcomes.groupby("stage").size().max()))
            for i, v in enumerate(vals):
                if v >= 0.06 * top:  # label only segments tall enough to hold it
                    ax.text(i, bottom[i] + v / 2, str(int(v)), ha="center", va="center", fontsize="small")
            bottom += vals
        ax.set(title=title, ylabel="revisions")
        if sub.empty:
            ax.text(0.5, 0.5, "no revision started\nfrom this side", transform=ax.transAxes, ha="center",
                    va="center", color="0.4")
            ax.set_yticks([])
        elif len(present) == 1:  # nothing to compare: say so instead of a one-entry legend
            ax.set_title(f"{title}\n(only \"{present[0]}\" occurs)")
        else:
            ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2)
    fig.suptitle("What the leader did with each supporter's note", fontweight="bold")
    fig.tight_layout()
    return fig


def plot_note_vs_leader(grid: pd.DataFrame, rule: Mapping[str, float] | None = None):
    """Stage 1 of gated LASE on the same escalated problems: the share of wrong first answers fixed
    (left) and of right ones broken (right), grouped by the leader that revises, one bar per note it
    reads (``grid``: :func:`lase_nb.organism.revision.note_leader_grid`); dashed lines: the round's bars (issue 48's rule)."""
    import matplotlib.pyplot as plt

    from ..organism.revision import STAGE1_RULE

    rule = rule or STAGE1_RULE
    leaders = list(dict.fromkeys(grid["leader"]))
    notes = list(dict.fromkeys(grid["note"]))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharey=False)
    width = 0.8 / len(notes)
    note_colors = (NEUTRAL_MID, NEUTRAL_LIGHT)  # kinds of note are no strategy: greys, the second hatched
    for ax, (k, n, bar, title) in zip(axes, (("fixed", "wrong", rule["fix"], "wrong first answers FIXED"),
                                             ("broken", "right", rule["break_"], "right first answers BROKEN"))):
        for j, note in enumerate(notes):
            sub = grid[grid["note"] == note].set_index("leader").reindex(leaders)
            x = np.arange(len(leaders)) + (j - (len(notes) - 1) / 2) * width
            share = (sub[k] / sub[n]).to_numpy(float)
            ax.bar(x, share, width, color=note_colors[j % len(note_colors)], edgecolor=NEUTRAL_DARK,
                   hatch="//" if j % 2 else None, label=f"reads {note}")
            for xi, v, kk, nn in zip(x, share, sub[k], sub[n]):
                if not np.isnan(v):
                    ax.text(xi, v + 0.01, f"{int(kk)}/{int(nn)}", ha="center", va="bottom", fontsize="small")
        ax.axhline(bar, color="0.3", ls="--", lw=1)
        ax.text(-0.45, bar, f"round's bar {bar:.0%}", va="bottom", ha="left", fontsize="small", color="0.3",
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1})
        ax.set_xticks(np.arange(len(leaders)), [f"leader: {lv}" for lv in leaders])
        top = float(np.nanmax((grid[k] / grid[n]).to_numpy(float)))
        ax.set(title=title, ylabel="share of the escalated problems", ylim=(0, 1.25 * max(top, bar)),
               xlim=(-0.5, len(leaders) - 0.5))
        ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:.0%}"))
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(notes), fontsize="small", frameon=False)
    fig.suptitle("Stage 1: the note or the leader? (the problems v5's gate escalates)", fontweight="bold")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def plot_escalation(esc: pd.DataFrame, cost: pd.DataFrame | None, paper: dict[str, float], tau_lp: float,
                    tau_h: float, model: str | None = None):
    """Left: solo accuracy (the leader alone's colour) and escalation rate (LASE's colour) per level,
    with Wilson CIs, against the paper's escalation rate when asked for (a band behind translucent
    bars, its edges drawn over them). Right: LASE / solo token multiplier per level (LASE's colour)
    against the paper's two models (black dashed, grey dotted). With one level there is nothing to
    compare across levels: its bars are drawn once, named by what they measure, and the title says
    it is the only level. ``model`` names the recording in the title (a figure per model)."""
    import matplotlib.pyplot as plt

    from ..plots import style

    solo_c, lase_c = style("solo")["color"], style("lase")["color"]
    only = None
    if (esc["level"] != "all").sum() == 1:
        esc = esc[esc["level"] != "all"]
        cost = cost[cost["level"] != "all"] if cost is not None else None
        only = f"only level {esc['level'].iloc[0]} occurs"
    ncol = 2 if cost is not None else 1
    fig, axes = plt.subplots(1, ncol, figsize=(10.0 if ncol == 2 else 6.0, 4.9), squeeze=False,
                             gridspec_kw={"width_ratios": [1.2, 1]} if ncol == 2 else None)
    ax = axes[0, 0]
    quantities = (("accuracy", "acc_lo", "acc_hi", "solo accuracy", solo_c),
                  ("escalation_rate", "esc_lo", "esc_hi", "escalation rate P(U=1)", lase_c))
    if only is None:
        x, w = np.arange(len(esc)), 0.38
        places = [(x - w / 2, w), (x + w / 2, w)]
        ticks = (x, [f"level {lv}" if lv != "all" else "all" for lv in esc["level"]])
    else:
        places, w = [(np.array([0.0]), 0.6), (np.array([1.0]), 0.6)], 0.6
        ticks = ([0, 1], ["solo accuracy", "escalation\nrate P(U=1)"])
    for (where, width), (col, lo, hi, lab, c) in zip(places, quantities):
        v = esc[col].to_numpy(float)
        ax.bar(where, v, width, color=c, label=lab, zorder=2, alpha=0.8,  # the paper's band shows through
               yerr=[v - esc[lo].to_numpy(float), esc[hi].to_numpy(float) - v], capsize=4)
    right = len(ticks[0]) - 0.5
    if "escalation_min" in paper:  # the paper's sweep (Table 5), when asked for
        pmin, pmax = paper["escalation_min"], paper["escalation_max"]
        ax.axhspan(pmin, pmax, color="0.6", alpha=0.25, zorder=0, lw=0,
                   label="paper: escalation, GPT-4.1-mini, MATH-500 sweep")  # behind the bars
        ax.hlines([pmin, pmax], -0.5, right, color="0.35", ls="--", lw=1.3, zorder=3)  # its edges, over them
    ax.set_xticks(*ticks)
    ax.set_xlim(-0.5, right)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share of problems")
    ax.set_title("Solo accuracy and escalation" + (", by level" if only is None else ""), fontsize="medium")
    if only is None or "escalation_min" in paper:
        ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2 if only is None else 1)
    if cost is not None:
        ax = axes[0, 1]
        x = np.arange(len(cost))
        ax.bar(x, cost["multiplier"], 0.6, color=lase_c, label="this run: LASE / solo tokens")
        for i, v in enumerate(cost["multiplier"]):
            ax.text(i, v, f"{v:.1f}x", ha="center", va="bottom", fontsize="small")
        ax.axhline(paper["multiplier_gpt41mini"], color="k", ls="--", lw=1.5,
                   label=f"paper, GPT-4.1-mini: {paper['multiplier_gpt41mini']:.1f}x")
        ax.axhline(paper["multiplier_llama3_8b"], color="0.45", ls=":", lw=2,
                   label=f"paper, Llama-3-8B: {paper['multiplier_llama3_8b']:.1f}x")
        ax.set_xticks(x, [f"level {lv}" if lv != "all" else "all" for lv in cost["level"]] if only is None
                      else ["this run"])
        ax.set_xlim(-0.6, len(x) - 0.4)
        ax.set_ylabel("token multiplier, LASE / solo")
        ax.set_title("What escalation costs", fontsize="medium")
        ax.set_ylim(0, max(float(cost["multiplier"].max()), paper["multiplier_llama3_8b"]) * 1.18)
        ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=1)
    what = f"{model}: escalation and its cost" if model else "Escalation and its cost"
    fig.suptitle(f"{what} (tau_lp = {tau_lp:g}, tau_h = {tau_h:g}{'; ' + only if only else ''})", fontweight="bold")
    fig.tight_layout()
    return fig


def plot_unparsed(table: pd.DataFrame, supporters: Sequence[str] = ()):
    """Share of leader answers without a boxed answer per stage, split by how the response ended."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5.6), layout="constrained")  # lays the legend out below the axis label
    names = [f"{s}" + (f": after {supporters[s - 1]}" if s and s - 1 < len(supporters) else ": solo" if s == 0 else "")
             for s in table["stage"]]
    n = table["answers"].to_numpy(float)
    tr, sp = table["truncated"].to_numpy(float) / n, table["stopped"].to_numpy(float) / n
    lp = table["looped"].to_numpy(float) / n if "looped" in table else np.zeros_like(tr)
    for share, below, colour, lab in ((tr, 0, "C3", "ran out of tokens (max_tokens)"),
                                      (lp, tr, "C4", "stopped as a verbatim loop"),
                                      (sp, tr + lp, "0.6", "stopped without a box")):
        ax.bar(names, share, bottom=below, color=colour, label=lab if share.any() else "_nolegend_")
    if "extracted" in table and table["extracted"].any():
        ax.scatter(names, table["extracted"].to_numpy(float) / n, marker="D", color="k", zorder=5,
                   label="answer recovered by the extraction step")
    r = table["unparsed_rate"].to_numpy(float)
    ax.errorbar(names, r, yerr=[r - table["ci_lo"], table["ci_hi"] - r], fmt="none", color="k", capsize=4,
                label="95% Wilson CI of the total")
    ax.set(ylim=(0, 1.05), ylabel="share of leader answers with no \\boxed{}", xlabel="stage",
           title="Leader answers with no box of their own")
    fig.legend(fontsize="small", loc="outside lower center", ncol=2)  # only the causes that occur
    return fig


# ---------------------------------------------------------------------------------------------
# the chapter's sentences, built from computed numbers


def debate_runs(names: Sequence[str]) -> list[str]:
    """The runs among ``names`` that the symmetric-debate comparison shows, in display order: the
    strategies whose agents read no one or everyone (their record's ``topology``), beside LASE
    forced through every stage."""
    return [n for n, s in SPECS.items()
            if n in names and (s.topology in ("none", "all-to-all") or n == "lase-full")]




def describe_revisions(outcomes: pd.DataFrame, fails: pd.DataFrame) -> str:
    """Revision outcomes and the heuristic execution-failure count, with the heuristic named."""
    fw = outcomes[~outcomes["prev_correct"]]
    fr = outcomes[outcomes["prev_correct"]]
    fixed = int(fw["correct"].sum())
    out = (f"**{len(fw)} revisions started from a wrong or missing answer; {fixed} of them "
           f"({pct(fixed / len(fw)) if len(fw) else 'n/a'}) ended right.** ")
    if len(fr):
        out += (f"Of the {len(fr)} that started from a right answer, {int((~fr['correct']).sum())} lost it. ")
    out += (f"{int(fw['note_flags_error'].sum())} of the notes on a wrong answer claimed an error, and {len(fails)} "
            f"of those were followed by a revision that was still wrong "
            f"({int((fails['outcome'] == FROM_WRONG[3]).sum())} with no boxed answer): these are the candidate "
            f"execution failures (a word-list heuristic, not a judgement of the note). "
            f"In {int(fails['note_has_gold'].sum())} of them the note brought in the gold answer, and in "
            f"{int(fails['revision_has_gold'].sum())} the leader's own revision wrote the gold answer without boxing "
            f"it as its final answer. Supporters wrote {int(outcomes['leaked'].sum())} boxed answers, withheld "
            f"from the leader.")
    return out


def describe_escalation(esc: pd.DataFrame, cost: pd.DataFrame, paper: dict[str, float]) -> str:
    """Escalation and cost by level against the paper's models; says plainly when the trend is absent."""
    lv = esc[esc["level"] != "all"]
    allrow, callrow = esc.iloc[-1], cost.iloc[-1]
    e = lv["escalation_rate"].to_numpy(float)
    rises = len(e) > 1 and bool(np.all(np.diff(e) >= 0)) and e[-1] > e[0]
    if len(lv) < 2:
        out = (f"**What it shows.** This recording has one difficulty level (level {lv['level'].iloc[0]}: solo "
               f"accuracy {pct(lv['accuracy'].iloc[0])}), so how escalation changes with difficulty cannot be "
               "read from it; record several levels (`--levels 1 2 3`) to see it. ") if len(lv) else \
            ("**What it shows.** This study's problems carry no difficulty levels, so escalation by difficulty is "
             "not shown. ")
    else:
        out = (f"**What it shows.** Solo accuracy goes from {pct(lv['accuracy'].iloc[0])} at level "
               f"{lv['level'].iloc[0]} to {pct(lv['accuracy'].iloc[-1])} at level {lv['level'].iloc[-1]}, and the "
               f"escalation rate from {pct(e[0])} to {pct(e[-1])}: ")
        each = ", ".join(f"level {r['level']} {pct(r['escalation_rate'])}" for _, r in lv.iterrows())
        if rises:
            out += f"**escalation rises level by level** ({each}; see the intervals), as the paper argues. "
        elif e[-1] > e[0]:
            out += (f"**escalation does not rise steadily with difficulty** ({each}): the last level escalates more "
                    f"than the first, but not every harder level more than the one before it (see the intervals). ")
        else:
            out += ("**escalation does not rise with difficulty here** (see the intervals): the gate reads "
                    "confidence, not correctness, so failing more often trips it only if the model is also less "
                    "sure when it fails (chapter 02 measures how far it is). ")
    swept = (f" (the paper's threshold sweep on GPT-4.1-mini escalated {pct(paper['escalation_min'])} to "
             f"{pct(paper['escalation_max'])})") if "escalation_min" in paper else ""
    out += (f"Over all {'levels' if len(lv) else 'problems'} the gate escalates {pct(allrow['escalation_rate'])} of the problems{swept}, and LASE spends {callrow['multiplier']:.1f}x the solo tokens "
            f"(paper: {paper['multiplier_gpt41mini']:.1f}x on GPT-4.1-mini, {paper['multiplier_llama3_8b']:.1f}x "
            f"on Llama-3-8B).")
    esc_only = cost.iloc[-1]
    if allrow["escalation_rate"] > 0:
        per = (esc_only["lase_tokens"] - esc_only["solo_tokens"]) / allrow["escalation_rate"] / esc_only["solo_tokens"]
        out += (f" Each escalated problem adds about {per:.1f}x a solo answer's tokens here, so even a modest "
                f"escalation rate multiplies the bill.")
    return out




# ---------------------------------------------------------------------------------------------
# weaker models escalate more? measured across models


def escalation_by_model(chains_by_model: Mapping[str, Any], tau_lp: float, tau_h: float) -> pd.DataFrame:
    """One row per model of full chains (:class:`lase_nb.replay.Chains`) gated at (tau_lp, tau_h):
    n, leader_accuracy (stage 0, Wilson ``leader_lo``/``leader_hi``), escalated and escalation_rate
    (``esc_lo``/``esc_hi``), the leader's accuracy on the problems it escalated and on those it kept
    (``acc_escalated``, ``acc_kept``: a gate that works escalates the wrong ones) and LASE's
    accuracy on the escalated ones after escalation (``lase_acc_escalated``)."""
    from ..replay import stop_stages

    rows = []
    for name, c in chains_by_model.items():
        stop = stop_stages(c, tau_lp, tau_h)
        esc, solo = stop > 0, c.correct[:, 0]
        final = c.correct[np.arange(len(stop)), stop]
        n, k = len(stop), int(esc.sum())
        (llo, lhi), (elo, ehi) = wilson_interval(int(solo.sum()), n), wilson_interval(k, n)
        rows.append({"model": name, "n": n, "leader_accuracy": solo.mean(), "leader_lo": llo, "leader_hi": lhi,
                     "escalated": k, "escalation_rate": k / n, "esc_lo": elo, "esc_hi": ehi,
                     "acc_escalated": solo[esc].mean() if k else np.nan,
                     "acc_kept": solo[~esc].mean() if k < n else np.nan,
                     "lase_acc_escalated": final[esc].mean() if k else np.nan})
    return pd.DataFrame(rows)


def describe_escalation_by_model(table: pd.DataFrame) -> str:
    """Whether the weaker model (lower leader accuracy) escalates more, from :func:`escalation_by_model`,
    with the numbers, decided by the test of the difference (:func:`lase_nb.stats.proportions_test`:
    its interval and Fisher's exact p, both), not by whether two intervals overlap."""
    if len(table) < 2:
        return "One model only: whether weaker models escalate more needs two."
    weak, strong = table.loc[table["leader_accuracy"].idxmin()], table.loc[table["leader_accuracy"].idxmax()]
    if weak["leader_accuracy"] == strong["leader_accuracy"]:
        return (f"The leaders are equally accurate ({pct(weak['leader_accuracy'])}), so neither model is the weaker "
                "one and this comparison says nothing about weaker models escalating more.")

    def said(r: pd.Series) -> str:
        return (f"{r['model']} (leader accuracy {pct(r['leader_accuracy'])}) escalates {pct(r['escalation_rate'])} "
                f"[{pct(r['esc_lo'])}, {pct(r['esc_hi'])}] of its {int(r['n'])} problems")

    t = proportions_test(int(weak["escalated"]), int(weak["n"]), int(strong["escalated"]), int(strong["n"]))
    diff = (f"weaker minus stronger {100 * t['diff']:+.0f} points [{100 * t['lo']:+.0f}, {100 * t['hi']:+.0f}], "
            f"Fisher's exact {p_text(t['p_value'])}")
    if t["differs"]:
        verdict = ("**the weaker model escalates more**, as the paper expects" if t["diff"] > 0 else
                   "**the weaker model escalates less**, against the paper's expectation")
    else:
        verdict = ("**these samples cannot tell whether the weaker model escalates more**: the test of the "
                   "difference clears neither way")
    return f"The weaker model, {said(weak)}; the stronger, {said(strong)} ({diff}): {verdict}."


# ---------------------------------------------------------------------------------------------
# why no gain here: the three numbers that carry the chapter's ending


def why_no_gain(run: Any, problems: Mapping[str, Any], prereg: Mapping[str, Any] | None = None,
                gated: Any = None, seed: int = 0) -> dict[str, Any]:
    """Why gated LASE gains nothing on a model whose supporters point (the pointing organism), in
    three measured steps of the mechanism, from its full-chain recording ``run`` (every note
    recorded, arith problems with a gold chain in ``problems``):

    1. **the gate separates**: the AUROC of ``exp(LP_min)`` for the leader's wrong first answers
       (:func:`lase_nb.stats.auroc_test`; keys ``auroc``, ``auroc_lo``, ``auroc_hi``, ``auroc_p``,
       ``separates``, ``first_answers``);
    2. **the notes point and keep the rule**: of the devil's advocate's notes on a wrong first
       answer whose first failing step can be located (:func:`lase_nb.organism.recipe.departure_step`),
       those that name that step (:func:`lase_nb.organism.recipe.flagged_step`; ``located``, ``named``),
       and what the revision after such a note did (``named_fixed``, ``named_still_wrong``); of all
       notes on wrong attempts, those that state the answer (:func:`lase_nb.notes.count_answer_notes`;
       ``notes_on_wrong``, ``notes_stating``);
    3. **the leader does not act on the pointer**: fixes against breaks of gated LASE on the
       preregistered test (``test``: :func:`lase_nb.organism.preregistration.primary_from_gated_run` on
       ``gated``, the held-out gated run, else :func:`~lase_nb.organism.preregistration.primary_result` on
       ``run``'s chains; None without a preregistration), with ``test_source``.

    ``examples``: two exchanges to read, ``{title: (problem_id, stage)}``: the shortest in which the
    devil names the right step and the revision fixes the answer, and the shortest in which it names
    it and the revision is still wrong."""
    from ..notes import count_answer_notes
    from ..organism.recipe import departure_step, flagged_step
    from ..stats import auroc_test

    st0 = run.stages[run.stages["stage"] == 0]
    answered = st0["answer"].map(answer_or_none).notna().to_numpy()
    ok = st0["correct"].astype(bool).to_numpy()[answered]
    # chapter 02's interval, resampled as chapter 02 and chapter 07 resample it (one number everywhere)
    t = auroc_test(-st0["p_min"].astype(float).to_numpy()[answered], ok, n_boot=AUROC_N_BOOT, seed=seed)
    out: dict[str, Any] = {"first_answers": int(answered.sum()), "auroc": t["auroc"], "auroc_lo": t["lo"],
                           "auroc_hi": t["hi"], "auroc_p": t["p_value"], "separates": bool(t["separates"])}

    outcomes = revision_outcomes(run, dict(problems))
    lead = run.calls[run.calls["role"] == "leader"].drop_duplicates(["problem_id", "stage"]) \
        .set_index(["problem_id", "stage"])["text"]
    devil = outcomes[(outcomes["supporter"] == "devil") & ~outcomes["prev_correct"] & outcomes["note"].notna()]
    named = []
    for r in devil.itertuples():
        problem = problems.get(str(r.problem_id))
        attempt = lead.get((r.problem_id, r.stage - 1))
        dep = departure_step(problem, attempt) if problem is not None else None
        if dep is not None:
            revision = lead.get((r.problem_id, r.stage), "") or ""
            named.append({"problem_id": r.problem_id, "stage": r.stage, "named": flagged_step(r.note) == dep,
                          "fixed": bool(r.correct), "length": len(attempt or "") + len(r.note) + len(revision)})
    named = pd.DataFrame(named, columns=["problem_id", "stage", "named", "fixed", "length"])
    right = named[named["named"]]
    out.update(located=len(named), named=len(right), named_fixed=int(right["fixed"].sum()),
               named_still_wrong=int((~right["fixed"]).sum()))
    counts = count_answer_notes(run.calls, run.stages, problems)
    out["notes_on_wrong"] = sum(d["on_wrong"]["n"] for d in counts.values())
    out["notes_stating"] = sum(d["on_wrong"]["k"] for d in counts.values())

    out["test"], out["test_source"] = None, None
    if prereg is not None:
        from ..organism.preregistration import chains_of, primary_from_gated_run, primary_result

        if gated is not None:
            out["test"], out["test_source"] = primary_from_gated_run(prereg, gated), "the held-out gated run"
        else:
            out["test"], out["test_source"] = primary_result(prereg, chains_of(run)), "the full chains"

    out["examples"] = {}
    for title, rows in (("The devil names the failing step, and the revision fixes it", right[right["fixed"]]),
                        ("The devil names the failing step, and the revision is still wrong", right[~right["fixed"]])):
        if len(rows):
            r = rows.sort_values(["length", "problem_id"], kind="stable").iloc[0]
            out["examples"][title] = (r["problem_id"], int(r["stage"]))
    return out


def describe_why_no_gain(r: Mapping[str, Any], label: str) -> str:
    """:func:`why_no_gain` as the chapter's closing paragraph: the three numbers, each said to hold
    only where it does, and the reading they add up to."""
    gate = (f"1. **The gate {'separates' if r['separates'] else 'does not detectably separate'}**: the AUROC of "
            f"exp(LP_min) for the leader's wrong first answers is {r['auroc']:.2f} [{r['auroc_lo']:.2f}, "
            f"{r['auroc_hi']:.2f}] on its {r['first_answers']} first answers (Mann-Whitney p = {r['auroc_p']:.2g})"
            + (": its wrong first answers look less sure than its right ones, so the gate sends the problems that "
               "need the supporters more often than the others." if r["separates"] else "."))
    share = r["named"] / r["located"] if r["located"] else float("nan")
    points_right = r["located"] and share >= 0.5
    lo, hi = wilson_interval(int(r["named"]), int(r["located"])) if r["located"] else (float("nan"), float("nan"))
    named = f"{r['named']} of {r['located']}, {pct(share)} [{pct(lo)}, {pct(hi)}]"
    notes = (f"2. **The notes name the failing step in {named} and "
             f"{'keep' if r['notes_stating'] <= 0.05 * max(1, r['notes_on_wrong']) else 'break'} the rule**: on "
             f"{r['located']} wrong first answers whose failing step can be located, the devil's advocate names that "
             f"step in {r['named']}; {r['notes_stating']} of the {r['notes_on_wrong']} notes on wrong "
             "attempts (all three supporters, every stage) state the answer.")
    t = r["test"]
    acted = (f"after a note that names the right step the revision fixes the answer {r['named_fixed']} times and "
             f"stays wrong {r['named_still_wrong']} times")
    if t is None:
        test = f"3. **The leader {'does not act' if r['named_fixed'] < r['named_still_wrong'] else 'acts'} on the pointer**: {acted}."
        claimed = False
    else:
        claimed = bool(t["claimed"])
        test = (f"3. **The leader {'does not act' if r['named_fixed'] < r['named_still_wrong'] else 'acts'} on the "
                f"pointer**: {acted}. On the preregistered test ({r['test_source']}, {t['n']} problems) gated LASE "
                f"fixes {t['b']} answers and breaks {t['c']}: {points(t['diff'])} points [{points(t['diff_lo'])}, "
                f"{points(t['diff_hi'])}], McNemar p = {t['p_value']:.2g}, "
                f"{'claimed' if claimed else 'not claimed (both tests are needed)'}.")
    if r["separates"] and points_right and not claimed:
        reading = (f"**So, for {label}: the gate sends the right problems, the devil's advocate names the failing "
                   f"step in {named} located wrong answers and keeps the rule, and the leader cannot act on the "
                   "pointer**: fixes and breaks cancel. Whether that is this leader's revision or any 135M model's is what "
                   "6.6 separates.")
    elif claimed:
        reading = f"**For {label} escalation pays**: the preregistered test claims a gain."
    else:
        reading = f"**For {label} the chain breaks earlier**: read the step that does not hold above."
    return "\n".join([f"**Why no gain here** ({label}).", "", gate, notes, test, "", reading])


def describe_unparsed(table: pd.DataFrame) -> str:
    """:func:`unparsed_by_stage` in words: the share of the leader's answers without a box of their
    own at stage 0 and after the supporters, how those ended, and how many the extraction step saved."""
    if table.empty:
        return "No leader answers to count."
    first, later = table.iloc[0], table.iloc[1:]
    out = f"First answers: {int(first['unparsed'])} of {int(first['answers'])} ({pct(first['unparsed_rate'])}) box no answer."
    if len(later):
        k, n = int(later["unparsed"].sum()), int(later["answers"].sum())
        how = ", ".join(f"{int(later[c].sum())} {c}" for c in ("looped", "truncated", "stopped") if later[c].sum())
        out += (f" Revisions: {k} of {n} ({pct(k / n if n else np.nan)}) box none of their own"
                + (f" ({how})" if how else "") + f"; the extraction step recovers an answer for "
                f"{int(later['extracted'].sum())} of them, which strict grading counts wrong.")
    return out
