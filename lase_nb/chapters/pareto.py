"""Chapter 05 (notebooks/05_pareto): the accuracy-vs-tokens frontier of LASE thresholds, by replay.

Everything here works on :class:`lase_nb.replay.Chains`, one full-chain recording, and
makes no model call; threshold grids come from :func:`lase_nb.replay.sweep`, and the oracle frontier,
the fixed policies and the Pareto front from :mod:`lase_nb.replay` (this module draws them).

Contents: the stage effects, baseline points from other runs, the paper's threshold sweep beside ours with a
data-driven reading of it, select-on-one-half / check-on-the-other, and the chapter's figures; several
models side by side: :func:`frontiers_by_model`, :func:`frontier_table`, :func:`plot_frontier_by_model`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .. import reference
from ..replay import Chains, fixed_policies, front_of, operating_point, oracle_frontier, sweep, with_intervals
from ..errors import DataError
from ..plots import CHOSEN_COLOR, FRONT_COLOR, MAX_WIDTH_IN, ORACLE_COLOR, Spot, place_label, scale_cmap, style
from ..replay import choose_thresholds, split_halves
from ..stats import clears_both, paired_test, pct
from ..traces import Run

__all__ = [
    "threshold_axes", "stage_effects",
    "paper_baselines", "baseline_points", "recorded_gate_check", "paper_sweep_beside",
    "tau_h_beside", "knob_reading", "SplitCheck", "select_and_check", "split_checks",
    "draw_frontier", "label_points", "plot_frontier", "contour_label_spots", "plot_escalation", "plot_sweep_vs_paper",
    "plot_split", "describe_frontier", "describe_sweep", "describe_split",
    "frontiers_by_model", "frontier_table", "plot_frontier_by_model", ]

# ---------------------------------------------------------------------------------------------
# The grid, fast
# ---------------------------------------------------------------------------------------------

def threshold_axes(chains: Chains, grid_size: int) -> tuple[np.ndarray, np.ndarray]:
    """``grid_size`` values of tau_lp in [0, 1] and of tau_h from 0 to just above the largest H_max.

    Beyond the largest recorded entropy the entropy gate can no longer fire, so a longer tau_h
    axis would only repeat its last column. The upper end is the largest H_max rounded up to a
    tenth of a nat (at least 0.5, so the paper's tau_h = 0.5 is on the axis).
    """
    if grid_size < 2:
        raise ValueError(f"grid_size must be at least 2, got {grid_size}")
    h = chains.h_max[np.isfinite(chains.h_max)]
    top = max(0.5, math.ceil(10 * float(h.max()) - 1e-9) / 10) if h.size else 2.0
    return np.linspace(0.0, 1.0, grid_size), np.linspace(0.0, top, grid_size)


def stage_effects(chains: Chains) -> pd.DataFrame:
    """What each stage of the full chain does, over all problems (every stage forced).

    One row per stage: accuracy of the leader's answer after it, share with no extractable
    answer, answers it fixed and broke relative to stage 0 and to the previous stage, and
    average cumulative tokens.
    """
    c = chains.correct
    none = np.isnan(chains.p_min)
    rows = []
    for s in range(chains.n_stages):
        prev = c[:, max(s - 1, 0)]
        rows.append({"stage": s, "accuracy": c[:, s].mean(), "no_answer": none[:, s].mean(),
                     "fixed_vs_leader": int((~c[:, 0] & c[:, s]).sum()),
                     "broken_vs_leader": int((c[:, 0] & ~c[:, s]).sum()),
                     "fixed_vs_previous": int((~prev & c[:, s]).sum()),
                     "broken_vs_previous": int((prev & ~c[:, s]).sum()),
                     "avg_tokens": chains.total_tokens[:, s].mean()})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# Points to compare with
# ---------------------------------------------------------------------------------------------

def paper_baselines() -> list[str]:
    """The strategies drawn as points beside the frontier: the paper's Table 1 baselines
    (:data:`lase_nb.reference.METHODS`) other than the single agent (here the leader alone,
    ``solo``) and LASE (the frontier itself)."""
    return [m for m in reference.METHODS if m not in ("single", "lase")]


def baseline_points(runs: Mapping[str, Run], problem_ids: Sequence[str]) -> pd.DataFrame:
    """Accuracy and average tokens of other strategies' runs, on the problems they share with ``problem_ids``.

    ``runs`` are finished runs by strategy (:func:`lase_nb.runs.load_runs`); a run sharing no
    problem gets no row. Columns: strategy, n (common problems), n_run (problems in the run),
    accuracy, accuracy_strict (no extraction step), avg_tokens (prompt + completion),
    avg_completion_tokens, acc_lo, acc_hi (Wilson).
    """
    keep = set(map(str, problem_ids))
    rows = []
    for name, run in runs.items():
        probs = run.problems
        common = probs[probs["problem_id"].astype(str).isin(keep)]
        if common.empty:
            continue
        strict = common["correct_strict"] if "correct_strict" in common else common["correct"]
        rows.append({"strategy": name, "n": len(common), "n_run": len(probs),
                     "accuracy": float(common["correct"].mean()), "accuracy_strict": float(strict.mean()),
                     "avg_tokens": float(common["total_tokens"].mean()),
                     "avg_completion_tokens": float(common["completion_tokens"].mean())})
    cols = ["strategy", "n", "n_run", "accuracy", "accuracy_strict", "avg_tokens", "avg_completion_tokens"]
    out = pd.DataFrame(rows, columns=cols)
    return with_intervals(out) if len(out) else out.assign(acc_lo=[], acc_hi=[])


def recorded_gate_check(chains: Chains, problems: pd.DataFrame, tau_lp: float, tau_h: float) -> dict[str, float]:
    """Does replay at the recording's own thresholds reproduce what the live gate did?

    ``problems`` is the full-chain run's problems table (its rows are what the gate output and
    spent at the recorded thresholds). Returns the share of problems whose stop stage, grade and
    tokens agree, and how many problems were compared.
    """
    from ..replay import replay

    r = replay(chains, tau_lp, tau_h).set_index("problem_id")
    live = problems.assign(problem_id=problems["problem_id"].astype(str)).set_index("problem_id")
    live = live.loc[[str(i) for i in r.index]]
    return {"n": len(r),
            "stop_stage": float((r["stop_stage"].to_numpy() == live["stop_stage"].to_numpy()).mean()),
            "correct": float((r["correct"].to_numpy() == live["correct"].to_numpy()).mean()),
            "total_tokens": float(np.isclose(r["total_tokens"].to_numpy(),
                                             live["total_tokens"].to_numpy(dtype=float)).mean())}


# ---------------------------------------------------------------------------------------------
# The paper's sweep beside ours
# ---------------------------------------------------------------------------------------------

def paper_sweep_beside(chains: Chains) -> pd.DataFrame:
    """Our replay at the paper's Table-5 threshold pairs, with the paper's numbers alongside (fractions)."""
    ref = reference.THRESHOLD_SWEEP
    ours = pd.concat([sweep(chains, [a], [b]) for a, b in zip(ref["tau_lp"], ref["tau_h"])],
                     ignore_index=True)
    out = reference.beside(ours, ref, on=["tau_lp", "tau_h"])
    out.attrs.update(note=ref.attrs.get("note", ""), model=ref.attrs.get("model"),
                     dataset=ref.attrs.get("dataset"))
    return out


def sweep_test(chains: Chains, seed: int = 0) -> dict:
    """The accuracy change from the paper's first Table-5 pair to its last, on these chains:
    :func:`lase_nb.stats.paired_test` of the last pair's grades against the first's (same problems)."""
    from ..replay import replay

    ref = reference.THRESHOLD_SWEEP
    first = replay(chains, float(ref["tau_lp"].iloc[0]), float(ref["tau_h"].iloc[0]))["correct"].to_numpy(bool)
    last = replay(chains, float(ref["tau_lp"].iloc[-1]), float(ref["tau_h"].iloc[-1]))["correct"].to_numpy(bool)
    return paired_test(last, first, seed=seed)


def tau_h_beside(chains: Chains, tau_lp: float) -> pd.DataFrame:
    """Our accuracy, tokens and escalation at the paper's tau_h values (tau_lp held at ``tau_lp``),
    beside the paper's accuracies (the paper does not restate their tau_lp)."""
    ref = reference.TAU_H_SWEEP
    ours = sweep(chains, [tau_lp], ref["tau_h"].to_numpy())
    ours = ours.rename(columns={c: f"{c} (this run)" for c in ("avg_tokens", "escalation_rate")})
    return reference.beside(ours, ref, on=["tau_h"])


