"""The local backend's prefix/KV store and its growing KV cache, on small real tensors (no model),
plus one check on the embedded model that a follow-up call takes a finished reply's KV cache.

A stretch is the KV cache of positions ``[start, end)`` of a token sequence, found through the
tokens before it; ``longest`` uses one up to its own end, its reply's text end or one of the
prompt's message boundaries (cuts), never to an arbitrary point inside a message.
"""

from __future__ import annotations

import gc
import os
import weakref

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from lase_nb.backends.local.kv_cache import add_row, get_kv, keep_rows, new_cache, set_rows  # noqa: E402
from lase_nb.backends.local.prefix_store import PrefixStore, nbytes  # noqa: E402

LAYERS, HEADS, DIM = 3, 2, 4


def kv_of(start: int, end: int, rows: int = 1) -> list[tuple[object, object]]:
    """Per-layer (keys, values) ``[rows, heads, end - start, dim]`` whose entries name their
    layer and position (keys: 100 * layer + position, values: the negative), so a test can see
    which positions it got back."""
    pos = torch.arange(start, end, dtype=torch.float32).view(1, 1, -1, 1)
    out = []
    for layer in range(LAYERS):
        k = (100 * layer + pos).expand(rows, HEADS, end - start, DIM).clone()
        out.append((k, -k))
    return out


def stretch_bytes(n: int) -> int:
    return 2 * LAYERS * HEADS * n * DIM * 4  # keys and values, float32


PROMPT = list(range(10, 30))  # 20 tokens; message boundaries at 8 and 14
CUTS = [8, 14]


def test_hit_uses_a_stored_stretch_up_to_its_end() -> None:
    store = PrefixStore(1 << 20)
    store.put(PROMPT[:8], 0, kv_of(0, 8))
    hit = store.longest(PROMPT, 0, len(PROMPT) - 1, CUTS)
    assert hit is not None
    end, stretch = hit
    assert end == 8 and stretch.start == 0 and stretch.ids == tuple(PROMPT[:8])
    assert torch.equal(stretch.kv[1][0][0, 0, :, 0], 100 + torch.arange(8.0))
    assert len(store) == 1 and store.used == nbytes(stretch.kv) == stretch_bytes(8)


def test_miss_where_nothing_stored_matches() -> None:
    store = PrefixStore(1 << 20)
    assert store.longest(PROMPT, 0, len(PROMPT) - 1, CUTS) is None  # empty store
    store.put(PROMPT[:8], 0, kv_of(0, 8))
    other = [99] + PROMPT[1:]
    assert store.longest(other, 0, len(other) - 1, CUTS) is None  # differs at the first token
    # a stretch is found only from the position it starts at, through the tokens before it
    store.put(PROMPT[:14], 8, kv_of(8, 14))
    assert store.longest(other, 8, len(other) - 1, CUTS) is None
    # a prompt that leaves the stretch inside a message, with no boundary there, is not split
    diverges = PROMPT[:5] + [99] * 15
    assert store.longest(diverges, 0, len(diverges) - 1, [12]) is None
    # ... but with one of its own boundaries inside the shared part, it is used up to there
    end, _ = store.longest(diverges, 0, len(diverges) - 1, [3, 12])
    assert end == 3
    # the last prompt token is always encoded (its logits are needed): limit stops the match
    assert store.longest(PROMPT[:8], 0, 7, []) is None


def test_growth_chains_stretches_and_shares_a_common_prefix() -> None:
    """Prompts extend the store chunk by chunk; a shared head is stored once and each prompt
    that continues it adds only its own chunk."""
    store = PrefixStore(1 << 20)
    store.put(PROMPT[:8], 0, kv_of(0, 8))  # the system prompt and worked examples
    store.put(PROMPT[:14], 8, kv_of(8, 14))  # one continuation
    second = PROMPT[:8] + [70, 71, 72, 73]
    store.put(second, 8, kv_of(8, 12))  # another continuation of the same head
    assert len(store) == 3 and store.used == stretch_bytes(8 + 6 + 4)
    # walking the chain rebuilds the whole prefix from its parts
    start, keys = 0, []
    while (hit := store.longest(PROMPT, start, len(PROMPT) - 1, CUTS)) is not None:
        end, s = hit
        keys.append(s.kv[2][0][:, :, :end - start])
        start = end
    assert start == 14
    assert torch.equal(torch.cat(keys, dim=-2)[0, 0, :, 0], 200 + torch.arange(14.0))
    end, s = store.longest(second + [74, 75], 8, 13, [])
    assert end == 12 and s.ids == tuple(second)
    # storing the same stretch again changes nothing
    store.put(PROMPT[:8], 0, kv_of(0, 8))
    assert len(store) == 3 and store.used == stretch_bytes(18)


