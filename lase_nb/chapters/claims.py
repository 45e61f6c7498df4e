"""Chapter 07: each of the paper's claims, its number, ours on each model, and a verdict.

A verdict comes from the test a reviewer would run, fixed here before any table is read:

- an accuracy claim between two strategies is tested pair by pair on the problems both ran, by the
  exact McNemar test *and* the paired bootstrap 95% interval (:func:`lase_nb.stats.paired_test`);
  "reproduced" needs both to clear in the paper's direction (:func:`lase_nb.stats.clears_both`),
  "refuted" both in the other, and anything else is "not shown" (the data cannot tell); a study's
  paired accuracy tests are one family, so the McNemar p that decides is Holm-adjusted across them;
- "matches or beats" is a non-inferiority claim: reproduced when the interval's lower end is at or
  above ``-MARGIN`` (3 points; :func:`lase_nb.stats.within_margin`, the rule chapter
  04's headline test uses too), refuted when the strategy is significantly worse by both tests;
- every accuracy claim, an equivalence one too, needs :func:`lase_nb.tables.decidable` problems and
  discordant ones; below that its verdict is "too few problems" (a bootstrap interval over one or
  two discordant problems is too narrow to trust);
- a cost claim compares measured token ratios (no test: token counts of the same problems);
- the calibration claim (Assumption 3.3: low confidence, more errors) is tested by the AUROC for
  errors, its bootstrap interval above 0.5 and the Mann-Whitney test (the AUROC's own test);
- a claim against a baseline whose follow-ups are not in its own format on a model (the organisms
  were trained for LASE's roles only: :func:`lase_nb.tables.baseline_formats`) is "not testable here":
  the difference would measure the training, not the strategy;
- claims about the paper's models and data sets are "not testable offline".

:func:`paper_inconsistencies` lists, as numbers, what a careful reader of the paper should notice.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

import numpy as np
import pandas as pd

from .. import reference
from ..confidence import confidence_frame
from ..errors import DataError
from ..plots import NEUTRAL_LIGHT, NEUTRAL_MID
from ..stats import AUROC_N_BOOT, MARGIN, MIN_CLASS, auroc_test, clears_both, holm, paired_test, within_margin
from ..tables import decidable, main_comparison, paired_correct
from ..strategies import SPECS

__all__ = ["MARGIN", "VERDICTS", "VERDICT_MARKERS", "claims_by_model", "gated_study", "GATED_STUDY", "accuracy_verdict", "paper_inconsistencies",
           "verdict_counts", "describe_verdicts", "calibration_claim", "plot_claims",
           "VERDICT_COLORS"]

VERDICTS = ("reproduced", "refuted", "not shown", "too few problems", "not recorded", "not testable here",
            "not testable offline")
COST_CLAIM = "LASE costs under half of MV(7)'s tokens (average multiples over the data sets)"
MAD_CLAIM = "MAD is the most expensive of single, MV, MAD and LASE (Table 1)"
NOT_OFFLINE = ("needs the paper's models (GPT-4.1-mini, Gemini-2.0-Flash, Llama-3-8B) and data sets; "
               "`lase-nb run --backend openai|gemini` runs them where an API key and the data are at hand")


def accuracy_verdict(test: Mapping[str, float], kind: str = "better") -> str:
    """The verdict of a :func:`lase_nb.stats.paired_test` (a minus b) for a claim that a is
    ``"better"`` than b, ``"no worse"`` (within :data:`MARGIN`), or ``"about equal"`` (the interval
    within :data:`EQUAL_BAND`, 5 points either way, edges included: the shuffled-order claim). Below the size at which the test can decide
    (:func:`lase_nb.tables.decidable`: too few problems, or too few discordant ones), "too few problems"."""
    if kind not in ("better", "no worse", "about equal"):
        raise ValueError(f"kind must be better, no worse or about equal, got {kind!r}")
    if "b" in test and not decidable(int(test["n"]), test["b"] + test["c"]):
        return "too few problems"  # one or two discordant problems make a bootstrap interval too narrow to trust
    if kind == "better":
        if clears_both(test):
            return "reproduced"
        return "refuted" if clears_both(test, above=False) else "not shown"
    if kind == "no worse":
        if clears_both(test, above=False):
            return "refuted"
        return "reproduced" if within_margin(test["diff_lo"]) else "not shown"
    if kind == "about equal":
        if clears_both(test) or clears_both(test, above=False):
            return "refuted"
        # within the band, its edges included (as the figure draws it)
        return "reproduced" if within_margin(test["diff_lo"], test["diff_hi"], EQUAL_BAND) else "not shown"
    raise ValueError(f"kind must be better, no worse or about equal, got {kind!r}")


def _tokens(tables: Mapping[str, pd.DataFrame], s: str) -> float:
    return float(tables[s]["total_tokens"].mean())


def calibration_claim(frame: pd.DataFrame, n_boot: int = AUROC_N_BOOT, seed: int = 0) -> dict[str, Any]:
    """Assumption 3.3 on the leader's first answers (answered ones): :func:`lase_nb.stats.auroc_test`
    of ``-exp(LP_min)`` for errors, with the verdict: reproduced where it separates, refuted where the
    interval is below 0.5 with p < 0.05, else not shown; with fewer than chapter 02's
    :data:`~lase_nb.stats.MIN_CLASS` wrong or right answers (with a confidence), too few problems."""
    ans = frame[frame["answered"].astype(bool) & frame["p_min"].notna()]
    ok = ans["correct"].to_numpy(bool)
    t = auroc_test(-ans["p_min"].to_numpy(float), ok, n_boot=n_boot, seed=seed)
    verdict = ("too few problems" if min(int(ok.sum()), int((~ok).sum())) < MIN_CLASS else
               "reproduced" if t["separates"] else
               "refuted" if t["hi"] < 0.5 and t["p_value"] < 0.05 else "not shown")
    return {**t, "verdict": verdict, "errors": int((~ok).sum()), "right": int(ok.sum())}


def _fmt_test(t: Mapping[str, float]) -> str:
    return (f"{100 * t['diff']:+.1f} pts [{100 * t['diff_lo']:+.1f}, {100 * t['diff_hi']:+.1f}], "
            f"p = {t['p_value']:.3g}, n = {t['n']}")


def _model_rows(label: str, tables: Mapping[str, pd.DataFrame], run: Any,
                off: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """One model's row for each claim (``tables``: :func:`lase_nb.tables.strategy_tables`; ``run``:
    its full-chain LASE run, for the first answers; ``off``: the baselines not comparable on this
    model, with the reason, :func:`lase_nb.tables.off_format`)."""
    rows: list[dict[str, Any]] = []
    tests: list[tuple[int, dict[str, Any], str]] = []
    off = off or {}

    def tested(claim: str, a: str, b: str, kind: str) -> None:
        if b in off and b in tables:
            rows.append({"claim": claim, "model": label, "ours": "not comparable", "verdict": "not testable here",
                         "why": off[b]})
            return
        pair = paired_correct(tables, a, b)
        if pair is None:
            missing = [x for x in (a, b) if x not in tables]
            why = (f"no {' or '.join(missing)} run in this study" if missing else
                   f"the {a} and {b} runs share no problem")
            rows.append({"claim": claim, "model": label, "ours": "not recorded", "verdict": "not recorded", "why": why})
            return
        tests.append((len(rows), paired_test(*pair, seed=0), kind))
        rows.append({"claim": claim, "model": label})

    def decide() -> None:
        """Each paired test's verdict on its Holm-adjusted p (the study's accuracy claims are one family)."""
        adjusted = holm([t["p_value"] for _, t, _ in tests])
        for (i, t, kind), q in zip(tests, adjusted):
            verdict = accuracy_verdict({**t, "p_value": float(q)}, kind)
            raw = accuracy_verdict(t, kind)
            why = {"reproduced": "both tests clear after Holm's adjustment" if kind == "better" else
                   f"the interval's lower end is at or above -{100 * MARGIN:.0f} pts" if kind == "no worse"
                   else "the interval lies within 5 pts",
                   "refuted": "both tests clear the other way after Holm's adjustment",
                   "too few problems": f"{t['n']} problems, {t['b'] + t['c']} discordant: too few for the test to decide",
                   "not shown": "the tests cannot tell the difference from chance"
                                + (f" after Holm's adjustment (unadjusted: {raw})" if raw != verdict else "")}[verdict]
            rows[i].update({"ours": f"{_fmt_test(t)}, Holm p = {q:.3g}", "verdict": verdict, "why": why, "kind": kind,
                            **{k: t[k] for k in ("n", "diff", "diff_lo", "diff_hi", "p_value")}, "p_holm": float(q)})

    tested("LASE is more accurate than the single agent (Table 1)", "lase", "single", "better")
    tested("LASE matches or beats MV(7) (Table 1)", "lase", "mv", "no worse")
    tested("LASE is more accurate than MAD (Table 1)", "lase", "mad", "better")
    tested("LASE beats Mixture-of-Agents (Section 4.4)", "lase", "moa", "better")
    tested("LASE+MV beats MV(7) (Table 2)", "lase-mv", "mv", "better")
    tested("The supporters' order matters little (Section 4.5)", "lase-shuffled", "lase", "about equal")
    decide()
    ratio = main_comparison(tables)["token_multiplier"]  # the same table, and ratios, as chapter 04's
    if {"lase", "mv", "single"} <= set(ratio.index):
        r_lase, r_mv = ratio["lase"], ratio["mv"]
        rows.append({"claim": COST_CLAIM,
                     "model": label, "ours": f"{r_lase:.1f}x vs {r_mv:.1f}x the single agent's tokens",
                     "verdict": "reproduced" if r_lase < 0.5 * r_mv else "refuted",
                     "why": "measured token ratio on chapter 04's common problems (reproduced when below half of MV's)"})
    else:
        missing = [s for s in ("lase", "mv", "single") if s not in ratio.index]
        rows.append({"claim": COST_CLAIM, "model": label, "ours": "not recorded", "verdict": "not recorded",
                     "why": f"no {' or '.join(missing)} run in this study's main comparison"})
    if {"mad", "mv", "single", "lase"} <= set(ratio.index):
        costs = {s: float(ratio[s]) for s in ("single", "mv", "mad", "lase")}
        top = max(costs, key=costs.get)
        rows.append({"claim": MAD_CLAIM, "model": label,
                     "ours": f"most expensive: {top} ({costs[top]:.1f}x single)",
                     "verdict": "reproduced" if top == "mad" else "refuted", "why": "measured tokens"})
    else:
        missing = [s for s in ("mad", "mv", "single", "lase") if s not in ratio.index]
        rows.append({"claim": MAD_CLAIM, "model": label, "ours": "not recorded", "verdict": "not recorded",
                     "why": f"no {' or '.join(missing)} run in this study's main comparison"})
    cal = calibration_claim(confidence_frame(run, stage=0))  # chapter 02's interval (AUROC_N_BOOT resamples)
    rows.append({"claim": "Low answer-token confidence goes with errors (Assumption 3.3, Figure 3)", "model": label,
                 "ours": f"AUROC {cal['auroc']:.2f} [{cal['lo']:.2f}, {cal['hi']:.2f}], p = {cal['p_value']:.3g}, "
                         f"n = {cal['n']}",
                 "verdict": cal["verdict"], "why": "AUROC interval above 0.5 and Mann-Whitney p < 0.05"
                 if cal["verdict"] == "reproduced" else f"{cal['errors']} wrong and {cal['right']} right answers: too few"
                 if cal["verdict"] == "too few problems" else "the AUROC cannot be told from 0.5"})
    return rows


def _paper_numbers() -> dict[str, str]:
    t1 = reference.TABLE1[(reference.TABLE1["model"] == "GPT-4.1-mini") & (reference.TABLE1["dataset"] == "MATH-500")]
    acc = t1.set_index("method")["accuracy"]
    lmv, moa, sh = (reference.LASE_MV.set_index("method")["accuracy"], reference.MOA_VS_LASE.set_index("method"),
                    reference.SHUFFLED_SUMMARY)
    cal = reference.CALIBRATION.set_index("condition")["accuracy"]
    m = reference.TOKEN_MULTIPLIERS.set_index("method")["token_multiplier"]
    return {
        COST_CLAIM: f"LASE {m['lase']:.1f}x, MV {m['mv']:.1f}x the single agent",
        MAD_CLAIM: f"MAD {m['mad']:.1f}x (the most on every row of Table 1)",
        "LASE is more accurate than the single agent (Table 1)": f"{acc['lase']:.1f}% vs {acc['single']:.1f}%",
        "LASE matches or beats MV(7) (Table 1)": f"{acc['lase']:.1f}% vs {acc['mv']:.1f}%",
        "LASE is more accurate than MAD (Table 1)": f"{acc['lase']:.1f}% vs {acc['mad']:.1f}%",
        "LASE beats Mixture-of-Agents (Section 4.4)": f"{moa.loc['lase', 'accuracy']:.1f}% vs {moa.loc['moa', 'accuracy']:.1f}%",
        "LASE+MV beats MV(7) (Table 2)": f"{lmv['lase+mv']:.1f}% vs {lmv['mv']:.1f}%",
        "The supporters' order matters little (Section 4.5)": f"{sh['mean']:.1f}% shuffled vs {sh['original']:.1f}%",
        "Low answer-token confidence goes with errors (Assumption 3.3, Figure 3)":
            f"{cal['min token prob >= 0.99']:.1f}% right at >= 0.99, {cal['min token prob < 0.50']:.1f}% below 0.5",
    }


def claims_by_model(models: Mapping[str, Mapping[str, pd.DataFrame]], lase_runs: Mapping[str, Any],
                    off: Mapping[str, Mapping[str, str]] | None = None) -> pd.DataFrame:
    """One row per claim: the paper's number (GPT-4.1-mini, MATH-500 unless the claim names another
    table), then per model ours and the verdict. ``models``: per model label its strategy tables
    (:func:`lase_nb.tables.strategy_tables`); ``lase_runs``: per model its full-chain LASE run; ``off``:
    per model the baselines that are not comparable there (:func:`lase_nb.tables.off_format`), whose
    claims are "not testable here". Claims about the paper's own models and data sets close the
    table as not testable offline."""
    off = off or {}
    rows = [r for label, tables in models.items() for r in _model_rows(label, tables, lase_runs[label], off.get(label))]
    long = pd.DataFrame(rows)
    paper = _paper_numbers()
    out = long.pivot_table(index="claim", columns="model", values=["ours", "verdict"], aggfunc="first", sort=False)
    out.columns = [f"{label}: {what}" for what, label in out.columns]
    out = out[[f"{label}: {what}" for label in models for what in ("ours", "verdict")]]
    out.insert(0, "paper", [paper.get(c, "") for c in out.index])
    extra = pd.DataFrame([{"paper": "Table 1, 12 model x data set rows", **{
        f"{label}: {w}": ("" if w == "ours" else "not testable offline") for label in models for w in ("ours", "verdict")}}],
        index=["The gains hold across GPT-4.1-mini, Gemini-2.0-Flash, Llama-3-8B and four data sets"])
    table = pd.concat([out, extra])
    table.index.name = "claim"
    table.attrs["why"] = long
    table.attrs["not_offline"] = NOT_OFFLINE
    return table


def describe_verdicts(table: pd.DataFrame) -> str:
    """Markdown: per model, the claims reproduced and refuted, each with our numbers (a cost claim's
    ratios too), those not shown only after Holm's adjustment (with both p-values), and those not
    testable here with their reason."""
    long = table.attrs["why"]
    lines = []
    for model, rows in long.groupby("model", sort=False):
        parts = []
        for v in ("reproduced", "refuted"):
            hit = rows[rows["verdict"] == v]
            names = [f"{c.split(' (')[0]} ({_short(o)})" for c, o in zip(hit["claim"], hit["ours"])]
            parts.append(f"{v}: " + ("; ".join(names) if names else "none"))
        if "p_holm" in rows:
            holm_only = rows[(rows["verdict"] == "not shown") & rows["why"].str.contains("unadjusted", na=False)]
            if len(holm_only):
                parts.append("not shown only after Holm's adjustment over the study's accuracy tests: " + "; ".join(
                    f"{c.split(' (')[0]} (p = {p:.3g} alone, Holm p = {q:.3g})"
                    for c, p, q in zip(holm_only["claim"], holm_only["p_value"], holm_only["p_holm"])))
        shown = int(rows["verdict"].isin(["reproduced", "refuted"]).sum())
        missing = int((rows["ours"] == "not recorded").sum())
        note = f"; {missing} not recorded in this study" if missing else ""
        here = rows[rows["verdict"] == "not testable here"]
        if len(here):
            parts.append("not testable here (not a verdict): " + "; ".join(
                f"{c.split(' (')[0]} ({_why_short(w)})" for c, w in zip(here["claim"], here["why"])))
        lines.append(f"- **{model}** ({shown} of the {len(rows) - len(here) - missing} claims it recorded and can "
                     f"test decided{note}). "
                     + ". ".join(parts) + ".")
    return "\n".join(lines)


def _why_short(why: str) -> str:
    """A "not testable here" reason (:func:`lase_nb.tables.off_format`) in the few words chapter 07's
    verdict lines have room for: the training, and how many follow-ups write LASE's revision text."""
    m = re.search(r"(\d+) of its (\d+) (\w+) follow-up replies write LASE's revision text", why)
    if m is None:
        return why
    k, n, name = m.groups()
    count = f"{k} of {n} {name} follow-ups in LASE's revision format"
    if "roles only" not in why:
        return count
    return f"trained for LASE's roles only; {count}" + (", so it rests on the training alone" if k == "0" else "")


