"""Write the preregistration (data/traces/preregistration.json) from calibration chains, before
any held-out recording: commit it first, so the history shows the order.

    python data/traces/preregister.py --calibration build/organism/eval/lase-full
    python data/traces/preregister.py --round3 --calibration build/r3/eval/lase-full \
        --out data/traces/arith-organism/preregistration.json

The calibration run is a full-chain LASE run of the organism on calibration problems of the eval
split (``benchmarks/organism_skills.py`` writes one; its seed is never recorded). See
:mod:`lase_nb.preregistration` for what the file holds and how the analysis reads it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from lase_nb import preregistration  # noqa: E402
from lase_nb.chapters.correct_seeds import bound_check, predicted_gain, seed_table  # noqa: E402
from lase_nb.organism import EVAL_SEEDS  # noqa: E402
from lase_nb.runs import problems_from_manifest  # noqa: E402
from lase_nb.traces import load_run  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calibration", type=Path, required=True, help="a full-chain LASE run on calibration problems")
    ap.add_argument("--out", type=Path, default=preregistration.PATH)
    ap.add_argument("--budget", type=float, default=1.5)
    ap.add_argument("--round3", action="store_true",
                    help="the second preregistration (round 3's organism): pins --adapter, chooses the "
                         "thresholds on the calibration chains, fixes every recording's slice (organism.RECORDINGS_R3)")
    ap.add_argument("--adapter", type=Path, default=ROOT / "data" / "organism" / "adapter_model.safetensors",
                    help="with --round3: the adapter the calibration chains were run with")
    args = ap.parse_args(argv)
    run = load_run(args.calibration)
    if run.manifest.get("seed") in (EVAL_SEEDS["record"], EVAL_SEEDS["record3"]):
        ap.error("the calibration run uses a recording seed: calibrate on other problems")
    if args.round3:
        return _round3(args, run)
    chains = preregistration.chains_of(run)
    problems = problems_from_manifest(run.manifest)
    th = (0.8, 0.5)
    check = bound_check(seed_table(chains, run.calls, problems, *th), n_boot=5000)
    src = {"run": str(args.calibration), "model": run.manifest.get("model"), "seed": run.manifest.get("seed"),
           "split": run.manifest.get("split"), "levels": run.manifest.get("levels"), "n": len(chains.problem_ids),
           "model_files": run.manifest.get("model_files")}
    held = {"split": "eval", "seed": EVAL_SEEDS["record"], "model": "organism", "levels": [1, 2, 3],
            "runs": {"lase-full": ">= 200, every stage", "single, mv, mad, moa, down": ">= 120",
                     "lase-shuffled, lase-mv": ">= 60", "lase-large": ">= 600 further problems, gated"},
            "negative_control": "both models' full chains on the same >= 80 level-1 problems of the eval split"}
    out = preregistration.build(chains, predicted_gain(check), source=src, tau_lp=th[0], tau_h=th[1],
                                budget=args.budget, held_out=held)
    out["calibration_terms"] = {k: float(check.loc[k, "estimate"]) for k in
                                ("p_u1", "rho", "delta_paper", "a3_paper", "delta", "a3_gap", "gain")}
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    return 0


def _round3(args, run) -> int:
    """The second preregistration, written to ``--out`` (by convention the organism's folder)."""
    import hashlib

    from lase_nb.organism import RECORDINGS_R3

    if run.manifest.get("problem_set") != "organism-eval":
        raise SystemExit(f"{args.calibration}: not a run on organism.eval_problems (problem_set organism-eval)")
    chains = preregistration.chains_of(run)
    problems = problems_from_manifest(run.manifest)
    check = bound_check(seed_table(chains, run.calls, problems, 0.8, 0.5), n_boot=5000)
    sha = hashlib.sha256(args.adapter.read_bytes()).hexdigest()
    src = {"run": str(args.calibration), "model": run.manifest.get("model"), "seed": run.manifest.get("seed"),
           "split": "eval", "problem_set": "organism-eval", "levels": run.manifest.get("levels"),
           "n": len(chains.problem_ids)}
    held = {"problem_set": "organism-held-out-r3", "seed": EVAL_SEEDS["record3"], "model": "organism",
            "levels": [1, 2, 3], "draw": "lase_nb.organism.held_out_problems: the eval split less every chain of "
            "the training sets, both calibration pools and every recording before round 3",
            "runs": RECORDINGS_R3, "gated_at": "the thresholds above; DOWN at its own calibrated threshold"}
    out = preregistration.build_round3(
        chains, predicted_gain(check), source=src, budget=args.budget, held_out=held,
        model_files={"adapter": str(args.adapter.relative_to(ROOT) if args.adapter.is_relative_to(ROOT) else args.adapter),
                     "adapter_sha256": sha, "base": "SmolLM2-135M-Instruct (the embedded model)"})
    out["calibration_terms"] = {k: float(check.loc[k, "estimate"]) for k in
                                ("p_u1", "rho", "delta_paper", "a3_paper", "delta", "a3_gap", "gain")}
    out["calibration_summary"] = preregistration.describe_calibration(out)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(out["calibration_summary"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
