"""float32 against bfloat16 on the recorded problems: what the number format changes for the gate.

    python benchmarks/dtype_agreement.py [--n-organism 120] [--n-smollm2 80] [--n-lase 0]

The same prompts through the local backend at both dtypes (bfloat16 emulated where the CPU lacks
it: the numbers are bfloat16's either way, only the speed differs). Per model: the leader's first
answers (LASE's stage 0, the recording's own prompt and settings): answers identical, gate
decisions identical at the recording's thresholds, AUROC of each proxy for errors with its
bootstrap interval at each dtype, accuracy with the exact McNemar test, and the largest change in
``exp(LP_min)`` and ``H_max``. ``--n-lase N`` also runs gated LASE on the first N problems at both
dtypes (accuracy, paired test, escalations). Every call goes through the call cache (bfloat16
calls are keyed apart), so a rerun resumes. Writes ``build/dtype_agreement.json``.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from lase_nb.backends.local import LocalBackend, native_bf16  # noqa: E402
from lase_nb.cache import CallCache  # noqa: E402
from lase_nb.engine import Engine  # noqa: E402
from lase_nb.runner import run_problems  # noqa: E402
from lase_nb.runs import problems_from_manifest  # noqa: E402
from lase_nb.stats import auroc_with_ci, paired_test  # noqa: E402
from lase_nb.strategies import StrategyConfig  # noqa: E402
from lase_nb.traces import load_run  # noqa: E402

RECORDINGS = {"organism": ("data/traces/arith-organism-point/lase-full", "organism"),
              "smollm2": ("data/traces/arith-smollm2/lase-full", "smollm2-135m")}
DTYPES = ("float32", "bfloat16")


def first_answers(results) -> dict:
    """The single agent's answers and the confidence the gate reads (the graded call: the answer-
    extraction step when it ran, as in LASE's stage 0)."""
    last = [r.calls[-1] for r in results]
    return {"answer": [r.answer for r in results], "correct": np.array([bool(r.correct) for r in results]),
            "p_min": np.array([np.nan if c.p_min is None else c.p_min for c in last], float),
            "h_max": np.array([np.nan if c.h_max is None else c.h_max for c in last], float)}


def gated(results) -> dict:
    return {"answer": [r.answer for r in results], "final": np.array([bool(r.correct) for r in results]),
            "escalated": np.array([bool(r.stop_stage) for r in results])}


def compare(a: dict, b: dict) -> dict:
    both = ~np.isnan(a["p_min"]) & ~np.isnan(b["p_min"])
    single = paired_test(b["correct"], a["correct"])
    out = {"n": len(a["answer"]),
           "answers identical": int(sum(x == y for x, y in zip(a["answer"], b["answer"]))),
           "gate decisions identical": int((a["unsure"] == b["unsure"]).sum()),
           "escalated fp32 / bf16": [int(a["unsure"].sum()), int(b["unsure"].sum())],
           "max |d exp(LP_min)|": float(np.max(np.abs(a["p_min"][both] - b["p_min"][both]))) if both.any() else None,
           "max |d H_max|": float(np.max(np.abs(a["h_max"][both] - b["h_max"][both]))) if both.any() else None,
           "single accuracy fp32 / bf16": [float(a["correct"].mean()), float(b["correct"].mean())],
           "single bf16 - fp32": [single["diff"], single["diff_lo"], single["diff_hi"], single["p_value"]]}
    for name, score in (("exp(LP_min)", "p_min"), ("H_max", "h_max")):
        for dt, d in zip(DTYPES, (a, b)):
            s = d[score] if score == "h_max" else -d[score]  # a score that rises with error
            out[f"AUROC {name} {dt}"] = [round(x, 3) for x in auroc_with_ci(s, d["correct"])]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-organism", type=int, default=120)
    ap.add_argument("--n-smollm2", type=int, default=80)
    ap.add_argument("--n-lase", type=int, default=0, help="gated LASE on the first N problems too")
    ap.add_argument("--max-batch", type=int, default=16)
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "dtype_agreement.json")
    args = ap.parse_args()
    cache = CallCache()
    report = {"native_bf16": native_bf16(), "cpu": _cpu_name()}
    for name, n in (("organism", args.n_organism), ("smollm2", args.n_smollm2)):
        if n <= 0:
            continue
        folder, model = RECORDINGS[name]
        run = load_run(ROOT / folder)
        cfg = StrategyConfig.from_manifest(run.manifest["config"])
        problems = list(problems_from_manifest(run.manifest).values())[:n]
        got, lase, secs = {}, {}, {}
        for dt in DTYPES:
            engine = Engine(LocalBackend(model, max_batch=args.max_batch, dtype=dt, emulated_ok=True), cache)
            t0 = time.perf_counter()
            # the single agent: LASE's stage-0 call (same prompt, same settings, so the same cache key)
            got[dt] = first_answers(run_problems("single", problems, engine, cfg, window=64))
            secs[dt] = round(time.perf_counter() - t0, 1)
            if args.n_lase:
                gate_cfg = replace(cfg, full_chain=False)
                lase[dt] = gated(run_problems("lase", problems[:args.n_lase], engine, gate_cfg, window=32))
        # the gate at the recording's thresholds (no answer, or a nan, is unsure)
        for d in got.values():
            d["unsure"] = ~(d["p_min"] >= cfg.tau_lp) | ~(d["h_max"] <= cfg.tau_h)
        row = compare(got["float32"], got["bfloat16"])
        row["seconds fp32 / bf16"] = [secs["float32"], secs["bfloat16"]]
        if lase:
            t = paired_test(lase["bfloat16"]["final"], lase["float32"]["final"])
            row["gated LASE"] = {"n": args.n_lase, "accuracy fp32 / bf16": [t["acc_b"], t["acc_a"]],
                                 "bf16 - fp32": [t["diff"], t["diff_lo"], t["diff_hi"], t["p_value"]],
                                 "escalated fp32 / bf16": [int(lase[d]["escalated"].sum()) for d in DTYPES],
                                 "final answers identical": int(sum(x == y for x, y in zip(
                                     lase["float32"]["answer"], lase["bfloat16"]["answer"])))}
        report[name] = row
        print(json.dumps({name: row}, indent=1, default=float))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, default=float) + "\n")
    return 0


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    raise SystemExit(main())
