"""Record the traces the chapters read by default: the embedded model on the default arithmetic set.

    python data/traces/record.py [--n-full 60] [--n-baselines 30] [--device cpu] [--max-batch 8]
    python data/traces/record.py --model organism --levels 1 2 3 --split eval --seed 22 --out data/traces/arith-organism
    python data/traces/record.py --model organism ... --strategies lase-large --n-large 600

``lase-large`` is gated LASE at the preregistered thresholds (``data/traces/preregistration.json``)
on the ``--n-large`` problems that follow ``lase-full``'s in the same seed's list (so none is shared);
its stage 0 is the leader alone, which makes it the large paired comparison the preregistration names.

Writes one run folder per strategy under ``--out`` (``lase-full`` is LASE with every stage
recorded, for replay; the baselines run on the first ``--n-baselines`` of the same problems).
Every call goes through the call cache, so an interrupted recording resumes where it stopped.
The runs are planned and written by :mod:`lase_nb.study`, the code of ``lase-nb record`` (see
``lase-nb record --help``); this script adds what the committed recordings need: the local backend's
device and batch size, ``lase-large``, the organism's held-out split, thresholds from another run,
and the baselines on fewer problems than the full chain.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from lase_nb.organism import preregistration
from lase_nb import traces
from lase_nb.backends.local import open_local
from lase_nb.cache import CallCache
from lase_nb.datasets import load_dataset
from lase_nb.engine import Engine
from lase_nb.organism.recipe import EVAL_SEEDS, ORGANISM
from lase_nb.strategies import StrategyConfig, default_examples, recorded
from lase_nb.errors import LaseError
from lase_nb.study import (RunPlan, down_calibration_problems, format_plan, plan_runs, plan_table, rates_from_folder,
                           record_study)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="data/traces/arith-smollm2")
    ap.add_argument("--n-full", type=int, default=60)
    ap.add_argument("--n-baselines", type=int, default=30)
    ap.add_argument("--strategies", nargs="*", default=recorded(), choices=recorded(every=True) + [LARGE],
                    help="run folders to write (default: all but lase-large and lase-ensemble; LASE at any "
                         "thresholds is replayed from lase-full)")
    ap.add_argument("--n-large", type=int, default=600,
                    help="lase-large: gated LASE on this many problems after lase-full's")
    ap.add_argument("--model", default="smollm2-135m", help="alias, model folder or .gguf file")
    ap.add_argument("--model-label", default=None, help="model name written to the manifests")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--max-batch", type=int, default=8)
    ap.add_argument("--window", type=int, default=32)
    ap.add_argument("--cache", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-down-calibration", type=int, default=20,
                    help="problems (disjoint from the evaluated ones) on which DOWN's threshold is chosen")
    ap.add_argument("--tau-lp", type=float, default=None, help="gate threshold on exp(LP_min) (default 0.8)")
    ap.add_argument("--tau-h", type=float, default=None, help="gate threshold on H_max in nats (default 0.5)")
    ap.add_argument("--thresholds-from", default=None,
                    help="a full-chain LASE run folder on other problems: choose the thresholds there, the "
                         "most accurate pair costing at most --budget times the leader alone")
    ap.add_argument("--budget", type=float, default=1.5, help="with --thresholds-from: the token ratio to the leader alone")
    ap.add_argument("--levels", type=int, nargs="+", default=None,
                    help="arith difficulty levels to mix, e.g. --levels 1 2 3 (default: the data set's)")
    ap.add_argument("--split", choices=["eval"], default=None,
                    help="arith: draw from the eval split (disjoint by content from the organism's training "
                         f"problems); the organism's recordings use --split eval --seed {EVAL_SEEDS['record']}")
    ap.add_argument("--preregistration", type=Path, default=None,
                    help="organism v6's preregistration (data/traces/arith-organism-v6/preregistration.json): "
                         "lase-large (gated at its thresholds) and the baselines run on its fresh problems, "
                         "lase-full on its control problems; the problem lists must hash as it says")
    ap.add_argument("--dry-run", action="store_true", help="print the plan (calls per run, estimated tokens) and stop")
    args = ap.parse_args()
    if args.model.startswith(ORGANISM) and args.split != "eval":
        ap.error("the organism was trained on the train split; record it on held-out problems: "
                 f"--split eval --seed {EVAL_SEEDS['record']} (the skill evaluation uses {EVAL_SEEDS['calibrate']})")

    base = StrategyConfig(seed=args.seed, examples=default_examples("local", args.model))
    gate = {}
    if args.thresholds_from:
        base, gate = _thresholds_from(base, args)
    elif args.tau_lp is not None or args.tau_h is not None:
        base = replace(base, **{k: v for k, v in (("tau_lp", args.tau_lp), ("tau_h", args.tau_h)) if v is not None})
        gate = {"gate": {"tau_lp": base.tau_lp, "tau_h": base.tau_h, "rule": "given on the command line"}}
    plans = []
    if args.preregistration is not None:
        plans = _v6_plans(base, args)
    for name in args.strategies if args.preregistration is None else ():
        if name == LARGE:
            strategy, cfg, problems, extra = _large(base, args)
            plans.append(RunPlan(name, strategy, cfg, problems, manifest=extra))
            continue
        (plan,) = plan_runs([name], base, _problems(args, args.n_full), baseline_problems=_problems(args, args.n_baselines))
        if plan.strategy == "down":
            plan.calibration = down_calibration_problems("arith", None, args.n_down_calibration, args.seed,
                                                         plan.problems, args.levels, args.split)
        plan.manifest = dict(gate)
        plans.append(plan)
    try:
        rates = rates_from_folder(args.out if Path(args.out, "lase-full", "manifest.json").exists()
                                  else Path(__file__).parent / "arith-smollm2")
    except LaseError:  # no recording to take rates from: the plan counts calls only
        rates = None
    print(format_plan(plan_table(plans, rates), rates, header=f"recording {args.out}"), flush=True)
    if args.dry_run:
        return 0
    backend = open_local(args.model, device=args.device, max_batch=args.max_batch)
    engine = Engine(backend, CallCache(args.cache))
    fields = {"command": "python data/traces/record.py " + " ".join(sys.argv[1:]), "backend": "local",
              "model": args.model_label or backend.model, "device": args.device, "max_batch": args.max_batch,
              "dataset": "arith", "levels": args.levels, "model_files": backend.model_files(), "seed": args.seed,
              "split": args.split, **({"dtype": backend.dtype} if getattr(backend, "dtype", None) else {})}
    record_study(engine, plans, args.out, fields, rates=rates, window=args.window, show_answers=True)
    return 0


def _problems(args, n: int) -> list:
    """The first ``n`` problems of the recording's seeded list."""
    return load_dataset("arith", None, n, args.seed, levels=args.levels, split=args.split)


