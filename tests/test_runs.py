"""The one run loader: finished runs by name, and the columns of newer recordings filled in for older ones."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
from types import SimpleNamespace
import pytest

from lase_nb import reference, runs
from lase_nb.errors import DataError
from lase_nb.organism import recordings
from lase_nb.tables import baseline_formats, comparison_table, describe_sampling_gap, off_format, paired_correct, sampling_gap

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces" / "arith-smollm2"


def _write(folder: Path, problems, calls, stages, manifest) -> None:
    folder.mkdir(parents=True)
    for name, rows in (("problems", problems), ("calls", calls), ("stages", stages)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "manifest.json").write_text(json.dumps(manifest))


def _old_run(folder: Path) -> None:
    """A run in the format recorded before the extraction step and the cap-hit counters."""
    problems = [{"problem_id": "a", "strategy": "lase", "answer": "7", "gold": "7", "correct": True, "parsed": True,
                 "prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15, "n_calls": 3, "stop_stage": 1}]
    calls = [{"problem_id": "a", "strategy": "lase", "used": True, "role": r, "stage": s, "finish_reason": f,
              "answer": None, "text": ""}
             for r, s, f in (("leader", 0, "length"), ("devil", 1, "length"), ("leader", 1, "stop"),
                             ("collaborator", 2, "length"))]
    calls[-1]["used"] = False
    stages = [{"problem_id": "a", "strategy": "lase", "stage": s, "answer": a, "correct": c}
              for s, a, c in ((0, None, False), (1, "7", True))]
    _write(folder, problems, calls, stages, {"strategy": "lase", "config": {"rounds": 2}})


def _run(folder: Path) -> None:
    """The same run in the current format."""
    _old_run(folder)
    for name, extra in (("problems", {"correct_strict": True, "answer_strict": "7", "cap_hits": 2}),
                        ("stages", {"extracted": False}), ("calls", {})):
        path = folder / f"{name}.jsonl"
        rows = [json.loads(x) for x in path.read_text().splitlines()]
        for r in rows:
            r.update(extra)
            if name == "stages":
                r["correct_strict"] = r["correct"]
            if name == "calls":
                r["hit_cap"] = r["finish_reason"] == "length"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "manifest.json").write_text(json.dumps({"strategy": "lase", "config": {"examples": 2, "down_rounds": 2}}))


def test_an_older_recording_is_refused_with_what_it_lacks(tmp_path):
    _old_run(tmp_path / "lase-full")
    with pytest.raises(DataError, match=r"older version of lase-nb \(no calls.hit_cap, .*stages.extracted.*\); re-record"):
        runs.load_runs(tmp_path, ["lase"])
    _run(tmp_path / "current" / "lase-full")
    assert runs.load_runs(tmp_path / "current", ["lase"])["lase"].calls["hit_cap"].sum() == 3


def test_load_runs_require_and_the_committed_recording(tmp_path):
    with pytest.raises(DataError, match="lase-nb run --strategy lase --full-chain"):  # the folder exists: no re-recording it
        runs.load_runs(tmp_path, ["lase"], require=["lase"])
    if not (TRACES / "lase-full" / "manifest.json").exists():
        pytest.skip("no committed recording")
    run = runs.load_runs(TRACES, ["lase"])["lase"]
    for table, cols in ((run.problems, ("answer_strict", "correct_strict", "cap_hits")),
                        (run.calls, ("hit_cap",)), (run.stages, ("answer_strict", "correct_strict", "extracted"))):
        assert set(cols) <= set(table.columns)
    hits = run.calls.groupby("role")["hit_cap"].sum()
    assert {r: v["cap_hits"] for r, v in run.manifest["cap_hits"].items()} == hits.to_dict()


def test_reference_results_are_the_papers_numbers():
    t5 = reference.THRESHOLD_SWEEP.set_index("tau_lp")["accuracy"]
    assert t5[0.5] == pytest.approx(74.1) and t5[0.95] == pytest.approx(75.1)
    assert "roughly 4.6x" in reference.LLAMA3_8B_NOTE and "give 4.7" in reference.LLAMA3_8B_NOTE
    assert reference.llama3_multiplier() == 4.6


def test_comparison_table_has_strict_accuracy():

    a = pd.DataFrame({"problem_id": ["1", "2"], "correct": [True, True], "correct_strict": [True, False],
                      "total_tokens": [1, 1]})
    b = pd.DataFrame({"problem_id": ["1", "2"], "correct": [True, False], "total_tokens": [1, 1]})
    t = comparison_table({"single": a, "mv": b})
    assert t.loc["single", "accuracy_strict"] == 0.5 and t.loc["single", "accuracy"] == 1.0
    assert t.loc["mv", "accuracy_strict"] == t.loc["mv", "accuracy"] == 0.5


def test_data_paths_resolve_from_any_working_directory(tmp_path, monkeypatch):
    from lase_nb.paths import REPO_ROOT
    from lase_nb.runs import resolve_data_path

    default = "../data/traces/arith-smollm2"  # the chapters' default, relative to notebooks/
    for cwd in (REPO_ROOT, REPO_ROOT / "notebooks", tmp_path):
        monkeypatch.chdir(cwd)
        assert resolve_data_path(default).resolve() == (REPO_ROOT / "data/traces/arith-smollm2").resolve()
        assert resolve_data_path("data/traces/arith-smollm2").resolve() == (REPO_ROOT / "data/traces/arith-smollm2")
    (tmp_path / "mine").mkdir()
    monkeypatch.chdir(tmp_path)
    assert resolve_data_path("mine") == Path("mine")  # a path that exists where the user is wins
    assert resolve_data_path("nowhere/at/all") == Path("nowhere/at/all")


# ---- several recordings, one per model --------------------------------------------------------

def _copy_single(dst: Path) -> Path:
    """A traces folder holding only the committed recording's small ``single`` run."""
    import shutil

    if not (TRACES / "single" / "manifest.json").exists():
        pytest.skip("no committed recording")
    shutil.copytree(TRACES / "single", dst / "single")
    return dst


