"""The organism's training step at float32 and under bfloat16 autocast, on the same batches.

    python benchmarks/train_step.py [--examples 48] [--batch 8] [--threads N]

A fresh LoRA (the recipe's settings, ``data/organism/train.py``) on the embedded model, one epoch
over the same solve examples at each dtype (bfloat16 emulated where the CPU lacks native support;
the weights and the optimiser stay float32, as in ``train.py --dtype bfloat16``). Prints tokens/s
and the mean loss of each run; the last line ``RESULT train_step ...``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "data" / "organism"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=48)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()

    import peft
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import train as recipe
    from lase_nb.organism import recipe as organism
    from lase_nb.backends.local import default_model_dir, native_bf16

    torch.set_num_threads(args.threads)
    base = default_model_dir()
    tok = AutoTokenizer.from_pretrained(str(base), local_files_only=True)
    ex = organism.solve_examples(organism.training_problems("solve", args.examples))
    out = {}
    for dtype in ("float32", "bfloat16"):
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_pretrained(str(base), local_files_only=True, dtype=torch.float32)
        model = peft.get_peft_model(model, peft.LoraConfig(task_type="CAUSAL_LM", **recipe.LORA))
        log = recipe.train(model, tok, ex, lr=3e-4, batch=args.batch, seed=0, label=dtype, dtype=dtype)
        losses = [x for _, x in log["loss_curve"]]
        out[dtype] = (log["tokens_per_s"], sum(losses) / len(losses))
        print(f"{dtype}: {log['tokens']} tokens in {log['seconds']} s = {log['tokens_per_s']} tok/s, "
              f"mean loss {out[dtype][1]:.4f}")
    print(f"RESULT train_step native_bf16={native_bf16()} tps_fp32={out['float32'][0]} "
          f"tps_bf16={out['bfloat16'][0]} ratio={out['bfloat16'][0] / out['float32'][0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