@dataclass(frozen=True)
class KnobReading:
    """How much accuracy, tokens and escalation move across a threshold sweep, and what that means."""

    acc_change: float  # accuracy at the most-escalating row minus at the least (fraction)
    acc_range: float  # max - min accuracy over the rows
    problems_moved: int  # acc_range in problems
    token_ratio: float  # tokens at the most-escalating row / at the least
    esc_low: float
    esc_high: float
    verdict: str  # "budget knob", "accuracy falls", "accuracy rises", "inert"
    sentence: str


def knob_reading(acc: Sequence[float], tokens: Sequence[float], esc: Sequence[float], n: int,
                 who: str = "here", ordered: bool = False) -> KnobReading:
    """Read a threshold sweep the way the paper did: does accuracy move, or only the budget?

    The sweep runs from its least to its most escalating row, or, with ``ordered``, from its first
    row to its last (a sweep of one knob in its own order, as the paper's Table 5 runs tau_lp
    from 0.5 to 0.95: its escalation is not monotone at the low end). "Budget knob" means tokens change by at least 10%
    while accuracy stays within one problem in ``n`` (or 1 point, whichever is larger) of where
    it started; "inert" means tokens barely change at all; otherwise accuracy falls or rises
    with escalation. ``sentence`` states the numbers.
    """
    acc, tokens, esc = (np.asarray(x, float) for x in (acc, tokens, esc))
    lo, hi = (0, len(acc) - 1) if ordered else (int(np.argmin(esc)), int(np.argmax(esc)))
    if not ordered and esc[lo] == esc[hi]:
        lo, hi = int(np.argmin(tokens)), int(np.argmax(tokens))
    change, rng = float(acc[hi] - acc[lo]), float(acc.max() - acc.min())
    ratio = float(tokens[hi] / tokens[lo]) if tokens[lo] > 0 else float("nan")
    tol = max(1.0 / n, 0.01) + 1e-12
    moved = int(round(rng * n))
    if abs(ratio - 1) < 0.10 and abs(change) <= tol:
        verdict = "inert"
        what = "the thresholds hardly change anything"
    elif abs(change) <= tol:
        verdict = "budget knob"
        what = ("the thresholds move the budget, not the accuracy" if tol <= 0.02 + 1e-12 else
                f"accuracy moved by at most one problem, but one problem is {100 / n:.0f} points here: too few "
                "problems to tell a flat line from a slope")
    elif change < 0:
        verdict = "accuracy falls"
        what = "escalating more costs tokens AND accuracy"
    else:
        verdict = "accuracy rises"
        what = "escalating more buys accuracy: the thresholds are an accuracy knob as well"
    sentence = (f"{who}: escalation {esc[lo]:.0%} -> {esc[hi]:.0%}, tokens x{ratio:.2f}, accuracy "
                f"{acc[lo]:.1%} -> {acc[hi]:.1%} ({change * 100:+.1f} points; range {rng * 100:.1f} points"
                f" = {moved} of {n} problems): {what}.")
    return KnobReading(change, rng, moved, ratio, float(esc[lo]), float(esc[hi]), verdict, sentence)


# ---------------------------------------------------------------------------------------------
# Choosing thresholds on one half, checking on the other
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SplitCheck:
    """Thresholds chosen for a budget on half A, and what they do on the held-out half B."""

    seed: int
    budget: float
    n_a: int
    n_b: int
    tau_lp: float
    tau_h: float
    acc_a: float  # on the half they were chosen on (optimistic)
    tokens_a: float
    acc_b: float  # held out: the honest estimate
    tokens_b: float
    esc_b: float
    best_b_acc: float  # the best any grid pair reaches on B within the budget (hindsight)
    solo_b: float
    full_b: float

    def as_dict(self) -> dict[str, float]:
        return dict(self.__dict__)


def _half_sweeps(chains: Chains, tau_lp: np.ndarray, tau_h: np.ndarray, seed: int):
    a, b = split_halves(chains.problem_ids, seed)
    return a, b, sweep(chains.subset(a), tau_lp, tau_h), sweep(chains.subset(b), tau_lp, tau_h)


def select_and_check(chains: Chains, tau_lp: Sequence[float], tau_h: Sequence[float], budget: float,
                     seed: int = 0) -> SplitCheck:
    """Split the problems in two (:func:`lase_nb.replay.split_halves`), choose the best thresholds
    within ``budget`` avg tokens on half A (:func:`lase_nb.replay.choose_thresholds`), and replay
    them on half B."""
    tl, th = np.asarray(tau_lp, float), np.asarray(tau_h, float)
    a, b, ga, gb = _half_sweeps(chains, tl, th, seed)
    if a.sum() == 0 or b.sum() == 0:
        raise DataError("need at least two problems to split into halves")
    pick = choose_thresholds(ga, budget)
    held = gb.loc[pick.name]  # same grid, same row order: the same threshold pair on half B
    try:
        best_b = float(choose_thresholds(gb, budget)["accuracy"])
    except ValueError:
        best_b = float("nan")
    cb = chains.subset(b)
    return SplitCheck(seed, float(budget), int(a.sum()), int(b.sum()), float(pick["tau_lp"]),
                      float(pick["tau_h"]), float(pick["accuracy"]), float(pick["avg_tokens"]),
                      float(held["accuracy"]), float(held["avg_tokens"]), float(held["escalation_rate"]),
                      best_b, float(cb.correct[:, 0].mean()), float(cb.correct[:, -1].mean()))


