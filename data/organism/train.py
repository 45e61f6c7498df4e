"""Train the model organism: a LoRA adapter on the embedded SmolLM2-135M (never run in CI).

    .venv/bin/python data/organism/train.py            # the committed recipe (~1.5 h on 2 cores), then:
    .venv/bin/python benchmarks/organism_skills.py --manifest   # the skill evaluation (~30 min)
    .venv/bin/python data/organism/train.py --toy      # every stage at toy size (minutes), into build/

Every problem comes from the "train" split (:data:`lase_nb.organism.recipe.TRAINING_SETS`, written into
the manifest as ``training_sets``): no evaluation or recorded problem shares its template and
numbers. The recipe (:mod:`lase_nb.organism.recipe` has the formats and the data functions):

1. **solve**: LoRA on zero-shot solve examples of levels 1-3 (the pipeline's solver prompt ->
   the gold chain, one step per line, the last operation inside the box);
2. **sample**: the stage-1 solver, merged and run through the local backend at temperature 0.8
   on other level 1-3 problems; each attempt labelled against the gold chain;
3. **review and revise**: for each labelled attempt (the sampled ones, wrong first, and slipped
   variants of those it got right), the devil's advocate's note, the collaborator's and the
   expert's notes on some of them, and the leader's revision after one note, in the messages
   LASE's pipeline sends (:func:`lase_nb.organism.recipe.support_examples`). The notes point at the
   failing step and never state the answer; the revision redoes the flagged step column by
   column and keeps an answer that agrees; plus fresh solve examples;
4. **evaluate** (``benchmarks/organism_skills.py``) on calibration problems of the eval split.

Each stage writes its result under ``--work`` and is skipped when that result exists, so an
interrupted run resumes at the stage it stopped in. The adapter is saved in fp16 as
``adapter_model.safetensors`` (peft's own name) with ``adapter_config.json`` and ``manifest.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "data" / "organism"))

import round3  # noqa: E402
from lase_nb.organism import recipe as organism  # noqa: E402
from lase_nb.backends.local.files import ORGANISM_DIR  # noqa: E402
from lase_nb.organism.recipe import TRAINING_SETS  # noqa: E402

LORA = dict(r=16, lora_alpha=32, lora_dropout=0.05,
            target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])


def encode(tok, examples, max_len: int = 768) -> list[tuple[list[int], list[int]]]:
    """(input ids, labels) per example; the loss is on the assistant's reply (and its end token) only."""
    out = []
    for messages, target in examples:
        prompt = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        full = tok.apply_chat_template([*messages, {"role": "assistant", "content": target}],
                                       tokenize=False)
        if not full.startswith(prompt):
            raise RuntimeError("the chat template does not extend the prompt with the reply")
        p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
        ids = tok(full, add_special_tokens=False)["input_ids"][:max_len]
        if ids[:len(p_ids)] != p_ids:
            raise RuntimeError("tokenising the reply changed the prompt's tokens")
        out.append((ids, [-100] * len(p_ids) + ids[len(p_ids):]))
    return out


def batches(encoded, batch: int, seed: int, max_tokens: int = 2048) -> list[list[int]]:
    """Indices in batches of similar length (little padding), in a seeded random order: at most
    ``batch`` examples and at most ``max_tokens`` padded tokens each, so long examples go in
    smaller batches (a batch of eight 700-token reviews needs ~13 GiB for its activations and
    logits, and a process that large spends most of its time in the kernel)."""
    rng = random.Random(seed)
    order = list(range(len(encoded)))
    rng.shuffle(order)
    out = []
    for i in range(0, len(order), batch * 16):
        cur: list[int] = []
        for j in sorted(order[i:i + batch * 16], key=lambda j: len(encoded[j][0])):
            width = max([len(encoded[k][0]) for k in cur] + [len(encoded[j][0])])
            if cur and (len(cur) == batch or width * (len(cur) + 1) > max_tokens):
                out.append(cur)
                cur = []
            cur.append(j)
        if cur:
            out.append(cur)
    rng.shuffle(out)
    return out


