"""The tables made from runs, and their verdict words: what chapters 04, 06 and 07 and ``lase-nb report`` print.

- :func:`strategy_tables`: each strategy's problems table as the chapters compare them (LASE replayed
  from its full chain); :func:`paired_correct`: two strategies' correctness on their shared problems;
- :func:`comparison_table`: every strategy on the problems all of them answered, the one comparison
  table; :func:`split_by_coverage` and :func:`main_comparison`: a study's main table, runs on far
  fewer problems apart;
- :func:`baseline_formats`, :func:`off_format`: whether a baseline answers in its own format, so its
  row compares a strategy and not a training;
- :func:`sampling_gap`, :func:`describe_sampling_gap`: the greedy single agent against the sampled
  first rounds of MV, MAD and MoA (chapter 04, section 4.2);
- :func:`decidable`, :func:`gain_words`: the size below which no accuracy claim is decided, and a
  paired gain in words.

The runs themselves come from :mod:`lase_nb.runs`.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

import numpy as np
import pandas as pd

from .errors import DataError
from .stats import PAIRED_N_BOOT, bool_array, mcnemar, wilson_interval
from .strategies import SPECS
from .traces import Run

__all__ = ["strategy_tables", "paired_correct", "comparison_table", "split_by_coverage", "main_comparison",
           "REVISION_TEXT", "FOLLOW_UP_ROLES", "FORMAT_TOLERANCE", "baseline_formats", "off_format",
           "FIRST_ROUND", "FIRST_ROUND_LABEL", "sampling_gap", "describe_sampling_gap",
           "MIN_DECIDABLE", "MIN_DISCORDANT", "decidable", "gain_words"]


def strategy_tables(runs: Mapping[str, Run], tau_lp: float, tau_h: float) -> dict[str, pd.DataFrame]:
    """Each strategy's problems table as the chapters compare them, in display order (``SPECS``): LASE
    replayed from the full chain (``runs["lase"]``, or ``runs["lase-full"]`` when loaded by folder
    name) at (tau_lp, tau_h), ``lase-full`` = every stage, ``single`` (when no single run was
    recorded) = the full chain's stage 0, the leader alone on the same prompt; every other run as
    recorded."""
    from .replay import chains_from_stages, outcomes_at, replay

    chains = chains_from_stages(runs["lase" if "lase" in runs else "lase-full"].stages)
    replayed = {"lase": replay(chains, tau_lp, tau_h), "lase-full": outcomes_at(chains, chains.n_stages - 1)}
    if "single" not in runs:  # the single agent is the leader alone: the full chain's stage 0, same prompt
        replayed["single"] = outcomes_at(chains, 0)
    return {s: replayed[s] if s in replayed else runs[s].problems for s in SPECS if s in replayed or s in runs}


def paired_correct(tables: Mapping[str, pd.DataFrame], a: str, b: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Strategy ``a``'s and ``b``'s correctness on the problems both ran (from
    :func:`strategy_tables`), in the same order: the input of a paired test; None when either is
    missing or they share no problem."""
    if a not in tables or b not in tables:
        return None
    x = tables[a].set_index(tables[a]["problem_id"].astype(str))["correct"]
    y = tables[b].set_index(tables[b]["problem_id"].astype(str))["correct"]
    ids = x.index.intersection(y.index)
    return (x.loc[ids].to_numpy(bool), y.loc[ids].to_numpy(bool)) if len(ids) else None


def _ref_columns(ok: np.ndarray, ref_ok: np.ndarray | None, tag: str) -> dict[str, float]:
    if ref_ok is None:
        return {f"wins_vs_{tag}": np.nan, f"losses_vs_{tag}": np.nan, f"p_vs_{tag}": np.nan}
    wins, losses, p = mcnemar(ok, ref_ok)
    return {f"wins_vs_{tag}": wins, f"losses_vs_{tag}": losses, f"p_vs_{tag}": p}


