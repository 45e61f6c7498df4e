"""``lase-nb record``: a whole study over the OpenAI wire server, its plan against the calls made,
resuming after an interruption, the layout the chapters read; one small study on the embedded model (slow).

The study is small (3 problems) and the wire server answers with :func:`tests.responders.oracle`,
which boxes every answer, so no answer-extraction step is made and the call formulas are exact
where the strategy's count is fixed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lase_nb import cli
from lase_nb.datasets import arithmetic_problems, load_dataset
from lase_nb.runs import load_runs
from lase_nb.strategies import SPECS, recorded
from lase_nb.study import STUDY_FILE, study_runs
from tests.responders import oracle
from tests.wire_servers import OpenAIWireServer

N = 3
KEY_VARS = ("OPENAI_API_KEY", "OPENAI_COMPATIBLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_BASE_URL")
#: Strategies whose calls per problem are fixed (the rest are gated: their formula is a bound).
FIXED = ["lase-full", "single", "mv", "mad", "moa"]
GATED = ["down", "lase-mv", "lase-shuffled"]


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LASE_CACHE", str(tmp_path / "default-cache.sqlite"))


def golds():
    """The study's problems and DOWN's calibration pool, so the oracle knows every gold answer."""
    return arithmetic_problems(N) + load_dataset("arith", None, 6, 1000)


def record(capsys, url: str, out: Path, cache: Path, *extra: str) -> tuple[int, str, str]:
    rc = cli.main(["record", "--backend", "openai", "--base-url", url, "--n", str(N), "--out", str(out),
                   "--cache", str(cache), "--n-down-calibration", "2", "--quiet", *extra])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def planned(stdout: str) -> tuple[int, bool]:
    """The plan's call count and whether it is exact (``calls: N`` or ``calls: at most N``)."""
    m = re.search(r"^calls: (at most )?(\d+)", stdout, re.M)
    assert m, stdout
    return int(m.group(2)), m.group(1) is None


def test_whole_study_in_the_layout_the_chapters_read(tmp_path, capsys):
    out = tmp_path / "mine"
    with OpenAIWireServer(oracle(golds())) as srv:
        rc, stdout, err = record(capsys, srv.base_url, out, tmp_path / "c.sqlite", "--label", "my model")
        assert rc == 0, err
        made = srv.request_count
    runs = load_runs(out)
    assert sorted(runs) == sorted(recorded())
    assert set(load_runs(out, ["lase", "mv", "mad"], require=["lase"])) == {"lase", "mv", "mad"}
    for name, run in runs.items():
        assert run.manifest["run_name"] == name and run.manifest["label"] == "my model"
        assert run.manifest["backend"] == "openai" and run.manifest["model"] == "gpt-4.1-mini"
        assert run.manifest["base_url"] == srv.base_url and run.manifest["n"] == N
        assert len(run.problems) == N and run.problems["correct"].all()
    assert runs["lase-full"].manifest["config"]["full_chain"] is True
    assert "down_threshold" in runs["down"].manifest
    study = json.loads((out / STUDY_FILE).read_text())
    assert study["label"] == "my model" and study["n"] == N and set(study["runs"]) == set(recorded())
    # every call the runs record was made once, some answered from another run's identical call
    recorded_calls = sum(len(r.calls) for r in runs.values()) + 2 * 9  # + DOWN's calibration
    assert made < recorded_calls
    assert f"({made} model calls" in stdout
    assert "cost, dollars at gpt-4.1-mini: $0.40 in, $0.10 cached, $1.60 out" in stdout


@pytest.mark.parametrize("name", FIXED + GATED)
def test_dry_run_counts_the_calls_then_made(name, tmp_path, capsys):
    cache = tmp_path / f"{name}.sqlite"  # a cache of its own: no call answered by another run
    with OpenAIWireServer(oracle(golds())) as srv:
        rc, plan_out, err = record(capsys, srv.base_url, tmp_path / "dry", cache, "--strategies", name, "--dry-run")
        assert rc == 0, err
        assert srv.request_count == 0 and not (tmp_path / "dry").exists() and "dry run: nothing sent" in plan_out
        calls, exact = planned(plan_out)
        rc, _, err = record(capsys, srv.base_url, tmp_path / "study", cache, "--strategies", name)
        assert rc == 0, err
        made = srv.request_count
    if name in FIXED:
        assert exact and made == calls == SPECS[name].calls({}).bound * N
    else:  # gated: the plan is an upper bound (DOWN's calibration is counted exactly)
        assert not exact and made <= calls


