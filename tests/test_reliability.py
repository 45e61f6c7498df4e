"""Reliability: faults at the wire, a killed run that resumes, and two runs sharing one cache.

Every test talks HTTP to the wire servers of :mod:`tests.wire_servers` through the real SDKs, and
checks three things: a run either finishes with the answers the server sent or stops with one
error that names the fault; retries are bounded (the server counts every request); and nothing
that finished is lost (a rerun answers completed calls from the cache; the server sees them once).
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from lase_nb import cli
from lase_nb.backends.gemini_backend import GeminiBackend
from lase_nb.backends.openai_backend import OpenAIBackend
from lase_nb.cache import CallCache
from lase_nb.datasets import arithmetic_problems
from lase_nb.engine import Engine
from lase_nb.errors import BackendError, LogprobsUnavailable
from lase_nb.runner import run_problems
from lase_nb.strategies import ProblemResult, StrategyConfig
from lase_nb.types import Generation
from tests.responders import oracle
from tests.wire_servers import GeminiWireServer, OpenAIWireServer, Reply, start_subprocess

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-test-reliability"
PROBLEMS = arithmetic_problems(4, seed=5)
#: LASE (default thresholds) makes 3 calls a problem with the oracle below; MV with 3 samples makes 3.
# strict (no answer-extraction step): these tests follow an unparsed reply through the gate;
# the extraction step has its own tests in test_strategies.py
CONFIGS = {"lase": StrategyConfig(extract_answers=False), "mv": StrategyConfig(n_samples=3, extract_answers=False)}
N_CALLS = 3 * len(PROBLEMS)
SERVERS = {"openai": OpenAIWireServer, "gemini": GeminiWireServer}


# ------------------------------------------------------------------------------------------ helpers
class FaultsAfter:
    """Wraps a responder: once it has answered ``k`` requests, queue ``faults`` on the server.

    With concurrency 1 the faults then hit exactly the requests after the k-th answered one, so a
    run fails part-way with some calls finished (and cached) before it.
    """

    def __init__(self, inner: Callable[..., Reply], k: int, faults: list[str]) -> None:
        self.inner, self.k, self.faults, self.n = inner, k, faults, 0
        self.server: Any = None

    def __call__(self, messages: list[dict[str, str]], params: dict[str, Any]) -> Reply:
        self.n += 1
        if self.n == self.k:
            self.server.add_faults(*self.faults)
        return self.inner(messages, params)


def make_backend(api: str, srv: Any, *, concurrency: int = 4, timeout: float = 10, max_retries: int = 2):
    """The real SDK backend pointed at ``srv`` (Gemini's backoff shortened to keep tests quick)."""
    if api == "openai":
        return OpenAIBackend("wire-model", base_url=srv.base_url, api_key=KEY, concurrency=concurrency,
                             timeout=timeout, max_retries=max_retries)
    return GeminiBackend("gemini-wire", api_key=KEY, base_url=srv.base_url, concurrency=concurrency,
                         timeout=timeout, max_retries=max_retries, retry_initial_delay=0.05)


def run(strategy: str, backend: Any, cache: Path) -> list[ProblemResult]:
    return run_problems(strategy, PROBLEMS, Engine(backend, CallCache(cache)), CONFIGS[strategy], progress=False)


def assert_all_correct(results: list[ProblemResult]) -> None:
    golds = {p.id: p.gold for p in PROBLEMS}
    assert [r.problem_id for r in results] == [p.id for p in PROBLEMS]
    for r in results:
        assert r.correct and r.answer == golds[r.problem_id], (r.problem_id, r.answer)


def _call_id(messages: list[dict[str, str]], temperature: float, sample: int) -> str:
    """What tells calls apart: the conversation and, for sampled calls, the sample index."""
    return json.dumps([messages, float(temperature), int(sample) if temperature > 0 else 0], sort_keys=True)


def call_of(body: Any) -> str:
    """The call a request stands for, from an OpenAI or Gemini request body (seed = sample index)."""
    if "messages" in body:
        msgs = [{"role": m["role"], "content": m["content"]} for m in body["messages"]]
        return _call_id(msgs, body.get("temperature") or 0.0, body.get("seed") or 0)
    msgs = []
    if body.get("systemInstruction"):
        msgs.append({"role": "system", "content": "".join(p["text"] for p in body["systemInstruction"]["parts"])})
    for c in body["contents"]:
        msgs.append({"role": "assistant" if c["role"] == "model" else "user",
                     "content": "".join(p.get("text", "") for p in c["parts"])})
    gc = body.get("generationConfig") or {}
    return _call_id(msgs, gc.get("temperature") or 0.0, gc.get("seed") or 0)


def cached_calls(path: Path) -> list[str]:
    """The call of every cache entry (each entry must parse completely)."""
    con = sqlite3.connect(path)
    try:
        rows = con.execute("SELECT request, generation FROM calls").fetchall()
    finally:
        con.close()
    out = []
    for request, generation in rows:
        Generation.from_json(generation)
        req = json.loads(request)
        out.append(_call_id(req["messages"], req["params"]["temperature"], req["params"]["sample"]))
    return out


def integrity_ok(path: Path) -> bool:
    con = sqlite3.connect(path)
    try:
        return con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        con.close()


# ------------------------------------------------------------------------------ transient faults
TRANSIENT = ["429", "429:0.05", "500", "503", "drop", "stall"]


@pytest.mark.parametrize("strategy", ["lase", "mv"])
@pytest.mark.parametrize("api", ["openai", "gemini"])
def test_transient_faults_are_retried_once_each_and_the_run_is_right(api, strategy, tmp_path):
    """One of each transient fault, on successive requests; a retry may meet the next fault.

    An attempt may wait ``timeout`` for each call sent with it (at most 4 x 1.5 s here), so the
    stall outlasts that."""
    with SERVERS[api](oracle(PROBLEMS), faults=TRANSIENT, stall_s=8) as srv:
        backend = make_backend(api, srv, timeout=1.5, max_retries=len(TRANSIENT))
        results = run(strategy, backend, tmp_path / "c.sqlite")
        assert not srv.pending_faults
        assert [r.fault for r in srv.requests[:len(TRANSIENT)]] == TRANSIENT
        assert srv.request_count == N_CALLS + len(TRANSIENT), "exactly one retry per faulty request"
    assert_all_correct(results)
    assert len(CallCache(tmp_path / "c.sqlite")) == N_CALLS


# --------------------------------------------------------------------------- faulty content
@pytest.mark.parametrize("fault, is_faulty", [
    ("length", lambda c: c.finish_reason == "length"),  # the reply cut at its token cap
    ("empty", lambda c: c.text == "" and c.completion_tokens == 0),
], ids=["cut-by-length", "empty"])
@pytest.mark.parametrize("strategy", ["lase", "mv"])
@pytest.mark.parametrize("api", ["openai", "gemini"])
def test_cut_or_empty_reply_counts_as_unparsed_and_the_run_goes_on(api, strategy, fault, is_faulty, tmp_path):
    with SERVERS[api](oracle(PROBLEMS), faults=[fault]) as srv:
        results = run(strategy, make_backend(api, srv), tmp_path / "c.sqlite")
        assert srv.request_count == N_CALLS
    assert_all_correct(results)  # LASE escalates past the faulty answer; MV outvotes it
    faulty = [c for r in results for c in r.calls if is_faulty(c)]
    assert len(faulty) == 1 and faulty[0].answer is None and faulty[0].stage == 0


@pytest.mark.parametrize("api", ["openai", "gemini"])
def test_a_reply_without_logprobs_is_unsure_and_a_model_without_any_stops_a_gate(api, tmp_path):
    """Some providers leave log-probabilities out of some replies: that answer has no confidence and
    the gate takes it as unsure (LASE escalates); a model that returns none stops a gated run after
    its first NO_LOGPROBS_STOP replies, with the error that says so; a vote needs none."""
    from lase_nb.runner import NO_LOGPROBS_STOP
    with SERVERS[api](oracle(PROBLEMS, p_first=0.99), faults=["nologprobs"]) as srv:
        results = run("lase", make_backend(api, srv), tmp_path / "lase.sqlite")
        assert srv.request_count == len(PROBLEMS) + 2  # sure leaders stop at once; the unmeasured one escalated
    assert_all_correct(results)
    (unmeasured,) = [c for r in results for c in r.calls if c.role == "leader" and c.p_min is None]
    assert unmeasured.answer is not None and unmeasured.stage == 0
    with SERVERS[api](oracle(PROBLEMS), faults=["nologprobs"] * 100) as srv:
        with pytest.raises(LogprobsUnavailable, match=rf"none of its first {NO_LOGPROBS_STOP} replies") as ei:
            run("lase", make_backend(api, srv), tmp_path / "none.sqlite")
        assert ("wire-model" if api == "openai" else "gemini-wire") in str(ei.value)
        assert srv.request_count == NO_LOGPROBS_STOP  # two rounds of four calls, then the run stopped
        srv.reset()
        srv.add_faults("nologprobs")
        results = run("mv", make_backend(api, srv), tmp_path / "mv.sqlite")
        assert srv.request_count == N_CALLS
    assert_all_correct(results)
    assert sum(c.p_min is None for r in results for c in r.calls) == 1


# ------------------------------------------------------------------- failures, then a resume
#: (fault spec, how many times, what the error must say); ``R`` stands for max_retries + 1.
FATAL = [
    ("500", "R", r"HTTP 500 after 1 retry"),
    ("429", "R", r"rate limited \(HTTP 429\) after 1 retry"),
    ("stall", "R", r"timed out"),
    ("drop", "R", r"connection dropped"),
    ("truncated", 1, r"malformed response"),
]


CASES = [(api, "lase", *f) for api in ("openai", "gemini") for f in FATAL] + [("openai", "mv", *FATAL[0])]


@pytest.mark.parametrize("api,strategy,fault,times,message", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES])
def test_fatal_fault_is_named_bounded_and_a_rerun_loses_nothing(api, strategy, fault, times, message, tmp_path):
    cache = tmp_path / "c.sqlite"
    done_before = 5
    n_faults = 2 if times == "R" else times
    responder = FaultsAfter(oracle(PROBLEMS), done_before, [fault] * n_faults)
    with SERVERS[api](responder, stall_s=5) as srv:
        responder.server = srv
        backend = make_backend(api, srv, concurrency=1, max_retries=1, timeout=1.0 if fault == "stall" else 10)
        with pytest.raises(BackendError, match=message) as ei:
            run(strategy, backend, cache)
        assert KEY not in str(ei.value) and "\n" not in str(ei.value)
        # bounded: the calls before the fault, then the faulty call and its retries, nothing else
        assert srv.request_count == done_before + n_faults
        assert not srv.pending_faults
        before = set(cached_calls(cache))
        assert len(before) == done_before  # every finished call was stored before the failure
        first = srv.request_count
        results = run(strategy, make_backend(api, srv), cache)
        again = [call_of(r.body) for r in srv.requests[first:]]
    assert_all_correct(results)
    assert len(again) == N_CALLS - done_before, "the rerun must make only the calls that had not finished"
    assert not before & set(again), "a finished call was sent again"
    assert len(set(cached_calls(cache))) == N_CALLS


