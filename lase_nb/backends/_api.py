"""What the API backends (OpenAI, Gemini) share: which HTTP statuses are retried, and one way to
say what failed without the API key.

**Retried statuses.** 408 (request timeout), 409 (conflict: Google's ABORTED, a concurrency
clash worth retrying), 429 (rate limited) and every 5xx (the server's fault). This is the set the
openai SDK retries by itself, so the Gemini backend passes the same set to google-genai's retry
options: both backends retry the same failures, and the error text says so.
"""

from __future__ import annotations

__all__ = ["RETRYABLE", "is_retryable", "short", "scrub", "retries_phrase", "status_failure"]

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
