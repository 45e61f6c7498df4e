"""Record the controls of organism v6's gain, as preregistered (lase_nb.organism.controls; issue "What organism
v6's gain is made of").

    .venv/bin/python data/traces/controls.py                      # every arm (about 1,400 calls)
    .venv/bin/python data/traces/controls.py --arms no-note       # one arm
    .venv/bin/python data/traces/controls.py --limit 3 --out /tmp/ctl --cache /tmp/ctl/calls.sqlite   # a smoke run

Reads the fresh recording (``data/traces/arith-organism-v6/lase-large``, gated at 0.8 / 0.5) and the
controls' preregistration (``data/traces/arith-organism-v6/controls/preregistration.json``), refuses to
run unless that file is committed and every list regenerates with its preregistered sha256, then runs:

- ``note-replay``: the recorded devil's note on the preregistered sample of 40 escalated problems (the
  replay must give the recorded revisions, character for character);
- ``no-note``: the revision request with the note taken out, on the 364 escalated problems;
- ``other-note``: another escalated problem's recorded note (the preregistered derangement), on the 364;
- ``alone``: the revision adapter given the problem only (``single``), on the 600.

The revision arms run on the routed organism (``organism-v6``: a leader's stage-1 revision and its
answer-extraction step go to the revision adapter, as in the recording); ``alone`` on the revision
adapter itself (``organism-revision``). Each arm is a run folder under ``--out`` with a manifest naming
both adapters' sha256 and the preregistration's commit; every call goes through the call cache, so a
killed run resumes where it stopped. Never run in CI.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from lase_nb.organism import controls, recipe as organism, preregistration  # noqa: E402
from lase_nb import traces  # noqa: E402
from lase_nb.cache import CallCache  # noqa: E402
from lase_nb.engine import Engine  # noqa: E402
from lase_nb.notes import count_answer_notes  # noqa: E402
from lase_nb.runner import run_problems  # noqa: E402
from lase_nb.strategies import StrategyConfig, revise_once  # noqa: E402
from lase_nb.study import answer_distribution  # noqa: E402


def _committed(path: Path) -> str:
    """The short hash of the last commit that touched ``path`` ('' when it is not committed or has changes)."""
    rel = str(path.relative_to(ROOT))
    head = subprocess.run(["git", "log", "--format=%h", "-1", "--", rel], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", rel], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    return "" if dirty else head


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arms", nargs="*", default=list(controls.ARMS), choices=list(controls.ARMS))
    ap.add_argument("--out", type=Path, default=controls.FOLDER)
    ap.add_argument("--cache", type=Path, default=None, help="call cache (default: the project's, $LASE_CACHE)")
    ap.add_argument("--limit", type=int, default=None, help="at most N problems per arm (a smoke run; never committed)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--max-batch", type=int, default=24)
    ap.add_argument("--window", type=int, default=200)
    ap.add_argument("--threads", type=int, default=None,
                    help="torch threads (default: the cores); 1 keeps a shared machine's other jobs from stalling it")
    args = ap.parse_args()

    prereg = controls.load_prereg()
    commit = _committed(controls.PREREG_PATH)
    if not commit:
        raise SystemExit(f"{controls.PREREG_PATH} is not committed as it stands: commit the preregistration alone first")
    v6 = preregistration.load(preregistration.V6_PATH)
    run = traces.load_run(controls.STUDY / "lase-large")
    problems = organism.v6_problems("problems", v6["problems"]["n"], seed=v6["problems"]["seed"])
    by_id = {p.id: p for p in problems}
    th = prereg["recording"]["thresholds"]
    cases = controls.escalated_cases(run, by_id, th["tau_lp"], th["tau_h"])
    pairs, sample = controls.derangement(cases), controls.replay_sample(cases)
    checks = {"problems": (organism.problems_sha256(problems), v6["problems"]["sha256"]),
              "escalated": (controls.sha256_of(sorted(c.problem.id for c in cases)), prereg["escalated"]["sha256"]),
              "derangement": (controls.sha256_of(pairs), prereg["derangement"]["sha256"]),
              "note_replay": (controls.sha256_of(sample), prereg["note_replay"]["ids_sha256"])}
    for name, (got, want) in checks.items():
        if got != want:
            raise SystemExit(f"the {name} regenerated here do not hash as the preregistration says: do not record")
    if controls.prompt_texts() != prereg["prompts"]["revision_request"]:
        raise SystemExit("the revision prompts changed since the preregistration: do not record")

    cfg = StrategyConfig.from_manifest(run.manifest["config"])
    cache = CallCache(args.cache)
    engines: dict[str, Engine] = {}
    recorded = {c.problem.id: c.recorded_revision for c in cases}
    for arm in args.arms:
        model = controls.ARM_MODELS[arm]
        if model not in engines:
            from lase_nb.backends.local import open_local

            engines[model] = Engine(open_local(model, device=args.device, max_batch=args.max_batch,
                                               **({"threads": args.threads} if args.threads else {})), cache)
        engine = engines[model]
        if arm == "alone":
            todo, strategy, policy = problems, "single", None
        else:
            inputs = controls.arm_inputs(cases, arm, pairs, sample)
            todo = [by_id[pid] for pid in sorted(inputs)]

            def policy(problem, cfg, inputs=inputs):
                attempt, note = inputs[problem.id]
                return revise_once(problem, cfg, attempt, note, name=arm)
            strategy = arm
        todo = todo[: args.limit] if args.limit else todo
        before = dict(asdict(engine.stats))
        t0 = time.perf_counter()
        results = run_problems(strategy, todo, engine, cfg, window=args.window, policy=policy)
        wall = time.perf_counter() - t0
        stats = {k: v - before[k] for k, v in asdict(engine.stats).items()}
        extra = {}
        if arm == "note-replay":
            texts = {r.problem_id: r.calls[0].text for r in results}
            same = sum(texts[pid] == recorded[pid] for pid in texts)
            extra["identical_to_recorded"] = {"k": same, "n": len(texts)}
            print(f"note-replay: {same} of {len(texts)} revisions identical to the recorded ones", flush=True)
        if arm == "other-note":
            extra["derangement"] = {pid: pairs[pid] for pid in sorted(pairs) if pid in {p.id for p in todo}}
        backend = engine.backend
        manifest = traces.provenance(
            command="python data/traces/controls.py " + " ".join(sys.argv[1:]), strategy=strategy, run_name=arm,
            backend="local", model=model, device=args.device, max_batch=args.max_batch, dataset="arith",
            levels=[1, 2, 3], n=len(todo), model_files=backend.model_files(), seed=0,
            problem_set="organism-v6-problems", config=asdict(cfg), engine=stats, wall_s=round(wall, 1),
            answers=answer_distribution(results),
            notes_stating_answer=count_answer_notes(traces.call_rows(results), traces.stage_rows(results), todo),
            arm=controls.ARMS[arm], preregistration=str(preregistration.V6_PATH.relative_to(ROOT)),
            controls_preregistration=str(controls.PREREG_PATH.relative_to(ROOT)), controls_preregistration_commit=commit,
            recording=str((controls.STUDY / "lase-large").relative_to(ROOT)), limit=args.limit,
            **({} if len(todo) == len(problems) else {"subset_of": len(problems), "problem_ids": [p.id for p in todo]}),
            **extra)
        manifest["split"] = "eval"
        traces.write_run(args.out / arm, results, todo, manifest)
        acc = sum(r.correct for r in results) / max(len(results), 1)
        print(f"{arm}: {len(todo)} problems, {stats['model_calls']} model calls, {stats['cache_hits']} cache hits, "
              f"{wall:.0f} s, accuracy {acc:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
