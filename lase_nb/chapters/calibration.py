"""Chapter 02 (notebooks/02_calibration): do exp(LP_min) and H_max predict errors?

The chapter's logic, as pure functions on tidy tables:

- :func:`confidence_frame` turns a recorded run (or live results) into one row per leader answer
  with ``p_min = exp(LP_min)``, ``h_max`` and ``correct``;
- :func:`default_bins` builds reliability bins that contain the paper's cut points (from
  :data:`lase_nb.reference.CALIBRATION`) and the gate threshold;
- :func:`paper_conditions` measures our accuracy under each of the paper's conditions;
- :func:`proxy_scores` gives AUROC (with a bootstrap CI) and ECE per proxy;
- :func:`entropy_estimates` / :func:`entropy_summary` compare the exact full-vocabulary entropy a
  local model gives with the top-k + residual estimate an API allows;
- :func:`plot_reliability` and :func:`plot_entropy_estimate` draw the two figures;
- several models side by side (:func:`lase_nb.runs.load_models`): :func:`frames_by_model`,
  :func:`calibration_by_model`, :func:`plot_reliability_by_model`, :func:`describe_calibration_by_model`.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .. import reference
from ..confidence import confidence_frame, gate_split, topk_entropy, uncertain_mask
from ..errors import DataError
from ..plots import MAX_WIDTH_IN, NEUTRAL_DARK, NEUTRAL_LIGHT, PAPER_COLOR
from ..stats import AUROC_N_BOOT, MIN_CLASS, NO_ANSWER, auroc_difference, auroc_test, auroc_with_ci, ece, p_text, proportions_test, reliability_table, wilson_interval
from ..types import Generation

__all__ = [
    "PROXIES",
    "default_bins",
    "reliability",
    "paper_conditions",
    "proxy_scores",
    "is_monotone",
    "entropy_estimates",
    "answer_entropies",
    "entropy_summary",
    "plot_reliability",
    "plot_entropy_estimate",
    "describe_entropy",
    "frames_by_model",
    "calibration_by_model",
    "plot_reliability_by_model",
    "describe_calibration_by_model",
    "auroc_gap",
    "describe_reliability",
]

#: The two proxies: column, label for plots, and whether a higher value means "more confident".
PROXIES: dict[str, tuple[str, bool]] = {
    "p_min": ("exp(LP_min): lowest answer-token probability", True),
    "h_max": ("H_max: highest answer-token entropy (nats)", False),
}

#: Base bin edges; the paper's cut points and the gate threshold are added by :func:`default_bins`.
_BASE_EDGES: dict[str, tuple[float, ...]] = {
    "p_min": (0.0, 0.9, 0.95, 1.0),
    "h_max": (0.0, 0.1, 0.25, math.inf),
}

_OPS = {">=": operator.ge, ">": operator.gt, "<": operator.lt, "<=": operator.le}


# ---------------------------------------------------------------------------------------------
# one row per leader answer


# ---------------------------------------------------------------------------------------------
# bins, reliability, the paper's conditions


def paper_cuts(proxy: str) -> list[float]:
    """The thresholds at which the paper reported accuracy for ``proxy`` (from reference.CALIBRATION)."""
    cal = reference.CALIBRATION
    return sorted(float(t) for t in cal.loc[cal["proxy"] == proxy, "threshold"])


def default_bins(proxy: str, tau: float | None = None) -> list[float]:
    """Reliability bin edges for ``proxy`` ("p_min" or "h_max"): a few base edges, every cut point
    of the paper, and the gate threshold ``tau`` (so the gate falls on a bin edge)."""
    if proxy not in _BASE_EDGES:
        raise ValueError(f"proxy must be one of {list(_BASE_EDGES)}; got {proxy!r}")
    edges = set(_BASE_EDGES[proxy]) | set(paper_cuts(proxy))
    lo, hi = min(_BASE_EDGES[proxy]), max(_BASE_EDGES[proxy])
    if tau is not None and lo < tau < hi:
        edges.add(float(tau))
    return sorted(edges)


def reliability(frame: pd.DataFrame, proxy: str, bins: Sequence[float] | None = None,
                tau: float | None = None) -> pd.DataFrame:
    """:func:`lase_nb.stats.reliability_table` of one proxy over a :func:`confidence_frame`."""
    higher = PROXIES[proxy][1]
    return reliability_table(frame[proxy].to_numpy(float), frame["correct"].to_numpy(bool),
                             bins if bins is not None else default_bins(proxy, tau), higher_is_confident=higher)


def is_monotone(table: pd.DataFrame, min_count: int = 1) -> bool:
    """Whether accuracy never falls from a less to a more confident bin (bins with >= ``min_count``
    answers; the "no answer" row is ignored): the paper's Assumption 3.3, read literally."""
    t = table[(table["bin"] != NO_ANSWER) & (table["count"] >= min_count)]
    acc = t["accuracy"].to_numpy(float)
    return bool(np.all(np.diff(acc) >= 0))


