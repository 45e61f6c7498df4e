"""Statistics for measured runs: reliability bins, AUROC, ECE, intervals, paired tests, budgets.

Pure functions on numpy arrays and pandas tables, seeded wherever they resample. Accuracy and
rates are fractions in [0, 1] here (the paper prints percents; see :mod:`lase_nb.reference`).
An accuracy (or any share of problems) gets one interval everywhere: Wilson's
(:func:`wilson_interval`); the bootstrap is for statistics without a closed form (AUROC, paired
differences).
"""

from __future__ import annotations

from typing import Callable, Literal, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats as _st

__all__ = [
    "MIN_CLASS",
    "bool_array",
    "mcnemar",
    "mcnemar_power",
    "MARGIN",
    "within_margin",
    "pct",
    "p_text",
    "points",
    "wilson_interval",
    "proportions_test",
    "reliability_table",
    "auroc_for_errors",
    "auroc_with_ci",
    "ece",
    "bootstrap_ci",
    "paired_test",
    "holm",
    "clears_both",
    "auroc_difference",
    "auroc_test",
    "gain_difference",
]

NO_ANSWER = "no answer"
#: Fewest wrong and fewest right answers for which an AUROC verdict is given; below it, "too few to
#: say" (chapters 02 and 07 apply the same rule).
MIN_CLASS = 5
#: The one bootstrap size of a paired difference of accuracies (both preregistrations fix 5,000 resamples,
#: seed 0): every chapter's interval of the same two columns is then the same interval.
PAIRED_N_BOOT = 5000
#: The one bootstrap size of an AUROC interval: chapters 02, 06 and 07 print the same interval of the
#: same answers.
AUROC_N_BOOT = 2000


def bool_array(x, name: str) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype != bool:
        if a.size and not np.isin(a, (0, 1)).all():
            raise ValueError(f"{name} must be boolean (or 0/1); got values outside {{0, 1}}")
        a = a.astype(bool)
    return a.ravel()


def _same_length(**arrays: np.ndarray) -> None:
    lengths = {k: len(v) for k, v in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"arrays differ in length: {lengths}")


def pct(x: float | None, digits: int = 0) -> str:
    """A fraction as a percent for the chapters' sentences (``0.456`` -> ``"46%"``); "n/a" when unknown."""
    return "n/a" if x is None or not np.isfinite(float(x)) else f"{float(x):.{digits}%}"


def points(x: float) -> str:
    """A difference of two fractions in percentage points, signed (``0.035`` -> ``"+3.5"``)."""
    return f"{100 * float(x):+.1f}"


def p_text(p: float) -> str:
    """A p-value for a sentence: ``"p = 0.219"``, or ``"p < 0.001"`` below that (never ``p = 0.000``)."""
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def wilson_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials (scipy's ``binomtest``); NaNs if n == 0."""
    if n == 0:
        return (float("nan"), float("nan"))
    ci = _st.binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="wilson")
    return (float(ci.low), float(ci.high))


def proportions_test(k_a: int, n_a: int, k_b: int, n_b: int, level: float = 0.95) -> dict[str, float]:
    """Two independent proportions, ``k_a/n_a`` minus ``k_b/n_b``: the difference, Newcombe's hybrid
    score interval (from the two Wilson intervals) and Fisher's exact two-sided p. ``differs`` is the
    claim rule: the interval excludes zero and p < 0.05 (both)."""
    if min(n_a, n_b) <= 0:
        raise ValueError(f"both samples need at least one trial, got n_a={n_a}, n_b={n_b}")
    pa, pb = k_a / n_a, k_b / n_b
    (la, ua), (lb, ub) = wilson_interval(k_a, n_a, level), wilson_interval(k_b, n_b, level)
    diff = pa - pb
    lo = diff - float(np.hypot(pa - la, ub - pb))
    hi = diff + float(np.hypot(ua - pa, pb - lb))
    p = float(_st.fisher_exact([[k_a, n_a - k_a], [k_b, n_b - k_b]]).pvalue)
    return {"diff": diff, "lo": lo, "hi": hi, "p_value": p, "n_a": int(n_a), "n_b": int(n_b),
            "differs": bool((lo > 0 or hi < 0) and p < 0.05)}


def _fmt(x: float) -> str:
    return "inf" if x == np.inf else "-inf" if x == -np.inf else f"{x:g}"