#: The run folder of gated LASE at the preregistered thresholds on further problems.
LARGE = "lase-large"


def _large(base: StrategyConfig, args) -> tuple[str, StrategyConfig, list, dict]:
    """Gated LASE at the preregistered thresholds on the ``--n-large`` problems after ``lase-full``'s."""
    prereg = preregistration.load()
    th = prereg["thresholds"]
    cfg = replace(base, tau_lp=float(th["tau_lp"]), tau_h=float(th["tau_h"]), full_chain=False)
    every = load_dataset("arith", None, args.n_full + args.n_large, args.seed, levels=args.levels, split=args.split)
    problems = every[args.n_full:]
    return "lase", cfg, problems, {"gate": {
        "tau_lp": cfg.tau_lp, "tau_h": cfg.tau_h, "rule": "preregistered (data/traces/preregistration.json)",
        "preregistration_date": prereg.get("date")},
        "offset": args.n_full}


def _v6_plans(base: StrategyConfig, args) -> list[RunPlan]:
    """The fresh recordings organism v6's preregistration fixes: ``lase-large`` (gated LASE at its
    thresholds, each stage's confidence recorded) and any baseline (``mv``) on its fresh problems,
    ``lase-full`` on its control problems (the control pair: run once per model). Refuses problem
    lists whose sha256 is not the preregistered one, and a recording asked for before the
    preregistration is committed."""
    import subprocess

    from lase_nb.organism import recipe as organism

    prereg = preregistration.load(args.preregistration)
    tracked = subprocess.run(["git", "log", "--format=%h", "-1", "--", str(Path(args.preregistration).resolve())],
                             capture_output=True, text=True, cwd=Path(__file__).parent).stdout.strip()
    if not tracked:
        raise SystemExit(f"{args.preregistration} is not committed: commit the preregistration alone first, "
                         "so the history shows it came before the recordings")
    th = prereg["thresholds"]
    plans = []
    for name in args.strategies:
        which = "control" if name == "lase-full" else "problems"
        spec = prereg[which]
        problems = organism.v6_problems(which, spec["n"], seed=spec["seed"], levels=spec["levels"])
        if organism.problems_sha256(problems) != spec["sha256"]:
            raise SystemExit(f"the {which} regenerated here do not hash as the preregistration says: the generator or "
                             "the exclusions changed since it was written; do not record")
        fields = {"problem_set": f"organism-v6-{which}", "preregistration": str(args.preregistration),
                  "preregistration_commit": tracked}
        if name == LARGE:
            cfg = replace(base, tau_lp=float(th["tau_lp"]), tau_h=float(th["tau_h"]), full_chain=False)
            plans.append(RunPlan(name, "lase", cfg, problems, manifest={**fields, "gate": {
                "tau_lp": cfg.tau_lp, "tau_h": cfg.tau_h, "rule": f"preregistered ({args.preregistration})",
                "preregistration_date": prereg.get("date")}}))
            continue
        (plan,) = plan_runs([name], base, problems)
        plan.manifest = fields
        plans.append(plan)
    return plans


