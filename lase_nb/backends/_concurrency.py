"""Run blocking calls concurrently with a limit, keeping the input order, and pace the calls in
flight to one server (used by the API backends)."""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Callable, Iterator, NoReturn, Sequence, TypeVar

from ..errors import BackendError, ConfigError, LaseError

T = TypeVar("T")
R = TypeVar("R")


def run_ordered(fn: Callable[[T], R], items: Sequence[T], limit: int, *, label: str = "call",
                on_result: Callable[[int, R], None] | None = None) -> list[R]:
    """``[fn(x) for x in items]`` with at most ``limit`` calls in flight; results in input order.

    ``on_result(i, result)`` runs in the worker as soon as call ``i`` returns (a durable cache
    stores it there, so a later failure or interruption loses no finished call).

    If a call raises, calls not yet started are cancelled, the ones in flight are waited for, and
    the first failure (by input position) is raised: a :class:`LaseError` as it is (with the call's
    position added for a :class:`BackendError`), anything else wrapped in :class:`BackendError`.
    The other calls' results are then not returned, but ``on_result`` has seen each of them.
    """

    def one(ix: tuple[int, T]) -> R:
        r = fn(ix[1])
        if on_result is not None:
            on_result(ix[0], r)
        return r

    items = list(enumerate(items))
    if not items:
        return []
    if limit < 1:
        raise ValueError(f"concurrency limit must be >= 1, got {limit}")
    if limit == 1 or len(items) == 1:
        out: list[R] = []
        for i, x in enumerate(items):
            try:
                out.append(one(x))
            except Exception as e:
                _reraise(e, i, len(items), label)
        return out

    pool = ThreadPoolExecutor(max_workers=min(limit, len(items)), thread_name_prefix=f"lase-{label}")
    try:
        futures: list[Future[R]] = [pool.submit(one, x) for x in items]
        done, pending = wait(futures, return_when=FIRST_EXCEPTION)
        if pending:  # a call failed: start nothing new, let the calls in flight finish
            for f in pending:
                f.cancel()
            wait(futures)
        for i, f in enumerate(futures):
            if not f.cancelled() and f.exception() is not None:
                e = f.exception()
                assert isinstance(e, Exception)
                _reraise(e, i, len(items), label)
        return [f.result() for f in futures]
    finally:
        # Also on KeyboardInterrupt: queued calls are dropped, only those in flight are awaited.
        pool.shutdown(wait=True, cancel_futures=True)


def _reraise(e: Exception, i: int, n: int, label: str) -> NoReturn:
    """Raise ``e`` (a LaseError, position added to a BackendError) or a BackendError wrapping it."""
    where = label if n == 1 else f"{label} {i + 1} of {n}"
    if isinstance(e, BackendError) and n > 1:
        raise BackendError(f"{where} failed: {e}") from e
    if isinstance(e, LaseError):
        raise e
    raise BackendError(f"{where} failed: {type(e).__name__}: {e}") from e


def check_call_limits(backend: str, model: str, concurrency: int, timeout: float, max_retries: int) -> None:
    """The API backends' shared argument checks, each failure a ConfigError naming the fix."""
    if not model:
        raise ConfigError(f"{backend} needs a model name (--model)")
    if concurrency < 1:
        raise ConfigError(f"concurrency must be >= 1, got {concurrency}")
    if not timeout or timeout <= 0:
        raise ConfigError(f"timeout must be > 0 seconds, got {timeout}")
    if max_retries < 0:
        raise ConfigError(f"max_retries must be >= 0, got {max_retries}")


class Pacer:
    """The calls in flight to one server, how many may be, and how long each attempt may wait.

    A server may work on fewer requests at once than we send (llama.cpp's server works on one and
    queues the rest), so an attempt may wait for every other call sent with it before its own turn.
    :meth:`slot` is told how many calls are sent together (a batch of ``generate_many``, else one)
    and gives each attempt ``timeout`` seconds for each call that may be queued before it or with
    it: ``min(limit, max(calls in flight, calls sent together)) x timeout``. Time spent in the
    server's queue then burns no attempt, and no request is given up while the server is still
    working through the ones before it. (The calls in flight when an attempt is sent would be too
    tight a bound: calls sent at the same moment reach the server in any order.)

    When a call sent with others times out all the same, :meth:`lower` halves the limit (never
    below one); the caller sends the call again under the new limit.
    """

    def __init__(self, limit: int, timeout: float) -> None:
        self.limit = int(limit)
        self.timeout = float(timeout)
        self._in_flight = 0
        self._cond = threading.Condition()

    @property
    def in_flight(self) -> int:
        """Calls sent and not yet answered."""
        with self._cond:
            return self._in_flight

    @contextlib.contextmanager
    def slot(self, together: int = 1) -> Iterator[tuple[float, int]]:
        """Wait for room under the limit; yield (this attempt's deadline in seconds, how many calls'
        time it holds). ``together``: the calls sent along with this one."""
        with self._cond:
            while self._in_flight >= self.limit:
                self._cond.wait()
            self._in_flight += 1
            share = min(self.limit, max(self._in_flight, together))
        try:
            yield self.timeout * share, share
        finally:
            with self._cond:
                self._in_flight -= 1
                self._cond.notify_all()

    def lower(self, share: int) -> int | None:
        """After an attempt holding ``share`` calls' time timed out: the new limit (half of it), or
        None when it was alone (lowering cannot help; the call itself is too slow)."""
        if share <= 1:
            return None
        with self._cond:
            self.limit = max(1, min(self.limit, share // 2))
            self._cond.notify_all()
            return self.limit