def paper_conditions(frame: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Our accuracy under each condition of the paper's calibration table, beside the paper's value.

    Only answered rows are tested against a condition (an unextracted answer has no confidence).
    Columns: condition, n, share (of answered), accuracy, ci_lo, ci_hi, paper_accuracy (fraction).
    """
    answered = frame[frame["answered"]]
    rows = []
    for _, c in reference.CALIBRATION.iterrows():
        m = _OPS[c["op"]](answered[c["proxy"]].to_numpy(float), float(c["threshold"]))
        n, k = int(m.sum()), int(answered["correct"].to_numpy(bool)[m].sum())
        lo, hi = wilson_interval(k, n, level)
        rows.append({"condition": c["condition"], "n": n, "share": n / len(answered) if len(answered) else np.nan,
                     "accuracy": k / n if n else np.nan, "ci_lo": lo, "ci_hi": hi,
                     "paper_accuracy": c["accuracy"] / 100.0})
    out = pd.DataFrame(rows)
    out.attrs["source"] = reference.CALIBRATION.attrs.get("source", "")
    return out




def proxy_scores(frame: pd.DataFrame, tau_lp: float, tau_h: float, n_boot: int = AUROC_N_BOOT, seed: int = 0) -> pd.DataFrame:
    """How well each proxy flags errors: AUROC with a bootstrap CI, and ECE.

    Rows: exp(LP_min), H_max and the gate U itself (a yes/no score). ``auroc`` is computed on
    answered rows only (the honest calibration question); ``auroc_with_unanswered`` counts a
    missing answer as the most uncertain (what the gate does), which is easy credit because such
    answers are always wrong. ECE needs a probability: exp(LP_min) is one; for H_max we use the
    monotone map exp(-H_max), which is *not* a probability, so that ECE is indicative only
    (``ece_of`` says what was scored). 0.5 = no information, 1.0 = every error ranked above
    every right answer.
    """
    ans = frame[frame["answered"]]
    ok_a, ok = ans["correct"].to_numpy(bool), frame["correct"].to_numpy(bool)
    u_all = uncertain_mask(frame["p_min"].to_numpy(float), frame["h_max"].to_numpy(float), tau_lp, tau_h)
    u_ans = u_all[frame["answered"].to_numpy(bool)]
    specs = [
        ("exp(LP_min)", -ans["p_min"].to_numpy(float), -frame["p_min"].to_numpy(float),
         ans["p_min"].to_numpy(float), "exp(LP_min)"),
        ("H_max", ans["h_max"].to_numpy(float), frame["h_max"].to_numpy(float),
         np.exp(-ans["h_max"].to_numpy(float)), "exp(-H_max) (not a probability)"),
        (f"gate U (tau_lp={tau_lp:g}, tau_h={tau_h:g})", u_ans.astype(float), u_all.astype(float),
         None, ""),
    ]
    rows = []
    for name, s_ans, s_all, prob, ece_of in specs:
        t = auroc_test(s_ans, ok_a, n_boot=n_boot, seed=seed)
        auc_all, _, _ = auroc_with_ci(s_all, ok, n_boot=10, seed=seed, nan="worst")
        rows.append({"proxy": name, "n_answered": len(ans), "errors_answered": int((~ok_a).sum()),
                     "auroc": t["auroc"], "auroc_lo": t["lo"], "auroc_hi": t["hi"], "p_value": t["p_value"],
                     "auroc_with_unanswered": auc_all,
                     "ece": ece(prob, ok_a) if prob is not None else np.nan, "ece_of": ece_of})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# exact entropy vs the top-k + residual estimate


def _topk_estimate(tok: Any, k: int) -> tuple[float, float, int]:
    """(estimate, covered mass, k used) from the first ``k`` alternatives of one token.

    Like an API response: the top-k log-probs, plus the chosen token's own when it is not among
    them (a sampled token can be), then one residual bucket (:func:`topk_entropy`).
    """
    top = list(tok.top[:k])
    lps = [lp for _, lp in top]
    if tok.token not in {t for t, _ in top}:
        lps.append(tok.logprob)
    covered = float(min(1.0, math.fsum(math.exp(min(lp, 0.0)) for lp in lps)))
    return topk_entropy(lps), covered, len(top)


def entropy_estimates(gens: Sequence[Generation], kind: str, k: int = 20, answer_only: bool = True,
                      problem_ids: Sequence[str] | None = None) -> pd.DataFrame:
    """Per token: the exact entropy (from the backend) and its top-``k`` + residual estimate.

    Columns: item (index into ``gens``), problem_id, position, token, is_answer, p (chosen
    token's probability), exact (NaN when the backend gave no exact entropy, e.g. an API), estimate,
    error (estimate - exact; never positive, since one residual bucket is a lower bound),
    covered (probability mass of the top-k), k, k_used. With ``answer_only`` only the tokens of
    the extracted answer are kept (the ones the gate looks at); generations without an
    extracted answer then contribute nothing.
    """
    from ..answers import extract_answer
    from ..confidence import answer_token_indices

    if k < 1:
        raise ValueError(f"k must be >= 1; got {k}")
    rows = []
    for i, g in enumerate(gens):
        if not g.tokens:
            continue
        ex = extract_answer(g.text, kind)
        ans_idx = set(answer_token_indices(g, ex.span)) if ex is not None else set()
        for j, tok in enumerate(g.tokens):
            if answer_only and j not in ans_idx:
                continue
            est, covered, used = _topk_estimate(tok, k)
            exact = float(tok.entropy) if tok.entropy is not None else np.nan
            rows.append({"item": i, "problem_id": problem_ids[i] if problem_ids is not None else str(i),
                         "position": j, "token": tok.token, "is_answer": j in ans_idx,
                         "p": math.exp(tok.logprob), "exact": exact, "estimate": est,
                         "error": est - exact, "covered": covered, "k": k, "k_used": used})
    cols = ["item", "problem_id", "position", "token", "is_answer", "p", "exact", "estimate", "error",
            "covered", "k", "k_used"]
    return pd.DataFrame(rows, columns=cols)


def answer_entropies(tokens: pd.DataFrame) -> pd.DataFrame:
    """H_max per answer (max over its answer tokens), exact and estimated, for each k."""
    a = tokens[tokens["is_answer"]]
    return (a.groupby(["k", "item", "problem_id"], as_index=False)
             .agg(h_max_exact=("exact", "max"), h_max_estimate=("estimate", "max"),
                  n_tokens=("exact", "size")))


def entropy_summary(tokens: pd.DataFrame, tau_h: float) -> pd.DataFrame:
    """Per k: how far the estimate is from the exact entropy, per token and per answer (H_max).

    Columns: k, tokens, mean_abs_error, max_abs_error, mean_covered (top-k mass), answers,
    h_max_mean_abs_error, h_max_max_abs_error, gate_flips (answers whose entropy side of
    ``tau_h`` differs between exact and estimate), gate_flip_rate.
    """
    rows = []
    for k, t in tokens.groupby("k", sort=True):
        t = t[t["exact"].notna()]
        a = answer_entropies(t)
        flips = int(((a["h_max_exact"] > tau_h) != (a["h_max_estimate"] > tau_h)).sum())
        d = (a["h_max_estimate"] - a["h_max_exact"]).abs()
        rows.append({"k": int(k), "tokens": len(t), "mean_abs_error": t["error"].abs().mean(),
                     "max_abs_error": t["error"].abs().max(), "mean_covered": t["covered"].mean(),
                     "answers": len(a), "h_max_mean_abs_error": d.mean(), "h_max_max_abs_error": d.max(),
                     "gate_flips": flips, "gate_flip_rate": flips / len(a) if len(a) else np.nan})
    return pd.DataFrame(rows, columns=_SUMMARY_COLUMNS)  # no answer token (a model that never boxes): no rows


_SUMMARY_COLUMNS = ["k", "tokens", "mean_abs_error", "max_abs_error", "mean_covered", "answers",
                    "h_max_mean_abs_error", "h_max_max_abs_error", "gate_flips", "gate_flip_rate"]


# ---------------------------------------------------------------------------------------------
# figures


def _covered_bins(table: pd.DataFrame, op: str, thr: float) -> list[int]:
    """Positions of the bins lying entirely inside the paper's condition ``value <op> thr``."""
    out = []
    for i, r in enumerate(table.itertuples()):
        if r.bin == NO_ANSWER:
            continue
        if op in (">=", ">") and r.lo >= thr:
            out.append(i)
        elif op in ("<", "<=") and r.hi <= thr:
            out.append(i)
    return out


#: The reliability figure's size (inches): its two panels one above the other, each the full width
#: of the size rule, so that a bin's label reads at a projector (:data:`lase_nb.plots.MAX_WIDTH_IN`).
RELIABILITY_SIZE = (MAX_WIDTH_IN, 10.5)
#: Top of the accuracy axis: accuracies and intervals end at 1, the paper's labels and the gate's
#: name sit in the strip above it, clear of every bar and point.
_ACC_TOP = 1.32


def _reliability_panel(ax, table: pd.DataFrame, proxy: str, tau: float | None) -> list:
    """One reliability panel; returns legend handles (bars, accuracy, paper, gate, no answer)."""
    from matplotlib.lines import Line2D

    x = np.arange(len(table))
    na = (table["bin"] == NO_ANSWER).to_numpy()
    # neutral greys and black: a strategy's colour would say the bins belong to it (plots.MEANINGS)
    bars = ax.bar(x, table["count"], color=np.where(na, "0.45", NEUTRAL_LIGHT), alpha=0.6, width=0.8,
                  label="answers in bin (left axis)")
    ax.set_ylabel("answers in bin")
    ax.set_xticks(x, [f"{b.replace(', ', ',')}\nn={int(c)}" for b, c in zip(table["bin"], table["count"])],
                  fontsize="small")
    ax.set_xlabel(PROXIES[proxy][0] + "  (left = less confident)")
    cmax = max(1, table["count"].max())
    ax.set_ylim(0, cmax * (_ACC_TOP + 0.02) / 1.02)  # the tallest bar reaches accuracy 1, under the label strip
    ax.set_yticks([t for t in ax.get_yticks() if 0 <= t <= cmax])
    ax2 = ax.twinx()
    ax2.grid(False)
    acc = table["accuracy"].to_numpy(float)
    lo = acc - table["ci_lo"].to_numpy(float)
    hi = table["ci_hi"].to_numpy(float) - acc
    keep = ~na & (table["count"].to_numpy() > 0)
    line = ax2.errorbar(x[keep], acc[keep], yerr=[lo[keep], hi[keep]], color=NEUTRAL_DARK, marker="o", lw=2.5,
                        capsize=5, label="accuracy in bin, 95% interval (right axis)")
    handles = [bars, line]
    if na.any() and table.loc[na, "count"].iloc[0] > 0:
        handles.append(ax2.plot(x[na], acc[na], "s", color="0.35", ms=8,
                                label="no boxed answer (always counted wrong)")[0])
    cal = reference.CALIBRATION
    for _, c in cal[cal["proxy"] == proxy].iterrows():
        idx = _covered_bins(table, c["op"], float(c["threshold"]))
        if not idx:
            continue
        y = c["accuracy"] / 100.0
        ax2.hlines(y, min(idx) - 0.4, max(idx) + 0.4, colors=PAPER_COLOR, linestyles="--", lw=3)
        last = len(table) - 1 - int(na.any())
        ha, xa = ("left", min(idx) - 0.4) if min(idx) == 0 else ("right", max(idx) + 0.4) \
            if max(idx) == last else ("center", float(np.mean(idx)))
        ax2.annotate(f"paper {c['accuracy']:.1f}%\n{c['condition']}", (xa, _ACC_TOP), xytext=(0, -3),
                     textcoords="offset points", ha=ha, va="top", color=PAPER_COLOR, fontsize="small",
                     fontweight="bold")  # in the strip above accuracy 1, over the bins the segment covers
    handles.append(Line2D([], [], color=PAPER_COLOR, ls="--", lw=3,
                          label=f"paper's accuracy under its condition ({cal.attrs.get('n_answers', 0):,} answers)"))
    if tau is not None:
        edges = [r.lo for r in table.itertuples() if r.bin != NO_ANSWER]
        if tau in edges:
            pos = edges.index(tau) - 0.5
            ax2.vlines(pos, -0.02, 1.0, color="k", ls=":", lw=1.5)  # not into the label strip
            ax2.annotate(f"{'tau_lp' if proxy == 'p_min' else 'tau_h'} = {tau:g}", (pos, 1.0), xytext=(3, 4),
                         textcoords="offset points", fontsize="small", va="bottom")
            handles.append(Line2D([], [], color="k", ls=":", lw=1.5, label="gate threshold"))
    ax2.set_ylim(-0.02, _ACC_TOP)
    ax2.set_yticks(np.linspace(0, 1, 6))
    ax2.axhline(1.0, color="0.8", lw=0.8)  # the edge of the label strip
    ax2.set_ylabel("accuracy in bin")
    return handles


def plot_reliability(frame: pd.DataFrame, tau_lp: float | None = None, tau_h: float | None = None,
                     p_bins: Sequence[float] | None = None, h_bins: Sequence[float] | None = None,
                     title: str | None = None, fig: Any = None):
    """Reliability plots of exp(LP_min) and H_max: bars = answers per bin, line = accuracy with
    Wilson CIs, the paper's numbers as dashed segments over the bins their condition covers, the
    gate threshold as a dotted line. Returns the figure.

    With ``fig`` (a matplotlib Figure, e.g. one a slider redraws) the plot is drawn into it after
    clearing it, instead of into a new pyplot figure."""
    import textwrap

    if fig is None:
        import matplotlib.pyplot as plt

        fig = plt.figure(figsize=RELIABILITY_SIZE)
    else:
        fig.clear()
    axes = fig.subplots(2, 1)
    tables = {"p_min": reliability(frame, "p_min", p_bins, tau_lp),
              "h_max": reliability(frame, "h_max", h_bins, tau_h)}
    handles: dict[str, Any] = {}
    for ax, (proxy, table), tau in zip(axes, tables.items(), (tau_lp, tau_h)):
        for h in _reliability_panel(ax, table, proxy, tau):
            handles.setdefault(h.get_label(), h)
        ax.set_title(proxy.replace("p_min", "exp(LP_min)").replace("h_max", "H_max") + " vs correctness")
    n, acc = len(frame), frame["correct"].mean()
    fig.suptitle(textwrap.fill(title or f"Reliability of the confidence proxies ({n} answers, accuracy {acc:.0%})",
                               100), fontweight="bold")
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=2, fontsize="small")
    return fig


def plot_entropy_estimate(all_tokens: pd.DataFrame, by_k: pd.DataFrame, tau_h: float, k: int = 20):
    """Left: exact entropy vs the top-``k`` + residual estimate per token (answer tokens highlighted).
    Right: the estimate's mean and max absolute error against k, per token and per answer H_max."""
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(MAX_WIDTH_IN, 5.0))
    t = all_tokens[(all_tokens["k"] == k) & all_tokens["exact"].notna()]
    other, ans = t[~t["is_answer"]], t[t["is_answer"]]
    a1.scatter(other["exact"], other["estimate"], s=10, color="0.7", alpha=0.6, label="reasoning tokens")
    a1.scatter(ans["exact"], ans["estimate"], s=40, color="C3", edgecolor="k", lw=0.5, label="answer tokens")
    top = float(np.nanmax(t["exact"])) * 1.05 if len(t) else 1.0
    a1.plot([0, top], [0, top], "k--", lw=1, label="estimate = exact")
    a1.axvline(tau_h, color="C0", ls=":", lw=1.5)
    a1.axhline(tau_h, color="C0", ls=":", lw=1.5, label=f"gate tau_h = {tau_h:g}")
    a1.set(xlabel="exact full-vocabulary entropy (nats)", ylabel=f"top-{k} + residual estimate (nats)",
           title=f"What an API with top-{k} log-probs would see")
    a1.legend(loc="upper left", fontsize="small")
    tok = all_tokens[all_tokens["exact"].notna()].copy()
    tok["abs"] = tok["error"].abs()
    agg = tok.groupby("k")["abs"].agg(["mean", "max"])
    ans_h = answer_entropies(tok)
    ans_h["abs"] = (ans_h["h_max_estimate"] - ans_h["h_max_exact"]).abs()
    agg_a = ans_h.groupby("k")["abs"].agg(["mean", "max"])
    a2.plot(agg.index, agg["mean"], "o-", color="0.5", label="all tokens: mean")
    a2.plot(agg.index, agg["max"], "o--", color="0.5", label="all tokens: max")
    a2.plot(agg_a.index, agg_a["mean"], "s-", color="C3", label="answer H_max: mean")
    a2.plot(agg_a.index, agg_a["max"], "s--", color="C3", label="answer H_max: max")
    a2.set_xscale("log")
    a2.set_yscale("log")
    a2.set_xticks(list(agg.index), [str(v) for v in agg.index])
    a2.set(xlabel="k (alternatives returned per token)", ylabel="|estimate - exact| (nats)",
           title="Error of the estimate shrinks with k")
    a2.legend(fontsize="small")
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------
# the chapter's sentences, built from computed numbers (no number is typed into the text)