def _thresholds_from(base: StrategyConfig, args) -> tuple[StrategyConfig, dict]:
    """LASE's thresholds chosen on a full-chain run of other problems (:func:`lase_nb.replay.gate_for_budget`);
    chains whose question is among the problems recorded here are left out."""
    from lase_nb.replay import chains_from_stages, gate_for_budget
    from lase_nb.runs import problems_from_manifest

    run = traces.load_run(args.thresholds_from)
    n = max(args.n_full, args.n_baselines)
    evaluated = {p.question for p in load_dataset("arith", None, n, args.seed, levels=args.levels, split=args.split)}
    by_id = problems_from_manifest(run.manifest)
    if not by_id:
        raise SystemExit(f"{args.thresholds_from}: cannot rebuild its problems from the manifest")
    keep = [i for i, p in by_id.items() if p.question not in evaluated]
    chains = chains_from_stages(run.stages[run.stages["problem_id"].isin(keep)])
    row = gate_for_budget(chains, args.budget)
    print(f"gate: tau_lp {row.tau_lp:.3f}, tau_h {row.tau_h:.3f} chosen on {len(keep)} problems of "
          f"{args.thresholds_from} (accuracy {row.accuracy:.3f}, escalation {row.escalation_rate:.3f}, "
          f"{row.avg_tokens:.0f} tokens against {row.leader_tokens:.0f} alone)", flush=True)
    return replace(base, tau_lp=float(row.tau_lp), tau_h=float(row.tau_h)), {"gate": {
        "tau_lp": float(row.tau_lp), "tau_h": float(row.tau_h),
        "rule": f"the most accurate pair on a 41 x 42 grid costing at most {args.budget}x the leader alone's "
                "tokens, replayed on a calibration run (ties: fewer tokens, then higher tau_lp)",
        "calibration_run": str(args.thresholds_from), "calibration_seed": run.manifest.get("seed"),
        "calibration_n": len(keep), "calibration": {k: float(row[k]) for k in
                                                    ("accuracy", "avg_tokens", "escalation_rate", "leader_tokens")}}}


if __name__ == "__main__":
    sys.exit(main())