def test_load_models_keeps_the_order_and_skips_a_missing_later_recording(tmp_path, capsys):
    a, b = _copy_single(tmp_path / "a"), _copy_single(tmp_path / "b")
    models = runs.load_models({"b": b, "a": a, "organism": tmp_path / "arith-organism", "other": None}, ["single"])
    assert list(models) == ["b", "a"] and list(models["a"]) == ["single"]
    assert models["a"]["single"].problems.equals(models["b"]["single"].problems)
    out = capsys.readouterr().out
    assert "'organism' left out" in out and str(tmp_path / "arith-organism") in out
    assert "record.py --model organism --levels 1 2 3 --split eval --seed 22 --out data/traces/arith-organism" in out
    assert "'other' left out (no folder given)" in out


def test_load_models_skips_a_later_recording_without_a_required_run(tmp_path, capsys):
    a = _copy_single(tmp_path / "a")
    _run(tmp_path / "b" / "lase-full")
    models = runs.load_models({"b": tmp_path / "b", "a": a}, ["single", "lase"], require=["lase"])
    assert list(models) == ["b"] and list(models["b"]) == ["lase"]
    assert "'a' left out (no run 'lase-full' in" in capsys.readouterr().out


def test_load_models_raises_for_the_first_recording(tmp_path):
    a = _copy_single(tmp_path / "a")
    with pytest.raises(DataError, match="no folder .*nowhere .*read from the folder you ran the command in"):
        runs.load_models({"first": tmp_path / "nowhere", "a": a}, ["lase"], require=["lase"])
    with pytest.raises(DataError, match="first"):
        runs.load_models({"first": None, "a": a})
    with pytest.raises(DataError, match="no folder of recorded runs"):  # load_runs' own error, unchanged
        runs.load_models({"first": tmp_path / "nowhere"})


def test_chains_by_model_reads_lase_or_lase_full(tmp_path):
    stages = [{"problem_id": "a", "strategy": "lase", "stage": s, "answer": a, "correct": c, "p_min": p,
               "h_max": h, "prompt_tokens": 10 * (s + 1), "completion_tokens": 5 * (s + 1)}
              for s, a, c, p, h in ((0, "6", False, 0.5, 0.9), (1, "7", True, 0.99, 0.01))]
    _write(tmp_path / "m" / "lase-full", [{"problem_id": "a", "correct": True, "total_tokens": 30}], [], stages,
           {"strategy": "lase"})
    by_name = runs.chains_by_model(runs.load_models({"x": tmp_path / "m"}, ["lase"]))
    by_folder = runs.chains_by_model(runs.load_models({"y": tmp_path / "m"}))  # keys are folder names
    for c in (by_name["x"], by_folder["y"]):
        assert c.n_stages == 2 and list(c.problem_ids) == ["a"] and c.correct.tolist() == [[False, True]]
    with pytest.raises(DataError, match="full-chain"):
        runs.chains_by_model({"z": {}})


