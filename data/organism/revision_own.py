"""Issue 48, step 2: v5's revision trained on v5's *own* devil notes, with a learning curve.

    .venv/bin/python data/organism/revision_own.py notes            # v5's devil notes on train-split attempts
    .venv/bin/python data/organism/revision_own.py train            # one pass, checkpoints at 1/4, 1/2, 1
    .venv/bin/python data/organism/revision_own.py replay NAME DIR  # exact replay of stage 1, held out
    .venv/bin/python data/organism/revision_own.py verdict          # the curve and the stop rule

``notes``: the devil's advocate of the shipped organism (v5), called as the pipeline calls it
(supporter prompt, greedy, the recording's caps), on the stage-1 solver's own sampled attempts of
the train split (``attempts.jsonl``); notes go to ``data/revision/train_notes.jsonl``.
``train``: v5's adapter trained on for one pass over revision examples built from those notes
(:mod:`lase_nb.organism.revision`: the target for each kind of note), checkpoints after a quarter, a half
and all of the examples (``build/revision-own/<size>/``), each merged. Only the revision is
trained; every other role is measured with v5 itself.
``replay``: stage 1 of gated LASE at the recording's thresholds on the held-out recording
(``data/traces/arith-organism-point/lase-full``, eval split): the recorded first answer and the
recorded devil's note, and the model's revision; rows to ``data/revision/<NAME>.jsonl``.
``verdict``: :data:`lase_nb.organism.revision.STAGE1_RULE`, written before any of this ran. Every call goes
through the call cache, so an interrupted step resumes. Never run in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "data" / "organism"))

import pandas as pd  # noqa: E402

from lase_nb.organism import controls, recipe as organism, revision, stage_one  # noqa: E402
from lase_nb import prompts  # noqa: E402
from lase_nb.answers import strip_boxed  # noqa: E402
from lase_nb.backends.local.files import ORGANISM_DIR  # noqa: E402
from lase_nb.cache import CallCache  # noqa: E402
from lase_nb.engine import Call, Engine  # noqa: E402
from lase_nb.runs import problems_from_manifest  # noqa: E402
from lase_nb.strategies import StrategyConfig  # noqa: E402
from lase_nb.traces import load_run  # noqa: E402

RECORDING = ROOT / "data" / "traces" / "arith-organism-point" / "lase-full"
OUT = ROOT / "data" / "revision"
WORK = ROOT / "build" / "revision-own"
SIZES = (0.25, 0.5, 1.0)


def _engine(model: str, args) -> Engine:
    from lase_nb.backends.local import LocalBackend

    return Engine(LocalBackend(model, max_batch=args.max_batch, threads=args.threads), CallCache())


def _recording():
    run = load_run(RECORDING)
    return run, StrategyConfig.from_manifest(run.manifest["config"]), problems_from_manifest(run.manifest)


def notes(args) -> int:
    from tqdm import tqdm

    _, cfg, _ = _recording()
    problems = {p.id: p for p in organism.training_problems("sample")}
    todo = []
    for line in (ORGANISM_DIR / "attempts.jsonl").read_text().splitlines():
        row = json.loads(line)
        p = problems.get(row["id"])
        if p is None or organism.label_attempt(p, row["text"]).status not in ("right", "wrong"):
            continue
        todo.append((p, row["text"]))
    if args.limit:  # every wrong attempt first, then right ones in file order, up to the limit
        todo = sorted(todo, key=lambda t: organism.label_attempt(t[0], t[1]).status != "wrong")[:args.limit]
    calls = [Call("devil", 1, prompts.supporter_messages(p, "devil", a), cfg.params(supporter=True),
                  agent="devil", reads=("leader",)) for p, a in todo]
    engine = _engine("organism", args)
    t0 = time.perf_counter()
    with tqdm(total=len(calls), desc="v5 devil notes (train split)", unit="call") as bar:
        gens = engine.run(calls, on_result=lambda i, g: bar.update())
    OUT.mkdir(parents=True, exist_ok=True)
    with (OUT / "train_notes.jsonl").open("w") as f:
        for (p, a), g in zip(todo, gens):
            note, leaked = strip_boxed(g.text)
            f.write(json.dumps({"id": p.id, "attempt": a, "note": note, "leaked": leaked,
                                "note_kind": revision.note_kind(p, a, note),
                                "states_answer": not organism._obeys(note, p, a),
                                "completion_tokens": g.completion_tokens}, ensure_ascii=False) + "\n")
    print(f"{len(gens)} notes in {time.perf_counter() - t0:.0f} s; model calls {engine.stats.model_calls}, "
          f"cache hits {engine.stats.cache_hits}")
    kinds = pd.read_json(OUT / "train_notes.jsonl", lines=True)["note_kind"].value_counts()
    print(kinds.to_string())
    return 0


def train(args) -> int:
    import peft
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import train as recipe
    from lase_nb.backends.local import default_model_dir, merge_adapter

    torch.set_num_threads(args.threads or os.cpu_count() or 1)
    torch.manual_seed(0)
    problems = {p.id: p for p in organism.training_problems("sample")}
    rows = [json.loads(x) for x in (OUT / "train_notes.jsonl").read_text().splitlines()]
    ex, counts = revision.examples_from_notes(rows, problems)
    print(f"{len(ex)} revision examples: {counts}")
    base = default_model_dir()
    tok = AutoTokenizer.from_pretrained(str(base), local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(str(base), local_files_only=True, dtype=torch.float32)
    model = peft.PeftModel.from_pretrained(model, str(ORGANISM_DIR), is_trainable=True)
    marks = {max(1, round(f * len(ex))): f for f in SIZES}
    saved: dict[str, int] = {}

    def checkpoint(step: int, seen: int) -> None:
        for n, f in marks.items():
            name = f"size-{f:g}"
            if seen >= n and name not in saved:
                recipe.save_fp16(model, WORK / name / "adapter")
                saved[name] = seen
                print(f"\ncheckpoint {name}: {seen} examples, step {step}", flush=True)

    t0 = time.perf_counter()
    log = recipe.train(model, tok, ex, lr=args.lr, batch=args.batch, seed=0, label="revision on own notes",
                       on_step=checkpoint)
    for name in saved:
        merge_adapter(WORK / name / "adapter", WORK / name / "merged", base=base)
    log.update(counts=counts, checkpoints=saved, from_adapter=json.loads(
        (ORGANISM_DIR / "manifest.json").read_text())["adapter_sha256"], wall_s=round(time.perf_counter() - t0, 1),
        targets=revision.TARGETS)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "train_log.json").write_text(json.dumps(log, indent=1) + "\n")
    print(json.dumps({k: v for k, v in log.items() if k not in ("loss_curve", "targets")}, indent=1))
    return 0


def replay(args) -> int:
    from tqdm import tqdm

    run, cfg, problems = _recording()
    cases = stage_one.stage_one_cases(run, problems, cfg.tau_lp, cfg.tau_h)
    calls = [Call("leader", 1, prompts.revise_messages(c.problem, c.attempt, "devil", c.note, examples=cfg.examples),
                  cfg.params(), reads=("devil",)) for c in cases]
    engine = _engine(args.model, args)
    t0 = time.perf_counter()
    with tqdm(total=len(calls), desc=f"{args.name}: stage 1", unit="call") as bar:
        gens = engine.run(calls, on_result=lambda i, g: bar.update())
    rows = revision.score(cases, [g.text for g in gens], args.name)
    OUT.mkdir(parents=True, exist_ok=True)
    rows.to_json(OUT / f"{args.name}.jsonl", orient="records", lines=True, force_ascii=False)
    meta = {"name": args.name, "model": args.model, "recording": str(RECORDING.relative_to(ROOT)),
            "thresholds": [cfg.tau_lp, cfg.tau_h], "escalated": len(cases),
            "model_calls": engine.stats.model_calls, "cache_hits": engine.stats.cache_hits,
            "seconds": round(time.perf_counter() - t0, 1), "rule": revision.STAGE1_RULE,
            "command": "python data/organism/revision_own.py " + " ".join(sys.argv[1:])}
    (OUT / f"{args.name}.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(revision.stage_one_table(rows).to_string(index=False))
    return 0


def devil(args) -> int:
    """The devil's advocate of a trained model on the same escalated held-out attempts, against v5's
    recorded notes: whether training the revision moved the devil (flags, the step it names, the rule)."""
    from tqdm import tqdm

    run, cfg, problems = _recording()
    cases = stage_one.stage_one_cases(run, problems, cfg.tau_lp, cfg.tau_h)
    calls = [Call("devil", 1, prompts.supporter_messages(c.problem, "devil", c.attempt), cfg.params(supporter=True),
                  agent="devil", reads=("leader",)) for c in cases]
    engine = _engine(args.model, args)
    with tqdm(total=len(calls), desc=f"{args.name}: devil", unit="call") as bar:
        gens = engine.run(calls, on_result=lambda i, g: bar.update())
    rows = []
    for c, g in zip(cases, gens):
        note, _ = strip_boxed(g.text)
        for who, text in (("v5 (recorded)", c.note), (args.name, note)):
            rows.append({"devil": who, "problem_id": c.problem.id, "first_correct": c.first_correct,
                         "note_kind": revision.note_kind(c.problem, c.attempt, text),
                         "states_answer": not organism._obeys(text, c.problem, c.attempt),
                         "same_as_recorded": text.strip() == c.note.strip(), "note": text})
    df = pd.DataFrame(rows)
    df.to_json(OUT / f"devil-{args.name}.jsonl", orient="records", lines=True, force_ascii=False)
    print(pd.crosstab([df["devil"], df["first_correct"]], df["note_kind"]).to_string())
    print("identical to v5's recorded note:", int(df[df["devil"] == args.name]["same_as_recorded"].sum()), "of", len(cases))
    return 0


def verdict(args) -> int:
    curve = {f"size-{f:g}": pd.read_json(OUT / f"own-size-{f:g}.jsonl", lines=True)
             for f in SIZES if (OUT / f"own-size-{f:g}.jsonl").is_file()}
    print(revision.stage_one_table(pd.concat(curve.values(), ignore_index=True)).to_string(index=False))
    print(revision.stage1_verdict(curve))
    controls.write_readme_summary(ROOT / "README.md")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("notes", "train", "replay", "devil", "verdict"):
        p = sub.add_parser(name)
        p.add_argument("--max-batch", type=int, default=16)
        p.add_argument("--threads", type=int, default=None)
        if name == "notes":
            p.add_argument("--limit", type=int, default=None,
                           help="at most this many attempts: all wrong ones first, then right ones")
        if name == "train":
            p.add_argument("--lr", type=float, default=3e-4)
            p.add_argument("--batch", type=int, default=8)
        if name in ("replay", "devil"):
            p.add_argument("name")
            p.add_argument("model")
    args = ap.parse_args()
    return {"notes": notes, "train": train, "replay": replay, "devil": devil, "verdict": verdict}[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
