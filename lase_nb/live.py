"""One way to set up a live run in a notebook: the backend, the call cache and the strategy
configuration, with the model's own prompt format and the token caps.

Every chapter that calls a model uses :func:`live_config` and :func:`live_engine`, so a chapter
run with ``model="organism"`` sends the zero-shot prompts the organism was trained on, exactly as
``lase-nb run`` and ``data/traces/record.py`` do (:func:`lase_nb.strategies.default_examples`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Sequence

from .strategies import StrategyConfig, default_examples

if TYPE_CHECKING:
    from .traces import Run
    from .types import Problem

__all__ = ["live_config", "live_engine", "live_runs"]


def live_config(backend: str = "local", model: str | None = None, *, tau_lp: float = 0.8, tau_h: float = 0.5,
                seed: int = 0, max_tokens: int | None = None, examples: int | None = None,
                **fields: Any) -> StrategyConfig:
    """The strategy configuration of a live chapter run: the gate's thresholds, the seed, the
    worked examples per prompt (``examples``; None: what the model needs, two for the embedded
    model, none for the organism and API models; a small model behind an API needs two to box
    its answers), and, when ``max_tokens`` is given, the leader's cap (the supporters' cap no
    larger). Other :class:`~lase_nb.strategies.StrategyConfig` fields pass through
    (``full_chain=True``)."""
    n_examples = default_examples(backend, model) if examples is None else int(examples)
    cfg = StrategyConfig(tau_lp=tau_lp, tau_h=tau_h, seed=seed, examples=n_examples, **fields)
    if max_tokens:
        cfg = replace(cfg, max_tokens=max_tokens, supporter_max_tokens=min(max_tokens, cfg.supporter_max_tokens))
    return cfg


def live_engine(backend: str = "local", model: str | None = None, base_url: str | None = None,
                max_batch: int | None = None, concurrency: int | None = None, timeout: float | None = None,
                dtype: str | None = None, device: str | None = None) -> Any:
    """An :class:`~lase_nb.engine.Engine` on the named backend with the default call cache (every
    call durable: a rerun makes no model call). ``max_batch`` applies to the local backend;
    ``concurrency`` (calls in flight) and ``timeout`` (seconds a call may take) to API backends,
    None keeping their defaults (``lase-nb run --concurrency / --timeout``); ``dtype`` to the local
    backend (``float32``, ``bfloat16`` or ``auto``; None keeps its default, ``lase-nb run --dtype``), and
    ``device`` too (``cpu``, ``cuda``, ``cuda:N``, ``mps`` or ``auto``; None: the CPU, ``--device``)."""
    from .backends import make_backend
    from .cache import CallCache
    from .engine import Engine

    extra: dict[str, Any] = {"max_batch": max_batch} if backend == "local" and max_batch else {}
    if backend == "local" and dtype is not None:
        extra["dtype"] = str(dtype)
    if backend == "local" and device is not None:
        extra["device"] = str(device)
    if backend != "local":
        if concurrency is not None:
            extra["concurrency"] = int(concurrency)
        if timeout is not None:
            extra["timeout"] = float(timeout)
    return Engine(make_backend(backend, model, base_url, **extra), CallCache())


def live_runs(strategies: Sequence[str], *, backend: str = "local", model: str | None = None,
              base_url: str | None = None, concurrency: int | None = None, timeout: float | None = None,
              dtype: str | None = None, device: str | None = None, examples: int | None = None, dataset: str = "arith",
              data_path: str | None = None, n_problems: int = 4, seed: int = 0, tau_lp: float = 0.8,
              tau_h: float = 0.5, max_tokens: int | None = None) -> tuple[dict[str, Run], dict[str, Problem]]:
    """Run ``strategies`` now on the same problems (a chapter's ``live=True``; chapters 03 and 04):
    each as it is recorded (:meth:`~lase_nb.strategies.StrategySpec.recording`, so ``"lase"`` runs
    its full chain, replayable at any thresholds), every call through the durable cache. Returns
    the runs by strategy (:func:`lase_nb.runs.run_from_results`) and the problems by id, and prints
    how many calls the model answered and how many the cache did."""
    from dataclasses import asdict

    from .datasets import load_dataset
    from .runner import run_problems
    from .runs import run_from_results
    from .strategies import SPECS

    problems = load_dataset(dataset, data_path, n_problems, seed)
    engine = live_engine(backend, model, base_url, concurrency=concurrency, timeout=timeout, dtype=dtype, device=device)
    cfg = live_config(backend, model, examples=examples, tau_lp=tau_lp, tau_h=tau_h, seed=seed, max_tokens=max_tokens)
    runs = {}
    for s in strategies:
        name, c = SPECS[s].recording(cfg)
        results = run_problems(name, problems, engine, c, progress=False)
        runs[s] = run_from_results(results, problems, {
            "backend": engine.backend.name, "model": engine.backend.model, "dataset": dataset, "n": len(problems),
            "seed": seed, "config": asdict(c)})
    print(f"live: {engine.stats.model_calls} model calls, {engine.stats.cache_hits} answered from the cache")
    return runs, {p.id: p for p in problems}
