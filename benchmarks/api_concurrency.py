"""How close does ``OpenAIBackend.generate_many`` get to ideal overlap of slow API calls?

Serves the OpenAI wire format on 127.0.0.1 with a fixed latency per call (tests/wire_servers.py,
in a child process so that, like a remote API, its CPU does not share our interpreter), then sends ``--calls`` calls through the real ``openai`` SDK at each concurrency level. Ideal wall
time is ``calls x latency / concurrency``; the ratio wall/ideal shows the overhead (1.0 = perfect).
Concurrency 1 runs ``--c1-calls`` calls (default 40, i.e. 4 s) and is compared with its own ideal.

    python benchmarks/api_concurrency.py [--calls 400] [--c1-calls 40] [--latency 0.1]
        [--slow-latency 1.0] [--slow-levels 32]

Then the same ``--calls`` at a realistic API latency (``--slow-latency``, default 1 s) at
``--slow-levels`` (default 32), where the target is within 1.1x of ideal. Every level also
reports the client's CPU time per call (all its threads: SDK request building, HTTP, JSON).

What bounds the 100 ms case: at concurrency 32 the demanded rate is 32 / 0.1 s = 320 calls/s;
the client's CPU per call (1.5-2 ms measured: SDK request building, HTTP, JSON) times that rate
is about half a core, spent by 32 threads that take turns on one GIL, on a 2-core machine that
also runs the server process. The scheduling itself adds nothing measurable: at 1 s the demand
is 32 calls/s, a tenth of that, and the ratio is within 1.1x of ideal.

The single-slot case (``--single-slot``, or ``--only-single-slot`` for it alone, ~15 s): a server
that works on one request at a time, as llama.cpp's server does (``slots=1``: ``--slot-delay``
seconds each, the rest queued), and a LASE full chain on ``--slot-problems`` problems at the
backend's default concurrency with ``--slot-timeout`` seconds per call (the ratio of timeout to
delay is what matters: 1.0 / 0.3 is the 20 s / 6 s of issue 38). It reports the requests sent
against the calls the run needed (the rest were sent again after a client gave up on them) and
the wall time against the ideal (calls x delay: the slot never idle, nothing served twice).

Last line: ``RESULT api_concurrency c1_ratio=... c8_ratio=... c32_ratio=... c32_ratio_1s=...
cpu_ms_per_call=...`` (and ``slot_requests=... slot_calls=... slot_wasted=... slot_ratio=...``).
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
from lase_nb.errors import BackendError  # noqa: E402
from lase_nb.types import GenParams  # noqa: E402
from tests.wire_servers import start_subprocess  # noqa: E402


def run(calls: int, c1_calls: int, latency: float, levels: list[int]) -> dict[int, tuple[float, float]]:
    """(wall/ideal ratio, client CPU ms per call) per concurrency level."""
    ratios: dict[int, tuple[float, float]] = {}
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
            ratios[c] = (wall / ideal, cpu / n * 1000)
            print(f"concurrency {c:>3}: {n:>4} calls x {latency * 1000:.0f} ms  wall {wall:7.2f} s  "
                  f"ideal {ideal:7.2f} s  ratio {wall / ideal:.3f}  ({n / wall:.1f} calls/s, "
                  f"client CPU {cpu / n * 1000:.1f} ms/call = {cpu / wall:.2f} of a core)", flush=True)
            b.close()
    return ratios


def single_slot(problems: int, delay: float, timeout: float) -> dict[str, float]:
    """A LASE full chain against a one-slot server at the default concurrency: requests, calls, wall."""
    from lase_nb.datasets import load_dataset
    from lase_nb.engine import Engine
    from lase_nb.runner import run_problems
    from lase_nb.strategies import StrategyConfig

    with tempfile.TemporaryDirectory() as tmp, \
            start_subprocess("openai", tmp, latency_s=delay, log=False, slots=1) as srv:
        backend = OpenAIBackend("wire-model", base_url=srv.base_url, api_key="bench", timeout=timeout)
        engine = Engine(backend)
        failure = ""
        t0 = time.perf_counter()
        try:
            run_problems("lase", load_dataset("arith", n=problems), engine, StrategyConfig(full_chain=True),
                         progress=False)
        except BackendError as e:
            failure = str(e)
        wall = time.perf_counter() - t0
        backend.close()
        sent = srv.request_count
    calls = engine.stats.model_calls
    ideal = max(calls, 1) * delay
    print(f"single slot: LASE full chain, {problems} problems, concurrency {backend.concurrency}, "
          f"{delay:g} s a request, --timeout {timeout:g}: {sent} requests for {calls} calls "
          f"({sent - calls} wasted, {(sent - calls) / max(sent, 1):.0%}); wall {wall:.1f} s, "
          f"ideal {ideal:.1f} s, ratio {wall / ideal:.2f}" + (f"; FAILED: {failure}" if failure else ""),
          flush=True)
    return {"slot_requests": sent, "slot_calls": calls, "slot_wasted": (sent - calls) / max(sent, 1),
            "slot_ratio": wall / ideal, "slot_failed": float(bool(failure))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=400, help="calls at concurrency 8 and 32")
    ap.add_argument("--c1-calls", type=int, default=40, help="calls at concurrency 1")
    ap.add_argument("--latency", type=float, default=0.1, help="server latency per call, seconds")
    ap.add_argument("--levels", default="1,8,32", help="comma-separated concurrency levels")
    ap.add_argument("--slow-latency", type=float, default=1.0,
                    help="a realistic API latency, seconds (0 skips this part)")
    ap.add_argument("--slow-levels", default="32", help="concurrency levels at --slow-latency")
    ap.add_argument("--single-slot", action="store_true", help="also run the single-slot case")
    ap.add_argument("--only-single-slot", action="store_true", help="run the single-slot case alone")
    ap.add_argument("--slot-problems", type=int, default=6, help="single slot: problems (7 calls each)")
    ap.add_argument("--slot-delay", type=float, default=0.3, help="single slot: seconds a request")
    ap.add_argument("--slot-timeout", type=float, default=1.0, help="single slot: the backend's --timeout")
    a = ap.parse_args(argv)
    if a.only_single_slot:
        got = single_slot(a.slot_problems, a.slot_delay, a.slot_timeout)
        print("RESULT api_concurrency " + " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                                                   for k, v in got.items()))
        return 0
    levels = [int(x) for x in a.levels.split(",") if x.strip()]
    slow_levels = [int(x) for x in a.slow_levels.split(",") if x.strip()]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{os.cpu_count()} CPUs, load average {load:.2f}; client threads share one GIL, so at high "
          f"concurrency the ratio is bounded by client CPU per call x calls/s", flush=True)
    ratios = run(a.calls, a.c1_calls, a.latency, levels)
    fields = [f"c{c}_ratio={r:.3f}" for c, (r, _) in ratios.items()]
    cpu = [ms for _, ms in ratios.values()]
    if a.slow_latency > 0 and slow_levels:
        slow = run(a.calls, a.c1_calls, a.slow_latency, slow_levels)
        fields += [f"c{c}_ratio_{a.slow_latency:g}s={r:.3f}" for c, (r, _) in slow.items()]
        cpu += [ms for _, ms in slow.values()]
        top = max(levels, default=1)
        if top in ratios:
            ms = ratios[top][1]
            print(f"at {a.latency * 1000:.0f} ms, concurrency {top} demands {top / a.latency:.0f} calls/s x "
                  f"{ms:.1f} ms client CPU = {top / a.latency * ms / 1000:.2f} core-seconds per second "
                  f"under one GIL: that bounds the ratio there; at {a.slow_latency:g} s the demand is "
                  f"{top / a.slow_latency:.0f} calls/s", flush=True)
    fields.append(f"cpu_ms_per_call={sum(cpu) / max(len(cpu), 1):.2f}")
    if a.single_slot:
        got = single_slot(a.slot_problems, a.slot_delay, a.slot_timeout)
        fields += [f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in got.items()]
    print("RESULT api_concurrency " + " ".join(fields))
    return 0


if __name__ == "__main__":
    sys.exit(main())