def test_eviction_drops_the_least_recently_used_within_the_byte_budget() -> None:
    store = PrefixStore(stretch_bytes(16))
    a, b, c = [1] * 8, [2] * 8, [3] * 8
    store.put(a, 0, kv_of(0, 8))
    store.put(b, 0, kv_of(0, 8))
    assert store.used == stretch_bytes(16) == store.budget and len(store) == 2
    assert store.longest(a + [5], 0, 8, []) is not None  # a is used: b is now the oldest
    store.put(c, 0, kv_of(0, 8))
    assert len(store) == 2 and store.used == stretch_bytes(16)
    assert store.longest(b + [5], 0, 8, []) is None  # b went, and its index entry with it
    assert store.longest(a + [5], 0, 8, []) is not None and store.longest(c + [5], 0, 8, []) is not None
    # a larger stretch evicts as many as it needs; one over the whole budget is not kept
    store.put([4] * 12, 0, kv_of(0, 12))
    assert len(store) == 1 and store.used == stretch_bytes(12)
    store.put([6] * 17, 0, kv_of(0, 17))
    assert len(store) == 1 and store.longest([6] * 18, 0, 17, []) is None
    store.clear()
    assert len(store) == 0 and store.used == 0 and store.longest(a + [5], 0, 8, []) is None


def test_a_follow_up_call_reuses_a_finished_reply() -> None:
    """A finished call stores its prompt's last chunk plus its reply; a follow-up that quotes the
    reply continues from its end, and one whose text was cut (a stop string) only to the cut."""
    store = PrefixStore(1 << 20)
    prompt, reply = PROMPT[:14], [40, 41, 42, 43, 44, 45]
    store.put(prompt[:8], 0, kv_of(0, 8))  # the prompt's head, stored while it was prefilled
    fed = prompt + reply  # the reply's tokens fed back while decoding
    store.put(fed, 8, kv_of(8, len(fed)), text_end=len(prompt) + 4)  # text kept: 4 reply tokens
    quoting = fed + [50, 51, 52]  # the reply, then the follow-up's own turn
    start, used = 0, []
    while (hit := store.longest(quoting, start, len(quoting) - 1, [8, len(fed)])) is not None:
        start, s = hit
        used.append(s)
    assert start == len(fed) and used[-1].ids == tuple(fed)  # the whole reply, nothing re-encoded
    # a follow-up quoting only the kept text (the stop string's tokens cut away) stops there
    cut = prompt + reply[:4] + [60, 61]
    end, s = store.longest(cut, 8, len(cut) - 1, [])
    assert end == len(prompt) + 4 and s.ids == tuple(fed)


def test_growing_cache_writes_into_its_room_and_grows_when_full() -> None:
    cache = new_cache(iter(kv_of(0, 5)))
    layer = cache.layers[0]
    room = layer.room
    buf = layer._bufs[0].data_ptr()
    for t in range(5, 5 + room):  # decoding steps within the room: no new buffer
        for i, (k, v) in enumerate(kv_of(t, t + 1)):
            cache.update(k, v, i)
    assert layer._bufs[0].data_ptr() == buf
    for i, (k, v) in enumerate(kv_of(5 + room, 7 + room)):  # past the room: new buffers
        cache.update(k, v, i)
    assert layer._bufs[0].data_ptr() != buf
    for i, (k, v) in enumerate(get_kv(cache)):
        want = kv_of(0, 7 + room)[i]
        assert torch.equal(k, want[0]) and torch.equal(v, want[1])


def test_set_rows_left_pads_and_frees_each_old_layer_as_it_goes() -> None:
    cache = new_cache(kv_of(0, 6))
    old = [weakref.ref(k) for k, _ in get_kv(cache)]
    row = kv_of(0, 4)
    pieces = [[old_kv, new_kv] for old_kv, new_kv in zip(get_kv(cache), row)]
    set_rows(cache, pieces, 6)
    gc.collect()
    assert pieces == [None] * LAYERS and all(r() is None for r in old)  # nothing old kept alive
    for i, (k, v) in enumerate(get_kv(cache)):
        assert k.shape == (2, HEADS, 6, DIM)
        assert torch.equal(k[0], kv_of(0, 6)[i][0][0])
        assert torch.equal(k[1, :, :2], torch.zeros(HEADS, 2, DIM))  # left padding
        assert torch.equal(k[1, :, 2:], row[i][0][0]) and torch.equal(v[1, :, 2:], row[i][1][0])
    # the next step writes into the room of the new buffers
    for i, (k, v) in enumerate(kv_of(6, 7, rows=2)):
        cache.update(k, v, i)
    assert get_kv(cache)[0][0].shape == (2, HEADS, 7, DIM)


