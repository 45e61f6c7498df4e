"""Analysis of recorded runs: summaries, counterfactual replay of LASE thresholds, sweeps, fronts.

The one place for the replay concepts every chapter uses: :func:`stop_stages` (the gate),
:func:`outcomes_at` / :func:`replay` (the problems table at a stop), :func:`operating_point`
(one threshold pair) and :func:`sweep` / :func:`grid_metrics` (a grid of pairs); the oracle
(:func:`oracle_stops`, :func:`oracle_frontier`), the fixed policies (:func:`fixed_policies`) and the
Pareto front (:func:`pareto_front`, :func:`front_of`) that chapter 05 draws.

Replay rests on one fact: early stopping only truncates the chain, so a
full-chain recording tells what LASE would output and spend for any (tau_lp, tau_h) with no
further model call.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from .confidence import uncertain_mask
from .errors import DataError
from .stats import wilson_interval


def summarize(problems: pd.DataFrame) -> pd.DataFrame:
    """Per strategy: problems, accuracy (with the extraction step, and strict), unparsed share,
    average and total tokens (both kinds), calls, and the share of calls that hit their token cap.

    ``avg_tokens`` counts prompt + completion, as in every table of the package.
    """
    g = problems.groupby("strategy", sort=False)
    out = pd.DataFrame({
        "problems": g.size(),
        "accuracy": g["correct"].mean(),
        "accuracy_strict": (g["correct_strict"].mean() if "correct_strict" in problems
                            else g["correct"].mean()),
        "unparsed": 1 - g["parsed"].mean(),
        "avg_completion_tokens": g["completion_tokens"].mean(),
        "avg_tokens": g["total_tokens"].mean(),
        "total_tokens": g["total_tokens"].sum(),
        "avg_calls": g["n_calls"].mean(),
    })
    if "cap_hits" in problems:
        out["cap_hit_rate"] = g["cap_hits"].sum() / g["n_calls"].sum()
    if "stop_stage" in problems and problems["stop_stage"].notna().any():
        out["escalation_rate"] = g["stop_stage"].apply(lambda s: (s > 0).mean() if s.notna().all() else np.nan)
    return out


def escalation_rate(problems: pd.DataFrame) -> float:
    """Share of problems (or of LASE+MV chains) that went past the first answer; NaN if not gated."""
    if "stop_stage" in problems and problems["stop_stage"].notna().all() and len(problems):
        return float((problems["stop_stage"] > 0).mean())
    if "x_debated" in problems and problems["x_debated"].notna().all():
        return float(problems["x_debated"].astype(bool).mean())
    if "x_escalated" in problems and "x_chain_answers" in problems:
        chains = problems["x_chain_answers"].map(len).sum()
        return float(problems["x_escalated"].sum() / chains) if chains else np.nan
    return np.nan


@dataclass
class Chains:
    """Full LASE chains as arrays: problems x stages (stage 0 = the leader alone)."""

    problem_ids: np.ndarray
    p_min: np.ndarray  # exp(LP_min); NaN where no answer was extracted
    h_max: np.ndarray  # nats; NaN where no answer
    correct: np.ndarray  # bool
    answers: np.ndarray  # object
    prompt_tokens: np.ndarray  # cumulative up to and including each stage
    completion_tokens: np.ndarray
    correct_strict: np.ndarray | None = None  # bool, graded without the extraction step (default: correct)
    extracted: np.ndarray | None = None  # bool, the answer came from the extraction step (default: none did)

    def __post_init__(self) -> None:
        if self.correct_strict is None:
            self.correct_strict = np.array(self.correct, dtype=bool, copy=True)
        if self.extracted is None:
            self.extracted = np.zeros(np.shape(self.correct), dtype=bool)

    @property
    def total_tokens(self) -> np.ndarray:
        return self.prompt_tokens + self.completion_tokens

    @property
    def n_stages(self) -> int:
        return self.p_min.shape[1]

    def subset(self, idx: np.ndarray) -> "Chains":
        return Chains(*(getattr(self, f)[idx] for f in self.__dataclass_fields__))


def chains_from_stages(stages: pd.DataFrame) -> Chains:
    """Build :class:`Chains` from a stages table; every problem must have every stage."""
    if stages.empty:
        raise DataError("no LASE stages in this run; record one with `lase-nb run --strategy lase --full-chain`")
    counts = stages.groupby("problem_id")["stage"].nunique()
    s = int(counts.max())
    if (counts != s).any():
        short = counts[counts != s].index[:3].tolist()
        raise DataError(f"problems {short} do not have all {s} stages: the run was not --full-chain; "
                        f"rerun with --full-chain to enable replay")
    st = stages.sort_values(["problem_id", "stage"], kind="stable")
    ids = st["problem_id"].to_numpy()[::s]

    def grid(col, dtype=float):
        return st[col].to_numpy(dtype=dtype).reshape(-1, s)

    def flags(col):  # columns of newer recordings; None = the defaults of Chains
        return st[col].fillna(False).to_numpy(dtype=bool).reshape(-1, s) if col in st else None

    return Chains(ids, grid("p_min"), grid("h_max"), grid("correct", bool),
                  st["answer"].to_numpy(dtype=object).reshape(-1, s),
                  grid("prompt_tokens"), grid("completion_tokens"), flags("correct_strict"), flags("extracted"))


def load_chains(run: str | Path) -> Chains:
    """Chains from a run folder written by ``lase-nb run --strategy lase --full-chain``."""
    from .traces import load_run
    return chains_from_stages(load_run(run).stages)


def stop_stages(chains: Chains, tau_lp: float | np.ndarray, tau_h: float | np.ndarray) -> np.ndarray:
    """Stage at which LASE stops: the first stage whose answer is certain, else the last.

    ``tau_lp`` and ``tau_h`` broadcast against each other; the result has their broadcast
    shape followed by the problems axis.
    """
    tl = np.asarray(tau_lp, dtype=float)[..., None, None]
    th = np.asarray(tau_h, dtype=float)[..., None, None]
    certain = ~uncertain_mask(chains.p_min, chains.h_max, tl, th)
    certain[..., -1] = True  # the last stage always stops
    return certain.argmax(axis=-1)


def outcomes_at(chains: Chains, stop: np.ndarray | int) -> pd.DataFrame:
    """The problems table of chains stopped at ``stop``: one stage per problem, or one for all.

    Columns: problem_id, stop_stage, answer, correct, correct_strict (no extraction step),
    prompt_tokens, completion_tokens, total_tokens (cumulative up to the stop). ``stop = chains.n_stages - 1`` is always-interact.
    """
    idx = np.arange(len(chains.problem_ids))
    s = np.broadcast_to(np.asarray(stop, dtype=int), idx.shape)
    return pd.DataFrame({
        "problem_id": chains.problem_ids, "stop_stage": s, "answer": chains.answers[idx, s],
        "correct": chains.correct[idx, s], "correct_strict": chains.correct_strict[idx, s],
        "prompt_tokens": chains.prompt_tokens[idx, s],
        "completion_tokens": chains.completion_tokens[idx, s], "total_tokens": chains.total_tokens[idx, s],
    })


def replay(chains: Chains, tau_lp: float, tau_h: float) -> pd.DataFrame:
    """What LASE would have output and spent per problem at these thresholds (no model calls)."""
    return outcomes_at(chains, stop_stages(chains, tau_lp, tau_h))


def operating_point(chains: Chains, tau_lp: float, tau_h: float) -> pd.Series:
    """One row of :func:`sweep`, by replay, with stop-stage counts: what the sliders show.

    Index: tau_lp, tau_h, n, accuracy, n_correct, avg_tokens (prompt + completion),
    avg_completion_tokens, escalation_rate, then ``stop_0 .. stop_{S-1}`` (problems stopping at
    each stage; stage 0 = the leader alone).
    """
    r = replay(chains, tau_lp, tau_h)
    stop = r["stop_stage"].to_numpy()
    counts = np.bincount(stop, minlength=chains.n_stages)
    return pd.Series({
        "tau_lp": float(tau_lp), "tau_h": float(tau_h), "n": len(r),
        "accuracy": float(r["correct"].mean()), "n_correct": int(r["correct"].sum()),
        "avg_tokens": float(r["total_tokens"].mean()),
        "avg_completion_tokens": float(r["completion_tokens"].mean()),
        "escalation_rate": float((stop > 0).mean()),
        **{f"stop_{s}": int(c) for s, c in enumerate(counts)},
    }, dtype=object)


def grid_metrics(chains: Chains, tau_lp: Sequence[float], tau_h: Sequence[float],
                 chunk_elems: int = 1 << 22) -> dict[str, np.ndarray]:
    """Accuracy, mean tokens and escalation rate on a full (tau_lp x tau_h) grid, vectorised.

    The same numbers as applying :func:`replay` at every pair (a test checks it), computed
    without a stop index, in bounded memory (``benchmarks/replay_sweep.py``):

    - *telescoping*: the value at the stopping stage is the stage-0 value plus the change made by
      each later stage that is reached, and stage ``s`` is reached iff ``U`` held at every earlier
      stage (a running AND). So no stop index and no gather are needed, and the last stage's
      ``U`` is never evaluated. The sums over problems become one matrix-vector product.
    - *chunking*: the (tau_lp x tau_h x problems x stages) mask is built a few tau_lp rows at a
      time, at most ``chunk_elems`` booleans, instead of all at once.

    Correct counts and token counts are integers, so the float sums are exact and equal points
    tie exactly (which :func:`lase_nb.replay.choose_thresholds` relies on).
    """
    tl = np.asarray(tau_lp, dtype=float).ravel()
    th = np.asarray(tau_h, dtype=float).ravel()
    n, s = chains.p_min.shape
    if n == 0:
        raise DataError("no problems in these chains")
    correct = chains.correct.astype(float)
    tokens = chains.total_tokens.astype(float)
    base = np.array([correct[:, 0].sum(), tokens[:, 0].sum(), 0.0])
    totals = np.empty((len(tl), len(th), 3))
    if s == 1:
        uncertain_mask(chains.p_min, chains.h_max, tl[:, None, None], th[None, :, None])  # validates
        totals[:] = base
    else:
        # weights per (problem, reached stage j+1): change in correct, change in tokens, escalated?
        esc = np.zeros((n, s - 1))
        esc[:, 0] = 1.0
        w = np.stack([np.diff(correct, axis=1).ravel(), np.diff(tokens, axis=1).ravel(), esc.ravel()], axis=1)
        # float32 sums are exact while every partial sum is an integer below 2**24
        exact32 = bool(np.all(w == np.round(w)) and np.abs(w).sum(axis=0).max() < 2 ** 24)
        wt = w.astype(np.float32 if exact32 else np.float64)
        p, h = chains.p_min[:, :-1], chains.h_max[:, :-1]
        rows = max(1, chunk_elems // max(1, len(th) * n * (s - 1)))
        for a0 in range(0, len(tl), rows):
            t = tl[a0:a0 + rows]
            reached = uncertain_mask(p, h, t[:, None, None, None], th[None, :, None, None])
            for j in range(1, s - 1):  # running AND over stages (faster than ufunc.accumulate here)
                reached[..., j] &= reached[..., j - 1]
            flat = reached.reshape(len(t) * len(th), n * (s - 1)).view(np.uint8).astype(wt.dtype)
            totals[a0:a0 + len(t)] = (flat @ wt).reshape(len(t), len(th), 3) + base
    return {"accuracy": totals[..., 0] / n, "avg_tokens": totals[..., 1] / n,
            "escalation_rate": totals[..., 2] / n}


def sweep(chains: Chains, tau_lp: Sequence[float], tau_h: Sequence[float]) -> pd.DataFrame:
    """The paper's Table-5 layout: one row per (tau_lp, tau_h) with accuracy, tokens, escalation."""
    m = grid_metrics(chains, tau_lp, tau_h)
    a, b = np.meshgrid(np.asarray(tau_lp, float), np.asarray(tau_h, float), indexing="ij")
    return pd.DataFrame({"tau_lp": a.ravel(), "tau_h": b.ravel(),
                         "accuracy": m["accuracy"].ravel(), "avg_tokens": m["avg_tokens"].ravel(),
                         "escalation_rate": m["escalation_rate"].ravel()})