def comparison_table(runs: Mapping[str, pd.DataFrame] | pd.DataFrame, baseline: str | None = "single",
                     vote: str | None = "mv", level: float = 0.95) -> pd.DataFrame:
    """Every strategy on the problems ALL of them answered: the one comparison table (chapters 04, 06).

    ``runs`` maps a strategy to its problems table, or is one long table with a ``strategy``
    column (first-seen order). Each needs problem_id, correct and total_tokens, one row per
    problem; completion_tokens and stop_stage / x_debated (for the escalation rate) are optional.

    Columns: n (common problems), accuracy with a Wilson interval (acc_lo, acc_hi: the package's
    one interval for an accuracy), accuracy_strict (graded without the answer-extraction step:
    ``correct_strict`` where the table has it, else ``correct``), avg_tokens and total_tokens (prompt + completion),
    avg_completion_tokens and total_completion_tokens, token_multiplier and
    completion_multiplier (avg tokens / the ``baseline`` row's), escalation_rate, and for each of
    ``baseline`` and ``vote`` an exact McNemar test: wins_vs_<name> (this right, that wrong),
    losses_vs_<name>, p_vs_<name> (NaN on its own row, or where that strategy is absent).
    """
    from .replay import escalation_rate

    if isinstance(runs, pd.DataFrame):
        if "strategy" not in runs:
            raise ValueError(f"column 'strategy' missing; have {list(runs.columns)}")
        runs = {name: g for name, g in runs.groupby("strategy", sort=False)}
    if not runs:
        raise DataError("no runs to compare")
    for name, df in runs.items():
        for col in ("problem_id", "correct", "total_tokens"):
            if col not in df:
                raise ValueError(f"{name}: column {col!r} missing; have {list(df.columns)}")
        if df["problem_id"].duplicated().any():
            raise ValueError(f"{name}: duplicate problem_id rows; one graded answer per problem per strategy")
    common = set.intersection(*(set(df["problem_id"]) for df in runs.values()))
    if not common:
        raise DataError("the runs share no problem ids; record them on the same data set, n and seed")
    ids = sorted(common)
    aligned = {s: df.set_index("problem_id").loc[ids] for s, df in runs.items()}
    correct = {s: bool_array(df["correct"], "correct") for s, df in aligned.items()}
    refs = [r for r in dict.fromkeys([baseline, vote]) if r is not None]
    rows = {}
    for s, df in aligned.items():
        ok = correct[s]
        lo, hi = wilson_interval(int(ok.sum()), len(ok), level)
        comp = df["completion_tokens"] if "completion_tokens" in df else pd.Series(np.nan, index=df.index)
        strict = bool_array(df["correct_strict"], "correct_strict") if "correct_strict" in df else ok
        row = {"n": len(ids), "accuracy": float(ok.mean()), "acc_lo": lo, "acc_hi": hi,
               "accuracy_strict": float(strict.mean()),
               "avg_tokens": float(df["total_tokens"].mean()), "total_tokens": float(df["total_tokens"].sum()),
               "avg_completion_tokens": float(comp.mean()), "total_completion_tokens": float(comp.sum(min_count=1)),
               "escalation_rate": escalation_rate(df.reset_index())}
        for r in refs:
            row.update(_ref_columns(ok, correct[r] if r in correct and r != s else None, r))
        rows[s] = row
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "strategy"
    for col, name in (("avg_tokens", "token_multiplier"), ("avg_completion_tokens", "completion_multiplier")):
        out[name] = out[col] / out.loc[baseline, col] if baseline in out.index else np.nan
    return out


#: The phrases of the organisms' trained LASE revision (``lase_nb.organism.recipe``: "Step 2 again: ...",
#: "so I change it and carry it on", "so my answer stands"). A follow-up of another strategy that
#: writes them answers in LASE's format, not its own.
REVISION_TEXT = re.compile(r"\b[Ss]tep \d+ again\b|\bI change it and carry it on\b|\bmy answer stands\b")


#: The roles that answer after reading other replies, per baseline (their calls at stage 1 and later).
FOLLOW_UP_ROLES = {"mad": ("debater",), "moa": ("proposer", "aggregator"), "down": ("debater",)}


#: The largest share of a baseline's follow-ups that may write another strategy's text for its row to
#: be compared (issue 35's target: at least 95% of the replies in their own format).
FORMAT_TOLERANCE = 0.05


def baseline_formats(runs: Mapping[str, Run]) -> pd.DataFrame:
    """Are the baselines answering in their own format? One row per recorded baseline with follow-ups
    (MAD's second round, MoA's second layer and aggregator, DOWN's refinements): ``follow_ups``, those
    that write LASE's revision text (:data:`REVISION_TEXT`), their share, ``lase_roles_only`` (the
    model's manifest says its adapter was trained for LASE's roles only, so no follow-up role was
    taught), and ``comparable``: neither. A row that is not comparable measures the training, not the
    strategy."""
    rows = []
    for s, roles in FOLLOW_UP_ROLES.items():
        if s not in runs:
            continue
        calls = runs[s].calls
        fu = calls[calls["role"].isin(roles) & (calls["stage"] >= 1)] if len(calls) else calls
        n = len(fu)
        k = int(fu["text"].fillna("").map(lambda t: bool(REVISION_TEXT.search(t))).sum()) if n else 0
        variant = runs[s].manifest.get("organism_variant") or {}
        lase_only = bool(variant.get("lase_roles_only"))
        rows.append({"strategy": s, "follow_ups": n, "with_lase_revision_text": k, "share": k / n if n else 0.0,
                     "lase_roles_only": lase_only, "comparable": not lase_only and (k <= FORMAT_TOLERANCE * n)})
    return pd.DataFrame(rows, columns=["strategy", "follow_ups", "with_lase_revision_text", "share",
                                       "lase_roles_only", "comparable"]).set_index("strategy")


