"""LASE's ceiling with our leaders: their revision after a perfect supporter's note (no training).

    python benchmarks/ceiling.py [--recordings organism smollm2] [--max-batch 16] [--threads N]
    python benchmarks/ceiling.py --recordings --noop 120   # section 2: errors within reach

For every first answer of a full-chain LASE recording whose chain is known, a note written by code
(:mod:`lase_nb.organism.ceiling`: variants a, b, c on wrong answers; all clear and two false alarms on right
ones) goes through the leader's real revision call. Every call goes through the call cache
(``$LASE_CACHE``), so an interrupted run resumes; the rows go to ``data/ceiling/<name>.jsonl``
(one per note) with ``data/ceiling/<name>.json`` (what was run), which chapter 06 reads.
Last lines: the ceiling table, the right-answer table and the stop rule.

``--noop N``: problems never recorded, each with one irrelevant quantity in its text
(``arith_noop``, eval split: held out from the organism's training by chain, and by the clause's
phrasing from any later training), and their plain twins. Per model: first answers on both (the
twins measure how reliably the leader computes those chains' arithmetic in its quick form), the
first errors by kind, then the perfect notes on the NoOp first answers (``data/ceiling/noop-<model>``).
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

from lase_nb.organism import ceiling  # noqa: E402
from lase_nb.backends.local import LocalBackend  # noqa: E402
from lase_nb.cache import CallCache  # noqa: E402
from lase_nb.engine import Engine  # noqa: E402
from lase_nb.runs import problems_from_manifest  # noqa: E402
from lase_nb.strategies import StrategyConfig  # noqa: E402
from lase_nb.traces import load_run  # noqa: E402

#: How each measurement is named in the tables.
LABELS = {"organism": "organism v5", "smollm2": "SmolLM2-135M", "organism-pilot": "v5 + revision pilot"}

#: The NoOp study: model -> (levels, worked examples). The embedded model sets up one step only
#: (levels 2-3 are 0-3% right), so it meets level 1; the organism levels 1-3, as it was trained.
NOOP = {"organism": ((1, 2, 3), 0), "smollm2": ((1,), 2)}
NOOP_SEED = 42

#: The recordings measured: name -> (full-chain LASE run, the local model that made it).
RECORDINGS = {
    "organism": ("data/traces/arith-organism-point/lase-full", "organism"),
    "smollm2": ("data/traces/arith-smollm2/lase-full", "smollm2-135m"),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recordings", nargs="*", default=list(RECORDINGS), choices=list(RECORDINGS))
    ap.add_argument("--noop", type=int, default=0, help="section 2: this many NoOp problems per model")
    ap.add_argument("--summary", action="store_true", help="only print the summary and the verdict from data/ceiling")
    ap.add_argument("--pilot", type=Path, default=None,
                    help="also the organism's recording through this merged model folder (the revision pilot, "
                         "data/organism/revision_pilot.py), written as organism-pilot")
    ap.add_argument("--max-batch", type=int, default=16)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--out", type=Path, default=ROOT / "data" / "ceiling")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.summary:
        print_summary(ceiling.load_rows(args.out))
        return 0
    cache = CallCache()
    frames = []
    todo = [(name, *RECORDINGS[name]) for name in args.recordings]
    if args.pilot is not None:
        todo.append(("organism-pilot", RECORDINGS["organism"][0], str(args.pilot)))
    for name, folder, model in todo:
        run = load_run(ROOT / folder)
        cfg = StrategyConfig.from_manifest(run.manifest["config"])
        # the pilot is measured on what the stop rule reads: notes a and b, and their false alarms
        kept = dict(variants=("a", "b"), right_variants=("alarm-a", "alarm-b")) if name == "organism-pilot" else {}
        cases, seen = ceiling.cases_from_run(ceiling.first_attempts(run, problems_from_manifest(run.manifest)), **kept)
        engine = Engine(LocalBackend(model, max_batch=args.max_batch, threads=args.threads), cache)
        label = LABELS[name]
        t0 = time.perf_counter()
        rows = ceiling.send(engine, cases, cfg.params(), cfg.examples, label, progress=True)
        rows.to_json(args.out / f"{name}.jsonl", orient="records", lines=True, force_ascii=False)
        (args.out / f"{name}.json").write_text(json.dumps({
            "recording": folder, "model": label, "backend_model": model, "dtype": engine.backend.dtype,
            "examples": cfg.examples, "first_attempts": dict(seen), "notes": len(cases),
            "model_calls": engine.stats.model_calls, "cache_hits": engine.stats.cache_hits,
            "seconds": round(time.perf_counter() - t0, 1), "stop_rule": ceiling.STOP_RULE,
            "command": "python benchmarks/ceiling.py " + " ".join(sys.argv[1:])}, indent=1) + "\n")
        frames.append(rows)
    if args.noop:
        frames += noop_study(args, cache)
    rows = pd.concat(frames, ignore_index=True)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(ceiling.kinds_table(rows).to_string())
        print(ceiling.ceiling_table(rows).to_string(index=False))
        print(ceiling.right_table(rows).to_string(index=False))
        print(ceiling.stop_rule(rows).to_string(index=False))
    print_summary(ceiling.load_rows(args.out))
    return 0


def print_summary(rows: pd.DataFrame) -> None:
    """Print the summary table and the stop rule's verdict (chapter 06 shows both from the same
    functions; the README tells the story in three sentences, :func:`lase_nb.organism.controls.readme_summary`)."""
    print(ceiling.markdown(ceiling.summary(rows)), ceiling.verdict(rows), sep="\n\n")


def noop_study(args, cache: CallCache) -> list[pd.DataFrame]:
    """Section 2: first answers on NoOp problems and their plain twins, then perfect notes."""
    from lase_nb.datasets import noop_problems
    from lase_nb.stats import paired_test

    frames = []
    for name, (levels, examples) in NOOP.items():
        model = RECORDINGS[name][1]
        cfg = StrategyConfig(examples=examples)
        noop = noop_problems(args.noop, seed=NOOP_SEED, levels=levels, split="eval")
        plain = [type(p)(p.id.replace("-noop", ""), p.meta["plain_question"], p.gold, p.kind,
                         meta={k: v for k, v in p.meta.items() if k not in ("noop", "plain_question")})
                 for p in noop]
        engine = Engine(LocalBackend(model, max_batch=args.max_batch, threads=args.threads), cache)
        t0 = time.perf_counter()
        first_plain = ceiling.first_answers(engine, plain, cfg.params(), examples)
        first_noop = ceiling.first_answers(engine, noop, cfg.params(), examples)
        cases, seen = ceiling.cases_from_run(first_noop)
        rows = ceiling.send(engine, cases, cfg.params(), examples, f"{LABELS[name]}, NoOp", progress=True)
        right_steps, steps = ceiling.step_accuracy(first_plain)
        test = paired_test([c for *_, c in first_noop], [c for *_, c in first_plain])
        summary = {"model": model, "levels": list(levels), "examples": examples, "n": len(noop),
                   "seed": NOOP_SEED, "split": "eval",
                   "plain accuracy": test["acc_b"], "noop accuracy": test["acc_a"],
                   "noop - plain": [test["diff"], test["diff_lo"], test["diff_hi"], test["p_value"]],
                   "plain quick-form steps right": [right_steps, steps],
                   "noop first attempts": dict(seen), "notes": len(cases),
                   "model_calls": engine.stats.model_calls, "seconds": round(time.perf_counter() - t0, 1)}
        print(json.dumps({name: summary}, indent=1, default=float))
        rows.to_json(args.out / f"noop-{name}.jsonl", orient="records", lines=True, force_ascii=False)
        (args.out / f"noop-{name}.json").write_text(json.dumps(summary, indent=1, default=float) + "\n")
        frames.append(rows)
    return frames


if __name__ == "__main__":
    raise SystemExit(main())
