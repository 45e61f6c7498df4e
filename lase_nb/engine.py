"""The call primitive every strategy uses: calls -> Generations, through the cache.

Strategies never talk to a backend directly. The runner hands the engine calls as they become
ready (:meth:`Engine.stream`, the one batching path); the engine answers cache hits, sends the
misses that wait at the same time together (to ``backend.generate_stream`` where the backend
decodes requests as they arrive, the local backend; otherwise to ``backend.generate_many``, which
API backends run concurrently), stores each result as soon as it is made, and counts what it
did. :meth:`Engine.run` answers one list of calls the same way.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .backends.base import Backend
from .cache import CallCache, call_key
from .types import Generation, GenParams, Message


@dataclass
class Call:
    """One model call a strategy wants made, with what the accounting needs.

    ``reads`` lists the other agents whose messages appear in this call's context (one entry
    per included message), so context inclusions can be counted from real transcripts.
    """

    role: str
    stage: int
    messages: list[Message]
    params: GenParams
    agent: str = "leader"
    reads: tuple[str, ...] = ()


@dataclass
class EngineStats:
    requested: int = 0
    cache_hits: int = 0
    model_calls: int = 0
    batches: int = 0


@dataclass
class Engine:
    """Answers batches of Calls from the cache or the backend."""

    backend: Backend
    cache: CallCache | None = None
    stats: EngineStats = field(default_factory=EngineStats)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def key(self, messages: Sequence[Message], params: GenParams, call: Call | None = None) -> str:
        """The cache key of a call: the model named is the one that answers it (a backend that routes
        calls by role, the organism v6, names the model of ``call``'s role and stage)."""
        model = self.backend.model
        if self.routes_calls and call is not None:
            model = self.backend.model_for(call.role, call.stage)  # type: ignore[attr-defined]
        return call_key(self.backend.name, model, messages, params, getattr(self.backend, "dtype", None))

    @property
    def routes_calls(self) -> bool:
        """Whether the backend routes each call by its role and stage (it then gets both with the call)."""
        return bool(getattr(self.backend, "routes_calls", False))

    def run(self, calls: Sequence[Call],
            on_result: Callable[[int, Generation], None] | None = None) -> list[Generation]:
        """Results for ``calls`` in order: :meth:`stream` with every call ready at once;
        ``on_result(i, gen)`` (a progress bar, say) hears of each as it is answered."""
        results: list[Generation | None] = [None] * len(calls)
        todo = list(enumerate(calls))

        def more() -> list[tuple[int, Call]]:
            out = list(todo)
            todo.clear()
            return out

        def answered(i: int, gen: Generation) -> None:
            results[i] = gen
            if on_result is not None:
                on_result(i, gen)

        self.stream(more, answered)
        return results  # type: ignore[return-value]

    def stream(self, more: Callable[[], Sequence[tuple[Any, Call]]],
               on_result: Callable[[Any, Generation], None]) -> None:
        """Answer calls that arrive over time, through the cache: the one batching path.

        ``more()`` returns new ``(tag, call)`` pairs (or none); ``on_result(tag, gen)`` gets each
        answer and may make ``more()`` return new calls. Cache hits are answered at once;
        identical calls in flight together are made once; each result is stored as soon as it
        is made. Misses go to ``backend.generate_stream`` where the backend has it (the local
        backend: it decodes calls as they come, continuous batching); otherwise every miss that
        is waiting goes to one ``backend.generate_many`` (API backends run them concurrently),
        and the calls their answers bring make the next batch. Returns when ``more()`` is empty
        and every call is answered."""
        hits: deque[tuple[Any, Generation]] = deque()
        todo: list[tuple] = []  # (key, messages, params[, role, stage] for a backend that routes calls)
        waiting: dict[str, tuple[Call, list[Any]]] = {}  # key -> (call, tags waiting for it)

        def take_new() -> None:
            for tag, c in more():
                self.stats.requested += 1
                k = self.key(c.messages, c.params, c)
                gen = None
                if self.cache is not None:
                    gen = self.cache.lookup(k, f"{c.role} call (stage {c.stage}, sample {c.params.sample})")
                if gen is not None:
                    self.stats.cache_hits += 1
                    hits.append((tag, gen))
                elif k in waiting:
                    waiting[k][1].append(tag)
                else:
                    waiting[k] = (c, [tag])
                    todo.append((k, c.messages, c.params, c.role, c.stage) if self.routes_calls
                                else (k, c.messages, c.params))

        def requests() -> list[tuple]:
            while True:
                take_new()
                if not hits:
                    break
                while hits:  # answering a hit may bring the strategy's next calls
                    on_result(*hits.popleft())
            out = list(todo)
            todo.clear()
            return out

        def store(k: str, gen: Generation) -> None:  # may run in a backend's worker thread
            c = waiting[k][0]
            if self.cache is not None:
                self.cache.put(k, self.backend.name, self.backend.model, c.messages, c.params, gen)
            with self._lock:
                self.stats.model_calls += 1

        def deliver(k: str, gen: Generation) -> None:
            for tag in waiting.pop(k)[1]:
                on_result(tag, gen)

        batch = requests()
        if not batch:
            return
        if callable(getattr(self.backend, "generate_stream", None)):
            pending = [batch]

            def finished(k: str, gen: Generation) -> None:
                store(k, gen)
                deliver(k, gen)

            self.stats.batches += 1
            self.backend.generate_stream(lambda: pending.pop() if pending else requests(),  # type: ignore[attr-defined]
                                         finished)
            return
        while batch:
            self.stats.batches += 1
            gens = self.backend.generate_many([req[1:] for req in batch],
                                              on_result=lambda j, gen: store(batch[j][0], gen))
            for req, gen in zip(batch, gens):
                deliver(req[0], gen)
            batch = requests()
