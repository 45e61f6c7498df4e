"""KV-cache plumbing of the running batch: a dynamic cache that grows in place, and splicing
rows into it and out of it.

The KV cache grows in place (spare room reserved per layer, :func:`growing_cache_class`) instead
of being concatenated into a fresh copy at every step, which cost about a third of one stream's
decode time. Its buffers hold ``max_batch`` rows, so rows join (:func:`add_row`) and leave
(:func:`keep_rows`) in place; the buffers are replaced only when the batch outgrows them, and
then layer by layer, so the old cache and the new one are never both whole in memory (the peak
of a full LASE chain at ``max_batch`` 16 went from 3.3 to 2.0 GiB). Only plain dynamic caches
can be edited like this (:func:`spliceable`); the scheduler falls back to lockstep batches for
any other kind.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any, Callable, Iterable


def get_kv(cache: Any) -> list[tuple[Any, Any]]:
    """Per-layer (keys, values) of a plain dynamic KV cache (``[batch, heads, len, dim]``)."""
    layers = getattr(cache, "layers", None)
    if layers is not None:
        return [(layer.keys, layer.values) for layer in layers]
    return list(zip(cache.key_cache, cache.value_cache))  # transformers < 4.56


def set_rows(cache: Any, pieces: list[list[tuple[Any, Any]] | None], width: int) -> None:
    """Make ``cache`` hold the rows of ``pieces`` (per layer, ``(keys, values)`` blocks
    ``[rows, heads, len, dim]``, stacked along the batch in order), each block right-aligned
    and left-padded with zeros to ``width``. The blocks are copied once, into fresh buffers
    with a growing layer's spare room, so the next decoding step need not copy them again.

    ``pieces`` is consumed: each layer's entry is dropped (set to None) once that layer is
    rebuilt, so a layer's old buffers are freed before the next layer's new ones are made and
    the old cache and the new one are never both whole in memory. Callers must hold no other
    reference to the old layers (``get_kv`` lists included)."""
    layers = getattr(cache, "layers", None)
    _FREED[0] = True
    for i in range(len(pieces)):
        blocks, pieces[i] = pieces[i], None
        room = getattr(layers[i], "room", 0) if layers is not None else 0
        kb, vb = _packed(blocks, width, room)
        del blocks  # the old layer's last reference: freed before the next layer is made
        keys, values = kb[:, :, :width], vb[:, :, :width]
        if layers is None:  # transformers < 4.56
            cache.key_cache[i], cache.value_cache[i] = keys, values
            continue
        layers[i].keys, layers[i].values = keys, values
        if room:  # a GrowingLayer: its next update writes into the room
            layers[i]._bufs = (kb, vb, keys, 0)


def _packed(blocks: list[tuple[Any, Any]], width: int, room: int) -> tuple[Any, Any]:
    """Fresh (keys, values) buffers ``[rows, heads, width + room, dim]`` holding ``blocks``
    stacked along the batch, each right-aligned at ``width`` and left-padded with zeros."""
    k0, v0 = blocks[0]
    rows = sum(k.shape[0] for k, _ in blocks)
    kb = k0.new_empty((rows, k0.shape[1], width + room, k0.shape[3]))
    vb = v0.new_empty((rows, v0.shape[1], width + room, v0.shape[3]))
    at = 0
    for k, v in blocks:
        pad, end = width - k.shape[2], at + k.shape[0]
        kb[at:end, :, :pad] = 0  # padding is masked out, but must be finite
        vb[at:end, :, :pad] = 0
        kb[at:end, :, pad:width] = k
        vb[at:end, :, pad:width] = v
        at = end
    return kb, vb


def new_cache(kv: Iterable[tuple[Any, Any]]) -> Any:
    """A dynamic KV cache holding ``kv`` (empty for ``[]``) that grows in place where it can.

    ``kv`` may be a generator, so a layer made on the fly is freed once it is copied in."""
    cls = growing_cache_class()
    cache = cls()
    for i, (k, v) in enumerate(kv):
        cache.update(k, v, i)
    return cache



def _in_place(cache: Any) -> bool:
    """Whether every layer of ``cache`` is a growing layer that owns its keys/values views."""
    layers = getattr(cache, "layers", None)
    return bool(layers) and all(
        getattr(layer, "_bufs", None) is not None and layer.keys is layer._bufs[2] for layer in layers)


def add_row(cache: Any, kv: list[tuple[Any, Any]], capacity: int) -> None:
    """Append a row to the batch cache: ``kv`` (per layer ``[1, heads, n, dim]``) right-aligned
    at the batch's last column, every row left-padded with zeros to ``max(width, n)``.

    In place when the buffers have a free row and, for a row longer than the batch, free columns
    on the left; otherwise the layer moves into fresh buffers with ``capacity`` rows and room to
    grow (the old ones are freed layer by layer). Either way the keys/values the model reads are
    the same numbers, as if the batch had been packed afresh."""
    if not _in_place(cache):  # a cache this module did not make (transformers < 4.56)
        set_rows(cache, [[old, new] for old, new in zip(get_kv(cache), kv)],
                 max(get_kv(cache)[0][0].shape[-2], kv[0][0].shape[-2]))
        return
    for layer, (k, v) in zip(cache.layers, kv):
        kb, vb, keys, lo = layer._bufs
        rows, used, n = keys.shape[0], keys.shape[-2], k.shape[-2]
        width = max(used, n)
        hi = lo + used
        if rows < kb.shape[0] and lo >= width - used:
            lo = hi - width
            kb[:rows, :, lo:hi - used] = 0  # the existing rows' new left padding
            vb[:rows, :, lo:hi - used] = 0
        else:
            cap = width + layer.room
            nkb = kb.new_empty((max(capacity, rows + 1), kb.shape[1], cap, kb.shape[3]))
            nvb = vb.new_empty((max(capacity, rows + 1), vb.shape[1], cap, vb.shape[3]))
            nkb[:rows, :, :width - used] = 0
            nvb[:rows, :, :width - used] = 0
            nkb[:rows, :, width - used:width] = keys
            nvb[:rows, :, width - used:width] = layer.values
            kb, vb, lo, hi = nkb, nvb, 0, width
            _FREED[0] = True
        kb[rows, :, lo:hi - n] = 0  # padding is masked out, but must be finite
        vb[rows, :, lo:hi - n] = 0
        kb[rows, :, hi - n:hi] = k[0]
        vb[rows, :, hi - n:hi] = v[0]
        layer.keys, layer.values = kb[:rows + 1, :, lo:hi], vb[:rows + 1, :, lo:hi]
        layer._bufs = (kb, vb, layer.keys, lo)


def keep_rows(cache: Any, keep: list[int], lead: int) -> None:
    """Keep only rows ``keep`` (ascending) of the batch cache, in that order, and drop its first
    ``lead`` columns: rows move down inside the buffers and the views start later, no new
    buffers."""
    if not _in_place(cache):
        set_rows(cache, [[(k[j:j + 1, :, lead:], v[j:j + 1, :, lead:]) for j in keep]
                         for k, v in get_kv(cache)], get_kv(cache)[0][0].shape[-2] - lead)
        return
    for layer in cache.layers:
        kb, vb, keys, lo = layer._bufs
        hi, lo = lo + keys.shape[-2], lo + lead
        for new, old in enumerate(keep):
            if new != old:  # new < old: a row only ever moves into a place already vacated
                kb[new, :, lo:hi] = kb[old, :, lo:hi]
                vb[new, :, lo:hi] = vb[old, :, lo:hi]
        layer.keys, layer.values = kb[:len(keep), :, lo:hi], vb[:len(keep), :, lo:hi]
        layer._bufs = (kb, vb, layer.keys, lo)


_GROWING: list[Any] = []


def growing_cache_class() -> Any:
    """``DynamicCache`` whose layers write new keys/values into spare room instead of
    concatenating a fresh copy of the whole cache at every step (which, with one large
    allocation per layer per token, took a third of the decode time on CPU).

    A layer's ``keys``/``values`` are views ``buffer[:rows, :, lo:lo + length]`` of buffers
    ``[row capacity, heads, columns, dim]`` (``_bufs = (keys buffer, values buffer, keys view,
    lo)``), so rows can join and leave and leading columns be dropped without a copy
    (:func:`add_row`, :func:`keep_rows`).
    Plain ``DynamicCache`` where this transformers version has no ``DynamicLayer``."""
    if _GROWING:
        return _GROWING[0]
    from transformers import cache_utils

    layer_cls = getattr(cache_utils, "DynamicLayer", None)
    if layer_cls is None:  # transformers < 4.56
        _GROWING.append(cache_utils.DynamicCache)
        return _GROWING[0]

    class GrowingLayer(layer_cls):  # type: ignore[misc, valid-type]
        """A dynamic layer with room to grow; ``keys``/``values`` are views of its buffers."""

        room = 128  # extra positions reserved whenever the buffers are (re)made

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            rows, n = key_states.shape[0], key_states.shape[-2]
            bufs = getattr(self, "_bufs", None)
            used = self.keys.shape[-2] if self.keys.numel() else 0
            if (bufs is None or self.keys is not bufs[2] or bufs[3] + used + n > bufs[0].shape[-2]
                    or (used and self.keys.shape[0] != rows)):
                bufs = self._adopt(key_states, value_states, used + n)
            kb, vb, _, lo = bufs
            kb[:rows, :, lo + used:lo + used + n] = key_states
            vb[:rows, :, lo + used:lo + used + n] = value_states
            self.keys, self.values = kb[:rows, :, lo:lo + used + n], vb[:rows, :, lo:lo + used + n]
            self._bufs = (kb, vb, self.keys, lo)
            return self.keys, self.values

        def _adopt(self, key_states: Any, value_states: Any, need: int) -> tuple[Any, Any, Any, int]:
            """Fresh buffers for ``need`` positions plus room (and at least as many rows as the
            old ones), holding the current contents from column 0."""
            import torch

            b, h, _, d = key_states.shape
            old = getattr(self, "_bufs", None)
            rows = max(b, old[0].shape[0] if old is not None else 0)
            cap = need + self.room
            kb = torch.empty((rows, h, cap, d), dtype=key_states.dtype, device=key_states.device)
            vb = torch.empty((rows, h, cap, value_states.shape[-1]), dtype=value_states.dtype,
                             device=value_states.device)
            used = self.keys.shape[-2] if self.keys.numel() else 0
            if used:
                kb[:b, :, :used] = self.keys
                vb[:b, :, :used] = self.values
            if old is not None:
                _FREED[0] = True
            return kb, vb, None, 0

    class GrowingCache(cache_utils.DynamicCache):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            cache_utils.Cache.__init__(self, layer_class_to_replicate=GrowingLayer)

    _GROWING.append(GrowingCache)
    return GrowingCache


def spliceable(cache: Any) -> bool:
    """Whether ``cache`` (the one the model makes itself) is a plain dynamic cache, so rows and
    columns may be edited directly (not a sliding-window, static, quantised or hybrid one)."""
    if type(cache).__name__ != "DynamicCache":
        return False
    layers = getattr(cache, "layers", None)
    if layers is not None:
        return bool(layers) and all(type(layer).__name__ == "DynamicLayer" for layer in layers)
    return hasattr(cache, "key_cache") and hasattr(cache, "value_cache")


def pad_left(t: Any, width: int, dim: int = -2) -> Any:
    """``t`` left-padded with zeros along ``dim`` to ``width``."""
    import torch

    missing = width - t.shape[dim]
    if missing <= 0:
        return t
    shape = list(t.shape)
    shape[dim] = missing
    return torch.cat([torch.zeros(shape, dtype=t.dtype, device=t.device), t], dim=dim)


_TRIM: list[Callable[[], Any]] = []


#: set when a layer's buffers were replaced (the old ones freed) since the last trim
_FREED = [False]


def release_free_memory(force: bool = False) -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``; a no-op
    elsewhere), if KV buffers were replaced since the last call (or ``force``).

    A batch cache's buffers (20-25 MB per layer at 16 rows and ~1,500 positions) are replaced
    when the batch outgrows them. glibc serves blocks of that size from its heap once its
    adaptive mmap threshold has risen past them and keeps the freed ones there: when every join
    and leave rebuilt the whole cache, a long run held about as much freed KV memory as live
    (3.4 GiB peak, 3.0 GiB at the end with the batch nearly empty). Trimming after a
    replacement keeps the resident size near what is in use; it costs a few milliseconds, plus
    page faults when the next buffers land on the returned pages, and changes no computation."""
    if not _TRIM:
        trim: Callable[[], Any] = lambda: None  # noqa: E731
        name = ctypes.util.find_library("c")
        try:
            libc = ctypes.CDLL(name) if name else None
            if libc is not None and hasattr(libc, "malloc_trim"):
                libc.malloc_trim.argtypes = [ctypes.c_size_t]
                trim = lambda: libc.malloc_trim(0)  # noqa: E731
        except OSError:
            pass
        _TRIM.append(trim)
    if _FREED[0] or force:
        _FREED[0] = False
        _TRIM[0]()