def reliability_table(
    confidence: np.ndarray,
    correct: np.ndarray,
    bins: Sequence[float],
    higher_is_confident: bool = True,
    level: float = 0.95,
) -> pd.DataFrame:
    """Accuracy per confidence bin with Wilson intervals: the numbers behind a reliability plot.

    ``bins`` are increasing edges (use ``-inf``/``inf`` for open ends). A value exactly on an
    edge goes to the *more confident* side, as in the U rule (certain iff p >= tau_lp and
    h <= tau_h): bins are ``[lo, hi)`` when higher is confident (e.g. exp(LP_min)) and ``(lo, hi]``
    when lower is (e.g. H_max); the outermost edges are inclusive. Rows run from the least to the
    most confident bin; empty bins stay (count 0, NaN accuracy). NaN confidences (no extracted
    answer) get their own last row labelled ``"no answer"``, present only when there are any.
    Values outside the edges raise ``ValueError``.

    Columns: bin, lo, hi, count, n_correct, accuracy, ci_lo, ci_hi, mean_confidence, share.
    """
    conf = np.asarray(confidence, dtype=float).ravel()
    ok = bool_array(correct, "correct")
    _same_length(confidence=conf, correct=ok)
    edges = np.asarray(bins, dtype=float)
    if edges.ndim != 1 or len(edges) < 2 or np.any(np.diff(edges) <= 0):
        raise ValueError(f"bins must be at least two strictly increasing edges; got {list(bins)}")
    missing = np.isnan(conf)
    v = conf[~missing]
    outside = (v < edges[0]) | (v > edges[-1])
    if outside.any():
        raise ValueError(f"{int(outside.sum())} confidences lie outside [{edges[0]:g}, {edges[-1]:g}]; "
                         f"widen the bins (e.g. add -inf/inf edges)")
    nb = len(edges) - 1
    if higher_is_confident:  # [lo, hi), last closed
        idx = np.clip(np.searchsorted(edges, conf, side="right") - 1, 0, nb - 1)
    else:  # (lo, hi], first closed
        idx = np.clip(np.searchsorted(edges, conf, side="left") - 1, 0, nb - 1)
    order = range(nb) if higher_is_confident else range(nb - 1, -1, -1)
    total = len(conf)
    rows = []
    for j in order:
        lo, hi = edges[j], edges[j + 1]
        if higher_is_confident:
            label = f"[{_fmt(lo)}, {_fmt(hi)}" + ("]" if j == nb - 1 else ")")
        else:
            label = ("[" if j == 0 else "(") + f"{_fmt(lo)}, {_fmt(hi)}]"
        rows.append((label, lo, hi, (idx == j) & ~missing))
    if missing.any():
        rows.append((NO_ANSWER, np.nan, np.nan, missing))
    out = []
    for label, lo, hi, m in rows:
        n, k = int(m.sum()), int(ok[m].sum())
        ci = wilson_interval(k, n, level)
        out.append({"bin": label, "lo": lo, "hi": hi, "count": n, "n_correct": k,
                    "accuracy": k / n if n else np.nan, "ci_lo": ci[0], "ci_hi": ci[1],
                    "mean_confidence": float(conf[m].mean()) if n and label != NO_ANSWER else np.nan,
                    "share": n / total if total else np.nan})
    return pd.DataFrame(out)


def _error_scores(score, correct, nan: str) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(score, dtype=float).ravel()
    ok = bool_array(correct, "correct")
    _same_length(score=s, correct=ok)
    if nan == "worst":
        s = np.where(np.isnan(s), np.inf, s)
    elif nan == "drop":
        keep = ~np.isnan(s)
        s, ok = s[keep], ok[keep]
    else:
        raise ValueError(f"nan must be 'worst' or 'drop'; got {nan!r}")
    return s, ok


def auroc_for_errors(score: np.ndarray, correct: np.ndarray,
                     nan: Literal["worst", "drop"] = "worst") -> float:
    """AUROC of ``score`` for predicting ERRORS: P(score of a wrong answer > score of a right one).

    Orientation: higher score must mean "more likely wrong", so pass an *uncertainty*, e.g.
    ``-p_min`` or ``h_max``. 1.0 = every error scores above every right answer, 0.5 = no
    information (ties count one half), 0.0 = perfectly reversed. Computed as the Mann-Whitney U
    of the errors divided by n_err * n_right. NaN scores (no answer) count as the most
    error-like (``nan="worst"``, the gate escalates them) or are dropped (``nan="drop"``).
    Returns NaN if either class is empty.
    """
    s, ok = _error_scores(score, correct, nan)
    err, right = s[~ok], s[ok]
    if len(err) == 0 or len(right) == 0:
        return float("nan")
    u = _st.mannwhitneyu(err, right, alternative="two-sided", method="asymptotic").statistic
    return float(u) / (len(err) * len(right))


