"""The prefix store: KV caches of earlier prompts' chunks and finished replies, for reuse.

Prompts reuse the KV cache of stretches stored before (per loaded model, up to
``PREFIX_CACHE_MIB``, least recently used dropped first): the chunks of earlier prompts between
message boundaries (so the system prompt and worked examples shared by all calls are encoded
once per process), and each finished call's reply (so a follow-up call that quotes it, such as
the answer-extraction step, a revision or a debate round, encodes only what is new). A stretch
is used up to its own end, its reply's end or one of the prompt's message boundaries, never to
an arbitrary point inside a message; the rest is encoded chunk by chunk between message
boundaries (:meth:`~lase_nb.backends.local.scheduler.Scheduler._prefill`). A reused reply was
computed while decoding (in a batch), so a prompt that reuses one can differ from one encoded
afresh in the last float bits, like batched rows (``LocalBackend.prefix_stats`` counts
reused/encoded tokens).

The store only keeps tensors; it knows nothing of models: ``kv`` is a list of per-layer
``(keys, values)`` pairs shaped ``[1, heads, positions, dim]``.
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Any, Sequence

#: Memory the stored KV caches of prompt stretches and replies may take per loaded model (MiB).
PREFIX_CACHE_MIB = 256


@dataclasses.dataclass
class Stretch:
    """The KV cache of positions ``[start, start + len)`` of the token sequence ``ids``."""

    ids: tuple[int, ...]  # every token from position 0 to the stretch's end
    start: int
    kv: list[tuple[Any, Any]]  # per layer (keys, values), ``[1, heads, end - start, dim]``
    text_end: int  # for a reply: where the text it kept ends (a verbatim loop or stop string cut)
    nbytes: int = 0


class PrefixStore:
    """KV caches of token stretches that later prompts may start with; least recently used go first.

    Two kinds of stretch are kept: the chunks of a prompt between its message boundaries (system
    prompt, worked examples, earlier turns), and a finished call's prompt end plus its reply, so a
    follow-up call that quotes the reply (answer extraction, a revision, a debate round) does not
    encode it again. Each stretch holds only its own positions and is found through the tokens
    before it, so a shared system prompt is stored once however many prompts continue it."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget = budget_bytes
        self.used = 0
        self._items: collections.OrderedDict[tuple[int, ...], Stretch] = collections.OrderedDict()
        # the tokens before a stretch -> the stretches that start there (in the order stored)
        self._after: dict[tuple[int, ...], dict[tuple[int, ...], None]] = {}

    def __len__(self) -> int:
        return len(self._items)

    def longest(self, ids: Sequence[int], start: int, limit: int, cuts: Sequence[int]) -> tuple[int, Stretch] | None:
        """The stored stretch starting at ``start`` that covers most of ``ids[start:limit]``: the
        end of the part used and the stretch, or None. A stretch is used up to its own end, the
        end of its reply's text, or one of ``cuts`` (this prompt's message boundaries), so the
        prompt is never split inside a message at a point where nothing stored ends."""
        best: tuple[int, Stretch] | None = None
        for key in self._after.get(tuple(ids[:start]), ()):
            s = self._items[key]
            n, top = start, min(limit, len(s.ids))
            while n < top and s.ids[n] == ids[n]:
                n += 1
            ok = [e for e in (len(s.ids), s.text_end, *cuts) if start < e <= n]
            if ok and (best is None or max(ok) > best[0]):
                best = (max(ok), s)
        if best is not None:
            self._items.move_to_end(best[1].ids)
        return best

    def put(self, ids: Sequence[int], start: int, kv: list[tuple[Any, Any]], text_end: int | None = None) -> None:
        """Keep the KV cache ``kv`` of positions ``[start, len(ids))`` of ``ids``."""
        key = tuple(ids)
        size = nbytes(kv)
        if key in self._items or size > self.budget or start >= len(key):
            return
        self._items[key] = Stretch(key, start, kv, len(key) if text_end is None else text_end, size)
        self._after.setdefault(key[:start], {})[key] = None
        self.used += size
        while self.used > self.budget:
            _, old = self._items.popitem(last=False)
            self.used -= old.nbytes
            before = self._after[old.ids[:old.start]]
            before.pop(old.ids, None)
            if not before:
                del self._after[old.ids[:old.start]]

    def clear(self) -> None:
        """Forget every stretch."""
        self._items.clear()
        self._after.clear()
        self.used = 0


def nbytes(kv: list[tuple[Any, Any]]) -> int:
    """Bytes held by the tensors of ``kv``."""
    return sum(k.element_size() * k.nelement() + v.element_size() * v.nelement() for k, v in kv)
