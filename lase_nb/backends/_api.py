"""What the API backends (OpenAI, Gemini) share: which HTTP statuses are retried, one way to
say what failed without the API key, and :class:`APIBackend`, the one path a call takes (paced
by :class:`~lase_nb.backends._concurrency.Pacer`, its failure described once).

**Retried statuses.** 408 (request timeout), 409 (conflict: Google's ABORTED, a concurrency
clash worth retrying), 429 (rate limited) and every 5xx (the server's fault). This is the set the
openai SDK retries by itself, so the Gemini backend passes the same set to google-genai's retry
options: both backends retry the same failures, and the error text says so.
"""

from __future__ import annotations

import sys
import threading
from typing import Callable, Sequence

from ..errors import BackendError
from ..types import ENTROPY_NONE, ENTROPY_TOPK_RESIDUAL, Generation, GenParams, Message, TokenLogprob
from ._concurrency import Pacer, check_call_limits, run_ordered
from .base import ResultHook, public_url

__all__ = ["RETRYABLE", "is_retryable", "short", "scrub", "retries_phrase", "status_failure", "APIBackend"]

RETRYABLE: frozenset[int] = frozenset({408, 409, 429} | set(range(500, 600)))


def is_retryable(code: int) -> bool:
    """Whether an HTTP status is retried (see the module)."""
    return int(code) in RETRYABLE


def short(s: object, n: int = 300) -> str:
    """A message on one line, at most ``n`` characters."""
    text = " ".join(str(s).split())
    return text if len(text) <= n else text[: n - 3] + "..."


def scrub(msg: str, key: str | None) -> str:
    """``msg`` with the API key replaced by ``***`` (keys shorter than 4 characters are not keys)."""
    return msg.replace(key, "***") if key and len(key) >= 4 else msg


def retries_phrase(n: int) -> str:
    """" after 2 retries" (empty when none were allowed)."""
    return f" after {n} {'retry' if n == 1 else 'retries'}" if n else ""


def status_failure(code: int, message: str, max_retries: int, status: str | None = None) -> str:
    """An HTTP error status in words: rate limited or the code, whether it was retried, the message."""
    kind = "rate limited (HTTP 429)" if code == 429 else f"HTTP {code}"
    retried = retries_phrase(max_retries) if is_retryable(code) else ""
    return f"{kind}{retried}: {status + ': ' if status else ''}{short(message)}"


#: What went wrong with a call, in :meth:`APIBackend._classify`'s words.
TIMEOUT, CONNECTION, STATUS, MALFORMED = "timeout", "connection", "status", "malformed"


