"""The command line: bad input gets one clear line and exit status 2, and secrets never reach disk or output.

Runs ``lase_nb.cli.main([...])`` in-process against the wire servers of :mod:`tests.wire_servers`
(real OpenAI / Gemini SDKs over HTTP on 127.0.0.1), plus one CLI subprocess and one papermill run
of the quickstart notebook for the secret checks. Nothing here runs the embedded model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from lase_nb import cli
from lase_nb.datasets import arithmetic_problems
from lase_nb.runner import NO_LOGPROBS_STOP
from tests.responders import oracle
from tests.wire_servers import GeminiWireServer, OpenAIWireServer, Reply

ROOT = Path(__file__).resolve().parent.parent
SENTINEL = "sk-SENTINEL-7f3a9c1e5b2d4680"
GSENTINEL = "AIza-SENTINEL-0b1c2d3e4f5a6978"
KEY_VARS = ("OPENAI_API_KEY", "OPENAI_COMPATIBLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_BASE_URL")


# ------------------------------------------------------------------------------------------ helpers
@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No real keys, no user cache, no figures written into the repository."""
    for var in KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LASE_CACHE", str(tmp_path / "default-cache.sqlite"))
    monkeypatch.setenv("LASE_FIGURES_DIR", str(tmp_path / "figures"))


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``lase-nb ARGV`` in-process: (exit status, stdout, stderr)."""
    rc = cli.main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def assert_one_line_error(rc: int, err: str, *needles: str) -> str:
    """Exit status 2 and exactly one stderr line ``lase-nb: error: ...`` containing every needle."""
    lines = err.strip("\n").splitlines()
    assert rc == 2, f"exit status {rc}, stderr: {err!r}"
    assert len(lines) == 1, f"expected one stderr line, got {len(lines)}: {err!r}"
    assert lines[0].startswith("lase-nb: error: "), lines[0]
    for n in needles:
        assert n in lines[0], f"{n!r} not in {lines[0]!r}"
    return lines[0]


def files_under(*roots: Path) -> list[Path]:
    """Every regular file under the given files/folders (SQLite side files included)."""
    out: list[Path] = []
    for r in roots:
        if r.is_file():
            out.append(r)
        elif r.is_dir():
            out += [p for p in r.rglob("*") if p.is_file()]
    return out


def assert_no_secret(paths: list[Path], texts: list[str], *secrets: str) -> None:
    """No file and no captured text contains a secret or an Authorization header value."""
    assert paths, "nothing to check"
    for p in paths:
        data = p.read_bytes()
        for s in secrets:
            assert s.encode() not in data, f"{p} contains the API key"
        assert b"Bearer " not in data, f"{p} contains an Authorization header value"
    for t in texts:
        for s in secrets:
            assert s not in t, "captured output contains the API key"
        assert "Bearer " not in t


# ------------------------------------------------------------------------------------------ bad input
def _gsm_file(tmp_path: Path, text: str) -> str:
    p = tmp_path / "gsm.jsonl"
    p.write_text(text, encoding="utf-8")
    return str(p)


BAD_RUNS: list[tuple[str, Callable[[Path], list[str]], tuple[str, ...]]] = [
    ("unknown strategy", lambda t: ["--strategy", "vote-harder"], ("unknown strategy 'vote-harder'", "use one of")),
    ("unknown backend", lambda t: ["--strategy", "lase", "--backend", "anthropic"],
     ("unknown backend 'anthropic'", "use one of")),
    ("unknown dataset", lambda t: ["--strategy", "lase", "--dataset", "gsm9k"], ("unknown data set 'gsm9k'", "gsm8k")),
    ("unknown names are listed with hyphens", lambda t: ["--strategy", "lase", "--dataset", "gsm9k"],
     ("gsm-symbolic", "mmlu-pro")),
    ("underscored strategy, hyphenated data set: names accepted",
     lambda t: ["--strategy", "LASE_MV", "--dataset", "gsm-symbolic"], ("--data-path",)),
    ("tau_lp above 1", lambda t: ["--strategy", "lase", "--tau-lp", "1.5"], ("tau_lp must be in [0, 1]", "1.5")),
    ("tau_lp below 0", lambda t: ["--strategy", "lase", "--tau-lp", "-0.1"], ("tau_lp must be in [0, 1]",)),
    ("tau_h below 0", lambda t: ["--strategy", "lase", "--tau-h", "-1"], ("tau_h must be >= 0",)),
    ("n zero", lambda t: ["--strategy", "lase", "--n", "0"], ("--n must be a positive number", "got 0")),
    ("n negative", lambda t: ["--strategy", "mv", "--n", "-3"], ("--n must be a positive number",)),
    ("samples zero", lambda t: ["--strategy", "mv", "--samples", "0"], ("n_samples must be >= 1",)),
    ("max tokens zero", lambda t: ["--strategy", "lase", "--max-tokens", "0"], ("max_tokens must be >= 1",)),
    ("window zero", lambda t: ["--strategy", "lase", "--window", "0"], ("--window must be >= 1",)),
    ("down final", lambda t: ["--strategy", "down", "--down-final", "coin"], ("down_final must be",)),
    ("gsm8k without a file", lambda t: ["--strategy", "lase", "--dataset", "gsm8k"], ("--data-path",)),
    ("data file missing", lambda t: ["--strategy", "lase", "--dataset", "gsm8k", "--data-path", str(t / "nope.jsonl")],
     ("no such file",)),
    ("data file empty", lambda t: ["--strategy", "lase", "--dataset", "gsm8k", "--data-path", _gsm_file(t, "")],
     ("gsm.jsonl", "file is empty")),
    ("data file malformed JSON",
     lambda t: ["--strategy", "lase", "--dataset", "gsm8k", "--data-path", _gsm_file(t, '{"question": "x",\n')],
     ("gsm.jsonl", "invalid JSON")),
    ("data row without answer",
     lambda t: ["--strategy", "lase", "--dataset", "gsm8k",
                "--data-path", _gsm_file(t, json.dumps({"question": "What is 1 + 1?"}) + "\n")],
     ("gsm.jsonl", "'answer'", "missing")),
    ("data row without final line",
     lambda t: ["--strategy", "lase", "--dataset", "gsm8k",
                "--data-path", _gsm_file(t, json.dumps({"question": "1 + 1?", "answer": "two"}) + "\n")],
     ("gsm.jsonl", "#### N")),
    ("arith with a data path", lambda t: ["--strategy", "lase", "--data-path", str(t)], ("takes no data path",)),
    ("timeout on the local backend", lambda t: ["--strategy", "lase", "--timeout", "5"], ("apply to API backends",)),
    ("threads on an API backend",
     lambda t: ["--strategy", "lase", "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--threads", "2"],
     ("--threads applies to --backend local",)),
    ("zero threads", lambda t: ["--strategy", "lase", "--threads", "0"], ("--threads must be a positive",)),
    ("concurrency zero",
     lambda t: ["--strategy", "lase", "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--concurrency", "0"],
     ("concurrency must be >= 1",)),
    ("timeout zero",
     lambda t: ["--strategy", "lase", "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--timeout", "0"],
     ("timeout must be > 0",)),
    ("max retries negative",
     lambda t: ["--strategy", "lase", "--backend", "gemini", "--max-retries", "-1"], ("max_retries must be >= 0",)),
    ("base url for the local backend",
     lambda t: ["--strategy", "lase", "--base-url", "http://127.0.0.1:9/v1"], ("--base-url applies to API backends",)),
    ("openai without a key", lambda t: ["--strategy", "lase", "--backend", "openai"], ("OPENAI_API_KEY", "set the environment")),
    ("compatible server without a key",
     lambda t: ["--strategy", "lase", "--backend", "openai", "--base-url", "https://llm.example.com/v1"],
     ("OPENAI_COMPATIBLE_API_KEY",)),
    ("gemini without a key", lambda t: ["--strategy", "lase", "--backend", "gemini"], ("GEMINI_API_KEY",)),
    ("cache mode unknown",
     lambda t: ["--strategy", "lase", "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--cache-mode", "x"],
     ("unknown cache mode 'x'",)),
    ("cache path is a folder",
     lambda t: ["--strategy", "lase", "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--cache", str(t)],
     ("cannot open the call cache", "--cache")),
    ("out under a regular file",
     lambda t: ["--strategy", "lase", "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1",
                "--out", str(_gsm_file(t, "x")) + "/run"],
     ("cannot be written", "--out")),
]


@pytest.mark.parametrize("case", BAD_RUNS, ids=[c[0] for c in BAD_RUNS])
def test_bad_run_input_is_one_line_exit_2_and_writes_nothing(case, tmp_path, capsys):
    name, make_args, needles = case
    out = tmp_path / "out" / "run1"
    args = make_args(tmp_path)
    if "--out" not in args:
        args += ["--out", str(out)]
    if "--cache" not in args:
        args += ["--cache", str(tmp_path / "c.sqlite")]
    before = sorted(p.name for p in tmp_path.iterdir())
    rc, _, err = run_cli(capsys, "run", *args, "--quiet")
    assert_one_line_error(rc, err, *needles)
    assert not (tmp_path / "out").exists(), "a failed run left an output folder behind"
    after = sorted(p.name for p in tmp_path.iterdir())
    assert after == before, "bad input created files"


def test_bad_input_leaves_an_existing_out_folder_untouched(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    rc, _, err = run_cli(capsys, "run", "--strategy", "lase", "--tau-h", "-2", "--out", str(out), "--quiet")
    assert_one_line_error(rc, err, "tau_h")
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_ask_without_key_is_one_line(capsys):
    rc, _, err = run_cli(capsys, "ask", "What is 2 + 2?", "--backend", "gemini")
    assert_one_line_error(rc, err, "GEMINI_API_KEY")
    rc, _, err = run_cli(capsys, "ask", "What is 2 + 2?", "--backend", "openai")
    assert_one_line_error(rc, err, "OPENAI_API_KEY")


def test_sweep_of_a_folder_that_is_not_a_run(tmp_path, capsys):
    rc, _, err = run_cli(capsys, "sweep", str(tmp_path))
    assert_one_line_error(rc, err, "not a finished run", "lase-nb run")


def test_gate_on_a_model_without_logprobs_is_named_and_leaves_no_output(tmp_path, capsys):
    out = tmp_path / "out"
    with OpenAIWireServer(faults=["nologprobs"] * 50) as srv:
        rc, _, err = run_cli(capsys, "run", "--strategy", "lase", "--backend", "openai", "--base-url", srv.base_url,
                             "--n", "3", "--out", str(out), "--cache", str(tmp_path / "c.sqlite"), "--quiet",
                             "--max-retries", "0")
        line = assert_one_line_error(rc, err, "returned no token log-probabilities", "gpt-4.1-mini",
                                     "a strategy without a gate")
        # rounds of the three problems' calls until NO_LOGPROBS_STOP replies came without any, then it stopped
        assert NO_LOGPROBS_STOP <= srv.request_count < NO_LOGPROBS_STOP + 3
        assert not out.exists()
        # a strategy without a gate runs fine on the same model
        rc, stdout, err = run_cli(capsys, "run", "--strategy", "mv", "--samples", "2", "--backend", "openai",
                                  "--base-url", srv.base_url, "--n", "3", "--out", str(out),
                                  "--cache", str(tmp_path / "c.sqlite"), "--quiet")
    assert rc == 0, err
    assert (out / "manifest.json").exists() and len((out / "problems.jsonl").read_text().splitlines()) == 3
    assert "log-probabilities" in line


def test_backend_failure_mid_run_is_named_and_leaves_no_output(tmp_path, capsys):
    out = tmp_path / "new" / "out"
    with OpenAIWireServer(faults=["500"] * 10) as srv:
        rc, _, err = run_cli(capsys, "run", "--strategy", "lase", "--backend", "openai", "--base-url", srv.base_url,
                             "--n", "2", "--out", str(out), "--cache", str(tmp_path / "c.sqlite"), "--quiet",
                             "--max-retries", "1", "--concurrency", "1")
        assert_one_line_error(rc, err, "HTTP 500 after 1 retry", "openai")
        assert srv.request_count == 2  # the first call and its one retry; the second call was never started
    assert not (tmp_path / "new").exists(), "the folders the failed run created were not removed"


# ------------------------------------------------------------------------------------------ a good run
def test_run_and_sweep_over_the_openai_wire_server(tmp_path, capsys):
    problems = arithmetic_problems(4)
    out = tmp_path / "run"
    with OpenAIWireServer(oracle(problems)) as srv:
        rc, stdout, err = run_cli(capsys, "run", "--strategy", "lase", "--full-chain", "--backend", "openai",
                                  "--base-url", srv.base_url, "--n", "4", "--out", str(out),
                                  "--cache", str(tmp_path / "c.sqlite"), "--quiet")
        assert rc == 0, err
        assert srv.request_count == 4 * 7
    rows = [json.loads(l) for l in (out / "problems.jsonl").read_text().splitlines()]
    assert [r["problem_id"] for r in rows] == [p.id for p in problems]
    assert all(r["correct"] and r["stop_stage"] == 1 for r in rows)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["base_url"] == srv.base_url and manifest["n"] == 4
    assert "carried no \\boxed{}" not in stdout  # the oracle boxes every answer
    rc, stdout, err = run_cli(capsys, "sweep", str(out), "--tau-lp", "0.2", "0.9")
    assert rc == 0, err
    assert (out / "sweep.csv").exists()


# ------------------------------------------------------------------------------------------ secrets
def _run_args(srv_url: str, tmp_path: Path, backend: str, out: str, cache: str = "cache.sqlite") -> list[str]:
    return ["run", "--strategy", "lase", "--backend", backend, "--base-url", srv_url, "--n", "3",
            "--out", str(tmp_path / out), "--cache", str(tmp_path / cache), "--quiet"]


def test_openai_key_never_reaches_disk_or_output(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", SENTINEL)
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL + "-official")  # must not even be sent
    texts: list[str] = []
    with OpenAIWireServer(oracle(arithmetic_problems(3)), api_key=SENTINEL) as srv:
        rc, o, e = run_cli(capsys, "ask", "What is 2 + 2?", "--backend", "openai", "--base-url", srv.base_url,
                           "--cache", str(tmp_path / "cache.sqlite"))
        assert rc == 0, e
        texts += [o, e]
        rc, o, e = run_cli(capsys, *_run_args(srv.base_url, tmp_path, "openai", "out"))
        assert rc == 0, e
        texts += [o, e]
        # the key was really in use: the server enforces it
        assert {r.headers["authorization"] for r in srv.requests} == {f"Bearer {SENTINEL}"}
    with OpenAIWireServer(oracle(arithmetic_problems(3))) as srv:
        # a secret in the base URL's user-info (httpx sends it as Basic auth) is not recorded either
        u = srv.base_url.replace("http://", f"http://user:{SENTINEL}@")
        rc, o, e = run_cli(capsys, *_run_args(u, tmp_path, "openai", "out2", "cache2.sqlite"))
        assert rc == 0, e
        texts += [o, e]
        assert srv.request_count == 9
    with OpenAIWireServer(api_key="some-other-key") as srv:  # rejected key: the error must not show it
        rc, o, e = run_cli(capsys, *_run_args(srv.base_url, tmp_path, "openai", "out3", "c401.sqlite"))
        assert_one_line_error(rc, e, "HTTP 401")
        texts += [o, e]
    assert_no_secret(files_under(tmp_path), texts, SENTINEL)


def test_gemini_key_never_reaches_disk_or_output(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", GSENTINEL)
    texts: list[str] = []
    with GeminiWireServer(oracle(arithmetic_problems(3)), api_key=GSENTINEL) as srv:
        rc, o, e = run_cli(capsys, "ask", "What is 2 + 2?", "--backend", "gemini", "--base-url", srv.base_url,
                           "--cache", str(tmp_path / "cache.sqlite"))
        assert rc == 0, e
        texts += [o, e]
        rc, o, e = run_cli(capsys, *_run_args(srv.base_url, tmp_path, "gemini", "out"))
        assert rc == 0, e
        texts += [o, e]
        assert {r.headers["x-goog-api-key"] for r in srv.requests} == {GSENTINEL}
    with GeminiWireServer(api_key="some-other-key") as srv:
        rc, o, e = run_cli(capsys, *_run_args(srv.base_url, tmp_path, "gemini", "out3", "c401.sqlite"),
                           "--max-retries", "0")
        assert_one_line_error(rc, e, "HTTP 401")
        texts += [o, e]
    assert_no_secret(files_under(tmp_path), texts, GSENTINEL)


def test_key_not_in_a_cli_subprocess_output_even_with_sdk_debug_logging(tmp_path):
    """A real ``python -m lase_nb run`` with the openai SDK's own debug logging switched on."""
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS}
    env.update(OPENAI_COMPATIBLE_API_KEY=SENTINEL, OPENAI_LOG="debug", PYTHONPATH=str(ROOT),
               LASE_CACHE=str(tmp_path / "default.sqlite"), HF_HUB_OFFLINE="1")
    with OpenAIWireServer(oracle(arithmetic_problems(2)), api_key=SENTINEL) as srv:
        proc = subprocess.run([sys.executable, "-m", "lase_nb", *_run_args(srv.base_url, tmp_path, "openai", "out"),
                               "--n", "2"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert srv.request_count == 6
    assert "HTTP Request" in proc.stderr or "Request options" in proc.stderr  # the debug log really ran
    assert_no_secret(files_under(tmp_path), [proc.stdout, proc.stderr], SENTINEL)


def test_quickstart_notebook_with_a_key_does_not_store_it(tmp_path, monkeypatch):
    import papermill as pm

    from lase_nb.book.execution import NOTEBOOKS

    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", SENTINEL)
    out = tmp_path / "00_quickstart.ipynb"
    with OpenAIWireServer(api_key=SENTINEL) as srv:
        pm.execute_notebook(str(NOTEBOOKS / "00_quickstart.ipynb"), str(out),
                            parameters={"backend": "openai", "base_url": srv.base_url, "interactive": False},
                            cwd=str(NOTEBOOKS), kernel_name="python3", progress_bar=False)
        assert srv.request_count == 1 and srv.requests[0].headers["authorization"] == f"Bearer {SENTINEL}"
    text = out.read_text()
    assert "\\\\boxed{4}" in text  # the server's reply reached the notebook
    assert_no_secret(files_under(tmp_path), [text], SENTINEL)


def test_names_accept_either_separator_and_print_hyphens():
    from lase_nb.backends import BACKENDS
    from lase_nb.datasets import DATASETS
    from lase_nb.errors import ConfigError
    from lase_nb.names import display, resolve
    from lase_nb.strategies import STRATEGIES

    assert resolve("lase_mv", STRATEGIES, "strategy") == resolve("lase-mv", STRATEGIES, "strategy") == "lase-mv"
    assert resolve("mmlu-pro", DATASETS, "data set") == resolve("mmlu_pro", DATASETS, "data set") == "mmlu_pro"
    assert resolve("OpenAI", BACKENDS, "backend") == "openai"
    assert display("mmlu_pro") == "mmlu-pro" and display("lase-mv") == "lase-mv"
    with pytest.raises(ConfigError, match="unknown strategy 'lase_x'; use one of single, .*lase-mv"):
        resolve("lase_x", STRATEGIES, "strategy")


def test_ask_runs_the_extraction_step_and_says_where_the_answer_came_from(tmp_path, capsys):
    """A reply without a box gets the pipeline's extraction step, and ask names the call it read."""
    from lase_nb import prompts

    def responder(messages, params):
        if messages[-1]["content"] == prompts.EXTRACT_REQUEST:
            return Reply("\\boxed{5}", 0.7)
        return Reply("Two and three make 5.", 0.9)

    with OpenAIWireServer(responder=responder) as srv:
        rc, out, err = run_cli(capsys, "ask", "What is 2 + 3?", "--backend", "openai", "--base-url", srv.base_url,
                               "--cache", str(tmp_path / "c.sqlite"))
        assert rc == 0, err
        assert srv.request_count == 2
    assert "from the answer-extraction step" in out and "read from the extraction call" in out
    assert "answer:            5" in out and "tokens (extraction)" in out
    with OpenAIWireServer(responder=responder) as srv:
        rc, out, err = run_cli(capsys, "ask", "What is 2 + 3?", "--backend", "openai", "--base-url", srv.base_url,
                               "--cache", str(tmp_path / "c2.sqlite"), "--no-extract")
        assert rc == 0 and srv.request_count == 1
    assert "(none)   from nothing: no \\boxed{} in the reply (--no-extract)" in out
    with OpenAIWireServer(responder=lambda m, p: Reply("so \\boxed{5}", 0.9)) as srv:
        rc, out, err = run_cli(capsys, "ask", "What is 2 + 3?", "--backend", "openai", "--base-url", srv.base_url,
                               "--cache", str(tmp_path / "c3.sqlite"))
        assert rc == 0 and srv.request_count == 1
    assert "from the reply's \\boxed{}" in out and "read from the reply call" in out


def test_run_levels_reach_the_problems_and_the_manifest(tmp_path, capsys):
    with OpenAIWireServer(oracle(arithmetic_problems(6, levels=(1, 2, 3)))) as srv:
        rc, out, err = run_cli(capsys, "run", "--strategy", "single", "--backend", "openai", "--base-url",
                               srv.base_url, "--n", "6", "--levels", "1", "2", "3", "--out", str(tmp_path / "r"),
                               "--cache", str(tmp_path / "c.sqlite"), "--quiet")
        assert rc == 0, err
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["levels"] == [1, 2, 3]
    rows = [json.loads(x) for x in (tmp_path / "r" / "problems.jsonl").read_text().splitlines()]
    assert sorted({r["level"] for r in rows}) == [1, 2, 3]
    rc, _, err = run_cli(capsys, "run", "--strategy", "single", "--dataset", "math500", "--data-path", "x.jsonl",
                         "--levels", "2", "--out", str(tmp_path / "bad"))
    assert rc == 2 and "levels apply to the generated 'arith' set only" in err


def test_run_split_reaches_the_problems_and_the_manifest(tmp_path, capsys):
    """The split regenerates from the manifest: runs.problems_from_manifest finds the same problems."""
    from lase_nb.runs import problems_from_manifest

    probs = arithmetic_problems(4, seed=22, levels=(1, 2), split="eval")
    with OpenAIWireServer(oracle(probs)) as srv:
        rc, out, err = run_cli(capsys, "run", "--strategy", "single", "--backend", "openai", "--base-url",
                               srv.base_url, "--n", "4", "--seed", "22", "--levels", "1", "2", "--split", "eval",
                               "--out", str(tmp_path / "r"), "--cache", str(tmp_path / "c.sqlite"), "--quiet")
        assert rc == 0, err
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["split"] == "eval"
    assert sorted(problems_from_manifest(manifest)) == sorted(p.id for p in probs)


def _small_model(messages, params):
    """A small model through an API, zero-shot: it states its answer in words and never boxes it."""
    from lase_nb import prompts

    if messages[-1]["content"] == prompts.EXTRACT_REQUEST:
        return Reply("The answer is 50. To find the answer we add", 0.97)
    return Reply("Sara had 30 and got 20 more, so she has 50 now.", 0.9)


def test_ask_reads_a_stated_answer_and_says_what_the_gate_would_do(tmp_path, capsys):
    with OpenAIWireServer(responder=_small_model) as srv:
        rc, out, err = run_cli(capsys, "ask", "Sara has 30 and gets 20 more. How many?", "--backend", "openai",
                               "--base-url", srv.base_url, "--cache", str(tmp_path / "c.sqlite"))
        assert rc == 0, err
        assert srv.request_count == 2
    assert "answer:            50   from the answer-extraction step" in out
    assert "exp(LP_min):       0.9700" in out and "read from the extraction call" in out
    assert "LASE's gate:       sure at its defaults (tau_lp 0.8" in out and "answer stands" in out
    assert "1 of 1 reply carried no \\boxed{} answer (with 0 worked examples)" in out and "--examples 2" in out


def test_ask_says_why_there_is_no_answer_and_no_confidence(tmp_path, capsys):
    def rambles(messages, params):
        return Reply("Let me think about the stickers again.", 0.6)

    with OpenAIWireServer(responder=rambles) as srv:
        rc, out, err = run_cli(capsys, "ask", "What is 2 + 3?", "--backend", "openai", "--base-url", srv.base_url,
                               "--cache", str(tmp_path / "c.sqlite"))
        assert rc == 0, err
    assert "(none)   from nothing: the reply has no \\boxed{} and the extraction step wrote no answer" in out
    assert "exp(LP_min), H_max: not measured (no answer to read them from)" in out
    assert "LASE's gate:       unsure" in out and "call the supporters" in out


def test_run_says_when_replies_carry_no_box(tmp_path, capsys):
    with OpenAIWireServer(responder=_small_model) as srv:
        rc, out, err = run_cli(capsys, "run", "--strategy", "single", "--backend", "openai", "--base-url",
                               srv.base_url, "--n", "3", "--out", str(tmp_path / "run"),
                               "--cache", str(tmp_path / "c.sqlite"), "--quiet")
        assert rc == 0, err
    calls = [json.loads(l) for l in (tmp_path / "run" / "calls.jsonl").read_text().splitlines()]
    assert "3 of 3 replies carried no \\boxed{} answer" in out and "--examples 2" in out
    assert [c["p_min"] for c in calls if c["role"] == "extract"] == [pytest.approx(0.97)] * 3


def test_run_output_files_are_readable_as_the_umask_says(tmp_path, capsys):
    import stat

    old = os.umask(0o022)
    try:
        with OpenAIWireServer() as srv:
            rc, out, err = run_cli(capsys, "run", "--strategy", "single", "--backend", "openai", "--base-url",
                                   srv.base_url, "--n", "2", "--out", str(tmp_path / "run"),
                                   "--cache", str(tmp_path / "c.sqlite"), "--quiet")
            assert rc == 0, err
    finally:
        os.umask(old)
    files = sorted((tmp_path / "run").iterdir())
    assert {f.name for f in files} >= {"manifest.json", "problems.jsonl", "calls.jsonl"}
    assert {f.name: oct(stat.S_IMODE(f.stat().st_mode)) for f in files} == {f.name: oct(0o644) for f in files}


# ------------------------------------------------------------------------------------------ your own data file
def _own_file(tmp_path: Path) -> Path:
    rows = [{"prompt": f"A shelf holds {i + 2} books and {i + 5} more arrive. How many books?", "target": str(2 * i + 7),
             "level": "easy" if i % 2 else "hard"} for i in range(6)]
    f = tmp_path / "mine.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return f


def test_run_record_and_ask_read_your_own_jsonl_file(tmp_path, capsys):
    """Issue 65: --dataset jsonl with its fields and answer kind in run, record and ask; the manifest
    keeps the fields, so a chapter's loader rebuilds the problems from it."""
    from lase_nb.datasets import jsonl_fields, load_dataset
    from lase_nb.runs import load_runs, problems_from_manifest

    f = _own_file(tmp_path)
    own = ["--dataset", "jsonl", "--data-path", str(f), "--question-field", "prompt", "--answer-field", "target",
           "--answer-kind", "number"]
    problems = load_dataset("jsonl", f, fields=jsonl_fields("prompt", "target"))
    with OpenAIWireServer(oracle(problems)) as srv:
        base = ["--backend", "openai", "--base-url", srv.base_url, "--cache", str(tmp_path / "c.sqlite")]
        rc, out, err = run_cli(capsys, "run", "--strategy", "single", *base, *own, "--n", "4",
                               "--out", str(tmp_path / "r"), "--quiet")
        assert rc == 0, err
        rc, out, err = run_cli(capsys, "record", *base, *own, "--n", "3", "--strategies", "single", "lase-full",
                               "--out", str(tmp_path / "s"), "--quiet")
        assert rc == 0, err
        rc, out, err = run_cli(capsys, "ask", *base, *own, "--problem", "2")
        assert rc == 0, err
    assert out.startswith(f"problem jsonl-0001 (jsonl, 2 of 6):\n{problems[1].question}\n")
    assert f"gold answer:       {problems[1].gold}   (right)" in out
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["dataset"] == "jsonl" and manifest["n"] == 4
    assert manifest["data_fields"] == {"question": "prompt", "answer": "target", "kind": "number"}
    rows = [json.loads(x) for x in (tmp_path / "r" / "problems.jsonl").read_text().splitlines()]
    assert all(r["correct"] for r in rows) and {r["level"] for r in rows} <= {"easy", "hard"}
    run = load_runs(tmp_path / "s", ["lase"], require=["lase"])["lase"]
    rebuilt = problems_from_manifest(run.manifest)
    assert sorted(rebuilt) == sorted(run.problems["problem_id"]) and len(rebuilt) == 3
    assert json.loads((tmp_path / "s" / "study.json").read_text())["data_fields"]["question"] == "prompt"


def test_a_wrong_field_name_is_one_line_listing_the_files_fields(tmp_path, capsys):
    f = _own_file(tmp_path)
    for cmd in (["run", "--strategy", "single", "--out", str(tmp_path / "r")],
                ["record", "--out", str(tmp_path / "s"), "--dry-run"], ["ask"]):
        rc, out, err = run_cli(capsys, *cmd, "--dataset", "jsonl", "--data-path", str(f), "--question-field", "text")
        assert rc == 2 and len(err.strip().splitlines()) == 1, (cmd, err)
        assert "no field 'text' (this row's fields: 'prompt', 'target', 'level'); pass --question-field" in err
    assert not (tmp_path / "r").exists() and not (tmp_path / "s").exists()
    rc, _, err = run_cli(capsys, "ask", "What is 2 + 2?", "--dataset", "jsonl", "--data-path", str(f))
    assert rc == 2 and "not both" in err
    rc, _, err = run_cli(capsys, "ask", "What is 2 + 2?", "--answer-kind", "text")
    assert rc == 2 and "--answer-kind goes with --dataset" in err
    rc, _, err = run_cli(capsys, "ask", "--dataset", "jsonl", "--data-path", str(f), "--question-field", "prompt",
                         "--answer-field", "target", "--problem", "9")
    assert rc == 2 and "--problem 9: the data set has 6 problems" in err
    rc, _, err = run_cli(capsys, "run", "--strategy", "single", "--dataset", "gsm8k", "--data-path", str(f),
                         "--answer-kind", "text", "--out", str(tmp_path / "r"))
    assert rc == 2 and "apply to --dataset jsonl" in err