def cap_hits(calls: pd.DataFrame) -> pd.DataFrame:
    """Per strategy and role: calls, how many stopped at their token cap, and the rate."""
    hit = calls["hit_cap"].fillna(False).astype(bool) if "hit_cap" in calls else calls["finish_reason"].eq("length")
    g = calls.assign(hit_cap=hit).groupby(["strategy", "role"], sort=False)["hit_cap"]
    return pd.DataFrame({"calls": g.size(), "cap_hits": g.sum(), "rate": g.mean()}).reset_index()


def oracle_stops(chains: Chains) -> np.ndarray:
    """THE oracle: stop at the first stage whose answer is right (stage 0 if none is).

    It knows which answers are right and escalates a wrongly answered problem exactly as far as
    its first right stage (tokens are cumulative, so that is the cheapest right stop): no
    stopping rule reaches a higher accuracy, and none reaches it for fewer tokens.
    """
    c = chains.correct
    return np.where(c.any(axis=1), c.argmax(axis=1), 0)


def oracle_frontier(chains: Chains) -> pd.DataFrame:
    """Best accuracy any stopping rule could reach at each cost, knowing which answers are right
    (chapter 05, section 5.2, draws it under the grid of threshold pairs).

    Each problem starts at the leader's answer. An oracle lets a wrongly answered problem run up
    to its FIRST right stage (:func:`oracle_stops`: the cheapest one, tokens being cumulative), if it
    has one. Each such fix is worth one right answer, so taking them cheapest first is optimal: row
    ``k`` is the best any gate can do with ``k`` escalations. No threshold pair can lie above this
    staircase. Columns: escalated, accuracy, avg_tokens, escalation_rate.
    """
    n = len(chains.problem_ids)
    c, tok = chains.correct, chains.total_tokens
    first = oracle_stops(chains)
    fixable = ~c[:, 0] & (first > 0)
    extra = np.sort((tok[np.arange(n), first] - tok[:, 0])[fixable])
    k = np.arange(len(extra) + 1)
    return pd.DataFrame({"escalated": k, "accuracy": (c[:, 0].sum() + k) / n,
                         "avg_tokens": (tok[:, 0].sum() + np.concatenate([[0.0], np.cumsum(extra)])) / n,
                         "escalation_rate": k / n})


