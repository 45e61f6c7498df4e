"""``LocalBackend``: the public face of the local backend (requests in, Generations out) and
prompt encoding with message boundaries. Model files live in :mod:`.files`, token choice in
:mod:`.decoding`, batching and the forward pass in :mod:`.scheduler`, the running batch's KV
cache in :mod:`.kv_cache`, the reusable KV caches of earlier prompts in :mod:`.prefix_store`."""

from __future__ import annotations

import bisect
import inspect
import os
from typing import Any, Callable, Sequence

from ...errors import ConfigError
from ...types import Generation, GenParams, Message
from ..base import ResultHook
from .decoding import Row, seed
from .files import DEFAULT_MODEL, load_model, model_info, resolve_dtype, resolve_model_path
from .kv_cache import spliceable
from .scheduler import Scheduler

#: Special tokens that end a chat turn in common chat templates (used when present in the vocab).
_END_OF_TURN = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end|>", "<end_of_turn>", "</s>")


#: What ``--device`` takes: the CPU (the default), a CUDA GPU (``cuda`` is the first, ``cuda:N`` the
#: N-th), Apple's GPU, or ``auto`` (the first GPU torch can use, else the CPU).
DEVICES = ("cpu", "cuda", "cuda:N", "mps", "auto")

#: How to put a CUDA build of torch in place of the CPU pin (docs/your_model.md).
CUDA_HINT = ("install a CUDA build of torch in place of the CPU pin: `make setup TORCH_SPEC=\"torch==2.13.0 "
             "--index-url https://download.pytorch.org/whl/cu126\"` (docs/your_model.md)")


def resolve_device(device: str | None = "cpu") -> str:
    """The torch device a local model runs on: ``cpu`` (also for None), ``cuda`` / ``cuda:N``,
    ``mps``, or for ``auto`` the first of CUDA, MPS and the CPU that this torch can use. A GPU this
    torch cannot reach is one line naming what is missing and the fix (:data:`CUDA_HINT`)."""
    import torch

    name = "cpu" if device is None else str(device).strip().lower()
    if name == "auto":
        if torch.cuda.is_available():
            return "cuda"
        mps = getattr(torch.backends, "mps", None)
        return "mps" if mps is not None and mps.is_available() else "cpu"
    if name == "cpu":
        return name
    if name == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ConfigError("--device mps: this torch cannot reach an Apple GPU (torch.backends.mps.is_available() "
                              "is False); use --device cpu")
        return name
    if name == "cuda" or (name.startswith("cuda:") and name[5:].isdigit()):
        if not torch.cuda.is_available():
            build = f"torch {torch.__version__}" + (", a CPU-only build" if torch.version.cuda is None else "")
            raise ConfigError(f"--device {name}: this torch sees no CUDA GPU ({build}); {CUDA_HINT}, or use --device cpu")
        count = torch.cuda.device_count()
        if name != "cuda" and int(name[5:]) >= count:
            raise ConfigError(f"--device {name}: this machine has {count} CUDA GPU{'' if count == 1 else 's'} "
                              f"(cuda:0 to cuda:{count - 1})")
        return name
    raise ConfigError(f"unknown device {device!r}; use one of {', '.join(DEVICES)}")


def cpu_threads(threads: int | None = None) -> int:
    """The CPU threads torch gets: ``threads`` when given, else ``OMP_NUM_THREADS`` when set (the
    usual way to share a machine), else every core."""
    if threads is not None:
        if threads < 1:
            raise ConfigError(f"threads must be >= 1 (got {threads})")
        return int(threads)
    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            n = 0
        if n < 1:
            raise ConfigError(f"OMP_NUM_THREADS={env!r} is not a positive number of threads; "
                              f"set it to one (or unset it) or pass --threads N")
        return n
    return os.cpu_count() or 1


class LocalBackend(Scheduler):
    """A local transformers chat model; returns exact token logprobs, top-k and entropies.

    ``model`` is ``"smollm2-135m"`` (the embedded default), a local transformers model folder
    with a chat template, or a ``.gguf`` file. ``max_batch`` bounds how many prompts decode
    together; ``threads`` sets torch's CPU threads (default: ``OMP_NUM_THREADS`` when set, else all
    cores; see :func:`cpu_threads`). ``dtype`` is the weights' number format: ``float32``,
    ``bfloat16`` (refused on a CPU without native support) or ``auto`` (see
    :func:`~lase_nb.backends.local.files.resolve_dtype`); the call cache keys bfloat16 calls apart.
    ``device`` is where the weights, the KV caches and every forward pass live (:func:`resolve_device`:
    ``cpu``, ``cuda``, ``cuda:N``, ``mps`` or ``auto``); token statistics and sampling are read on
    the CPU whatever it is (:mod:`.decoding`).
    """

    name = "local"
    supports_logprobs = True

    def __init__(self, model: str = DEFAULT_MODEL, device: str = "cpu", max_batch: int = 8,
                 threads: int | None = None, dtype: str = "auto", *, emulated_ok: bool = False) -> None:
        if max_batch < 1:
            raise ConfigError(f"max_batch must be >= 1 (got {max_batch})")
        n_threads = cpu_threads(threads)
        import torch

        torch.set_num_threads(n_threads)
        self.model = str(model)
        self.device = resolve_device(device)
        self.max_batch = max_batch
        #: the weights' number format, resolved (``auto`` is never left here)
        self.dtype = resolve_dtype(dtype, self.device, emulated_ok=emulated_ok)
        self._loaded = load_model(resolve_model_path(self.model), self.device, dtype=self.dtype)
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
        #: continuous batching: decoding steps, rows decoded over them, seconds prefilling and decoding
        self.batch_stats = {"steps": 0, "row_steps": 0, "prefill_s": 0.0, "decode_s": 0.0}
        self._splice = self._probe_cache()

    def __repr__(self) -> str:
        return (f"LocalBackend(model={self.model!r}, path='{self.path}', max_batch={self.max_batch}, "
                f"dtype={self.dtype!r}, device={self.device!r})")

    def model_files(self) -> dict[str, Any]:
        """What a manifest says about the weights: the folder and, for the organism, its adapter."""
        return model_info(self.path)

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

        def done(r: Row) -> None:
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
                self._run_lockstep(todo, done)
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

        def take() -> list[Row]:
            ready: list[Row] = []
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

        def done(r: Row) -> None:
            on_result(tags.pop(r.index), self._to_generation(r))

        with self._loaded.lock:
            if self._splice:
                self._run_continuous([], done, take)
                return
            while todo := take():  # lockstep fallback
                self._run_lockstep(todo, done)

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
        return spliceable(cache)

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

    def _make_row(self, index: int, messages: Sequence[Message], params: GenParams) -> Row:
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
        row = Row(index, prompt, params, cuts=cuts)
        if params.temperature > 0:
            import torch

            row.generator = torch.Generator(device="cpu")
            row.generator.manual_seed(seed(messages, params))
        return row