def test_failure_with_calls_in_flight_keeps_them(tmp_path):
    """Concurrency 4: when one call fails, the calls already in flight finish and are stored."""
    cache = tmp_path / "c.sqlite"
    responder = FaultsAfter(oracle(PROBLEMS), 2, ["truncated"])
    with OpenAIWireServer(responder, latency_s=0.05) as srv:
        responder.server = srv
        with pytest.raises(BackendError, match="malformed response"):
            run("mv", make_backend("openai", srv, concurrency=4, max_retries=0), cache)
        first = srv.request_count
        before = set(cached_calls(cache))
        assert len(before) == first - 1  # all but the malformed reply
        results = run("mv", make_backend("openai", srv), cache)
        again = [call_of(r.body) for r in srv.requests[first:]]
    assert_all_correct(results)
    assert len(again) == N_CALLS - len(before) and not before & set(again)


@pytest.mark.parametrize("api", ["openai", "gemini"])
def test_cli_fails_with_one_line_then_resumes_from_the_cache(api, tmp_path, capsys, monkeypatch):
    """The same through ``lase-nb run`` with ``--max-retries`` and ``--timeout``."""
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-test")
    problems = arithmetic_problems(4)
    out, cache = tmp_path / "out", tmp_path / "c.sqlite"
    responder = FaultsAfter(oracle(problems), 6, ["503"] * 3)
    with SERVERS[api](responder) as srv:
        responder.server = srv
        argv = ["run", "--strategy", "lase", "--backend", api, "--base-url", srv.base_url, "--n", "4",
                "--out", str(out), "--cache", str(cache), "--quiet", "--concurrency", "1", "--timeout", "10"]
        rc = cli.main(argv + ["--max-retries", "2"])
        err = capsys.readouterr().err
        assert rc == 2 and len(err.strip().splitlines()) == 1, err
        assert err.startswith("lase-nb: error: ") and "HTTP 503 after 2 retries" in err
        assert srv.request_count == 6 + 3 and not out.exists()
        rc = cli.main(argv)
        stdout = capsys.readouterr().out
        assert rc == 0
        assert srv.request_count == 9 + 12 - 6
    assert "(6 model calls, 6 from cache)" in stdout
    rows = [json.loads(line) for line in (out / "problems.jsonl").read_text().splitlines()]
    assert [r["problem_id"] for r in rows] == [p.id for p in problems] and all(r["correct"] for r in rows)