def train(model, tok, examples, *, lr: float, batch: int, seed: int, label: str, dtype: str = "float32",
          on_step=None) -> dict:
    """One epoch of AdamW with a short warm-up and linear decay; returns the loss curve and speed.
    ``dtype`` bfloat16 runs the forward pass under CPU autocast (the weights and the optimiser stay
    float32). ``on_step(step, examples_seen)`` is called after each optimiser step (checkpoints of a
    learning curve)."""
    import contextlib

    import torch
    from tqdm import tqdm

    enc = encode(tok, examples)
    plan = batches(enc, batch, seed)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    warm = max(1, len(plan) // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.1, 1 - s / len(plan)))
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    model.train()
    curve, window, tokens, seen, t0 = [], [], 0, 0, time.perf_counter()
    bar = tqdm(plan, desc=label, unit="batch")
    for step, idx in enumerate(bar):
        width = max(len(enc[j][0]) for j in idx)
        ids = torch.full((len(idx), width), pad)
        labels = torch.full((len(idx), width), -100)
        mask = torch.zeros((len(idx), width), dtype=torch.long)
        for row, j in enumerate(idx):
            x, y = enc[j]
            ids[row, :len(x)] = torch.tensor(x)
            labels[row, :len(y)] = torch.tensor(y)
            mask[row, :len(x)] = 1
        with (torch.autocast("cpu", dtype=torch.bfloat16) if dtype == "bfloat16" else contextlib.nullcontext()):
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        tokens += int(mask.sum())
        seen += len(idx)
        if on_step is not None:
            on_step(step + 1, seen)
        window.append(float(loss.detach()))
        if len(window) == 10 or step == len(plan) - 1:
            curve.append([step + 1, round(sum(window) / len(window), 4)])
            window = []
        bar.set_postfix(loss=f"{float(loss):.3f}", tok_s=f"{tokens / (time.perf_counter() - t0):.0f}")
    model.eval()
    secs = time.perf_counter() - t0
    return {"examples": len(examples), "steps": len(plan), "tokens": tokens, "seconds": round(secs, 1), "dtype": dtype,
            "tokens_per_s": round(tokens / secs, 1), "loss_curve": curve}


def save_fp16(model, folder: Path) -> None:
    """Save the adapter with its weights in fp16 (half the file; the merge casts back to fp32)."""
    import torch
    from safetensors.torch import load_file, save_file

    model.save_pretrained(str(folder))
    f = folder / "adapter_model.safetensors"
    save_file({k: v.to(torch.float16) for k, v in load_file(str(f)).items()}, str(f))


def sample_attempts(model_dir: Path, problems, out: Path, temperature: float, seed: int) -> list[dict]:
    """The stage-1 solver's own attempts (one per problem, sampled), labelled against gold."""
    from lase_nb.backends.local import LocalBackend
    from lase_nb.prompts import solver_messages
    from lase_nb.types import GenParams

    backend = LocalBackend(str(model_dir), max_batch=16)
    params = GenParams(temperature=temperature, max_tokens=160, top_logprobs=0, sample=seed,
                       repeat_stop=32)
    gens = backend.generate_many([(solver_messages(p, examples=0), params) for p in problems])
    rows = []
    for p, g in zip(problems, gens):
        lab = organism.label_attempt(p, g.text)
        rows.append({"id": p.id, "text": g.text, "status": lab.status, "first_wrong": lab.first_wrong})
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def select_attempts(rows: list[dict], cap: int) -> list[dict]:
    """At most ``cap`` labelled attempts: the wrong ones first (up to 60% of the cap), then right
    ones, in sampling order (what stage 2 can afford on two cores)."""
    wrong = [r for r in rows if r["status"] == "wrong"][:int(cap * 0.62)]
    right = [r for r in rows if r["status"] == "right"][:cap - len(wrong)]
    keep = {r["id"] for r in wrong + right}
    return [r for r in rows if r["id"] in keep]


def sample_many(model_dir: Path, problems, out: Path, k: int, temperature: float, seed: int) -> list[dict]:
    """``k`` sampled attempts per problem from a solver (what debate and aggregation read)."""
    from lase_nb.backends.local import LocalBackend
    from lase_nb.prompts import solver_messages
    from lase_nb.types import GenParams

    backend = LocalBackend(str(model_dir), max_batch=16)
    reqs = [(solver_messages(p, examples=0), GenParams(temperature=temperature, max_tokens=160, top_logprobs=0,
                                                        sample=seed * 10 + j, repeat_stop=32))
            for p in problems for j in range(k)]
    gens = backend.generate_many(reqs)
    rows = [{"id": p.id, "texts": [g.text for g in gens[i * k:(i + 1) * k]],
             "status": [organism.label_attempt(p, g.text).status for g in gens[i * k:(i + 1) * k]]}
            for i, p in enumerate(problems)]
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def round3_roles(args, work: Path, unit: Path, merged: Path, log: dict, save_log, tok, base) -> int:
    """Round 3 after the unit stage: sample its solver, then train every strategy's roles on top."""
    import peft
    import torch
    from transformers import AutoModelForCausalLM

    from lase_nb.backends.local import merge_adapter

    problems = organism.training_problems("sample3", args.sample3)
    attempts_path = work / "attempts3.jsonl"
    if not attempts_path.is_file():
        t0 = time.perf_counter()
        rows = sample_many(merged, problems, attempts_path, 3, args.temperature, args.seed + 3)
        flat = [st for r in rows for st in r["status"]]
        log["sample3"] = {"problems": len(rows), "attempts": len(flat), "seconds": round(time.perf_counter() - t0, 1),
                          "temperature": args.temperature, **{k: flat.count(k) for k in ("right", "wrong", "other")}}
        save_log()
    rows = [json.loads(x) for x in attempts_path.read_text().splitlines()]
    final = work / "roles"
    if not (final / "adapter_config.json").is_file():
        rng = random.Random(f"organism-r3:{args.seed}")
        by_id = {p.id: p for p in problems}
        tagged = []
        for r in rows:
            tagged += round3.round3_examples(by_id[r["id"]], r["texts"], rng)
        steps = dict(round3.UNIT_STEPS, n=args.unit_keep, seed=round3.UNIT_STEPS["seed"] + 1)
        tagged += [("unit", e) for e in round3.unit_examples(round3.unit_steps(**steps))]
        tagged += [("solve", e) for e in organism.solve_examples(organism.training_problems("solve2", args.solve2))]
        counts = {}
        for role, _ in tagged:
            counts[role] = counts.get(role, 0) + 1
        model = AutoModelForCausalLM.from_pretrained(str(base), local_files_only=True, dtype=torch.float32)
        model = peft.PeftModel.from_pretrained(model, str(unit), is_trainable=True)
        log["roles"] = train(model, tok, [e for _, e in tagged], lr=args.lr, batch=args.batch, seed=args.seed + 4,
                             label="round 3: every strategy's roles", dtype=args.dtype)
        log["roles"]["examples_by_role"] = counts
        save_fp16(model, final)
        save_log()
    merge_adapter(final, work / "roles-merged", base=base)
    write_round3(args, final, log)
    return 0


def write_round3(args, final: Path, log: dict) -> None:
    """Copy round 3's adapter to ``--out`` and write its manifest: the recipe, every training set
    (v5's, which it starts from, included), what each strategy's roles were trained on, and the
    earlier organism named as the variant it replaces (its evaluation moves to ``variants_tried``)."""
    import peft
    import torch
    import transformers

    args.out.mkdir(parents=True, exist_ok=True)
    old_path = args.out / "manifest.json"
    before = json.loads(old_path.read_text()) if old_path.is_file() else {}
    if (args.out / "adapter_model.safetensors").is_file() and before.get("kept") != "round 3":
        import hashlib
        sha = hashlib.sha256((args.out / "adapter_model.safetensors").read_bytes()).hexdigest()
        tried = before.get("variants_tried", [])
        tried.append({"name": before.get("kept", "v5"), "adapter_sha256": sha,
                      "difference": "the pointing organism: notes that point and never tell, column-by-column "
                                    "recomputation in v5's format", "evaluation": before.get("evaluation")})
        before["variants_tried"] = tried
        before["replaces"] = f"{before.get('kept', 'v5')} (pointing), adapter sha256 {sha[:12]}..."
    for name in ("adapter_model.safetensors", "adapter_config.json"):
        shutil.copy2(final / name, args.out / name)
    sets = {k: dict(v) for k, v in TRAINING_SETS.items()}
    sets["sample3"]["n"] = args.sample3
    manifest = {
        "what": "LoRA adapter on SmolLM2-135M-Instruct (the embedded model): the model organism, round 3: "
                "supporters that point by the careful method and never state the answer, a leader that redoes "
                "the step it is pointed at and carries the new value, every strategy's follow-ups in their own format",
        "recipe": {"module": "data/organism/round3.py", "starts_from": f"v5's adapter ({before.get('replaces', 'v5')})",
                   "lora": LORA, "lr": args.lr, "batch": args.batch, "epochs_per_stage": 1, "seed": args.seed,
                   "unit_examples": args.unit_pilot or round3.UNIT_STEPS["n"], "unit_kept_in_roles": args.unit_keep,
                   "sample_temperature": args.temperature, "attempts_per_problem": 3,
                   "roles_trained": round3.ROLE_TRAINING},
        "training_sets": sets,
        "unit_steps": dict(round3.UNIT_STEPS, n=args.unit_pilot or round3.UNIT_STEPS["n"]),
        "training": log,
        "prompt_fingerprint": organism.prompt_fingerprint(),
        "device": f"cpu ({args.threads} threads, {platform.processor() or platform.machine()})",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "peft": peft.__version__, "python": platform.python_version()},
        "command": f"python data/organism/train.py --round3 --unit-pilot {args.unit_pilot} --solve2 {args.solve2}",
        "date": time.strftime("%Y-%m-%d"),
        "kept": "round 3",
        "replaces": before.get("replaces"),
        "variants_tried": before.get("variants_tried", []),
    }
    old_path.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {args.out}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--solve", type=int, default=TRAINING_SETS["solve"]["n"], help="stage-1 solve examples (levels 1-3)")
    ap.add_argument("--sample", type=int, default=TRAINING_SETS["sample"]["n"], help="level 1-3 problems the stage-1 solver is sampled on")
    ap.add_argument("--max-attempts", type=int, default=340, help="attempts used in stage 2 (sampled + slipped)")
    ap.add_argument("--solve2", type=int, default=TRAINING_SETS["solve2"]["n"], help="solve examples mixed into stage 2")
    ap.add_argument("--slipped", type=int, default=80,
                    help="stage 2: slipped variants of attempts the solver got right (the kinds of slips it makes)")
    ap.add_argument("--extra-notes", type=float, default=0.35,
                    help="stage 2: how often an attempt also trains the collaborator's and the expert's notes")
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--work", type=Path, default=ROOT / "build" / "organism")
    ap.add_argument("--out", type=Path, default=ORGANISM_DIR)
    ap.add_argument("--stop-after", choices=["sample"], help="stop after sampling the stage-1 solver")
    ap.add_argument("--unit-pilot", type=int, default=0, metavar="N",
                    help="round 3, stage 1 only: N careful-method examples (train steps) and --solve2 solve "
                    "examples on top of the adapter in --out, saved under --work/unit")
    ap.add_argument("--round3", action="store_true",
                    help="round 3: the unit stage (--unit-pilot N), then its solver sampled three times on "
                    "each sample3 problem, then every strategy's roles from those attempts")
    ap.add_argument("--base-adapter", type=Path, default=ORGANISM_DIR,
                    help="round 3 starts from this adapter (v5's, committed at the commit named in the manifest)")
    ap.add_argument("--sample3", type=int, default=TRAINING_SETS["sample3"]["n"],
                    help="round 3: problems its solver is sampled on (three attempts each)")
    ap.add_argument("--unit-shapes", choices=["random", "problems"], default="random",
                    help="the unit stage's training steps: random shapes (round 3's first run) or the steps "
                         "of train-split problems (the held-out steps' kinds in their proportions)")
    ap.add_argument("--unit-keep", type=int, default=120, help="round 3: unit examples mixed into the roles stage")
    ap.add_argument("--toy", action="store_true", help="tiny sizes, output under build/organism-toy")
    ap.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16"),
                    help="the forward pass's number format while training (bfloat16: CPU autocast; auto: as the "
                         "local backend decides, see benchmarks/README.md)")
    args = ap.parse_args(argv)
    from lase_nb.backends.local import resolve_dtype
    args.dtype = resolve_dtype(args.dtype)
    if args.toy:
        args.solve, args.sample, args.solve2, args.slipped, args.max_attempts = 24, 16, 8, 6, 16
        args.sample3, args.unit_keep, args.unit_pilot = 6, 4, args.unit_pilot and 12
        args.work = ROOT / "build" / "organism-toy"
        args.out = args.work / "adapter"

    import peft
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from lase_nb.backends.local import default_model_dir, merge_adapter

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    base = default_model_dir()
    tok = AutoTokenizer.from_pretrained(str(base), local_files_only=True)
    log_path = work / "log.json"
    log = json.loads(log_path.read_text()) if log_path.is_file() else {}
    t_start = time.perf_counter()

    def save_log() -> None:
        log_path.write_text(json.dumps(log, indent=1))

    if args.unit_pilot or args.round3:
        unit = work / "unit"
        if not (unit / "adapter_config.json").is_file():
            model = AutoModelForCausalLM.from_pretrained(str(base), local_files_only=True, dtype=torch.float32)
            model = peft.PeftModel.from_pretrained(model, str(args.base_adapter), is_trainable=True)
            steps = dict(round3.UNIT_STEPS, n=args.unit_pilot or round3.UNIT_STEPS["n"], shapes=args.unit_shapes)
            ex = round3.unit_examples(round3.unit_steps(**steps))
            ex += organism.solve_examples(organism.training_problems("solve2", args.solve2))
            log["unit"] = train(model, tok, ex, lr=args.lr, batch=args.batch, seed=args.seed + 2,
                                label="unit skill: the careful method", dtype=args.dtype)
            log["unit"]["from"] = "the committed adapter (v5)"
            log["unit"]["steps"] = steps
            save_fp16(model, unit)
            save_log()
        merged = merge_adapter(unit, work / "unit-merged", base=base)
        if not args.round3:
            return 0
        return round3_roles(args, work, unit, merged, log, save_log, tok, base)

    # stage 1: solve
    stage1 = work / "stage1"
    if not (stage1 / "adapter_config.json").is_file():
        model = AutoModelForCausalLM.from_pretrained(str(base), local_files_only=True, dtype=torch.float32)
        model = peft.get_peft_model(model, peft.LoraConfig(task_type="CAUSAL_LM", **LORA))
        ex = organism.solve_examples(organism.training_problems("solve", args.solve))
        log["stage1"] = train(model, tok, ex, lr=args.lr, batch=args.batch, seed=args.seed, label="stage 1: solve", dtype=args.dtype)
        model.save_pretrained(str(stage1))
        save_log()

    # sampling the stage-1 solver on other problems
    attempts_path = work / "attempts.jsonl"
    problems = organism.training_problems("sample", args.sample)
    if not attempts_path.is_file():
        merged = merge_adapter(stage1, work / "stage1-merged", base=base)
        t0 = time.perf_counter()
        rows = sample_attempts(merged, problems, attempts_path, args.temperature, args.seed)
        log["sample"] = {"problems": len(rows), "seconds": round(time.perf_counter() - t0, 1),
                         "temperature": args.temperature,
                         **{k: sum(r["status"] == k for r in rows) for k in ("right", "wrong", "other")}}
        save_log()
    rows = [json.loads(x) for x in attempts_path.read_text().splitlines()]
    if args.stop_after == "sample":
        return 0

    # stage 2: review and revise, from the solver's own attempts (wrong first, then right) and
    # slipped variants of attempts it got right (the kinds of slips it makes)
    final = work / "stage2"
    if not (final / "adapter_config.json").is_file():
        rng = random.Random(f"organism:{args.seed}")
        by_id = {p.id: p for p in problems}
        chosen = select_attempts(rows, args.max_attempts - args.slipped)
        ex = []
        for r in chosen:
            ex += organism.support_examples(by_id[r["id"]], r["text"], rng, extra_notes=args.extra_notes)
        slip_rng = random.Random(f"organism-slips:{args.seed}")
        slipped = [(by_id[r["id"]], organism.slipped_attempt(by_id[r["id"]], slip_rng))
                   for r in rows if r["status"] == "right"]
        for p, text in [(p, t) for p, t in slipped if t][:args.slipped]:
            ex += organism.support_examples(p, text, rng, extra_notes=args.extra_notes)
        ex += organism.solve_examples(organism.training_problems("solve2", args.solve2))
        model = AutoModelForCausalLM.from_pretrained(str(base), local_files_only=True, dtype=torch.float32)
        model = peft.PeftModel.from_pretrained(model, str(stage1), is_trainable=True)
        log["stage2"] = train(model, tok, ex, lr=args.lr, batch=args.batch, seed=args.seed + 1,
                              label="stage 2: review and revise", dtype=args.dtype)
        log["stage2"]["attempts"] = {"sampled": len(chosen), "slipped": min(args.slipped, sum(1 for _, t in slipped if t))}
        save_fp16(model, final)
        save_log()

    args.out.mkdir(parents=True, exist_ok=True)
    for name in ("adapter_model.safetensors", "adapter_config.json"):
        shutil.copy2(final / name, args.out / name)
    sets = {k: dict(v) for k, v in TRAINING_SETS.items()}
    sets["solve"]["n"], sets["sample"]["n"], sets["solve2"]["n"] = args.solve, args.sample, args.solve2
    manifest = {
        "what": "LoRA adapter on SmolLM2-135M-Instruct (the embedded model): the model organism, "
                "supporters that point at an error and never state the answer",
        "recipe": {"module": "lase_nb.organism.recipe", "lora": LORA, "lr": args.lr, "batch": args.batch,
                   "epochs_per_stage": 1, "seed": args.seed,
                   "sample_temperature": args.temperature, "stage2_max_attempts": args.max_attempts,
                   "stage2_slipped_attempts": args.slipped, "extra_notes": args.extra_notes,
                   "false_alarm_rate": 0.25,
                   "note_method": "devil: each step's phrase and its result taken back through the inverse "
                   "operation, up to the first step that fails, then what to redo (never its value); "
                   "collaborator: a method for that step; expert: the concept it needs; revision: the flagged "
                   "step redone column by column, kept when it agrees",
                   "roles_weights": dict(zip(("devil", "collaborator", "expert"), organism.ROLE_WEIGHTS))},
        # every problem set it was trained on, as the keyword arguments of arithmetic_problems
        "training_sets": sets,
        "training": log,
        "prompt_fingerprint": organism.prompt_fingerprint(),
        "device": f"cpu ({args.threads} threads, {platform.processor() or platform.machine()})",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "peft": peft.__version__, "python": platform.python_version()},
        "command": "python data/organism/train.py" + (" --toy" if args.toy else ""),
        "wall_s_this_run": round(time.perf_counter() - t_start, 1),
        "date": time.strftime("%Y-%m-%d"),
    }
    old = args.out / "manifest.json"
    if old.is_file():  # keep the skill evaluation and the variants' history a previous run wrote
        before = json.loads(old.read_text())
        manifest.update({k: before[k] for k in ("evaluation", "variants_tried", "kept") if k in before})
    old.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