def split_checks(chains: Chains, tau_lp: Sequence[float], tau_h: Sequence[float], budget: float,
                 seeds: Sequence[int]) -> pd.DataFrame:
    """:func:`select_and_check` over many random splits: one row per seed, plus the gaps.

    ``optimism`` = acc_a - acc_b (how much the selection half flatters the choice);
    ``regret`` = best_b_acc - acc_b (what hindsight on B would have added);
    ``over_budget`` = tokens_b / budget - 1 (negative: the choice stayed within budget on B).
    """
    rows = []
    for s in seeds:
        try:
            rows.append(select_and_check(chains, tau_lp, tau_h, budget, int(s)).as_dict())
        except ValueError:  # no pair fits the budget on this split's half A
            continue
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    return df.assign(optimism=df["acc_a"] - df["acc_b"], regret=df["best_b_acc"] - df["acc_b"],
                     over_budget=df["tokens_b"] / df["budget"] - 1)


# ---------------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------------

def _kilo(x: float, _pos=None) -> str:
    return f"{x / 1000:g}k" if x >= 1000 else f"{x:g}"


def _style_axes(ax, logx: bool) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, PercentFormatter

    if logx:
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(_kilo))
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        ax.xaxis.set_major_formatter(FuncFormatter(_kilo))
    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=None))
    ax.set_xlabel("tokens per problem\n(prompt + completion)")
    ax.set_ylabel("accuracy")


def _label_spots(ax, x: float, y: float, lo: float, hi: float) -> list[Spot]:
    """Places for a point's name, in order: above its interval, then below it, then beside the
    marker; running towards the middle of the x axis first, so the name stays inside."""
    x0, x1 = ax.get_xlim()
    mid = np.sqrt(x0 * x1) if ax.get_xscale() == "log" else (x0 + x1) / 2
    ha, other = ("left", "right") if x < mid else ("right", "left")
    dx = {"left": -4, "center": 0, "right": 4}
    spots: list[Spot] = []
    for anchor, dy, va in (((x, hi), 7, "bottom"), ((x, lo), -7, "top")):  # centred first: unmistakably this point's
        spots += [(anchor, (dx[h], dy), h, va) for h in ("center", ha, other)]
    return spots + [((x, y), (12, 0), "left", "center"), ((x, y), (-12, 0), "right", "center")]


def _frontier_points(policies: pd.DataFrame, baselines: pd.DataFrame | None = None) -> pd.DataFrame:
    """Solo, always-interact and any baselines, as rows with a ``strategy`` column."""
    pts = [policies[policies["policy"].isin(["solo", "always-interact"])].rename(columns={"policy": "strategy"})]
    if baselines is not None and len(baselines):
        pts.append(baselines)
    return pd.concat(pts, ignore_index=True)


def label_points(ax, points: pd.DataFrame, oracle: pd.DataFrame) -> None:
    """Name each point (with its problem count) off every error bar, marker and other name; when the
    oracle's best point is the leader alone (no later stage fixes a wrong answer), name the oracle's
    ring too. Call it once the axes' limits and the figure's layout are final."""
    box = dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.8)
    look = dict(fontsize="small", fontweight="bold", zorder=9, bbox=box)
    end, solo = oracle.iloc[-1], points[points["strategy"] == "solo"]
    if len(solo) and np.isclose(end["accuracy"], solo["accuracy"].iloc[0]) \
            and np.isclose(end["avg_tokens"], solo["avg_tokens"].iloc[0]):  # the largest name first, below the leader
        r = solo.iloc[0]
        spots = _label_spots(ax, r["avg_tokens"], r["accuracy"], r["acc_lo"], r["acc_hi"])
        place_label(ax, "oracle = leader alone\n(no later stage fixes\na wrong answer)",
                    spots[3:6] + spots[:3] + spots[6:], color=ORACLE_COLOR, **look)
    for _, r in points.iterrows():
        st = style(r["strategy"])
        place_label(ax, f"{st['short']} (n={r['n']})",
                    _label_spots(ax, r["avg_tokens"], r["accuracy"], r["acc_lo"], r["acc_hi"]), color=st["color"],
                    **look)


def _ylim(ax, *frames: pd.DataFrame) -> None:
    frames = tuple(f for f in frames if f is not None and len(f))
    lo = min(float(np.nanmin(f["acc_lo"] if "acc_lo" in f else f["accuracy"])) for f in frames)
    hi = max(float(np.nanmax(f["acc_hi"] if "acc_hi" in f else f["accuracy"])) for f in frames)
    pad = max(0.03, 0.06 * (hi - lo))
    ax.set_ylim(max(-0.02, lo - pad), min(1.08, hi + 2 * pad))
    from matplotlib.ticker import PercentFormatter

    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0 if hi - lo > 0.04 else 1))


def draw_frontier(ax, grid: pd.DataFrame, policies: pd.DataFrame, oracle: pd.DataFrame,
                  baselines: pd.DataFrame | None = None, logx: bool = True, colorbar: bool = True,
                  point_labels: bool = True):
    """One panel: every grid pair (coloured by escalation rate), its Pareto front, the oracle
    staircase, solo and always-interact (with 95% Wilson intervals) and any baseline points,
    each labelled with its name and problem count (:func:`label_points`; with ``point_labels=False``
    the caller labels them once its layout is final).

    Returns the grid's scatter artist (for a colour bar).
    """
    from matplotlib.ticker import PercentFormatter

    order = np.argsort(grid["escalation_rate"].to_numpy(), kind="stable")
    g = grid.iloc[order]
    cloud = ax.scatter(g["avg_tokens"], g["accuracy"], c=g["escalation_rate"], cmap=scale_cmap(), vmin=0, vmax=1,
                       s=20, alpha=0.85, linewidths=0, zorder=2, rasterized=True,
                       label="one (tau_lp, tau_h) pair; shade = escalation rate")
    front = front_of(grid)
    ax.step(front["avg_tokens"], front["accuracy"], where="post", color=FRONT_COLOR, lw=2.4, zorder=5,
            marker="o", ms=6, label="Pareto front of the threshold grid")
    if len(front) == 1:  # a one-point front has no line and hides under the leader's marker: ring it, over everything
        ax.plot(front["avg_tokens"], front["accuracy"], "o", ms=26, mfc="none", mec=FRONT_COLOR, mew=2.4, zorder=9)
    ax.step(oracle["avg_tokens"], oracle["accuracy"], where="post", color=ORACLE_COLOR, lw=2.2, ls="--",
            zorder=3)
    end = oracle.iloc[-1]  # a ring at the oracle's best point keeps it visible when the staircase is one step
    ax.plot([end["avg_tokens"]], [end["accuracy"]], ls="--", color=ORACLE_COLOR, lw=2.2, marker="o", ms=20,
            mfc="none", mew=2.2, zorder=7, label="oracle: stops at the first right stage (upper bound)")
    pts = _frontier_points(policies, baselines)
    xmin, xmax = pts["avg_tokens"].min(), pts["avg_tokens"].max()
    for _, r in pts.iterrows():
        st = style(r["strategy"])
        yerr = [[r["accuracy"] - r["acc_lo"]], [r["acc_hi"] - r["accuracy"]]]
        ax.errorbar([r["avg_tokens"]], [r["accuracy"]], yerr=yerr, fmt=st["marker"], color=st["color"], ms=12,
                    mec="white", mew=1.2, capsize=5, elinewidth=1.8, zorder=8, label="_nolegend_")
    lo = min(xmin, grid["avg_tokens"].min(), oracle["avg_tokens"].min())
    hi = max(xmax, grid["avg_tokens"].max())
    ax.set_xlim(lo / 1.15, hi * 1.15) if logx else ax.set_xlim(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo))
    _style_axes(ax, logx)
    _ylim(ax, grid, pts, oracle)
    if colorbar:
        cb = ax.figure.colorbar(cloud, ax=ax, pad=0.01, fraction=0.04)
        cb.set_label("escalation rate")
        cb.ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    if point_labels:
        label_points(ax, pts, oracle)
    return cloud