def describe_entropy(summary: pd.DataFrame, tokens: pd.DataFrame, k: int, tau_h: float) -> str:
    """How far the top-k estimate is from the exact entropy, from :func:`entropy_summary`."""
    s = summary.set_index("k")
    at_k, at_1 = s.loc[k], s.iloc[0]
    k1 = int(s.index[0])
    every = tokens[(tokens["k"] == k) & tokens["exact"].notna()]
    gap, unsure = every["error"].abs(), every["exact"] > tau_h
    answers = every["is_answer"].astype(bool)
    where = (f"on the {int(unsure.sum())} tokens where the model hesitates (exact entropy above {tau_h:g} nats) "
             f"the mean gap is {gap[unsure].mean():.2g} nats, on the other {int((~unsure).sum())} "
             f"{gap[~unsure].mean():.2g}" if unsure.any() and (~unsure).any() else
             f"{'every' if unsure.any() else 'none'} of them has an exact entropy above {tau_h:g} nats")
    return (f"**What it shows.** On the {int(at_k['tokens'])} answer tokens the top-{k} estimate is below the "
            f"exact entropy by {at_k['mean_abs_error']:.2g} nats on average and by at most "
            f"{at_k['max_abs_error']:.2g}; the top-{k} alternatives leave {1 - at_k['mean_covered']:.1e} of the "
            f"probability outside on average. On the answers' `H_max` the largest gap is "
            f"{at_k['h_max_max_abs_error']:.2g} nats, and the gate's entropy test (`H_max > {tau_h:g}`) changes its "
            f"verdict on {int(at_k['gate_flips'])} of {int(at_k['answers'])} answers. With only the top {k1} "
            f"alternative{'s' if k1 > 1 else ''} the mean gap grows to {at_1['mean_abs_error']:.2g} nats and the "
            f"gate flips on {int(at_1['gate_flips'])}. Over all {len(every)} generated tokens, reasoning included, "
            f"the largest top-{k} gap is {gap.max():.2g} nats; {where}. Here {int((unsure & answers).sum())} of "
            f"{int(answers.sum())} answer tokens hesitate, too few to say how often answers do: section 2.2 counts "
            f"the recorded answers whose `H_max` is above {tau_h:g}.")


