"""Real HTTP servers on 127.0.0.1 that speak the OpenAI and Gemini wire formats (test support).

The API backends are tested with the real SDKs (``openai``, ``google-genai``) against these
servers, so every byte goes through the SDKs' own HTTP, retry and parsing code.

In-process use (a context manager; the server runs in a background thread)::

    from tests.wire_servers import OpenAIWireServer, GeminiWireServer, Reply

    with OpenAIWireServer(responder=lambda messages, params: r"... \\boxed{7}", latency_s=0) as srv:
        backend = OpenAIBackend("wire-model", base_url=srv.base_url, api_key="sk-test")
        srv.add_faults("429:0.1", "500")      # the next two requests fail, then normal replies
        ...
        srv.request_count, srv.requests[-1].body, srv.requests[-1].headers["authorization"]

``base_url`` is what the SDK wants: ``http://127.0.0.1:PORT/v1`` for OpenAI (``OpenAI(base_url=)``)
and ``http://127.0.0.1:PORT`` for Gemini (``HttpOptions(base_url=)``).

Responder: ``responder(messages, params) -> str | Reply``. ``messages`` is a list of
``{"role": "system"|"user"|"assistant", "content": str}`` (Gemini's ``systemInstruction`` and
``model`` role are mapped to these), ``params`` a dict with ``model, temperature, top_p,
max_tokens, logprobs, top_logprobs, seed, stop`` (None where the request did not say). Return a
string, or a :class:`Reply` to also set the chosen-token probabilities (e.g. a low probability on
the answer token to trigger a confidence gate). The default responder returns
:data:`DEFAULT_REPLY` (which ends in ``\\boxed{4}``).

Text is split into small tokens by :func:`tokenize` (concatenating them gives the text back);
log-probabilities are deterministic: chosen token probability from ``Reply.prob`` or
:func:`default_prob`, alternatives share the remaining mass geometrically so the top-k never sums
to 1 (there is always a residual). ``max_tokens`` and ``stop`` in the request are honoured
(``finish_reason`` becomes ``length`` when the reply is cut by ``max_tokens``).

Faults (:meth:`add_faults`, constructor ``faults=``, CLI ``--fault``) apply to the next requests in
arrival order, one fault per request:

=================  ===================================================================
``"429"``          HTTP 429 with an API-style error body, no ``Retry-After``
``"429:0.1"``      HTTP 429 with ``Retry-After: 0.1`` (any ``NNN:SECONDS`` works)
``"500"``, ``"503"`` (any 3-digit status)  that status with an error body
``"stall"``        wait ``stall_s`` (default 30 s, or ``"stall:SECONDS"``) before answering
``"drop"``         read the request, then close the connection without any response
``"truncated"``    HTTP 200 whose JSON body is cut in half (invalid JSON)
``"length"``       reply cut to half its tokens, finish reason ``length`` / ``MAX_TOKENS``
``"empty"``        empty content (no tokens)
``"nologprobs"``   a normal reply without any logprobs
=================  ===================================================================

``latency_s`` delays every response (the concurrency benchmark uses 0.1 s). The server is a
``ThreadingHTTPServer`` (daemon threads, HTTP/1.1 keep-alive, a large listen backlog), so many
concurrent requests are served in parallel, unless ``slots`` is set: then it behaves like a server
with that many decoding slots (llama.cpp's server has one). Every connection is still accepted and
its request read at once, but only ``slots`` requests are worked on at a time, each for
``latency_s``, the rest wait in arrival order; a request whose client gave up (timed out) is still
served when its turn comes, as a real server does, and :attr:`abandoned` counts those replies. Pass ``api_key=`` to make it answer 401 unless the
request carries that key (OpenAI ``Authorization: Bearer``, Gemini ``x-goog-api-key``).

From a separate process (e.g. a run that a test kills mid-way)::

    python -m tests.wire_servers openai --port 0 --ready-file PATH [--count-file PATH]
        [--log-file PATH] [--latency S] [--fault SPEC ...] [--reply TEXT] [--api-key KEY] [--slots N]

writes the base URL to ``--ready-file`` once listening (atomically), rewrites the request count
to ``--count-file`` after every request (in place, space-padded: strip before ``int()``), appends one JSON line per request to ``--log-file``
(key-bearing headers redacted), and serves until SIGTERM/SIGINT. :func:`start_subprocess` wraps
this for tests.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Union

__all__ = [
    "DEFAULT_REPLY",
    "Fault",
    "GeminiWireServer",
    "OpenAIWireServer",
    "RecordedRequest",
    "Reply",
    "default_prob",
    "fixed",
    "start_subprocess",
    "tokenize",
]

#: The default responder's reply.
DEFAULT_REPLY = "We add the two numbers: 2 + 2 = 4.\n\nThe answer is \\boxed{4}."

_SENSITIVE_HEADERS = {"authorization", "x-goog-api-key", "api-key", "x-api-key"}


@dataclass
class Reply:
    """A responder's answer: text plus (optionally) the chosen-token probability.

    ``prob`` is a constant probability for every token, or ``prob(index, token) -> float`` to set
    it per token; None uses :func:`default_prob`. ``top_logprobs`` caps the alternatives returned
    per token whatever the request asked (a provider that returns at most 5); ``logprobs=False``
    returns none at all on this reply even when asked (a provider that sometimes omits them).
    """

    text: str
    prob: float | Callable[[int, str], float] | None = None
    top_logprobs: int | None = None
    logprobs: bool = True


Responder = Callable[[list[dict[str, str]], dict[str, Any]], Union[str, Reply]]


def fixed(text: str, prob: float | Callable[[int, str], float] | None = None) -> Responder:
    """A responder that always returns ``text`` (with the given chosen-token probability)."""

    def responder(messages: list[dict[str, str]], params: dict[str, Any]) -> Reply:
        return Reply(text, prob)

    return responder


def _default_responder(messages: list[dict[str, str]], params: dict[str, Any]) -> Reply:
    return Reply(DEFAULT_REPLY)


_TOKEN_RE = re.compile(r"\s*[A-Za-z]{1,4}|\s*\d|\s*[^\sA-Za-z\d]|\s+")


def tokenize(text: str) -> list[str]:
    """Split text into small BPE-like tokens (leading spaces attached); ``"".join`` gives it back."""
    return _TOKEN_RE.findall(text)


def default_prob(index: int, token: str) -> float:
    """A deterministic chosen-token probability in [0.55, 0.999] derived from token and position."""
    h = zlib.crc32(f"{index}:{token}".encode()) / 0xFFFFFFFF
    return 0.55 + 0.449 * h


_ALT_POOL = (" the", " a", "1", "2", "3", ".", ",", " is", " and", " of", " to", "x", " 5", " 0",
             "=", " +", "\n", " so", " it", " we", "7", "9", ")", "(")


def _alternatives(token: str, p: float, k: int) -> list[tuple[str, float]]:
    """Top-k list: the chosen token plus k-1 others sharing (1-p) geometrically, sorted desc."""
    p = min(max(p, 1e-12), 1.0)
    out = [(token, math.log(p))]
    rest = 1.0 - p
    pool = [a for a in _ALT_POOL if a != token]
    for j in range(1, max(k, 0)):
        q = rest * 0.5 ** j
        out.append((pool[(j - 1) % len(pool)] + ("" if j <= len(pool) else str(j)),
                    math.log(q) if q > 0 else -9999.0))
    out = out[: max(k, 0)]
    out.sort(key=lambda x: -x[1])
    return out


@dataclass(frozen=True)
class Fault:
    """One scripted fault. Build it from a spec string with :meth:`parse` (see module doc)."""

    kind: str  # "status" | "stall" | "drop" | "truncated" | "length" | "empty" | "nologprobs"
    status: int = 0
    retry_after: float | None = None
    seconds: float | None = None

    KINDS = ("stall", "drop", "truncated", "length", "empty", "nologprobs")

    @classmethod
    def parse(cls, spec: "str | int | Fault") -> "Fault":
        """``"429"``, ``"429:0.1"``, ``"503"``, ``"stall"``, ``"stall:2"``, ``"drop"``, ..."""
        if isinstance(spec, Fault):
            return spec
        s = str(spec).strip().lower()
        head, _, arg = s.partition(":")
        if head.isdigit() and len(head) == 3:
            return cls("status", status=int(head), retry_after=float(arg) if arg else None)
        if head in cls.KINDS:
            if head == "stall":
                return cls("stall", seconds=float(arg) if arg else None)
            if arg:
                raise ValueError(f"fault {spec!r} takes no argument")
            return cls(head)
        raise ValueError(f"unknown fault {spec!r}; use NNN[:retry_after], stall[:s], " + ", ".join(cls.KINDS[1:]))

    def __str__(self) -> str:
        if self.kind == "status":
            return f"{self.status}" + (f":{self.retry_after:g}" if self.retry_after is not None else "")
        if self.kind == "stall" and self.seconds is not None:
            return f"stall:{self.seconds:g}"
        return self.kind


@dataclass
class RecordedRequest:
    """One request the server received (header names lower-cased; body parsed as JSON when possible)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    time: float
    fault: str | None = None