def _default_marker(ax, point: pd.Series) -> None:
    ax.plot([point["avg_tokens"]], [point["accuracy"]], "*", ms=24, color=CHOSEN_COLOR, mec="black", mew=1.3,
            zorder=8, label=f"LASE at the default thresholds (tau_lp={point['tau_lp']:g}, tau_h={point['tau_h']:g})")


def plot_frontier(grid: pd.DataFrame, policies: pd.DataFrame, oracle: pd.DataFrame, default: pd.Series,
                  common: dict | None = None, logx: bool = True, title: str | None = None):
    """The chapter's headline figure.

    Left: all recorded problems: the threshold grid, its front, the oracle staircase, the leader
    alone, always-interact and the default thresholds (a star). Right, when ``common`` is given
    (a dict with keys grid, policies, oracle, baselines and optionally default): the same on the
    problems the baseline runs also answered, with the baselines (MV, MAD...) as points.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import PercentFormatter

    two = common is not None and len(common.get("baselines", [])) > 0
    fig, axes = plt.subplots(1, 2 if two else 1, figsize=(MAX_WIDTH_IN, 6.6 if two else 7.2), squeeze=False,
                             gridspec_kw={"wspace": 0.1})
    ax = axes[0, 0]
    cloud = draw_frontier(ax, grid, policies, oracle, colorbar=False, logx=logx, point_labels=False)
    _default_marker(ax, default)
    n = int(policies["n"].iloc[0])
    ax.set_title(f"All {n} recorded problems")
    if two:
        ax2 = axes[0, 1]
        draw_frontier(ax2, common["grid"], common["policies"], common["oracle"], common["baselines"],
                      colorbar=False, logx=logx, point_labels=False)
        if common.get("default") is not None:
            _default_marker(ax2, common["default"])
        nc = int(common["policies"]["n"].iloc[0])
        ax2.set_title(f"The {nc} problems the baselines also ran")
        ax2.set_ylabel("")
    cb = fig.colorbar(cloud, ax=list(axes.ravel()), pad=0.012, fraction=0.03 if two else 0.05, aspect=30)
    cb.set_label("escalation rate of a threshold pair")
    cb.ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    label_points(ax, _frontier_points(policies), oracle)  # now that the layout is final
    if two:
        label_points(ax2, _frontier_points(common["policies"], common["baselines"]), common["oracle"])
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.45, 0.0), ncol=2, fontsize="small",
               markerscale=1.0, frameon=False)
    fig.suptitle(title or f"Accuracy vs tokens: {len(grid):,} threshold pairs, one recording",
                 fontweight="bold", fontsize="x-large")
    return fig


def contour_label_spots(allsegs: Sequence[Sequence[np.ndarray]], marked: Sequence[tuple[float, float]],
                        extent: Sequence[float], clear: float = 0.12, margin: float = 0.03,
                        legend: tuple[float, float] = (0.45, 0.8)) -> list[tuple[float, float]]:
    """Where to write each contour level's label (data coordinates, for ``clabel(manual=...)``): a
    point of the level's line at least ``clear`` (a fraction of the axes) from every ``marked``
    point (the default thresholds, the paper's pairs) and from the labels already placed, inside
    the axes by ``margin`` and out of the legend's upper-left corner (x below ``legend[0]``, y above
    ``legend[1]``); among those, the one nearest the middle of the line. Where no point is that clear,
    the point farthest from them. ``allsegs`` is ``ContourSet.allsegs``; ``extent`` (x0, x1, y0, y1)."""
    x0, x1, y0, y1 = extent
    taken = [((x - x0) / (x1 - x0), (y - y0) / (y1 - y0)) for x, y in marked]
    spots = []
    for segs in allsegs:
        segs = [np.asarray(sg) for sg in segs if len(sg)]
        if not segs:
            continue
        line = max(segs, key=len)
        fx, fy = (line[:, 0] - x0) / (x1 - x0), (line[:, 1] - y0) / (y1 - y0)
        inside = (fx > margin) & (fx < 1 - margin) & (fy > margin) & (fy < 1 - margin) \
            & ~((fx < legend[0]) & (fy > legend[1]))
        a = np.asarray(taken, dtype=float).reshape(-1, 2)
        dist = np.min(np.hypot(fx[:, None] - a[None, :, 0], fy[:, None] - a[None, :, 1]), axis=1) if len(a) \
            else np.full(len(line), np.inf)
        ok = inside & (dist >= clear)
        if ok.any():
            idx = np.flatnonzero(ok)
            i = int(idx[np.argmin(np.abs(idx - (len(line) - 1) / 2))])
        else:
            i = int(np.argmax(np.where(inside, dist, -np.inf) if inside.any() else dist))
        spots.append((float(line[i, 0]), float(line[i, 1])))
        taken.append((fx[i], fy[i]))
    return spots


def plot_escalation(tau_lp: np.ndarray, tau_h: np.ndarray, metrics: dict[str, np.ndarray],
                    default: tuple[float, float], paper_pairs: pd.DataFrame | None = None):
    """Heatmaps over the (tau_lp, tau_h) grid: escalation rate (with token contours) and accuracy."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import PercentFormatter

    fig, axes = plt.subplots(1, 2, figsize=(MAX_WIDTH_IN, 5.4), gridspec_kw={"wspace": 0.3})
    dl = (tau_lp[-1] - tau_lp[0]) / max(1, len(tau_lp) - 1) / 2  # cells centred on the grid values
    dh = (tau_h[-1] - tau_h[0]) / max(1, len(tau_h) - 1) / 2
    ext = [tau_lp[0] - dl, tau_lp[-1] + dl, tau_h[0] - dh, tau_h[-1] + dh]
    panels = [("escalation_rate", "Escalation rate", "magma", (0, 1)),
              ("accuracy", "Accuracy (gated output)", "viridis", None)]
    for ax, (key, title, cmap, lim) in zip(axes, panels):
        z = metrics[key].T  # rows: tau_h, columns: tau_lp
        vmin, vmax = lim if lim else (float(z.min()), float(z.max()) if z.max() > z.min() else float(z.min()) + 1e-3)
        im = ax.imshow(z, origin="lower", extent=ext, aspect="auto", cmap=cmap, vmin=vmin, vmax=vmax,
                       interpolation="nearest")
        ax.grid(False)
        cb = fig.colorbar(im, ax=ax, pad=0.01)
        cb.ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        if key == "escalation_rate":
            tok = metrics["avg_tokens"].T
            if tok.max() > tok.min():
                levels = np.unique(np.round(np.quantile(tok, [0.1, 0.3, 0.5, 0.7, 0.9]), -1))
                cs = ax.contour(tau_lp, tau_h, tok, levels=levels, colors="white", linewidths=1.1)
                marked = [default] + ([] if paper_pairs is None else list(zip(paper_pairs["tau_lp"], paper_pairs["tau_h"])))
                ax.clabel(cs, fmt=lambda v: f"{_kilo(v)} tok", fontsize="small",
                          manual=contour_label_spots(cs.allsegs, marked, ext))  # off the star and the rings
        ax.plot([default[0]], [default[1]], "*", ms=18, color=CHOSEN_COLOR, mec="black", label="default thresholds")
        if paper_pairs is not None:
            ax.plot(paper_pairs["tau_lp"], paper_pairs["tau_h"], "o", ms=8, mfc="none", mec="cyan", mew=2,
                    label="the paper's sweep (Table 5)")
        ax.set(xlabel="tau_lp\n(uncertain if exp(LP_min) < tau_lp)", ylabel="tau_h  (unsure if H_max > tau_h, nats)",
               title=title)
        ax.legend(loc="upper left", fontsize="small")
    return fig