# ---------------------------------------------------------------------------------------------
# several models side by side


def frames_by_model(models: Mapping[str, Any], stage: int = 0) -> dict[str, pd.DataFrame]:
    """A :func:`confidence_frame` per model label, in order. A value is a confidence frame already,
    a :class:`~lase_nb.traces.Run`, or a model's runs by strategy (:func:`lase_nb.runs.load_models`),
    whose full-chain LASE run (``lase``, or ``lase-full`` when loaded by folder name) is read at ``stage``."""
    out = {}
    for name, m in models.items():
        if isinstance(m, Mapping) and not isinstance(m, pd.DataFrame):
            key = next((k for k in ("lase", "lase-full") if k in m), None)
            if key is None:
                raise DataError(f"{name}: no full-chain LASE run ('lase' or 'lase-full') among {list(m)}")
            m = m[key]
        out[name] = m if isinstance(m, pd.DataFrame) and "answered" in m else confidence_frame(m, stage)
    return out


def calibration_by_model(frames: Mapping[str, pd.DataFrame], tau_lp: float, tau_h: float,
                         n_boot: int = AUROC_N_BOOT, seed: int = 0) -> pd.DataFrame:
    """One row per model from :func:`proxy_scores` and :func:`gate_split`: model, n (answers),
    answered, accuracy, escalation_rate (the gate at the thresholds), AUROC for errors with its
    bootstrap CI for exp(LP_min) (``auroc_p_min``, ``_lo``, ``_hi``) and H_max (``auroc_h_max``...),
    and the ECE of exp(LP_min) (``ece``)."""
    rows = []
    for name, f in frames.items():
        s = proxy_scores(f, tau_lp, tau_h, n_boot=n_boot, seed=seed)
        g = gate_split(f, tau_lp, tau_h)
        row = {"model": name, "n": len(f), "answered": int(f["answered"].sum()), "accuracy": g["accuracy"],
               "escalation_rate": g["escalation_rate"]}
        for i, proxy in enumerate(("p_min", "h_max")):
            row.update({f"auroc_{proxy}": s.loc[i, "auroc"], f"auroc_{proxy}_lo": s.loc[i, "auroc_lo"],
                        f"auroc_{proxy}_hi": s.loc[i, "auroc_hi"]})
        row["ece"] = s.loc[0, "ece"]
        row["p_value"] = s.loc[0, "p_value"]
        row["errors"] = int(s.loc[0, "errors_answered"])
        rows.append(row)
    return pd.DataFrame(rows)