def test_finished_study_reruns_with_zero_calls(tmp_path, capsys):
    def argv(out: str, *extra: str) -> list[str]:
        return ["run", "--strategy", "lase", "--full-chain", "--backend", "openai", "--base-url", srv.base_url,
                "--n", "4", "--seed", "5", "--out", str(tmp_path / out), "--cache", str(tmp_path / "c.sqlite"),
                "--quiet", *extra]

    with OpenAIWireServer(oracle(PROBLEMS)) as srv:
        assert cli.main(argv("a")) == 0
        n = srv.request_count
        assert n == 4 * 7
        capsys.readouterr()
        for mode in ("use", "replay"):
            assert cli.main(argv(mode, "--cache-mode", mode)) == 0
            assert "(0 model calls, 28 from cache)" in capsys.readouterr().out
        assert srv.request_count == n
    a, b = ((tmp_path / d / "problems.jsonl").read_text() for d in ("a", "replay"))
    assert a == b


# --------------------------------------------------------------------- a killed run resumes
def _lase_cmd(url: str, out: Path, cache: Path, n: int) -> list[str]:
    return [sys.executable, "-m", "lase_nb", "run", "--strategy", "lase", "--full-chain", "--backend", "openai",
            "--base-url", url, "--n", str(n), "--out", str(out), "--cache", str(cache), "--concurrency", "2",
            "--max-retries", "0", "--quiet"]


