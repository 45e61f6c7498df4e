"""The scheduler: continuous batching of ready requests on the loaded model.

Up to ``max_batch`` requests decode together; a request that finishes leaves the batch at once
and a waiting request takes its place, instead of every batch running until its longest row
ends. In ``generate_many`` the waiting requests are the rest of its list; ``generate_stream``
takes new requests while it runs (the runner sends each problem's next call as soon as its
previous one is answered), so calls of different problems and stages share the batch.

Each request is prefilled on its own (reusing stored stretches of the
:class:`~lase_nb.backends.local.prefix_store.PrefixStore`) and then spliced into the running
batch, which is left-padded with explicit position ids, so a batched row computes the same
thing as the row alone; float32 reductions over a different batch shape can still differ in
the last bits (measured ~1e-5 in logprobs), which could flip a greedy choice only at an exact
near-tie. (transformers' own continuous batching, ``generate_batch``, returns only the chosen
token's logprob, after temperature, with no top-k, entropy or per-request seeded sampling, so
it cannot serve the confidence gate.) Models whose KV cache is not a plain dynamic one
(sliding-window, hybrid) fall back to lockstep batches with the same results.

**Scheduling.** Waiting requests are served newest first: a strategy's next call for a problem
already under way goes before problems not yet started, so problems finish early, follow-ups
find their replies still cached, and long chains of calls overlap with the rest.

:class:`Scheduler` is a mixin of :class:`~lase_nb.backends.local.backend.LocalBackend`; besides
the token choice of :class:`~lase_nb.backends.local.decoding.TokenDecoding` it needs the
backend's model ``_lm`` (and the names its ``forward`` takes, ``_cache_kw``, ``_keep_kw``),
``_loaded`` (the model and its prefix store), ``device``, ``max_batch``, ``_max_positions``,
``_pad_id``, ``prefix_stats`` and ``batch_stats``.
"""

from __future__ import annotations

import collections
import dataclasses
import time
from typing import Any, Callable

from .decoding import Row, TokenDecoding
from .kv_cache import add_row, get_kv, keep_rows, new_cache, pad_left, release_free_memory
from .prefix_store import PrefixStore



@dataclasses.dataclass
class Batch:
    """The running batch: its KV cache, attention mask, next positions and input tokens."""

    rows: list[Row] = dataclasses.field(default_factory=list)
    cache: Any = None
    mask: Any = None
    pos: Any = None
    next_ids: list[int] = dataclasses.field(default_factory=list)