def plot_reliability_by_model(frames: Mapping[str, pd.DataFrame], tau_lp: float, tau_h: float,
                              table: pd.DataFrame | None = None, title: str | None = None):
    """Reliability of exp(LP_min), one panel per model on the same bins (:func:`default_bins`), drawn
    as :func:`plot_reliability` draws it; each panel's title gives the model's AUROC for errors with
    its 95% bootstrap CI (from ``table``, :func:`calibration_by_model`, computed when not given)."""
    import matplotlib.pyplot as plt

    table = calibration_by_model(frames, tau_lp, tau_h) if table is None else table
    scores = table.set_index("model")
    fig, axes = plt.subplots(len(frames), 1, figsize=(MAX_WIDTH_IN, 5.0 * len(frames) + 1.2), squeeze=False)
    bins = default_bins("p_min", tau_lp)
    handles: dict[str, Any] = {}
    for ax, (name, f) in zip(axes[:, 0], frames.items()):
        for h in _reliability_panel(ax, reliability(f, "p_min", bins, tau_lp), "p_min", tau_lp):
            handles.setdefault(h.get_label(), h)
        r = scores.loc[name]
        ax.set_title(f"{name}: AUROC {r['auroc_p_min']:.2f} [{r['auroc_p_min_lo']:.2f}, {r['auroc_p_min_hi']:.2f}]\n"
                     f"{int(r['n'])} answers, accuracy {r['accuracy']:.0%}")
    fig.suptitle(title or "Reliability of exp(LP_min) by model (AUROC for errors, 95% bootstrap CI)",
                 fontweight="bold")
    fig.tight_layout(rect=(0, 1.0 / (5.0 * len(frames) + 1.2), 1, 1))
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=2, fontsize="small")
    return fig