def _env() -> dict[str, str]:
    import os
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", OMP_WAIT_POLICY="PASSIVE")
    return env


def start_and_kill(cmd: list[str], cwd: Path, srv: Any, after: int, timeout_s: float = 90,
                   ready: Callable[[], bool] | None = None) -> None:
    """Start ``cmd`` and SIGKILL it once the server has seen ``after`` requests, or once ``ready()``
    holds when given (it must still be running)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout_s
    ready = ready or (lambda: srv.request_count >= after)
    while not ready() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proc.poll() is None, f"run ended before it could be killed: {proc.communicate()[1][-2000:]!r}"
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def _log_bodies(log: Path) -> list[str]:
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [call_of(rec["body"]) for rec in lines if rec["method"] == "POST"]


def test_sigkilled_run_resumes_without_repeating_finished_calls(tmp_path):
    out, cache = tmp_path / "out", tmp_path / "calls.sqlite"
    n, per_problem, conc = 12, 7, 2
    with start_subprocess("openai", tmp_path / "srv", latency_s=0.1,
                          reply="Adding the numbers gives \\boxed{4}.") as srv:
        cmd = _lase_cmd(srv.base_url, out, cache, n)
        start_and_kill(cmd, tmp_path, srv, after=20)
        assert not (out / "manifest.json").exists() and not (out / "problems.jsonl").exists()
        assert integrity_ok(cache)
        finished = set(cached_calls(cache))
        first = srv.request_count
        assert 0 < len(finished) < n * per_problem

        second = subprocess.run(cmd, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=180)
        assert second.returncode == 0, second.stderr[-2000:]
        total = srv.request_count
    bodies = _log_bodies(tmp_path / "srv" / "openai.log.jsonl")
    assert len(bodies) == total
    rows = [json.loads(line) for line in (out / "problems.jsonl").read_text().splitlines()]
    assert sorted(r["problem_id"] for r in rows) == sorted(p.id for p in arithmetic_problems(n))
    assert len({r["problem_id"] for r in rows}) == n
    distinct = set(bodies)
    assert len(distinct) == n * per_problem == len(CallCache(cache))
    # Calls sent twice are exactly those that were in flight when the run was killed (at most
    # ``--concurrency`` of them): none had finished, and none of the rerun's calls had finished either.
    assert not finished & set(bodies[first:]), "a call that had completed was sent again"
    resent = total - len(distinct)
    assert 0 <= resent <= conc, f"{resent} calls were sent twice; at most {conc} can have been in flight"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["engine"]["cache_hits"] == len(finished)
    assert manifest["engine"]["model_calls"] == n * per_problem - len(finished) == total - first
    assert integrity_ok(cache)


def test_two_runs_at_once_share_one_cache(tmp_path):
    cache = tmp_path / "shared.sqlite"
    with OpenAIWireServer(responder=lambda m, p: Reply("So the total is \\boxed{4}."), latency_s=0.02) as srv:
        procs = [subprocess.Popen(_lase_cmd(srv.base_url, tmp_path / f"out{n}", cache, n), cwd=tmp_path, env=_env(),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in (8, 12)]
        outs = [p.communicate(timeout=240) for p in procs]
        for p, (o, e) in zip(procs, outs):
            assert p.returncode == 0, e[-2000:]
        bodies = [call_of(r.body) for r in srv.requests]
        sent = srv.request_count
        # the shared cache now answers both studies: a replay-only rerun makes no call
        rerun = subprocess.run(_lase_cmd(srv.base_url, tmp_path / "again", cache, 12) + ["--cache-mode", "replay"],
                               cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=240)
        assert rerun.returncode == 0, rerun.stderr[-2000:]
        assert srv.request_count == sent
    assert integrity_ok(cache)
    entries = cached_calls(cache)  # every entry parses
    assert len(entries) == len(set(entries)) == len(set(bodies)) == 12 * 7
    # calls both runs made at the same moment may reach the server twice, but never more
    assert len(bodies) <= 2 * len(set(bodies))
    rows = {n: {json.loads(l)["problem_id"]: json.loads(l) for l in (tmp_path / f"out{n}" / "problems.jsonl")
                .read_text().splitlines()} for n in (8, 12)}
    assert len(rows[8]) == 8 and len(rows[12]) == 12
    for pid, r in rows[8].items():
        assert (r["answer"], r["stop_stage"], r["total_tokens"]) == \
            (rows[12][pid]["answer"], rows[12][pid]["stop_stage"], rows[12][pid]["total_tokens"])
    assert (tmp_path / "again" / "problems.jsonl").read_text() == (tmp_path / "out12" / "problems.jsonl").read_text()