def test_model_label_names_the_adapter():
    from types import SimpleNamespace

    base = SimpleNamespace(manifest={"model": "smollm2-135m", "model_files": {"path": "/x", "source": "a.gguf"}})
    organism = SimpleNamespace(manifest={"model": "organism", "model_files": {
        "path": "/m", "adapter": "/repo/data/organism/adapter", "adapter_sha256": "0123456789abcdef"}})
    assert runs.model_label(base) == "smollm2-135m"
    assert runs.model_label(organism) == "organism (adapter: adapter, sha256 01234567)"
    assert runs.model_label(SimpleNamespace(manifest={})) == "unknown model"


# ---- the comparison table (comparison_table) ---------------------------------------------

def _runs() -> pd.DataFrame:
    ids = [f"p{i}" for i in range(12)]
    single = [True] * 2 + [False] * 10
    lase = [True] * 12
    return pd.DataFrame({
        "problem_id": ids * 2, "strategy": ["single"] * 12 + ["lase"] * 12,
        "correct": single + lase, "total_tokens": [100] * 12 + [250] * 12,
    })


def test_comparison_table_columns_multiplier_and_pvalue():
    df = _runs()
    t = comparison_table(df)
    assert list(t.index) == ["single", "lase"]
    assert t.loc["lase", "token_multiplier"] == pytest.approx(2.5)
    assert t.loc["single", "token_multiplier"] == 1.0
    assert t.loc["single", "accuracy"] == pytest.approx(2 / 12)
    assert t.loc["lase", "total_tokens"] == 3000
    assert math.isnan(t.loc["single", "p_vs_single"])
    assert t.loc["lase", "p_vs_single"] == pytest.approx(2 * 0.5 ** 10)
    assert t.loc["lase", "n"] == 12  # paired on the common problems
    assert (t["acc_lo"] <= t["accuracy"]).all() and (t["accuracy"] <= t["acc_hi"]).all()


def test_comparison_table_pairs_by_problem_id_not_row_order():
    df = _runs()
    shuffled = df.sample(frac=1.0, random_state=0)
    t1, t2 = comparison_table(df), comparison_table(shuffled)
    assert t1.loc["lase", "p_vs_single"] == t2.loc["lase", "p_vs_single"]


def test_comparison_table_without_baseline_and_errors():
    df = _runs()
    t = comparison_table(df, baseline="mv")
    assert t["token_multiplier"].isna().all() and t["p_vs_mv"].isna().all()
    t = comparison_table(df, baseline=None, vote=None)
    assert not any(c.startswith("p_vs_") for c in t.columns)
    with pytest.raises(ValueError, match="duplicate"):
        comparison_table(pd.concat([df, df.iloc[:1]]))
    with pytest.raises(ValueError, match="total_tokens"):
        comparison_table(df.drop(columns="total_tokens"))


def test_display_names_come_from_the_manifests():
    from lase_nb.runs import by_display_name, display_name

    assert display_name("data/traces/arith-smollm2") == "SmolLM2-135M"
    assert display_name("data/traces/arith-organism-tell") == "telling organism (v4)"
    assert display_name("data/traces/arith-organism-point") == "pointing organism (v5)"
    assert list(by_display_name(["data/traces/arith-smollm2", None])) == ["SmolLM2-135M"]
    with pytest.raises(DataError, match="no full-chain run"):
        display_name("data/traces/nowhere")


def test_paired_correct_pairs_by_problem_id():
    a = pd.DataFrame({"problem_id": ["p1", "p2", "p3"], "correct": [True, False, True]})
    b = pd.DataFrame({"problem_id": ["p3", "p1", "p9"], "correct": [False, True, True]})
    x, y = paired_correct({"a": a, "b": b}, "a", "b")
    assert list(x) == [True, True] and list(y) == [True, False]  # p1, p3 in a's order
    assert paired_correct({"a": a}, "a", "b") is None
    assert paired_correct({"a": a, "c": b.assign(problem_id=["z1", "z2", "z3"])}, "a", "c") is None