def _short(ours: str) -> str:
    """Our number of a claim without its test's tail (``+9.3 pts [+6.3, +12.3]``, ``10.1x vs 7.0x``)."""
    return str(ours).split(", p = ")[0].split(", Holm p")[0]


#: The committed study chapter 07 shows gated on its fresh problems (organism v6: its ``lase-full`` holds
#: only the 200 spent problems it was chosen on; ``lase-large`` and ``mv`` the 600 fresh ones).
GATED_STUDY = "arith-organism-v6"


def gated_study(folder: Any, label: str = "organism v6 (600 fresh problems, gated at 0.8 / 0.5)"
                ) -> tuple[str, dict[str, pd.DataFrame], Any] | None:
    """A study recorded gated on fresh problems, as chapter 07 compares it: LASE as recorded
    (``lase-large``, at its preregistered thresholds, whatever the chapter's), the single agent as its
    stage 0 (the leader alone, same prompt), MV(7) as recorded on the same problems. Returns
    ``(label, tables, run)`` or None when the study has no ``lase-large``."""
    from pathlib import Path

    from ..traces import load_run

    folder = Path(folder)
    if not (folder / "lase-large" / "manifest.json").is_file():
        return None
    run = load_run(folder / "lase-large")
    s0 = run.stages[run.stages["stage"] == 0]
    single = pd.DataFrame({"problem_id": s0["problem_id"].to_numpy(), "answer": s0["answer"].to_numpy(),
                           "correct": s0["correct"].to_numpy(bool), "prompt_tokens": s0["prompt_tokens"].to_numpy(),
                           "completion_tokens": s0["completion_tokens"].to_numpy()})
    single["total_tokens"] = single["prompt_tokens"] + single["completion_tokens"]
    found = {"single": single, "lase": run.problems}
    if (folder / "mv" / "manifest.json").is_file():
        found["mv"] = load_run(folder / "mv").problems
    return label, {s: found[s] for s in SPECS if s in found}, run


