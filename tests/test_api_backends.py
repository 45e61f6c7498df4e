"""OpenAI and Gemini backends through their real SDKs against real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import math
import time

import pytest

from lase_nb.backends.base import Backend
from lase_nb.backends.gemini_backend import GeminiBackend, align_offsets
from lase_nb.backends.openai_backend import OpenAIBackend, token_offsets
from lase_nb.errors import BackendError, ConfigError, MissingAPIKey
from lase_nb.types import ENTROPY_NONE, ENTROPY_TOPK_RESIDUAL, GenParams
from tests.wire_servers import (DEFAULT_REPLY, GeminiWireServer, OpenAIWireServer, Reply, default_prob,
                                start_subprocess, tokenize)

KEY = "sk-test-SECRET-0123456789"
GKEY = "AIza-test-SECRET-0123456789"
MSGS = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2 + 2?"}]


@pytest.fixture
def oa_srv():
    with OpenAIWireServer(stall_s=5) as srv:
        yield srv


@pytest.fixture
def gm_srv():
    with GeminiWireServer(stall_s=5) as srv:
        yield srv


def oa(srv: OpenAIWireServer, **kw) -> OpenAIBackend:
    kw.setdefault("timeout", 5)
    kw.setdefault("max_retries", 2)
    return OpenAIBackend("wire-model", base_url=srv.base_url, api_key=KEY, **kw)


def gm(srv: GeminiWireServer, **kw) -> GeminiBackend:
    kw.setdefault("timeout", 5)
    kw.setdefault("max_retries", 2)
    kw.setdefault("retry_initial_delay", 0.05)
    return GeminiBackend("gemini-wire", api_key=GKEY, base_url=srv.base_url, **kw)


def check_tokens(gen, text: str, k: int) -> None:
    """Tokens reproduce the text at their offsets and carry the server's deterministic logprobs."""
    toks = tokenize(text)
    assert gen.text == text
    assert gen.tokens is not None and [t.token for t in gen.tokens] == toks
    off = 0
    for i, t in enumerate(gen.tokens):
        assert t.offset == off and text[t.offset:t.offset + len(t.token)] == t.token
        off += len(t.token)
        assert t.logprob == pytest.approx(math.log(default_prob(i, t.token)))
        assert len(t.top) == k and t.top[0] == (t.token, pytest.approx(t.logprob))
        assert [lp for _, lp in t.top] == sorted((lp for _, lp in t.top), reverse=True)
        assert sum(math.exp(lp) for _, lp in t.top) < 1.0  # a residual is left for the estimator
        assert t.entropy is None
    assert gen.entropy_estimator == ENTROPY_TOPK_RESIDUAL


# --------------------------------------------------------------------------------------------- OpenAI
def test_openai_maps_text_logprobs_usage(oa_srv):
    b = oa(oa_srv)
    assert isinstance(b, Backend) and b.name == "openai" and b.supports_logprobs
    gen = b.generate(MSGS, GenParams(temperature=0.0, max_tokens=100, top_logprobs=4))
    check_tokens(gen, DEFAULT_REPLY, 4)
    n = len(tokenize(DEFAULT_REPLY))
    assert (gen.completion_tokens, gen.finish_reason) == (n, "stop")
    assert gen.prompt_tokens == sum(len(tokenize(m["content"])) + 3 for m in MSGS)
    assert gen.backend == "openai" and gen.model == "wire-model" and gen.latency_s > 0
    body = oa_srv.requests[-1].body
    assert body["messages"] == MSGS and body["logprobs"] is True and body["top_logprobs"] == 4
    assert body["max_tokens"] == 100 and "seed" not in body  # compatible server: max_tokens; greedy: no seed
    assert oa_srv.requests[-1].headers["authorization"] == f"Bearer {KEY}"


def test_openai_caps_top_logprobs_and_seeds_samples(oa_srv):
    b = oa(oa_srv)
    gen = b.generate(MSGS, GenParams(temperature=0.7, top_logprobs=50, sample=3))
    body = oa_srv.requests[-1].body
    assert body["top_logprobs"] == 20 and body["seed"] == 3 and body["temperature"] == 0.7
    assert all(len(t.top) == 20 for t in gen.tokens)
    b.generate(MSGS, GenParams(temperature=0.7, sample=4))
    assert oa_srv.requests[-1].body["seed"] == 4


