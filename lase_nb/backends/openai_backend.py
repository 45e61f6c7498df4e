"""OpenAI chat completions (and any OpenAI-compatible server: vLLM, llama.cpp server, Ollama).

Uses the real ``openai`` SDK. Retries are the SDK's own (``max_retries``): 408/409/429/5xx,
timeouts and dropped connections, with exponential backoff, honouring ``Retry-After``. Each
attempt's timeout grows with the calls in flight and a timeout lowers the concurrency
(:class:`~lase_nb.backends._api.APIBackend`, shared with Gemini). What is still failing after
that becomes a :class:`~lase_nb.errors.BackendError` whose message names the fault (HTTP status,
"rate limited", "timed out", "connection dropped", "malformed response") and the flags that help.

API key, in this order:

* the ``api_key`` argument;
* official endpoint (``base_url`` None or ``https://api.openai.com/...``): env ``OPENAI_API_KEY``;
* any other ``base_url``: env ``OPENAI_COMPATIBLE_API_KEY``; if the host is local
  (``localhost``, ``127.0.0.1``, ``::1``) and that is unset, the placeholder ``"EMPTY"`` (what
  vLLM/llama.cpp/Ollama accept). ``OPENAI_API_KEY`` is never sent to a non-OpenAI host.

With ``base_url=None`` the SDK itself may still read ``OPENAI_BASE_URL``. The key is never
logged, put in ``repr()`` or in error messages (it is scrubbed from server messages too).

Token offsets are character offsets into ``text``: the running sum of the token strings' lengths
(OpenAI returns the tokens in order); when the token strings do not concatenate to the text
(a multi-byte character split across tokens), the offsets come from the tokens' UTF-8 ``bytes``.
Entropy is left ``None``: the confidence module estimates it from the top-k alternatives plus a
residual bucket (``entropy_estimator = "topk+residual"``).

The SDK does the HTTP, retries and status errors (``with_raw_response.create``); the reply's JSON
is mapped here directly rather than through the SDK's pydantic models, which roughly halves the
client CPU per call (under the GIL that CPU is what limits throughput at high concurrency).
"""

from __future__ import annotations

import codecs
import json
import os
import time
from typing import Any, Sequence
from urllib.parse import urlparse

from ..errors import BackendError, MissingAPIKey
from ..types import Generation, GenParams, Message, TokenLogprob
from ._api import CONNECTION, MALFORMED, STATUS, TIMEOUT, APIBackend, short

#: OpenAI accepts at most this many ``top_logprobs``.
MAX_TOP_LOGPROBS = 20
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}


def _is_official(base_url: str | None) -> bool:
    return base_url is None or (urlparse(base_url).hostname or "").lower() == "api.openai.com"


def _is_local(base_url: str | None) -> bool:
    host = (urlparse(base_url).hostname or "").lower() if base_url else ""
    return host in _LOCAL_HOSTS or host.endswith(".localhost")


def resolve_api_key(base_url: str | None, api_key: str | None) -> str:
    """The key to use for ``base_url`` (see the module doc), or raise :class:`MissingAPIKey`."""
    if api_key:
        return api_key
    if _is_official(base_url):
        key = os.environ.get("OPENAI_API_KEY", "").strip()
        if not key:
            raise MissingAPIKey("openai", "OPENAI_API_KEY")
        return key
    key = os.environ.get("OPENAI_COMPATIBLE_API_KEY", "").strip()
    if key:
        return key
    if _is_local(base_url):
        return "EMPTY"
    raise MissingAPIKey("openai", "OPENAI_COMPATIBLE_API_KEY")


def sample_seed(sample: int) -> int:
    """The ``seed`` sent for sample index ``sample`` when temperature > 0 (distinct per sample)."""
    return int(sample)


def token_offsets(tokens: Sequence[str], text: str, token_bytes: Sequence[Sequence[int] | None] | None = None) -> list[int]:
    """Character offset of each token in ``text``: running sum of lengths, or from UTF-8 bytes.

    The byte route is used only when the token strings do not concatenate to ``text`` but the
    bytes decode to it (a character split across tokens); a token that starts inside a character
    gets that character's offset.
    """
    if "".join(tokens) != text and token_bytes is not None and all(b is not None for b in token_bytes):
        dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
        offs, n, parts = [], 0, []
        for b in token_bytes:
            offs.append(n)
            piece = dec.decode(bytes(b))  # type: ignore[arg-type]
            parts.append(piece)
            n += len(piece)
        if "".join(parts) + dec.decode(b"", final=True) == text:
            return offs
    offs, n = [], 0
    for t in tokens:
        offs.append(n)
        n += len(t)
    return offs