def verdict_counts(table: pd.DataFrame) -> pd.DataFrame:
    """How many claims each model reproduces, refutes, cannot show, or cannot test (columns: verdicts)."""
    cols = [c for c in table.columns if c.endswith(": verdict")]
    counts = {c.removesuffix(": verdict"): table[c].value_counts().reindex(list(VERDICTS), fill_value=0) for c in cols}
    return pd.DataFrame(counts).T


def paper_inconsistencies() -> pd.DataFrame:
    """What the paper's own numbers and definitions contradict, each as a fact computed from the
    reference tables (columns: what, numbers, why it matters). Roundings are not listed: Llama-3-8B's
    4.6x in the text against 4.7x from its table's rounded totals is one (``reference.LLAMA3_8B_NOTE``)."""
    sweep = reference.THRESHOLD_SWEEP.sort_values("tau_lp")
    rows = []
    esc = sweep["escalation_rate"].to_numpy(float)
    falls = np.flatnonzero(np.diff(esc) < 0)
    for i in falls:
        a, b = sweep.iloc[i], sweep.iloc[i + 1]
        rows.append({"what": "Table 5: escalation falls as tau_lp rises",
                     "numbers": f"{a['escalation_rate']:.1f}% at tau_lp {a['tau_lp']:.2f}, "
                                f"{b['escalation_rate']:.1f}% at {b['tau_lp']:.2f} (tau_h {a['tau_h']:.2f})",
                     "why it matters": "a deterministic gate on fixed first answers escalates every answer it escalated "
                                       "at a lower tau_lp, and more: the rows cannot come from one set of first answers"})
    t1 = reference.TABLE1[(reference.TABLE1["model"] == "GPT-4.1-mini") & (reference.TABLE1["dataset"] == "MATH-500")]
    lase_acc = float(t1.set_index("method").loc["lase", "accuracy"])
    row = sweep[np.isclose(sweep["accuracy"], lase_acc)]
    rows.append({"what": "The default thresholds are never stated",
                 "numbers": f"Table 1's LASE {lase_acc:.1f}% equals Table 5's row at tau_lp "
                            f"{', '.join(f'{v:.2f}' for v in row['tau_lp'])} (tau_h {sweep['tau_h'].iloc[0]:.2f})",
                 "why it matters": "0.8 / 0.5 is inferred from that match, not quoted"})
    rows.append({"what": "Eq. 7's units",
                 "numbers": "LP_min is a log-probability (at most 0), compared with tau_lp in [0.5, 0.95]",
                 "why it matters": "as written every answer escalates; the thresholds only make sense on exp(LP_min)"})
    rows.append({"what": "Two definitions of delta",
                 "numbers": "Assumption 3.5 (main text) compares with P(e(z_L^(0)) = y); Appendix A.2 with "
                            "P(y_solo = y | U = 1)",
                 "why it matters": "the two deltas differ whenever the gate selects harder problems, which it is "
                                   "built to do; appendix A1 computes both on the recordings"})
    return pd.DataFrame(rows)


