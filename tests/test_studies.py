"""Studies: the reader's recordings first, committed ones only when asked for, paths from the caller."""

from pathlib import Path

import pytest

from lase_nb import runs
from lase_nb.errors import DataError
from lase_nb.book.widgets import live_session

REPO = Path(runs.__file__).resolve().parents[1]
SMOL = REPO / "data" / "traces" / "arith-smollm2"


def test_committed_by_default():
    got = runs.chapter_studies("committed", quiet=True)
    assert [s.path.name for s in got] == ["arith-smollm2", "arith-organism-point"]
    assert all(s.committed for s in got) and "committed" not in got[0].label


def test_own_traces_alone(tmp_path, capsys):
    mine = tmp_path / "mine"
    (mine / "lase-full").mkdir(parents=True)
    for studies in ("auto", None, []):
        got = runs.chapter_studies(str(mine), studies)
        assert [s.path for s in got] == [mine.resolve()] and not got[0].committed
    assert capsys.readouterr().out.count("study ") == 3  # one line per study shown


def test_committed_beside_own_is_labelled(tmp_path):
    mine = tmp_path / "mine"
    (mine / "lase-full").mkdir(parents=True)
    got = runs.chapter_studies(str(mine), ["arith-smollm2"], quiet=True)
    assert got[1].committed and got[1].label.endswith("(committed)") and got[1].path == SMOL
    got = runs.chapter_studies(str(mine), [["B run", str(SMOL)]], quiet=True)
    assert got[1].label == "B run (committed)"


def test_two_own_studies_get_distinct_labels(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for p in (a, b):
        (p / "lase-full").mkdir(parents=True)
    got = runs.chapter_studies(str(a), [str(b)], quiet=True)
    assert len({s.label for s in got}) == 2
    got = runs.chapter_studies(str(a), {"temp 0": str(a), "temp 1": str(b)}, quiet=True)
    assert [s.label for s in got] == [a.name, "temp 1"]  # a study named twice is shown once


def test_study_json_label(tmp_path):
    (tmp_path / "lase-full").mkdir()
    (tmp_path / "study.json").write_text('{"label": "my model, T=0"}')
    assert runs.study_label(tmp_path) == "my model, T=0"


def test_control_auto_only_without_own_traces(tmp_path):
    assert runs.control_studies("auto", str(tmp_path), quiet=True) == []
    assert runs.control_studies(None, "committed", quiet=True) == []
    got = runs.control_studies("auto", "committed", quiet=True)
    assert [s.path.name for s in got] == ["smollm2", "organism"]


def test_control_pairs_are_both_committed_controls_or_the_readers_one(tmp_path):
    """With the committed traces a chapter shows v5's control and v6's, each its two models on one
    problem set; a reader's own control is the one pair; none when asked for none."""
    pairs = runs.control_pairs("auto", "committed", quiet=True)
    assert [[s.path.parent.name + "/" + s.path.name for s in p] for p in pairs] == \
        [list(runs.COMMITTED_CONTROL), list(runs.V6_CONTROL)]
    assert all(s.committed for p in pairs for s in p)
    assert runs.control_pairs(None, "committed", quiet=True) == []
    assert runs.control_pairs("auto", str(tmp_path), quiet=True) == []
    for m in ("x", "y"):
        (tmp_path / "mine" / m / "lase-full").mkdir(parents=True)
    (own,) = runs.control_pairs(str(tmp_path / "mine"), str(tmp_path), quiet=True)
    assert [s.path.name for s in own] == ["x", "y"]


def test_absolute_paths_from_the_caller(tmp_path):
    got = runs.absolute_paths({"traces": "traces/mine", "studies": [["A", "x"], "y/z"], "control_traces": "auto",
                               "data_path": None, "model": "gpt-4.1-mini"}, cwd=tmp_path)
    assert got["traces"] == str(tmp_path / "traces" / "mine")
    assert got["studies"] == [["A", str(tmp_path / "x")], str(tmp_path / "y" / "z")]
    assert got["control_traces"] == "auto" and got["data_path"] is None and got["model"] == "gpt-4.1-mini"
    assert runs.absolute_paths({"studies": ["committed", "arith-organism-point"]}, cwd=tmp_path)["studies"] == \
        ["committed", "arith-organism-point"]


def test_missing_run_names_the_folder_without_rerecording(tmp_path):
    (tmp_path / "mine" / "mv").mkdir(parents=True)
    with pytest.raises(DataError, match="no run 'lase-full'"):
        runs.load_runs(tmp_path / "mine", ["lase"], require=["lase"])
    with pytest.raises(DataError, match="no folder"):
        runs.load_runs(tmp_path / "nowhere", ["lase"], require=["lase"])


def test_no_widgets_outside_a_live_kernel():
    assert live_session(None) is False  # pytest is no kernel
    assert live_session(True) is True and live_session(False) is False
