"""The papers' published numbers, in one labelled place (transcribed from the LASE and DOWN papers).

These are REFERENCE values to display beside our own measurements ("paper" vs "this run"),
never values a test or a notebook expects our code to reproduce: our models, samples and
budgets differ.

Units are the paper's: accuracy and escalation rate in percent (0-100); token counts as plain
numbers (the paper's "0.7k" is 700, "1.4M" is 1_400_000). :mod:`lase_nb.stats` works in
fractions; :func:`as_fraction` converts. Every table carries its source in ``df.attrs["source"]``.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

__all__ = [
    "SOURCE", "DOWN_SOURCE", "METHODS", "DATASET_SIZES", "PERCENT_COLUMNS",
    "TABLE1", "TOKEN_MULTIPLIERS", "THRESHOLD_SWEEP", "TAU_H_SWEEP", "CALIBRATION", "LASE_MV",
    "SHUFFLED_ORDER", "SHUFFLED_SUMMARY", "LLAMA3_8B", "LLAMA3_8B_STATED_MULTIPLIER", "LLAMA3_8B_NOTE", "MOA_VS_LASE",
    "DOWN_CLAIM", "table1_wide", "as_fraction", "paper_column", "beside", "llama3_multiplier",
    "lase_cost_rows", "describe_lase_cost",
]

SOURCE = ("Yoa et al., 'Efficient Multi-Agent Reasoning via Confidence-Guided Adaptive Debate' "
          "(LASE), ICML 2026, arXiv 2610.16343")
DOWN_SOURCE = ("Eo, Moon, Zi, Park, Lim, 'Debate Only When Necessary: Adaptive Multiagent "
               "Collaboration for Efficient LLM Reasoning' (DOWN), 2025")

METHODS = ("single", "mv", "mad", "lase")  # single agent, MV(7), MAD(3 agents x 2 rounds), LASE
PERCENT_COLUMNS = ("accuracy", "escalation_rate")

DATASET_SIZES = {  # problems per evaluation set, as the paper used them
    "MATH-500": 500, "MATH-lv5": 1324, "GSM-Symbolic": 500,
    "MMLU-Pro": 504, "GPQA-Diamond": 198, "TruthfulQA-MC": 817,
}


def _table(rows: Sequence[tuple], columns: Sequence[str], source: str = SOURCE, note: str = "") -> pd.DataFrame:
    df = pd.DataFrame(list(rows), columns=list(columns))
    df.attrs["source"] = source
    if note:
        df.attrs["note"] = note
    return df


# ---- Table 1: accuracy (%) and average tokens per problem, single / MV / MAD / LASE -------------
_G, _O = "Gemini-2.0-Flash", "GPT-4.1-mini"
_TABLE1 = [  # model, dataset, accuracy single/mv/mad/lase, tokens in k single/mv/mad/lase
    (_G, "MATH-500", (80.0, 86.4, 74.8, 87.2), (0.7, 5.2, 11.8, 1.1)),
    (_G, "MATH-lv5", (55.7, 56.7, 56.0, 57.1), (1.0, 7.4, 20.3, 1.8)),
    (_G, "GSM-Symbolic", (88.4, 91.2, 88.6, 93.4), (0.4, 2.6, 5.6, 0.4)),
    (_G, "MMLU-Pro", (78.4, 79.3, 79.6, 81.3), (0.8, 5.6, 10.3, 0.8)),
    (_G, "GPQA-Diamond", (61.6, 62.7, 62.1, 65.2), (1.0, 7.5, 17.2, 1.2)),
    (_G, "TruthfulQA-MC", (72.6, 80.2, 77.6, 80.3), (0.4, 2.7, 5.2, 0.4)),
    (_O, "MATH-500", (73.0, 73.8, 73.8, 74.2), (1.0, 7.3, 16.1, 1.8)),
    (_O, "MATH-lv5", (79.8, 84.7, 86.4, 86.6), (1.6, 11.7, 29.1, 2.6)),
    (_O, "GSM-Symbolic", (94.4, 94.8, 93.2, 94.8), (0.3, 2.4, 5.9, 0.5)),
    (_O, "MMLU-Pro", (79.4, 81.5, 81.7, 81.8), (1.0, 6.8, 11.7, 1.0)),
    (_O, "GPQA-Diamond", (67.7, 71.2, 72.7, 72.9), (1.4, 10.3, 19.3, 1.5)),
    (_O, "TruthfulQA-MC", (79.9, 80.9, 80.8, 81.1), (0.5, 3.4, 5.7, 0.5)),
]

TABLE1 = _table(
    [(model, ds, DATASET_SIZES[ds], m, acc, int(round(tok * 1000)))
     for model, ds, accs, toks in _TABLE1 for m, acc, tok in zip(METHODS, accs, toks)],
    ["model", "dataset", "n_problems", "method", "accuracy", "avg_tokens"],
    note="Table 1. accuracy in %, avg_tokens per problem (rounded to 0.1k in the paper); "
         "MV = 7 samples, MAD = 3 agents x 2 rounds.")
"""Long format: 12 (model, dataset) rows x 4 methods = 48 rows."""

TOKEN_MULTIPLIERS = _table(
    [("single", 1.0), ("mv", 7.1), ("mad", 15.7), ("lase", 1.3)], ["method", "token_multiplier"],
    note="Average token multiplier vs the single agent across datasets.")

THRESHOLD_SWEEP = _table(
    [(0.50, 0.50, 74.1, 1800, 21.4), (0.60, 0.50, 74.8, 1800, 21.2), (0.80, 0.50, 74.2, 1800, 22.6),
     (0.90, 0.50, 74.8, 2600, 30.8), (0.95, 0.50, 75.1, 3100, 42.8)],
    ["tau_lp", "tau_h", "accuracy", "avg_tokens", "escalation_rate"],
    note="GPT-4.1-mini, MATH-500, tau_h = 0.50; accuracy and escalation_rate in %. "
         "The paper's reading: thresholds are a budget knob, not an accuracy knob.")
THRESHOLD_SWEEP.attrs.update(model=_O, dataset="MATH-500")

TAU_H_SWEEP = _table(
    [(0.2, 73.8), (0.5, 74.2), (0.8, 74.1)], ["tau_h", "accuracy"],
    note="GPT-4.1-mini, MATH-500, tau_lp held fixed (value not restated in the paper's sweep table); accuracy in %.")
TAU_H_SWEEP.attrs.update(model=_O, dataset="MATH-500")

CALIBRATION = _table(
    [("min token prob >= 0.99", "p_min", ">=", 0.99, 85.5),
     ("min token prob < 0.50", "p_min", "<", 0.50, 50.9),
     ("answer entropy > 1.0", "h_max", ">", 1.0, 30.4)],
    ["condition", "proxy", "op", "threshold", "accuracy"],
    note="2,000 MATH-500 answers (two models, two runs); accuracy in % among answers meeting "
         "the condition. Entropy in nats.")
CALIBRATION.attrs["n_answers"] = 2000

LASE_MV = _table(
    [("lase+mv", 5, 88.0, 5400), ("mv", 7, 86.4, 5200)], ["method", "n_samples", "accuracy", "avg_tokens"],
    note="MATH-500: LASE+MV (N=5 LASE chains) vs MV(7); accuracy in %. The paper's Table 2 does not name the "
         "model (its MV(7) 86.4% is Gemini-2.0-Flash's MATH-500 row of Table 1).")
LASE_MV.attrs.update(model="model not named (Table 2)", dataset="MATH-500")

SHUFFLED_ORDER = _table(
    [(1, "shuffled", 86.8), (2, "shuffled", 87.2), (3, "shuffled", 86.6), (0, "original", 87.2)],
    ["run", "order", "accuracy"],
    note="LASE with shuffled supporter order, 3 runs, vs the original order; accuracy in %.")
SHUFFLED_SUMMARY = {"mean": 86.9, "sd": 0.31, "original": 87.2}
"""As printed: shuffled mean 86.9 +- 0.31 (sample standard deviation) vs 87.2 in the original order."""

LLAMA3_8B = _table(
    [("single", 25.7, 300_000), ("mv", 31.8, 2_000_000), ("mad", 24.1, 4_400_000), ("lase", 32.9, 1_400_000)],
    ["method", "accuracy", "total_tokens"],
    note="Llama-3-8B, MATH-500; accuracy in %, total tokens over the data set.")
LLAMA3_8B.attrs.update(model="Llama-3-8B", dataset="MATH-500")
_LL = LLAMA3_8B.set_index("method")["total_tokens"]
_O500 = TABLE1[(TABLE1["model"] == _O) & (TABLE1["dataset"] == "MATH-500")].set_index("method")["avg_tokens"]
#: The paper's own words for LASE's cost on Llama-3-8B (Appendix E.2): "roughly 4.6x the tokens of a
#: single agent". Its table's rounded totals (1.4M / 0.3M) give 4.7; the chapters quote the text.
LLAMA3_8B_STATED_MULTIPLIER = 4.6
LLAMA3_8B_NOTE = (f"On Llama-3-8B (MATH-500) LASE spent roughly {LLAMA3_8B_STATED_MULTIPLIER:.1f}x the single "
                  f"agent's tokens (Appendix E.2; the rounded totals of its table, {_LL['lase'] / 1e6:.1f}M / "
                  f"{_LL['single'] / 1e6:.1f}M, give {_LL['lase'] / _LL['single']:.1f}), vs "
                  f"{_O500['lase'] / _O500['single']:.1f}x on {_O}: a weaker model is unsure more often, so it "
                  "escalates more.")

MOA_VS_LASE = _table(
    [("moa", 72.0, 3_600_000), ("lase", 74.2, 900_000)], ["method", "accuracy", "total_tokens"],
    note="Mixture-of-Agents vs LASE, GPT-4.1-mini, MATH-500; accuracy in %, total tokens.")
MOA_VS_LASE.attrs.update(model=_O, dataset="MATH-500")

DOWN_CLAIM = ("DOWN (Eo et al., 2025): up to ~6x fewer agent calls than always-debate at equal or better "
              "accuracy (MuSR, StrategyQA, MMLU domains; mixed-model setups too).")


def table1_wide(value: str = "accuracy") -> pd.DataFrame:
    """Table 1 as printed: one row per (model, dataset), one column per method, for ``value``."""
    wide = TABLE1.pivot(index=["model", "dataset"], columns="method", values=value)
    order = list(dict.fromkeys(zip(TABLE1["model"], TABLE1["dataset"])))
    wide = wide.loc[order, list(METHODS)]
    wide.columns.name = None
    wide.attrs = dict(TABLE1.attrs)
    return wide


def as_fraction(df: pd.DataFrame) -> pd.DataFrame:
    """A copy with the percent columns (accuracy, escalation_rate) divided by 100."""
    out = df.copy()
    for c in PERCENT_COLUMNS:
        if c in out:
            out[c] = out[c] / 100.0
    out.attrs = dict(df.attrs)
    return out


def paper_column(df: pd.DataFrame, label: str = "paper", keys: Sequence[str] | None = None) -> pd.DataFrame:
    """A copy whose value columns read ``"<col> (<label>)"``; key columns keep their names.

    ``keys`` default to the identifying columns present (model, dataset, n_problems, method,
    tau_lp, tau_h, run, order, condition, proxy, op, threshold, n_samples), so the result can be
    merged onto our own table by those keys.
    """
    if keys is None:
        keys = [c for c in ("model", "dataset", "n_problems", "method", "tau_lp", "tau_h", "run", "order",
                            "condition", "proxy", "op", "threshold", "n_samples") if c in df.columns]
    out = df.rename(columns={c: f"{c} ({label})" for c in df.columns if c not in keys})
    out.attrs = dict(df.attrs)
    return out


def beside(ours: pd.DataFrame, ref: pd.DataFrame, on: Sequence[str], label_ours: str = "this run",
           label_ref: str = "paper", fraction: bool = True) -> pd.DataFrame:
    """Our table with the reference values alongside, matched on ``on`` (left join).

    Shared value columns become ``"<col> (this run)"`` and ``"<col> (paper)"``. With
    ``fraction=True`` the reference's percents are turned into fractions, like ours.
    """
    ref = as_fraction(ref) if fraction else ref
    ours_l = ours.rename(columns={c: f"{c} ({label_ours})" for c in ours.columns
                                  if c not in on and c in ref.columns})
    merged = ours_l.merge(paper_column(ref, label_ref, keys=list(on)), on=list(on), how="left")
    merged.attrs = {"source": ref.attrs.get("source", "")}
    return merged


def llama3_multiplier() -> float:
    """LASE's tokens over the single agent's on Llama-3-8B as the paper states it (Appendix E.2: 4.6x)."""
    return LLAMA3_8B_STATED_MULTIPLIER




def lase_cost_rows() -> pd.DataFrame:
    """LASE's tokens over the single agent's on each (model, dataset) row of Table 1, from its
    rounded token counts: the rows behind the paper's average multiplier (:data:`TOKEN_MULTIPLIERS`)."""
    wide = table1_wide("avg_tokens")
    out = (wide["lase"] / wide["single"]).rename("lase_multiplier").to_frame()
    out.attrs = {"source": SOURCE, "note": "LASE / single-agent tokens per Table 1 row (rounded to 0.1k there)"}
    return out