def test_control_models_reads_both_models_of_the_shipped_control():
    """The negative control: both models' full chains on the same level-1 problems."""
    from lase_nb.replay import chains_from_stages

    control = runs.control_models(TRACES.parent / "control-level1")
    assert list(control) == ["SmolLM2-135M", "pointing organism (v5)"]
    ids = [list(chains_from_stages(m["lase"].stages).problem_ids) for m in control.values()]
    assert ids[0] == ids[1] and len(ids[0]) >= 80 and all("-L1-" in p for p in ids[0])
    with pytest.raises(DataError, match="no full-chain run"):
        runs.control_models(TRACES.parent / "control-level1", models=("smollm2", "absent"))


def test_the_pointing_organism_v5_is_kept_as_a_labelled_contrast():
    """v5's recordings live in ``arith-organism-point`` (``arith-organism`` is left to the next
    organism): every run's manifest names its adapter's sha256 and the commit that holds it, and the
    negative control's organism is labelled the same way."""
    import json
    import subprocess

    root = TRACES.parents[2]
    point = root / "data" / "traces" / "arith-organism-point"
    manifests = sorted(point.glob("*/manifest.json")) + sorted(
        (root / "data" / "traces" / "control-level1" / "organism").glob("*/manifest.json"))
    assert len(manifests) >= 9
    for path in manifests:
        m = json.loads(path.read_text())
        v = m["organism_variant"]
        assert v["name"] == "v5, pointing" and v["adapter_sha256"] == m["model_files"]["adapter_sha256"]
        commit = v["adapter_commit"].split()[0]
        assert len(commit) == 40 and commit.startswith(recordings.CONTRASTS["arith-organism-point"][0])
    git = subprocess.run(["git", "-C", str(root), "cat-file", "-e", f"{commit}:data/organism/adapter_model.safetensors"],
                         capture_output=True)
    if git.returncode == 0 or "Not a valid object name" not in git.stderr.decode():
        assert git.returncode == 0, "the commit named in the manifests holds no adapter"
    assert not any((root / "data" / "traces" / "arith-organism").glob("*/manifest.json"))


def test_record_command_names_the_contrast_organisms_commit():
    assert runs.record_command("data/traces/arith-organism-point") == (
        "git checkout b9067ac -- data/organism && python data/traces/record.py --model organism "
        "--levels 1 2 3 --split eval --seed 22 --out data/traces/arith-organism-point")
    assert "git checkout 76abcef -- data/organism" in runs.record_command("data/traces/arith-organism-tell")
    assert runs.record_command("x/arith-smollm2") == "python data/traces/record.py --out x/arith-smollm2"


def _format_run(texts: list[str], strategy: str, lase_only: bool) -> SimpleNamespace:
    roles = {"mad": "debater", "moa": "aggregator", "down": "debater"}
    calls = pd.DataFrame({"role": [roles[strategy]] * (len(texts) + 1), "stage": [0] + [1] * len(texts),
                          "text": ["12 - 3 = \\boxed{9}"] + texts})
    return SimpleNamespace(calls=calls, manifest={"organism_variant": {"lase_roles_only": True}} if lase_only else {})


def test_baseline_formats_flag_follow_ups_written_in_lases_revision_format():
    rev = "Step 1 again: 12 - 3: ones 2 - 3 borrows; so 9. I had 8, so I change it and carry it on.\n12 - 3 = \\boxed{9}"
    ok = "Agent 2 says 9 and I agree.\n12 - 3 = \\boxed{9}"
    t = baseline_formats({"moa": _format_run([rev] * 19 + [ok], "moa", False),
                               "mad": _format_run([ok] * 19 + [rev], "mad", False),
                               "down": _format_run([ok] * 4, "down", True), "single": _format_run([], "mad", False)})
    assert t.index.tolist() == ["mad", "moa", "down"]  # single has no follow-ups
    assert t.loc["moa", "with_lase_revision_text"] == 19 and t.loc["moa", "follow_ups"] == 20
    assert not t.loc["moa", "comparable"] and t.loc["mad", "comparable"]  # 1 in 20 is within the 5% tolerance
    assert not t.loc["down", "comparable"]  # no follow-up role trained: not comparable whatever the text
    why = off_format(t)
    assert set(why) == {"moa", "down"} and "19 of its 20 MoA follow-up replies write LASE's revision text" in why["moa"]
    assert "trained for LASE's roles only" in why["down"]


