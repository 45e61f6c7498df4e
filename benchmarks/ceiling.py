"""LASE's ceiling with our leaders: their revision after a perfect supporter's note (no training).

    python benchmarks/ceiling.py [--recordings organism smollm2] [--max-batch 16] [--threads N]

For every first answer of a full-chain LASE recording whose chain is known, a note written by code
(:mod:`lase_nb.ceiling`: variants a, b, c on wrong answers; all clear and two false alarms on right
ones) goes through the leader's real revision call. Every call goes through the call cache
(``$LASE_CACHE``), so an interrupted run resumes; the rows go to ``data/ceiling/<name>.jsonl``
(one per note) with ``data/ceiling/<name>.json`` (what was run), which chapter 06 reads.
Last lines: the ceiling table, the right-answer table and the stop rule.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402
from tqdm import tqdm  # noqa: E402

from lase_nb import ceiling  # noqa: E402
from lase_nb.backends.local import LocalBackend  # noqa: E402
from lase_nb.cache import CallCache  # noqa: E402
from lase_nb.engine import Engine  # noqa: E402
from lase_nb.runs import problems_from_manifest  # noqa: E402
from lase_nb.strategies import StrategyConfig  # noqa: E402
from lase_nb.traces import load_run  # noqa: E402

#: The recordings measured: name -> (full-chain LASE run, the local model that made it).
RECORDINGS = {
    "organism": ("data/traces/arith-organism-point/lase-full", "organism"),
    "smollm2": ("data/traces/arith-smollm2/lase-full", "smollm2-135m"),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recordings", nargs="*", default=list(RECORDINGS), choices=list(RECORDINGS))
    ap.add_argument("--max-batch", type=int, default=16)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--chunk", type=int, default=64, help="notes sent together (the progress bar's step)")
    ap.add_argument("--out", type=Path, default=ROOT / "data" / "ceiling")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    cache = CallCache()
    frames = []
    for name in args.recordings:
        folder, model = RECORDINGS[name]
        run = load_run(ROOT / folder)
        cfg = StrategyConfig(**{k: (tuple(v) if isinstance(v, list) else v)
                                for k, v in run.manifest["config"].items()})
        cases, seen = ceiling.cases_from_run(ceiling.first_attempts(run, problems_from_manifest(run.manifest)))
        engine = Engine(LocalBackend(model, max_batch=args.max_batch, threads=args.threads), cache)
        label = run.manifest.get("model", model)
        t0 = time.perf_counter()
        parts = []
        for i in tqdm(range(0, len(cases), args.chunk), desc=f"{name}: notes", unit="chunk"):
            parts.append(ceiling.send(engine, cases[i:i + args.chunk], cfg.params(), cfg.examples, label))
        rows = pd.concat(parts, ignore_index=True)
        rows.to_json(args.out / f"{name}.jsonl", orient="records", lines=True, force_ascii=False)
        (args.out / f"{name}.json").write_text(json.dumps({
            "recording": folder, "model": label, "backend_model": model, "dtype": engine.backend.dtype,
            "examples": cfg.examples, "first_attempts": dict(seen), "notes": len(cases),
            "model_calls": engine.stats.model_calls, "cache_hits": engine.stats.cache_hits,
            "seconds": round(time.perf_counter() - t0, 1), "stop_rule": ceiling.STOP_RULE,
            "command": "python benchmarks/ceiling.py " + " ".join(sys.argv[1:])}, indent=1) + "\n")
        frames.append(rows)
    rows = pd.concat(frames, ignore_index=True)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(ceiling.kinds_table(rows).to_string())
        print(ceiling.ceiling_table(rows).to_string(index=False))
        print(ceiling.right_table(rows).to_string(index=False))
        print(ceiling.stop_rule(rows).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