def packed(rows: list[list[tuple[object, object]]]) -> list[tuple[object, object]]:
    """Rows (per layer ``[1, heads, len, dim]``) stacked and left-padded with zeros: what the
    batch cache must hold whichever way it got there."""
    width = max(r[0][0].shape[-2] for r in rows)
    out = []
    for layer in range(LAYERS):
        ks, vs = [], []
        for r in rows:
            k, v = r[layer]
            pad = torch.zeros(1, HEADS, width - k.shape[-2], DIM)
            ks.append(torch.cat([pad, k], dim=-2))
            vs.append(torch.cat([pad, v], dim=-2))
        out.append((torch.cat(ks), torch.cat(vs)))
    return out


def assert_holds(cache, want) -> None:
    for (k, v), (wk, wv) in zip(get_kv(cache), want):
        assert k.shape == wk.shape and torch.equal(k, wk) and torch.equal(v, wv)


def test_rows_join_and_leave_in_place_and_the_batch_grows_when_it_must() -> None:
    a, b, c, d = kv_of(0, 6), kv_of(10, 14), kv_of(20, 29), kv_of(40, 43)
    cache = new_cache(a)
    add_row(cache, b, capacity=4)  # a one-row buffer has no free row: fresh buffers, 4 rows
    buf = cache.layers[0]._bufs[0]
    assert buf.shape[0] == 4 and cache.layers[0]._bufs[3] == 0
    assert_holds(cache, packed([a, b]))
    add_row(cache, c, capacity=4)  # longer than the batch, no free columns on the left: fresh
    assert cache.layers[0]._bufs[0] is not buf
    assert_holds(cache, packed([a, b, c]))
    buf = cache.layers[0]._bufs[0]
    keep_rows(cache, [0, 1], lead=3)  # c leaves; the first 3 columns were padding for a and b
    assert cache.layers[0]._bufs[0] is buf and cache.layers[0]._bufs[3] == 3
    assert_holds(cache, packed([a, b]))
    add_row(cache, d, capacity=4)  # a free row and room: written in place
    assert cache.layers[0]._bufs[0] is buf
    assert_holds(cache, packed([a, b, d]))
    longer = kv_of(50, 58)  # 8 > 6 columns: the 2 more come from the 3 dropped on the left
    add_row(cache, longer, capacity=4)
    assert cache.layers[0]._bufs[0] is buf and cache.layers[0]._bufs[3] == 1
    assert_holds(cache, packed([a, b, d, longer]))
    keep_rows(cache, [1, 3], lead=0)  # rows move down inside the buffers
    assert cache.layers[0]._bufs[0] is buf
    assert_holds(cache, packed([b, longer]))
    add_row(cache, a, capacity=4)
    add_row(cache, d, capacity=4)
    assert cache.layers[0]._bufs[0] is buf
    assert_holds(cache, packed([b, longer, a, d]))
    step = kv_of(60, 61, rows=4)  # a decoding step writes into the room after the last column
    for i, (k, v) in enumerate(step):
        cache.update(k, v, i)
    assert cache.layers[0]._bufs[0] is buf and get_kv(cache)[0][0].shape == (4, HEADS, 9, DIM)
    assert torch.equal(get_kv(cache)[2][0][:, :, -1:], step[2][0])


def test_follow_up_takes_the_reply_kv_on_the_embedded_model() -> None:
    """On the real model: the stored reply's KV is what encoding the same tokens afresh gives
    (up to float rounding: it was computed while decoding), and the follow-up prompt takes it."""
    local = pytest.importorskip("lase_nb.backends.local")
    from lase_nb.types import GenParams

    b = local.LocalBackend(max_batch=2)
    store = b._loaded.prefixes
    b.clear_prefix_cache()
    msgs = [{"role": "user", "content": "What is 3 + 4? Put the final answer in \\boxed{}."}]
    first = b.generate(msgs, GenParams(max_tokens=10))
    quoting = msgs + [{"role": "assistant", "content": first.text},
                      {"role": "user", "content": "Now only the answer."}]
    ids, cuts = b._encode(quoting)
    hit = store.longest(ids, 0, len(ids) - 1, cuts)
    assert hit is not None
    start, reused = 0, []
    while (hit := store.longest(ids, start, len(ids) - 1, cuts)) is not None:
        end, s = hit
        reused.append([(k[:, :, :end - start], v[:, :, :end - start]) for k, v in s.kv])
        start = end
    assert start > first.prompt_tokens  # the reply's tokens come from the store
    with torch.inference_mode():
        _, fresh = b._forward(torch.tensor([ids[:start]]), torch.ones((1, start), dtype=torch.long),
                              torch.arange(start).unsqueeze(0), None)
    for layer, (k, v) in enumerate(get_kv(fresh)):
        got_k = torch.cat([part[layer][0] for part in reused], dim=-2)
        got_v = torch.cat([part[layer][1] for part in reused], dim=-2)
        assert torch.allclose(got_k, k, atol=1e-3) and torch.allclose(got_v, v, atol=1e-3)
    before = b.prefix_stats["reused_tokens"]
    b.generate(quoting, GenParams(max_tokens=4))
    assert b.prefix_stats["reused_tokens"] - before == start