@dataclass
class _Out:
    """A normal reply before it is put in an API's JSON shape."""

    text: str
    tokens: list[tuple[str, float, list[tuple[str, float]]]] | None  # (token, logprob, top)
    finish: str  # "stop" | "length"
    prompt_tokens: int
    completion_tokens: int


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "LaseWire/1.0"
    disable_nagle_algorithm = True  # headers and body go out as separate writes; avoid 40 ms stalls

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        self.server.wire._handle(self, "POST")  # type: ignore[attr-defined]

    def do_GET(self) -> None:  # noqa: N802
        self.server.wire._handle(self, "GET")  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:  # silence per-request stderr lines
        pass


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout) makes our late write fail; that is expected here.
        exc = sys.exc_info()[1]
        if isinstance(exc, (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class _WireServer:
    """Shared machinery: threading server, request records, fault script, latency."""

    api = ""

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        latency_s: float = 0.0,
        faults: Iterable["str | int | Fault"] = (),
        stall_s: float = 30.0,
        api_key: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        count_file: str | os.PathLike[str] | None = None,
        log_file: str | os.PathLike[str] | None = None,
        slots: int | None = None,
    ) -> None:
        if slots is not None and slots < 1:
            raise ValueError(f"slots must be >= 1 (or None: no limit), got {slots}")
        self.responder: Responder = responder or _default_responder
        self.latency_s = float(latency_s)
        self.slots = slots
        self._turns = threading.Condition()
        self._queue: list[int] = []  # tickets waiting for a slot, in arrival order
        self._busy = 0
        self._abandoned = 0
        self.stall_s = float(stall_s)
        self.api_key = api_key
        self.count_file = Path(count_file) if count_file else None
        self.log_file = Path(log_file) if log_file else None
        self._lock = threading.Lock()
        self._faults: list[Fault] = [Fault.parse(f) for f in faults]
        self._records: list[RecordedRequest] = []
        self._count = 0
        self._stop = threading.Event()
        self._httpd = _HTTPServer((host, port), _Handler)
        self._httpd.wire = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None
        self._count_fd: int | None = None
        self._log_fh: Any = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> "_WireServer":
        """Start serving in a daemon thread (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                            name=f"{self.api}-wire-server", daemon=True)
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving; stalled requests are released at once."""
        self._stop.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()
        with self._lock:
            if self._count_fd is not None:
                os.close(self._count_fd)
                self._count_fd = None
            if self._log_fh is not None:
                self._log_fh.close()
                self._log_fh = None

    def __enter__(self) -> "_WireServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- addresses -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no path)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The base URL to give the SDK."""
        raise NotImplementedError

    # -- scripting and inspection -----------------------------------------------------------
    def add_faults(self, *faults: "str | int | Fault") -> None:
        """Queue faults for the next requests (one per request, in arrival order)."""
        parsed = [Fault.parse(f) for f in faults]
        with self._lock:
            self._faults.extend(parsed)

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    @property
    def pending_faults(self) -> list[Fault]:
        with self._lock:
            return list(self._faults)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of every request received so far (oldest first)."""
        with self._lock:
            return list(self._records)

    @property
    def request_count(self) -> int:
        with self._lock:
            return self._count

    @property
    def abandoned(self) -> int:
        """Replies worked out for a client that had already gone (``slots`` mode): wasted work."""
        with self._lock:
            return self._abandoned

    def reset(self) -> None:
        """Forget recorded requests, the count, abandoned replies and pending faults."""
        with self._lock:
            self._records.clear()
            self._count = 0
            self._abandoned = 0
            self._faults.clear()
            self._write_count(0)

    @contextlib.contextmanager
    def _slot(self, ticket: int) -> Iterator[None]:
        """Hold one of ``slots`` for the body (first come, first served); no limit when ``slots`` is None."""
        if self.slots is None:
            yield
            return
        with self._turns:
            self._queue.append(ticket)
            while not self._stop.is_set() and (self._queue[0] != ticket or self._busy >= self.slots):
                self._turns.wait(0.05)
            self._queue.remove(ticket)
            self._busy += 1
            self._turns.notify_all()
        try:
            yield
        finally:
            with self._turns:
                self._busy -= 1
                self._turns.notify_all()

    @staticmethod
    def _client_gone(h: "_Handler") -> bool:
        """Whether the client closed its end of the connection (a readable socket with no data left)."""
        import select
        import socket

        try:
            readable, _, _ = select.select([h.connection], [], [], 0)
            return bool(readable) and h.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    # -- request handling --------------------------------------------------------------------
    def _write_count(self, n: int) -> None:
        """Rewrite the count file in place (one small write; readers strip the padding)."""
        if self.count_file is None:
            return
        if self._count_fd is None:
            self._count_fd = os.open(self.count_file, os.O_RDWR | os.O_CREAT, 0o644)
        os.pwrite(self._count_fd, f"{n:<20d}\n".encode(), 0)

    def _log(self, rec: RecordedRequest) -> None:
        if self.log_file is None:
            return
        if self._log_fh is None:
            self._log_fh = open(self.log_file, "a", encoding="utf-8")
        headers = {k: ("<redacted>" if k in _SENSITIVE_HEADERS else v) for k, v in rec.headers.items()}
        line = json.dumps({"method": rec.method, "path": rec.path, "headers": headers, "body": rec.body,
                           "time": rec.time, "fault": rec.fault}, ensure_ascii=False)
        self._log_fh.write(line + "\n")
        self._log_fh.flush()

    def _handle(self, h: _Handler, method: str) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        with self._lock:
            fault = self._faults.pop(0) if (self._faults and method == "POST") else None
            rec = RecordedRequest(method, h.path, {k.lower(): v for k, v in h.headers.items()}, body, time.time(),
                                  str(fault) if fault else None)
            self._records.append(rec)
            self._count += 1
            n = self._count
            self._write_count(n)
            self._log(rec)

        with self._slot(n):
            if self.latency_s > 0:
                self._stop.wait(self.latency_s)
            if self.slots is not None and self._client_gone(h):
                with self._lock:
                    self._abandoned += 1
            self._respond(h, method, body, fault, n)

    def _respond(self, h: _Handler, method: str, body: Any, fault: Fault | None, n: int) -> None:
        """Send request ``n``'s reply, or its scripted fault."""
        if fault is not None and fault.kind == "drop":
            h.close_connection = True
            return
        if fault is not None and fault.kind == "stall":
            self._stop.wait(fault.seconds if fault.seconds is not None else self.stall_s)
        if fault is not None and fault.kind == "status":
            extra = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
            self._send_json(h, fault.status, self._error_body(fault.status, "scripted fault"), extra)
            return
        if self.api_key is not None and not self._authorised(h):
            self._send_json(h, 401, self._error_body(401, "invalid or missing API key"))
            return

        try:
            status, payload = self._route(method, h.path.split("?", 1)[0], body,
                                          fault.kind if fault is not None else None, n)
        except Exception as e:  # a bug in a responder should show up in the test, not hang it
            status, payload = 500, self._error_body(500, f"wire server error: {type(e).__name__}: {e}")
        data = json.dumps(payload).encode()
        if fault is not None and fault.kind == "truncated" and status == 200:
            data = data[: max(1, len(data) // 2)]
        self._send_bytes(h, status, data, {})

    def _send_json(self, h: _Handler, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
        self._send_bytes(h, status, json.dumps(payload).encode(), extra or {})

    @staticmethod
    def _send_bytes(h: _Handler, status: int, data: bytes, extra: dict[str, str]) -> None:
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        for k, v in extra.items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)
        h.wfile.flush()

    # -- shared reply construction ---------------------------------------------------------------
    def _reply(self, messages: list[dict[str, str]], params: dict[str, Any], fault: str | None) -> _Out:
        r = self.responder(messages, dict(params))
        reply = r if isinstance(r, Reply) else Reply(str(r))
        text = reply.text
        finish = "stop"
        for s in params.get("stop") or []:
            if s and s in text:
                text = text[: text.index(s)]
        toks = tokenize(text)
        max_tokens = params.get("max_tokens")
        if isinstance(max_tokens, int) and max_tokens >= 0 and len(toks) > max_tokens:
            toks, finish = toks[:max_tokens], "length"
        if fault == "length":
            toks, finish = toks[: max(1, len(toks) // 2)], "length"
        if fault == "empty":
            toks = []
        text = "".join(toks)
        prompt_tokens = sum(len(tokenize(m.get("content", ""))) + 3 for m in messages)
        want_lp = bool(params.get("logprobs")) and fault != "nologprobs" and reply.logprobs
        tokens = None
        if want_lp:
            k = int(params.get("top_logprobs") or 0)
            if reply.top_logprobs is not None:
                k = min(k, reply.top_logprobs)
            tokens = []
            for i, t in enumerate(toks):
                p = reply.prob(i, t) if callable(reply.prob) else (reply.prob if reply.prob is not None else default_prob(i, t))
                p = min(max(float(p), 1e-12), 1.0)
                tokens.append((t, math.log(p), _alternatives(t, p, k)))
        return _Out(text, tokens, finish, prompt_tokens, len(toks))

    # -- per-API pieces --------------------------------------------------------------------------
    def _authorised(self, h: _Handler) -> bool:
        raise NotImplementedError

    def _error_body(self, status: int, message: str) -> dict[str, Any]:
        raise NotImplementedError

    def _route(self, method: str, path: str, body: Any, fault: str | None, n: int) -> tuple[int, Any]:
        raise NotImplementedError


def _text_of(content: Any) -> str:
    """OpenAI message content: a string or a list of ``{"type": "text", "text": ...}`` parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


class OpenAIWireServer(_WireServer):
    """``POST /v1/chat/completions`` (and ``GET /v1/models``) in OpenAI's JSON, with logprobs."""

    api = "openai"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"{self.url}/v1"

    def _authorised(self, h: _Handler) -> bool:
        return h.headers.get("Authorization", "") == f"Bearer {self.api_key}"

    _ERR_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error",
                  429: "rate_limit_exceeded"}

    def _error_body(self, status: int, message: str) -> dict[str, Any]:
        return {"error": {"message": f"{message} (HTTP {status})",
                          "type": self._ERR_TYPES.get(status, "server_error"),
                          "param": None, "code": "rate_limit_exceeded" if status == 429 else None}}

    def _route(self, method: str, path: str, body: Any, fault: str | None, n: int) -> tuple[int, Any]:
        if method == "GET" and path.rstrip("/") in ("/v1/models", "/models"):
            return 200, {"object": "list", "data": [{"id": "wire-model", "object": "model", "created": 0,
                                                     "owned_by": "wire"}]}
        if method != "POST" or path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            return 404, self._error_body(404, f"unknown path {path}")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return 400, self._error_body(400, "body must be JSON with a 'messages' list")
        messages = [{"role": str(m.get("role", "user")), "content": _text_of(m.get("content"))}
                    for m in body["messages"]]
        stop = body.get("stop")
        params = {
            "model": body.get("model"),
            "temperature": body.get("temperature"),
            "top_p": body.get("top_p"),
            "max_tokens": body.get("max_completion_tokens", body.get("max_tokens")),
            "logprobs": bool(body.get("logprobs")),
            "top_logprobs": body.get("top_logprobs"),
            "seed": body.get("seed"),
            "stop": [stop] if isinstance(stop, str) else list(stop or []),
        }
        out = self._reply(messages, params, fault)
        logprobs = None
        if out.tokens is not None:
            logprobs = {"content": [
                {"token": t, "logprob": lp, "bytes": list(t.encode()),
                 "top_logprobs": [{"token": a, "logprob": alp, "bytes": list(a.encode())} for a, alp in top]}
                for t, lp, top in out.tokens], "refusal": None}
        return 200, {
            "id": f"chatcmpl-wire-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": params["model"] or "wire-model",
            "system_fingerprint": "fp_wire",
            "choices": [{"index": 0,
                         "message": {"role": "assistant", "content": out.text, "refusal": None},
                         "logprobs": logprobs,
                         "finish_reason": out.finish}],
            "usage": {"prompt_tokens": out.prompt_tokens, "completion_tokens": out.completion_tokens,
                      "total_tokens": out.prompt_tokens + out.completion_tokens},
        }


_GEMINI_PATH = re.compile(r"^/(v1beta|v1|v1alpha)/models/([^:/]+):generateContent$")
_GEMINI_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                  429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


class GeminiWireServer(_WireServer):
    """``POST /v1beta/models/{model}:generateContent`` in the Gemini API's JSON, with logprobsResult."""

    api = "gemini"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (the SDK appends ``/v1beta/models/...``)."""
        return self.url

    def _authorised(self, h: _Handler) -> bool:
        if h.headers.get("x-goog-api-key") == self.api_key:
            return True
        return f"key={self.api_key}" in (h.path.split("?", 1)[1] if "?" in h.path else "")

    def _error_body(self, status: int, message: str) -> dict[str, Any]:
        return {"error": {"code": status, "message": f"{message} (HTTP {status})",
                          "status": _GEMINI_STATUS.get(status, "UNKNOWN")}}

    def _route(self, method: str, path: str, body: Any, fault: str | None, n: int) -> tuple[int, Any]:
        m = _GEMINI_PATH.match(path)
        if method != "POST" or not m:
            return 404, self._error_body(404, f"unknown path {path}")
        if not isinstance(body, dict) or not isinstance(body.get("contents"), list):
            return 400, self._error_body(400, "body must be JSON with a 'contents' list")
        model = m.group(2)
        messages: list[dict[str, str]] = []
        sys_inst = body.get("systemInstruction") or body.get("system_instruction")
        if sys_inst:
            messages.append({"role": "system",
                             "content": "".join(p.get("text", "") for p in sys_inst.get("parts", []))})
        for c in body["contents"]:
            role = "assistant" if c.get("role") == "model" else "user"
            messages.append({"role": role, "content": "".join(p.get("text", "") for p in c.get("parts", []))})
        gc = body.get("generationConfig") or {}
        params = {
            "model": model,
            "temperature": gc.get("temperature"),
            "top_p": gc.get("topP"),
            "max_tokens": gc.get("maxOutputTokens"),
            "logprobs": bool(gc.get("responseLogprobs")),
            "top_logprobs": gc.get("logprobs"),
            "seed": gc.get("seed"),
            "stop": list(gc.get("stopSequences") or []),
        }
        out = self._reply(messages, params, fault)
        cand: dict[str, Any] = {
            "content": {"role": "model", "parts": [{"text": out.text}]} if out.text else {"role": "model"},
            "finishReason": "MAX_TOKENS" if out.finish == "length" else "STOP",
            "index": 0,
        }
        if out.tokens is not None:
            def c(tok: str, lp: float) -> dict[str, Any]:
                return {"token": tok, "tokenId": zlib.crc32(tok.encode()) % 256000, "logProbability": lp}
            cand["logprobsResult"] = {
                "topCandidates": [{"candidates": [c(a, alp) for a, alp in top]} for _, _, top in out.tokens],
                "chosenCandidates": [c(t, lp) for t, lp, _ in out.tokens],
                "logProbabilitySum": sum(lp for _, lp, _ in out.tokens),
            }
            if out.tokens:
                cand["avgLogprobs"] = sum(lp for _, lp, _ in out.tokens) / len(out.tokens)
        return 200, {
            "candidates": [cand],
            "usageMetadata": {"promptTokenCount": out.prompt_tokens,
                              "candidatesTokenCount": out.completion_tokens,
                              "totalTokenCount": out.prompt_tokens + out.completion_tokens},
            "modelVersion": model,
            "responseId": f"wire-{n}",
        }


_SERVERS: dict[str, type[_WireServer]] = {"openai": OpenAIWireServer, "gemini": GeminiWireServer}


@dataclass
class WireProcess:
    """A wire server running in a child process (see :func:`start_subprocess`)."""

    proc: subprocess.Popen[bytes]
    base_url: str
    count_file: Path
    log_file: Path | None = None
    _closed: bool = field(default=False, repr=False)

    @property
    def request_count(self) -> int:
        try:
            return int(self.count_file.read_text().strip() or 0)
        except (FileNotFoundError, ValueError):
            return 0

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> "WireProcess":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def start_subprocess(api: str, workdir: str | os.PathLike[str], *, latency_s: float = 0.0,
                     faults: Iterable[str] = (), reply: str | None = None, api_key: str | None = None,
                     log: bool = True, timeout_s: float = 20.0, slots: int | None = None) -> WireProcess:
    """Start ``python -m tests.wire_servers API`` in a child process and wait until it listens.

    Files go to ``workdir``: ``API.url`` (ready file), ``API.count`` and (if ``log``)
    ``API.log.jsonl``. Use it as a context manager, or call ``close()`` (SIGTERM, then kill).
    """
    wd = Path(workdir)
    wd.mkdir(parents=True, exist_ok=True)
    ready, count, log_path = wd / f"{api}.url", wd / f"{api}.count", wd / f"{api}.log.jsonl"
    ready.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "tests.wire_servers", api, "--port", "0", "--ready-file", str(ready),
           "--count-file", str(count), "--latency", str(latency_s)]
    if log:
        cmd += ["--log-file", str(log_path)]
    for f in faults:
        cmd += ["--fault", f]
    if reply is not None:
        cmd += ["--reply", reply]
    if api_key is not None:
        cmd += ["--api-key", api_key]
    if slots is not None:
        cmd += ["--slots", str(slots)]
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.Popen(cmd, cwd=str(root), env=env)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ready.exists() and ready.read_text().strip():
            return WireProcess(proc, ready.read_text().strip(), count, log_path if log else None)
        if proc.poll() is not None:
            raise RuntimeError(f"wire server exited with status {proc.returncode} before it was ready")
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    raise RuntimeError(f"wire server not ready after {timeout_s} s")


def main(argv: list[str] | None = None) -> int:
    """CLI: run one wire server until SIGTERM/SIGINT (see the module doc)."""
    ap = argparse.ArgumentParser(prog="python -m tests.wire_servers", description=__doc__.splitlines()[0])
    ap.add_argument("api", choices=sorted(_SERVERS))
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--ready-file", help="write the base URL here once listening")
    ap.add_argument("--count-file", help="rewrite the request count here after each request")
    ap.add_argument("--log-file", help="append one JSON line per request here (keys redacted)")
    ap.add_argument("--latency", type=float, default=0.0, help="seconds before every response")
    ap.add_argument("--fault", action="append", default=[], help="fault spec for the next request (repeatable)")
    ap.add_argument("--stall", type=float, default=30.0, help="seconds a 'stall' fault waits")
    ap.add_argument("--reply", help="fixed reply text (default: a short answer ending in \\boxed{4})")
    ap.add_argument("--api-key", help="answer 401 unless requests carry this key")
    ap.add_argument("--slots", type=int, default=None,
                    help="work on at most this many requests at a time, --latency each, the rest queued")
    a = ap.parse_args(argv)

    srv = _SERVERS[a.api](fixed(a.reply) if a.reply is not None else None, latency_s=a.latency, faults=a.fault,
                          stall_s=a.stall, api_key=a.api_key, host=a.host, port=a.port,
                          count_file=a.count_file, log_file=a.log_file, slots=a.slots)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    srv.start()
    srv._write_count(0)
    if a.ready_file:
        p = Path(a.ready_file)
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(srv.base_url + "\n")
        os.replace(tmp, p)
    print(f"{a.api} wire server at {srv.base_url}", flush=True)
    while not stop.wait(0.2):
        pass
    srv.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