def with_intervals(points: pd.DataFrame) -> pd.DataFrame:
    """``points`` (columns accuracy and n) with a 95% Wilson interval on each accuracy: acc_lo, acc_hi."""
    ci = [wilson_interval(round(a * n), n) for a, n in zip(points["accuracy"], points["n"])]
    return points.assign(acc_lo=[c[0] for c in ci], acc_hi=[c[1] for c in ci])


def fixed_policies(chains: Chains) -> pd.DataFrame:
    """Leader-only (pi_solo), always-interact (pi_full) and the oracle (:func:`oracle_stops`),
    from the same recording: accuracy with the extraction step and strict (without it), avg_tokens,
    escalation_rate, n and a 95% interval on the accuracy (:func:`with_intervals`); chapter 05
    draws them beside the frontier (section 5.2)."""
    last = chains.n_stages - 1
    rows = np.arange(len(chains.problem_ids))
    stop = oracle_stops(chains)
    tok = chains.total_tokens
    strict = chains.correct_strict
    return with_intervals(pd.DataFrame([
        {"policy": "solo", "accuracy": chains.correct[:, 0].mean(), "accuracy_strict": strict[:, 0].mean(),
         "avg_tokens": tok[:, 0].mean(), "escalation_rate": 0.0},
        {"policy": "always-interact", "accuracy": chains.correct[:, last].mean(),
         "accuracy_strict": strict[:, last].mean(), "avg_tokens": tok[:, last].mean(), "escalation_rate": 1.0},
        {"policy": "oracle", "accuracy": chains.correct[rows, stop].mean(),
         "accuracy_strict": strict[rows, stop].mean(), "avg_tokens": tok[rows, stop].mean(),
         "escalation_rate": (stop > 0).mean()},
    ]).assign(n=len(chains.problem_ids)))


