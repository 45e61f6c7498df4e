"""Write the preregistration (data/traces/preregistration.json) from calibration chains, before
any held-out recording: commit it first, so the history shows the order.

    python data/traces/preregister.py --calibration build/organism/eval/lase-full

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
    args = ap.parse_args(argv)
    run = load_run(args.calibration)
    if run.manifest.get("seed") == EVAL_SEEDS["record"]:
        ap.error("the calibration run uses the recording seed: calibrate on other problems")
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


if __name__ == "__main__":
    raise SystemExit(main())