class OpenAIBackend(APIBackend):
    """Chat completions through the ``openai`` SDK, with token logprobs and top alternatives.

    ``concurrency`` bounds calls in flight in :meth:`generate_many`; ``timeout`` is the seconds one
    call may take at the server on its own (an attempt sent with ``k`` others may take ``k + 1``
    times that, see :class:`~lase_nb.backends._concurrency.Pacer`); ``max_retries`` the SDK's retry budget per call.
    """

    name = "openai"
    default_host = "api.openai.com"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        concurrency: int = 8,
        timeout: float = 60,
        max_retries: int = 4,
    ) -> None:
        self._setup(model, base_url, concurrency, timeout, max_retries)
        import openai  # imported here so that the package imports without API extras

        key = resolve_api_key(base_url, api_key)
        self._official = _is_official(base_url)
        self._openai = openai
        self._client = openai.OpenAI(api_key=key, base_url=base_url, timeout=self.timeout,
                                     max_retries=self.max_retries)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    # -- calls --------------------------------------------------------------------------------
    def _request(self, messages: Sequence[Message], params: GenParams) -> dict[str, Any]:
        kw: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "temperature": params.temperature,
            "top_p": params.top_p,
        }
        # api.openai.com deprecated max_tokens; compatible servers do not all know the new name.
        kw["max_completion_tokens" if self._official else "max_tokens"] = params.max_tokens
        if params.stop:
            kw["stop"] = list(params.stop)
        if params.logprobs:
            kw["logprobs"] = True
            kw["top_logprobs"] = max(0, min(int(params.top_logprobs), MAX_TOP_LOGPROBS))
        if params.temperature > 0:
            kw["seed"] = sample_seed(params.sample)
        return kw

    def generate(self, messages: Sequence[Message], params: GenParams) -> Generation:
        """One chat completion mapped to a :class:`Generation` (tokens None when no logprobs came back)."""
        request = self._request(messages, params)

        def send(deadline: float) -> Generation:
            t0 = time.perf_counter()
            raw = self._client.chat.completions.with_raw_response.create(**request, timeout=deadline)
            body = json.loads(raw.content)
            return self._to_generation(body, params, time.perf_counter() - t0)

        return self._call(send)

    # -- mapping ------------------------------------------------------------------------------
    def _to_generation(self, body: Any, params: GenParams, latency: float) -> Generation:
        """Map the chat completion JSON (parsed here, not by the SDK's models: see the module doc)."""
        choices = body.get("choices") if isinstance(body, dict) else None
        if not choices or not isinstance(choices[0], dict):
            raise BackendError(f"{self._where()}: malformed response: no choices in the reply")
        ch = choices[0]
        text = (ch.get("message") or {}).get("content") or ""
        tokens: list[TokenLogprob] | None = None
        content = (ch.get("logprobs") or {}).get("content")
        if params.logprobs and content is not None:
            strs = [c["token"] for c in content]
            offs = token_offsets(strs, text, [c.get("bytes") for c in content])
            tokens = [
                TokenLogprob(token=c["token"], logprob=float(c["logprob"]), offset=o,
                             top=tuple((a["token"], float(a["logprob"])) for a in (c.get("top_logprobs") or ())))
                for c, o in zip(content, offs)
            ]
        usage = body.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        return self._generation(text, tokens, int(usage.get("prompt_tokens") or 0),
                                int(usage.get("completion_tokens") or 0), str(ch.get("finish_reason") or "unknown"),
                                latency, None if cached is None else int(cached))

    def _api_key(self) -> str | None:
        return getattr(self._client, "api_key", None)

    def _classify(self, e: BaseException) -> tuple[str | None, int, str]:
        """What kind of failure an ``openai`` exception is (see :meth:`APIBackend._classify`)."""
        oa = self._openai
        if isinstance(e, oa.APITimeoutError):
            return TIMEOUT, 0, ""
        if isinstance(e, oa.APIConnectionError):
            cause = e.__cause__ or e.__context__
            return CONNECTION, 0, f"{type(cause).__name__}: {short(str(cause))}" if cause is not None else ""
        if isinstance(e, oa.APIResponseValidationError):
            return MALFORMED, 0, f"does not match the chat completion schema: {short(str(e))}"
        if isinstance(e, oa.APIStatusError):
            return STATUS, e.status_code, getattr(e, "message", str(e))
        if isinstance(e, (ValueError, KeyError, TypeError, AttributeError)) or type(e).__name__ == "ValidationError":
            return MALFORMED, 0, f"{type(e).__name__}: {short(str(e))}"
        return None, 0, ""