def auroc_with_ci(score: np.ndarray, correct: np.ndarray, n_boot: int = 1000, seed: int = 0,
                  level: float = 0.95, nan: Literal["worst", "drop"] = "worst") -> tuple[float, float, float]:
    """(auc, lo, hi): :func:`auroc_for_errors` with a percentile bootstrap interval.

    The bootstrap is stratified (errors and right answers resampled separately, class sizes
    fixed), so no resample loses a class. NaNs throughout if either class is empty.
    """
    s, ok = _error_scores(score, correct, nan)
    auc = auroc_for_errors(s, ok, nan="drop")
    err, right = s[~ok], s[ok]
    n1, n0 = len(err), len(right)
    if n1 == 0 or n0 == 0:
        return (float("nan"),) * 3
    rng = np.random.default_rng(seed)
    boots = np.concatenate([err[rng.integers(0, n1, (n_boot, n1))],
                            right[rng.integers(0, n0, (n_boot, n0))]], axis=1)
    ranks = _st.rankdata(boots, axis=1)  # average ranks: ties count one half
    u = ranks[:, :n1].sum(axis=1) - n1 * (n1 + 1) / 2
    aucs = u / (n1 * n0)
    a = (1 - level) / 2
    lo, hi = np.quantile(aucs, [a, 1 - a])
    return (auc, float(lo), float(hi))


def ece(prob_correct: np.ndarray, correct: np.ndarray, n_bins: int = 10) -> float:
    """Expected calibration error: sum over equal-width bins of (n_bin / n) * |accuracy - mean conf|.

    ``prob_correct`` is a probability-like confidence in [0, 1] (e.g. exp(LP_min)). Bins are
    ``[k/n_bins, (k+1)/n_bins)``, the last one closed. NaN confidences (no extracted answer) are
    EXCLUDED: they carry no probability to calibrate; report their count separately (the
    ``"no answer"`` row of :func:`reliability_table`). NaN if nothing is left.
    """
    p = np.asarray(prob_correct, dtype=float).ravel()
    ok = bool_array(correct, "correct")
    _same_length(prob_correct=p, correct=ok)
    keep = ~np.isnan(p)
    p, ok = p[keep], ok[keep]
    if len(p) == 0:
        return float("nan")
    if p.min() < 0 or p.max() > 1:
        raise ValueError("prob_correct must lie in [0, 1]; pass a probability such as exp(LP_min)")
    idx = np.minimum((p * n_bins).astype(int), n_bins - 1)
    acc = np.bincount(idx, weights=ok.astype(float), minlength=n_bins)
    conf = np.bincount(idx, weights=p, minlength=n_bins)
    return float(np.abs(acc - conf).sum() / len(p))  # sum_b |n_b acc_b - n_b conf_b| / n


def bootstrap_ci(values: np.ndarray, stat: Callable[..., float] = np.mean, n_boot: int = 2000,
                 seed: int = 0, level: float = 0.95,
                 method: Literal["percentile", "BCa", "basic"] = "percentile") -> tuple[float, float, float]:
    """(estimate, lo, hi) of ``stat(values)`` by ``scipy.stats.bootstrap``, seeded.

    ``stat`` should accept ``axis=`` (numpy reductions do) for speed. Degenerate samples (all
    values equal, or fewer than two) return (v, v, v) without raising; an empty one NaNs.
    """
    x = np.asarray(values, dtype=float).ravel()
    if len(x) == 0:
        return (float("nan"),) * 3
    est = float(stat(x))
    if len(x) < 2 or np.all(x == x[0]):
        return (est, est, est)
    res = _st.bootstrap((x,), stat, n_resamples=n_boot, confidence_level=level, method=method,
                        rng=np.random.default_rng(seed))
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return (est, lo, hi)


def mcnemar(a: np.ndarray, b: np.ndarray) -> tuple[int, int, float]:
    """Discordant counts (a right b wrong, a wrong b right) and the exact two-sided p-value."""
    n_ab, n_ba = int((a & ~b).sum()), int((~a & b).sum())
    p = float(_st.binomtest(n_ab, n_ab + n_ba, 0.5).pvalue) if n_ab + n_ba else 1.0
    return n_ab, n_ba, p