#: The ink of each verdict in :func:`plot_claims`: neutral, darker for a decided verdict, since on the
#: seminar path every colour names a strategy (``plots.MEANINGS``) and a verdict is none.
VERDICT_COLORS = {"reproduced": "#000000", "refuted": "#000000", "not shown": NEUTRAL_MID, "too few problems": NEUTRAL_LIGHT}
#: Each verdict's marker in the forest plot, so that no two verdicts differ by shade alone.
VERDICT_MARKERS = {"reproduced": "o", "refuted": "s", "not shown": "D", "too few problems": "X"}
#: Each verdict's line and marker fill: the two decided ones (both black) differ by both.
VERDICT_LINES = {"reproduced": "-", "refuted": "--", "not shown": "-", "too few problems": "-"}
VERDICT_FILLS = {"reproduced": "#000000", "refuted": "white", "not shown": NEUTRAL_MID, "too few problems": "white"}


#: Half-width of the band of an "about equal" claim (the shuffled-order claim), in accuracy.
EQUAL_BAND = 0.05


def plot_claims(table: pd.DataFrame):
    """The accuracy claims of :func:`claims_by_model` as a forest plot: per model (a bold header) and
    claim, our difference (points) with its paired bootstrap 95% interval, coloured by verdict,
    beside the zero line and, on the rows that use them, the band a claim is judged against: the
    non-inferiority margin (-3 points) of a "matches or beats" claim and the +-5-point band of an
    "about equal" claim. Cost and calibration claims are in the table."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.transforms import blended_transform_factory

    long = table.attrs["why"]
    rows = long[long["kind"].notna()] if "kind" in long else long.iloc[:0]
    if rows.empty:
        raise DataError("no accuracy claim was tested: record at least a single agent and LASE")
    models = list(dict.fromkeys(rows["model"]))
    # one row per claim, a gap and a header line above each model's rows, top to bottom
    pos, y, headers = [], 0.0, {}
    for m in models:
        headers[m] = y
        y -= 1
        for _ in range(int((rows["model"] == m).sum())):
            pos.append(y)
            y -= 1
        y -= 0.4
    order = [i for m in models for i in np.flatnonzero(rows["model"].to_numpy() == m)]
    rows = rows.iloc[order]
    pos = np.array(pos)
    fig, ax = plt.subplots(figsize=(10, 1.4 + 0.36 * (len(rows) + 1.4 * len(models))))
    for yi, r in zip(pos, rows.itertuples()):
        if r.kind == "about equal":
            ax.fill_between([-100 * EQUAL_BAND, 100 * EQUAL_BAND], yi - 0.42, yi + 0.42, color=NEUTRAL_LIGHT, alpha=0.45,
                            lw=0, zorder=0)
        elif r.kind == "no worse":
            ax.plot([-100 * MARGIN] * 2, [yi - 0.42, yi + 0.42], color="0.35", lw=1.5, ls=":", zorder=1)
        c = VERDICT_COLORS[r.verdict]
        ax.plot([100 * r.diff_lo, 100 * r.diff_hi], [yi, yi], color=c, lw=2.5, ls=VERDICT_LINES[r.verdict], zorder=2)
        ax.plot(100 * r.diff, yi, VERDICT_MARKERS[r.verdict], color=c, mfc=VERDICT_FILLS[r.verdict], mec="black",
                ms=8, zorder=3)
    ax.axvline(0, color="0.3", lw=1, zorder=1)
    ax.set_yticks(pos, [f"{r.claim.split(' (')[0]} (n={int(r.n)})" for r in rows.itertuples()], fontsize=9.5)
    ax.set_ylim(pos.min() - 0.7, max(headers.values()) + 0.7)
    ax.grid(axis="y", visible=False)
    left = blended_transform_factory(ax.transAxes, ax.transData)
    for m, yh in headers.items():
        ax.text(-0.02, yh, m, transform=left, ha="right", va="center", fontweight="bold", fontsize=10.5)
        ax.axhline(yh + 0.5, color="0.85", lw=0.8, zorder=0)
    ax.set_xlabel("first strategy minus second (points; paired bootstrap 95% interval)")
    handles = [plt.Line2D([], [], color=c, lw=2.5, ls=VERDICT_LINES[v], marker=VERDICT_MARKERS[v],
                          mfc=VERDICT_FILLS[v], mec="black", ms=8, label=v)
               for v, c in VERDICT_COLORS.items() if v in set(rows["verdict"])]
    if (rows["kind"] == "no worse").any():
        handles.append(plt.Line2D([], [], color="0.35", ls=":", lw=1.5,
                                  label=f"non-inferiority margin (-{100 * MARGIN:.0f} points)"))
    if (rows["kind"] == "about equal").any():
        handles.append(Patch(color=NEUTRAL_LIGHT, alpha=0.45, label=f"about equal: +-{100 * EQUAL_BAND:.0f} points"))
    fig.suptitle("The paper's accuracy claims on our models, with each verdict", x=0.01, ha="left",
                 fontweight="bold")  # left-aligned over the whole figure: the claim labels push the axes right
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 3), fontsize=9.5, frameon=False)
    return fig