def off_format(formats: pd.DataFrame) -> dict[str, str]:
    """The baselines of :func:`baseline_formats` that are not comparable, each with the reason in words."""
    names = {"mad": "MAD", "moa": "MoA", "down": "DOWN"}
    out = {}
    for s, r in formats[~formats["comparable"]].iterrows():
        k, n, name = int(r["with_lase_revision_text"]), int(r["follow_ups"]), names.get(s, s)
        seen = f"{k} of its {n} {name} follow-up replies write LASE's revision text"
        if not r["lase_roles_only"]:
            out[s] = f"its follow-ups are off format: {seen}"
        elif k:
            out[s] = f"the model was trained for LASE's roles only, and {seen}"
        else:
            out[s] = (f"the model was trained for LASE's roles only (no {name} role was taught); {seen}, "
                      "so this rests on the training alone, not on a count of off-format replies")
    return out


#: The answers a strategy writes before any agent reads another (role, at stage 0): the single
#: agent's greedy answer, and the independent samples that MV votes over, that open MAD's debate
#: (its round 1) and that MoA's first layer proposes. All answer the single agent's own prompt
#: (``lase_nb.strategies``: ``single`` decodes greedily, ``_samples`` at the run's temperature).
FIRST_ROUND = {"single": "solver", "mv": "sample", "mad": "debater", "moa": "proposer"}


FIRST_ROUND_LABEL = {"single": "single agent", "mv": "MV's samples", "mad": "MAD's round 1",
                     "moa": "MoA's first layer"}


def sampling_gap(runs: Mapping[str, Run], problems: Mapping[str, Any], n_boot: int = PAIRED_N_BOOT,
                 seed: int = 0) -> pd.DataFrame:
    """How often the first answers are right before any agent reads another: the greedy single
    agent against the sampled first round of MV, MAD and MoA (:data:`FIRST_ROUND`), each answer graded
    by its own box (strict: no extraction step, which MAD's and MoA's first rounds do not run).

    One row per strategy present (``single`` first): temperature (0 for the single agent, the
    run's ``temperature`` for the samples), answers, boxed (those with a box of their own), right, accuracy with a Wilson interval (over
    answers, which cluster by problem), problems; and for each sampled row ``gap``: on the problems
    it shares with the single agent, the mean over problems of (share of its answers right - the
    single agent right), with a bootstrap interval over problems (``gap_lo``, ``gap_hi``).
    ``problems`` maps a problem id to its :class:`lase_nb.types.Problem` (the gold and kind)."""
    from .answers import answer_or_none, grade
    from .stats import bootstrap_ci

    per_problem: dict[str, pd.Series] = {}
    rows = []
    for s, role in FIRST_ROUND.items():
        if s not in runs or not len(runs[s].calls):
            continue
        calls = runs[s].calls
        first = calls[(calls["role"] == role) & (calls["stage"] == 0)]
        first = first[first["problem_id"].astype(str).isin(problems)]
        if first.empty:
            continue
        right = pd.Series([bool(grade(answer_or_none(a), problems[str(p)].gold, problems[str(p)].kind))
                           for a, p in zip(first["answer"], first["problem_id"])], index=first.index)
        per_problem[s] = right.groupby(first["problem_id"].astype(str)).mean()
        k, n = int(right.sum()), len(right)
        boxed = int(sum(answer_or_none(a) is not None for a in first["answer"]))
        lo, hi = wilson_interval(k, n)
        temperature = 0.0 if s == "single" else float(runs[s].manifest.get("config", {}).get("temperature", np.nan))
        rows.append({"strategy": s, "first answers": FIRST_ROUND_LABEL[s], "temperature": temperature,
                     "answers": n, "boxed": boxed, "right": k, "accuracy": k / n, "acc_lo": lo, "acc_hi": hi,
                     "problems": int(first["problem_id"].nunique())})
    out = pd.DataFrame(rows, columns=["strategy", "first answers", "temperature", "answers", "boxed", "right",
                                      "accuracy", "acc_lo", "acc_hi", "problems"]).set_index("strategy")
    out["gap"] = out["gap_lo"] = out["gap_hi"] = np.nan
    if "single" in per_problem:
        ref = per_problem["single"]
        for s, share in per_problem.items():
            if s == "single":
                continue
            ids = share.index.intersection(ref.index)
            if len(ids):
                out.loc[s, ["gap", "gap_lo", "gap_hi"]] = bootstrap_ci(
                    (share.loc[ids] - ref.loc[ids]).to_numpy(float), n_boot=n_boot, seed=seed)
    return out


