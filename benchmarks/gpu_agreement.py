"""A GPU against the CPU on one small study: what the device changes for the answers and the gate.

    python benchmarks/gpu_agreement.py [--device cuda] [--n 20] [--strategies single lase-full] [--model smollm2-135m]

Records the same study twice with ``lase-nb record`` on the embedded model (or ``--model``), once
with ``--device cpu`` and once on the GPU, each with its own new call cache (so no answer is
reused across devices), float32 both times. Then, per run folder: answers identical, accuracy on
each device; for LASE's full chain, every stage's gate decision at the study's thresholds and the
largest change in ``exp(LP_min)`` and ``H_max`` over the stages both devices reached; and the wall
time of each recording. Writes ``build/gpu_agreement/`` (both studies) and
``build/gpu_agreement.json``; last line ``RESULT gpu_agreement ...``.

Without a GPU (``--device auto`` finds none) it says so and exits 0, so ``make benchmarks`` runs on
a CPU-only machine; a GPU named with ``--device cuda`` that torch cannot reach is one error line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from lase_nb import cli  # noqa: E402
from lase_nb.backends.local import resolve_device  # noqa: E402
from lase_nb.errors import LaseError  # noqa: E402
from lase_nb.runs import load_runs  # noqa: E402


def record(device: str, out: Path, args: argparse.Namespace) -> float:
    """``lase-nb record`` of the study on ``device`` into ``out`` with a new call cache; its seconds."""
    cache = Path(tempfile.mkdtemp(prefix=f"gpu-agreement-{device.replace(':', '')}-")) / "cache.sqlite"
    argv = ["record", "--device", device, "--dtype", "float32", "--n", str(args.n), "--seed", str(args.seed),
            "--n-down-calibration", "0", "--strategies", *args.strategies, "--out", str(out),
            "--cache", str(cache), "--label", f"{args.model} on {device}", "--quiet"]
    if args.model:
        argv += ["--model", args.model]
    t0 = time.perf_counter()
    rc = cli.main(argv)
    if rc != 0:
        raise SystemExit(f"gpu_agreement: the recording on {device} failed (exit {rc})")
    return time.perf_counter() - t0


def compare(cpu: Path, gpu: Path, tau_lp: float, tau_h: float) -> dict:
    """Per run folder of both studies: answers identical, accuracies; LASE's stages: gate decisions
    identical and the largest changes of the two confidences."""
    a, b = load_runs(cpu), load_runs(gpu)
    out: dict = {}
    for name in sorted(set(a) & set(b)):
        pa, pb = (r.problems.set_index("problem_id") for r in (a[name], b[name]))
        ids = pa.index.intersection(pb.index)
        row = {"n": len(ids), "answers identical": int((pa.loc[ids, "answer"].astype(str)
                                                        == pb.loc[ids, "answer"].astype(str)).sum()),
               "accuracy cpu / gpu": [float(pa.loc[ids, "correct"].mean()), float(pb.loc[ids, "correct"].mean())]}
        sa, sb = a[name].stages, b[name].stages
        if len(sa) and len(sb):
            key = ["problem_id", "stage"]
            both = sa.merge(sb, on=key, suffixes=("_cpu", "_gpu"))
            pc, pg = both["p_min_cpu"].astype(float), both["p_min_gpu"].astype(float)
            hc, hg = both["h_max_cpu"].astype(float), both["h_max_gpu"].astype(float)
            sure_c, sure_g = (pc >= tau_lp) & (hc <= tau_h), (pg >= tau_lp) & (hg <= tau_h)
            ok = pc.notna() & pg.notna()
            row.update({"stages compared": len(both), "stage answers identical":
                        int((both["answer_cpu"].astype(str) == both["answer_gpu"].astype(str)).sum()),
                        "gate decisions identical": int((sure_c == sure_g).sum()),
                        "max |d exp(LP_min)|": float(np.max(np.abs(pc[ok] - pg[ok]))) if ok.any() else None,
                        "max |d H_max|": float(np.max(np.abs(hc[ok] - hg[ok]))) if ok.any() else None})
        out[name] = row
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="auto", help="the GPU to compare with the CPU (default auto: the first found)")
    ap.add_argument("--n", type=int, default=20, help="problems of the study (default 20)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", default="smollm2-135m", help="a local model: alias, folder or .gguf (default the embedded one)")
    ap.add_argument("--strategies", nargs="+", default=["single", "lase-full"])
    ap.add_argument("--tau-lp", type=float, default=0.8)
    ap.add_argument("--tau-h", type=float, default=0.5)
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "gpu_agreement")
    args = ap.parse_args()
    try:
        device = resolve_device(args.device)
    except LaseError as e:
        print(f"gpu_agreement: error: {e}", file=sys.stderr)
        return 2
    if device == "cpu":
        print("gpu_agreement: skipped: torch finds no GPU on this machine (install a CUDA build of torch: "
              "docs/your_model.md, 'Your GPU')")
        print("RESULT gpu_agreement skipped=no-gpu")
        return 0
    import torch

    seconds = {}
    for dev in ("cpu", device):
        seconds[dev] = round(record(dev, args.out / dev.replace(":", ""), args), 1)
    report = {"gpu": torch.cuda.get_device_name(device) if device.startswith("cuda") else device,
              "torch": torch.__version__, "cuda": torch.version.cuda, "model": args.model, "n": args.n,
              "seconds cpu / gpu": [seconds["cpu"], seconds[device]],
              "runs": compare(args.out / "cpu", args.out / device.replace(":", ""), args.tau_lp, args.tau_h)}
    print(json.dumps(report, indent=1, default=float))
    target = args.out.parent / "gpu_agreement.json"
    target.write_text(json.dumps(report, indent=1, default=float) + "\n")
    lase = report["runs"].get("lase-full", {})
    single = report["runs"].get("single", {})
    print(f"RESULT gpu_agreement device={device} n={args.n} single_identical={single.get('answers identical')} "
          f"gate_identical={lase.get('gate decisions identical')}/{lase.get('stages compared')} "
          f"max_d_p={lase.get('max |d exp(LP_min)|')} max_d_h={lase.get('max |d H_max|')} "
          f"cpu_s={seconds['cpu']} gpu_s={seconds[device]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