def _auc(r: pd.Series, proxy: str) -> str:
    return f"{r[f'auroc_{proxy}']:.2f} [{r[f'auroc_{proxy}_lo']:.2f}, {r[f'auroc_{proxy}_hi']:.2f}]"


def auroc_gap(frames: Mapping[str, pd.DataFrame], n_boot: int = AUROC_N_BOOT, seed: int = 0) -> dict[str, Any] | None:
    """The AUROC of exp(LP_min) for errors of the first two studies in ``frames``, compared by a
    bootstrap test of the difference (:func:`lase_nb.stats.auroc_difference`): paired on the
    problems both answered when they share them all, unpaired otherwise (separate recordings).
    None when fewer than two studies are given (nothing to compare)."""
    if len(frames) < 2:
        return None
    (na, fa), (nb, fb) = list(frames.items())[:2]
    shared = sorted(set(fa["problem_id"]) & set(fb["problem_id"]))
    paired = len(shared) == len(fa) == len(fb)
    if paired:
        fa, fb = fa.set_index("problem_id").loc[shared], fb.set_index("problem_id").loc[shared]
    d = auroc_difference(-fa["p_min"].to_numpy(float), fa["correct"].to_numpy(bool),
                         -fb["p_min"].to_numpy(float), fb["correct"].to_numpy(bool), paired=paired,
                         n_boot=n_boot, seed=seed)
    return {"a": na, "b": nb, "paired": paired, **d}


