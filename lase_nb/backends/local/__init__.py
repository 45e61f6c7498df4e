"""The embedded local backend: a transformers causal LM with exact per-token statistics.

A package in parts, each readable alone:

* :mod:`.files`: model files: the embedded SmolLM2-135M-Instruct GGUF, its one-time conversion
  to safetensors, the organism's LoRA merge, loading a model folder once per process;
* :mod:`.prefix_store`: KV caches of earlier prompts' chunks and finished replies, reused by
  later prompts (least recently used dropped first, within ``PREFIX_CACHE_MIB``);
* :mod:`.kv_cache`: the running batch's KV cache, grown in place, rows spliced in and out;
* :mod:`.decoding`: a request's decoding state, next-token choice with its statistics,
  detokenisation and stops;
* :mod:`.scheduler`: continuous batching of ready requests (and the lockstep fallback);
* :mod:`.backend`: :class:`LocalBackend`, the public API, prompt encoding, the device it runs on
  (:func:`resolve_device`: ``cpu`` by default, ``cuda``, ``cuda:N``, ``mps``, ``auto``);
* :mod:`.routed`: :class:`RoutedBackend`, several models behind one backend, each call routed by its
  role and stage (the organism v6: v5 and the revision adapter); :func:`open_local` opens either.

What a :class:`~lase_nb.types.Generation` from this backend means:

* **Confidence is measured on the model's own distribution.** ``logprob``, ``top`` and
  ``entropy`` of every token come from the raw logits (temperature 1, no top-p truncation),
  whatever temperature/top-p the token was *sampled* with. The confidence gate therefore scores
  what the model believes, not the sampling knob; this matches vLLM's default ("raw logprobs").
* ``entropy`` is the exact full-vocabulary entropy in nats (``entropy_estimator="exact"``).
* ``text == params.prefix + "".join(t.token for t in tokens)`` always holds (``prefix`` is
  empty unless the call prefills the reply, see :class:`~lase_nb.types.GenParams`) and ``offset`` is the character
  (code point) offset of the token in ``text``. Tokens are detokenised incrementally; a token
  that ends inside a multi-byte character gets ``""`` and the token completing the character
  carries it. The EOS token is neither in ``text`` nor in ``tokens``; when a stop string is hit,
  ``text`` is cut where the stop string starts and the token straddling that point keeps only
  its part before it (its logprob is the whole token's).
* ``finish_reason`` is ``"stop"`` (end of turn or a stop string), ``"length"`` (the
  ``max_tokens`` cap) or ``"repeat"`` (``params.repeat_stop``: the reply began to repeat a
  stretch of itself verbatim; the text ends where the repeat starts).
* ``completion_tokens`` counts every token the model produced, including the EOS token and the
  tokens of a stop string that were cut away: what the call cost, so it can exceed
  ``len(tokens)``. ``prompt_tokens`` is the unpadded prompt length.
* ``latency_s`` is the wall time from the start of the request's prefill (when it joined the
  running batch) until it finished. Requests decoded together share each decoding step, so
  latencies of one ``generate_many`` call overlap and do not add up to its wall time.
* Greedy when ``temperature == 0``. Otherwise each request samples with its own generator,
  seeded from the messages, temperature, top-p and ``params.sample``: sample *i* of a call is
  reproducible, different *i* differ, and the result does not depend on which other requests
  shared the batch (up to float rounding, see :mod:`.scheduler`).
* **Continuous batching** (:mod:`.scheduler`) and **prefix caching** (:mod:`.prefix_store`):
  a batched row, or a prompt that reuses a stored reply, computes the same thing as the call
  alone, up to the last float bits.
* Speed on two cores (``benchmarks/local_batching.py``, benchmarks/README.md): LASE over 64
  default problems at ``max_batch=16``, 67-74 tokens/s batched vs 23 one call at a time
  (2.9-3.1x, 2026-11-30, 384-token replies); 27.6 vs 10.4 (2.66x, 2026-12-03, 512-token
  replies, on a machine whose model step is 1.8x slower; prefill, the same in both settings, is
  40% of the batched run); peak 2.0-2.8 GiB. With every LASE stage forced (32 problems,
  512-token replies) the peak is 2.0 GiB (3.3 GiB before rows joined and left the batch cache in place).
  On a machine where other processes keep a core busy, OpenMP's default spin-waiting makes
  torch several times slower; start Python with ``OMP_WAIT_POLICY=PASSIVE`` there (it costs
  ~15% on an idle machine), or pass ``threads=1``.
"""

from __future__ import annotations

from .backend import CUDA_HINT, DEVICES, LocalBackend, resolve_device
from .decoding import Row
from .files import (
    AUTO_NATIVE_BF16,
    DTYPES,
    DEFAULT_CACHE_NAME,
    DEFAULT_MODEL,
    GGUF_FILENAME,
    GGUF_PACKAGE,
    MARKER,
    ORGANISM_MODEL,
    ORGANISM_V6_MODEL,
    REVISION_DIR,
    REVISION_MODEL,
    LoadedModel,
    convert_gguf,
    default_gguf_path,
    default_model_dir,
    is_converted,
    load_model,
    merge_adapter,
    model_cache_root,
    model_info,
    native_bf16,
    resolve_dtype,
    ORGANISM_DIR,
    organism_adapter_path,
    organism_model_dir,
    prepare,
    resolve_model_path,
)
from .prefix_store import PREFIX_CACHE_MIB, PrefixStore
from .routed import RoutedBackend, open_local, v6_route

__all__ = [
    "AUTO_NATIVE_BF16", "DTYPES", "native_bf16", "resolve_dtype", "CUDA_HINT", "DEVICES", "resolve_device",
    "DEFAULT_CACHE_NAME", "DEFAULT_MODEL", "GGUF_FILENAME", "GGUF_PACKAGE", "MARKER", "ORGANISM_MODEL",
    "PREFIX_CACHE_MIB", "LoadedModel", "LocalBackend", "PrefixStore", "Row", "convert_gguf",
    "default_gguf_path", "default_model_dir", "is_converted", "load_model", "merge_adapter",
    "model_cache_root", "model_info", "ORGANISM_DIR", "ORGANISM_V6_MODEL", "REVISION_DIR", "REVISION_MODEL",
    "RoutedBackend", "open_local", "v6_route", "organism_adapter_path", "organism_model_dir", "prepare", "resolve_model_path",
]