class Scheduler(TokenDecoding):
    """Continuous batching (and the lockstep fallback) over rows (a mixin of ``LocalBackend``)."""

    _loaded: Any
    device: str
    max_batch: int
    _max_positions: int
    _pad_id: int
    prefix_stats: dict[str, int]
    batch_stats: dict[str, float]
    _lm: Any
    _cache_kw: str
    _keep_kw: str | None

    def _forward(self, ids: Any, mask: Any, pos: Any, cache: Any) -> tuple[Any, Any]:
        kwargs = {"input_ids": ids, "attention_mask": mask, "position_ids": pos, "use_cache": True}
        if cache is not None:
            kwargs[self._cache_kw] = cache
        if self._keep_kw:
            kwargs[self._keep_kw] = 1  # only the last position's logits are needed
        out = self._lm(**kwargs)
        new_cache = getattr(out, "cache", None)
        if new_cache is None:
            new_cache = getattr(out, "past_key_values", None)
        return out.logits[:, -1, :], new_cache

    def _run_continuous(self, waiting: list[Row], done: Callable[[Row], None],
                        more: Callable[[], list[Row]]) -> None:
        """Continuous batching: each row is prefilled alone (reusing cached prompt prefixes),
        joins the running batch, leaves it as soon as it finishes (its reply's KV cache kept
        for a follow-up call), and a waiting row takes the freed place. The running batch is
        left-padded with explicit position ids.

        Rows wait in a queue that ``more()`` (asked whenever the batch has room) fills from the
        front: the newest requests, a strategy's next call for a problem already under way,
        go first, so problems finish early, a follow-up finds its reply still cached, and long
        chains of calls overlap with the rest of the work instead of trailing after it."""
        import torch

        queue = collections.deque(waiting)
        batch = Batch()
        with torch.inference_mode():
            while True:
                if len(batch.rows) < self.max_batch:
                    queue.extendleft(reversed(more()))
                if not queue and not batch.rows:
                    return
                while queue and len(batch.rows) < self.max_batch:
                    r = queue.popleft()
                    r.t0 = time.perf_counter()
                    logits, kv = self._prefill(r)
                    tok = self._step([r], logits)[0]
                    self.batch_stats["prefill_s"] += time.perf_counter() - r.t0
                    if self._finished(r):
                        self._keep_reply(r, kv)
                        done(r)
                    else:
                        self._join(batch, r, kv, tok)
                    del kv  # copied into the batch (or stored): free it before the next prefill
                if not batch.rows:
                    continue
                t_step = time.perf_counter()
                self.batch_stats["steps"] += 1
                self.batch_stats["row_steps"] += len(batch.rows)
                step_ids = torch.tensor(batch.next_ids, dtype=torch.long, device=self.device).unsqueeze(1)
                batch.mask = torch.cat([batch.mask, torch.ones_like(batch.mask[:, :1])], dim=1)
                logits, batch.cache = self._forward(step_ids, batch.mask, batch.pos, batch.cache)
                release_free_memory()  # if the step used up the room and the buffers were remade
                batch.pos = batch.pos + 1
                batch.next_ids = self._step(batch.rows, logits)
                self.batch_stats["decode_s"] += time.perf_counter() - t_step
                keep = [j for j, r in enumerate(batch.rows) if not self._finished(r)]
                if len(keep) == len(batch.rows):
                    continue
                gone = [(j, r) for j, r in enumerate(batch.rows) if r.finish is not None]
                layers = get_kv(batch.cache)
                for j, r in gone:
                    n = int(batch.mask[j].sum())
                    self._keep_reply(r, [(k[j:j + 1, :, -n:], v[j:j + 1, :, -n:]) for k, v in layers])
                del layers  # no views of the batch's buffers outlive a change of its rows
                self._select(batch, keep)
                for _, r in gone:
                    done(r)

    def _finished(self, r: Row) -> bool:
        """Whether ``r`` is done after its latest token (sets its finish reason and latency)."""
        if r.finish is None and len(r.prompt_ids) + r.produced >= self._max_positions:
            r.finish = "length"
        if r.finish is None:
            return False
        r.latency_s = time.perf_counter() - r.t0
        self._flush(r)
        return True

    def _prefill(self, r: Row) -> tuple[Any, list[tuple[Any, Any]]]:
        """Last-position logits and KV cache (``[1, heads, len, dim]`` per layer) of ``r``'s prompt.

        The prompt starts with the longest run of stored stretches it continues (see
        :class:`PrefixStore`: system prompt, worked examples, earlier turns, a reply it quotes);
        the rest is encoded chunk by chunk between its message boundaries, and every chunk but
        the last is stored for later prompts."""
        import torch

        store: PrefixStore = self._loaded.prefixes
        ids, dev = r.prompt_ids, self.device
        cuts = [c for c in r.cuts if 0 < c < len(ids)]
        parts: list[list[tuple[Any, Any]]] = []
        start = 0
        while (hit := store.longest(ids, start, len(ids) - 1, cuts)) is not None:
            end, stretch = hit
            parts.append([(k[:, :, :end - start], v[:, :, :end - start]) for k, v in stretch.kv])
            start = end
        cache = new_cache(  # one layer joined at a time, freed once copied into the cache
            (torch.cat([p[l][0] for p in parts], dim=-2), torch.cat([p[l][1] for p in parts], dim=-2))
            for l in range(len(parts[0]) if parts else 0))
        self.prefix_stats["reused_tokens"] += start
        self.prefix_stats["encoded_tokens"] += len(ids) - start
        logits = None
        for end in [c for c in cuts if c > start] + [len(ids)]:
            chunk = torch.tensor([ids[start:end]], dtype=torch.long, device=dev)
            mask = torch.ones((1, end), dtype=torch.long, device=dev)
            pos = torch.arange(start, end, dtype=torch.long, device=dev).unsqueeze(0)
            logits, cache = self._forward(chunk, mask, pos, cache)
            if end < len(ids):
                store.put(ids[:end], start, [(k[:, :, start:end].clone(), v[:, :, start:end].clone())
                                             for k, v in get_kv(cache)])
            start = end
        r.tail_start = start - chunk.shape[1]
        return logits, get_kv(cache)

    def _keep_reply(self, r: Row, kv: list[tuple[Any, Any]]) -> None:
        """Store the end of ``r``'s prompt and its reply (``kv`` covers both, ``[1, heads, len,
        dim]``) for a follow-up call that quotes the reply."""
        fed = r.prompt_ids + r.chosen[:-1]  # the last token chosen was never fed to the model
        if not kv or kv[0][0].shape[-2] != len(fed):
            return
        self._loaded.prefixes.put(
            fed, r.tail_start, [(k[:, :, r.tail_start:].clone(), v[:, :, r.tail_start:].clone()) for k, v in kv],
            text_end=len(r.prompt_ids) + len(r.ids))

    def _join(self, batch: Batch, r: Row, kv: list[tuple[Any, Any]], tok: int) -> None:
        """Add a prefilled row (its KV cache, its next input token) to the running batch."""
        import torch

        dev, n = self.device, len(r.prompt_ids)
        pos = torch.tensor([[n]], dtype=torch.long, device=dev)
        if not batch.rows:
            batch.cache = new_cache(kv)
            batch.mask = torch.ones((1, n), dtype=torch.long, device=dev)
            batch.pos, batch.rows, batch.next_ids = pos, [r], [tok]
            return
        width = max(batch.mask.shape[1], n)
        add_row(batch.cache, kv, self.max_batch)
        row_mask = torch.ones((1, n), dtype=torch.long, device=dev)
        batch.mask = torch.cat([pad_left(batch.mask, width, dim=1), pad_left(row_mask, width, dim=1)])
        batch.pos = torch.cat([batch.pos, pos])
        batch.rows.append(r)
        batch.next_ids.append(tok)
        release_free_memory()  # if the batch outgrew its buffers

    def _select(self, batch: Batch, keep: list[int]) -> None:
        """Keep only rows ``keep`` of the batch and drop leading columns that are padding for all."""
        import torch

        if not keep:
            batch.rows, batch.next_ids, batch.cache = [], [], None
            release_free_memory(force=True)
            return
        sel = torch.tensor(keep, dtype=torch.long, device=self.device)
        mask = batch.mask[sel]
        lead = int((mask.sum(0) > 0).int().argmax())  # first column some row still attends to
        keep_rows(batch.cache, keep, lead)
        batch.mask, batch.pos = mask[:, lead:], batch.pos[sel]
        batch.rows = [batch.rows[j] for j in keep]
        batch.next_ids = [batch.next_ids[j] for j in keep]

    def _run_lockstep(self, todo: list[Row], done: Callable[[Row], None]) -> None:
        """Decode ``todo`` in lockstep batches of ``max_batch`` rows (each batch to its end)."""
        for start in range(0, len(todo), self.max_batch):
            chunk = todo[start:start + self.max_batch]
            self._decode(chunk)
            for r in chunk:
                done(r)

    def _decode(self, rows: list[Row]) -> None:
        """Decode a lockstep batch to the end (for caches :meth:`_join` cannot splice): left
        padding, explicit position ids, a shared KV cache."""
        import torch

        dev = self.device
        width = max(len(r.prompt_ids) for r in rows)
        ids = torch.full((len(rows), width), self._pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, width - len(r.prompt_ids):] = torch.tensor(r.prompt_ids, dtype=torch.long)
            mask[i, width - len(r.prompt_ids):] = 1
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        ids, mask, pos = ids.to(dev), mask.to(dev), pos.to(dev)
        active = list(rows)
        t0 = time.perf_counter()
        with torch.inference_mode():
            logits, cache = self._forward(ids, mask, pos, None)
            next_pos = pos[:, -1:] + 1
            while True:
                chosen = self._step(active, logits)
                now = time.perf_counter() - t0
                keep = []
                for j, r in enumerate(active):
                    if r.finish is None and len(r.prompt_ids) + r.produced >= self._max_positions:
                        r.finish = "length"
                    if r.finish is None:
                        keep.append(j)
                    else:
                        r.latency_s = now
                        self._flush(r)
                if not keep:
                    return
                if len(keep) < len(active):
                    sel = torch.tensor(keep, dtype=torch.long, device=dev)
                    cache.batch_select_indices(sel)
                    mask, next_pos = mask[sel], next_pos[sel]
                    active = [active[j] for j in keep]
                    chosen = [chosen[j] for j in keep]
                step_ids = torch.tensor(chosen, dtype=torch.long, device=dev).unsqueeze(1)
                mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
                logits, cache = self._forward(step_ids, mask, next_pos, cache)
                next_pos = next_pos + 1
