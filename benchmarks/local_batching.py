"""Stage batching on the embedded model: LASE over many problems at once vs one call at a time.

LASE with the **default thresholds** (``StrategyConfig()``: tau_lp 0.8, tau_h 0.5; pass
``--full-chain`` to force every stage instead) on ``--n`` default problems
(:func:`lase_nb.datasets.arithmetic_problems`), greedy, with no cache, so both settings really
decode every call:

* **batched**: ``run_problems(window=n)`` with ``LocalBackend(max_batch=--max-batch)``: the calls
  of all problems that are ready at the same stage go to the model together;
* **single**: ``run_problems(window=1)`` with ``LocalBackend(max_batch=1)``: one call at a time.

Both settings make the same calls (greedy decoding; the answers are compared), so the rate is
completion tokens (every call, EOS included) over wall time, prefill included. Peak memory is
the process's ``ru_maxrss`` after both runs. Targets: ratio >= 3, peak < 3 GiB.

    OMP_WAIT_POLICY=PASSIVE python benchmarks/local_batching.py [--n 32] [--max-tokens 128]
        [--max-batch 8] [--threads N] [--full-chain]

Last line: ``RESULT local_batching tps_batched=... tps_single=... ratio=... peak_mib=...``.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lase_nb.datasets import arithmetic_problems  # noqa: E402
from lase_nb.engine import Engine  # noqa: E402
from lase_nb.runner import run_problems  # noqa: E402
from lase_nb.strategies import ProblemResult, StrategyConfig  # noqa: E402
from lase_nb.types import GenParams  # noqa: E402


def completion_tokens(results: list[ProblemResult]) -> int:
    """Every decoded token: the calls used plus full-chain calls past the stop."""
    return sum(c.completion_tokens for r in results for c in r.calls + r.recording_calls)


def timed_run(backend, problems, cfg: StrategyConfig, window: int) -> tuple[list[ProblemResult], float, int]:
    """(results, wall seconds, model calls) of one uncached LASE run."""
    engine = Engine(backend, None)
    t0 = time.perf_counter()
    results = run_problems("lase", problems, engine, cfg, window=window, progress=False)
    return results, time.perf_counter() - t0, engine.stats.model_calls


def peak_mib() -> float:
    """Peak resident memory of this process (Linux reports ru_maxrss in KiB)."""
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib / 1024 if sys.platform != "darwin" else kib / 2**20


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=32, help="problems (default 32)")
    ap.add_argument("--max-tokens", type=int, default=StrategyConfig().max_tokens,
                    help="leader tokens per call; supporters get min(this, 80)")
    ap.add_argument("--max-batch", type=int, default=8, help="rows decoded together in the batched run")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: all cores)")
    ap.add_argument("--full-chain", action="store_true", help="force every LASE stage (default: thresholds)")
    args = ap.parse_args(argv)

    from lase_nb.backends.local import LocalBackend

    cfg = StrategyConfig(full_chain=args.full_chain, max_tokens=args.max_tokens,
                         supporter_max_tokens=min(StrategyConfig().supporter_max_tokens, args.max_tokens))
    problems = arithmetic_problems(args.n)
    t0 = time.perf_counter()
    batched = LocalBackend(max_batch=args.max_batch, threads=args.threads)
    single = LocalBackend(max_batch=1, threads=args.threads)  # shares the loaded weights
    print(f"model loaded in {time.perf_counter() - t0:.1f} s; {args.n} problems, LASE "
          f"{'full chain' if args.full_chain else f'tau_lp={cfg.tau_lp} tau_h={cfg.tau_h}'}, "
          f"max_tokens={cfg.max_tokens}, supporters {cfg.supporter_max_tokens}, cores {os.cpu_count()}",
          flush=True)
    batched.generate([{"role": "user", "content": "Hi"}], GenParams(max_tokens=4))  # warm-up

    res_b, wall_b, calls_b = timed_run(batched, problems, cfg, window=args.n)
    tok_b = completion_tokens(res_b)
    tps_b = tok_b / wall_b
    print(f"batched (window {args.n}, max_batch {args.max_batch}): {calls_b} calls, {tok_b} tokens "
          f"in {wall_b:.1f} s = {tps_b:.1f} tok/s", flush=True)
    res_s, wall_s, calls_s = timed_run(single, problems, cfg, window=1)
    tok_s = completion_tokens(res_s)
    tps_s = tok_s / wall_s
    print(f"single  (window 1, max_batch 1):  {calls_s} calls, {tok_s} tokens in {wall_s:.1f} s = "
          f"{tps_s:.1f} tok/s", flush=True)

    same = sum(a.answer == b.answer and a.stop_stage == b.stop_stage for a, b in zip(res_b, res_s))
    acc = sum(r.correct for r in res_b) / len(res_b)
    ratio = tps_b / tps_s
    peak = peak_mib()
    print(f"same answer and stop stage in both runs: {same}/{len(problems)}; accuracy {acc:.2f}; "
          f"escalated {sum(bool(r.stop_stage) for r in res_b)}")
    print(f"speed-up {ratio:.2f}x (target >= 3); peak memory {peak:.0f} MiB (target < 3072)")
    print(f"RESULT local_batching tps_batched={tps_b:.1f} tps_single={tps_s:.1f} ratio={ratio:.2f} "
          f"peak_mib={peak:.0f}")


if __name__ == "__main__":
    main()