def pareto_front(cost: np.ndarray, accuracy: np.ndarray) -> np.ndarray:
    """Indices of the points no other point beats (lower-or-equal cost and higher accuracy), by cost."""
    cost, accuracy = np.asarray(cost, float).ravel(), np.asarray(accuracy, float).ravel()
    order = np.lexsort((-accuracy, cost))
    front, best = [], -np.inf
    for i in order:
        if accuracy[i] > best:
            front.append(i)
            best = accuracy[i]
    return np.asarray(front, dtype=int)


def front_of(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a sweep table on its Pareto front (:func:`pareto_front` of avg_tokens and accuracy)."""
    idx = pareto_front(table["avg_tokens"].to_numpy(), table["accuracy"].to_numpy())
    return table.iloc[idx].reset_index(drop=True)


#: How DOWN's threshold is chosen (DOWN's own threshold-selection section is not available to us).
DOWN_THRESHOLD_RULE = ("theta with the best accuracy on a calibration split disjoint from the evaluated "
                       "problems (DOWN run with every problem debated); ties go to fewer debates")


def down_threshold_table(scores: Sequence[float | None], first_correct: Sequence[bool],
                         debate_correct: Sequence[bool]) -> pd.DataFrame:
    """For each candidate theta, DOWN's accuracy and debate rate on a calibration split.

    Needs one always-debate DOWN run: per problem its score, whether its first answer was right
    and whether its debated answer was right. DOWN accepts the first answer when score > theta,
    so every theta between two observed scores gives the same policy: the candidates are 0, the
    observed scores and 1. An unknown score (no logprobs) always debates.
    """
    s = np.array([-np.inf if v is None or np.isnan(v) else v for v in scores], dtype=float)
    first, debate = np.asarray(first_correct, bool), np.asarray(debate_correct, bool)
    if not (len(s) == len(first) == len(debate)) or len(s) == 0:
        raise ValueError("scores, first_correct and debate_correct must be non-empty and of one length")
    thetas = np.unique(np.concatenate([[0.0, 1.0], s[np.isfinite(s)]]))
    accept = s[None, :] > thetas[:, None]
    acc = np.where(accept, first[None, :], debate[None, :]).mean(axis=1)
    return pd.DataFrame({"theta": thetas, "accuracy": acc, "debate_rate": 1 - accept.mean(axis=1)})


def choose_down_threshold(scores: Sequence[float | None], first_correct: Sequence[bool],
                          debate_correct: Sequence[bool]) -> float:
    """DOWN's theta by :data:`DOWN_THRESHOLD_RULE`: the best calibration accuracy, then the fewest debates."""
    t = down_threshold_table(scores, first_correct, debate_correct)
    best = t[np.isclose(t["accuracy"], t["accuracy"].max())]
    return float(best.sort_values(["debate_rate", "theta"]).iloc[0]["theta"])


# ---------------------------------------------------------------------------------------------
# choosing thresholds on replayed operating points


def choose_thresholds(points: pd.DataFrame, budget: float, cost: str = "avg_tokens",
                      acc: str = "accuracy") -> pd.Series:
    """The most accurate row of ``points`` costing at most ``budget`` (inclusive).

    The one budget-matched pick of the package: thresholds from a sweep (:func:`lase_nb.replay.sweep`),
    or any table of operating points. One tie-break everywhere: higher accuracy, then lower
    cost, then (in a sweep) the higher tau_lp, then the first row. A table with a ``tau_lp``
    column is a sweep and must also carry tau_h and escalation_rate. Raises ``ValueError``
    naming the cheapest row when none fits.
    """
    need = [cost, acc] + (["tau_lp", "tau_h", "escalation_rate"] if "tau_lp" in points else [])
    missing = [c for c in need if c not in points]
    if missing:
        raise ValueError(f"table lacks columns {missing}; expected {need}")
    if points.empty:
        raise ValueError("the table is empty")
    fit = points[points[cost] <= budget]
    if fit.empty:
        cheap = points.loc[points[cost].idxmin()]
        where = f" (tau_lp={cheap['tau_lp']:g}, tau_h={cheap['tau_h']:g})" if "tau_lp" in points else ""
        raise ValueError(f"no row costs <= {budget:g} {cost}; the cheapest costs {cheap[cost]:g}{where}")
    keys = [acc, cost] + (["tau_lp"] if "tau_lp" in points else [])
    return fit.sort_values(keys, ascending=[False, True, False][:len(keys)], kind="stable").iloc[0]


def gate_for_budget(chains, ratio: float, grid: int = 41) -> pd.Series:
    """Thresholds for a token budget: the most accurate (tau_lp, tau_h) on a grid whose replayed
    cost is at most ``ratio`` times the leader alone's (:func:`choose_thresholds`' tie-break).

    ``chains`` are full LASE chains (:class:`lase_nb.replay.Chains`) of a calibration split,
    never the problems the thresholds are then used on. The row adds ``leader_tokens`` (the
    leader alone's average) and ``budget_tokens``; tau_h runs over [0, max H_max] and infinity
    (the entropy gate off)."""
    if ratio < 1:
        raise ValueError(f"ratio must be at least 1 (the leader alone's cost), got {ratio}")
    alone = float(operating_point(chains, 0.0, np.inf)["avg_tokens"])
    h = chains.h_max[np.isfinite(chains.h_max)]
    tau_h = np.append(np.linspace(0.0, max(0.5, float(h.max())) if h.size else 2.0, grid), np.inf)
    row = choose_thresholds(sweep(chains, np.linspace(0.0, 1.0, grid), tau_h), ratio * alone)
    return pd.concat([row, pd.Series({"leader_tokens": alone, "budget_tokens": ratio * alone})])


def split_halves(ids: Sequence[str], seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks (a, b) splitting ``ids`` into two random halves, for select-on-one/check-on-other.

    The split is over the distinct ids (sorted, then permuted by ``seed``; half A gets the extra
    one if odd), so it does not depend on row order and repeated ids (one row per strategy)
    always land on the same side. The masks are disjoint and cover every row.
    """
    arr = np.asarray([str(i) for i in ids], dtype=object)
    uniq = np.array(sorted(set(arr.tolist())), dtype=object)
    perm = np.random.default_rng(seed).permutation(len(uniq))
    in_a = set(uniq[perm[: (len(uniq) + 1) // 2]].tolist())
    mask_a = np.fromiter((i in in_a for i in arr), dtype=bool, count=len(arr))
    return mask_a, ~mask_a