def mcnemar_power(n: int, p_gain: float, p_loss: float, alpha: float = 0.05) -> float:
    """The chance that the exact two-sided McNemar test on ``n`` paired problems finds a gain
    (p < ``alpha`` with more fixes than breaks) when each problem is fixed with probability ``p_gain``
    and broken with ``p_loss``: the number of discordant problems is Binomial(n, p_gain + p_loss),
    and given d of them the fixes are Binomial(d, p_gain / (p_gain + p_loss)). Exact, by summing both."""
    if not (0 <= p_gain and 0 <= p_loss and p_gain + p_loss <= 1) or n < 1:
        raise ValueError(f"need n >= 1 and rates with p_gain + p_loss <= 1 (got {n}, {p_gain}, {p_loss})")
    q = p_gain + p_loss
    if q == 0:
        return 0.0
    d = np.arange(1, n + 1)
    # the exact two-sided p-value of k > d / 2 fixes of d under p = 1/2 is 2 P(X >= k) (scipy's
    # binomtest agrees): the smallest such k with p < alpha, per d (d + 1 where none rejects)
    k = np.arange(0, n + 2)
    p_two = 2 * _st.binom.sf(k[None, :] - 1, d[:, None], 0.5)
    rejects = (p_two < alpha) & (k[None, :] > d[:, None] / 2)
    k_crit = np.where(rejects.any(axis=1), rejects.argmax(axis=1), d + 1)
    power = float(np.sum(_st.binom.pmf(d, n, q) * _st.binom.sf(k_crit - 1, d, p_gain / q)))
    return power


def paired_test(correct_a: np.ndarray, correct_b: np.ndarray, n_boot: int = PAIRED_N_BOOT, seed: int = 0,
                level: float = 0.95) -> dict:
    """Exact McNemar test of two systems graded on the same problems (same order).

    b = problems A got right and B wrong, c = the reverse; under H0 b ~ Binomial(b + c, 1/2), and
    the two-sided exact p-value comes from ``scipy.stats.binomtest`` (1.0 if b + c == 0). Also a
    paired bootstrap interval of acc_a - acc_b (problems resampled jointly).

    Keys: n, acc_a, acc_b, diff, diff_lo, diff_hi, b, c, p_value.
    """
    a = bool_array(correct_a, "correct_a")
    bb = bool_array(correct_b, "correct_b")
    _same_length(correct_a=a, correct_b=bb)
    n = len(a)
    b, c, p = mcnemar(a, bb)
    d, lo, hi = bootstrap_ci(a.astype(float) - bb.astype(float), n_boot=n_boot, seed=seed, level=level)
    return {"n": n, "acc_a": float(a.mean()) if n else np.nan, "acc_b": float(bb.mean()) if n else np.nan,
            "diff": d, "diff_lo": lo, "diff_hi": hi, "b": b, "c": c, "p_value": p}


def gain_difference(new_a: np.ndarray, old_a: np.ndarray, new_b: np.ndarray, old_b: np.ndarray,
                    n_boot: int = PAIRED_N_BOOT, seed: int = 0, level: float = 0.95) -> dict:
    """Whether system A's gain (new_a over old_a) differs from system B's (new_b over old_b) on the
    same problems (same order): per problem d = (new_a - old_a) - (new_b - old_b), in {-2..2}.
    The exact test is the sign test on the problems where d != 0 (two-sided binomial, 1/2; the
    McNemar test of the two gains); beside it the paired bootstrap interval of mean d.
    Keys: n, gain_a, gain_b, diff, diff_lo, diff_hi, up (d > 0), down (d < 0), p_value."""
    arrays = [bool_array(x, name) for x, name in ((new_a, "new_a"), (old_a, "old_a"), (new_b, "new_b"),
                                                  (old_b, "old_b"))]
    _same_length(new_a=arrays[0], old_a=arrays[1], new_b=arrays[2], old_b=arrays[3])
    na, oa, nb, ob = (a.astype(float) for a in arrays)
    d = (na - oa) - (nb - ob)
    up, down, p = mcnemar(d > 0, d < 0)  # the sign test: the exact McNemar test of "A gained more" vs "B did"
    est, lo, hi = bootstrap_ci(d, n_boot=n_boot, seed=seed, level=level)
    return {"n": len(d), "gain_a": float((na - oa).mean()) if len(d) else np.nan,
            "gain_b": float((nb - ob).mean()) if len(d) else np.nan, "diff": est, "diff_lo": lo, "diff_hi": hi,
            "up": up, "down": down, "p_value": p}