def plot_sweep_vs_paper(table: pd.DataFrame, ours_label: str = "this run", n: int | None = None):
    """Table 5 beside ours, drawn against tau_lp: accuracy change from the first row (points), tokens
    relative to the first row, and escalation rate. Changes, not levels, carry the paper's reading.
    With ``n`` (our problem count) a grey band marks +-1 problem, the resolution of our accuracy."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import PercentFormatter

    fig, axes = plt.subplots(1, 3, figsize=(MAX_WIDTH_IN, 4.6), gridspec_kw={"wspace": 0.45})
    x = table["tau_lp"]
    first = f"tau_lp = {x.iloc[0]:g}"
    paper_name = "paper" + (f" ({table.attrs['model']}, {table.attrs['dataset']})" if table.attrs.get("model") else "")
    for ax, col, title, kind in [(axes[0], "accuracy", f"Accuracy change from {first}", "diff"),
                                 (axes[1], "avg_tokens", f"Tokens relative to {first}", "ratio"),
                                 (axes[2], "escalation_rate", "Escalation rate", "level")]:
        for label, name, look in [(ours_label, ours_label, dict(color="#0072B2", marker="o")),
                                   ("paper", paper_name, dict(color="#D55E00", marker="s", ls="--"))]:
            y = table[f"{col} ({label})"].astype(float)
            y = (y - y.iloc[0]) * 100 if kind == "diff" else y / y.iloc[0] if kind == "ratio" else y
            ax.plot(x, y, lw=2.2, ms=9, label=name, **look)
        ax.set(title=title, xlabel=f"tau_lp  (tau_h = {table['tau_h'].iloc[0]:g})")
        if kind == "level":
            ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
            ax.set_ylim(0, 1.02)
        elif kind == "ratio":
            ax.set_ylabel(f"x tokens at {first}")
        else:
            ax.axhline(0, color="black", lw=1)
            if n:
                ax.axhspan(-100 / n, 100 / n, color="0.6", alpha=0.25, lw=0, label=f"+-1 of our {n} problems")
            ax.set_ylabel("points")
            lim = 1.12 * max(3.0, float(np.nanmax(np.abs(ax.get_ylim()))))
            ax.set_ylim(-lim, lim)
    axes[0].legend(loc="lower left", fontsize="small")
    fig.suptitle("The paper's threshold sweep (Table 5) beside ours", fontweight="bold", fontsize="x-large", y=1.02)
    return fig


def plot_split(chains: Chains, tau_lp: np.ndarray, tau_h: np.ndarray, check: SplitCheck, many: pd.DataFrame):
    """Left: half A's and half B's fronts (each run to the right edge: a front keeps its best accuracy
    at every larger budget), the budget, the pair chosen on A and where it lands on B.
    Right: over many random splits, held-out minus selection-half accuracy."""
    import matplotlib.pyplot as plt

    a, b, ga, gb = _half_sweeps(chains, np.asarray(tau_lp, float), np.asarray(tau_h, float), check.seed)
    fig, axes = plt.subplots(1, 2, figsize=(MAX_WIDTH_IN, 5.6), gridspec_kw={"width_ratios": [1.5, 1], "wspace": 0.25})
    ax = axes[0]
    both = pd.concat([ga, gb])["avg_tokens"]
    right = float(both.max()) * 1.15  # a front keeps its best accuracy at every larger budget: run it to the edge
    for g, color, name in [(ga, "#0072B2", f"front of half A (n={check.n_a}): choose here"),
                           (gb, "#009E73", f"front of half B (n={check.n_b}): check here")]:
        ax.scatter(g["avg_tokens"], g["accuracy"], s=10, color=color, alpha=0.2, linewidths=0, rasterized=True)
        f = front_of(g)
        ax.step([*f["avg_tokens"], right], [*f["accuracy"], f["accuracy"].iloc[-1]], where="post", color=color,
                lw=2.4, marker="o", ms=5, markevery=list(range(len(f))), label=name)
    ax.set_xlim(float(both.min()) / 1.15, right)
    ax.axvline(check.budget, color="grey", ls=":", lw=2, label=f"budget: {check.budget:,.0f} tokens")
    ax.plot([check.tokens_a], [check.acc_a], "*", ms=22, color="#0072B2", mec="black", zorder=6,
            label=f"chosen on A: tau_lp={check.tau_lp:.3g}, tau_h={check.tau_h:.3g}")
    ax.plot([check.tokens_b], [check.acc_b], "*", ms=22, color="#009E73", mec="black", zorder=6,
            label="the same pair on B (held out)")
    ax.annotate("", (check.tokens_b, check.acc_b), (check.tokens_a, check.acc_a),
                arrowprops=dict(arrowstyle="->", lw=1.8, color="black"), zorder=5)
    _style_axes(ax, logx=True)
    ax.set_title(f"Chosen on half A, checked on half B (split seed {check.seed})")
    ax.legend(loc="best", fontsize="small")  # where it hides the fewest points and lines
    ax2 = axes[1]
    if len(many):
        gap = (many["acc_b"] - many["acc_a"]) * 100
        step = 100 / max(int(many["n_a"].max()), int(many["n_b"].max()))  # one problem, in points
        edges = np.arange(np.floor(gap.min() / step) - 0.5, np.ceil(gap.max() / step) + 1, 1) * step
        ax2.hist(gap, bins=edges, color="#56B4E9", edgecolor="white")
        ax2.axvline(0, color="black", lw=1)
        ax2.axvline(gap.mean(), color=ORACLE_COLOR, lw=2.2, ls="--", label=f"mean {gap.mean():+.1f} points")
        ax2.set(xlabel="held-out minus selection-half accuracy (points)", ylabel="random splits",
                title=f"Over {len(many)} random splits")
        ax2.legend(loc="upper left", fontsize="small")
    return fig


# ---------------------------------------------------------------------------------------------
# The chapter's sentences, built from computed numbers
# ---------------------------------------------------------------------------------------------

def describe_frontier(grid: pd.DataFrame, policies: pd.DataFrame, oracle: pd.DataFrame, default: pd.Series,
                      effects: pd.DataFrame, baselines: pd.DataFrame | None = None,
                      common_grid: pd.DataFrame | None = None) -> str:
    """What the frontier figure shows, in numbers: the grid, the front (a point or a staircase),
    the policies, the default's distance to the oracle split into what not escalating recovers and
    what a perfect signal adds beyond it, and the baselines against thresholds within their budget."""
    n = int(policies["n"].iloc[0])
    front = front_of(grid)
    pol = policies.set_index("policy")
    solo, full = pol.loc["solo"], pol.loc["always-interact"]
    distinct = grid[["accuracy", "avg_tokens"]].drop_duplicates().shape[0]
    shape = ("a single point: no threshold pair beats the cheapest one, and every extra escalation costs tokens "
             "without buying accuracy" if len(front) == 1 else f"a staircase of {len(front)} points")
    lines = [f"- The grid's {len(grid):,} pairs land on **{distinct} distinct operating points**; its Pareto front "
             f"is {shape}. Accuracy over the grid runs {pct(grid['accuracy'].min(), 1)}-{pct(grid['accuracy'].max(), 1)}, "
             f"tokens {grid['avg_tokens'].min():,.0f}-{grid['avg_tokens'].max():,.0f} per problem."]
    last = effects.iloc[-1]
    lines.append(
        f"- Leader alone: {pct(solo['accuracy'], 1)} (strict, counting only answers it boxed itself: "
        f"{pct(solo['accuracy_strict'], 1)}) at {solo['avg_tokens']:,.0f} "
        f"tokens; always interact: {pct(full['accuracy'], 1)} (strict {pct(full['accuracy_strict'], 1)}) at "
        f"{full['avg_tokens']:,.0f} tokens ({full['avg_tokens'] / solo['avg_tokens']:.1f}x). After its last "
        f"supporter stage the leader has fixed {int(last['fixed_vs_leader'])} of its wrong first "
        f"answers and broken {int(last['broken_vs_leader'])} of its right ones; stage by stage, against the stage "
        "before: " + "; ".join(f"stage {int(r.stage)} fixes {int(r.fixed_vs_previous)}, breaks {int(r.broken_vs_previous)}"
                               for r in effects.iloc[1:].itertuples()) + "."
        + (" (A stage's fixes can repair what an earlier stage broke, so they need not add up to the net.)"
           if effects.iloc[1:]["fixed_vs_previous"].sum() > last["fixed_vs_leader"] else ""))
    at = oracle[oracle["avg_tokens"] <= default["avg_tokens"] + 1e-9]["accuracy"].max()
    gap = at - default["accuracy"]
    recover = max(0.0, solo["accuracy"] - default["accuracy"]) if solo["avg_tokens"] <= default["avg_tokens"] else 0.0
    line = (f"- The default thresholds (tau_lp = {default['tau_lp']:g}, tau_h = {default['tau_h']:g}) reach "
            f"{pct(default['accuracy'], 1)} at {default['avg_tokens']:,.0f} tokens, escalating "
            f"{pct(default['escalation_rate'], 0)} of the problems. The oracle (it stops at the first right stage) "
            f"reaches {pct(at, 1)} at that cost or less, {100 * gap:.1f} points more")
    if recover > 0:
        line += (f": {100 * recover:.1f} of them are what **not escalating at all** recovers (the leader alone "
                 f"scores more than the default), and only {100 * (gap - recover):.1f} are what a perfect "
                 f"confidence signal adds beyond that.")
    else:
        line += " : what a perfect confidence signal would add at this cost."
    lines.append(line)
    best = grid.loc[grid["accuracy"].idxmax()]
    lines.append(f"- The most accurate pair (tau_lp = {best['tau_lp']:.3g}, tau_h = {best['tau_h']:.3g}) scores "
                 f"{pct(best['accuracy'], 1)} at {best['avg_tokens']:,.0f} tokens, "
                 f"{100 * (best['accuracy'] - solo['accuracy']):+.1f} points against the leader alone "
                 f"({round((best['accuracy'] - solo['accuracy']) * n):+d} of {n} problems).")
    if baselines is not None and common_grid is not None:
        for _, b in baselines.iterrows():
            fit = common_grid[common_grid["avg_tokens"] <= b["avg_tokens"]]["accuracy"].max()
            lines.append(f"- {style(b['strategy'])['label']} on the {int(b['n'])} common problems: "
                         f"{pct(b['accuracy'], 1)} (strict {pct(b.get('accuracy_strict', np.nan), 1)}) at "
                         f"{b['avg_tokens']:,.0f} tokens; the best threshold pair within that budget on the same "
                         f"problems scores {pct(fit, 1)}.")
    return "**What it shows.**\n\n" + "\n".join(lines)


_VERDICT = {"budget knob": "**This run reproduces the paper's reading**",
            "inert": "**This run does not reproduce the paper's reading: here the thresholds are not even a budget knob**",
            "accuracy falls": "**This run does not reproduce the paper's reading: here the thresholds are an accuracy "
                              "knob, and turning them towards more escalation lowers accuracy**",
            "accuracy rises": "**This run does not reproduce the paper's reading: here more escalation buys accuracy**"}


#: How far the accuracy change across the paper's sweep may reach, either way, for "accuracy stays put"
#: to be shown (the margin of chapter 07's "matters little").
FLAT_MARGIN = 0.05


def sweep_verdict(reading: "KnobReading", test: dict | None) -> str:
    """Whether this run reproduces the paper's reading of its sweep, decided on the paired test of
    the accuracy change (:func:`sweep_test`): "budget knob" needs the change's interval within
    :data:`FLAT_MARGIN` either way; a fall or a rise needs the exact test and the interval to clear
    (:func:`lase_nb.stats.clears_both`). Otherwise "too few problems to say", with the interval."""
    if reading.verdict == "inert" or test is None:
        return _VERDICT[reading.verdict]
    ci = (f"accuracy change {100 * test['diff']:+.1f} points [{100 * test['diff_lo']:+.1f}, "
          f"{100 * test['diff_hi']:+.1f}], exact McNemar p = {test['p_value']:.2g}, {test['n']} problems")
    if clears_both(test):
        return f"{_VERDICT['accuracy rises']} ({ci})"
    if clears_both(test, above=False):
        return f"{_VERDICT['accuracy falls']} ({ci})"
    if test["diff_lo"] > -FLAT_MARGIN and test["diff_hi"] < FLAT_MARGIN:
        return f"{_VERDICT['budget knob']} ({ci})"
    return (f"**Too few problems to say** whether this run reproduces the paper's reading ({ci}: the interval "
            f"allows a change of more than {100 * FLAT_MARGIN:.0f} points, and no change at all)")


def describe_sweep(beside: pd.DataFrame, grid: pd.DataFrame, n: int, test: dict | None = None) -> str:
    """The paper's Table 5 reading and ours (at its five pairs, and over the whole grid), in its own
    order; the verdict from :func:`sweep_verdict` on ``test`` (:func:`sweep_test`)."""
    ref = reference.as_fraction(reference.THRESHOLD_SWEEP)
    paper = knob_reading(ref["accuracy"], ref["avg_tokens"], ref["escalation_rate"],
                         reference.DATASET_SIZES[ref.attrs["dataset"]], who="The paper", ordered=True)
    ours = knob_reading(beside["accuracy (this run)"], beside["avg_tokens (this run)"],
                        beside["escalation_rate (this run)"], n, who="This run", ordered=True)
    whole = knob_reading(grid["accuracy"], grid["avg_tokens"], grid["escalation_rate"], n,
                         who="This run, over the whole grid")
    return (f"- {paper.sentence}\n- {ours.sentence}\n- {whole.sentence}\n\n{sweep_verdict(ours, test)} (on the paper's "
            f"five threshold pairs, tau_lp from {ref['tau_lp'].iloc[0]:g} to {ref['tau_lp'].iloc[-1]:g}; over the "
            f"whole grid the reading is '{whole.verdict}').")


def describe_split(check: SplitCheck, many: pd.DataFrame, median_budget: bool) -> str:
    """The held-out threshold choice in words, from :func:`select_and_check` and :func:`split_checks`."""
    over = many["over_budget"] > 0 if len(many) else pd.Series(dtype=bool)
    opt = many["optimism"].mean() if len(many) else np.nan
    return (f"**What it shows.** With a budget of {check.budget:,.0f} tokens per problem"
            f"{' (the median over the grid)' if median_budget else ''}, half A picks tau_lp = {check.tau_lp:.3g}, "
            f"tau_h = {check.tau_h:.3g}: {pct(check.acc_a, 1)} on half A, **{pct(check.acc_b, 1)} on the held-out half B** "
            f"at {check.tokens_b:,.0f} tokens ({'within' if check.tokens_b <= check.budget else 'over'} budget). Over "
            f"{len(many)} random splits the held-out accuracy is on average {abs(opt) * 100:.1f} points "
            f"{'below' if opt > 0 else 'above'} the selection half's "
            + ("(that optimism is the price of choosing and reporting on the same problems)" if opt > 0 else
               "(no optimism here: choosing on half A did not flatter the choice, on average)")
            + f", with a spread (standard deviation) of "
            f"{many['optimism'].std() * 100:.1f} points between splits; the held-out half's best pair in hindsight "
            f"is {many['regret'].mean() * 100:.1f} points better than the chosen one, and the chosen pair overshoots "
            f"the budget on the held-out half in {pct(over.mean(), 0)} of splits"
            + (f" (by {pct(many.loc[over, 'over_budget'].mean(), 0)} on average when it does)." if over.any() else "."))


# ---------------------------------------------------------------------------------------------
# Several models side by side
# ---------------------------------------------------------------------------------------------

def frontiers_by_model(chains_by_model: Mapping[str, Chains], tau_lp: float, tau_h: float,
                       grid_size: int = 41) -> dict[str, dict]:
    """Per model label: its threshold ``grid`` (:func:`threshold_axes`, :func:`lase_nb.replay.sweep`),
    ``policies`` (:func:`lase_nb.replay.fixed_policies`), ``oracle`` (:func:`lase_nb.replay.oracle_frontier`) and ``default`` (the
    replayed operating point at tau_lp, tau_h): the keys :func:`plot_frontier`'s ``common`` takes."""
    out = {}
    for name, c in chains_by_model.items():
        tl, th = threshold_axes(c, grid_size)
        out[name] = {"grid": sweep(c, tl, th), "policies": fixed_policies(c), "oracle": oracle_frontier(c),
                     "default": operating_point(c, tau_lp, tau_h)}
    return out


