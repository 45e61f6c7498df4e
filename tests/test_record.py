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
    tokens = stdout.split("cost, tokens", 1)[1].split("cost, dollars", 1)[0]
    assert re.search(r"input_tokens", tokens) and not re.search(r"\d\.0\b", tokens), tokens  # never "16421.0"


def test_a_study_recorded_in_two_commands_keeps_both_runs_and_its_label(tmp_path, capsys):
    out, cache = tmp_path / "mine", tmp_path / "c.sqlite"
    with OpenAIWireServer(oracle(golds())) as srv:
        assert record(capsys, srv.base_url, out, cache, "--strategies", "single", "--label", "my model")[0] == 0
        assert record(capsys, srv.base_url, out, cache, "--strategies", "mv")[0] == 0
    study = json.loads((out / STUDY_FILE).read_text())
    assert study["label"] == "my model" and set(study["runs"]) == {"single", "mv"} and study["n"] == N


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


# ---------------------------------------------------------------------------------- what record says


def test_record_says_what_it_does_before_it_sends_anything(tmp_path, capsys):
    """A dry run (no key, no server): --n beyond the file is capped and said; the token estimate
    taken from another model and data set suggests --pilot on its own line; DOWN's calibration,
    most of a small study, is named with --n-down-calibration; counts print as integers."""
    data = tmp_path / "gsm8k.jsonl"
    data.write_text("".join(json.dumps({"question": f"Tom has {i} apples and buys 2. How many now?",
                                        "answer": f"{i} + 2 = {i + 2}\n#### {i + 2}"}) + "\n" for i in range(4)))
    rc = cli.main(["record", "--backend", "openai", "--model", "gpt-4.1-mini", "--dataset", "gsm8k",
                   "--data-path", str(data), "--n", "200", "--strategies", "single", "down",
                   "--out", str(tmp_path / "s"), "--dry-run"])
    stdout = capsys.readouterr().out
    assert rc == 0 and not (tmp_path / "s").exists()
    assert f"--n 200: gsm8k ({data}) has 4 problems here, so the study records 4" in stdout
    line = next(x for x in stdout.splitlines() if x.startswith("tokens, expected"))
    assert "gpt-4.1-mini is not smollm2-135m and gsm8k is not arith" in line and "--pilot 2" in line
    assert not re.search(r"\d\.0\b", stdout.split("calls per problem", 1)[1].split("\n\n", 1)[0])
    # the embedded model on arithmetic, like the estimate: no pilot suggested; DOWN's calibration named
    rc = cli.main(["record", "--n", "3", "--strategies", "single", "down", "--out", str(tmp_path / "t"), "--dry-run"])
    stdout = capsys.readouterr().out
    cal = 20 * 9  # DOWN's 20 calibration problems, always debated: 3 agents x (2 rounds + 1)
    total = 3 + 3 * 9 + cal
    assert rc == 0 and planned(stdout) == (total, False)
    assert "--pilot 2" not in stdout and "--n 3:" not in stdout
    assert (f"DOWN's threshold calibration (20 problems, each debated) is {cal} of the {total} calls "
            f"({cal / total:.0%}): --n-down-calibration N") in stdout
    # a calibration that is a small part of the study is not named
    rc = cli.main(["record", "--n", "30", "--strategies", "single", "down", "--n-down-calibration", "2",
                   "--out", str(tmp_path / "t"), "--dry-run"])
    assert rc == 0 and "--n-down-calibration" not in capsys.readouterr().out


def test_the_plan_notes_from_their_numbers():
    from lase_nb import study

    assert study.capped_note(20, 20, "arith") is None
    assert study.capped_note(5, 1, "gsm8k", "x.jsonl") == "--n 5: gsm8k (x.jsonl) has 1 problem here, so the study records 1"
    mine = study.Rates({}, "a pilot", None, None)
    assert study.estimate_note(mine, "gpt-4.1-mini", "gsm8k") is None  # a pilot measures the study's own
    other = study.Rates({}, "recorded", "smollm2-135m", "arith")
    assert study.estimate_note(other, "smollm2-135m", "arith") is None
    assert study.estimate_note(other, "smollm2-135m", "math500").startswith("math500 is not arith, so")
    assert [study.duration(s) for s in (44.6, 95, 7 * 60 + 20, 125 * 60)] == ["45 s", "2 min", "7 min", "2 h 5 min"]
    assert study.pilot_timing(14, 28.0, [9.0] * 14) == {"seconds_per_call": 2.0,
                                                        "timing": "the pilot's 14 model calls in 28 s"}
    cached = study.pilot_timing(0, 0.1, [1.0, 3.0])
    assert cached["seconds_per_call"] == 2.0 and cached["timing"].startswith("at most: the recorded time of the pilot's 2")
    assert study.pilot_timing(0, 0.1, []) == {}
    import pandas as pd

    t = study.whole_numbers(pd.DataFrame({"calls": [3.0, 4.0], "input_tokens": [16421.0, 10.4], "share": [0.5, 1.0]}))
    assert t.to_string(index=False).split() == ["calls", "input_tokens", "share", "3", "16421", "0.5", "4", "10", "1.0"]


def test_a_pilot_gives_the_expected_wall_time(tmp_path, capsys):
    """Seconds per call from the pilot's wall time when it sends its calls, from the cached calls'
    recorded time (an upper bound) when a second dry run answers them from the cache."""
    cache = tmp_path / "c.sqlite"
    with OpenAIWireServer(oracle(golds()), latency_s=0.05) as srv:
        rc, stdout, err = record(capsys, srv.base_url, tmp_path / "s", cache, "--strategies", "single",
                                 "--pilot", "2", "--dry-run")
        assert rc == 0, err
        m = re.search(r"^time, expected: (\d+) s \((\d+) calls at ([\d.]+) s a call; the pilot's 2 model calls in \d+ s\)$",
                      stdout, re.M)
        assert m, stdout
        # the pilot's 2 calls may overlap (API backends send calls concurrently): wall time per call
        # is at least half the server's latency
        assert int(m.group(2)) == N and 0.05 / 2 <= float(m.group(3)) < 5
        rc, stdout, err = record(capsys, srv.base_url, tmp_path / "s", cache, "--strategies", "single",
                                 "--pilot", "2", "--dry-run")
        assert rc == 0 and srv.request_count == 2, err
        assert re.search(r"^time, expected: .*at most: the recorded time of the pilot's 2 calls in the cache", stdout, re.M)


def test_record_on_a_cpu_with_native_bfloat16_names_the_option(tmp_path):
    from lase_nb.backends.local.files import BF16_MEASURED, bf16_note

    native, plain = tmp_path / "native", tmp_path / "plain"
    native.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16\n")
    plain.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2\n")
    note = bf16_note(None, native)
    assert note and "--dtype bfloat16" in note and BF16_MEASURED in note and "default stays float32" in note
    assert bf16_note(None, plain) is None and bf16_note("float32", native) is None
    # the numbers are those benchmarks/README.md reports as measured
    bench = (Path(__file__).resolve().parents[1] / "benchmarks" / "README.md").read_text()
    for number in re.findall(r"\d+(?:\.\d+)?x|\d+\.\d s|\d+ of \d+|\d+ vs \d+", BF16_MEASURED):
        assert number in bench, number