class APIBackend:
    """What an API backend shares: its limits, pacing, ``generate_many`` and the error path.

    A subclass sets ``name`` and ``default_host``, calls :meth:`_setup`, sends each call through
    :meth:`_call` and says in :meth:`_classify` what kind of failure an SDK exception is.
    ``concurrency`` bounds the calls in flight (lowered by itself after timeouts, see
    :class:`~lase_nb.backends._concurrency.Pacer`); ``timeout`` is the seconds one call may take
    at the server on its own (an attempt sent with ``k`` others may take ``k + 1`` times that: the
    calls that may be queued before it); ``max_retries`` the SDK's retries per call.
    """

    name = ""
    default_host = ""
    model: str
    base_url: str | None
    supports_logprobs = True

    def _setup(self, model: str, base_url: str | None, concurrency: int, timeout: float, max_retries: int) -> None:
        check_call_limits(f"{type(self).__name__}", model, concurrency, timeout, max_retries)
        self.model = model
        self.base_url = base_url
        self.concurrency = int(concurrency)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.pacer = Pacer(self.concurrency, self.timeout)
        self._lowered = False
        self._batch = threading.local()  # .size: the calls of the generate_many this thread works for

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, "
                f"concurrency={self.concurrency}, timeout={self.timeout:g}, max_retries={self.max_retries})")

    def generate(self, messages: Sequence[Message], params: GenParams) -> Generation:  # pragma: no cover
        raise NotImplementedError

    def generate_many(self, requests: Sequence[tuple[Sequence[Message], GenParams]],
                      on_result: ResultHook | None = None) -> list[Generation]:
        """Run calls concurrently (at most ``concurrency`` in flight); results in request order."""
        def one(r: tuple[Sequence[Message], GenParams]) -> Generation:
            self._batch.size = len(requests)
            try:
                return self.generate(r[0], r[1])
            finally:
                self._batch.size = 1

        return run_ordered(one, requests, self.concurrency, label=f"{self.name} call", on_result=on_result)

    # -- the one call path ----------------------------------------------------------------------
    def _call(self, send: Callable[[float], Generation]) -> Generation:
        """``send(deadline)`` under the pacer; a timeout with other calls in flight lowers the
        concurrency (said once on stderr) and sends the call again; any other failure, or a
        timeout of a call sent alone, becomes a :class:`BackendError` naming the fault and the fix."""
        while True:
            with self.pacer.slot(getattr(self._batch, "size", 1)) as (deadline, share):
                try:
                    return send(deadline)
                except BackendError:
                    raise
                except Exception as e:
                    kind, code, message = self._classify(e)
                    if kind == TIMEOUT and self._lower(share, deadline):
                        continue
                    raise BackendError(self._describe(e, kind, code, message, deadline)) from e

    def _lower(self, share: int, deadline: float) -> bool:
        """Lower the concurrency after a timeout; say so the first time. False when it cannot go lower."""
        new = self.pacer.lower(share)
        if new is None:
            return False
        if not self._lowered:
            self._lowered = True
            print(f"lase-nb: {self._where()}: a call got no reply within {deadline:g} s with up to {share} "
                  f"calls in flight; sending at most {new} at once from now on (start there with "
                  f"--concurrency {new}, or give each call longer with --timeout)", file=sys.stderr, flush=True)
        return True

    # -- errors ---------------------------------------------------------------------------------
    def _classify(self, e: BaseException) -> tuple[str | None, int, str]:  # pragma: no cover
        """``(kind, HTTP status, server message)`` of an SDK exception; kind one of TIMEOUT,
        CONNECTION, STATUS, MALFORMED or None (anything else)."""
        raise NotImplementedError

    def _api_key(self) -> str | None:  # pragma: no cover
        """The key in use, only to scrub it from messages."""
        raise NotImplementedError

    def _where(self) -> str:
        return f"{self.name} model {self.model!r} at {public_url(self.base_url) or self.default_host}"

    def _describe(self, e: BaseException, kind: str | None, code: int, message: str, deadline: float) -> str:
        """A one-line account of what failed and what to change, without the API key."""
        after = retries_phrase(self.max_retries)
        if kind == TIMEOUT:  # a call alone (one sent with others lowers the limit and goes again)
            lowered = f", --concurrency {self.concurrency} lowered to {self.pacer.limit}" \
                if self.pacer.limit < self.concurrency else ""
            what = (f"timed out (no reply within {deadline:g} s{lowered}){after}; a reply this slow needs a "
                    f"longer --timeout (seconds a call, now {self.timeout:g}); a server that works on one "
                    f"request at a time, --concurrency 1")
        elif kind == CONNECTION:
            what = f"connection dropped or refused{after}" + (f": {message}" if message else "")
        elif kind == STATUS:
            what = status_failure(code, message, self.max_retries)
            if code == 429:
                what += f"; lower --concurrency (now {self.pacer.limit})"
        elif kind == MALFORMED:
            what = f"malformed response (invalid JSON or fields): {message}"
        else:
            what = f"{type(e).__name__}: {short(str(e))}"
        return scrub(f"{self._where()}: {what}", self._api_key())

    # -- the reply ------------------------------------------------------------------------------
    def _generation(self, text: str, tokens: list[TokenLogprob] | None, prompt_tokens: int,
                    completion_tokens: int, finish_reason: str, latency: float,
                    cached_tokens: int | None = None) -> Generation:
        """A :class:`Generation` of this backend (entropy estimated from the top-k when tokens came back;
        ``cached_tokens``: the prompt tokens the provider reports as read from its prompt cache)."""
        return Generation(text=text, tokens=tokens, prompt_tokens=prompt_tokens,
                          completion_tokens=completion_tokens, finish_reason=finish_reason, latency_s=latency,
                          entropy_estimator=ENTROPY_TOPK_RESIDUAL if tokens is not None else ENTROPY_NONE,
                          backend=self.name, model=self.model, cached_tokens=cached_tokens)