def test_openai_without_logprobs_requested(oa_srv):
    gen = oa(oa_srv).generate(MSGS, GenParams(logprobs=False))
    assert "logprobs" not in oa_srv.requests[-1].body
    assert gen.tokens is None and gen.entropy_estimator == ENTROPY_NONE and gen.text == DEFAULT_REPLY


def test_openai_500_then_503_then_success(oa_srv):
    oa_srv.add_faults("500", "503")
    gen = oa(oa_srv, max_retries=2).generate(MSGS, GenParams())
    assert gen.text == DEFAULT_REPLY and oa_srv.request_count == 3


def test_openai_drop_then_success(oa_srv):
    oa_srv.add_faults("drop")
    assert oa(oa_srv, max_retries=1).generate(MSGS, GenParams()).text == DEFAULT_REPLY
    assert oa_srv.request_count == 2


def test_openai_length_empty_nologprobs(oa_srv):
    b = oa(oa_srv)
    oa_srv.add_faults("length")
    g = b.generate(MSGS, GenParams())
    assert g.finish_reason == "length" and DEFAULT_REPLY.startswith(g.text) and len(g.text) < len(DEFAULT_REPLY)
    g = b.generate(MSGS, GenParams(max_tokens=5))
    assert g.finish_reason == "length" and g.completion_tokens == 5 and len(g.tokens) == 5
    oa_srv.add_faults("empty")
    g = b.generate(MSGS, GenParams())
    assert g.text == "" and g.tokens == [] and not g.has_logprobs and g.completion_tokens == 0
    oa_srv.add_faults("nologprobs")
    g = b.generate(MSGS, GenParams(logprobs=True))
    assert g.text == DEFAULT_REPLY and g.tokens is None and g.entropy_estimator == ENTROPY_NONE


def test_openai_reply_probabilities_reach_the_tokens():
    def responder(messages, params):
        return Reply("x = \\boxed{7}", prob=lambda i, t: 0.3 if t == "7" else 0.99)

    with OpenAIWireServer(responder) as srv:
        g = oa(srv).generate(MSGS, GenParams(top_logprobs=3))
    seven = [t for t in g.tokens if t.token == "7"][0]
    assert seven.logprob == pytest.approx(math.log(0.3)) and g.text[seven.offset] == "7"


def test_openai_missing_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    with pytest.raises(MissingAPIKey, match="OPENAI_API_KEY") as ei:
        OpenAIBackend("gpt-4.1-mini")
    assert ei.value.variable == "OPENAI_API_KEY"
    with pytest.raises(MissingAPIKey, match="OPENAI_COMPATIBLE_API_KEY"):
        OpenAIBackend("m", base_url="https://llm.example.com/v1")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert OpenAIBackend("gpt-4.1-mini").name == "openai"


def test_openai_local_server_placeholder_key(oa_srv, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # must not be sent to a non-OpenAI host
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    OpenAIBackend("m", base_url=oa_srv.base_url, max_retries=0).generate(MSGS, GenParams())
    assert oa_srv.requests[-1].headers["authorization"] == "Bearer EMPTY"
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "vllm-key")
    OpenAIBackend("m", base_url=oa_srv.base_url, max_retries=0).generate(MSGS, GenParams())
    assert oa_srv.requests[-1].headers["authorization"] == "Bearer vllm-key"


def test_openai_key_not_in_repr_or_errors():
    def leaky(messages, params):
        raise RuntimeError(f"upstream said key {KEY} is bad")

    with OpenAIWireServer(leaky) as srv:
        b = oa(srv, max_retries=0)
        assert KEY not in repr(b) and "wire-model" in repr(b)
        with pytest.raises(BackendError, match="HTTP 500") as ei:
            b.generate(MSGS, GenParams())
        assert KEY not in str(ei.value) and "***" in str(ei.value)
    with OpenAIWireServer(api_key="right-key") as srv:
        with pytest.raises(BackendError, match="HTTP 401") as ei:
            oa(srv).generate(MSGS, GenParams())
        assert KEY not in str(ei.value) and srv.request_count == 1  # 401 is not retried


