"""Run strategies on many problems through the one batching path, :meth:`Engine.stream`.

Each problem's strategy is a generator (see :mod:`lase_nb.strategies`). The runner keeps a
window of active problems and posts each step's calls as soon as the step is ready; the engine
sends every call that is waiting at the same time together (the local backend decodes them as
they arrive, API backends run them concurrently), whatever problem or stage it belongs to. A
step may also hold episodes (LASE+MV's chains): each runs on its own, at its own pace, and the
step is answered by their results. Finished problems are reported to ``on_result`` as they
complete. The progress bar counts finished problems and, as they come, the calls answered and
the tokens they wrote (problems of a batched run tend to finish together at the end).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

from tqdm.auto import tqdm

from .engine import Call, Engine
from .errors import ConfigError, LogprobsUnavailable
from .strategies import GATED, Episode, ProblemResult, StrategyConfig, get_strategy
from .types import Generation, Problem


#: A gated run stops once this many replies came without log-probabilities and none with them:
#: the model returns none (a provider that omits them on some replies leaves those answers unsure).
NO_LOGPROBS_STOP = 8


class _LogprobsSeen:
    """Whether a gated run's model returns log-probabilities at all (:data:`NO_LOGPROBS_STOP`)."""

    def __init__(self, gated: bool) -> None:
        self.gated, self.seen, self.missing = gated, False, 0

    def see(self, gen: Generation) -> None:
        if not self.gated or self.seen:
            return
        if gen.tokens:
            self.seen = True
        elif gen.tokens is None and gen.text:
            self.missing += 1
            if self.missing >= NO_LOGPROBS_STOP:
                self.stop(gen)

    def finish(self, gen: Generation | None) -> None:
        """At the run's end: a gated run none of whose replies carried them stops here."""
        if self.gated and not self.seen and self.missing and gen is not None:
            self.stop(gen)

    def stop(self, gen: Generation) -> None:
        raise LogprobsUnavailable(gen.backend, gen.model, f"none of its first {self.missing} "
                                  f"repl{'y' if self.missing == 1 else 'ies'} carried them")


class _Step:
    """An episode waiting for the answers to its current step."""

    def __init__(self, episode: Episode, done: Callable[[ProblemResult], None]) -> None:
        self.episode, self.done = episode, done
        self.got: list[Any] = []
        self.left = 0


class _Episodes:
    """Episodes in flight: their calls go to ``outbox`` (tagged), their answers come back by tag."""

    def __init__(self, on_call: Callable[[Call, Generation], None] | None = None) -> None:
        self.outbox: list[tuple[Any, Call]] = []
        self.on_call = on_call

    def start(self, episode: Episode, done: Callable[[ProblemResult], None]) -> None:
        self._advance(_Step(episode, done), None)

    def take(self) -> list[tuple[Any, Call]]:
        out = list(self.outbox)
        self.outbox.clear()
        return out

    def answer(self, tag: tuple[_Step, int, Call], gen: Generation) -> None:
        step, j, call = tag
        if self.on_call is not None:
            self.on_call(call, gen)
        self._fill(step, j, gen)

    def _fill(self, step: _Step, j: int, value: Any) -> None:
        step.got[j] = value
        step.left -= 1
        if step.left == 0:
            self._advance(step, step.got)

    def _advance(self, step: _Step, got: list[Any] | None) -> None:
        """Send an episode its answers; post its next step, or report its result."""
        while True:
            try:
                items = next(step.episode) if got is None else step.episode.send(got)
            except StopIteration as stop:
                step.done(stop.value)
                return
            if items:
                break
            got = []  # a step without calls: step on at once
        step.got, step.left = [None] * len(items), len(items)
        for j, item in enumerate(items):
            if isinstance(item, Call):
                self.outbox.append(((step, j, item), item))
            else:  # a sub-episode: its result answers this slot
                self.start(item, lambda res, step=step, j=j: self._fill(step, j, res))


def run_problems(strategy: str, problems: Sequence[Problem], engine: Engine,
                 cfg: StrategyConfig | None = None, window: int = 32, progress: bool = True,
                 on_result: Callable[[ProblemResult], None] | None = None,
                 policy: Callable[[Problem, StrategyConfig], Episode] | None = None) -> list[ProblemResult]:
    """Run ``strategy`` on every problem; results come back in the problems' order. ``policy``
    runs an episode of your own under the name ``strategy`` (a control arm, say) instead of the
    registered strategy of that name."""
    cfg = (cfg or StrategyConfig()).validate()
    policy = policy or get_strategy(strategy)
    if window < 1:
        raise ConfigError(f"window must be >= 1 problem in flight, got {window}")
    if len({p.id for p in problems}) != len(problems):
        raise ValueError("problem ids must be unique")
    results: dict[str, ProblemResult] = {}
    queue = list(problems)
    active = 0
    flight = _Episodes()
    bar = tqdm(total=len(problems), desc=strategy, disable=not progress, unit="problem")
    correct = tokens = 0
    calls = written = 0  # calls answered and their completion tokens: they move while problems wait
    logprobs = _LogprobsSeen(strategy in GATED)
    last: Generation | None = None
    shown = time.monotonic()

    def show() -> None:
        if bar.disable:
            return
        done = {"calls": calls, "written": written}
        if results:
            done.update(acc=f"{correct / len(results):.2f}", tok=f"{tokens / len(results):.0f}")
        bar.set_postfix(done, refresh=False)

    def answered(tag: Any, gen: Generation) -> None:
        nonlocal calls, written, shown, last
        logprobs.see(gen)
        last = gen
        calls += 1
        written += gen.completion_tokens
        if bar.disable:
            flight.answer(tag, gen)
            return
        show()
        if time.monotonic() - shown >= bar.mininterval:  # redraw at tqdm's own pace, not per call
            shown = time.monotonic()
            bar.refresh()
        flight.answer(tag, gen)

    def finish(res: ProblemResult) -> None:
        nonlocal active, correct, tokens
        active -= 1
        results[res.problem_id] = res
        correct += res.correct
        tokens += res.prompt_tokens + res.completion_tokens
        show()
        bar.update(1)
        if on_result is not None:
            on_result(res)
        start_more()

    def start_more() -> None:
        nonlocal active
        while queue and active < window:
            active += 1
            flight.start(policy(queue.pop(0), cfg), finish)

    start_more()
    try:
        engine.stream(flight.take, answered)
        logprobs.finish(last)
    finally:
        bar.close()
    if active:  # pragma: no cover - would mean a call was never answered
        raise RuntimeError(f"{active} problems did not finish")
    return [results[p.id] for p in problems]


def run_episode(episode: Episode, engine: Engine) -> tuple[ProblemResult, list[tuple[Call, Generation]]]:
    """Run one episode to its end; returns its result and every (call, generation) it made, in
    the order they were answered."""
    made: list[tuple[Call, Generation]] = []
    out: list[ProblemResult] = []
    flight = _Episodes(on_call=lambda c, g: made.append((c, g)))
    flight.start(episode, out.append)
    engine.stream(flight.take, flight.answer)
    return out[0], made
