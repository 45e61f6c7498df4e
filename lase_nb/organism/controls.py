"""What organism v6's gain is made of: the note, or a second solver, and at what cost.

Organism v6's preregistered test (chapter 06, 6.6) shows gated LASE beating the leader alone on 600
fresh problems. v6 differs from v5 only in its revision adapter, which redoes the whole chain after
any note. So the gain may come from the note, from a second look, or from a second solver re-answering
the problems the gate picks. This module holds the controls that can tell them apart, preregistered
(``data/traces/arith-organism-v6/controls/preregistration.json``, committed alone before any call):

- **note**: the recorded stage-1 revision after the devil's note (a sample replayed to show it is exact);
- **no note**: the same revision prompt with the note taken out (:data:`lase_nb.prompts.REVISE_ALONE_REQUEST`);
- **other note**: the recorded devil's note of another escalated problem of the same level (:func:`derangement`);
- **alone**: the revision adapter given the problem only, on all 600; by replay, the **cascade**: the same
  gate decides, and an escalated problem takes that adapter's own answer.

The analysis (:func:`primary`, :func:`secondary`, :func:`cost_table`) reads the arms' run folders and the
recording (``lase-large``) and prints its sentences through the ``describe_*`` functions (chapter 06, 6.6;
chapter 07; the README).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import prompts
from ..confidence import uncertain_mask
from ..errors import DataError
from ..paths import REPO_ROOT
from .preregistration import bootstrap_settings
from .stage_one import StageOneCase, stage_one_cases
from ..stats import bootstrap_ci, clears_both, holm, mcnemar_power, paired_test, pct, wilson_interval
from ..types import Problem

ROOT = REPO_ROOT
#: The fresh recording the controls read (organism v6, gated at its preregistered 0.8 / 0.5).
STUDY = ROOT / "data" / "traces" / "arith-organism-v6"
#: The controls' run folders and their preregistration.
FOLDER = STUDY / "controls"
PREREG_PATH = FOLDER / "preregistration.json"

#: The arms recorded as run folders under :data:`FOLDER` (``note`` is the recording's own stage 1).
ARMS = {
    "note-replay": "the recorded devil's note, replayed on a fixed sample: shows the replay is exact",
    "no-note": "the same revision prompt with the supporter's note taken out",
    "other-note": "the recorded devil's note of another escalated problem of the same level (a fixed derangement)",
    "alone": "the revision adapter given the problem only (the leader's first-answer prompt), on all 600",
}
#: Which model answers each arm (``lase_nb.backends.local`` aliases): the routed organism sends a
#: leader's stage-1 revision and its extraction step to the revision adapter, as the recording did.
ARM_MODELS = {"note-replay": "organism-v6", "no-note": "organism-v6", "other-note": "organism-v6",
              "alone": "organism-revision"}
#: Problems of the note arm replayed (a seeded draw of the escalated ones).
REPLAY_SAMPLE = 40
#: The primary's margin: a difference whose interval lies within +-7 points is "no difference that
#: matters" (wider, "undecided"). 7 points is half of what stage 1 gains on the escalated problems in the
#: recording (68 fixed, 16 broken of 364: +14.3 points over the first answers): inside it, the note adds
#: less than half of stage 1's gain.
MARGIN = 0.07
#: The paper's headline aim (the same as :data:`lase_nb.organism.preregistration.AIM`) and its LASE/single token multiple.
PAPER_LASE_MULTIPLE = 1.3


# ---------------------------------------------------------------- the cases and the arms' inputs


def escalated_cases(run: Any, problems: Mapping[str, Problem], tau_lp: float, tau_h: float) -> list[StageOneCase]:
    """The problems the gate escalated in a gated recording (``lase-large``), each with its recorded
    first attempt, devil's note (boxed answers removed, as the pipeline passed it) and stage-1 revision;
    refuses a run whose stop stages do not match the gate (it was recorded at other thresholds)."""
    cases = stage_one_cases(run, problems, tau_lp, tau_h)
    stops = run.problems.set_index("problem_id")["stop_stage"]
    escalated = set(stops[stops > 0].index)
    s0 = run.stages[run.stages["stage"] == 0]
    unsure = uncertain_mask(s0["p_min"].astype(float).to_numpy(), s0["h_max"].astype(float).to_numpy(), tau_lp, tau_h)
    if set(s0["problem_id"][unsure]) != escalated or {c.problem.id for c in cases} != escalated:
        raise DataError(f"{run.path}: the gate at {tau_lp} / {tau_h} does not escalate the problems the run "
                        "escalated; read the run at its own thresholds")
    return cases


def derangement(cases: Sequence[StageOneCase]) -> dict[str, str]:
    """Whose note each escalated problem reads in the *other note* arm: within each level, the problems
    sorted by id, problem i reads the note of problem i + 1 (the last reads the first's). A cyclic shift,
    so no problem reads its own note; fixed before any call."""
    out: dict[str, str] = {}
    levels = sorted({c.problem.meta.get("level") for c in cases})
    for lv in levels:
        ids = sorted(c.problem.id for c in cases if c.problem.meta.get("level") == lv)
        if len(ids) < 2:
            raise DataError(f"level {lv} has {len(ids)} escalated problem(s): a derangement needs two")
        out.update({pid: ids[(i + 1) % len(ids)] for i, pid in enumerate(ids)})
    return out


def replay_sample(cases: Sequence[StageOneCase], k: int = REPLAY_SAMPLE, seed: int = 0) -> list[str]:
    """The ids of the note arm's replayed sample: ``k`` escalated problems drawn with ``seed``, in id order."""
    ids = sorted(c.problem.id for c in cases)
    pick = np.random.default_rng(seed).choice(len(ids), size=min(k, len(ids)), replace=False)
    return sorted(ids[i] for i in pick)


def sha256_of(obj: Any) -> str:
    """The sha256 of a JSON-able object (sorted keys): what the preregistration pins."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def arm_inputs(cases: Sequence[StageOneCase], arm: str, pairs: Mapping[str, str] | None = None,
               sample: Sequence[str] | None = None) -> dict[str, tuple[str, str | None]]:
    """Each revision arm's input by problem id: ``(attempt, note)`` (the note None in ``no-note``)."""
    by_id = {c.problem.id: c for c in cases}
    if arm == "no-note":
        return {pid: (c.attempt, None) for pid, c in by_id.items()}
    if arm == "other-note":
        if pairs is None:
            raise ValueError("the other-note arm needs the derangement's pairs")
        return {pid: (c.attempt, by_id[pairs[pid]].note) for pid, c in by_id.items()}
    if arm == "note-replay":
        return {pid: (by_id[pid].attempt, by_id[pid].note) for pid in (sample or [])}
    raise ValueError(f"not a revision arm: {arm!r} (one of no-note, other-note, note-replay)")


def prompt_texts() -> dict[str, str]:
    """The last user message of each revision arm, as sent (``{note}`` marks where a note goes)."""
    return {"note": prompts.REVISE_REQUEST.format(title=prompts.SUPPORTER_TITLES["devil"], note="{note}"),
            "no-note": prompts.REVISE_ALONE_REQUEST,
            "other-note": prompts.REVISE_REQUEST.format(title=prompts.SUPPORTER_TITLES["devil"],
                                                        note="{another problem's note}")}


# ---------------------------------------------------------------- the preregistration


def build_prereg(*, run: Any, cases: Sequence[StageOneCase], problems: Sequence[Problem], v6_prereg: Mapping[str, Any],
                 power: Mapping[str, float], tau_lp: float, tau_h: float, n_boot: int = 5000) -> dict[str, Any]:
    """The controls' preregistration: the arms and their exact prompts, the problems (the escalated ids
    and the 600, each with its sha256), the derangement, the replayed sample, the primary contrast and
    its tests, the prediction and its power, the secondary analyses, and what is said for each outcome."""
    pairs = derangement(cases)
    sample = replay_sample(cases)
    ids = sorted(c.problem.id for c in cases)
    files = run.manifest.get("model_files") or {}
    return {
        "what": "what organism v6's gain is made of: controls on the fresh recording's escalated problems, fixed "
                "before any control call (issue 'What organism v6's gain is made of'); read by lase_nb.controls",  # the name when it was preregistered (committed)
        "date": time.strftime("%Y-%m-%d"),
        "recording": {"run": str(Path(run.path).relative_to(ROOT)), "n": int(len(run.problems)),
                      "thresholds": {"tau_lp": tau_lp, "tau_h": tau_h},
                      "v6_preregistration": "data/traces/arith-organism-v6/preregistration.json",
                      "problems_sha256": v6_prereg["problems"]["sha256"]},
        "model_files": {k: {f: v.get(f) for f in ("adapter", "adapter_sha256")} for k, v in (files.get("models") or {}).items()},
        "settings": "v6's revision adapter as recorded: greedy, the recording's caps (512 leader tokens, 24 for the "
                    "answer-extraction step), no worked examples, the answer-extraction step when a reply has no "
                    "answer; every call through the call cache; each arm a run folder under controls/",
        "arms": {**ARMS, "note": "the recorded stage-1 revision of lase-large (no new call)"},
        "arm_models": ARM_MODELS,
        "prompts": {"revision_request": prompt_texts(),
                    "alone": "the leader's first-answer prompt (prompts.solver_messages, no worked examples)",
                    "rule": "no-note is the smallest change of the revision request that drops the note: the "
                            "'Critique from a reviewer:' block and 'Take this into account,' go; the attempt and "
                            "the rest of the request stay"},
        "escalated": {"n": len(ids), "per_level": {str(lv): sum(c.problem.meta.get("level") == lv for c in cases)
                                                   for lv in sorted({c.problem.meta.get("level") for c in cases})},
                      "first_right": int(sum(c.first_correct for c in cases)), "sha256": sha256_of(ids),
                      "ids_first": ids[:3]},
        "derangement": {"rule": "within each level, the escalated problems sorted by id; problem i reads the "
                                "recorded devil's note of problem i + 1 (the last reads the first's)",
                        "sha256": sha256_of(pairs)},
        "note_replay": {"n": len(sample), "seed": 0, "ids_sha256": sha256_of(sample),
                        "expected": "every replayed revision identical to the recorded one, character for character"},
        "primary": {
            "comparison": "note vs no note at stage 1: correctness after the stage-1 revision (the extraction step "
                          "counted, as the recording grades), paired by problem on the escalated problems",
            "tests": {"mcnemar": {"exact": True, "two_sided": True, "alpha": 0.05},
                      "bootstrap": {"kind": "paired percentile", "level": 0.95, "n_boot": n_boot, "seed": 0}},
            "margin": MARGIN,
            "margin_rule": "half of stage 1's recorded gain over the first answers on the escalated problems "
                           "(68 fixed, 16 broken of 364: +14.3 points)",
            "outcomes": {
                "note-helps": "both tests clear above zero: at stage 1 v6's revision does better with the devil's note "
                              "than with none; the chapters may say v6's leader reads notes, by that much",
                "note-hurts": "both tests clear below zero: the revision does better without the note",
                "no-difference": "not claimed either way and the interval lies within +-7 points (half of stage 1's recorded gain "
                                 "on these problems, +14.3 points): the note is not shown to matter; the chapters say stage 1 gains from a second look by the revision "
                                 "adapter, not from what the note says, and never call v6 a leader that reads notes",
                "undecided": "not claimed and the interval reaches beyond +-7 points: the data cannot tell; the "
                             "chapters say so and make no claim about the note"},
        },
        "prediction": {
            "effect": 0.01, "range": [-0.03, 0.04],
            "why": "on the fresh recording's stage 1, the revision fixed 41 of 127 wrong answers after a note that "
                   "names the failing step and 23 of 78 after one that does not (32% vs 29%, Fisher p = 0.76), and "
                   "changed its answer about as often: what the note says seems to matter little. The adapter was "
                   "trained to redo the whole chain after any note; without one it should still redo it",
            "expected_outcome": "no-difference",
            "power": dict(power),
            "power_note": "the primary is powered for large effects only (about half the power for +5 points): a result "
                          "that is not claimed is read through its interval and the margin, never as 'no effect'",
        },
        "secondary": {
            "contrasts": [
                "note vs the first answer, and no note vs the first answer, at stage 1 (what stage 1 gains with and "
                "without the note)",
                "note vs other note at stage 1 (the escalated problems): does this problem's note beat another's?",
                "other note vs no note at stage 1: does any note's text move the revision?",
                "v6's whole chain vs the cascade (gate + the revision adapter's own answer), on the 600, with tokens",
                "the revision adapter alone vs v5 alone (stage 0 of lase-large), on the 600",
                "the cascade vs the leader alone, on the 600",
                "the chain stopped after stage 1 vs the whole chain, on the 600, with tokens",
                "the primary per level",
                "fixes of escalated wrong first answers and breaks of escalated right ones, per arm",
            ],
            "tests": "the same two tests for each contrast; Holm's correction over this family reported; no claim "
                     "beyond the primary",
            "conditional": "if the revision adapter alone beats v5 alone by both tests, MV(7) over its samples "
                           "(temperature 0.7, as v5's MV(7)) is recorded on the 600 so that voting is matched on models",
            "cost": "tokens per problem (prompt + completion, and completions only) for the leader alone, v6's whole "
                    "chain, the chain stopped after stage 1, the cascade, MV(7) and the revision adapter alone, on one "
                    "accuracy-vs-tokens figure with 95% intervals; the paper's aim (within 1 point of MV(7) at <= 0.7x "
                    "its tokens) marked; the paper's LASE/single multiple (1.3x) beside ours",
            "overlap": "problems whose chain a training problem computes with a commutative step's operands swapped "
                       "(organism.chain_key): the primary reported with and without them",
        },
        "no_rerun": "whatever the outcome, no arm is re-run or re-prompted to change it; anything tried after seeing "
                    "a result is labelled so",
    }


def power_at(n: int, discordant: float = 0.2, effects: Sequence[float] = (0.03, 0.05, 0.08),
             margin: float = MARGIN) -> dict[str, float]:
    """The exact McNemar test's power on ``n`` pairs for each effect, with ``discordant`` of the pairs
    discordant (fixes and breaks split around the effect); and, when the true difference is zero, the
    chance that the 95% interval lies within ``margin`` (normal approximation: 2 Phi((m - 1.96 se) / se) - 1)."""
    from scipy.stats import norm

    out = {f"{100 * e:+.0f} points": round(mcnemar_power(n, (discordant + e) / 2, (discordant - e) / 2), 3)
           for e in effects}
    se = (discordant / n) ** 0.5
    out[f"interval within +-{100 * margin:.0f} at 0"] = round(max(0.0, 2 * norm.cdf((margin - 1.96 * se) / se) - 1), 3)
    return out


def load_prereg(path: str | Path = PREREG_PATH) -> dict[str, Any]:
    """The controls' preregistration; a clear error when it is not there."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: the controls' preregistration is missing; write it with "
                        "`python data/traces/preregister.py --v6-controls` and commit it alone")
    return json.loads(path.read_text())


# ---------------------------------------------------------------- reading the arms


def outcomes(run: Any, folder: str | Path = FOLDER) -> pd.DataFrame:
    """One row per problem of the recording (600), one column per policy, correctness as recorded:
    ``alone_v5`` (stage 0), ``stage1`` (the chain stopped after stage 1), ``v6`` (the whole chain),
    ``escalated``, ``level``; where the arms are recorded, ``note`` / ``no_note`` / ``other_note``
    (after the stage-1 revision, escalated problems only, NaN elsewhere), ``alone_rev`` (the revision
    adapter alone) and ``cascade`` (the gate, then the revision adapter's own answer)."""
    from ..traces import load_run

    folder = Path(folder)
    p = run.problems.set_index("problem_id")
    st = run.stages
    s0 = st[st["stage"] == 0].set_index("problem_id")
    s1 = st[st["stage"] == 1].set_index("problem_id")
    out = pd.DataFrame({"level": p["level"], "escalated": p["stop_stage"] > 0,
                        "alone_v5": s0["correct"].reindex(p.index).astype(bool),
                        "v6": p["correct"].astype(bool)})
    out["note"] = s1["correct"].reindex(p.index).where(out["escalated"])
    out["stage1"] = out["note"].where(out["escalated"], out["alone_v5"]).astype(bool)
    for arm, col in (("no-note", "no_note"), ("other-note", "other_note")):
        if (folder / arm / "manifest.json").is_file():
            arm_run = load_run(folder / arm)
            got = arm_run.problems.set_index("problem_id")["correct"]
            if set(got.index) != set(out.index[out["escalated"]]):
                raise DataError(f"{folder / arm}: holds {len(got)} problems, not the {int(out['escalated'].sum())} "
                                "escalated ones (a --limit run?); record the whole arm")
            out[col] = got.reindex(out.index)
    if "no_note" in out:  # exploratory, built after the results: the gate, then the revision with no note
        out["second_look"] = out["no_note"].where(out["escalated"], out["alone_v5"]).astype(bool)
    if (folder / "alone" / "manifest.json").is_file():
        got = load_run(folder / "alone").problems.set_index("problem_id")["correct"]
        if set(got.index) != set(out.index):
            raise DataError(f"{folder / 'alone'}: holds {len(got)} problems, not the recording's {len(out)}")
        out["alone_rev"] = got.reindex(out.index).astype(bool)
        out["cascade"] = out["alone_rev"].where(out["escalated"], out["alone_v5"]).astype(bool)
    return out


def _test(a: pd.Series, b: pd.Series, prereg: Mapping[str, Any]) -> dict[str, Any]:
    keep = a.notna() & b.notna()
    t = paired_test(a[keep].astype(bool).to_numpy(), b[keep].astype(bool).to_numpy(), **bootstrap_settings(prereg))
    t["claimed_above"] = clears_both(t, 0.05, above=True)
    t["claimed_below"] = clears_both(t, 0.05, above=False)
    return t


def primary(prereg: Mapping[str, Any], table: pd.DataFrame) -> dict[str, Any]:
    """The preregistered primary: note vs no note at stage 1 on the escalated problems, by both tests,
    with the preregistered outcome it falls in and whether the prediction held."""
    if "no_note" not in table:
        raise DataError("the no-note arm is not recorded yet (data/traces/arith-organism-v6/controls/no-note)")
    esc = table[table["escalated"]]
    t = _test(esc["note"], esc["no_note"], prereg)
    margin = float(prereg["primary"]["margin"])
    if t["claimed_above"]:
        t["outcome"] = "note-helps"
    elif t["claimed_below"]:
        t["outcome"] = "note-hurts"
    elif -margin <= t["diff_lo"] and t["diff_hi"] <= margin:
        t["outcome"] = "no-difference"
    else:
        t["outcome"] = "undecided"
    lo, hi = prereg["prediction"]["range"]
    t["prediction_held"] = bool(lo <= t["diff"] <= hi) and t["outcome"] == prereg["prediction"]["expected_outcome"]
    first = esc["alone_v5"]
    for col in ("note", "no_note"):
        t[f"{col}_fixed"] = int((~first & esc[col].astype(bool)).sum())
        t[f"{col}_broken"] = int((first & ~esc[col].astype(bool)).sum())
    t["wrong"], t["right"] = int((~first).sum()), int(first.sum())
    return t


def describe_primary(result: Mapping[str, Any], prereg: Mapping[str, Any]) -> str:
    """The primary in words: both arms, both tests, the outcome's preregistered sentence, the prediction."""
    r = result
    head = (f"**What the note adds at stage 1 (preregistered primary).** On the {r['n']} escalated problems, v6's "
            f"revision is right after the devil's note on {pct(r['acc_a'], 1)} and after the same request with no note "
            f"on {pct(r['acc_b'], 1)}: {100 * r['diff']:+.1f} points [{100 * r['diff_lo']:+.1f}, {100 * r['diff_hi']:+.1f}], "
            f"{r['b']} problems right only with the note and {r['c']} only without, exact McNemar p = {r['p_value']:.3g}. "
            f"With the note it fixes {r['note_fixed']} of {r['wrong']} wrong first answers and breaks {r['note_broken']} of "
            f"{r['right']} right ones; without it {r['no_note_fixed']} and {r['no_note_broken']}. ")
    verdict = prereg["primary"]["outcomes"][r["outcome"]]
    lo, hi = prereg["prediction"]["range"]
    pred = (f"The prediction ({100 * lo:+.0f} to {100 * hi:+.0f} points, outcome '{prereg['prediction']['expected_outcome']}') "
            f"{'held' if r['prediction_held'] else 'did not hold'}.")
    return head + f"Outcome, as preregistered: **{r['outcome']}** ({verdict}). " + pred


#: The secondary contrasts: (name, a, b, on) over :func:`outcomes`' columns.
SECONDARY = (
    ("the note vs the first answer (stage 1)", "note", "alone_v5", "escalated"),
    ("no note vs the first answer (stage 1)", "no_note", "alone_v5", "escalated"),
    ("note vs another problem's note (stage 1)", "note", "other_note", "escalated"),
    ("another problem's note vs no note (stage 1)", "other_note", "no_note", "escalated"),
    ("gated LASE (v6) vs the cascade", "v6", "cascade", "all"),
    ("the revision adapter alone vs v5 alone", "alone_rev", "alone_v5", "all"),
    ("the cascade vs the leader alone", "cascade", "alone_v5", "all"),
    ("gated LASE (v6) vs the chain stopped after stage 1", "v6", "stage1", "all"),
)


def secondary(prereg: Mapping[str, Any], table: pd.DataFrame) -> pd.DataFrame:
    """Each secondary contrast whose arms are recorded, by both tests, with Holm's adjusted p over the
    family; then the primary per level. Reported, no claim."""
    rows = []
    for name, a, b, on in SECONDARY:
        if a not in table or b not in table:
            continue
        sub = table[table["escalated"]] if on == "escalated" else table
        t = _test(sub[a], sub[b], prereg)
        rows.append({"contrast": name, "n": t["n"], "a": t["acc_a"], "b": t["acc_b"], "diff": t["diff"],
                     "lo": t["diff_lo"], "hi": t["diff_hi"], "a only": t["b"], "b only": t["c"], "p": t["p_value"]})
    out = pd.DataFrame(rows)
    if len(out):
        out["p (Holm)"] = holm(out["p"].to_numpy())
    if "no_note" in table:
        per = []
        for lv, sub in table[table["escalated"]].groupby("level"):
            t = _test(sub["note"], sub["no_note"], prereg)
            per.append({"contrast": f"note vs no note, level {lv}", "n": t["n"], "a": t["acc_a"], "b": t["acc_b"],
                        "diff": t["diff"], "lo": t["diff_lo"], "hi": t["diff_hi"], "a only": t["b"], "b only": t["c"],
                        "p": t["p_value"], "p (Holm)": np.nan})
        out = pd.concat([out, pd.DataFrame(per)], ignore_index=True)
    return out


def secondary_markdown(table: pd.DataFrame) -> str:
    """The secondary table as printed: percentages, points, p-values."""
    def p_or_dash(x: float) -> str:
        return "-" if pd.isna(x) else f"{x:.3g}"

    lines = ["| contrast | n | A | B | A - B [95%] | A only / B only | p | p (Holm) |", "|---|---|---|---|---|---|---|---|"]
    for _, d in table.iterrows():
        lines.append(f"| {d['contrast']} | {d['n']} | {pct(d['a'], 1)} | {pct(d['b'], 1)} | "
                     f"{100 * d['diff']:+.1f} [{100 * d['lo']:+.1f}, {100 * d['hi']:+.1f}] | {d['a only']} / {d['b only']} | "
                     f"{p_or_dash(d['p'])} | {p_or_dash(d['p (Holm)'])} |")
    return "\n".join(lines)


def arm_counts(table: pd.DataFrame) -> pd.DataFrame:
    """Per stage-1 arm, on the escalated problems: fixes of the wrong first answers, breaks of the right ones."""
    esc = table[table["escalated"]]
    first = esc["alone_v5"]
    rows = []
    for col, label in (("note", "the devil's note (recorded)"), ("other_note", "another problem's note"),
                       ("no_note", "no note")):
        if col in esc:
            right = esc[col].astype(bool)
            rows.append({"stage 1 reads": label, "fixed": int((~first & right).sum()), "wrong": int((~first).sum()),
                         "broken": int((first & ~right).sum()), "right": int(first.sum()),
                         "right after stage 1": pct(float(right.mean()), 1)})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- cost


def _tokens(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    return df["prompt_tokens"].to_numpy(float) + df["completion_tokens"].to_numpy(float), df["completion_tokens"].to_numpy(float)


def policy_tokens(run: Any, mv: Any | None = None, folder: str | Path = FOLDER) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Tokens per problem (all, completions) of each policy, in the recording's problem order: the leader
    alone (stage 0 with its extraction step), the chain stopped after stage 1, v6's whole chain (as gated),
    the cascade and the revision adapter alone (where recorded), MV(7) (``mv``, where given)."""
    from ..traces import load_run

    p = run.problems.set_index("problem_id")
    order = p.index
    st = run.stages
    s0 = st[st["stage"] == 0].set_index("problem_id").reindex(order)
    s1 = st[st["stage"] == 1].set_index("problem_id").reindex(order)
    esc = (p["stop_stage"] > 0).to_numpy()
    out = {"leader alone": _tokens(s0), WHOLE: _tokens(p)}
    stage1 = s1.where(pd.Series(esc, index=order), s0, axis=0)
    out["chain stopped after stage 1"] = _tokens(stage1)
    if (Path(folder) / "alone" / "manifest.json").is_file():
        alone = load_run(Path(folder) / "alone").problems.set_index("problem_id").reindex(order)
        a_all, a_comp = _tokens(alone)
        l_all, l_comp = out["leader alone"]
        out["cascade (gate + revision adapter)"] = (l_all + esc * a_all, l_comp + esc * a_comp)
        out["revision adapter alone"] = (a_all, a_comp)
    if (Path(folder) / "no-note" / "manifest.json").is_file():
        look = load_run(Path(folder) / "no-note").problems.set_index("problem_id").reindex(order)
        n_all, n_comp = (np.nan_to_num(x) for x in _tokens(look))
        l_all, l_comp = out["leader alone"]
        out[SECOND_LOOK] = (l_all + esc * n_all, l_comp + esc * n_comp)
    if mv is not None:
        out["MV(7) of the leader"] = _tokens(mv.problems.set_index("problem_id").reindex(order))
    return out


#: The whole chain's name in the cost tables.
WHOLE = "gated LASE (v6)"
#: A policy built after the results were seen (labelled so wherever it is printed): the same gate, then
#: the revision adapter's second look at the attempt with no note (the no-note arm), no supporter call.
SECOND_LOOK = "gate + revision with no note (exploratory)"
#: Which column of :func:`outcomes` each cost policy's accuracy is.
POLICY_COLUMN = {"leader alone": "alone_v5", "chain stopped after stage 1": "stage1", WHOLE: "v6",
                 "cascade (gate + revision adapter)": "cascade", "revision adapter alone": "alone_rev",
                 SECOND_LOOK: "second_look"}


def cost_table(run: Any, table: pd.DataFrame, mv: Any | None = None, folder: str | Path = FOLDER,
               n_boot: int = 5000) -> pd.DataFrame:
    """Accuracy (Wilson 95%) and mean tokens per problem (bootstrap 95%, all and completions) of each
    policy, with its multiple of the leader alone's tokens."""
    toks = policy_tokens(run, mv, folder)
    base = toks["leader alone"][0].mean()
    rows = []
    for name, (all_, comp) in toks.items():
        if name == "MV(7) of the leader":
            correct = mv.problems.set_index("problem_id").reindex(table.index)["correct"].astype(bool)
        else:
            correct = table[POLICY_COLUMN[name]].astype(bool)
        k, n = int(correct.sum()), len(correct)
        lo, hi = wilson_interval(k, n)
        t, t_lo, t_hi = bootstrap_ci(all_, n_boot=n_boot, seed=0)
        rows.append({"policy": name, "accuracy": k / n, "acc_lo": lo, "acc_hi": hi, "tokens": t, "tok_lo": t_lo,
                     "tok_hi": t_hi, "completion tokens": float(comp.mean()), "x leader": t / base})
    return pd.DataFrame(rows)


def where_tokens_go(run: Any) -> pd.DataFrame:
    """v6's whole chain's tokens per problem by role and stage (prompt and completion), the largest first."""
    c = run.calls[run.calls["used"].astype(bool)] if "used" in run.calls else run.calls
    n = run.problems["problem_id"].nunique()
    g = c.groupby(["stage", "role"])[["prompt_tokens", "completion_tokens"]].sum() / n
    g["all"] = g["prompt_tokens"] + g["completion_tokens"]
    g["share"] = g["all"] / g["all"].sum()
    return g.sort_values("all", ascending=False).reset_index()


def why_multiple(run: Any) -> dict[str, float]:
    """What makes gated LASE's token multiple: the share of problems escalated, and an escalated problem's
    tokens in leader-alone units (its prompt and completion tokens over the mean leader-alone problem's)."""
    p = run.problems
    s0 = run.stages[run.stages["stage"] == 0]
    lead = float((s0["prompt_tokens"] + s0["completion_tokens"]).mean())
    esc = p[p["stop_stage"] > 0]
    return {"escalated": float(len(esc) / len(p)), "leader_tokens": lead,
            "leader_completion": float(s0["completion_tokens"].mean()),
            "per_escalated": float(esc["total_tokens"].mean() / lead) if len(esc) else float("nan"),
            "stages_per_escalated": float(esc["stop_stage"].mean()) if len(esc) else float("nan")}


def describe_cost(costs: pd.DataFrame, where: pd.DataFrame, aim: Mapping[str, float],
                  why: Mapping[str, float] | None = None, detail: bool = True) -> str:
    """Our token multiple beside the paper's, why they differ (``why``: :func:`why_multiple`), where the
    tokens go (with ``detail``: the largest roles and stages), and what would reach the paper's aim, from
    the tables."""
    c = costs.set_index("policy")
    lead = c.loc["leader alone", "tokens"]
    v6 = c.loc[WHOLE]
    text = (f"**Our multiple.** Gated LASE on v6 spends {v6['tokens']:.0f} tokens a problem against the leader "
            f"alone's {lead:.0f} ({v6['x leader']:.1f}x; completions only {v6['completion tokens']:.0f} vs "
            f"{c.loc['leader alone', 'completion tokens']:.0f}); the paper reports LASE at about "
            f"{PAPER_LASE_MULTIPLE}x the single agent. ")
    if detail:
        top = where.iloc[:3]
        parts = [f"stage {int(r.stage)} {r.role} {100 * r.share:.0f}% ({r.all:.0f} tokens, {r.prompt_tokens:.0f} of them "
                 "prompt)" for r in top.itertuples()]
        stage_share = where.groupby("stage")["share"].sum()
        prompt_share = where["prompt_tokens"].sum() / where["all"].sum()
        text += ("**Where the tokens go.** The largest parts: " + "; ".join(parts) + ". "
                 f"Stages 2-3 take {100 * stage_share[stage_share.index >= 2].sum():.0f}% of the tokens, prompts "
                 f"{100 * prompt_share:.0f}% (each call re-reads the problem, the attempt and the notes). ")
    if why is not None:
        text += (f"**Why not 1.3x.** The multiple is the escalation rate times what an escalation costs: here "
                 f"{100 * why['escalated']:.0f}% of problems escalate, and an escalated problem costs "
                 f"{why['per_escalated']:.0f} leader answers ({why['stages_per_escalated']:.1f} stages on average), "
                 f"because our leader's answer is short ({why['leader_completion']:.0f} completion tokens) while each "
                 "stage re-reads the problem, the attempt and the note. The paper's single agent spends 0.3k-1.6k "
                 "tokens a problem (its Table 1), so a stage's re-reading weighs far less against it, and it escalates "
                 "a fifth to two fifths of problems (21-43% in its Table 5, GPT-4.1-mini on MATH-500). ")
    if "MV(7) of the leader" in c.index:
        mv = c.loc["MV(7) of the leader"]
        budget = aim["token_ratio"] * mv["tokens"]
        target = mv["accuracy"] - aim["points"]
        meets = [name for name, r in c.iterrows() if name != "MV(7) of the leader" and r["accuracy"] >= target
                 and r["tokens"] <= budget]
        text += (f"**The paper's aim** (within {100 * aim['points']:.0f} point of MV(7)'s {pct(mv['accuracy'], 1)} at <= "
                 f"{aim['token_ratio']:g}x its {mv['tokens']:.0f} tokens, so >= {pct(target, 1)} at <= {budget:.0f} tokens) "
                 + (f"is met by: {', '.join(meets)}." if meets else "is met by none of these policies.") + " ")
        if "leader alone" in meets:
            text += ("The leader alone meets it too, since MV(7) is within a point of the leader alone here: on this "
                     "model the aim cannot tell a multi-agent method from none, so read the accuracies. ")
        ok = c[(c.index != "MV(7) of the leader") & (c["tokens"] <= budget)].sort_values("accuracy", ascending=False)
        if len(ok):
            best = ok.iloc[0]
            text += (f"Within that budget the most accurate is {ok.index[0]} ({pct(best['accuracy'], 1)} at "
                     f"{best['tokens']:.0f} tokens), {100 * (best['accuracy'] - mv['accuracy']):+.1f} points from MV(7).")
    return text


#: Each cost policy's house style, one meaning per colour (``plots.MEANINGS``): the strategies' own
#: colours and markers where the policy is one (the leader alone is the single agent, the whole chain
#: is LASE, MV(7) is MV); the chain stopped after stage 1 is LASE's chain (hollow), the revision
#: adapter alone one model alone (hollow), the cascade and the second look with no note the gate and
#: one revision-adapter call.
def _policy_style(policy: str) -> dict[str, str]:
    from ..plots import SECOND_LOOK_COLOR, style

    known = {"leader alone": "single", WHOLE: "lase", "MV(7) of the leader": "mv"}
    if policy in known:
        s = style(known[policy])
        return {"color": s["color"], "marker": s["marker"], "mfc": s["color"]}
    return {"chain stopped after stage 1": {"color": style("lase")["color"], "marker": "D", "mfc": "white"},
            "cascade (gate + revision adapter)": {"color": SECOND_LOOK_COLOR, "marker": "^", "mfc": SECOND_LOOK_COLOR},
            "revision adapter alone": {"color": style("single")["color"], "marker": "v", "mfc": "white"},
            SECOND_LOOK: {"color": SECOND_LOOK_COLOR, "marker": "P", "mfc": "white"},
            }.get(policy, {"color": "black", "marker": "o", "mfc": "black"})


def plot_cost(costs: pd.DataFrame, aim: Mapping[str, float], path: str | Path | None = None):
    """Accuracy against tokens per problem for each policy, with 95% intervals both ways, the paper's aim
    shaded (within a point of MV(7) at <= 0.7x its tokens) and the paper's 1.3x LASE multiple marked; the
    legend under the axes, so that no point hides behind it (chapter 06, section 6.7)."""
    import matplotlib.pyplot as plt

    from ..plots import PAPER_COLOR

    fig, ax = plt.subplots(figsize=(9, 6.4), dpi=100)
    for r in costs.itertuples(index=False):
        st = _policy_style(r.policy)
        ax.errorbar(r.tokens, 100 * r.accuracy, xerr=[[r.tokens - r.tok_lo], [r.tok_hi - r.tokens]],
                    yerr=[[100 * (r.accuracy - r.acc_lo)], [100 * (r.acc_hi - r.accuracy)]], fmt=st["marker"],
                    color=st["color"], mfc=st["mfc"], mec=st["color"] if st["mfc"] == "white" else "black",
                    mew=2 if st["mfc"] == "white" else 1, ms=9, capsize=3, label=f"{r.policy}: {100 * r.accuracy:.1f}%, {r.tokens:.0f} tokens")
    c = costs.set_index("policy")
    lead = c.loc["leader alone", "tokens"]
    lo = 100 * costs["acc_lo"].min() - 2
    hi = min(100, 100 * costs["acc_hi"].max() + 4)
    ax.set_ylim(lo, hi)
    ax.set_xscale("log")
    ax.set_xlim(0.7 * costs["tok_lo"].min(), 1.4 * costs["tok_hi"].max())
    ax.axvline(PAPER_LASE_MULTIPLE * lead, color=PAPER_COLOR, ls=":", lw=1.8)
    ax.text(PAPER_LASE_MULTIPLE * lead * 1.03, hi - 0.5, f"the paper's LASE:\n{PAPER_LASE_MULTIPLE}x the single agent",
            fontsize=10, va="top", color=PAPER_COLOR)
    if "MV(7) of the leader" in c.index:
        mv = c.loc["MV(7) of the leader"]
        ax.fill_between([ax.get_xlim()[0], aim["token_ratio"] * mv["tokens"]], 100 * (mv["accuracy"] - aim["points"]), hi,
                        color=PAPER_COLOR, alpha=0.08, lw=0,
                        label=f"the paper's aim: within {100 * aim['points']:.0f} point of MV(7) at <= {aim['token_ratio']:g}x its tokens")
    ax.set_xlabel("tokens per problem (prompt + completion, log scale)")
    ax.set_ylabel("accuracy (%)")
    ax.set_title("Organism v6, 600 fresh problems: accuracy against cost")
    ax.tick_params(labelsize=11)
    fig.legend(*ax.get_legend_handles_labels(), loc="lower center", ncol=2, fontsize=9.5, frameon=False)
    fig.tight_layout(rect=(0, 0.17, 1, 1))
    if path is not None:
        fig.savefig(path)
    return fig


# ---------------------------------------------------------------- the overlap recount


def overlap_sensitivity(prereg_v6: Mapping[str, Any], run: Any, problems: Mapping[str, Problem]) -> dict[str, Any]:
    """v6's primary (gated LASE vs the leader alone) without the problems whose chain a training problem
    computes with a commutative step's operands swapped (:func:`lase_nb.organism.recipe.training_overlap`)."""
    from .recipe import training_overlap
    from .preregistration import _gated_and_alone

    final, alone = _gated_and_alone(prereg_v6, run)
    overlap = set(training_overlap([problems[i] for i in final.index if i in problems]))
    keep = ~final.index.isin(list(overlap))
    t = paired_test(final[keep].to_numpy(bool), alone[keep].to_numpy(bool), **bootstrap_settings(prereg_v6))
    t["removed"] = len(overlap)
    t["removed_fixed"] = int(sum(bool(final[i]) and not bool(alone[i]) for i in overlap))
    t["removed_broken"] = int(sum(not bool(final[i]) and bool(alone[i]) for i in overlap))
    return t


def describe_overlap(t: Mapping[str, Any]) -> str:
    """The overlap sensitivity in words."""
    return (f"*Overlap, recounted:* {t['removed']} of the fresh problems redo a training problem's arithmetic with a "
            f"commutative step's operands swapped (7 + 9 against 9 + 7); the draw's key told them apart. They hold "
            f"{t['removed_fixed']} of the fixes and {t['removed_broken']} of the breaks. Without them, {t['n']} problems: "
            f"{100 * t['diff']:+.1f} points [{100 * t['diff_lo']:+.1f}, {100 * t['diff_hi']:+.1f}], {t['b']} fixed and "
            f"{t['c']} broken, exact McNemar p = {t['p_value']:.3g}.")


def recount_overlaps(traces_root: str | Path | None = None) -> pd.DataFrame:
    """Every committed organism recording's problems whose chain (:func:`lase_nb.organism.recipe.chain_key`, commutative
    operands in either order) a training set computes, beside the count by the draws' key: one row per run."""
    from .recipe import TRAINING_SETS, chain_key, draw_key, training_problems
    from ..runs import problems_from_manifest

    root = Path(traces_root) if traces_root else ROOT / "data" / "traces"
    sets = {name: [p for p in training_problems(name)] for name in TRAINING_SETS}
    by_chain = {name: {chain_key(p) for p in ps} for name, ps in sets.items()}
    by_draw = {name: {draw_key(p) for p in ps} for name, ps in sets.items()}
    rows = []
    for manifest in sorted(root.rglob("manifest.json")):
        m = json.loads(manifest.read_text())
        if m.get("dataset", "arith") != "arith":
            continue
        problems = list(problems_from_manifest(m).values())
        if not problems or "start" not in problems[0].meta:
            continue
        row = {"run": str(manifest.parent.relative_to(root)), "n": len(problems)}
        for name in TRAINING_SETS:
            row[name] = sum(chain_key(p) in by_chain[name] for p in problems)
        row["any (chain_key)"] = sum(any(chain_key(p) in by_chain[n] for n in TRAINING_SETS) for p in problems)
        row["any (draw key)"] = sum(any(draw_key(p) in by_draw[n] for n in TRAINING_SETS) for p in problems)
        rows.append(row)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- one loader and the summary the chapters print


@dataclasses.dataclass
class Controls:
    """What the chapters read: the preregistration, the fresh recording, MV(7), the outcome table and the
    recording's problems by id."""

    prereg: dict[str, Any]
    run: Any
    mv: Any | None
    table: pd.DataFrame
    problems: dict[str, Problem]


def load_controls(study: str | Path = STUDY, folder: str | Path | None = None) -> Controls | None:
    """The controls of v6's gain from the committed study, or None when the preregistration or the no-note
    arm is not there (a chapter then says so in one line)."""
    from ..runs import problems_from_manifest
    from ..traces import load_run

    study = Path(study)
    folder = Path(folder) if folder else study / "controls"
    prereg_path = folder / "preregistration.json"
    if not prereg_path.is_file() or not (folder / "no-note" / "manifest.json").is_file():
        return None
    run = load_run(study / "lase-large")
    mv = load_run(study / "mv") if (study / "mv" / "manifest.json").is_file() else None
    return Controls(load_prereg(prereg_path), run, mv, outcomes(run, folder), problems_from_manifest(run.manifest))


def replay_check(folder: str | Path = FOLDER) -> dict[str, int] | None:
    """How many of the note arm's replayed revisions came out identical to the recorded ones."""
    path = Path(folder) / "note-replay" / "manifest.json"
    return json.loads(path.read_text()).get("identical_to_recorded") if path.is_file() else None


def _pts(t: Mapping[str, Any]) -> str:
    return f"{100 * t['diff']:+.1f} points [{100 * t['diff_lo']:+.1f}, {100 * t['diff_hi']:+.1f}], p = {t['p_value']:.3g}"


def notes_with_the_answer(c: Controls) -> dict[str, int]:
    """On the escalated wrong first answers, how many notes read at stage 1 contain the gold answer
    (:func:`lase_nb.notes.states_answer`: a number in neither the problem nor the attempt): the problem's
    own recorded note, and in the other-note arm the other problem's note (by chance). The rule's counter
    for both arms."""
    from ..notes import states_answer

    th = c.prereg["recording"]["thresholds"]
    cases = escalated_cases(c.run, c.problems, th["tau_lp"], th["tau_h"])
    pairs, by_id = derangement(cases), {x.problem.id: x for x in cases}
    wrong = [x for x in cases if not x.first_correct]
    said = {"own": sum(states_answer(x.note, x.problem.gold, x.problem.question, x.attempt) for x in wrong),
            "other": sum(states_answer(by_id[pairs[x.problem.id]].note, x.problem.gold, x.problem.question, x.attempt)
                         for x in wrong)}
    return {**said, "wrong": len(wrong)}


def made_of_verdict(c: Controls) -> str:
    """What v6's gain is made of, by the preregistered outcome and the secondary contrasts: ``"the note"``
    (the primary says the note helps), ``"a second solver"`` (the cascade gains over the leader alone by
    both tests), ``"a second look"`` (neither, and stage 1 without a note gains over the first answers by
    both tests), else ``"undecided"``."""
    r = primary(c.prereg, c.table)
    if r["outcome"] == "note-helps":
        return "the note"
    esc = c.table[c.table["escalated"]]
    if "cascade" in c.table and _test(c.table["cascade"], c.table["alone_v5"], c.prereg)["claimed_above"]:
        return "a second solver"
    if r["outcome"] in ("no-difference", "note-hurts") and _test(esc["no_note"], esc["alone_v5"], c.prereg)["claimed_above"]:
        return "a second look"
    return "undecided"


def describe_made_of(c: Controls, folder: str | Path = FOLDER) -> str:
    """What v6's gain is made of, from the data (chapter 06, 07, the README): the primary, stage 1 without a
    note, another problem's note, the revision adapter as a solver and as a cascade, the verdict
    (:func:`made_of_verdict`), and the exploratory policy that follows, labelled so."""
    r = primary(c.prereg, c.table)
    esc = c.table[c.table["escalated"]]
    said = {"note-helps": "the note helps", "note-hurts": "the note hurts",
            "no-difference": "the note is not shown to matter (the interval lies within the preregistered 7 points)",
            "undecided": "the data cannot tell whether the note matters (the interval reaches beyond the "
                         "preregistered 7 points)"}[r["outcome"]]
    with_note, without = _test(esc["note"], esc["alone_v5"], c.prereg), _test(esc["no_note"], esc["alone_v5"], c.prereg)
    text = (f"**What the gain is made of** (controls preregistered before any call). At stage 1, on the {r['n']} "
            f"escalated problems, v6's revision is right on {pct(r['acc_a'], 1)} after the devil's note and on "
            f"{pct(r['acc_b'], 1)} with no note ({_pts(r)}): {said}. With no note at all, stage 1 gains "
            f"{100 * without['diff']:+.1f} points over the first answers ({without['b']} fixed, {without['c']} broken), "
            f"against {100 * with_note['diff']:+.1f} with the note ({with_note['b']} fixed, {with_note['c']} broken).")
    if "other_note" in esc:
        t = _test(esc["note"], esc["other_note"], c.prereg)
        word = "better" if t["diff"] > 0 else "worse"
        told = notes_with_the_answer(c)
        fam = secondary(c.prereg, c.table).set_index("contrast")
        holm_p = float(fam.loc["note vs another problem's note (stage 1)", "p (Holm)"])
        text += (f" The problem's own note does {word} than another problem's note ({_pts(t)}, Holm p = {holm_p:.2g}; "
                 "secondary, no claim): "
                 f"another problem's note breaks {int((esc['alone_v5'] & ~esc['other_note'].astype(bool)).sum())} right "
                 f"answers against the own note's {int((esc['alone_v5'] & ~esc['note'].astype(bool)).sum())}, although "
                 f"it contains the gold answer, by chance, on {told['other']} of the {told['wrong']} wrong first answers "
                 f"(the own note on {told['own']}).")
    if "cascade" in c.table:
        solo = _test(c.table["alone_rev"], c.table["alone_v5"], c.prereg)
        casc = _test(c.table["cascade"], c.table["alone_v5"], c.prereg)
        text += (f" Given the problem alone, the revision adapter is right on {pct(solo['acc_a'], 1)} against v5's "
                 f"{pct(solo['acc_b'], 1)} ({_pts(solo)}), and as a cascade (the same gate, then its own answer) on "
                 f"{pct(casc['acc_a'], 1)}, {100 * casc['diff']:+.1f} points over the leader alone.")
    worse = "cascade" in c.table and _test(c.table["alone_rev"], c.table["alone_v5"], c.prereg)["claimed_below"]
    verdict = made_of_verdict(c)
    text += {"the note": " So on this organism the note carries the gain: v6's leader reads notes.",
             "a second solver": " So on this organism the gain is a second solver answering the problems the gate picks.",
             "a second look": " So on this organism the gain is **the gate plus a second look at the leader's own attempt** "
                              "by the revision adapter: neither a second solver "
                              + ("(alone it is a worse one)" if worse else "(alone it does not gain)")
                              + " nor the note's content (not shown to add to it).",
             "undecided": " What the gain is made of stays undecided on these data."}[verdict]
    if SECOND_LOOK in POLICY_COLUMN and "second_look" in c.table:
        k = cost_table(c.run, c.table, c.mv, folder).set_index("policy")
        look, whole = k.loc[SECOND_LOOK], k.loc[WHOLE]
        text += (f" *Exploratory, built after these results:* that second look behind the same gate, with no supporter "
                 f"call at all, is right on {pct(look['accuracy'], 1)} at {look['tokens']:.0f} tokens a problem "
                 f"({look['x leader']:.1f}x the leader alone), against gated LASE's {pct(whole['accuracy'], 1)} at "
                 f"{whole['tokens']:.0f} ({whole['x leader']:.1f}x); a preregistered test on fresh problems would have to "
                 "confirm it.")
    return text


def describe_replay(check: Mapping[str, int] | None) -> str:
    """Whether the note arm's replay reproduced the recording."""
    if not check:
        return "The note arm's replay is not recorded here."
    return (f"The note arm is the recording's own stage 1; replayed on {check['n']} of its problems, "
            f"{check['k']} revisions came out identical to the recorded ones, character for character.")


# ---------------------------------------------------------------- the verdict with what the gain is made of, and the README


def describe_v6(prereg_v6: Mapping[str, Any] | None, study: str | Path | None = None, made_of: bool = True,
                sensitivity: bool = True) -> str:
    """v6's preregistered verdict (:func:`lase_nb.revision.describe_v6_verdict`), with ``sensitivity`` the
    told-answer and overlap recounts (:func:`describe_overlap`), and with ``made_of`` what the gain is made
    of (:func:`describe_made_of`, when the controls are recorded)."""
    from .revision import describe_v6_verdict
    from ..runs import problems_from_manifest
    from ..traces import load_run

    study = Path(study) if study else STUDY
    text = describe_v6_verdict(prereg_v6, study, sensitivity)
    large = study / "lase-large"
    if prereg_v6 is None or not (large / "manifest.json").is_file():
        return text
    run = load_run(large)
    problems = problems_from_manifest(run.manifest) if sensitivity else {}
    if problems:
        text += " " + describe_overlap(overlap_sensitivity(prereg_v6, run, problems))
    found = load_controls(study) if made_of else None
    if found is not None:
        text += " " + describe_made_of(found, study / "controls")
    return text


def readme_summary(prereg: Mapping[str, Any], prereg_v6: Mapping[str, Any] | None,
                   traces_root: Path | None = None) -> str:
    """The README's three sentences on why no gain so far and the test that could show one, from the
    committed data: v5's preregistered test, the note and the leader separated at stage 1, and v6's
    verdict or what stands in its way, with what its gain is made of (:func:`describe_v6`)."""
    from .ceiling import load_rows
    from .preregistration import primary_from_gated_run
    from .revision import V6_STUDY, decomposition_sources, note_leader_grid
    from ..runs import problems_from_manifest
    from ..traces import load_run

    root = Path(traces_root) if traces_root else V6_STUDY.parent
    p = primary_from_gated_run(prereg, load_run(root / "arith-organism-point" / "lase-large"))
    run = load_run(root / "arith-organism-point" / "lase-full")
    grid = note_leader_grid(decomposition_sources(run, problems_from_manifest(run.manifest), load_rows(),
                                                  prereg["thresholds"]["tau_lp"], prereg["thresholds"]["tau_h"]))
    g = grid.set_index(["leader", "note"])["fixed"]
    own, perfect = "v5's own devil note", "a perfect note"
    wrong = int(grid["wrong"].iloc[0])
    first = (f"On the pointing organism (v5), gated LASE against the leader alone on {p['n']} fresh problems, as "
             f"preregistered: {100 * p['diff']:+.1f} points [{100 * p['diff_lo']:+.1f}, {100 * p['diff_hi']:+.1f}], "
             f"{'claimed' if p['claimed'] else 'not claimed'}.")
    second = (f"Replaying its first stage on the {wrong} escalated wrong answers separates the note from the leader: "
              f"v5's revision fixes {g[('v5', own)]} after its own devil's note and "
              f"{g[('v5', perfect)]} after a perfect one; a revision trained to read notes fixes "
              f"{g[('pilot', own)]} after the same notes (found after the fact).")
    return f"{first} {second} {describe_v6(prereg_v6, root / 'arith-organism-v6')}"


def write_readme_summary(readme: Path) -> None:
    """Write :func:`readme_summary` between the README's ``v6`` markers."""
    from .ceiling import write_between_markers
    from .preregistration import V6_PATH, load

    write_between_markers(readme, "v6", readme_summary(load(), load(V6_PATH) if V6_PATH.is_file() else None))


def describe_gain_parts(c: Controls, folder: str | Path = FOLDER) -> str:
    """Where gated LASE's gain over the leader alone comes from, part by part, on the 600 (chapter 06,
    section 6.7): the second look with no note (exploratory, labelled so), what the note adds at stage 1
    (the preregistered primary), what stages 2-3 add, and the revision adapter as a second solver (the
    cascade), each with its tokens a problem."""
    t = c.table
    k = cost_table(c.run, t, c.mv, folder).set_index("policy")
    n = len(t)
    gain = float(t["v6"].mean() - t["alone_v5"].mean())
    r = primary(c.prereg, t)
    parts = [f"**Where gated LASE's {100 * gain:+.1f} points come from** (on the {n} problems, against the leader "
             f"alone's {k.loc['leader alone', 'tokens']:.0f} tokens):"]
    if "second_look" in t:
        look = float(t["second_look"].mean() - t["alone_v5"].mean())
        parts.append(f"a second look by the revision adapter with no note, behind the same gate, "
                     f"{100 * look:+.1f} at {k.loc[SECOND_LOOK, 'tokens']:.0f} tokens (the no-note arm was "
                     "preregistered; reading it as a policy behind the gate is exploratory, built after the results);")
    parts.append(f"the devil's note at stage 1 adds {100 * r['diff'] * r['n'] / n:+.1f} on top (the preregistered primary's "
                 f"{100 * r['diff']:+.1f} points on the {r['n']} escalated problems, spread over all {n}; "
                 f"p = {r['p_value']:.2g}, {r['outcome']}), for "
                 f"{k.loc['chain stopped after stage 1', 'tokens']:.0f} tokens in all;")
    later = _test(t["v6"], t["stage1"], c.prereg)
    parts.append(f"stages 2-3 add {100 * later['diff']:+.1f} (p = {later['p_value']:.2g}) and take the cost to "
                 f"{k.loc[WHOLE, 'tokens']:.0f};")
    if "cascade" in t:
        casc = _test(t["cascade"], t["alone_v5"], c.prereg)
        parts.append(f"the revision adapter as a second solver (the cascade) would give {100 * casc['diff']:+.1f} "
                     f"(p = {casc['p_value']:.2g}) at {k.loc['cascade (gate + revision adapter)', 'tokens']:.0f}.")
    return " ".join(parts)


def describe_claims_caveat(c: Controls) -> str:
    """Chapter 07's one line beside organism v6's verdicts: what its gain is made of (:func:`made_of_verdict`),
    so that a reproduced accuracy claim is not read as the supporters' doing when the controls say otherwise."""
    verdict = made_of_verdict(c)
    t = c.table
    gain = float(t["v6"].mean() - t["alone_v5"].mean())
    if verdict == "the note":
        return f"*Organism v6:* its controls credit the supporters' notes with its {100 * gain:+.1f} points (chapter 06, 6.6)."
    if verdict == "a second look" and "second_look" in t:
        look = float(t["second_look"].mean() - t["alone_v5"].mean())
        return (f"*Organism v6, read with chapter 06 (6.7):* of its {100 * gain:+.1f} points over the leader alone, "
                f"{100 * look:+.1f} come from a second look by its revision adapter with no supporter at all "
                "(exploratory); the note is not shown to add to it, so its reproduced claims do not show that the "
                "supporters carry the gain.")
    return (f"*Organism v6:* what its {100 * gain:+.1f} points are made of is {verdict} by its controls "
            "(chapter 06, 6.6-6.7).")
