"""The preregistration (lase_nb.organism.preregistration): built from calibration chains, read back by the
analysis (never retyped), its claim rule needing both tests."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lase_nb.organism import preregistration as P
from lase_nb.errors import DataError
from tests.synthetic import model


def _prereg(tmp_path, chains=None):
    chains = chains or model(30, 40, fix=20)
    pred = {"p_u1_lcb": 0.3, "rho_lcb": 0.2, "delta_lcb": 0.4, "gain_lower_bound": 0.024}
    doc = P.build(chains, pred, source={"run": "calibration", "seed": 21}, budget=1.5, held_out={"seed": 22})
    path = tmp_path / "preregistration.json"
    path.write_text(json.dumps(doc))
    return P.load(path)


def test_it_fixes_thresholds_budget_pair_tests_and_prediction(tmp_path):
    doc = _prereg(tmp_path)
    assert (doc["thresholds"]["tau_lp"], doc["thresholds"]["tau_h"]) == (0.8, 0.5)
    assert doc["budget_pair"]["ratio"] == 1.5 and 0 <= doc["budget_pair"]["tau_lp"] <= 1
    assert doc["primary"]["tests"]["mcnemar"]["alpha"] == 0.05 and doc["secondary"]["correction"] == "holm"
    assert doc["prediction"]["gain_lower_bound"] == 0.024 and doc["calibration"]["seed"] == 21


def test_the_primary_result_reads_the_file_and_needs_both_tests(tmp_path):
    doc = _prereg(tmp_path)
    big = P.primary_result(doc, model(30, 40, fix=20))
    assert big["claimed"] and big["prediction_met"] and big["p_value"] < 0.05
    small = P.primary_result(doc, model(30, 40, fix=5))  # 5 fixes, 0 breaks: interval above 0, p = 0.0625
    assert small["diff_lo"] > 0 and small["p_value"] > 0.05 and not small["claimed"]
    doc["thresholds"]["tau_lp"] = 0.0  # the analysis follows the file: nothing escalates now
    assert P.primary_result(doc, model(30, 40, fix=20))["diff"] == 0


def test_secondary_results_are_holm_adjusted(tmp_path):
    doc = _prereg(tmp_path)
    rng = np.random.default_rng(0)
    a = rng.random(200) < 0.7
    pairs = {"LASE vs MV(7)": (a, a ^ (rng.random(200) < 0.05)), "LASE vs MAD(3x2)": (a, rng.random(200) < 0.5)}
    rows = P.secondary_results(doc, pairs)
    assert [r["name"] for r in rows] == ["LASE vs MV(7)", "LASE vs MAD(3x2)"]
    raw = sorted(r["p_value"] for r in rows)
    assert min(r["p_holm"] for r in rows) == pytest.approx(min(1.0, 2 * raw[0]))


def test_no_preregistration_is_a_clear_error(tmp_path):
    with pytest.raises(DataError, match="preregister.py"):
        P.load(tmp_path / "none.json")


def test_the_primary_result_on_a_gated_run_checks_its_thresholds(tmp_path):
    from types import SimpleNamespace

    import pandas as pd

    doc = _prereg(tmp_path)
    ids = [f"p{i}" for i in range(40)]
    alone = [i < 20 for i in range(40)]  # 20 right alone; 12 fixed (20-31), none broken
    final = [i < 32 for i in range(40)]
    run = SimpleNamespace(path="lase-large", manifest={"config": {"tau_lp": 0.8, "tau_h": 0.5, "full_chain": False}},
                          stages=pd.DataFrame({"problem_id": ids, "stage": 0, "correct": alone}),
                          problems=pd.DataFrame({"problem_id": ids, "correct": final,
                                                 "stop_stage": [int(i >= 20) for i in range(40)]}))
    r = P.primary_from_gated_run(doc, run)
    assert (r["b"], r["c"], r["escalated"]) == (12, 0, 20) and r["claimed"]
    run.manifest["config"]["tau_lp"] = 0.9
    with pytest.raises(DataError, match="preregistered"):
        P.primary_from_gated_run(doc, run)
    run.manifest["config"].update(tau_lp=0.8, full_chain=True)
    with pytest.raises(DataError, match="full-chain"):
        P.primary_from_gated_run(doc, run)


def test_secondary_pairs_read_the_shipped_recordings_as_the_file_names_them():
    """The family's inputs come from the recordings, by the preregistration's own names: on the
    organism's runs every comparison with its runs recorded is present, the two models' gains
    included, and the table and its words follow the adjusted p-values."""
    from lase_nb.organism.regimes import compare_gains
    from lase_nb.runs import chains_by_model, control_models, load_runs

    prereg = P.load()
    runs = load_runs(P.PATH.parent / "arith-organism-point")
    th = prereg["thresholds"]
    control = compare_gains(*chains_by_model(control_models(P.PATH.parent / "control-level1",
                                                            models=("organism", "smollm2"))).values(),
                            th["tau_lp"], th["tau_h"])
    pairs = P.secondary_pairs(prereg, runs, control)
    assert set(pairs) == {s["name"] for s in prereg["secondary"]["comparisons"]}
    assert "up" in pairs["organism's gain minus the base model's gain"]  # a test of two gains, run once
    assert "organism's gain minus the base model's gain" not in P.secondary_pairs(prereg, runs)
    rows = P.secondary_results(prereg, pairs)
    table = P.secondary_table(rows)
    assert list(table.index) == [r["name"] for r in rows] and (table["Holm p"] >= table["p"] - 1e-12).all()
    words = P.describe_secondary(rows)
    assert f"Of the {len(rows)} preregistered comparisons, {int(table['claimed'].sum())}" in words


def test_describe_secondary_says_what_the_correction_withdrew(tmp_path):
    doc = _prereg(tmp_path)
    a = np.r_[np.ones(12, bool), np.zeros(88, bool)]
    b = np.zeros(100, bool)
    rows = P.secondary_results(doc, {n: (a, b) for n in ("LASE vs MV(7)", "LASE vs MAD(3x2)")} |
                               {"LASE vs MoA(2x3)": (np.r_[np.ones(5, bool), np.zeros(95, bool)], b)})
    words = P.describe_secondary(rows)  # 12-0 clears after Holm; 5-0 has p = 0.0625: never cleared
    assert "2 are claimed" in words and "No other comparison clears both tests" in words
    rows[2].update(p_value=0.03, claimed=False)  # significant alone, not after the correction
    assert "Unadjusted, LASE vs MoA(2x3) would also have cleared" in P.describe_secondary(rows)


def test_the_report_script_prints_every_preregistered_section(tmp_path):
    """`python data/traces/report.py` on the shipped recordings: the primary test, the family with
    every comparison the file names, the aim and the control; a missing control is named."""
    import subprocess
    import sys

    script = P.PATH.parent / "report.py"
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True).stdout
    for heading in ("## Primary: gated LASE vs the leader alone on lase-large", "## Secondary family (Holm)",
                    "## The aim", "## The negative control: both models on the same"):
        assert heading in out
    for spec in P.load()["secondary"]["comparisons"]:
        assert f"| {spec['name']} |" in out
    missing = subprocess.run([sys.executable, str(script), "--control", str(tmp_path / "none")], capture_output=True,
                             text=True, check=True).stdout
    assert "## The negative control: not yet recorded (organism, smollm2)" in missing
    v6 = subprocess.run([sys.executable, str(script), "--v6"], capture_output=True, text=True, check=True).stdout
    assert "# Organism v6 (preregistered" in v6 and "## Secondary endpoints (reported, no claim)" in v6
    endpoints, made_of = v6.split("## What the gain is made of", 1)
    assert endpoints.count("\n| ") == 1 + 5  # the header and one row per secondary endpoint
    assert "**no-difference**" in made_of or "**note-helps**" in made_of or "**undecided**" in made_of \
        or "**note-hurts**" in made_of  # the controls' primary, with its preregistered outcome


def test_the_report_scripts_primary_numbers_are_the_recordings():
    """The primary test as report.py prints it, recomputed here from the raw JSONL files of
    lase-large (each problem's final answer against its stage-0 answer) and scipy's exact
    binomial test: the printed counts and p are the recordings', not a copy."""
    import json
    import subprocess
    import sys

    from scipy.stats import binomtest

    folder = P.PATH.parent / "arith-organism-point" / "lase-large"
    read = lambda name: [json.loads(x) for x in (folder / name).read_text().splitlines() if x.strip()]  # noqa: E731
    final = {r["problem_id"]: bool(r["correct"]) for r in read("problems.jsonl")}
    alone = {r["problem_id"]: bool(r["correct"]) for r in read("stages.jsonl") if r["stage"] == 0}
    fixed = sum(final[i] and not alone[i] for i in final)
    broken = sum(alone[i] and not final[i] for i in final)
    p = binomtest(min(fixed, broken), fixed + broken, 0.5).pvalue
    gain = 100 * (sum(final.values()) - sum(alone.values())) / len(final)
    out = subprocess.run([sys.executable, str(P.PATH.parent / "report.py")], capture_output=True, text=True,
                         check=True).stdout
    primary = out.split("## Primary: gated LASE vs the leader alone on lase-large", 1)[1].split("##", 1)[0]
    assert f"{fixed} vs {broken} discordant, McNemar p = {p:.3g}, n = {len(final)}" in primary
    assert f"{gain:+.1f} points" in primary
    if p >= 0.05 or fixed <= broken:  # a claim needs the exact test too
        assert "**claimed: False**" in primary
    # the page that reports it says the same numbers (data/traces/README.md, "What the recordings show")
    import re

    diff, lo, hi = re.search(r": ([+-]\d+\.\d) points \[([+-]\d+\.\d), ([+-]\d+\.\d)\]", primary).groups()
    page = (P.PATH.parent / "README.md").read_text()
    assert f"{float(diff):.1f} [{lo}, {hi}], p = {p:.2f} ({fixed} fixed, {broken} broken)" in page


def _round3(chains, **kw):
    return P.build_round3(chains, None, source={"run": "calibration", "seed": 31},
                          model_files={"adapter_sha256": "ab" * 32}, held_out={"seed": 32}, **kw)


def test_round3_pins_the_adapter_and_says_what_calibration_showed():
    doc = _round3(model(30, 40, esc_right=10, fix=20, brk=3))
    assert doc["version"] == 2 and doc["model_files"]["adapter_sha256"] == "ab" * 32
    assert (doc["thresholds"]["tau_lp"], doc["thresholds"]["tau_h"]) == (0.8, 0.5)  # 40% escalate: kept
    c = doc["calibration_at_thresholds"]
    assert (c["fixed"], c["broken"], c["escalated"]) == (20, 3, 0.4)
    text = P.describe_calibration(doc)
    assert "escalated 40%" in text and "(20 fixed, 3 broken)" in text and "seed 31" in text
    assert any(s["b"] == "careful" for s in doc["secondary"]["comparisons"])
    with pytest.raises(DataError, match="adapter_sha256"):
        P.build_round3(model(30, 40), None, source={}, model_files={}, held_out={})


def test_round3_leaves_out_a_comparison_degenerate_on_calibration():
    """A budget pair that escalates nothing on calibration can never be claimed: not preregistered."""
    doc = _round3(model(30, 40, fix=20), budget=1.0)
    names = [s["name"] for s in doc["secondary"]["comparisons"]]
    assert "LASE at the budget pair vs the leader alone" not in names
    assert doc["secondary"]["left_out"][0]["why"].startswith("degenerate on calibration")
    assert doc["budget_pair"]["calibration_escalation"] == 0


def test_held_out_gains_give_one_verdict_from_the_preregistered_run():
    """The organism's gain read on each recording (issue 51): only lase-large, the preregistered gated
    run, carries the prediction's verdict; the full chains and the single-agent pairing are the same
    contrast on other problems, each with its n."""
    from lase_nb import runs

    doc = P.load()
    rs = runs.load_runs("data/traces/arith-organism-point", ["lase", "lase-large", "single"])
    gains = P.held_out_gains(doc, rs)
    assert list(gains) == ["lase-large", "lase-full", "single"]
    assert gains["lase-large"] == {**P.primary_from_gated_run(doc, rs["lase-large"]), "where": P.GAIN_RECORDINGS["lase-large"]}
    assert "prediction_met" in gains["lase-large"] and not any("prediction_met" in g for k, g in gains.items()
                                                               if k != "lase-large")
    assert gains["lase-large"]["n"] > gains["lase-full"]["n"] > gains["single"]["n"] > 0
    text = P.describe_held_out_gains(gains, doc)
    if gains["lase-large"]["vacuous_terms"]:  # the committed prediction: delta's bound is -0.27, clipped to 0
        assert "is vacuous" in text and "delta >= -0.27" in text and "clipped to +0.0 points" in text
        assert "is met" not in text and "is missed" not in text
    else:
        verdict = "met" if gains["lase-large"]["prediction_met"] else "missed"
        assert f"is {verdict} by the point estimate" in text and text.count(" met ") + text.count(" missed ") == 1
    for g in gains.values():
        assert f"{100 * g['diff']:+.1f} points" in text and f"{g['n']} " in text
    only_chains = P.held_out_gains(doc, {"lase": rs["lase"]})
    assert list(only_chains) == ["lase-full"]
    assert "lacks" in P.describe_held_out_gains(only_chains, doc)


def test_other_gains_say_whether_their_interval_holds_the_primary_estimate():
    primary = {"n": 600, "escalated": 300, "acc_a": 0.57, "acc_b": 0.58, "diff": -0.01, "diff_lo": -0.03, "diff_hi": 0.02,
               "b": 27, "c": 31, "p_value": 0.69, "claimed": False, "predicted_lower_bound": 0.0,
               "prediction_met": False, "where": "primary"}
    near = {"n": 200, "diff": 0.01, "diff_lo": -0.02, "diff_hi": 0.04, "where": "full chains"}
    far = {"n": 120, "diff": 0.08, "diff_lo": 0.01, "diff_hi": 0.15, "where": "single run"}
    text = P.describe_held_out_gains({"lase-large": primary, "lase-full": near, "single": far},
                                     {"date": "2026-12-01", "thresholds": {"tau_lp": 0.8, "tau_h": 0.5}})
    assert "missed" in text and "on 200 problems, full chains; its interval contains" in text
    vacuous = P.describe_primary({**primary, "vacuous_terms": {"delta": -0.27}}, {"date": "2026-12-01",
                                 "thresholds": {"tau_lp": 0.8, "tau_h": 0.5}})
    assert "vacuous" in vacuous and "delta >= -0.27" in vacuous and "missed" not in vacuous
    assert "on 120 problems, single run; its interval excludes" in text


def test_the_aim_is_met_only_within_a_point_of_mv_at_most_0_7x_its_tokens():
    """The aim on hand-made tables: accuracies and the token ratio on the problems both ran."""
    import pandas as pd

    def table(ids, correct, tokens):
        return pd.DataFrame({"problem_id": ids, "correct": correct, "total_tokens": tokens})

    mv = table(["a", "b", "c", "d", "x"], [1, 1, 1, 0, 1], [100, 100, 100, 100, 5])
    # 3 of 4 right both ways, 70 vs 100 tokens: met (the problem MV alone ran is left out)
    r = P.aim_result(table(["a", "b", "c", "d"], [1, 1, 0, 1], [70] * 4), mv)
    assert (r["n"], r["acc_lase"], r["acc_mv"], r["met"]) == (4, 0.75, 0.75, True) and r["token_ratio"] == pytest.approx(0.7)
    assert not P.aim_result(table(["a", "b", "c", "d"], [1, 1, 0, 1], [71] * 4), mv)["met"]  # 0.71x MV's tokens
    assert not P.aim_result(table(["a", "b", "c", "d"], [1, 0, 0, 1], [10] * 4), mv)["met"]  # 25 points below
    with pytest.raises(DataError, match="share no problem"):
        P.aim_result(table(["z"], [1], [1]), mv)


def test_the_controls_bootstrap_is_the_one_both_preregistrations_fix():
    """compare_gains' default bootstrap (chapters 03 and A2, report.py) is the one v5's and v6's
    preregistrations fix for their tests, so a control's interval reads the same everywhere."""
    import inspect

    from lase_nb.organism.regimes import compare_gains

    defaults = {k: v.default for k, v in inspect.signature(compare_gains).parameters.items()
                if k in ("n_boot", "seed", "level")}
    for path in (P.PATH, P.V6_PATH):
        assert defaults == P.bootstrap_settings(P.load(path))
