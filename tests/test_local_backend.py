"""The embedded local backend against the real SmolLM2-135M model (no stand-ins, nothing downloaded).

One GGUF -> safetensors conversion per session (~30 s): into the user's model cache when it is
empty, else into a temporary folder, so the conversion path is exercised on every run.
"""

from __future__ import annotations

import math
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest

from lase_nb.errors import ConfigError
from lase_nb.types import ENTROPY_EXACT, ENTROPY_NONE, Generation, GenParams

local = pytest.importorskip("lase_nb.backends.local")

SHOTS = [
    {"role": "user", "content": "What is 2 + 5? Put the final answer in \\boxed{}."},
    {"role": "assistant", "content": "2 + 5 = 7. The answer is \\boxed{7}."},
    {"role": "user", "content": "Tom has 6 apples and eats 2. How many are left? "
                                "Put the final answer in \\boxed{}."},
    {"role": "assistant", "content": "6 - 2 = 4. The answer is \\boxed{4}."},
]
QUESTION = {"role": "user", "content": "What is 3 + 4? Put the final answer in \\boxed{}."}

PROMPTS = [  # different lengths, so the batch is really left-padded
    [{"role": "user", "content": "Name a colour."}],
    [{"role": "user", "content": "Write two sentences about the sea and the wind at night."}],
    SHOTS + [QUESTION],
    [{"role": "system", "content": "You answer briefly and kindly, in plain words."},
     {"role": "user", "content": "Why is the sky blue? Explain it to a child in a few words."}],
]


def check_invariants(g: Generation, vocab: int, top_k: int) -> None:
    """What every Generation with logprobs from this backend must satisfy."""
    assert g.backend == "local" and g.entropy_estimator == ENTROPY_EXACT
    assert g.tokens is not None
    assert g.text == "".join(t.token for t in g.tokens)
    pos = 0
    for t in g.tokens:
        assert t.offset == pos and g.text[t.offset:t.offset + len(t.token)] == t.token
        pos += len(t.token)
        assert math.isfinite(t.logprob) and t.logprob <= 1e-6
        assert t.entropy is not None and math.isfinite(t.entropy)
        assert -1e-6 <= t.entropy <= math.log(vocab) + 1e-4
        assert len(t.top) == top_k
        lps = [lp for _, lp in t.top]
        assert lps == sorted(lps, reverse=True) and all(math.isfinite(x) and x <= 1e-6 for x in lps)
        assert t.logprob <= lps[0] + 1e-5  # the best alternative is at least as likely
    assert g.prompt_tokens > 0 and g.completion_tokens >= len(g.tokens)
    assert g.finish_reason in ("stop", "length") and g.latency_s > 0


@pytest.fixture(scope="session")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, float]:
    """Convert the packaged GGUF once; returns (folder, seconds)."""
    default = local.model_cache_root() / local.DEFAULT_CACHE_NAME
    target = default if not local.is_converted(default) else \
        tmp_path_factory.mktemp("models") / local.DEFAULT_CACHE_NAME
    t0 = time.perf_counter()
    local.convert_gguf(local.default_gguf_path(), target)
    return target, time.perf_counter() - t0


@pytest.fixture(scope="session")
def backend(converted: tuple[object, float]) -> "local.LocalBackend":
    return local.LocalBackend()