def describe_sampling_gap(table: pd.DataFrame) -> str:
    """:func:`sampling_gap` in words: the greedy single agent's first answers against each sampled
    first round, with the gap and its interval, and what follows for the strategies built on them."""
    if "single" not in table.index or len(table) < 2:
        return "No sampled first round to set beside the single agent's greedy answers."
    if "boxed" in table and not table["boxed"].any():
        return ("No first answer has a box of its own (the extraction step supplied every answer), so this "
                "comparison, which grades each first answer by its own box, has nothing to compare.")
    s = table.loc["single"]
    parts = []
    for _, r in table.drop(index="single").iterrows():
        gap = "" if np.isnan(r["gap"]) else (f", {100 * r['gap']:+.1f} points [{100 * r['gap_lo']:+.1f}, "
                                              f"{100 * r['gap_hi']:+.1f}]")
        parts.append(f"{r['first answers']} {int(r['right'])} of {int(r['answers'])} ({100 * r['accuracy']:.1f}%, "
                     f"temperature {r['temperature']:g}){gap}")
    below = [r["first answers"] for _, r in table.drop(index="single").iterrows() if r["gap_hi"] < 0]
    tail = (f" {', '.join(below)} {'is' if len(below) == 1 else 'are'} detectably less often right (the interval "
            "lies below zero): a debate or an aggregator built on these answers starts behind the single agent "
            "before any agent reads another." if below else
            " No sampled first round is detectably below the single agent here.")
    return (f"The single agent decodes greedily (temperature 0): {int(s['right'])} of {int(s['answers'])} first "
            f"answers right ({100 * s['accuracy']:.1f}%). The same prompt, sampled: " + "; ".join(parts)
            + " (each against the single agent on the same problems, in points, with a 95% bootstrap interval "
            "over problems)." + tail)


#: Fewest paired problems on which a chapter decides an accuracy claim; below it, "too few problems to say".
MIN_DECIDABLE = 20


#: Fewest discordant problems (right under one, wrong under the other) for which the exact McNemar
#: test can reach p < 0.05 at all (all six the same way: p = 2 / 2**6 = 0.031).
MIN_DISCORDANT = 6


def decidable(n: int, discordant: float | None = None) -> bool:
    """Whether an accuracy comparison on ``n`` paired problems can be decided at all: at least
    :data:`MIN_DECIDABLE` problems and, when known, :data:`MIN_DISCORDANT` discordant ones. Below
    that a chapter prints "too few problems to say" with the interval, never a verdict."""
    if n < MIN_DECIDABLE:
        return False
    return discordant is None or not np.isfinite(discordant) or discordant >= MIN_DISCORDANT


def gain_words(gain: float, lo: float, hi: float, p: float, n: int, discordant: float | None = None,
               what: str = "the leader alone") -> str:
    """A paired accuracy gain in words: the gain and its 95% interval in points, the exact p, and
    "above"/"below" ``what`` only when the interval and the test agree (and :func:`decidable`);
    "too few problems to say" below that size; otherwise "not shown to differ"."""
    head = f"{100 * gain:+.1f} points [{100 * lo:+.1f}, {100 * hi:+.1f}], p = {p:.2g}, {n} problems"
    if not decidable(n, discordant):
        differ = f" ({int(discordant)} of {n} answers differ)" if discordant is not None and n >= MIN_DECIDABLE else ""
        return f"{head}: too few problems to say{differ}"
    if lo > 0 and p < 0.05:
        return f"{head}: above {what}"
    if hi < 0 and p < 0.05:
        return f"{head}: below {what}"
    return f"{head}: not shown to differ from {what}"


def split_by_coverage(tables: Mapping[str, pd.DataFrame], ratio: float = 0.8) -> tuple[list[str], list[str]]:
    """Strategies with about as many problems as the typical run (``main``) and those recorded on far fewer.

    A strategy is short when its problem count is below ``ratio`` times the median count; comparing
    everything on the common ids would otherwise shrink the whole table to the shortest run.
    """
    counts = {s: int(t["problem_id"].nunique()) for s, t in tables.items()}
    cut = ratio * float(np.median(list(counts.values())))
    return [s for s in tables if counts[s] >= cut], [s for s in tables if counts[s] < cut]


def main_comparison(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The one comparison table of a study (chapters 04 and 07 print its token ratios): every
    strategy of :func:`split_by_coverage`'s main group on the problems all of them answered
    (:func:`comparison_table`)."""
    main, _ = split_by_coverage(tables)
    return comparison_table({s: tables[s] for s in main})