def describe_lase_cost() -> str:
    """The paper's "LASE at 1.3x" said for what it is, an average over Table 1's rows, beside the
    multiplier of the setting of its threshold sweep (GPT-4.1-mini, MATH-500) and of its weak model
    (Llama-3-8B, Appendix E.2)."""
    rows = lase_cost_rows()
    avg = float(TOKEN_MULTIPLIERS.set_index("method").loc["lase", "token_multiplier"])
    sweep = (THRESHOLD_SWEEP.attrs["model"], THRESHOLD_SWEEP.attrs["dataset"])
    return (f"The paper's LASE at {avg:.1f}x the single agent's tokens is an average over the {len(rows)} rows of its "
            f"Table 1 ({rows.index.get_level_values('model').nunique()} models x "
            f"{rows.index.get_level_values('dataset').nunique()} data sets; the rows run from "
            f"{rows['lase_multiplier'].min():.1f}x to {rows['lase_multiplier'].max():.1f}x, their mean "
            f"{rows['lase_multiplier'].mean():.1f}x). On {sweep[0]} and {sweep[1]}, the setting of its threshold "
            f"sweep, LASE spent {rows.loc[sweep, 'lase_multiplier']:.1f}x; on the weaker {LLAMA3_8B.attrs['model']} "
            f"({LLAMA3_8B.attrs['dataset']}) roughly {LLAMA3_8B_STATED_MULTIPLIER:.1f}x (Appendix E.2).")
