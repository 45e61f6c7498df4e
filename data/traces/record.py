"""Record the traces the chapters read by default: the embedded model on the default arithmetic set.

    python data/traces/record.py [--n-full 60] [--n-baselines 30] [--device cpu] [--max-batch 8]

Writes one run folder per strategy under ``--out`` (``lase-full`` is LASE with every stage
recorded, for replay; the baselines run on the first ``--n-baselines`` of the same problems).
Every call goes through the call cache, so an interrupted recording resumes where it stopped.
This is the library-level twin of ``lase-nb run`` (see ``lase-nb run --help``), with the extra knobs a fast
machine needs (device, batch size).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

from lase_nb import traces
from lase_nb.backends.local import LocalBackend
from lase_nb.cache import CallCache
from lase_nb.datasets import load_dataset
from lase_nb.engine import Engine
from lase_nb.runner import run_problems
from lase_nb.strategies import StrategyConfig

BASELINES = ("single", "mv", "mad", "moa", "down", "lase-mv", "lase-shuffled")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="data/traces/arith-smollm2")
    ap.add_argument("--n-full", type=int, default=60)
    ap.add_argument("--n-baselines", type=int, default=30)
    ap.add_argument("--strategies", nargs="*", default=["lase-full", *BASELINES])
    ap.add_argument("--model", default="smollm2-135m", help="alias, model folder or .gguf file")
    ap.add_argument("--model-label", default=None, help="model name written to the manifests")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--max-batch", type=int, default=8)
    ap.add_argument("--window", type=int, default=32)
    ap.add_argument("--cache", default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    backend = LocalBackend(args.model, device=args.device, max_batch=args.max_batch)
    engine = Engine(backend, CallCache(args.cache))
    base = StrategyConfig(seed=args.seed)
    for name in args.strategies:
        strategy, cfg, n = ("lase", replace(base, full_chain=True), args.n_full) if name == "lase-full" \
            else (name, base, args.n_baselines)
        problems = load_dataset("arith", None, n, args.seed)
        t0 = time.perf_counter()
        results = run_problems(strategy, problems, engine, cfg, window=args.window)
        wall = time.perf_counter() - t0
        manifest = traces.provenance(
            command="python data/traces/record.py " + " ".join(sys.argv[1:]),
            strategy=strategy, run_name=name, backend="local", model=args.model_label or backend.model,
            device=args.device, max_batch=args.max_batch, dataset="arith", n=len(problems),
            seed=args.seed, config=asdict(cfg), engine=asdict(engine.stats), wall_s=round(wall, 1))
        traces.write_run(Path(args.out) / name, results, problems, manifest)
        print(f"{name}: {len(problems)} problems in {wall:.0f} s, "
              f"accuracy {sum(r.correct for r in results) / len(results):.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