def _echo(messages, params):
    return f"reply to {messages[-1]['content']} \\boxed{{1}}"


def test_openai_generate_many_is_concurrent_and_ordered():
    with OpenAIWireServer(_echo, latency_s=0.2) as srv:
        b = oa(srv, concurrency=8)
        reqs = [([{"role": "user", "content": f"q{i}"}], GenParams()) for i in range(8)]
        t0 = time.perf_counter()
        gens = b.generate_many(reqs)
        dt = time.perf_counter() - t0
    assert [g.text for g in gens] == [f"reply to q{i} \\boxed{{1}}" for i in range(8)]
    assert dt < 4 * 0.2, f"8 calls of 0.2 s at concurrency 8 took {dt:.2f} s"


def test_openai_generate_many_respects_the_limit():
    with OpenAIWireServer(_echo, latency_s=0.2) as srv:
        b = oa(srv, concurrency=2)
        t0 = time.perf_counter()
        b.generate_many([([{"role": "user", "content": f"q{i}"}], GenParams()) for i in range(4)])
        assert time.perf_counter() - t0 >= 2 * 0.2 * 0.95  # two waves of two


def test_openai_generate_many_propagates_a_failure():
    with OpenAIWireServer(_echo) as srv:
        b = oa(srv, concurrency=4, max_retries=0)
        srv.add_faults("400")
        with pytest.raises(BackendError, match=r"call \d of 3 failed: .*HTTP 400"):
            b.generate_many([([{"role": "user", "content": f"q{i}"}], GenParams()) for i in range(3)])
        assert b.generate_many([]) == []


