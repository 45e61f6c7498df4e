"""Step many problems' strategies together so calls that are ready at the same time go together.

Each problem's strategy is a generator (see :mod:`lase_nb.strategies`). The runner keeps a
window of active problems, collects every call they are waiting on, sends them to the engine in
one batch (the local backend batches them, API backends run them concurrently), and feeds the
results back. Finished problems are reported to ``on_result`` as they complete.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from tqdm.auto import tqdm

from .engine import Call, Engine
from .errors import ConfigError
from .strategies import ProblemResult, StrategyConfig, get_strategy
from .types import Problem


def run_problems(strategy: str, problems: Sequence[Problem], engine: Engine,
                 cfg: StrategyConfig | None = None, window: int = 32, progress: bool = True,
                 on_result: Callable[[ProblemResult], None] | None = None) -> list[ProblemResult]:
    """Run ``strategy`` on every problem; results come back in the problems' order."""
    cfg = (cfg or StrategyConfig()).validate()
    policy = get_strategy(strategy)
    if window < 1:
        raise ConfigError(f"window must be >= 1 problem in flight, got {window}")
    if len({p.id for p in problems}) != len(problems):
        raise ValueError("problem ids must be unique")
    results: dict[str, ProblemResult] = {}
    queue = list(problems)
    active: dict[str, tuple] = {}  # id -> (generator, pending calls)
    bar = tqdm(total=len(problems), desc=strategy, disable=not progress, unit="problem")
    correct = tokens = 0

    def start_more() -> None:
        while queue and len(active) < window:
            p = queue.pop(0)
            gen = policy(p, cfg)
            active[p.id] = (gen, next(gen))

    def finish(pid: str, res: ProblemResult) -> None:
        nonlocal correct, tokens
        results[pid] = res
        correct += res.correct
        tokens += res.prompt_tokens + res.completion_tokens
        bar.update(1)
        bar.set_postfix(acc=f"{correct / len(results):.2f}",
                        tok=f"{tokens / len(results):.0f}", refresh=False)
        if on_result is not None:
            on_result(res)

    if callable(getattr(engine.backend, "generate_stream", None)):
        _stream(engine, active, queue, window, policy, cfg, finish)
        bar.close()
        return [results[p.id] for p in problems]

    start_more()
    while active:
        ids = list(active)
        batch = [c for i in ids for c in active[i][1]]
        outs = engine.run(batch)
        pos = 0
        for i in ids:
            gen, pending = active[i]
            chunk, pos = outs[pos:pos + len(pending)], pos + len(pending)
            try:
                active[i] = (gen, gen.send(chunk))
            except StopIteration as stop:
                del active[i]
                finish(i, stop.value)
        start_more()
    bar.close()
    return [results[p.id] for p in problems]


def _stream(engine: Engine, active: dict[str, tuple], queue: list[Problem], window: int,
            policy: Callable, cfg: StrategyConfig, finish: Callable[[str, ProblemResult], None]) -> None:
    """Run the problems with :meth:`Engine.stream`: each problem's next calls are sent as soon
    as its previous ones are answered, up to ``window`` problems in flight."""
    outbox: list[tuple[Any, Call]] = []
    answers: dict[str, list] = {}

    def post(pid: str, calls: list[Call]) -> None:
        if not calls:  # a strategy step without calls: step on at once
            advance(pid, [])
            return
        answers[pid] = [None] * len(calls)
        outbox.extend(((pid, j), c) for j, c in enumerate(calls))

    def advance(pid: str, got: list) -> None:
        """Send a problem's answers to its strategy; post its next calls or finish it."""
        try:
            calls = active[pid][0].send(got)
        except StopIteration as stop:
            del active[pid]
            finish(pid, stop.value)
            start_more()
            return
        post(pid, calls)

    def start_more() -> None:
        while queue and len(active) < window:
            p = queue.pop(0)
            gen = policy(p, cfg)
            active[p.id] = (gen, None)
            post(p.id, next(gen))

    def more() -> list[tuple[Any, Call]]:
        out = list(outbox)
        outbox.clear()
        return out

    def answered(tag: tuple[str, int], gen: Any) -> None:
        pid, j = tag
        got = answers[pid]
        got[j] = gen
        if any(g is None for g in got):
            return
        del answers[pid]
        advance(pid, got)

    start_more()
    engine.stream(more, answered)
    if active:  # pragma: no cover - would mean a call was never answered
        raise RuntimeError(f"{len(active)} problems did not finish")
