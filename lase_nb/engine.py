"""The call primitive every strategy uses: a batch of ready calls -> Generations, through the cache.

Strategies never talk to a backend directly. They hand the engine all calls that are ready at
the same time; the engine answers cache hits, sends the misses together with
``backend.generate_many`` (the local backend batches them, API backends run them concurrently),
stores each result as soon as its batch returns, and counts what it did.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Sequence

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