def test_openai_official_endpoint_request_shape(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    kw = OpenAIBackend("gpt-4.1-mini")._request(MSGS, GenParams(max_tokens=64, stop=("\n\n",)))
    assert kw["max_completion_tokens"] == 64 and "max_tokens" not in kw and kw["stop"] == ["\n\n"]


def test_fault_specs():
    from tests.wire_servers import Fault

    assert Fault.parse("429:0.1") == Fault("status", status=429, retry_after=0.1)
    assert str(Fault.parse("stall:2")) == "stall:2" and Fault.parse("drop").kind == "drop"
    with pytest.raises(ValueError):
        Fault.parse("explode")


def test_openai_config_errors():
    with pytest.raises(ConfigError):
        OpenAIBackend("m", base_url="http://127.0.0.1:1/v1", concurrency=0)
    with pytest.raises(ConfigError):
        OpenAIBackend("m", base_url="http://127.0.0.1:1/v1", timeout=0)


def test_token_offsets_split_multibyte_character():
    text = "é=\\boxed{2}"
    e = "é".encode()
    toks = ["bytes:\\xc3", "bytes:\\xa9", "=", "\\", "boxed", "{", "2", "}"]
    byts = [[e[0]], [e[1]]] + [list(t.encode()) for t in toks[2:]]
    offs = token_offsets(toks, text, byts)
    assert offs == [0, 0, 1, 2, 3, 8, 9, 10] and text[offs[6]] == "2"
    assert token_offsets(["a", "bc"], "abc") == [0, 1]


# --------------------------------------------------------------------------------------------- Gemini
def test_gemini_maps_text_logprobs_usage(gm_srv):
    b = gm(gm_srv)
    assert isinstance(b, Backend) and b.name == "gemini" and b.supports_logprobs
    msgs = MSGS + [{"role": "assistant", "content": "4"}, {"role": "user", "content": "Again?"}]
    gen = b.generate(msgs, GenParams(temperature=0.5, top_p=0.9, max_tokens=100, top_logprobs=5, sample=2,
                                     stop=("ZZZ",)))
    check_tokens(gen, DEFAULT_REPLY, 5)
    assert (gen.completion_tokens, gen.finish_reason) == (len(tokenize(DEFAULT_REPLY)), "stop")
    assert gen.prompt_tokens == sum(len(tokenize(m["content"])) + 3 for m in msgs)
    assert gen.backend == "gemini" and gen.model == "gemini-wire"
    req = gm_srv.requests[-1]
    assert req.path.endswith("/models/gemini-wire:generateContent")
    assert req.headers["x-goog-api-key"] == GKEY
    body = req.body
    assert body["systemInstruction"]["parts"][0]["text"] == "Be brief."
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    gc = body["generationConfig"]
    assert gc["responseLogprobs"] is True and gc["logprobs"] == 5 and gc["seed"] == 2
    assert gc["maxOutputTokens"] == 100 and gc["topP"] == 0.9 and gc["stopSequences"] == ["ZZZ"]


def test_gemini_caps_logprobs_and_greedy_has_no_seed(gm_srv):
    gen = gm(gm_srv).generate(MSGS, GenParams(top_logprobs=99))
    gc = gm_srv.requests[-1].body["generationConfig"]
    assert gc["logprobs"] == 20 and "seed" not in gc and len(gen.tokens[0].top) == 20


def test_gemini_drop_is_a_connection_error_and_retried(gm_srv):
    gm_srv.add_faults("drop", "drop")
    with pytest.raises(BackendError, match="connection dropped"):
        gm(gm_srv, max_retries=1).generate(MSGS, GenParams())
    assert gm_srv.request_count == 2
    gm_srv.add_faults("drop")
    assert gm(gm_srv, max_retries=1).generate(MSGS, GenParams()).text == DEFAULT_REPLY


def test_gemini_length_empty_nologprobs(gm_srv):
    b = gm(gm_srv)
    gm_srv.add_faults("length")
    g = b.generate(MSGS, GenParams())
    assert g.finish_reason == "length" and DEFAULT_REPLY.startswith(g.text) and len(g.text) < len(DEFAULT_REPLY)
    g = b.generate(MSGS, GenParams(max_tokens=5))
    assert g.finish_reason == "length" and len(g.tokens) == 5 and g.completion_tokens == 5
    gm_srv.add_faults("empty")
    g = b.generate(MSGS, GenParams())
    assert g.text == "" and not g.has_logprobs and g.finish_reason == "stop"
    gm_srv.add_faults("nologprobs")
    g = b.generate(MSGS, GenParams())
    assert g.text == DEFAULT_REPLY and g.tokens is None and g.entropy_estimator == ENTROPY_NONE
    g = b.generate(MSGS, GenParams(logprobs=False))
    assert g.tokens is None and "responseLogprobs" not in gm_srv.requests[-1].body["generationConfig"]


def test_gemini_missing_key(monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(MissingAPIKey, match="GEMINI_API_KEY") as ei:
        GeminiBackend("gemini-2.0-flash")
    assert ei.value.variable == "GEMINI_API_KEY"
    monkeypatch.setenv("GOOGLE_API_KEY", GKEY)
    assert GeminiBackend("gemini-2.0-flash").name == "gemini"


def test_gemini_key_not_in_repr_or_errors():
    def leaky(messages, params):
        raise RuntimeError(f"upstream said key {GKEY} is bad")

    with GeminiWireServer(leaky) as srv:
        b = gm(srv, max_retries=0)
        assert GKEY not in repr(b)
        with pytest.raises(BackendError, match="HTTP 500") as ei:
            b.generate(MSGS, GenParams())
        assert GKEY not in str(ei.value) and "***" in str(ei.value)
    with GeminiWireServer(api_key="right-key") as srv:
        with pytest.raises(BackendError, match="HTTP 401") as ei:
            gm(srv).generate(MSGS, GenParams())
        assert GKEY not in str(ei.value) and srv.request_count == 1


def test_gemini_generate_many_is_concurrent_and_ordered():
    with GeminiWireServer(_echo, latency_s=0.2) as srv:
        b = gm(srv, concurrency=8)
        reqs = [([{"role": "user", "content": f"q{i}"}], GenParams()) for i in range(8)]
        t0 = time.perf_counter()
        gens = b.generate_many(reqs)
        dt = time.perf_counter() - t0
    assert [g.text for g in gens] == [f"reply to q{i} \\boxed{{1}}" for i in range(8)]
    assert dt < 4 * 0.2, f"8 calls of 0.2 s at concurrency 8 took {dt:.2f} s"


def test_align_offsets_resynchronises():
    assert align_offsets(["a", "b", "c"], "abc") == [0, 1, 2]
    assert align_offsets(["x", "=", " 4"], "x = 4") == [0, 2, 3]


# --------------------------------------------------------------------------------- faults, both backends
@pytest.fixture(params=["openai", "gemini"])
def api(request):
    """(server, make backend) for each API backend: the fault tests run once per backend."""
    server, make = (OpenAIWireServer, oa) if request.param == "openai" else (GeminiWireServer, gm)
    with server(stall_s=5) as srv:
        yield srv, lambda **kw: make(srv, **kw), KEY if request.param == "openai" else GKEY


@pytest.mark.parametrize("faults", [["429"], ["429:0.1"], ["500", "503"], ["408"], ["409"], ["502"]])
def test_transient_statuses_are_retried_then_succeed(api, faults):
    srv, make, _ = api
    srv.add_faults(*faults)
    assert make().generate(MSGS, GenParams()).text == DEFAULT_REPLY
    assert srv.request_count == len(faults) + 1


@pytest.mark.parametrize("code", ["400", "404"])
def test_a_client_error_is_not_retried(api, code):
    srv, make, _ = api
    srv.add_faults(code, code)
    with pytest.raises(BackendError, match=rf"HTTP {code}: ") as ei:
        make().generate(MSGS, GenParams())
    assert srv.request_count == 1 and "retr" not in str(ei.value).split(":")[1]


def test_a_persistent_500_is_a_named_backend_error_without_the_key(api):
    srv, make, key = api
    srv.add_faults(*["500:0.01"] * 5)
    with pytest.raises(BackendError, match=r"HTTP 500 after 2 retries") as ei:
        make(max_retries=2).generate(MSGS, GenParams())
    assert srv.request_count == 3 and key not in str(ei.value)


def test_a_persistent_429_says_rate_limited(api):
    srv, make, _ = api
    srv.add_faults(*["429:0.01"] * 3)
    with pytest.raises(BackendError, match=r"rate limited \(HTTP 429\) after 1 retry"):
        make(max_retries=1).generate(MSGS, GenParams())
    assert srv.request_count == 2


def test_a_stall_is_a_timeout(api):
    srv, make, _ = api
    srv.add_faults("stall", "stall")
    with pytest.raises(BackendError, match="timed out"):
        make(timeout=0.3, max_retries=1).generate(MSGS, GenParams())
    assert srv.request_count == 2


def test_truncated_json_is_malformed(api):
    srv, make, _ = api
    srv.add_faults("truncated")
    with pytest.raises(BackendError, match="malformed response"):
        make().generate(MSGS, GenParams())
    assert srv.request_count == 1


def test_openai_honours_retry_after(oa_srv):
    oa_srv.add_faults("429:0.1")
    t0 = time.perf_counter()
    assert oa(oa_srv).generate(MSGS, GenParams()).text == DEFAULT_REPLY
    assert time.perf_counter() - t0 < 0.35  # Retry-After 0.1 honoured (the SDK's own backoff is >= 0.375 s)
    assert oa_srv.requests[1].headers.get("x-stainless-retry-count") == "1"


def test_one_retryable_set_and_wording():
    from lase_nb.backends import _api

    assert {408, 409, 429, 500, 503, 599} <= _api.RETRYABLE and not {400, 401, 404, 422} & _api.RETRYABLE
    assert _api.status_failure(429, "slow down", 2) == "rate limited (HTTP 429) after 2 retries: slow down"
    assert _api.status_failure(404, "no such model", 2, "NOT_FOUND") == "HTTP 404: NOT_FOUND: no such model"
    assert _api.scrub("key sk-abcdef in url", "sk-abcdef") == "key *** in url" and _api.scrub("x", "ab") == "x"
    assert _api.short("a\n b " * 100, 20).endswith("...") and len(_api.short("a " * 100, 20)) == 20


# ----------------------------------------------------------------------------------- wire server itself
def test_wire_server_in_a_subprocess(tmp_path):
    with start_subprocess("openai", tmp_path, reply="sub \\boxed{9}") as proc:
        b = OpenAIBackend("m", base_url=proc.base_url, api_key=KEY, max_retries=0)
        assert b.generate(MSGS, GenParams()).text == "sub \\boxed{9}"
        assert proc.request_count == 1
    log = (tmp_path / "openai.log.jsonl").read_text()
    assert KEY not in log and "<redacted>" in log
    assert proc.proc.returncode is not None


# ------------------------------------------------------------------------- a server with one slot
def test_single_slot_server_queues_and_still_serves_abandoned_requests():
    delay = 0.3
    with OpenAIWireServer(latency_s=delay, slots=1) as srv:
        impatient = oa(srv, concurrency=1, timeout=delay / 3, max_retries=0)
        with pytest.raises(BackendError, match="timed out"):
            impatient.generate(MSGS, GenParams())
        b = oa(srv, concurrency=3, timeout=10 * delay, max_retries=0)
        t0 = time.perf_counter()
        gens = b.generate_many([(MSGS, GenParams(sample=i)) for i in range(3)])
        wall = time.perf_counter() - t0
        # the abandoned request held the slot first, then the three ran one after another
        assert len(gens) == 3 and wall >= 3 * delay
        assert srv.abandoned == 1 and srv.request_count == 4


def test_lase_full_chain_on_a_single_slot_server_at_the_default_concurrency(tmp_path):
    """Issue 38: a server that works on one request at a time (llama.cpp's) and a timeout of a few
    service times (20 s for 6 s there): no request sent twice, the slot never idle."""
    from lase_nb import prompts
    from lase_nb.datasets import load_dataset
    from lase_nb.engine import Engine
    from lase_nb.runner import run_problems
    from lase_nb.strategies import StrategyConfig

    delay, n = 0.3, 6
    # in a child process, as a remote server would be: its CPU does not share this interpreter's lock
    with start_subprocess("openai", tmp_path, latency_s=delay, slots=1, log=False) as srv:
        backend = OpenAIBackend("wire-model", base_url=srv.base_url, api_key=KEY, timeout=delay * 20 / 6)
        engine = Engine(backend)
        t0 = time.perf_counter()
        results = run_problems("lase", load_dataset("arith", n=n), engine, StrategyConfig(full_chain=True),
                               progress=False)
        wall = time.perf_counter() - t0
        sent = srv.request_count
    calls = engine.stats.model_calls
    assert len(results) == n and calls == n * (1 + 2 * len(prompts.SUPPORTERS))
    assert backend.pacer.limit == backend.concurrency > 1  # the default, never lowered
    assert sent - calls <= 0.10 * sent, f"{sent} requests for {calls} calls"
    assert wall <= 1.3 * calls * delay, f"{wall:.1f} s against an ideal {calls * delay:.1f} s"


def test_a_timeout_lowers_the_concurrency_once_and_the_call_is_sent_again(capsys):
    with OpenAIWireServer(_echo) as srv:
        srv.add_faults("stall:3")
        b = oa(srv, concurrency=4, timeout=0.5, max_retries=0)
        gens = b.generate_many([([{"role": "user", "content": f"q{i}"}], GenParams()) for i in range(4)])
    assert sorted(g.text for g in gens) == sorted(f"reply to q{i} \\boxed{{1}}" for i in range(4))
    assert b.pacer.limit == 2 and srv.request_count == 5
    err = capsys.readouterr().err
    assert err.count("lase-nb:") == 1 and "--concurrency 2" in err and srv.base_url.split("//")[1] in err


def test_a_timeout_at_concurrency_one_names_the_server_and_the_flags(api, capsys):
    srv, make, key = api
    srv.add_faults("stall:2", "stall:2", "stall:2")
    b = make(concurrency=2, timeout=0.3, max_retries=0)
    with pytest.raises(BackendError) as ei:  # two sent together time out: lowered to 1, sent again, too slow
        b.generate_many([(MSGS, GenParams(sample=i)) for i in range(2)])
    msg = str(ei.value)
    assert "timed out" in msg and "--concurrency 2 lowered to 1" in msg and "longer --timeout" in msg
    assert "--concurrency 1" in capsys.readouterr().err
    assert srv.url.split("//")[1] in msg and key not in msg

