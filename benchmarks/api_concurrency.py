"""How close does ``OpenAIBackend.generate_many`` get to ideal overlap of slow API calls?

Serves the OpenAI wire format on 127.0.0.1 with a fixed latency per call (tests/wire_servers.py,
in a child process so that, like a remote API, its CPU does not share our interpreter), then sends ``--calls`` calls through the real ``openai`` SDK at each concurrency level. Ideal wall
time is ``calls x latency / concurrency``; the ratio wall/ideal shows the overhead (1.0 = perfect).
Concurrency 1 runs ``--c1-calls`` calls (default 40, i.e. 4 s) and is compared with its own ideal.

    python benchmarks/api_concurrency.py [--calls 400] [--c1-calls 40] [--latency 0.1]

At high concurrency the client's own CPU per call (SDK request building, HTTP, JSON; ~2-4 ms
here) times the demanded call rate (32 / 0.1 s = 320 calls/s) approaches one core, and the
client's threads share one GIL: that, not the scheduling, is what the c32 ratio measures.

Last line: ``RESULT api_concurrency c1_ratio=... c8_ratio=... c32_ratio=...``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lase_nb.backends.openai_backend import OpenAIBackend  # noqa: E402
from lase_nb.types import GenParams  # noqa: E402
from tests.wire_servers import start_subprocess  # noqa: E402


def run(calls: int, c1_calls: int, latency: float, levels: list[int]) -> dict[int, float]:
    """Wall/ideal ratio per concurrency level."""
    ratios: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp, start_subprocess("openai", tmp, latency_s=latency, log=False) as srv:
        for c in levels:
            n = c1_calls if c == 1 else calls
            b = OpenAIBackend("wire-model", base_url=srv.base_url, api_key="bench", concurrency=c,
                              timeout=30, max_retries=0)
            b.generate([{"role": "user", "content": "warm up"}], GenParams())  # connection + imports
            reqs = [([{"role": "user", "content": f"question {i}"}], GenParams(sample=i)) for i in range(n)]
            before = srv.request_count
            t0, cpu0 = time.perf_counter(), time.process_time()
            gens = b.generate_many(reqs)
            wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
            assert len(gens) == n and srv.request_count - before == n
            ideal = n * latency / c
            ratios[c] = wall / ideal
            print(f"concurrency {c:>3}: {n:>4} calls x {latency * 1000:.0f} ms  wall {wall:7.2f} s  "
                  f"ideal {ideal:7.2f} s  ratio {ratios[c]:.3f}  ({n / wall:.1f} calls/s, "
                  f"client CPU {cpu / n * 1000:.1f} ms/call)", flush=True)
            b.close()
    return ratios


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=400, help="calls at concurrency 8 and 32")
    ap.add_argument("--c1-calls", type=int, default=40, help="calls at concurrency 1")
    ap.add_argument("--latency", type=float, default=0.1, help="server latency per call, seconds")
    ap.add_argument("--levels", default="1,8,32", help="comma-separated concurrency levels")
    a = ap.parse_args(argv)
    levels = [int(x) for x in a.levels.split(",") if x.strip()]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{os.cpu_count()} CPUs, load average {load:.2f}; client threads share one GIL, so at high "
          f"concurrency the ratio is bounded by client CPU per call x calls/s", flush=True)
    ratios = run(a.calls, a.c1_calls, a.latency, levels)
    print("RESULT api_concurrency " + " ".join(f"c{c}_ratio={r:.3f}" for c, r in ratios.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
