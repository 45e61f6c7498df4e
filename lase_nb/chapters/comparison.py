"""Chapter 04 (notebooks/04_comparison): every strategy on the same problems, and the paper beside them.

The comparison table itself is :func:`lase_nb.tables.comparison_table` (shared with chapter 06);
LASE's rows are replayed by :mod:`lase_nb.replay`. Here:

- :func:`paper_reference` / :func:`comparison_display` / :func:`claims_table`: the paper's
  Table 1 beside ours, the table for reading, and the paper's claims checked on this run;
- a compute-matched view: majority vote over the first k recorded samples
  (:func:`mv_subsample`, :func:`mv_curve`) against LASE thresholds within the same budget
  (:func:`compute_matched`);
- :func:`seed_table`: was there a correct answer for debate to amplify;
- :func:`plot_accuracy_vs_tokens`, in the house style of :mod:`lase_nb.plots`;
- several models side by side (:func:`lase_nb.runs.load_models`, :func:`lase_nb.tables.strategy_tables`):
  :func:`comparison_by_model`, :func:`comparison_display_by_model`, :func:`plot_accuracy_vs_tokens_by_model`.

Accuracies are fractions in [0, 1] (as in :mod:`lase_nb.stats`); the display helpers turn them
into percents, the paper's unit. Paper numbers come only from :mod:`lase_nb.reference`.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .. import reference
from ..replay import Chains, replay
from ..answers import grade
from ..errors import DataError
from ..plots import MAX_WIDTH_IN, Spot, label, place_label, style
from ..replay import choose_thresholds, gate_for_budget, split_halves
from ..tables import comparison_table, paired_correct, split_by_coverage
from ..stats import MARGIN, PAIRED_N_BOOT, paired_test, pct, points, within_margin
from ..strategies import EXTRACT_ROLE, SPECS, StrategyConfig, majority_vote

_DEFAULT_TEMPERATURE = StrategyConfig().temperature
from ..answers import answer_or_none, number_or_none

__all__ = [
    "STRATEGY_ORDER", "paper_reference", "comparison_display", "mv_subsample", "mv_curve", "mv_sample_rows",
    "compute_matched", "graded_calls", "seed_table", "claims_table", "short_tables",
    "SHORT_COLUMNS", "plot_accuracy_vs_tokens",
    "run_overview", "calls_per_problem", "describe_matched",
    "comparison_by_model", "comparison_display_by_model", "plot_accuracy_vs_tokens_by_model",
    "aim_check", "aim_display",
]

#: The comparison chapter's strategies, in display order ("lase" is replayed from ``lase-full``):
#: every strategy's record, :data:`lase_nb.strategies.SPECS`.
STRATEGY_ORDER = tuple(SPECS)

def paper_reference(model: str = "GPT-4.1-mini", dataset: str = "GSM-Symbolic") -> pd.DataFrame:
    """The paper's numbers beside our strategies: Table 1's row for (model, dataset) and the side results.

    Index: strategy. Columns: ``paper accuracy %``, ``paper avg tokens``, ``paper multiplier``
    (this Table 1 row), ``paper multiplier, all datasets`` and ``paper, other settings`` (text
    built from the reference tables for MoA, LASE+MV, shuffled order and DOWN).
    """
    t1 = reference.TABLE1
    row = t1[(t1["model"] == model) & (t1["dataset"] == dataset)].set_index("method")
    if row.empty:
        pairs = sorted(set(zip(t1["model"], t1["dataset"])))
        raise ValueError(f"Table 1 has no row for ({model!r}, {dataset!r}); choose one of {pairs}")
    mult = reference.TOKEN_MULTIPLIERS.set_index("method")["token_multiplier"]
    out = pd.DataFrame(index=pd.Index(STRATEGY_ORDER, name="strategy"),
                       columns=["paper accuracy %", "paper avg tokens", "paper multiplier",
                                "paper multiplier, all datasets", "paper, other settings"], dtype=object)
    for m in reference.METHODS:
        out.loc[m, "paper accuracy %"] = float(row.loc[m, "accuracy"])
        out.loc[m, "paper avg tokens"] = int(row.loc[m, "avg_tokens"])
        out.loc[m, "paper multiplier"] = round(float(row.loc[m, "avg_tokens"] / row.loc["single", "avg_tokens"]), 2)
        out.loc[m, "paper multiplier, all datasets"] = float(mult[m])
    moa = reference.MOA_VS_LASE.set_index("method")
    lmv = reference.LASE_MV.set_index("method")
    sh = reference.SHUFFLED_SUMMARY
    out.loc["moa", "paper, other settings"] = (
        f"{reference.MOA_VS_LASE.attrs['model']}, {reference.MOA_VS_LASE.attrs['dataset']}: MoA "
        f"{moa.loc['moa', 'accuracy']:.1f}% at {moa.loc['moa', 'total_tokens'] / 1e6:.1f}M tokens vs LASE "
        f"{moa.loc['lase', 'accuracy']:.1f}% at {moa.loc['lase', 'total_tokens'] / 1e6:.1f}M")
    out.loc["lase-mv", "paper, other settings"] = (
        f"{reference.LASE_MV.attrs['model']}, {reference.LASE_MV.attrs['dataset']}: LASE+MV "
        f"{lmv.loc['lase+mv', 'accuracy']:.1f}% at {lmv.loc['lase+mv', 'avg_tokens']} tokens vs MV(7) "
        f"{lmv.loc['mv', 'accuracy']:.1f}% at {lmv.loc['mv', 'avg_tokens']}")
    out.loc["lase-shuffled", "paper, other settings"] = (
        f"3 shuffled runs: {sh['mean']:.1f}% +- {sh['sd']:.2f} vs {sh['original']:.1f}% in the original order")
    out.loc["down", "paper, other settings"] = reference.DOWN_CLAIM
    out.loc["lase-full", "paper, other settings"] = "not reported (our always-interact policy)"
    out.attrs["source"] = reference.SOURCE
    out.attrs["row"] = f"{model}, {dataset}"
    return out

def comparison_display(table: pd.DataFrame, paper: pd.DataFrame | None = None,
                       configs: Mapping[str, Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """The comparison table for reading: percents with intervals, rounded tokens, labelled paper columns."""
    configs = configs or {}
    fmt_p = lambda p: "" if pd.isna(p) else f"{p:.3f}"  # noqa: E731
    fmt_wl = lambda w, l: "" if pd.isna(w) else f"+{int(w)}/-{int(l)}"  # noqa: E731
    out = pd.DataFrame({
        "method": [label(s, configs.get(s)) for s in table.index],
        "accuracy % [95% CI]": [f"{100 * a:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"
                                for a, lo, hi in zip(table["accuracy"], table["acc_lo"], table["acc_hi"])],
        "strict accuracy %": (100 * table["accuracy_strict"] if "accuracy_strict" in table
                              else pd.Series(np.nan, index=table.index)).round(1),
        "avg tokens (completion)": table["avg_completion_tokens"].round(0).astype(int),
        "avg tokens (prompt+completion)": table["avg_tokens"].round(0).astype(int),
        "total tokens (prompt+completion)": table["total_tokens"].astype(int),
        "x single (completion)": table["completion_multiplier"].round(2),
        "x single (prompt+completion)": table["token_multiplier"].round(2),
        "escalated %": table["escalation_rate"].map(lambda v: "" if pd.isna(v) else f"{100 * v:.0f}"),
        "vs single: +wins/-losses": [fmt_wl(w, l) for w, l in zip(table["wins_vs_single"], table["losses_vs_single"])],
        "McNemar p vs single": table["p_vs_single"].map(fmt_p),
        "McNemar p vs MV": table["p_vs_mv"].map(fmt_p),
    }, index=table.index)
    if paper is not None:
        p = paper.reindex(table.index)
        for c in ("paper accuracy %", "paper avg tokens", "paper multiplier", "paper multiplier, all datasets"):
            out[c] = p[c].map(lambda v: "" if pd.isna(v) else v)
    return out


# ---------------------------------------------------------------------------------------------
# compute-matched view
# ---------------------------------------------------------------------------------------------


def _sample_index(agent: str) -> int:
    m = re.search(r"(\d+)$", str(agent))
    return int(m.group(1)) if m else 0

def graded_calls(calls: pd.DataFrame) -> pd.DataFrame:
    """The answering calls of a run with their graded answers: a call without a box takes the
    answer and ``p_min`` its extraction step (role ``extract``, same problem, stage and agent)
    recovered, and that step's tokens are added to its own (the step is part of the sample's cost).
    """
    key = ["problem_id", "stage", "agent"]
    own = calls[calls["role"] != EXTRACT_ROLE].copy()
    steps = calls[calls["role"] == EXTRACT_ROLE].drop_duplicates(key).set_index(key)
    step = steps.reindex(pd.MultiIndex.from_frame(own[key]))  # one row per call: its step, or NaNs
    ran = step["role"].notna().to_numpy()
    for col in ("prompt_tokens", "completion_tokens"):
        own[col] = own[col] + step[col].fillna(0).to_numpy().astype(own[col].dtype)
    fill = ran & own["answer"].map(answer_or_none).isna().to_numpy()
    own.loc[fill, "answer"] = step["answer"].to_numpy()[fill]
    own.loc[fill, "p_min"] = step["p_min"].to_numpy()[fill]
    return own


def mv_subsample(calls: pd.DataFrame, problems: pd.DataFrame, kind: str = "number",
                 ks: Sequence[int] | None = None) -> pd.DataFrame:
    """Majority vote over the FIRST k recorded samples of each problem, for every k (no model call).

    ``calls`` are the MV run's calls (one per sample, agent ``sample<i>``), ``problems`` its
    problem table (for the gold answers). Votes use the same rule as the live strategy (ties by
    mean confidence, then first seen), so k = all samples reproduces the recorded MV answers.
    Returns one row per (problem, k): answer, correct, completion_tokens, total_tokens.
    """
    gold = problems.drop_duplicates("problem_id").set_index("problem_id")["gold"].astype(str)
    calls = graded_calls(calls)
    rows = []
    for pid, g in calls.groupby("problem_id", sort=False):
        g = g.assign(_i=g["agent"].map(_sample_index)).sort_values("_i")
        answers = [answer_or_none(a) for a in g["answer"]]
        scores = [number_or_none(p) for p in g["p_min"]]
        comp, tot = g["completion_tokens"].to_numpy(), (g["prompt_tokens"] + g["completion_tokens"]).to_numpy()
        for k in ks or range(1, len(g) + 1):
            if k > len(g):
                continue
            ans = majority_vote(answers[:k], kind, scores[:k])
            rows.append({"problem_id": pid, "k": k, "answer": ans, "correct": grade(ans, gold[pid], kind),
                         "completion_tokens": int(comp[:k].sum()), "total_tokens": int(tot[:k].sum())})
    return pd.DataFrame(rows)

def mv_curve(per_problem: pd.DataFrame, ids: Iterable[str] | None = None) -> pd.DataFrame:
    """Accuracy and average tokens of MV with k samples (on ``ids`` if given)."""
    d = per_problem if ids is None else per_problem[per_problem["problem_id"].isin(set(ids))]
    g = d.groupby("k")
    return pd.DataFrame({"n": g.size(), "accuracy": g["correct"].mean(),
                         "avg_completion_tokens": g["completion_tokens"].mean(),
                         "avg_tokens": g["total_tokens"].mean()}).reset_index()

def compute_matched(mv: pd.DataFrame, grid: pd.DataFrame, tokens: str = "avg_tokens") -> pd.DataFrame:
    """For each MV(k) budget, the best LASE threshold pair that spends no more (per problem, ``tokens``).

    The LASE pick is chosen on the same problems it is scored on, so its accuracy is an
    optimistic estimate; NaN where no threshold fits the budget. ``lase_is_single`` marks picks
    that escalate no problem: at that budget LASE *is* the single agent, not a debate method.
    """
    out = []
    for _, r in mv.iterrows():
        row = {"k": int(r["k"]), "mv_accuracy": r["accuracy"], "budget": r[tokens]}
        try:
            best = choose_thresholds(grid, r[tokens], cost=tokens)
            row.update({"lase_accuracy": best["accuracy"], "lase_tokens": best[tokens], "tau_lp": best["tau_lp"],
                        "tau_h": best["tau_h"], "lase_escalation": best["escalation_rate"],
                        "lase_is_single": bool(best["escalation_rate"] == 0)})
        except ValueError:
            row.update({"lase_accuracy": np.nan, "lase_tokens": np.nan, "tau_lp": np.nan, "tau_h": np.nan,
                        "lase_escalation": np.nan, "lase_is_single": False})
        out.append(row)
    return pd.DataFrame(out)

def seed_table(chains: Chains, stop: np.ndarray, mv_samples: pd.DataFrame | None = None) -> pd.DataFrame:
    """Was there a correct seed to amplify? Counts over problems the leader got wrong alone and LASE escalated.

    Rows: how many such problems; how many reach a right boxed answer at SOME stage of the full
    chain; how many LASE (stopping at ``stop``) gets right; and, given ``mv_samples`` (one row per
    recorded independent sample: problem_id, correct; see :func:`mv_sample_rows`), how many have a
    right answer among those samples, i.e. the model can produce it at all.
    """
    wrong_esc = (~chains.correct[:, 0]) & (np.asarray(stop) > 0)
    ids = chains.problem_ids[wrong_esc]
    rows = [{"question": "escalated problems the leader got wrong alone", "problems": int(wrong_esc.sum())},
            {"question": "... with a right boxed answer at some stage of the full chain",
             "problems": int(chains.correct[wrong_esc].any(axis=1).sum())},
            {"question": "... of which LASE output a right answer", "problems":
             int(chains.correct[np.flatnonzero(wrong_esc), np.asarray(stop)[wrong_esc]].sum())}]
    if mv_samples is not None and len(mv_samples):
        any_right = mv_samples.groupby("problem_id")["correct"].any()
        have = [i for i in ids if i in any_right.index]
        rows.append({"question": f"... recorded by the MV run too ({len(have)} problems): "
                                 "a right answer among its samples", "problems": int(any_right.loc[have].sum())})
    return pd.DataFrame(rows)

def mv_sample_rows(calls: pd.DataFrame, problems: pd.DataFrame, kind: str = "number") -> pd.DataFrame:
    """One row per recorded MV sample: problem_id, sample index, answer (graded: see :func:`graded_calls`), correct."""
    calls = graded_calls(calls)
    gold = problems.drop_duplicates("problem_id").set_index("problem_id")["gold"].astype(str)
    return pd.DataFrame({"problem_id": calls["problem_id"].to_numpy(),
                         "sample": calls["agent"].map(_sample_index).to_numpy(),
                         "answer": [answer_or_none(a) for a in calls["answer"]],
                         "correct": [grade(answer_or_none(a), gold[p], kind) for a, p in zip(calls["answer"], calls["problem_id"])]})

def claims_table(table: pd.DataFrame, paper: pd.DataFrame, about: Iterable[str] | None = None) -> pd.DataFrame:
    """The paper's claims, its numbers, ours, and whether the direction holds in this run.

    ``table`` is :func:`lase_nb.tables.comparison_table`'s output, ``paper`` :func:`paper_reference`'s. Accuracy
    differences are in percentage points; a claim "holds here" when our difference has the
    paper's sign (the McNemar p-value says whether ours could be chance). ``about`` keeps only
    the claims about those strategies (column ``about``); ``n`` is the number of paired problems.
    """
    acc = lambda s: 100 * table.loc[s, "accuracy"]  # noqa: E731
    pacc = lambda s: float(paper.loc[s, "paper accuracy %"])  # noqa: E731
    have = set(table.index)
    rows = []

    def add(subject, claim, paper_val, ours, holds, p=np.nan):
        rows.append({"claim": claim, "paper": paper_val, "this run": ours, "holds here": holds, "McNemar p": p,
                     "about": subject, "n": int(table["n"].iloc[0])})

    if {"lase", "single"} <= have:
        d, pd_ = acc("lase") - acc("single"), pacc("lase") - pacc("single")
        add("lase", "LASE is more accurate than the single agent", f"{pd_:+.1f} pp", f"{d:+.1f} pp", bool(d > 0),
            table.loc["lase", "p_vs_single"])
    if {"lase", "mv"} <= have:
        d, pd_ = acc("lase") - acc("mv"), pacc("lase") - pacc("mv")
        add("lase", "LASE matches or beats MV(7)", f"{pd_:+.1f} pp", f"{d:+.1f} pp", bool(d >= 0),
            table.loc["lase", "p_vs_mv"])
    if {"lase", "mv", "single"} <= have:
        m = reference.TOKEN_MULTIPLIERS.set_index("method")["token_multiplier"]
        add("lase", "LASE costs less than half of MV(7) (x single-agent tokens)",
            f"LASE {m['lase']:.1f}x, MV {m['mv']:.1f}x",
            f"LASE {table.loc['lase', 'token_multiplier']:.1f}x, MV {table.loc['mv', 'token_multiplier']:.1f}x",
            bool(table.loc["lase", "token_multiplier"] < 0.5 * table.loc["mv", "token_multiplier"]))
    if {"mad", "mv"} <= have:
        d, pd_ = acc("mad") - acc("mv"), pacc("mad") - pacc("mv")
        m = reference.TOKEN_MULTIPLIERS.set_index("method")["token_multiplier"]
        add("mad", "MAD costs the most of single/MV/MAD/LASE and is no better than MV",
            f"{pd_:+.1f} pp at {m['mad']:.1f}x", f"{d:+.1f} pp at {table.loc['mad', 'token_multiplier']:.1f}x",
            bool(d <= 0 and table.loc["mad", "token_multiplier"]
                 >= table.loc[[x for x in reference.METHODS if x in have], "token_multiplier"].max() - 1e-9),
            table.loc["mad", "p_vs_mv"])
    if {"lase-mv", "mv"} <= have:
        lmv = reference.LASE_MV.set_index("method")["accuracy"]
        d = acc("lase-mv") - acc("mv")
        ltok = reference.LASE_MV.set_index("method")["avg_tokens"]
        add("lase-mv", "LASE+MV beats MV(7) at similar tokens",
            f"{lmv['lase+mv'] - lmv['mv']:+.1f} pp, {ltok['lase+mv'] / ltok['mv']:.2f}x MV's tokens",
            f"{d:+.1f} pp, {table.loc['lase-mv', 'avg_tokens'] / table.loc['mv', 'avg_tokens']:.2f}x MV's tokens",
            bool(d > 0), table.loc["lase-mv", "p_vs_mv"])
    if {"moa", "lase"} <= have:
        moa = reference.MOA_VS_LASE.set_index("method")
        d = acc("lase") - acc("moa")
        ratio = table.loc["moa", "total_tokens"] / table.loc["lase", "total_tokens"]
        add("moa", "LASE beats MoA with fewer tokens",
            f"{moa.loc['lase', 'accuracy'] - moa.loc['moa', 'accuracy']:+.1f} pp, MoA "
            f"{moa.loc['moa', 'total_tokens'] / moa.loc['lase', 'total_tokens']:.1f}x the tokens",
            f"{d:+.1f} pp, MoA {ratio:.1f}x the tokens", bool(d >= 0 and ratio > 1))
    if {"lase-shuffled", "lase"} <= have:
        sh = reference.SHUFFLED_SUMMARY
        d = acc("lase-shuffled") - acc("lase")
        add("lase-shuffled", "Shuffling the supporters' order changes accuracy little (here: by < 5 pp)",
            f"{sh['mean'] - sh['original']:+.1f} pp", f"{d:+.1f} pp", bool(abs(d) <= 5.0))
    out = pd.DataFrame(rows, columns=["claim", "paper", "this run", "holds here", "McNemar p", "about", "n"])
    return out if about is None else out[out["about"].isin(set(about))].reset_index(drop=True)

#: The columns of :func:`comparison_display` shown for a run of :func:`short_tables`.
SHORT_COLUMNS = ["method", "accuracy % [95% CI]", "strict accuracy %", "avg tokens (prompt+completion)",
                 "x single (prompt+completion)", "McNemar p vs single", "McNemar p vs MV"]


def short_tables(tables: Mapping[str, pd.DataFrame], short: Iterable[str]) -> dict[str, pd.DataFrame]:
    """Each run of ``short`` (:func:`lase_nb.tables.split_by_coverage`) in a :func:`lase_nb.tables.comparison_table`
    of its own, on the problems it shares with the single agent, MV and LASE (those present)."""
    return {s: comparison_table({k: tables[k] for k in ("single", "mv", "lase", s) if k in tables}) for s in short}


# ---------------------------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------------------------


def _size(strategy: str) -> int:
    return 15 if style(strategy)["marker"] == "*" else 10


def _plain_log_axis(ax) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.xaxis.set_minor_formatter(NullFormatter())

def coincident(x: np.ndarray, y: np.ndarray, decades: float = 0.035, points: float = 2.0) -> list[list[int]]:
    """Groups of points whose markers would hide one another (in order): x within ``decades`` of the
    group's first point on a log axis and y within ``points``. Points are never moved apart (x is
    a token count); :func:`_draw_accuracy_tokens` shrinks the later markers of a group and names it."""
    lx, groups = np.log10(np.asarray(x, float)), []
    for i in range(len(lx)):
        for g in groups:
            if abs(lx[i] - lx[g[0]]) < decades and abs(y[i] - y[g[0]]) < points:
                g.append(i)
                break
        else:
            groups.append([i])
    return groups


#: A label placed once the figure's layout is final: text, places to try, text properties.
Note = tuple[str, list[Spot], dict[str, Any]]


def _beside(x: float, y: float, lo: float, hi: float) -> list[Spot]:
    """Places for a name beside a point: right of it, above and below its interval (running right,
    left, centred), left of it."""
    ends = [((x, hi), 6, "bottom"), ((x, lo), -6, "top")]
    return ([((x, y), (10, 0), "left", "center")]
            + [(xy, (dx, dy), ha, va) for xy, dy, va in ends for dx, ha in ((-4, "left"), (4, "right"), (0, "center"))]
            + [((x, y), (-10, 0), "right", "center")])


def _draw_accuracy_tokens(ax, table: pd.DataFrame, mv: pd.DataFrame | None = None,
                          grid: pd.DataFrame | None = None, labels: Mapping[str, str] | None = None,
                          mv_temperature: float | None = None,
                          hollow: Iterable[str] = ()) -> tuple[np.ndarray, float, list[Note]]:
    """One accuracy-vs-tokens panel: the strategies of ``table`` at their token counts (never moved)
    with Wilson intervals, and the MV(k) and LASE-grid curves when given. The strategies of
    ``hollow`` (runs that are not comparable) are drawn as hollow markers on dotted intervals.
    Returns every x drawn, the highest accuracy % (for limits) and the labels to place once the
    layout is final."""
    labels = labels or {}
    hollow = set(hollow)
    notes: list[Note] = []
    if mv is not None and len(mv):
        temp = StrategyConfig().temperature if mv_temperature is None else mv_temperature
        mc = style("mv")["color"]
        ax.plot(mv["avg_tokens"], 100 * mv["accuracy"], "-o", color=mc, alpha=0.5, lw=2, ms=4,
                label=f"MV(k): first k samples, temperature {temp:g}")
        for _, r in mv[(mv["k"] % 2 == 1) | (mv["k"] == mv["k"].max())].iterrows():
            k, x, y = int(r["k"]), r["avg_tokens"], 100 * r["accuracy"]
            text = (f"MV(k=1): one sample at temperature {temp:g},\nnot the greedy single agent" if k == 1
                    else f"k={k}")
            notes.append((text, [((x, y), (0, -8), "center", "top"), ((x, y), (6, -6), "left", "top"),
                                 ((x, y), (0, 8), "center", "bottom"), ((x, y), (8, 0), "left", "center"),
                                 ((x, y), (-8, 0), "right", "center")], dict(fontsize=10, color=mc)))
    if grid is not None and len(grid):  # many threshold pairs land on the same point: each drawn once
        pts = np.unique(np.round(np.c_[grid["avg_tokens"].to_numpy(float), 100 * grid["accuracy"].to_numpy(float)], 6),
                        axis=0)
        ax.plot(pts[:, 0], pts[:, 1], "o", color=style("lase")["color"], mfc="none", mew=1.5, ms=7,
                label="LASE at other thresholds")
    x_all, y_all = table["avg_tokens"].to_numpy(float), 100 * table["accuracy"].to_numpy(float)
    lo_all, hi_all = 100 * table["acc_lo"].to_numpy(float), 100 * table["acc_hi"].to_numpy(float)
    names = [labels.get(s, s) for s in table.index]
    groups = coincident(x_all, y_all)
    rank = {i: k for g in groups for k, i in enumerate(g)}
    for i, s in enumerate(table.index):  # each at its own token count; a later marker of a group smaller, on top
        st, y = style(s), y_all[i]
        off = {"mfc": "white", "mec": st["color"], "mew": 1.8} if s in hollow else {"mec": "k"}
        bars = ax.errorbar(x_all[i], y, yerr=[[y - lo_all[i]], [hi_all[i] - y]], fmt=st["marker"],
                           ms=_size(s) * 0.62 ** rank[i], capsize=4, color=st["color"], label="_nolegend_",
                           alpha=0.9, zorder=3 + rank[i], **off)
        if s in hollow:
            bars[2][0].set_linestyle(":")
        ax.plot([], [], st["marker"], ms=_size(s), color=st["color"], mec="k", alpha=0.9, label=names[i])  # legend
    box = dict(boxstyle="round,pad=0.2", fc="white", ec="0.7", alpha=0.9)
    for g in (g for g in groups if len(g) > 1):
        same = np.allclose(x_all[g], x_all[g[0]]) and np.allclose(y_all[g], y_all[g[0]])
        notes.append((("same point: " if same else "overlapping: ") + ", ".join(names[j] for j in g),
                      _beside(x_all[g[0]], y_all[g[0]], lo_all[g[0]], hi_all[g[0]]),
                      dict(fontsize=10, color="0.2", bbox=box)))
    _plain_log_axis(ax)
    xs = [table["avg_tokens"].to_numpy(float)]
    ys = [100 * table["acc_hi"].to_numpy(float)]
    for extra in (mv, grid):
        if extra is not None and len(extra):
            xs.append(extra["avg_tokens"].to_numpy(float))
            ys.append(100 * extra["accuracy"].to_numpy(float))
    return np.concatenate(xs), float(np.nanmax(np.concatenate(ys))), notes


def _limits(xs: np.ndarray, top: float) -> dict[str, tuple[float, float]]:
    return {"ylim": (-2, min(103.0, max(20.0, 1.25 * top + 5))), "xlim": (np.nanmin(xs) / 1.3, np.nanmax(xs) * 1.3)}


def plot_accuracy_vs_tokens(table: pd.DataFrame, paper: pd.DataFrame | None = None, mv: pd.DataFrame | None = None,
                            grid: pd.DataFrame | None = None, labels: Mapping[str, str] | None = None,
                            mv_temperature: float | None = None):
    """Accuracy % (with 95% Wilson intervals) against average tokens per problem; the paper's Table 1
    row (right) as a table, since its accuracies live on another scale than a small model's.

    ``mv`` (MV with the first k samples) and ``grid`` (LASE replayed at other thresholds) add
    the compute-matched curves; ``mv_temperature`` (default: the strategies' default temperature)
    names the temperature MV's samples were drawn at.
    """
    import matplotlib.pyplot as plt

    labels = labels or {}
    panels = 2 if paper is not None else 1
    fig, axes = plt.subplots(1, panels, figsize=(MAX_WIDTH_IN, 7.6) if panels > 1 else (10, 7.2), squeeze=False,
                             gridspec_kw={"width_ratios": [2.2, 1]} if panels > 1 else None)
    ax = axes[0, 0]
    xs, top, notes = _draw_accuracy_tokens(ax, table, mv, grid, labels, mv_temperature)
    ax.set(xlabel="average tokens per problem (prompt + completion, log scale)", ylabel="accuracy %",
           title="This run (bars: 95% Wilson intervals)", **_limits(xs, top))
    # under the axes, which keep the figure's width (12 inches at most: beside them it made 16)
    ax.legend(fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2 if panels > 1 else 3, frameon=False)
    if paper is not None:
        ax2 = axes[0, 1]
        ax2.axis("off")
        p = paper.dropna(subset=["paper accuracy %"])
        cells = [[labels.get(s, label(s)), f"{float(r['paper accuracy %']):.1f}", f"{int(r['paper avg tokens']):,}",
                  f"{float(r['paper multiplier']):.1f}x"] for s, r in p.iterrows()]
        tab = ax2.table(cellText=cells, colLabels=["method", "accuracy\n%", "avg\ntokens", "x\nsingle"],
                        loc="upper center", cellLoc="center", colLoc="center", bbox=[0.0, 0.35, 1.0, 0.55],
                        colWidths=[0.36, 0.24, 0.22, 0.18])
        tab.auto_set_font_size(False)
        tab.set_fontsize(11)
        for (row, col), cell in tab.get_celld().items():
            if row == 0:
                cell.set_text_props(fontweight="bold")
            elif col == 0:
                cell.get_text().set_color(style(list(p.index)[row - 1])["color"])
                cell.set_text_props(fontweight="bold")
        ax2.set_title(f"The paper, Table 1:\n{paper.attrs.get('row', '')}\n(a strong model, another scale:\n"
                      "a table, not points)", fontsize="medium")
    fig.tight_layout()
    for text, spots, kw in notes:  # now that the layout is final
        place_label(ax, text, spots, **kw)
    return fig


# ---------------------------------------------------------------------------------------------
# the chapter's sentences, built from computed numbers
# ---------------------------------------------------------------------------------------------


def run_overview(runs: Mapping[str, Any]) -> pd.DataFrame:
    """One row per loaded run: its label, problems, calls (all recorded), model, and the thresholds
    it ran with where they matter (LASE+MV, shuffled LASE and DOWN stop at their own)."""
    rows = []
    for s, r in runs.items():
        c = r.manifest.get("config", {})
        rows.append({"strategy": s, "method": label(s, c), "problems": len(r.problems), "calls": len(r.calls),
                     "model": f"{r.manifest.get('backend')}:{r.manifest.get('model')}",
                     "run thresholds": f"({c.get('tau_lp')}, {c.get('tau_h')})"
                     if s in SPECS and SPECS[s].keeps_run_thresholds else ""})
    return pd.DataFrame(rows)


def calls_per_problem(calls: pd.DataFrame) -> float:
    """Mean model calls per problem that a run made for its answer (``used`` calls only)."""
    c = calls[calls["used"].astype(bool)] if "used" in calls else calls
    return float(c.groupby("problem_id").size().mean()) if len(c) else float("nan")


def describe_matched(matched: pd.DataFrame, mv: pd.DataFrame, grid: pd.DataFrame) -> str:
    """The compute-matched view in words, from :func:`compute_matched`, :func:`mv_curve` and a sweep."""
    fits = matched.dropna(subset=["lase_accuracy"])
    single = fits[fits["lase_is_single"].astype(bool)]
    ok = fits[~fits["lase_is_single"].astype(bool)]
    ahead = int((ok["lase_accuracy"] > ok["mv_accuracy"]).sum())
    behind = int((ok["lase_accuracy"] < ok["mv_accuracy"]).sum())
    lmv = reference.LASE_MV
    paper = lmv.set_index("method")
    solo = (f" At {len(single)} budget{'s' if len(single) != 1 else ''} (k = "
            f"{', '.join(str(int(k)) for k in single['k'])}) the best pick escalates no problem: there LASE "
            f"is the single agent, so those rows compare MV with one sample, not with debate."
            if len(single) else "")
    head = (f"At the {len(ok)} MV budgets where the best LASE pick actually escalates, it is ahead of MV(k) at "
            f"{ahead}, behind at {behind} and level at {len(ok) - ahead - behind}." if len(ok) else
            "At no MV budget does the best LASE pick escalate anything.")
    return (f"**What it shows.** {head}{solo} One MV sample "
            f"costs about {mv['avg_tokens'].iloc[0]:.0f} tokens, {mv['avg_tokens'].iloc[-1]:.0f} for all "
            f"{int(mv['k'].iloc[-1])}; MV's accuracy goes from {pct(mv['accuracy'].iloc[0], 1)} (k = 1) to "
            f"{pct(mv['accuracy'].iloc[-1], 1)} (k = {int(mv['k'].iloc[-1])}). MV(1) is one sample at MV's "
            f"temperature ({_DEFAULT_TEMPERATURE:g}), not the greedy single agent, so the two need not "
            f"agree; the vote has to win back what sampling loses. LASE's thresholds span "
            f"{grid['avg_tokens'].min():.0f} to {grid['avg_tokens'].max():.0f} tokens and "
            f"{pct(grid['accuracy'].min(), 1)} to {pct(grid['accuracy'].max(), 1)}. The paper's equal-budget comparison "
            f"is LASE+MV(5) vs MV(7) ({lmv.attrs['model']}, {lmv.attrs['dataset']}): "
            f"{paper.loc['lase+mv', 'accuracy']:.1f}% at {paper.loc['lase+mv', 'avg_tokens']} tokens vs "
            f"{paper.loc['mv', 'accuracy']:.1f}% at {paper.loc['mv', 'avg_tokens']}.")




# ---------------------------------------------------------------------------------------------
# several models side by side
# ---------------------------------------------------------------------------------------------


def comparison_by_model(tables_by_model: Mapping[str, Mapping[str, pd.DataFrame]], ratio: float = 0.8) -> pd.DataFrame:
    """:func:`lase_nb.tables.comparison_table` per model (on its common problems, the strategies of
    :func:`lase_nb.tables.split_by_coverage`'s main group), stacked: columns ``model``, ``strategy``, then the
    table's (n, accuracy with its Wilson interval, tokens, McNemar wins/losses/p vs single and MV).
    ``attrs["short"]`` lists per model the strategies left out for covering too few problems."""
    parts, short = [], {}
    for name, tables in tables_by_model.items():
        main, short[name] = split_by_coverage(tables, ratio)
        t = comparison_table({s: tables[s] for s in main}).reset_index()
        parts.append(t.assign(model=name))
    out = pd.concat(parts, ignore_index=True)
    out = out[["model", "strategy"] + [c for c in out.columns if c not in ("model", "strategy")]]
    out.attrs["short"] = short
    return out


def comparison_display_by_model(table: pd.DataFrame,
                                configs: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None) -> pd.DataFrame:
    """:func:`comparison_display` of each model's rows of :func:`comparison_by_model`, with a
    ``model`` column first; ``configs`` maps a model to its runs' configs (for the labels)."""
    parts = []
    for name, g in table.groupby("model", sort=False):
        shown = comparison_display(g.drop(columns="model").set_index("strategy"), None, (configs or {}).get(name))
        parts.append(shown.reset_index().assign(model=name))
    out = pd.concat(parts, ignore_index=True)
    return out[["model"] + [c for c in out.columns if c != "model"]]


def plot_accuracy_vs_tokens_by_model(table: pd.DataFrame, labels: Mapping[str, str] | None = None,
                                     not_comparable: Mapping[str, Iterable[str]] | None = None):
    """Accuracy % against average tokens, one panel per model of :func:`comparison_by_model` on shared
    axes (two panels a row, 10 inches wide), drawn as :func:`plot_accuracy_vs_tokens` draws its panel
    (95% Wilson intervals). ``not_comparable`` maps a model to the strategies whose runs are not
    comparable on it (e.g. :func:`lase_nb.tables.off_format` of its runs: baselines whose follow-ups
    the model was never trained for): they are drawn hollow on dotted intervals, and the panel says so."""
    import math

    import matplotlib.pyplot as plt

    not_comparable = {m: set(v) for m, v in (not_comparable or {}).items()}
    groups = list(table.groupby("model", sort=False))
    ncols = 1 if len(groups) == 1 else 2
    nrows = math.ceil(len(groups) / ncols)
    spare = nrows * ncols > len(groups)
    fig, axes = plt.subplots(nrows, ncols, figsize=(10, 4.3 * nrows + (0 if spare else 1.3)), squeeze=False,
                             sharex=True, sharey=True, layout="constrained")
    flat = list(axes.ravel())
    xs, tops = [], []
    notes: list[list[Note]] = []
    for ax, (name, g) in zip(flat, groups):
        off = not_comparable.get(name, set()) & set(g["strategy"])
        x, top, n = _draw_accuracy_tokens(ax, g.set_index("strategy"), labels=labels, hollow=off)
        xs.append(x)
        tops.append(top)
        notes.append(n)
        ax.set_title(f"{name} ({int(g['n'].iloc[0])} problems)", fontsize="medium")
        if off:
            names = ", ".join(labels.get(s, label(s)) if labels else label(s) for s in g["strategy"] if s in off)
            ax.text(0.98, 0.97, f"hollow: not comparable here\n({names})", transform=ax.transAxes, ha="right",
                    va="top", fontsize=9, color="0.3", bbox=dict(boxstyle="round,pad=0.25", fc="white", ec="0.7"))
    for ax in flat[:len(groups)]:
        ax.set(**_limits(np.concatenate(xs), max(tops)))
    for row in axes:
        row[0].set_ylabel("accuracy %")
    for ax in flat[len(groups):]:
        ax.axis("off")
    for ax in flat[:len(groups)]:  # every panel its own tick labels (shared axes hide them above a panel)
        ax.xaxis.set_tick_params(labelbottom=True)
    for ax in flat[len(groups) - ncols:len(groups)]:
        ax.set_xlabel("average tokens per problem (log scale)")
    handles: dict[str, Any] = {}
    for ax in flat[:len(groups)]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    if any(not_comparable.get(name, set()) & set(g["strategy"]) for name, g in groups):
        handles["hollow, dotted: not comparable on\nthat model (off its training)"] = plt.Line2D(
            [], [], marker="o", ls=":", color="0.4", mfc="white", mew=1.8, ms=9)
    if spare:
        flat[-1].legend(list(handles.values()), list(handles), fontsize=10, loc="center", frameon=False)
    else:
        fig.legend(list(handles.values()), list(handles), fontsize=10, loc="outside lower center", ncol=3,
                   frameon=False)
    fig.suptitle("Every strategy, by model (bars: 95% Wilson intervals)", fontweight="bold")
    fig.canvas.draw()  # the layout is final: the labels can be placed
    for ax, panel_notes in zip(flat, notes):
        for text, spots, kw in panel_notes:
            place_label(ax, text, spots, **kw)
    return fig


# ---------------------------------------------------------------------------------------------
# the aim: gated LASE above the leader alone, cheaply, and near MV(7) at a fraction of its tokens
# ---------------------------------------------------------------------------------------------


def aim_check(chains: Chains, mv: pd.DataFrame | None, tau_lp: float, tau_h: float, budget: float = 1.5,
              mv_gap: float = MARGIN, mv_share: float = 1 / 3, seed: int = 0, n_boot: int = PAIRED_N_BOOT) -> pd.DataFrame:
    """The paper's headline tested on one model, at two operating points of gated LASE (replayed):

    - ``recorded``: (tau_lp, tau_h), fixed before the recording, on every problem;
    - ``budget``: the most accurate pair costing at most ``budget`` times the leader alone
      (:func:`lase_nb.replay.gate_for_budget`) chosen on half A of a random split of the problems
      (:func:`lase_nb.replay.split_halves`, ``seed``) and scored on half B only.

    Each row pairs LASE with the leader alone (stage 0 of the same chains) on its ``n`` problems:
    accuracies, the gain with a paired bootstrap CI and exact McNemar p, tokens per problem (prompt
    + completion) and their ratio; and with ``mv`` (an MV run's problems table, or None) on the
    ``n_mv`` of them MV also answered: LASE - MV with its CI and LASE's share of MV's tokens. The
    criteria: ``beats_single`` (the gain's CI above zero), ``within_budget`` (at most ``budget`` x
    the leader's tokens), ``near_mv`` (the CI of LASE - MV rules out more than ``mv_gap`` below MV,
    :func:`within_margin`, the rule chapter 07 judges "matches or beats" by), ``cheap_vs_mv`` (at most
    ``mv_share`` of MV's tokens); ``aim_met`` is all four.
    """
    ids = np.asarray(chains.problem_ids, dtype=object)
    if len(ids) < 2:
        raise DataError("the aim needs at least two problems (one per half of the split)")
    mv_by_id = mv.set_index("problem_id") if mv is not None else None
    half_a, half_b = split_halves(ids, seed)
    pick = gate_for_budget(chains.subset(half_a), budget)
    points = [("recorded", float(tau_lp), float(tau_h), "fixed before the recording", np.ones(len(ids), bool)),
              ("budget", float(pick["tau_lp"]), float(pick["tau_h"]),
               f"half A ({int(half_a.sum())} problems), at most {budget:g}x the leader's tokens there", half_b)]
    rows = []
    for point, tl, th, chosen, mask in points:
        sub = chains.subset(mask)
        lase = replay(sub, tl, th)
        ok_lase, ok_solo = lase["correct"].to_numpy(bool), sub.correct[:, 0].astype(bool)
        gain = paired_test(ok_lase, ok_solo, n_boot=n_boot, seed=seed)
        tok_lase, tok_solo = lase["total_tokens"].to_numpy(float), sub.total_tokens[:, 0].astype(float)
        row = {"point": point, "tau_lp": tl, "tau_h": th, "chosen on": chosen, "n": int(mask.sum()),
               "escalated": float((lase["stop_stage"] > 0).mean()), "acc_single": gain["acc_b"],
               "acc_lase": gain["acc_a"], "gain": gain["diff"], "gain_lo": gain["diff_lo"],
               "gain_hi": gain["diff_hi"], "p_vs_single": gain["p_value"], "tokens_single": tok_solo.mean(),
               "tokens_lase": tok_lase.mean(), "x_single": tok_lase.mean() / tok_solo.mean()}
        if mv_by_id is not None:
            both = lase["problem_id"].isin(mv_by_id.index).to_numpy()
            m = mv_by_id.loc[lase.loc[both, "problem_id"]]
            vs_mv = paired_test(ok_lase[both], m["correct"].to_numpy(bool), n_boot=n_boot, seed=seed)
            row.update(n_mv=int(both.sum()), acc_lase_mv=vs_mv["acc_a"], acc_mv=vs_mv["acc_b"],
                       lase_minus_mv=vs_mv["diff"], lase_minus_mv_lo=vs_mv["diff_lo"],
                       lase_minus_mv_hi=vs_mv["diff_hi"], tokens_mv=float(m["total_tokens"].mean()),
                       share_of_mv=float(tok_lase[both].mean() / m["total_tokens"].mean()))
        row["beats_single"] = bool(gain["diff_lo"] > 0)
        row["within_budget"] = bool(row["x_single"] <= budget)
        row["near_mv"] = within_margin(row.get("lase_minus_mv_lo", np.nan), margin=mv_gap)
        row["cheap_vs_mv"] = bool(row.get("share_of_mv", np.nan) <= mv_share)
        row["aim_met"] = row["beats_single"] and row["within_budget"] and row["near_mv"] and row["cheap_vs_mv"]
        rows.append(row)
    out = pd.DataFrame(rows).set_index("point")
    out.attrs.update(budget=budget, mv_gap=mv_gap, mv_share=mv_share, seed=seed)
    return out


def aim_display(check: pd.DataFrame) -> pd.DataFrame:
    """:func:`aim_check` for reading: percents with intervals, multiples, yes/no per criterion, and the
    paper's multiples (Table 1's averages over its data sets) as a labelled reference row."""
    yn = lambda b: "yes" if b else "no"  # noqa: E731
    a = check.attrs
    rows = {}
    for point, r in check.iterrows():
        rows[point] = {
            "thresholds (tau_lp, tau_h)": f"({r['tau_lp']:.3g}, {r['tau_h']:.3g})", "chosen on": r["chosen on"],
            "problems": int(r["n"]), "escalated %": f"{100 * r['escalated']:.0f}",
            "leader alone %": f"{100 * r['acc_single']:.1f}", "LASE %": f"{100 * r['acc_lase']:.1f}",
            "gain, points [95% CI]": f"{points(r['gain'])} [{points(r['gain_lo'])}, {points(r['gain_hi'])}]",
            "x leader's tokens": f"{r['x_single']:.2f}",
            "problems MV also answered": int(r["n_mv"]) if "n_mv" in r else 0,
            "LASE % on them": f"{100 * r['acc_lase_mv']:.1f}" if "acc_mv" in r else "",
            "MV(7) %": f"{100 * r['acc_mv']:.1f}" if "acc_mv" in r else "not recorded",
            "LASE - MV, points [95% CI]": (f"{points(r['lase_minus_mv'])} [{points(r['lase_minus_mv_lo'])}, "
                                           f"{points(r['lase_minus_mv_hi'])}]") if "acc_mv" in r else "",
            "share of MV's tokens": f"{r['share_of_mv']:.2f}" if "share_of_mv" in r else "",
            "above the leader (CI > 0)": yn(r["beats_single"]),
            f"<= {a.get('budget', 1.5):g}x the leader": yn(r["within_budget"]),
            f"no more than {100 * a.get('mv_gap', MARGIN):.0f} points below MV (95% CI)": yn(r["near_mv"]),
            f"<= {a.get('mv_share', 1 / 3):.2f} of MV's tokens": yn(r["cheap_vs_mv"]),
            "aim met": yn(r["aim_met"])}
    mult = reference.TOKEN_MULTIPLIERS.set_index("method")["token_multiplier"]
    rows["paper (Table 1, average over data sets)"] = {
        "x leader's tokens": f"{mult['lase']:g}", "share of MV's tokens": f"{mult['lase'] / mult['mv']:.2f}",
        "chosen on": reference.SOURCE.split(",")[0]}
    return pd.DataFrame(rows).T.fillna("")


def describe_down(manifest: Mapping[str, Any]) -> str:
    """DOWN's threshold as its recording chose it (the manifest's ``down_threshold``), and what it
    means for its row: at theta = 0 DOWN never debates, so its row is the single agent's."""
    d = manifest.get("down_threshold") or {}
    theta = d.get("theta")
    if theta is None:
        return "DOWN's threshold is not in its manifest."
    out = (f"DOWN's threshold theta = {theta:.3g} was chosen on {d.get('calibration_n', '?')} calibration problems "
           f"(seed {d.get('calibration_seed', '?')}, none of them evaluated): the best accuracy there, ties to fewer debates.")
    if theta <= 0:
        out += (" At theta = 0 every first answer is accepted (its confidence score is above 0), so DOWN never "
                "debates on this model and its row is the single agent's: debating never helped on the calibration problems.")
    return out


def _calls(calls: pd.DataFrame) -> tuple[float, float]:
    """Model calls per problem a run used for its answer: all of them, and those of the extraction step."""
    c = calls[calls["used"].astype(bool)] if "used" in calls else calls
    n = c["problem_id"].nunique()
    if not n:
        return float("nan"), float("nan")
    return len(c) / n, float((c["role"] == "extract").sum()) / n if "role" in c else 0.0


def _down_theta(config: Mapping[str, Any] | None) -> float | None:
    """DOWN's threshold from its run's config or manifest entry (a number, or a dict with ``theta``)."""
    d = (config or {}).get("down_threshold")
    d = d.get("theta") if isinstance(d, Mapping) else d
    return float(d) if isinstance(d, (int, float)) else None


def describe_mad_cost(table: pd.DataFrame, calls: Mapping[str, pd.DataFrame] | None = None) -> str:
    """MAD's rounds and its cost against MV's, ours beside the paper's (Table 1's average token
    multipliers), from a :func:`lase_nb.tables.comparison_table` with ``mad`` and ``mv`` rows;
    ``calls``: the two runs' calls tables, whose measured calls per problem (extraction calls
    included, counted apart) are set beside the design's 6 and 7."""
    if not {"mad", "mv"} <= set(table.index):
        return ""
    mult = reference.TOKEN_MULTIPLIERS.set_index("method")["token_multiplier"]
    paper = float(mult["mad"] / mult["mv"])
    ours = float(table.loc["mad", "avg_tokens"] / table.loc["mv", "avg_tokens"])
    measured = ""
    if calls and {"mad", "mv"} <= set(calls):
        (mad_all, mad_x), (mv_all, mv_x) = _calls(calls["mad"]), _calls(calls["mv"])
        measured = (f"; measured here {mad_all:.1f} and {mv_all:.1f} calls per problem, of which {mad_x:.1f} and "
                    f"{mv_x:.1f} are the extraction step's, for answers without a box of their own")
    return (f"MAD is Du et al.'s 3 agents x 2 rounds: the independent answers, then one round in which each agent "
            f"reads the other two (by design 6 calls, against MV(7)'s 7{measured}). It still costs more tokens than MV because each "
            f"second-round prompt holds two other answers: {ours:.1f}x MV's tokens here, {paper:.1f}x in the paper "
            f"({mult['mad']:g}x vs {mult['mv']:g}x the single agent). The ratio grows with the length of the "
            f"answers each agent reads.")


def describe_comparison(tables: Mapping[str, pd.DataFrame], table: pd.DataFrame,
                        configs: Mapping[str, Any] | None = None, seed: int = 0) -> str:
    """What the comparison shows, one line per strategy of ``table`` (:func:`lase_nb.tables.main_comparison`) against
    the single agent on the problems both ran: the paired accuracy difference with its interval and
    exact p in words (:func:`lase_nb.tables.gain_words`: above, below, not shown, or too few problems
    to say), and its token multiple (prompt + completion) from ``table``."""
    from ..tables import gain_words
    from ..stats import paired_test

    if "single" not in table.index:
        return "No single-agent run (or stage 0 of a full chain) to compare with."
    lines = []
    for s in table.index:
        if s == "single":
            continue
        pair = paired_correct(tables, s, "single")
        if pair is None:
            continue
        theta = _down_theta((configs or {}).get(s)) if s == "down" else None
        if theta is not None and theta <= 0:
            lines.append(f"- **{label(s, (configs or {}).get(s))}**: at theta = {theta:g} DOWN never debates, so its "
                         f"answers are the single agent's first answers by construction: no test, no verdict "
                         f"({int((pair[0] != pair[1]).sum())} of {len(pair[0])} answers differ); "
                         f"{table.loc[s, 'token_multiplier']:.1f}x its tokens.")
            continue
        t = paired_test(*pair, seed=seed)
        lines.append(f"- **{label(s, (configs or {}).get(s))}**: " +
                     gain_words(t["diff"], t["diff_lo"], t["diff_hi"], t["p_value"], t["n"], t["b"] + t["c"],
                                what="the single agent") +
                     f"; {table.loc[s, 'token_multiplier']:.1f}x its tokens.")
    return "Each strategy against the single agent (paired, on the problems both ran):\n\n" + "\n".join(lines)
