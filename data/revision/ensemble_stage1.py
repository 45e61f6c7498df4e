"""Issue 58, 3(b): the organism's stage 1 on its spent problems, one devil's note or a vote of three.

    .venv/bin/python data/revision/ensemble_stage1.py                 # the whole measurement (104 problems)
    .venv/bin/python data/revision/ensemble_stage1.py --limit 2 --out /tmp/ens --cache /tmp/ens/calls.sqlite

**What runs.** The 104 problems that v5's default gate (tau_lp 0.8 / tau_h 0.5) escalates in
``data/traces/arith-organism-point/lase-full`` (eval split), stage 1 replayed as issue 48 replayed it
(:func:`lase_nb.organism.stage_one.stage_one_cases`: the recorded first answer, the recorded devil's note as the
pipeline passed it). Two notes per problem:

- **single**: the recorded devil's note (v5, greedy);
- **vote**: k = 3 notes of v5's devil on the same attempt, sampled as ``lase-ensemble`` samples its
  group (the recording's ``temperature``, 0.7; sample indices 0, 1, 2, so distinct seeds; the
  supporter's cap and stops), each note's boxed answers removed, then the strategy's own vote
  (:func:`lase_nb.strategies.vote_notes`: each note's verdict line, the majority, ties to "holds";
  the leader reads the first note that carries the majority, or the verdict line alone when none
  voted). The devil's prompt is the one v5 was trained on and recorded with, so the two notes
  differ only by sampling and the vote; ``--verdict-request`` adds the group's verdict request to
  the system prompt, as ``lase-ensemble`` sends it (other calls, another cache entry).
  v5's devil notes end in a verdict line by training ("Step N fails: ...", "Every step holds; ...");
  on the 104 recorded notes the strategy's parser reads 103, and agrees with the organism's own flag
  parser on every one.

Each note is read by two leaders' revision (greedy, the recording's revision prompt): **v5**
(model ``organism``) and **v6** (the revision adapter, model ``organism-revision``). The single
note's revisions repeat committed calls: v5's are ``v5-replay.jsonl``'s, v6's ``pilot.jsonl``'s
(the v6 recording reproduced them 104 of 104); the summary says how many came out identical.

**Counted, per arm (note x leader):** false alarms (the note's verdict says a step fails, on a
right first answer), flags and pointers on wrong first answers (a step said to fail; the first
failing step named, :func:`lase_nb.organism.revision.note_kind` ``pointed``), fixes and breaks, net; paired,
vote against single, by the exact McNemar test (:func:`lase_nb.chapters.ensemble.stage1_paired`).

**Model calls** (through the call cache, so a killed run resumes where it stopped): 3 x 104 = 312
devil notes (v5) and 4 x 104 = 416 revisions (v5 and v6, after each note), at most 728; a vote's
note identical to the recorded one makes the same revision call, answered once.

**Expected, said before any vote was sampled** (:data:`lase_nb.chapters.ensemble.STAGE1_EXPECTATION`):
the single note raises a false alarm on 30 of the 40 right first answers and names the failing step
on 33 of the 64 wrong ones. The three devils are one model on one prompt, so most slips are shared:
the vote drops some false alarms (to 60-95% of the single note's), not half, and keeps most pointers
(80-105%), losing a few where two sampled notes outvote a right one. v5 breaks a little less and
fixes a little less; v6 redoes the chain after any note and moves less. No paired contrast reaches
p < 0.05 on 104 problems. If the vote does halve the false alarms at equal pointers, that is a lead
for a preregistered test on fresh problems; nothing here is a claim, the problems are spent.

Writes ``<out>/ensemble-stage1.jsonl`` (one row per problem and arm) and ``<out>/ensemble-stage1.json``
(settings, calls, the arm table, the paired table, the check against the committed replays, the
expectation and whether it held). Never run in CI.
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

import pandas as pd  # noqa: E402

from lase_nb import prompts  # noqa: E402
from lase_nb.organism import stage_one  # noqa: E402
from lase_nb.answers import strip_boxed  # noqa: E402
from lase_nb.cache import CallCache  # noqa: E402
from lase_nb.chapters import ensemble  # noqa: E402
from lase_nb.engine import Call, Engine  # noqa: E402
from lase_nb.runs import problems_from_manifest  # noqa: E402
from lase_nb.strategies import StrategyConfig  # noqa: E402
from lase_nb.traces import load_run  # noqa: E402

RECORDING = ROOT / "data" / "traces" / "arith-organism-point" / "lase-full"
OUT = ROOT / "data" / "revision"
#: The committed replays of the single note's revisions: v5's, and the pilot's (v6's revision reproduces it).
COMMITTED = {"v5": OUT / "v5-replay.jsonl", "v6": OUT / "pilot.jsonl"}


def _engine(model: str, args, cache: CallCache) -> Engine:
    from lase_nb.backends.local import LocalBackend

    return Engine(LocalBackend(model, max_batch=args.max_batch, threads=args.threads, dtype="float32"), cache)


def _run(engine: Engine, calls: list[Call], desc: str):
    from tqdm import tqdm

    with tqdm(total=len(calls), desc=desc, unit="call") as bar:
        return engine.run(calls, on_result=lambda i, g: bar.update())


def _revisions(cases, cfg: StrategyConfig) -> list[Call]:
    """The leader's stage-1 revision of each case after the case's note, as the pipeline calls it."""
    return [Call("leader", 1, prompts.revise_messages(c.problem, c.attempt, "devil", c.note, examples=cfg.examples),
                 cfg.params(), reads=("devil",)) for c in cases]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT, help=f"folder for the rows and summary (default {OUT})")
    ap.add_argument("--limit", type=int, default=None,
                    help="at most N escalated problems: the first ceil(N/2) wrong first answers and floor(N/2) right ones")
    ap.add_argument("--k", type=int, default=StrategyConfig().ensemble_k, help="devils in the vote (default %(default)s)")
    ap.add_argument("--verdict-request", action="store_true",
                    help="ask each sampled devil for the vote's verdict line, as lase-ensemble's prompt does")
    ap.add_argument("--cache", type=Path, default=None, help="call cache (default: the project's, $LASE_CACHE)")
    ap.add_argument("--max-batch", type=int, default=16)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    if args.k < 1 or (args.limit is not None and args.limit < 1):
        ap.error("--k and --limit must be >= 1")

    run = load_run(RECORDING)
    cfg = StrategyConfig.from_manifest(run.manifest["config"])
    problems = problems_from_manifest(run.manifest)
    all_cases = stage_one.stage_one_cases(run, problems, cfg.tau_lp, cfg.tau_h)
    cases = ensemble.limit_cases(all_cases, args.limit)
    cache = CallCache(args.cache)
    t0 = time.perf_counter()

    # the devils: k sampled notes per attempt, as lase-ensemble's group samples them (round 0)
    v5 = _engine(ensemble.STAGE1_LEADERS["v5"], args, cache)
    devils = [Call("devil", 1, prompts.group_messages(c.problem, "devil", c.attempt, verdict=args.verdict_request),
                   cfg.params(sample=j, temperature=cfg.temperature, supporter=True), agent=f"devil{j}",
                   reads=("leader",)) for c in cases for j in range(args.k)]
    gens = _run(v5, devils, f"v5 devils ({args.k} per problem)")
    members = [[strip_boxed(g.text)[0] for g in gens[i * args.k:(i + 1) * args.k]] for i in range(len(cases))]
    leaked = sum(strip_boxed(g.text)[1] for g in gens)
    voted, votes = ensemble.vote_cases(cases, members)

    # each leader's revision after each note (identical calls are made once)
    frames, stats = [], {"devils": vars(v5.stats).copy()}
    for leader, model in ensemble.STAGE1_LEADERS.items():
        engine = v5 if model == ensemble.STAGE1_LEADERS["v5"] else _engine(model, args, cache)
        before = vars(engine.stats).copy()
        gens = _run(engine, _revisions(cases, cfg) + _revisions(voted, cfg), f"{leader} revisions")
        stats[leader] = {k: v - before[k] for k, v in vars(engine.stats).items()}
        single, vote = [g.text for g in gens[:len(cases)]], [g.text for g in gens[len(cases):]]
        frames.append(ensemble.stage1_rows(cases, single, notes="single", leader=leader))
        frames.append(ensemble.stage1_rows(voted, vote, notes="vote", leader=leader, votes=votes))
    rows = pd.concat(frames, ignore_index=True)

    arms, paired = ensemble.stage1_arms(rows), ensemble.stage1_paired(rows)
    committed = {leader: pd.read_json(path, lines=True) for leader, path in COMMITTED.items() if path.is_file()}
    same = ensemble.same_revisions(rows, committed)
    words = ensemble.describe_stage1(arms, paired, k=args.k)
    held = ensemble.stage1_expectation(paired) if args.limit is None else None

    args.out.mkdir(parents=True, exist_ok=True)
    rows.to_json(args.out / f"{ensemble.STAGE1_NAME}.jsonl", orient="records", lines=True, force_ascii=False)
    meta = {"name": ensemble.STAGE1_NAME, "recording": str(RECORDING.relative_to(ROOT)),
            "thresholds": [cfg.tau_lp, cfg.tau_h], "escalated": len(all_cases), "problems": len(cases),
            "limit": args.limit, "k": args.k, "temperature": cfg.temperature, "samples": list(range(args.k)),
            "devil_prompt": "lase-ensemble's group prompt (verdict requested)" if args.verdict_request
            else "v5's devil prompt, as recorded", "leaders": ensemble.STAGE1_LEADERS,
            "leaked_boxed_in_devil_notes": leaked, "calls": stats,
            "model_calls": sum(s["model_calls"] for s in stats.values()),
            "cache_hits": sum(s["cache_hits"] for s in stats.values()),
            "seconds": round(time.perf_counter() - t0, 1),
            "arms": arms.to_dict(orient="records"), "paired": paired.to_dict(orient="records"),
            "single_vs_committed_replays": same,
            "expectation": ensemble.STAGE1_EXPECTATION, "expectation_held": held, "summary": words,
            "command": "python data/revision/ensemble_stage1.py " + " ".join(sys.argv[1:])}
    (args.out / f"{ensemble.STAGE1_NAME}.json").write_text(json.dumps(meta, indent=1, default=str) + "\n")
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(arms.to_string(index=False))
        print(paired.to_string(index=False))
    print("single note's revisions against the committed replays:", same)
    print(f"model calls {meta['model_calls']}, cache hits {meta['cache_hits']}, {meta['seconds']} s")
    print(words)
    if held is not None:
        print("expectation held:", held)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