def describe_calibration_by_model(table: pd.DataFrame, gap: Mapping[str, Any] | None = None) -> str:
    """Each model's AUROC, from :func:`calibration_by_model`, and whether they differ by the test
    of :func:`auroc_gap` (not by overlapping intervals)."""
    def one(r: pd.Series) -> str:
        if "p_value" not in r:
            return f"{r['model']} {_auc(r, 'p_min')}"
        errors = int(r["errors"])
        return f"{r['model']}: " + auroc_sentence(r["auroc_p_min"], r["auroc_p_min_lo"], r["auroc_p_min_hi"],
                                                  r["p_value"], errors, int(r["answered"]) - errors)

    each = "; ".join(f"{one(r)} (ECE {r['ece']:.2f}, {int(r['n'])} answers)" for _, r in table.iterrows())
    out = f"**AUROC of exp(LP_min) for errors** (0.5 = no information, 95% bootstrap CI): {each}."
    if gap is None or not np.isfinite(gap["diff"]):
        return out
    how = "paired on the problems both answered" if gap["paired"] else "the two samples resampled separately"
    head = (f" The difference, {gap['a']} minus {gap['b']}, is {gap['diff']:+.2f} [{gap['lo']:+.2f}, "
            f"{gap['hi']:+.2f}] (bootstrap, {how}; {p_text(gap['p_value'])})")
    if gap["p_value"] < 0.05:
        better = gap["a"] if gap["diff"] > 0 else gap["b"]
        return out + head + f": {better}'s confidence separates right from wrong answers better."
    return out + head + ": these samples do not tell the two apart."


def describe_reliability(table: pd.DataFrame) -> str:
    """What a reliability table shows, read from its rows: where most answers fall, the accuracy
    of the most confident bin beside the bin below it, and whether accuracy climbs bin by bin
    (Assumption 3.3, :func:`is_monotone`)."""
    t = table[(table["bin"] != NO_ANSWER) & (table["count"] > 0)].reset_index(drop=True)
    if t.empty:
        return "No answer has a confidence to bin."
    crowd = t.loc[t["count"].idxmax()]
    out = f"The most crowded bin is {crowd['bin']}, with {int(crowd['count'])} of {int(t['count'].sum())} answers."
    if len(t) >= 2:
        top, below = t.iloc[-1], t.iloc[-2]
        cmp = "above" if top["accuracy"] > below["accuracy"] else "below" if top["accuracy"] < below["accuracy"] else "level with"
        out += (f" The most confident bin, {top['bin']}, is right on {top['accuracy']:.0%} of its "
                f"{int(top['count'])} answers, {cmp} the bin below it ({below['bin']}: {below['accuracy']:.0%} of "
                f"{int(below['count'])}).")
    if len(t) == 1:
        return out + " With every answer in one bin, the bins cannot show whether accuracy rises with confidence."
    if is_monotone(table):
        from ..tables import MIN_DECIDABLE

        n = int(t["count"].sum())
        flat = bool(np.allclose(t["accuracy"], t["accuracy"].iloc[0]))
        said = (f" Accuracy is {t['accuracy'].iloc[0]:.0%} in every bin: it never falls with confidence, as "
                f"Assumption 3.3 asks, nor does it rise" if flat else
                " Accuracy never falls from a bin to the next, as Assumption 3.3 asks")
        return out + said + (f" ({n} answers: too few to take as support)." if n < MIN_DECIDABLE else ".")
    k = (t["accuracy"] * t["count"]).round().astype(int)
    drops = [(i, proportions_test(int(k[i + 1]), int(t["count"][i + 1]), int(k[i]), int(t["count"][i])))
             for i in range(len(t) - 1) if t["accuracy"][i + 1] < t["accuracy"][i]]
    if not drops:  # no bin falls below the one before it (is_monotone also reads bins without a rate)
        return out + " Accuracy never falls from a bin to the next."
    i, worst = min(drops, key=lambda d: d[1]["p_value"])
    dip = (f" Accuracy dips {len(drops)} time{'s' if len(drops) != 1 else ''} from a bin to the next; the "
           f"clearest dip, {t['bin'][i]} to {t['bin'][i + 1]}, is {100 * worst['diff']:+.0f} points "
           f"[{100 * worst['lo']:+.0f}, {100 * worst['hi']:+.0f}] (a test of two proportions, Fisher's exact: {p_text(worst['p_value'])})")
    if any(d["differs"] for _, d in drops):
        return out + dip + ": a real dip, so Assumption 3.3, read bin by bin, fails here."
    return out + dip + ": no dip is larger than chance, so these bins neither confirm nor refute Assumption 3.3."