def test_resume_after_an_interruption_repeats_no_call(tmp_path, capsys):
    out, cache = tmp_path / "mine", tmp_path / "c.sqlite"
    base = oracle(golds())
    seen = {"n": 0}

    def responder(messages, params):
        seen["n"] += 1
        if seen["n"] == 20:  # the server starts failing mid-study, like a lost connection
            srv.add_faults(*["500"] * 500)
        return base(messages, params)

    names = ["lase", "mv", "mad"]
    with OpenAIWireServer(responder) as srv:
        rc, _, err = record(capsys, srv.base_url, out, cache, "--strategies", *names, "--max-retries", "0")
        assert rc == 2 and "HTTP 500" in err
        answered_before = sum(r.fault is None for r in srv.requests)
        srv.clear_faults()
        rc, stdout, err = record(capsys, srv.base_url, out, cache, "--strategies", *names)
        assert rc == 0, err
        ok = [json.dumps(r.body, sort_keys=True) for r in srv.requests if r.fault is None]
    assert answered_before >= 20
    assert len(ok) == len(set(ok)), "a call answered before the interruption was sent again"
    assert set(load_runs(out)) == {"lase-full", "mv", "mad"}
    assert re.search(r"from cache", stdout)


def test_record_names_and_bad_input(tmp_path, capsys):
    assert study_runs(["LASE", "mv", "lase_full", "down"]) == ["lase-full", "mv", "down"]
    rc = cli.main(["record", "--out", str(tmp_path / "x"), "--strategies", "vote-harder", "--dry-run"])
    err = capsys.readouterr().err
    assert rc == 2 and "unknown strategy 'vote-harder'" in err and not (tmp_path / "x").exists()
    rc = cli.main(["record", "--out", str(tmp_path / "x"), "--n", "0", "--dry-run"])
    assert rc == 2 and "--n must be >= 1" in capsys.readouterr().err
    rc = cli.main(["record", "--out", str(tmp_path / "x"), "--prices", str(tmp_path / "none.json"), "--dry-run"])
    assert rc == 2 and "no price sheet" in capsys.readouterr().err


def test_dry_run_of_the_embedded_model_needs_no_model(tmp_path, capsys):
    """The plan alone: counts from the formulas, tokens from the committed recording, no model loaded."""
    rc = cli.main(["record", "--out", str(tmp_path / "s"), "--n", "4", "--strategies", "lase", "mv", "--dry-run"])
    stdout = capsys.readouterr().out
    assert rc == 0
    assert planned(stdout) == (4 * 7 + 4 * 7, True)
    assert "recorded rates of smollm2-135m on arith" in stdout and not (tmp_path / "s").exists()


@pytest.mark.slow
def test_record_a_small_study_on_the_embedded_model(tmp_path, capsys):
    """One problem, LASE's full chain and the single agent (its call is the chain's first, from the cache)."""
    out = tmp_path / "local"
    argv = ["record", "--out", str(out), "--n", "1", "--strategies", "lase", "single", "--threads", "2",
            "--max-tokens", "64", "--supporter-max-tokens", "48", "--cache", str(tmp_path / "c.sqlite"), "--quiet"]
    rc = cli.main(argv)
    stdout = capsys.readouterr().out
    assert rc == 0, stdout
    runs = load_runs(out, ["lase", "single"], require=["lase", "single"])
    assert len(runs["lase"].problems) == 1 and len(runs["lase"].stages) == 4
    assert runs["lase"].manifest["backend"] == "local" and runs["single"].manifest["n"] == 1
    assert re.search(r"^calls: 8 ", stdout, re.M)  # 7 for the chain, 1 for the single agent
    assert runs["single"].calls["cached"].all()  # the chain's stage 0 is the single agent's call
    rc = cli.main(argv)
    assert rc == 0 and "(0 model calls" in capsys.readouterr().out  # a finished study reruns from the cache


def test_a_pilot_measures_the_rates_and_its_calls_are_reused(tmp_path, capsys):
    cache = tmp_path / "c.sqlite"
    with OpenAIWireServer(oracle(golds())) as srv:
        rc, stdout, err = record(capsys, srv.base_url, tmp_path / "s", cache, "--strategies", "lase", "mv",
                                 "--pilot", "1", "--dry-run")
        assert rc == 0, err
        assert srv.request_count == 7 + 7  # the first problem of each run
        assert "a pilot on the first 1 problem of each run" in stdout
        assert planned(stdout) == (N * 14, True)
        rc, stdout, err = record(capsys, srv.base_url, tmp_path / "s", cache, "--strategies", "lase", "mv")
        assert rc == 0, err
        assert srv.request_count == N * 14  # the pilot's calls were not sent again


def test_the_progress_bar_counts_model_calls_against_the_calls_still_expected():
    """Calls answered from the cache leave the total (they cost no time), and a finished problem
    trades its expected calls for those it made: the bar's total is always the model calls made
    plus those still expected, so tqdm's rate and ETA are those of model calls."""
    from lase_nb.study import _Bar
    from lase_nb.types import Generation

    def gen(cached: bool) -> Generation:
        return Generation("x", None, 1, 1, "stop", 0.0, "none", cached=cached)

    bar = _Bar(expected=20, enabled=True)
    for cached in (True, True, False, False, False):
        bar.answer(gen(cached))
    assert (bar.bar.n, bar.bar.total) == (3, 18)
    bar.finished(expected_calls=7, made_calls=5)  # a gated problem stopped early: 2 calls fewer than expected
    assert bar.bar.total == 16
    bar.finished(expected_calls=1, made_calls=3)  # one that needed two extraction steps
    assert bar.bar.total == 18
    bar.close()
