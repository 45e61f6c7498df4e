"""A durable, replayable call cache (SQLite, WAL mode, safe for concurrent writers).

Key = backend, model, messages, sampling parameters and the sample index, so N samples of
the same prompt are N entries. Each entry is written in one transaction: a killed process
leaves either the whole entry or nothing. Only the request content and the Generation are
stored; API keys and headers never reach this module.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Sequence

from .errors import CacheMiss, ConfigError
from .types import Generation, GenParams, Message

CACHE_MODES = ("use", "refresh", "replay")


def default_cache_path() -> Path:
    """``$LASE_CACHE`` or ``~/.cache/lase_nb/calls.sqlite``."""
    env = os.environ.get("LASE_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "lase_nb" / "calls.sqlite"


def call_key(backend: str, model: str, messages: Sequence[Message], params: GenParams,
             dtype: str | None = None) -> str:
    """Stable hash of everything that determines a call's result. ``dtype`` (the local backend's
    number format) enters the key unless it is float32 or None, so float32 keys are those of
    before it existed and an answer of one format is never served for another."""
    payload = {
        "backend": backend,
        "model": model,
        "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        "params": params.to_dict(),
    }
    if dtype not in (None, "float32"):
        payload["dtype"] = dtype
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


class CallCache:
    """SQLite store of Generations by call key. ``mode``: use | refresh | replay."""

    def __init__(self, path: str | Path | None = None, mode: str = "use"):
        if mode not in CACHE_MODES:
            raise ConfigError(f"unknown cache mode {mode!r}; use one of {', '.join(CACHE_MODES)}")
        self.mode = mode
        self.path = Path(path) if path is not None else default_cache_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ConfigError(f"cannot create the cache folder {self.path.parent}: {e}; "
                              f"set LASE_CACHE or --cache to a writable file") from e
        self._local = threading.local()
        with self._conn() as con:
            con.execute(
                "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, backend TEXT, model TEXT,"
                " request TEXT, generation TEXT, created REAL DEFAULT (julianday('now')))"
            )

    def _conn(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute("PRAGMA busy_timeout=60000")
            self._local.con = con
        return con

    def get(self, key: str) -> Generation | None:
        """The cached Generation for ``key`` (marked ``cached=True``), or None."""
        row = self._conn().execute("SELECT generation FROM calls WHERE key=?", (key,)).fetchone()
        if row is None:
            return None
        gen = Generation.from_json(row[0])
        gen.cached = True
        return gen

    def put(self, key: str, backend: str, model: str, messages: Sequence[Message],
            params: GenParams, gen: Generation) -> None:
        """Store one call atomically (replacing an older entry under ``refresh``)."""
        request = json.dumps({"messages": list(messages), "params": params.to_dict()}, ensure_ascii=False)
        with self._conn() as con:
            con.execute(
                "INSERT OR REPLACE INTO calls (key, backend, model, request, generation) VALUES (?,?,?,?,?)",
                (key, backend, model, request, gen.to_json()),
            )

    def lookup(self, key: str, describe: str) -> Generation | None:
        """Apply the mode: a hit under use/replay, None when the call must be made, CacheMiss in replay."""
        if self.mode == "refresh":
            return None
        gen = self.get(key)
        if gen is None and self.mode == "replay":
            raise CacheMiss(f"replay-only cache {self.path} has no entry for {describe}; "
                            f"rerun with cache mode 'use' to make the call")
        return gen

    def __len__(self) -> int:
        return self._conn().execute("SELECT COUNT(*) FROM calls").fetchone()[0]