def auroc_sentence(auc: float, lo: float, hi: float, p: float, errors: int, right: int) -> str:
    """An AUROC for errors with its interval and what it shows: "better than chance" only when the
    interval lies above 0.5 and the Mann-Whitney p is below 0.05 (both, the claim rule of
    :func:`lase_nb.stats.auroc_test`); "too few problems to say" with fewer than :data:`MIN_CLASS`
    wrong or right answers; otherwise "not shown to differ from chance"."""
    if not np.isfinite(auc):
        return "no AUROC (every answer is right, or every one wrong)"
    head = f"AUROC {auc:.2f} [{lo:.2f}, {hi:.2f}]"
    if min(errors, right) < MIN_CLASS:
        return f"{head}: too few problems to say ({errors} wrong, {right} right answers)"
    if lo > 0.5 and p < 0.05:
        return f"{head}, {p_text(p)}: better than chance"
    if hi < 0.5 and p < 0.05:
        return f"{head}, {p_text(p)}: worse than chance (errors look more confident)"
    return f"{head}, {p_text(p)}: not shown to differ from chance"


def describe_answers(frame: pd.DataFrame) -> str:
    """What the leader's first answers are: how many, how many right (Wilson interval), how many
    boxed no answer of their own (and in how many the extraction step found one), and the median
    exp(LP_min) of right and of wrong answered ones."""
    n, ok = len(frame), frame["correct"].to_numpy(bool)
    lo, hi = wilson_interval(int(ok.sum()), n)
    ans = frame[frame["answered"].astype(bool)]
    a_ok = ans["correct"].to_numpy(bool)
    p = ans["p_min"].to_numpy(float)
    none = int((~frame["answered"].astype(bool)).sum())
    boxed = frame["answered"].astype(bool) & (frame["boxed"].astype(bool) if "boxed" in frame else True)
    unboxed = int((~boxed).sum())
    out = (f"{n} first answers, {ok.mean():.0%} right [{lo:.0%}, {hi:.0%}]; {unboxed} boxed no answer of their own"
           + (f" (the extraction step found one in {unboxed - none}, {none} have none)." if unboxed > none else "."))
    measured = ~np.isnan(p)  # a reply without log-probabilities has an answer and no confidence
    if measured.sum() < len(p):
        out += f" {len(p) - int(measured.sum())} answered without log-probabilities (no confidence: the gate escalates them)."
    p, a_ok = p[measured], a_ok[measured]
    if a_ok.any() and (~a_ok).any():
        out += (f" Median exp(LP_min): {np.median(p[a_ok]):.3f} on right and {np.median(p[~a_ok]):.3f} on wrong "
                f"answers; {np.mean(p >= 0.9):.0%} of all answers with a confidence are at 0.9 or above.")
    return out


def describe_scores(scores: pd.DataFrame) -> str:
    """:func:`proxy_scores` in words: each proxy's AUROC with its interval and verdict
    (:func:`auroc_sentence`), and the ECE of exp(LP_min) with which way it errs."""
    lines = []
    for _, r in scores.iterrows():
        right = int(r["n_answered"] - r["errors_answered"])
        lines.append(f"- **{r['proxy']}**: " + auroc_sentence(r["auroc"], r["auroc_lo"], r["auroc_hi"],
                                                              r["p_value"], int(r["errors_answered"]), right) + ".")
    e = scores.iloc[0]["ece"]
    if np.isfinite(e):
        lines.append(f"- **ECE of exp(LP_min)**: {e:.2f} (0 = its probabilities match its accuracy bin by bin).")
    return "\n".join(lines)


def describe_gate(split: pd.Series, tau_lp: float, tau_h: float) -> str:
    """What the gate does at (tau_lp, tau_h), from :func:`lase_nb.confidence.gate_split`: the
    escalation rate, the accuracy of escalated and accepted answers, and confident errors as a
    share of all errors."""
    n = int(split["answers"])
    esc = split["escalation_rate"]
    parts = [f"At tau_lp = {tau_lp:g}, tau_h = {tau_h:g} the gate escalates {esc:.0%} of {n} answers"]
    if np.isfinite(split["accuracy_if_U1"]) and np.isfinite(split["accuracy_if_U0"]):
        word = ("less often" if split["accuracy_if_U1"] < split["accuracy_if_U0"] else
                "more often" if split["accuracy_if_U1"] > split["accuracy_if_U0"] else "as often")
        parts.append(f"the escalated ones are right {split['accuracy_if_U1']:.0%} of the time, {word} than the "
                     f"accepted ones ({split['accuracy_if_U0']:.0%})")
    errors, ce = int(split["errors"]), int(split["confident_errors"])
    if errors:
        parts.append(f"{ce} of the {errors} wrong answers ({ce / errors:.0%}) pass it as confident errors, which "
                     "LASE never revisits")
    return "; ".join(parts) + "."