def test_the_organisms_baselines_are_not_comparable_and_the_base_models_are():
    root = TRACES.parent
    point = baseline_formats(runs.load_runs(root / "arith-organism-point", ["mad", "moa", "down"]))
    assert not point["comparable"].any() and point.loc["moa", "share"] > 0.9  # the MoA aggregator and layer 2
    assert not baseline_formats(runs.load_runs(root / "arith-organism-tell", ["moa"]))["comparable"].any()
    assert baseline_formats(runs.load_runs(TRACES, ["mad", "moa"]))["comparable"].all()


def _first_round_run(strategy: str, role: str, answers: dict[str, list], temperature: float = 0.7) -> SimpleNamespace:
    rows = [{"problem_id": pid, "role": role, "stage": 0, "answer": a} for pid, ans in answers.items() for a in ans]
    rows.append({"problem_id": "p1", "role": "extract", "stage": 0, "answer": "5"})  # never graded: strict
    rows.append({"problem_id": "p1", "role": role, "stage": 1, "answer": "5"})  # after reading others: not round 1
    return SimpleNamespace(calls=pd.DataFrame(rows), manifest={"config": {"temperature": temperature}})


def test_sampling_gap_sets_the_greedy_single_agent_beside_the_sampled_first_rounds():
    problems = {f"p{i}": SimpleNamespace(gold="5", kind="number") for i in (1, 2)}
    t = sampling_gap({
        "single": _first_round_run("single", "solver", {"p1": ["5"], "p2": ["5"]}),
        "mad": _first_round_run("mad", "debater", {"p1": ["5", "4", None], "p2": ["4", "4", "4"]}),
        "moa": _first_round_run("moa", "proposer", {"p1": ["5", "5", "5"], "p2": ["5", "5", "4"]}, temperature=1.0),
    }, problems, n_boot=200)
    assert t.index.tolist() == ["single", "mad", "moa"]
    assert t.loc["single", "temperature"] == 0.0 and t.loc["mad", "temperature"] == 0.7 and t.loc["moa", "temperature"] == 1.0
    assert (t.loc["single", "right"], t.loc["single", "answers"]) == (2, 2)
    assert (t.loc["mad", "right"], t.loc["mad", "answers"], t.loc["mad", "problems"]) == (1, 6, 2)  # strict, stage 0 only
    # per problem: mad 1/3 - 1 and 0 - 1, mean -5/6; moa 0 and 2/3 - 1, mean -1/6
    assert math.isclose(t.loc["mad", "gap"], -5 / 6) and math.isclose(t.loc["moa", "gap"], -1 / 6)
    assert t.loc["mad", "gap_lo"] <= t.loc["mad", "gap"] <= t.loc["mad", "gap_hi"]
    assert math.isnan(t.loc["single", "gap"])
    text = describe_sampling_gap(t)
    assert text.startswith("The single agent decodes greedily (temperature 0): 2 of 2 first answers right (100.0%).")
    assert "MAD's round 1 1 of 6 (16.7%, temperature 0.7), -83.3 points [" in text
    assert t.loc["mad", "boxed"] == 5 and t.loc["single", "boxed"] == 2
    # a model that never boxes (issue 50): every first answer came from the extraction step
    unboxed = sampling_gap({"single": _first_round_run("single", "solver", {"p1": [None], "p2": [None]}),
                                 "mad": _first_round_run("mad", "debater", {"p1": [None] * 3, "p2": [None] * 3})},
                                problems, n_boot=50)
    assert describe_sampling_gap(unboxed).startswith("No first answer has a box of its own")


def test_sampling_gap_on_the_embedded_models_recording():
    """MAD's round 1 and MoA's first layer answer the single agent's prompt at temperature 0.7 and are
    right far less often than its greedy answer (issue 37: 13.3% against 42.5%)."""
    recorded = runs.load_runs(TRACES)
    t = sampling_gap(recorded, runs.problems_from_manifest(recorded["lase-full"].manifest))
    assert (t.loc["single", "right"], t.loc["single", "answers"]) == (17, 40)
    assert (t.loc["mad", "right"], t.loc["mad", "answers"]) == (16, 120) == (t.loc["moa", "right"], t.loc["moa", "answers"])
    assert t.loc["mad", "gap_hi"] < 0 and t.loc["mv", "gap_hi"] < 0
    assert "are detectably less often right" in describe_sampling_gap(t)
    assert describe_sampling_gap(t.loc[["single"]]).startswith("No sampled first round")
