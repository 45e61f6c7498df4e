"""Wall time of executing the whole notebook collection on its defaults (papermill, no widgets).

    python benchmarks/notebooks.py [--only 05 01 ...] [--keep DIR]

Runs ``lase_nb.book.execution.run_notebooks(params={"interactive": False}, out=<temp dir>)``, with
figures redirected to the same temporary folder so the repository's ``figures/`` is untouched,
and prints each notebook's time. The embedded model's calls go through the usual cache, so a
second run measures the notebooks rather than the model.
Last line: ``RESULT notebooks total_s=...``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lase_nb.book.execution import list_notebooks, run_notebooks  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None, help="notebook names or prefixes (default: all)")
    ap.add_argument("--keep", type=Path, default=None, help="write executed notebooks here instead of a temp dir")
    args = ap.parse_args()

    books = list_notebooks(args.only)
    print(f"{len(books)} notebooks: {', '.join(b.stem for b in books)}", flush=True)
    with tempfile.TemporaryDirectory(prefix="lase-nb-bench-") as tmp:
        out = args.keep or Path(tmp) / "executed"
        os.environ["LASE_FIGURES_DIR"] = str(Path(tmp) / "figures")
        t0 = time.perf_counter()
        times = run_notebooks(args.only, params={"interactive": False}, out=out)
        total = time.perf_counter() - t0
    width = max(len(k) for k in times)
    for name, secs in times.items():
        print(f"{name:<{width}}  {secs:7.1f} s")
    print(f"{'total':<{width}}  {total:7.1f} s (kernel start-up included)")
    print(f"RESULT notebooks total_s={total:.1f}")


if __name__ == "__main__":
    main()
