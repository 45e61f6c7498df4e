"""KV-cache plumbing of the running batch: a dynamic cache that grows in place, and splicing
rows into it and out of it.

The KV cache grows in place (spare room reserved per layer, :func:`growing_cache_class`) instead
of being concatenated into a fresh copy at every step, which cost about a third of one stream's
decode time. Rows join and leave the running batch through :func:`set_rows`, which copies each
layer once into fresh buffers. Only plain dynamic caches can be edited like this
(:func:`spliceable`); the scheduler falls back to lockstep batches for any other kind.
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
            layers[i]._bufs = (kb, vb, keys)


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


_GROWING: list[Any] = []


def growing_cache_class() -> Any:
    """``DynamicCache`` whose layers write new keys/values into spare room instead of
    concatenating a fresh copy of the whole cache at every step (which, with one large
    allocation per layer per token, took a third of the decode time on CPU).
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
            n = key_states.shape[-2]
            bufs = getattr(self, "_bufs", None)
            used = self.keys.shape[-2] if self.keys.numel() else 0
            if (bufs is None or self.keys is not bufs[2] or used + n > bufs[0].shape[-2]
                    or bufs[0].shape[0] != key_states.shape[0]):
                bufs = self._adopt(key_states, value_states, used + n)
            kb, vb = bufs[0], bufs[1]
            kb[:, :, used:used + n] = key_states
            vb[:, :, used:used + n] = value_states
            self.keys, self.values = kb[:, :, :used + n], vb[:, :, :used + n]
            self._bufs = (kb, vb, self.keys)
            return self.keys, self.values

        def _adopt(self, key_states: Any, value_states: Any, need: int) -> tuple[Any, Any, Any]:
            """Fresh buffers for ``need`` positions plus room, holding the current contents."""
            import torch

            b, h, _, d = key_states.shape
            cap = need + self.room
            kb = torch.empty((b, h, cap, d), dtype=key_states.dtype, device=key_states.device)
            vb = torch.empty((b, h, cap, value_states.shape[-1]), dtype=value_states.dtype,
                             device=value_states.device)
            used = self.keys.shape[-2] if self.keys.numel() else 0
            if used:
                kb[:, :, :used] = self.keys
                vb[:, :, :used] = self.values
            return kb, vb, None

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


def release_free_memory() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``; a no-op
    elsewhere).

    Each time a row joins or leaves, every layer of the running batch is rebuilt into buffers
    of a new shape (20-25 MB each at 16 rows and ~1,500 positions). glibc serves blocks of that
    size from its heap once its adaptive mmap threshold has risen past them, and keeps the
    freed blocks there: over a long run the process held about as much freed KV memory as live
    (3.4 GiB peak, 3.0 GiB at the end with the batch nearly empty). Trimming after each rebuild
    keeps the resident size near what is in use; it costs a few milliseconds per call (about
    0.5% of a run's time) and changes no computation."""
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
    _TRIM[0]()

