"""The call primitive every strategy uses: a batch of ready calls -> Generations, through the cache.

Strategies never talk to a backend directly. They hand the engine all calls that are ready at
the same time; the engine answers cache hits, sends the misses together with
``backend.generate_many`` (the local backend batches them, API backends run them concurrently),
stores each result as soon as its batch returns, and counts what it did. With a backend that
decodes requests as they arrive (``generate_stream``: the local backend), :meth:`Engine.stream`
feeds it calls over time instead of in rounds.
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

    def key(self, messages: Sequence[Message], params: GenParams) -> str:
        return call_key(self.backend.name, self.backend.model, messages, params)

    def run(self, calls: Sequence[Call]) -> list[Generation]:
        """Results for ``calls`` in order; misses go to the backend in one ``generate_many``."""
        self.stats.requested += len(calls)
        results: list[Generation | None] = [None] * len(calls)
        misses: list[int] = []
        keys = [self.key(c.messages, c.params) for c in calls]
        for i, (c, k) in enumerate(zip(calls, keys)):
            if self.cache is not None:
                results[i] = self.cache.lookup(k, f"{c.role} call (stage {c.stage}, sample {c.params.sample})")
            if results[i] is None:
                misses.append(i)
        self.stats.cache_hits += len(calls) - len(misses)
        # identical requests in one batch are made once
        unique: dict[str, int] = {}
        for i in misses:
            unique.setdefault(keys[i], i)
        todo = list(unique.values())
        if todo:
            def store(j: int, gen: Generation) -> None:  # runs as each call finishes
                i = todo[j]
                if self.cache is not None:
                    self.cache.put(keys[i], self.backend.name, self.backend.model,
                                   calls[i].messages, calls[i].params, gen)
                results[i] = gen
                with self._lock:
                    self.stats.model_calls += 1

            self.backend.generate_many([(calls[i].messages, calls[i].params) for i in todo], on_result=store)
            self.stats.batches += 1
            for i in misses:
                if results[i] is None:
                    results[i] = results[unique[keys[i]]]
        return results  # type: ignore[return-value]

    def stream(self, more: Callable[[], Sequence[tuple[Any, Call]]],
               on_result: Callable[[Any, Generation], None]) -> None:
        """Answer calls that arrive over time, through the cache, with continuous batching.

        ``more()`` returns new ``(tag, call)`` pairs (or none); ``on_result(tag, gen)`` gets each
        answer and may make ``more()`` return new calls. Cache hits are answered at once;
        identical calls in flight together are made once; misses go to
        ``backend.generate_stream``, which decodes them as they come. Returns when ``more()`` is
        empty and every call is answered. Needs a backend with ``generate_stream``."""
        hits: deque[tuple[Any, Generation]] = deque()
        todo: list[tuple[str, list[Message], GenParams]] = []
        waiting: dict[str, tuple[Call, list[Any]]] = {}  # key -> (call, tags waiting for it)

        def take_new() -> None:
            for tag, c in more():
                self.stats.requested += 1
                k = self.key(c.messages, c.params)
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
                    todo.append((k, c.messages, c.params))

        def requests() -> list[tuple[str, list[Message], GenParams]]:
            while True:
                take_new()
                if not hits:
                    break
                while hits:  # answering a hit may bring the strategy's next calls
                    on_result(*hits.popleft())
            out = list(todo)
            todo.clear()
            return out

        def finished(k: str, gen: Generation) -> None:
            c, tags = waiting.pop(k)
            if self.cache is not None:
                self.cache.put(k, self.backend.name, self.backend.model, c.messages, c.params, gen)
            self.stats.model_calls += 1
            for tag in tags:
                on_result(tag, gen)

        first = requests()
        if not first:
            return
        pending = [first]

        def more_requests() -> list[tuple[str, list[Message], GenParams]]:
            return pending.pop() if pending else requests()

        self.stats.batches += 1
        self.backend.generate_stream(more_requests, finished)  # type: ignore[attr-defined]
