"""The call cache: keys, modes, concurrent writers, and a process killed mid-write."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from lase_nb.cache import CallCache, call_key
from lase_nb.errors import CacheMiss, ConfigError
from lase_nb.types import Generation, GenParams, TokenLogprob

MSGS = [{"role": "user", "content": "What is 2 + 2?"}]


def gen(text: str = "\\boxed{4}") -> Generation:
    toks = [TokenLogprob("\\boxed{", -0.1, 0, (("\\boxed{", -0.1),), 0.2),
            TokenLogprob("4", -0.05, 7, (("4", -0.05), ("5", -3.0)), 0.3),
            TokenLogprob("}", -0.01, 8, (), 0.0)]
    return Generation(text, toks, 10, 3, "stop", 0.5, "exact", "local", "m")


def test_key_separates_samples_params_models_and_messages():
    base = call_key("local", "m", MSGS, GenParams())
    assert base == call_key("local", "m", [dict(m) for m in MSGS], GenParams())
    others = [
        call_key("local", "m", MSGS, GenParams(sample=1)),
        call_key("local", "m", MSGS, GenParams(temperature=0.7)),
        call_key("local", "m2", MSGS, GenParams()),
        call_key("openai", "m", MSGS, GenParams()),
        call_key("local", "m", [{"role": "user", "content": "What is 2 + 3?"}], GenParams()),
    ]
    assert len({base, *others}) == 6


def test_roundtrip_and_modes(tmp_path):
    path = tmp_path / "c.sqlite"
    c = CallCache(path)
    k = call_key("local", "m", MSGS, GenParams())
    assert c.lookup(k, "x") is None
    c.put(k, "local", "m", MSGS, GenParams(), gen())
    hit = c.lookup(k, "x")
    assert hit is not None and hit.cached and hit == gen()
    assert hit.tokens[1].top == (("4", -0.05), ("5", -3.0))
    assert CallCache(path, "refresh").lookup(k, "x") is None  # refresh makes the call again
    with pytest.raises(CacheMiss, match="leader call"):
        CallCache(path, "replay").lookup("0" * 64, "leader call (stage 0, sample 0)")
    with pytest.raises(ConfigError, match="use, refresh, replay"):
        CallCache(path, "sometimes")


def _writer(path: str, worker: int, n: int) -> None:
    c = CallCache(path)
    for i in range(n):
        msgs = [{"role": "user", "content": f"w{worker} q{i}"}]
        c.put(call_key("local", "m", msgs, GenParams()), "local", "m", msgs, GenParams(), gen(f"{worker}-{i}"))


def test_concurrent_writers(tmp_path):
    path = str(tmp_path / "c.sqlite")
    CallCache(path)
    procs = [mp.get_context("spawn").Process(target=_writer, args=(path, w, 60)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    c = CallCache(path)
    assert len(c) == 240
    for w in range(4):
        msgs = [{"role": "user", "content": f"w{w} q59"}]
        assert c.get(call_key("local", "m", msgs, GenParams())).text == f"{w}-59"


WRITE_FOREVER = """
import sys
from lase_nb.cache import CallCache, call_key
from lase_nb.types import Generation, GenParams
c = CallCache(sys.argv[1])
big = "x" * 200_000
i = 0
while True:
    msgs = [{"role": "user", "content": f"q{i}"}]
    c.put(call_key("local", "m", msgs, GenParams()), "local", "m", msgs, GenParams(),
          Generation(big + str(i), None, 1, 1, "stop", 0.0, "none"))
    if i == 5:
        print("ready", flush=True)
    i += 1
"""


def test_killed_writer_leaves_readable_cache(tmp_path):
    path = tmp_path / "c.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", WRITE_FOREVER, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
    c = CallCache(path)
    n = len(c)
    assert n >= 6
    for i in range(n):  # every stored entry is complete and parses
        msgs = [{"role": "user", "content": f"q{i}"}]
        g = c.get(call_key("local", "m", msgs, GenParams()))
        assert g is not None and g.text.endswith(str(i)) and len(g.text) > 200_000
