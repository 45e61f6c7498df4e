"""Speed of counterfactual replay: a whole threshold grid, and one slider update.

    python benchmarks/replay_sweep.py [--problems 1000] [--stages 4] [--grid 100] [--repeats 5]

A synthetic full-chain recording (``tests.synthetic.synthetic_chains``: 1,000 problems x 4 stages by
default) is replayed on a 100 x 100 grid of (tau_lp, tau_h) with ``grid_metrics`` (the
tests check it equals replay at every pair). Peak memory is measured with tracemalloc in a
separate call. Then the slider panel is built and its callback timed: replay at the new thresholds,
marker moved, PNG encoded, table row and sentence rewritten. The best of ``--repeats`` runs is
kept for the grid (a shared machine adds noise); the median for the slider.
Targets: grid < 1 s, update < 50 ms.
Last line: ``RESULT replay_sweep grid_s=... update_ms=...``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from lase_nb.replay import grid_metrics, operating_point, sweep  # noqa: E402
from lase_nb.chapters import pareto, sliders  # noqa: E402
from tests.synthetic import synthetic_chains  # noqa: E402


def best_time(fn, repeats: int) -> tuple[float, object]:
    """Best wall time of ``repeats`` calls, and the last result."""
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def peak_mb(fn) -> float:
    """Peak memory traced during one call of ``fn`` (numpy buffers included), in MB."""
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2 ** 20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=1000)
    ap.add_argument("--stages", type=int, default=4)
    ap.add_argument("--grid", type=int, default=100, help="values per threshold axis")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--updates", type=int, default=40, help="slider moves to time")
    args = ap.parse_args()

    chains = synthetic_chains(args.problems, args.stages, seed=0)
    tl, th = np.linspace(0, 1, args.grid), np.linspace(0, 2, args.grid)
    cells = args.grid ** 2 * args.problems * args.stages
    print(f"recording: {args.problems} problems x {args.stages} stages; grid {args.grid} x {args.grid} "
          f"= {args.grid ** 2:,} threshold pairs ({cells / 1e6:.0f} M problem-stage-pair cells)")

    fast_s, _ = best_time(lambda: grid_metrics(chains, tl, th), args.repeats)
    fast_mb = peak_mb(lambda: grid_metrics(chains, tl, th))
    print(f"whole grid, grid_metrics: {fast_s:.3f} s, peak {fast_mb:.0f} MB")

    t0 = time.perf_counter()
    grid = sweep(chains, *pareto.threshold_axes(chains, 41))
    controls = sliders.threshold_sliders(chains, 0.8, 0.5, grid=grid)
    build_s = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    total, compute = [], []
    for i in range(args.updates):
        slider = controls.tau_lp if i % 2 == 0 else controls.tau_h
        value = round(float(rng.uniform(slider.min, slider.max)), 2)
        t0 = time.perf_counter()
        slider.value = value  # fires the callback exactly as a browser would
        total.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        operating_point(chains, controls.tau_lp.value, controls.tau_h.value)
        compute.append(time.perf_counter() - t0)
    update_ms = 1000 * statistics.median(total)
    print(f"slider panel built in {build_s:.2f} s; one slider update (replay + marker + PNG + table row): "
          f"median {update_ms:.1f} ms, max {1000 * max(total):.1f} ms over {len(total)} moves; "
          f"replay alone median {1000 * statistics.median(compute):.1f} ms; "
          f"PNG {len(controls.image.value) / 1024:.0f} KB")
    verdict = "ok" if fast_s < 1 and update_ms < 50 else "SLOW"
    print(f"targets: grid < 1 s, update < 50 ms: {verdict}")
    print(f"RESULT replay_sweep grid_s={fast_s:.3f} update_ms={update_ms:.1f}")


if __name__ == "__main__":
    main()
