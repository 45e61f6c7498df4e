"""The reference tables are well formed. Structure only: these are the papers' numbers for display,
never values our code is expected to reproduce."""

from __future__ import annotations

import pandas as pd
import pytest

from lase_nb import reference as ref

ALL_TABLES = {
    "TABLE1": ref.TABLE1, "TOKEN_MULTIPLIERS": ref.TOKEN_MULTIPLIERS, "THRESHOLD_SWEEP": ref.THRESHOLD_SWEEP,
    "TAU_H_SWEEP": ref.TAU_H_SWEEP, "CALIBRATION": ref.CALIBRATION, "LASE_MV": ref.LASE_MV,
    "SHUFFLED_ORDER": ref.SHUFFLED_ORDER, "LLAMA3_8B": ref.LLAMA3_8B, "MOA_VS_LASE": ref.MOA_VS_LASE,
}


@pytest.mark.parametrize("name", list(ALL_TABLES))
def test_every_table_is_sourced_and_in_range(name):
    df = ALL_TABLES[name]
    assert isinstance(df, pd.DataFrame) and len(df) > 0
    assert "2610.16343" in df.attrs["source"] and "Yoa" in df.attrs["source"]
    assert df.notna().all().all()
    for col in ("accuracy", "escalation_rate"):
        if col in df:
            assert df[col].between(0, 100).all(), (name, col)
    for col in ("avg_tokens", "total_tokens"):
        if col in df:
            assert (df[col] > 0).all() and (df[col] % 1 == 0).all(), (name, col)


def test_table1_shape():
    t = ref.TABLE1
    assert len(t) == 48
    pairs = t.groupby(["model", "dataset"], sort=False)["method"].apply(tuple)
    assert len(pairs) == 12
    assert all(m == ref.METHODS for m in pairs)
    assert set(t["model"]) == {"Gemini-2.0-Flash", "GPT-4.1-mini"}
    assert set(t["dataset"]) == set(ref.DATASET_SIZES)
    assert (t["n_problems"] == t["dataset"].map(ref.DATASET_SIZES)).all()
    assert not t.duplicated(["model", "dataset", "method"]).any()
    # tokens were given to 0.1k: whole hundreds
    assert (t["avg_tokens"] % 100 == 0).all()


def test_table1_wide_matches_long():
    acc = ref.table1_wide()
    tok = ref.table1_wide("avg_tokens")
    assert acc.shape == tok.shape == (12, 4)
    assert list(acc.columns) == list(ref.METHODS)
    for r in ref.TABLE1.itertuples():
        assert acc.loc[(r.model, r.dataset), r.method] == r.accuracy
        assert tok.loc[(r.model, r.dataset), r.method] == r.avg_tokens


def test_small_tables_structure():
    assert list(ref.TOKEN_MULTIPLIERS["method"]) == list(ref.METHODS)
    assert ref.TOKEN_MULTIPLIERS.set_index("method").loc["single", "token_multiplier"] == 1.0
    s = ref.THRESHOLD_SWEEP
    assert s["tau_lp"].is_monotonic_increasing and s["tau_lp"].between(0, 1).all()
    assert (s["tau_h"] == 0.5).all()
    assert list(ref.TAU_H_SWEEP["tau_h"]) == [0.2, 0.5, 0.8]
    assert set(ref.CALIBRATION["proxy"]) <= {"p_min", "h_max"}
    assert set(ref.CALIBRATION["op"]) <= {"<", ">", ">=", "<="}
    assert ref.CALIBRATION.attrs["n_answers"] == 2000
    assert set(ref.LLAMA3_8B["method"]) == set(ref.METHODS)
    assert set(ref.MOA_VS_LASE["method"]) == {"moa", "lase"}
    assert set(ref.LASE_MV["method"]) == {"lase+mv", "mv"}
    assert "Eo" in ref.DOWN_SOURCE and "DOWN" in ref.DOWN_CLAIM


def test_shuffled_summary_is_consistent_with_its_runs():
    runs = ref.SHUFFLED_ORDER.query("order == 'shuffled'")["accuracy"]
    assert len(runs) == 3
    assert round(runs.mean(), 1) == ref.SHUFFLED_SUMMARY["mean"]
    assert round(runs.std(ddof=1), 2) == ref.SHUFFLED_SUMMARY["sd"]
    original = ref.SHUFFLED_ORDER.query("order == 'original'")["accuracy"]
    assert list(original) == [ref.SHUFFLED_SUMMARY["original"]]


def test_as_fraction_does_not_mutate():
    f = ref.as_fraction(ref.THRESHOLD_SWEEP)
    assert f["accuracy"].between(0, 1).all() and f["escalation_rate"].between(0, 1).all()
    assert (f["avg_tokens"] == ref.THRESHOLD_SWEEP["avg_tokens"]).all()
    assert ref.THRESHOLD_SWEEP["accuracy"].gt(1).all()
    assert f.attrs["source"] == ref.SOURCE


def test_paper_column_and_beside():
    p = ref.paper_column(ref.TABLE1)
    assert {"model", "dataset", "method", "accuracy (paper)", "avg_tokens (paper)"} <= set(p.columns)
    assert "accuracy" not in p.columns
    ours = pd.DataFrame({"method": ["single", "lase", "dummy"], "accuracy": [0.4, 0.5, 0.1],
                         "avg_tokens": [10.0, 20.0, 5.0]})
    paper = ref.TABLE1.query("model == 'GPT-4.1-mini' and dataset == 'MATH-500'")
    b = ref.beside(ours, paper, on=["method"])
    assert list(b["method"]) == ["single", "lase", "dummy"]
    assert {"accuracy (this run)", "accuracy (paper)", "avg_tokens (this run)"} <= set(b.columns)
    assert b["accuracy (paper)"].iloc[:2].between(0, 1).all()  # fractions, like ours
    assert pd.isna(b["accuracy (paper)"].iloc[2])


def test_lase_cost_is_said_as_an_average_over_table_1s_rows():
    rows = ref.lase_cost_rows()
    assert len(rows) == 12 and rows.loc[("GPT-4.1-mini", "MATH-500"), "lase_multiplier"] == pytest.approx(1.8)
    assert rows["lase_multiplier"].mean() == pytest.approx(1.3, abs=0.05)  # the paper's stated average
    text = ref.describe_lase_cost()
    assert text.startswith("The paper's LASE at 1.3x the single agent's tokens is an average over the 12 rows")
    assert "On GPT-4.1-mini and MATH-500, the setting of its threshold sweep, LASE spent 1.8x" in text
    assert "Llama-3-8B (MATH-500) roughly 4.6x" in text