def test_unknown_model_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(ConfigError, match="neither an alias"):
        local.resolve_model_path(str(tmp_path / "no-such-model"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="config.json"):
        local.resolve_model_path(str(tmp_path / "empty"))
    with pytest.raises(ConfigError, match="max_batch"):
        local.LocalBackend(max_batch=0)


@pytest.mark.slow
def test_conversion_is_cached_and_reused(converted, backend) -> None:
    folder, first_s = converted
    for name in ("config.json", "model.safetensors", "tokenizer.json", local.MARKER):
        assert (folder / name).is_file(), name
    assert not [p for p in folder.parent.iterdir() if ".tmp-" in p.name]  # no half folders left
    stamp = (folder / local.MARKER).stat().st_mtime_ns
    t0 = time.perf_counter()
    assert local.convert_gguf(local.default_gguf_path(), folder) == folder
    assert time.perf_counter() - t0 < 1.0 < first_s  # reused, not redone
    assert (folder / local.MARKER).stat().st_mtime_ns == stamp
    # a fresh load from the converted folder is quick (no dequantisation)
    fresh = local.load_model(folder, reuse=False)
    assert fresh.load_s < 30
    # the same process shares one loaded model between backends
    assert local.LocalBackend()._lm is backend._lm


@pytest.mark.slow
def test_load_from_a_path(converted, backend) -> None:
    folder, _ = converted
    by_path = local.LocalBackend(model=str(folder), max_batch=2)
    assert by_path.model == str(folder) and by_path.supports_logprobs and by_path.name == "local"
    params = GenParams(max_tokens=8)
    a = by_path.generate(PROMPTS[0], params)
    b = backend.generate(PROMPTS[0], params)
    assert a.text == b.text and a.model == str(folder) and b.model == "smollm2-135m"


@pytest.mark.slow
def test_answers_a_question_with_sane_statistics(backend) -> None:
    g = backend.generate(SHOTS + [QUESTION], GenParams(max_tokens=48, top_logprobs=5))
    check_invariants(g, backend.vocab_size, 5)
    assert g.text.strip() and g.completion_tokens <= 48
    assert g.prompt_tokens == len(backend.encode_prompt(SHOTS + [QUESTION]))
    # some token is near-certain and some carries real entropy: the numbers are not constant
    assert max(t.entropy for t in g.tokens) > min(t.entropy for t in g.tokens)
    assert g.to_json() and Generation.from_json(g.to_json()).tokens == g.tokens


@pytest.mark.slow
def test_batched_and_one_at_a_time_greedy_agree(backend) -> None:
    params = GenParams(max_tokens=24, top_logprobs=3)
    batched = backend.generate_many([(m, params) for m in PROMPTS])
    single = [backend.generate(m, params) for m in PROMPTS]
    assert len({g.prompt_tokens for g in single}) == len(PROMPTS)
    for b, s in zip(batched, single):
        check_invariants(b, backend.vocab_size, 3)
        assert b.text == s.text
        assert [t.token for t in b.tokens] == [t.token for t in s.tokens]
        assert (b.prompt_tokens, b.completion_tokens, b.finish_reason) == \
            (s.prompt_tokens, s.completion_tokens, s.finish_reason)
        assert max(abs(x.logprob - y.logprob) for x, y in zip(b.tokens, s.tokens)) < 1e-3
        assert max(abs(x.entropy - y.entropy) for x, y in zip(b.tokens, s.tokens)) < 1e-3


@pytest.mark.slow
def test_sampling_is_reproducible_per_sample_index(backend) -> None:
    msgs = PROMPTS[1]
    p = [GenParams(temperature=1.0, max_tokens=12, sample=i) for i in range(3)]
    together = backend.generate_many([(msgs, p[0]), (msgs, p[1]), (PROMPTS[0], p[0]), (msgs, p[2])])
    again = backend.generate(msgs, p[0])  # alone, not in a batch
    assert again.text == together[0].text
    texts = {together[0].text, together[1].text, together[3].text}
    assert len(texts) > 1  # different sample indices draw different samples
    check_invariants(together[1], backend.vocab_size, GenParams().top_logprobs)
    # top-p sampling runs and stays reproducible
    q = GenParams(temperature=0.7, top_p=0.9, max_tokens=8, sample=4)
    assert backend.generate(msgs, q).text == backend.generate(msgs, q).text


@pytest.mark.slow
def test_stop_strings_and_max_tokens(backend) -> None:
    msgs = PROMPTS[1]
    free = backend.generate(msgs, GenParams(max_tokens=20))
    assert free.finish_reason == "length" and free.completion_tokens == 20 and len(free.tokens) == 20
    # pick a stop string that starts mid-text and ends inside a token
    cut = len(free.text) // 2
    stop = free.text[cut:cut + 3]
    at = free.text.find(stop)
    g = backend.generate(msgs, GenParams(max_tokens=20, stop=("NEVER-THERE", stop)))
    assert g.finish_reason == "stop" and g.text == free.text[:at]
    check_invariants(g, backend.vocab_size, GenParams().top_logprobs)
    assert g.completion_tokens <= free.completion_tokens
    nothing = backend.generate(msgs, GenParams(max_tokens=0))
    assert nothing.text == "" and nothing.tokens == [] and nothing.completion_tokens == 0


@pytest.mark.slow
def test_without_logprobs(backend) -> None:
    g = backend.generate(PROMPTS[0], GenParams(max_tokens=6, logprobs=False))
    assert g.tokens is None and g.entropy_estimator == ENTROPY_NONE and g.completion_tokens > 0


@pytest.mark.slow
def test_incremental_detokenisation_of_multibyte_text(backend) -> None:
    """Tokens that split a character get '' and the completing token carries it."""
    text = "Café ☕ costs 3 €; 日本語 and 😀 too."
    ids = backend._tok(text, add_special_tokens=False)["input_ids"]
    row = local.Row(0, [1], GenParams(stop=("日本",)))
    for tok in ids:
        backend._append_token(row, tok)
        if row.finish:
            break
    assert row.text == text[:text.index("日本")] == "".join(row.pieces)
    row = local.Row(0, [1], GenParams())
    for tok in ids:
        backend._append_token(row, tok)
    backend._flush(row)
    assert row.text == text == "".join(row.pieces)
    assert "" in row.pieces  # this tokenizer splits some of these characters across tokens
    assert row.offsets == [sum(len(p) for p in row.pieces[:i]) for i in range(len(row.pieces))]


@pytest.mark.slow
def test_prefix_prefills_the_reply_and_the_answer_tokens_follow_it(backend) -> None:
    """The answer-extraction step: the reply starts with the prefix, the model continues it."""
    from lase_nb.confidence import measure
    from lase_nb.prompts import EXTRACT_PREFIX
    params = GenParams(max_tokens=12, top_logprobs=3, prefix=EXTRACT_PREFIX)
    g = backend.generate(SHOTS + [QUESTION], params)
    assert g.text.startswith(EXTRACT_PREFIX) and g.tokens
    assert g.text == EXTRACT_PREFIX + "".join(t.token for t in g.tokens)
    assert g.tokens[0].offset == len(EXTRACT_PREFIX)
    assert g.prompt_tokens == len(backend.encode_prompt(SHOTS + [QUESTION], EXTRACT_PREFIX))
    conf = measure(g, "number")
    assert conf.answer is not None and conf.n_answer_tokens >= 1  # gated on generated tokens only
    assert conf.span[0] >= len(EXTRACT_PREFIX)


@pytest.mark.slow
def test_repeat_stop_ends_a_verbatim_loop(backend) -> None:
    """A reply that starts to repeat itself is cut where the repeat begins (finish 'repeat')."""
    loop = [{"role": "user", "content": "List the numbers 1, 1, 1, 1, 1, 1, 1, 1 and keep going."}]
    free = backend.generate(loop, GenParams(max_tokens=160, top_logprobs=2))
    cut = backend.generate(loop, GenParams(max_tokens=160, top_logprobs=2, repeat_stop=12))
    assert free.finish_reason == "length"  # the model loops until its cap
    assert cut.finish_reason == "repeat" and cut.completion_tokens < free.completion_tokens
    assert free.text.startswith(cut.text)  # greedy: the same reply, cut before the repeat
    assert cut.text == "".join(t.token for t in cut.tokens)
    ids = backend._tok(cut.text, add_special_tokens=False)["input_ids"]
    grams = [tuple(ids[i:i + 12]) for i in range(len(ids) - 11)]
    assert len(grams) == len(set(grams))  # what is left never repeats 12 tokens verbatim


@pytest.mark.slow
def test_repeat_digits_ends_a_counting_loop(backend) -> None:
    """A loop whose only change is its numbers ("1, 2, 3, ...") never repeats verbatim; with
    repeat_digits it is cut where the stretch, digits masked, starts to repeat."""
    count = [{"role": "user", "content": "Count from 1 to 100, writing each number as: Step 1 is done. Step 2 is done."}]
    free = backend.generate(count, GenParams(max_tokens=120, top_logprobs=2, repeat_stop=12))
    cut = backend.generate(count, GenParams(max_tokens=120, top_logprobs=2, repeat_stop=12, repeat_digits=True))
    assert free.finish_reason == "length"  # the verbatim rule alone lets it count to the cap
    assert cut.finish_reason == "repeat" and cut.completion_tokens < free.completion_tokens
    assert free.text.startswith(cut.text)  # greedy: the same reply, cut before the repeat
    digits = backend._digit_ids()
    assert {backend._tok.decode([i]).strip() for i in digits} == set("0123456789")
    ids = [-1 if i in digits else i for i in backend._tok(cut.text, add_special_tokens=False)["input_ids"]]
    grams = [tuple(ids[i:i + 24]) for i in range(len(ids) - 23)]
    assert len(grams) == len(set(grams))  # what is left never repeats 24 tokens, digits masked
    assert GenParams(repeat_stop=12).to_dict() == GenParams(repeat_stop=12, repeat_digits=False).to_dict()
    assert "repeat_digits" not in GenParams(repeat_stop=12).to_dict()  # old cache keys stay valid


def test_continuous_batching_rows_join_and_leave(backend) -> None:
    """Rows that finish leave the batch and waiting rows take their place; results equal
    one call at a time, and so do those of the lockstep fallback."""
    msgs = PROMPTS[1]  # runs to max_tokens, so each row ends exactly at its own length
    lengths = [20, 2, 3, 2, 4, 3]
    reqs = [(msgs, GenParams(max_tokens=n, top_logprobs=2)) for n in lengths]
    order: list[int] = []
    cb = local.LocalBackend(max_batch=2)
    out = cb.generate_many(reqs, on_result=lambda i, g: order.append(i))
    # lockstep batches of 2 would hold row 1's place until row 0's 20 tokens are done
    assert sorted(order) == list(range(len(reqs))) and order[-1] == 0
    # each row's first token comes from its prefill; the short rows decode beside row 0's 19 steps
    assert cb.batch_stats["steps"] == 19 and cb.batch_stats["row_steps"] == sum(n - 1 for n in lengths)
    lockstep = local.LocalBackend(max_batch=2)
    lockstep._splice = False
    for got in (out, lockstep.generate_many(reqs)):
        for g, (m, p) in zip(got, reqs):
            s = backend.generate(m, p)
            check_invariants(g, backend.vocab_size, 2)
            assert g.text == s.text and g.completion_tokens == s.completion_tokens == p.max_tokens
            assert max(abs(x.logprob - y.logprob) for x, y in zip(g.tokens, s.tokens)) < 1e-3


@pytest.mark.slow
def test_shared_prompt_prefix_is_encoded_once(backend) -> None:
    """System prompt and worked examples are encoded once; reusing them changes nothing."""
    other = {"role": "user", "content": "What is 9 - 5? Put the final answer in \\boxed{}."}
    params = GenParams(max_tokens=16, top_logprobs=3)
    backend.clear_prefix_cache()
    backend.generate(SHOTS + [QUESTION], params)
    before = dict(backend.prefix_stats)
    warm = backend.generate(SHOTS + [other], params)
    ids, cuts = backend._encode(SHOTS + [other])
    shots_text = backend._tok.apply_chat_template(SHOTS, tokenize=False)
    assert cuts[-1] == len(backend._tok(shots_text, add_special_tokens=False)["input_ids"])
    reused = backend.prefix_stats["reused_tokens"] - before["reused_tokens"]
    encoded = backend.prefix_stats["encoded_tokens"] - before["encoded_tokens"]
    assert reused == cuts[-1] > 100 and encoded == len(ids) - cuts[-1]
    backend.clear_prefix_cache()
    cold = backend.generate(SHOTS + [other], params)
    assert backend.prefix_stats["reused_tokens"] == before["reused_tokens"] + reused  # nothing cached
    # the chunked prefill is the same computation whether a chunk is cached or not
    assert cold.text == warm.text and cold.tokens == warm.tokens


def test_follow_up_call_reuses_the_reply_it_quotes(backend) -> None:
    """A call that quotes an earlier reply (answer extraction, a revision) takes that reply's
    KV cache from the finished call instead of encoding it again, batched or alone; its result
    equals the one encoded from scratch up to float rounding."""
    first = GenParams(max_tokens=24, top_logprobs=3)
    follow = GenParams(max_tokens=8, top_logprobs=3, prefix="Final answer: \\boxed{")
    for max_batch in (1, 4):
        b = local.LocalBackend(max_batch=max_batch)
        b.clear_prefix_cache()
        asked = b.generate_many([(SHOTS + [QUESTION], first), (PROMPTS[1], first)])[0]
        quoting = SHOTS + [QUESTION, {"role": "assistant", "content": asked.text},
                           {"role": "user", "content": "Now give only the final answer."}]
        ids, cuts = b._encode(quoting, follow.prefix)
        reply_end = asked.prompt_tokens + len(b._tok(asked.text, add_special_tokens=False)["input_ids"])
        before = dict(b.prefix_stats)
        warm = b.generate(quoting, follow)
        assert b.prefix_stats["reused_tokens"] - before["reused_tokens"] >= reply_end
        b.clear_prefix_cache()
        cold = b.generate(quoting, follow)
        assert cold.text == warm.text and len(cold.tokens) == len(warm.tokens)
        assert max(abs(x.logprob - y.logprob) for x, y in zip(cold.tokens, warm.tokens)) < 1e-3
    # a prompt that only begins like a stored reply is not split inside its message
    b.clear_prefix_cache()
    b.generate(SHOTS + [QUESTION], first)
    before = dict(b.prefix_stats)
    other = {"role": "user", "content": "What is 3 + 5? Put the final answer in \\boxed{}."}
    b.generate(SHOTS + [other], first)
    assert b.prefix_stats["reused_tokens"] - before["reused_tokens"] == b._encode(SHOTS + [other])[1][-1]


@pytest.mark.slow
def test_stream_joins_calls_across_problems_and_stages(backend, tmp_path) -> None:
    """run_problems on the local backend streams calls (no rounds): same calls and texts as
    the round-by-round path, and through a call cache a second run makes no model call."""
    from dataclasses import replace

    from lase_nb.cache import CallCache
    from lase_nb.datasets import arithmetic_problems
    from lase_nb.engine import Engine
    from lase_nb.runner import run_problems
    from lase_nb.strategies import StrategyConfig

    class Rounds:  # the real backend with generate_stream hidden: the round-by-round path
        name, model, supports_logprobs = backend.name, backend.model, True
        generate = backend.generate
        generate_many = backend.generate_many

    cfg = replace(StrategyConfig(), full_chain=True, max_tokens=12, supporter_max_tokens=8)
    problems = arithmetic_problems(2, seed=5)
    cache = CallCache(tmp_path / "calls.sqlite")
    streamed = Engine(backend, cache)
    got = run_problems("lase", problems, streamed, cfg, window=2, progress=False)
    assert streamed.stats.batches == 1 and streamed.stats.model_calls == streamed.stats.requested > 2
    rounds = Engine(Rounds())
    ref = run_problems("lase", problems, rounds, cfg, window=2, progress=False)
    assert rounds.stats.batches > 1 and rounds.stats.model_calls == streamed.stats.model_calls
    for a, b in zip(got, ref):
        assert [c.text for c in a.calls + a.recording_calls] == [c.text for c in b.calls + b.recording_calls]
        assert (a.answer, a.stop_stage, a.completion_tokens) == (b.answer, b.stop_stage, b.completion_tokens)
    again = Engine(backend, cache)
    hit = run_problems("lase", problems, again, cfg, window=2, progress=False)
    assert again.stats.model_calls == 0 and again.stats.cache_hits == again.stats.requested
    assert [r.answer for r in hit] == [r.answer for r in got]


def test_threads_come_from_the_argument_then_omp_num_threads_then_the_cores(monkeypatch) -> None:
    import os

    from lase_nb.backends.local.backend import cpu_threads

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert cpu_threads() == (os.cpu_count() or 1) and cpu_threads(3) == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert cpu_threads() == 1 and cpu_threads(2) == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "lots")
    with pytest.raises(ConfigError, match="OMP_NUM_THREADS='lots'.*--threads"):
        cpu_threads()
    with pytest.raises(ConfigError, match="threads must be >= 1"):
        cpu_threads(0)


def test_the_backend_runs_on_the_threads_it_is_given(backend) -> None:
    import torch

    before = torch.get_num_threads()
    try:
        one = local.LocalBackend(threads=1)
        assert torch.get_num_threads() == 1 and one._lm is backend._lm
    finally:
        torch.set_num_threads(before)