def clears_both(test: Mapping[str, float], alpha: float = 0.05, above: bool = True) -> bool:
    """The project's claim rule on a :func:`paired_test`: the exact McNemar p below ``alpha`` and the
    paired bootstrap interval of the difference wholly above zero (``above``) or below it."""
    side = test["diff_lo"] > 0 if above else test["diff_hi"] < 0
    return bool(side and test["p_value"] < alpha)


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjustment of a family of p-values (controls the family-wise error rate):
    sort ascending, multiply the i-th smallest (from 0) by (m - i), take the running maximum, cap at
    1, and return them in the input order. NaNs stay NaN and do not count in m."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = len(ok)
    if m:
        order = ok[np.argsort(p[ok], kind="stable")]
        adj = np.maximum.accumulate(p[order] * (m - np.arange(m)))
        out[order] = np.minimum(adj, 1.0)
    return out


def auroc_test(score: np.ndarray, correct: np.ndarray, n_boot: int = 2000, seed: int = 0, level: float = 0.95,
               alpha: float = 0.05) -> dict[str, float]:
    """Whether ``score`` tells errors from right answers at all: the AUROC for errors
    (:func:`auroc_with_ci`, NaN scores dropped) and its own exact-in-spirit test, the two-sided
    Mann-Whitney U p-value. ``separates`` is the project's claim rule for it: the interval above 0.5
    and p below ``alpha`` (both). Keys: auroc, lo, hi, p_value, n, separates."""
    s, ok = _error_scores(score, correct, "drop")
    auc, lo, hi = auroc_with_ci(s, ok, n_boot=n_boot, seed=seed, level=level, nan="drop")
    if ok.all() or (~ok).all():
        return {"auroc": auc, "lo": lo, "hi": hi, "p_value": float("nan"), "n": len(s), "separates": False}
    p = float(_st.mannwhitneyu(s[~ok], s[ok], alternative="two-sided").pvalue)
    return {"auroc": auc, "lo": lo, "hi": hi, "p_value": p, "n": len(s), "separates": bool(lo > 0.5 and p < alpha)}


def auroc_difference(score_a: np.ndarray, correct_a: np.ndarray, score_b: np.ndarray, correct_b: np.ndarray,
                     paired: bool = False, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> dict[str, float]:
    """Whether two AUROCs for errors differ (:func:`auroc_for_errors`, ``nan="worst"``): the
    difference a - b with a percentile bootstrap interval and a two-sided bootstrap p-value (twice
    the share of resampled differences on the far side of zero). ``paired=True`` when both scores
    grade the same problems in the same order (resampled jointly); otherwise each sample is
    resampled on its own. Keys: auroc_a, auroc_b, diff, lo, hi, p_value."""
    sa, ca = np.asarray(score_a, float), bool_array(correct_a, "correct_a")
    sb, cb = np.asarray(score_b, float), bool_array(correct_b, "correct_b")
    if paired:
        _same_length(score_a=sa, score_b=sb)
    a, b = auroc_for_errors(sa, ca), auroc_for_errors(sb, cb)
    rng = np.random.default_rng(seed)
    diffs = []
    for _ in range(n_boot):
        ia = rng.integers(0, len(sa), len(sa))
        ib = ia if paired else rng.integers(0, len(sb), len(sb))
        diffs.append(auroc_for_errors(sa[ia], ca[ia]) - auroc_for_errors(sb[ib], cb[ib]))
    d = np.asarray(diffs)
    d = d[np.isfinite(d)]
    if not len(d) or not np.isfinite(a - b):
        return {"auroc_a": a, "auroc_b": b, "diff": a - b, "lo": np.nan, "hi": np.nan, "p_value": np.nan}
    q = (1 - level) / 2
    p = min(1.0, 2 * min(float((d <= 0).mean()), float((d >= 0).mean())))
    return {"auroc_a": a, "auroc_b": b, "diff": a - b, "lo": float(np.quantile(d, q)),
            "hi": float(np.quantile(d, 1 - q)), "p_value": p}


#: The margin of "no worse than" (LASE against MV(7), accuracy: 3 points), in chapters 04 and 07.
MARGIN = 0.03


def within_margin(lo: float, hi: float | None = None, margin: float = MARGIN) -> bool:
    """The one rule chapters 04 and 07 judge a closeness claim by: the paired 95% interval of a
    difference (a minus b) must fit in the margin. "No worse than" (``hi`` None): its lower end
    ``lo`` at or above ``-margin``; "about equal": the whole interval within ``margin`` either way.
    Edges count as inside (1e-9 absorbs the float rounding of k/n); a missing end (NaN) is outside."""
    tol = 1e-9
    inside = bool(lo >= -margin - tol)
    return inside and (hi is None or bool(hi <= margin + tol))
