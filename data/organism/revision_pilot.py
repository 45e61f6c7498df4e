"""Issue 42's stop rule, step two: can the leader learn to act on a perfect note? (a pilot)

    .venv/bin/python data/organism/revision_pilot.py [--limit-min 30]

The shipped organism (v5) was never trained to read notes in the words of
:mod:`lase_nb.organism.ceiling`, so its ceiling under them is a floor. This pilot trains its revision
alone, on train-split problems only: the stage-1 solver's own sampled attempts
(``data/organism/attempts.jsonl``: the "sample" training set), each with the perfect note of
variant a or b (a wrong attempt: the target is the right chain), the all-clear note or a false
alarm (a right attempt: the target keeps the attempt's chain). One epoch of LoRA from v5's
adapter, the recipe's settings (``train.py``); the adapter and its log go to
``build/revision-pilot/``. ``benchmarks/ceiling.py --model-dir build/revision-pilot/merged``
measures the ceiling again on the held-out recording. Never run in CI.

    .venv/bin/python data/organism/revision_pilot.py --ship

copies the trained adapter to ``data/organism/revision/`` (organism v6's revision, ``--model
organism-revision``; routed by role in ``--model organism-v6``) with a manifest: its sha256, the
recipe, the adapter it started from, the training log, and ``training_sets`` (what trained it, read
by the overlap checks).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "data" / "organism"))

from lase_nb.organism import ceiling, recipe as organism  # noqa: E402
from lase_nb import prompts  # noqa: E402
from lase_nb.backends.local.files import ORGANISM_DIR  # noqa: E402


def examples(seed: int = 0) -> tuple[list, dict]:
    """(messages, target) pairs for the revision, and counts by case."""
    problems = {p.id: p for p in organism.training_problems("sample")}
    rng = random.Random(seed)
    out, counts = [], {"wrong": 0, "clear": 0, "alarm": 0, "skipped": 0}
    for line in (ORGANISM_DIR / "attempts.jsonl").read_text().splitlines():
        row = json.loads(line)
        p = problems.get(row["id"])
        if p is None:
            counts["skipped"] += 1
            continue
        label = organism.label_attempt(p, row["text"])
        gold = organism.solution_text(organism.gold_steps(p))
        if label.status == "wrong":
            note, _ = ceiling.perfect_note(p, label, rng.choice("ab"))
            case = "wrong"
        elif label.status == "right":
            if rng.random() < 0.5:
                note, case = ceiling.clear_note(label), "clear"
            else:
                note, _ = ceiling.false_alarm_note(label, rng.choice(["alarm-a", "alarm-b"]), rng)
                case = "alarm"
        else:
            counts["skipped"] += 1
            continue
        assert ceiling.obeys_rule(note, p, row["text"]), note
        out.append((prompts.revise_messages(p, row["text"], "devil", note, examples=0), gold))
        counts[case] += 1
    return out, counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "revision-pilot")
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--ship", action="store_true", help="copy the trained adapter to data/organism/revision/")
    args = ap.parse_args()
    if args.ship:
        return ship(args.out)

    import peft
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import train as recipe
    from lase_nb.backends.local import default_model_dir, merge_adapter

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    base = default_model_dir()
    tok = AutoTokenizer.from_pretrained(str(base), local_files_only=True)
    ex, counts = examples()
    print(f"{len(ex)} revision examples: {counts}")
    t0 = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(str(base), local_files_only=True, dtype=torch.float32)
    model = peft.PeftModel.from_pretrained(model, str(ORGANISM_DIR), is_trainable=True)
    log = recipe.train(model, tok, ex, lr=args.lr, batch=args.batch, seed=0, label="revision pilot")
    adapter = args.out / "adapter"
    recipe.save_fp16(model, adapter)
    merged = merge_adapter(adapter, args.out / "merged", base=base)
    log.update(counts=counts, from_adapter=organism_sha(), wall_s=round(time.perf_counter() - t0, 1),
               merged=str(merged))
    (args.out / "log.json").write_text(json.dumps(log, indent=1) + "\n")
    print(json.dumps({k: v for k, v in log.items() if k != "loss_curve"}, indent=1))
    return 0


def ship(out: Path) -> int:
    """Copy the adapter trained into ``out`` to ``data/organism/revision/`` with its manifest."""
    import shutil

    from lase_nb.backends.local.files import REVISION_DIR, _sha256

    log = json.loads((out / "log.json").read_text())
    REVISION_DIR.mkdir(parents=True, exist_ok=True)
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        shutil.copyfile(out / "adapter" / name, REVISION_DIR / name)
    manifest = {
        "adapter_sha256": _sha256(REVISION_DIR / "adapter_model.safetensors"),
        "what": "LoRA adapter on SmolLM2-135M-Instruct: organism v6's leader revision (the revision pilot of issue 42, "
                "retrained with the same data, seed and recipe); v6 routes the leader's revisions to it and every "
                "other call to v5 (data/organism/)",
        "from_adapter": log["from_adapter"],
        "recipe": {"script": "data/organism/revision_pilot.py", "lr": 3e-4, "batch": 8, "epochs": 1, "seed": 0,
                   "examples": "the stage-1 solver's own sampled attempts (attempts.jsonl) with a perfect note of "
                               "variant a or b (wrong attempt -> the gold chain), the all-clear note or a false alarm "
                               "(right attempt -> the attempt kept); lase_nb.prompts.revise_messages, no worked examples"},
        "training_sets": {"sample": organism.TRAINING_SETS["sample"]},
        "train_log": {k: v for k, v in log.items() if k not in ("merged", "loss_curve")},
        "loss_curve": log.get("loss_curve"),
    }
    (REVISION_DIR / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"shipped {REVISION_DIR} (sha256 {manifest['adapter_sha256'][:12]})")
    return 0


def organism_sha() -> str:
    return json.loads((ORGANISM_DIR / "manifest.json").read_text())["adapter_sha256"]


if __name__ == "__main__":
    raise SystemExit(main())
