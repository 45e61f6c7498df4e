"""Gemini through the ``google-genai`` SDK, with token logprobs (``response_logprobs``).

Messages: ``system`` messages become ``system_instruction`` (joined by blank lines), ``user``
stays ``user`` and ``assistant`` becomes ``model``. Sampling parameters map to
``GenerateContentConfig`` (``temperature``, ``top_p``, ``max_output_tokens``, ``stop_sequences``,
``seed`` = sample index when temperature > 0, ``response_logprobs``, ``logprobs`` = top-k capped
at 20).

Retries: the SDK's own (``HttpRetryOptions``: ``max_retries + 1`` attempts, exponential backoff
with jitter starting at ``retry_initial_delay``) for the statuses of ``backends._api.RETRYABLE`` (408, 409,
429, 5xx: the set the openai SDK retries), timeouts and refused
connections. A connection dropped mid-request (which the SDK does not retry) is retried here
with the same bound. Each attempt's timeout grows with the calls in flight and a timeout lowers
the concurrency (:class:`~lase_nb.backends._api.APIBackend`, shared with OpenAI). What still
fails becomes a :class:`~lase_nb.errors.BackendError` naming the fault. The SDK does not read
``Retry-After``; its backoff stands in.

API key: the ``api_key`` argument, else env ``GEMINI_API_KEY``, else ``GOOGLE_API_KEY``; never
in ``repr()`` or in error messages.

Mapping: ``logprobs_result.chosen_candidates`` gives the tokens and their log-probabilities (a
missing ``logProbability`` is proto3's omitted 0.0), ``top_candidates`` the alternatives; offsets
accumulate the token lengths (realigned to the text when the tokens do not concatenate to it).
``finish_reason`` is normalised: ``STOP`` -> ``stop``, ``MAX_TOKENS`` -> ``length``, others
lower-cased (``safety``...); a blocked prompt gives ``blocked:<reason>`` and empty text.
``completion_tokens`` counts ``candidates_token_count`` plus ``thoughts_token_count`` (both are
billed output).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Sequence

from ..errors import BackendError, ConfigError, MissingAPIKey
from ..types import Generation, GenParams, Message, TokenLogprob
from ._api import CONNECTION, MALFORMED, RETRYABLE, STATUS, TIMEOUT, APIBackend, short

#: Largest ``logprobs`` (top-k) requested from Gemini.
MAX_TOP_LOGPROBS = 20
_FINISH = {"STOP": "stop", "MAX_TOKENS": "length"}


def _http_exc(*names: str) -> tuple[type[BaseException], ...]:
    """The named exception classes of whichever of httpx2 / httpx is installed."""
    out: list[type[BaseException]] = []
    for mod_name in ("httpx2", "httpx"):
        try:
            mod = __import__(mod_name)
        except ImportError:
            continue
        out.extend(getattr(mod, n) for n in names if hasattr(mod, n))
    return tuple(out)


_TIMEOUT_EXC = _http_exc("TimeoutException")
#: Transport failures the SDK does not retry itself (the server closed the connection mid-request).
_DROP_EXC = _http_exc("RemoteProtocolError", "ReadError", "WriteError")
_CONN_EXC = _http_exc("TransportError")


def resolve_api_key(api_key: str | None) -> str:
    """``api_key``, else env GEMINI_API_KEY, else GOOGLE_API_KEY, else :class:`MissingAPIKey`."""
    if api_key:
        return api_key
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        key = os.environ.get(var, "").strip()
        if key:
            return key
    raise MissingAPIKey("gemini", "GEMINI_API_KEY")


def align_offsets(tokens: Sequence[str], text: str) -> list[int]:
    """Character offsets of tokens in ``text`` by accumulating lengths, re-synchronising on mismatch."""
    offs: list[int] = []
    cur = 0
    for t in tokens:
        if t and not text.startswith(t, cur):
            j = text.find(t, cur)
            if 0 <= j <= cur + 8:
                cur = j
        offs.append(min(cur, len(text)))
        cur += len(t)
    return offs


def _enum_value(x: Any) -> str:
    return str(getattr(x, "value", x) or "")


class GeminiBackend(APIBackend):
    """``models.generate_content`` through ``google-genai`` with token logprobs.

    ``concurrency`` bounds calls in flight in :meth:`generate_many`; ``timeout`` is the seconds one
    call may take at the server on its own (an attempt sent with ``k`` others may take ``k + 1``
    times that, see :class:`~lase_nb.backends._concurrency.Pacer`); ``max_retries`` retries per call; ``retry_initial_delay`` the first backoff (seconds;
    also the jitter), doubling after each retry.
    """

    name = "gemini"
    default_host = "generativelanguage.googleapis.com"

    def __init__(
        self,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        concurrency: int = 8,
        timeout: float = 60,
        max_retries: int = 4,
        *,
        retry_initial_delay: float = 1.0,
    ) -> None:
        self._setup(model, base_url, concurrency, timeout, max_retries)
        if retry_initial_delay < 0:
            raise ConfigError(f"retry_initial_delay must be >= 0, got {retry_initial_delay}")
        from google import genai  # imported here so that the package imports without API extras
        from google.genai import errors as genai_errors
        from google.genai import types as gt

        key = resolve_api_key(api_key)
        self.retry_initial_delay = float(retry_initial_delay)
        self._gt = gt
        self._errors = genai_errors
        retry = gt.HttpRetryOptions(
            attempts=self.max_retries + 1,
            initial_delay=self.retry_initial_delay,
            max_delay=max(30.0, self.retry_initial_delay),
            exp_base=2.0,
            jitter=self.retry_initial_delay,
            http_status_codes=sorted(RETRYABLE),
        )
        http = gt.HttpOptions(base_url=base_url, timeout=_ms(self.timeout), retry_options=retry)
        self._client = genai.Client(api_key=key, vertexai=False, http_options=http)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        close = getattr(self._client, "close", None)
        if callable(close):
            close()

    # -- calls --------------------------------------------------------------------------------
    def _request(self, messages: Sequence[Message], params: GenParams) -> tuple[list[Any], Any]:
        gt = self._gt
        system = [m["content"] for m in messages if m["role"] == "system"]
        contents = [gt.Content(role="model" if m["role"] == "assistant" else "user",
                               parts=[gt.Part(text=m["content"])])
                    for m in messages if m["role"] != "system"]
        cfg: dict[str, Any] = {
            "temperature": params.temperature,
            "top_p": params.top_p,
            "max_output_tokens": params.max_tokens,
            "candidate_count": 1,
        }
        if system:
            cfg["system_instruction"] = "\n\n".join(system)
        if params.stop:
            cfg["stop_sequences"] = list(params.stop)
        if params.temperature > 0:
            cfg["seed"] = int(params.sample)
        if params.logprobs:
            cfg["response_logprobs"] = True
            k = max(0, min(int(params.top_logprobs), MAX_TOP_LOGPROBS))
            if k:
                cfg["logprobs"] = k
        return contents, gt.GenerateContentConfig(**cfg)

    def generate(self, messages: Sequence[Message], params: GenParams) -> Generation:
        """One ``generate_content`` call mapped to a :class:`Generation` (tokens None without logprobs)."""
        contents, config = self._request(messages, params)

        def send(deadline: float) -> Generation:
            timed = config.model_copy(update={"http_options": self._gt.HttpOptions(timeout=_ms(deadline))})
            attempt = 0
            while True:
                t0 = time.perf_counter()
                try:
                    resp = self._client.models.generate_content(model=self.model, contents=contents, config=timed)
                    return self._to_generation(resp, params, time.perf_counter() - t0)
                except _DROP_EXC:
                    if attempt >= self.max_retries:
                        raise
                    time.sleep(self.retry_initial_delay * 2 ** attempt)
                    attempt += 1

        return self._call(send)

    # -- mapping ------------------------------------------------------------------------------
    def _to_generation(self, resp: Any, params: GenParams, latency: float) -> Generation:
        um = getattr(resp, "usage_metadata", None)
        prompt_tokens = int(getattr(um, "prompt_token_count", 0) or 0)
        completion_tokens = int(getattr(um, "candidates_token_count", 0) or 0) + int(
            getattr(um, "thoughts_token_count", 0) or 0)
        cached = getattr(um, "cached_content_token_count", None)
        cached_tokens = None if cached is None else int(cached)
        cands = getattr(resp, "candidates", None)
        if not cands:
            fb = getattr(resp, "prompt_feedback", None)
            reason = _enum_value(getattr(fb, "block_reason", None)).lower() if fb is not None else ""
            if not reason:
                raise BackendError(f"{self._where()}: malformed response: no candidates in the reply")
            return self._generation("", None, prompt_tokens, completion_tokens, f"blocked:{reason}", latency,
                                    cached_tokens)
        cand = cands[0]
        parts = getattr(getattr(cand, "content", None), "parts", None) or []
        text = "".join(p.text for p in parts if getattr(p, "text", None) and not getattr(p, "thought", False))
        fr = _enum_value(getattr(cand, "finish_reason", None))
        finish = _FINISH.get(fr, fr.lower() or "unknown")

        tokens: list[TokenLogprob] | None = None
        lr = getattr(cand, "logprobs_result", None)
        chosen = getattr(lr, "chosen_candidates", None) if lr is not None else None
        if params.logprobs and chosen is not None:
            top = getattr(lr, "top_candidates", None) or []
            strs = [c.token or "" for c in chosen]
            offs = align_offsets(strs, text)
            tokens = []
            for i, (c, s, o) in enumerate(zip(chosen, strs, offs)):
                alts = (getattr(top[i], "candidates", None) or []) if i < len(top) else []
                tokens.append(TokenLogprob(
                    token=s, logprob=float(c.log_probability or 0.0), offset=o,
                    top=tuple((a.token or "", float(a.log_probability or 0.0)) for a in alts)))
        return self._generation(text, tokens, prompt_tokens, completion_tokens, finish, latency, cached_tokens)

    def _api_key(self) -> str | None:
        return getattr(getattr(self._client, "_api_client", None), "api_key", None)

    def _classify(self, e: BaseException) -> tuple[str | None, int, str]:
        """What kind of failure a ``google-genai`` or transport exception is (see :meth:`APIBackend._classify`)."""
        if isinstance(e, self._errors.APIError):
            status = getattr(e, "status", None)
            message = getattr(e, "message", None) or str(e)
            return STATUS, int(getattr(e, "code", 0) or 0), f"{status}: {message}" if status else message
        if _TIMEOUT_EXC and isinstance(e, _TIMEOUT_EXC):
            return TIMEOUT, 0, ""
        if _CONN_EXC and isinstance(e, _CONN_EXC):
            return CONNECTION, 0, f"{type(e).__name__}: {short(str(e))}"
        if isinstance(e, (json.JSONDecodeError, self._errors.UnknownApiResponseError, ValueError)) or \
                type(e).__name__ == "ValidationError":
            return MALFORMED, 0, f"{type(e).__name__}: {short(str(e))}"
        return None, 0, ""


def _ms(seconds: float) -> int:
    """Seconds as the whole milliseconds ``HttpOptions.timeout`` takes."""
    return int(round(seconds * 1000))