def frontier_table(frontiers: Mapping[str, dict]) -> pd.DataFrame:
    """One row per model of :func:`frontiers_by_model`: n, the leader alone, LASE at the thresholds,
    always-interact and the oracle (accuracy and avg tokens), the best grid pair's accuracy and the
    number of points on the grid's Pareto front."""
    rows = []
    for name, f in frontiers.items():
        pol, d = f["policies"].set_index("policy"), f["default"]
        rows.append({"model": name, "n": int(pol["n"].iloc[0]),
                     "leader_accuracy": pol.loc["solo", "accuracy"], "leader_tokens": pol.loc["solo", "avg_tokens"],
                     "lase_accuracy": float(d["accuracy"]), "lase_tokens": float(d["avg_tokens"]),
                     "escalation_rate": float(d["escalation_rate"]),
                     "always_accuracy": pol.loc["always-interact", "accuracy"],
                     "always_tokens": pol.loc["always-interact", "avg_tokens"],
                     "oracle_accuracy": float(f["oracle"]["accuracy"].max()),
                     "oracle_tokens": float(f["oracle"]["avg_tokens"].iloc[-1]),
                     "best_pair_accuracy": float(f["grid"]["accuracy"].max()),
                     "front_points": len(front_of(f["grid"]))})
    return pd.DataFrame(rows)


