"""Run blocking calls concurrently with a limit, keeping the input order (used by the API backends)."""

from __future__ import annotations

from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Callable, NoReturn, Sequence, TypeVar

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