def plot_frontier_by_model(frontiers: Mapping[str, dict], logx: bool = True, title: str | None = None):
    """One panel per model of :func:`frontiers_by_model`, drawn by :func:`draw_frontier`: its threshold
    grid and Pareto front, its oracle staircase, the leader alone and always-interact (95% Wilson
    intervals) and LASE at the chosen thresholds (a star), on the same scales; one colour bar for the
    escalation rate."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import PercentFormatter

    fig, axes = plt.subplots(1, len(frontiers), figsize=(MAX_WIDTH_IN, 7.2 if len(frontiers) == 1 else 6.6),
                             squeeze=False, gridspec_kw={"wspace": 0.12})
    cloud = None
    for ax, (name, f) in zip(axes[0], frontiers.items()):
        cloud = draw_frontier(ax, f["grid"], f["policies"], f["oracle"], colorbar=False, logx=logx,
                              point_labels=False)
        _default_marker(ax, f["default"])
        ax.set_title(f"{name}: {int(f['policies']['n'].iloc[0])} problems")
    for get, put in (("get_xlim", "set_xlim"), ("get_ylim", "set_ylim")):  # the same scales, to compare
        lims = np.array([getattr(ax, get)() for ax in axes[0]])
        for ax in axes[0]:
            getattr(ax, put)(lims[:, 0].min(), lims[:, 1].max())
    for ax in axes[0, 1:]:
        ax.set_ylabel("")
    cb = fig.colorbar(cloud, ax=list(axes.ravel()), pad=0.012, fraction=0.03, aspect=30)
    cb.set_label("escalation rate of a threshold pair")
    cb.ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    for ax, f in zip(axes[0], frontiers.values()):  # now that the scales and the layout are final
        label_points(ax, _frontier_points(f["policies"]), f["oracle"])
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.45, 0.0), ncol=2, fontsize="small",
               frameon=False)
    fig.suptitle(title or "Accuracy vs tokens by model: threshold pairs replayed, each with its oracle",
                 fontweight="bold", fontsize="x-large")
    return fig


def gain_rows(chains_by_model: Mapping[str, Chains], tau_lp: float, tau_h: float, seed: int = 0) -> pd.DataFrame:
    """Per model, two paired comparisons with the leader alone on the same problems
    (:func:`lase_nb.organism.regimes.gain_regime`): gated LASE at (tau_lp, tau_h) and always-interact. Columns:
    model, policy, n, gain, lo, hi (accuracy difference with its paired bootstrap 95% interval), p_value
    (exact McNemar), fixed, broken (gated LASE only)."""
    from ..organism.regimes import gain_regime

    rows = []
    for label, c in chains_by_model.items():
        r = gain_regime(c, tau_lp, tau_h, seed=seed)
        rows.append({"model": label, "policy": f"gated LASE ({tau_lp:g}, {tau_h:g})", "n": r["n"], "gain": r["gain"],
                     "lo": r["gain_lo"], "hi": r["gain_hi"], "p_value": r["p_value"], "fixed": r["fixed"],
                     "broken": r["broken"]})
        rows.append({"model": label, "policy": "always interact", "n": r["n"], "gain": r["full_gain"],
                     "lo": r["full_lo"], "hi": r["full_hi"], "p_value": r["full_p"], "fixed": np.nan, "broken": np.nan})
    return pd.DataFrame(rows)


def plot_gains(rows: pd.DataFrame, zoom: float | None = None):
    """Each model's gains over its leader alone (:func:`gain_rows`), points with their paired 95%
    intervals: on a scale that holds every interval (left, rounded up to 10 points) and zoomed to
    +-``zoom`` (right; None: the smallest multiple of 5 points, at least 8, that holds every gated
    LASE interval), where a gain of a few points
    and whether its interval crosses zero can be read; each row's numbers are written above its
    interval in the zoomed panel. Gated LASE is LASE's star on a solid line, always-interact a white
    diamond on a dashed line (two policies in two oranges need more than their colour). An arrow
    marks an interval that leaves the zoom."""
    import matplotlib.pyplot as plt

    looks = {}
    for p in rows["policy"].unique():
        gated = not str(p).startswith("always")
        st = style("lase" if gated else "always-interact")
        looks[p] = dict(color=st["color"], marker="*" if gated else "D", ms=15 if gated else 9,
                        mfc=st["color"] if gated else "white", ls="-" if gated else "--")
    if zoom is None:
        gated = rows[~rows["policy"].astype(str).str.startswith("always")]
        inner = float(np.nanmax(np.abs(gated[["lo", "hi"]].to_numpy(float)))) if len(gated) else 0.0
        zoom = max(0.08, float(np.ceil(inner * 20 - 1e-9) / 20))
    # the left panel spans every interval, rounded up to 10 points (on +-100 the points sat in an empty strip)
    reach = float(np.nanmax(np.abs(rows[["lo", "hi", "gain"]].to_numpy(float)))) if len(rows) else zoom
    full = max(zoom, float(np.ceil(reach * 10 + 1e-9) / 10))
    fig, axes = plt.subplots(1, 2, figsize=(10, 2.2 + 0.85 * len(rows)), sharey=True, layout="constrained",
                             gridspec_kw={"width_ratios": [1, 2.1]})
    y = np.arange(len(rows))[::-1].astype(float)
    for ax, lim in zip(axes, (full, zoom)):
        ax.axvline(0, color="0.3", lw=1)
        for yi, r in zip(y, rows.itertuples()):
            lk = looks[r.policy]
            lo, hi = max(r.lo, -lim), min(r.hi, lim)
            ax.plot([lo, hi], [yi, yi], color=lk["color"], lw=2.5, ls=lk["ls"])
            if -lim <= r.gain <= lim:
                ax.plot(r.gain, yi, lk["marker"], color=lk["color"], ms=lk["ms"], mfc=lk["mfc"], mec="black", mew=1.2)
            for end, edge, mark in ((r.lo, -lim, "<"), (r.hi, lim, ">")):
                if (end < edge if mark == "<" else end > edge):
                    ax.plot(edge, yi, mark, color=lk["color"], ms=10, mec="black", mew=0.8)
        ax.set_xlim(-lim * 1.05, lim * 1.05)
        ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{100 * v:+.0f}"))
    axes[0].set_ylim(y.min() - 0.6, y.max() + 0.75)
    axes[0].set_yticks(y, [f"{r.model}\n{r.policy} (n={r.n})" for r in rows.itertuples()], fontsize=10.5)
    axes[0].set_title(f"every interval (+-{100 * full:.0f} points)", fontsize="medium")
    axes[1].set_title(f"zoomed to +-{100 * zoom:.0f} points", fontsize="medium")
    axes[0].set_xlabel("gain (points)")
    axes[1].set_xlabel("gain over the leader alone (points)")
    for yi, r in zip(y, rows.itertuples()):
        axes[1].annotate(f"{100 * r.gain:+.1f} [{100 * r.lo:+.1f}, {100 * r.hi:+.1f}], p = {r.p_value:.2g}",
                         (0, yi), xytext=(0, 9), textcoords="offset points", ha="center", va="bottom", fontsize=10.5,
                         bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.8))
    handles = [plt.Line2D([], [], color=lk["color"], ls=lk["ls"], lw=2.5, marker=lk["marker"], ms=lk["ms"] * 0.8,
                          mfc=lk["mfc"], mec="black", label=p) for p, lk in looks.items()]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False, fontsize=10.5)
    fig.suptitle("Gain over the leader alone on the same problems\n(paired bootstrap 95% intervals, exact McNemar p)",
                 fontweight="bold", fontsize="medium")
    return fig


def describe_gains(rows: pd.DataFrame) -> str:
    """:func:`gain_rows` in words, one line per study and policy (:func:`lase_nb.tables.gain_words`):
    whether its front rises above its own leader alone is read from the interval and the exact test,
    and with too few problems the line says so."""
    from ..tables import gain_words

    lines = []
    for _, r in rows.iterrows():
        disc = r["fixed"] + r["broken"] if np.isfinite(r.get("fixed", np.nan)) else None
        lines.append(f"- **{r['model']}**, {r['policy']}: " + gain_words(r["gain"], r["lo"], r["hi"], r["p_value"],
                                                                         int(r["n"]), disc) + ".")
    return "Gain over the leader alone on the same problems (paired bootstrap 95% interval, exact McNemar p):\n\n" \
        + "\n".join(lines)
