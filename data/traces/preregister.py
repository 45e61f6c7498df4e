"""Write the preregistration (data/traces/preregistration.json) from calibration chains, before
any held-out recording: commit it first, so the history shows the order.

    python data/traces/preregister.py --calibration build/organism/eval/lase-full
    python data/traces/preregister.py --round3 --calibration build/r3/eval/lase-full \
        --out data/traces/arith-organism/preregistration.json
    python data/traces/preregister.py --v6     # organism v6, from its whole chain on the spent problems
    python data/traces/preregister.py --v6-controls   # what v6's gain is made of (lase_nb.organism.controls)

The calibration run is a full-chain LASE run of the organism on calibration problems of the eval
split (``benchmarks/organism_skills.py`` writes one; its seed is never recorded). See
:mod:`lase_nb.organism.preregistration` for what the file holds and how the analysis reads it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from lase_nb.organism import preregistration  # noqa: E402
from lase_nb.chapters.correct_seeds import bound_check, predicted_gain, seed_table  # noqa: E402
from lase_nb.organism.recipe import EVAL_SEEDS  # noqa: E402
from lase_nb.runs import problems_from_manifest  # noqa: E402
from lase_nb.traces import load_run  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calibration", type=Path, help="a full-chain LASE run on calibration problems")
    ap.add_argument("--v6", action="store_true",
                    help="organism v6's preregistration (lase_nb.organism.preregistration.V6_PATH): its prediction from its "
                         "whole chain on the spent problems (arith-organism-v6/lase-full) beside v5's, its fresh "
                         "problems and control problems fixed by seed, exclusions and hash")
    ap.add_argument("--n", type=int, default=600, help="with --v6: fresh problems for the primary test")
    ap.add_argument("--n-control", type=int, default=120, help="with --v6: level-1 control problems")
    ap.add_argument("--out", type=Path, default=preregistration.PATH)
    ap.add_argument("--budget", type=float, default=1.5)
    ap.add_argument("--round3", action="store_true",
                    help="the second preregistration (round 3's organism): pins --adapter, chooses the "
                         "thresholds on the calibration chains, fixes every recording's slice (data/organism/round3.py's RECORDINGS_R3)")
    ap.add_argument("--adapter", type=Path, default=ROOT / "data" / "organism" / "adapter_model.safetensors",
                    help="with --round3: the adapter the calibration chains were run with")
    ap.add_argument("--v6-controls", action="store_true",
                    help="the controls of organism v6's gain (lase_nb.organism.controls.PREREG_PATH): note vs no note vs another "
                         "problem's note at stage 1, the revision adapter alone and the cascade; fixed before any call")
    args = ap.parse_args(argv)
    if args.v6_controls:
        return _v6_controls()
    if args.v6:
        return _v6(args)
    if args.calibration is None:
        ap.error("--calibration is required (except with --v6)")
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

    sys.path.insert(0, str(ROOT / "data" / "organism"))
    from round3 import RECORDINGS_R3

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
            "levels": [1, 2, 3], "draw": "data/organism/round3.py held_out_problems: the eval split less every chain of "
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


def _v6(args) -> int:
    """Organism v6's preregistration, written alone to :data:`lase_nb.organism.preregistration.V6_PATH`."""
    from lase_nb.organism import recipe as organism, revision
    from lase_nb.backends.local.files import ORGANISM_DIR, REVISION_DIR
    from lase_nb.stats import mcnemar_power

    th = (0.8, 0.5)
    runs = {"v5": load_run(revision.V5_FULL), "v6": load_run(revision.V6_STUDY / "lase-full")}
    spent = {k: revision.whole_chain_test(preregistration.chains_of(r), *th) for k, r in runs.items()}
    flow = revision.stage_flow(preregistration.chains_of(runs["v6"]), *th)
    files = runs["v6"].manifest.get("model_files") or {}
    for name, folder in (("organism", ORGANISM_DIR), ("organism-revision", REVISION_DIR)):
        committed = json.loads((folder / "manifest.json").read_text())["adapter_sha256"]
        if (files.get("models") or {}).get(name, {}).get("adapter_sha256") != committed:
            raise SystemExit(f"the spent-problem chain was not recorded with the committed {name} adapter ({committed[:12]})")
    prediction = preregistration.v6_prediction(spent["v6"])
    disc = (spent["v6"]["b"] + spent["v6"]["c"]) / spent["v6"]["n"]  # discordant share on the spent problems
    gain = prediction["effect"]
    p_gain, p_loss = max((disc + gain) / 2, 0.0), max((disc - gain) / 2, 0.0)
    power = mcnemar_power(args.n, p_gain, p_loss)
    seed = EVAL_SEEDS["record6"]
    fresh = organism.v6_problems("problems", args.n, seed=seed, levels=(1, 2, 3))
    control = organism.v6_problems("control", args.n_control, seed=seed, levels=(1,))
    what = organism.v6_exclusions()

    def listed(ps, levels) -> dict:
        return {"problem_set": "organism-v6", "split": "eval", "seed": seed, "levels": list(levels), "n": len(ps),
                "per_level": {str(lv): sum(p.meta["level"] == lv for p in ps) for lv in levels},
                "excluded": what, "sha256": organism.problems_sha256(ps),
                "ids_first": [p.id for p in ps[:3]]}

    out = preregistration.build_v6(
        model_files=files, problems=listed(fresh, (1, 2, 3)),
        control={**listed(control, (1,)), "models": ["smollm2-135m", "organism-v6"],
                 "what": "both models' whole chains (every stage) on these level-1 problems: the organism's gain "
                         "minus the base model's, the negative control"},
        spent=spent, prediction=prediction, power=power, tau_lp=th[0], tau_h=th[1])
    out["spent"]["v6_stage_flow"] = flow.to_dict(orient="records")
    out["prediction"]["power_at"] = {"n": args.n, "p_gain": round(p_gain, 4), "p_loss": round(p_loss, 4),
                                     "discordant_on_spent": round(disc, 4)}
    preregistration.V6_PATH.parent.mkdir(parents=True, exist_ok=True)
    preregistration.V6_PATH.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: out[k] for k in ("spent", "prediction")}, indent=1))
    return 0




def _v6_controls() -> int:
    """The controls' preregistration, written alone to :data:`lase_nb.organism.controls.PREREG_PATH`."""
    from lase_nb.organism import controls, recipe as organism

    v6 = preregistration.load(preregistration.V6_PATH)
    run = load_run(controls.STUDY / "lase-large")
    problems = organism.v6_problems("problems", v6["problems"]["n"], seed=v6["problems"]["seed"])
    if organism.problems_sha256(problems) != v6["problems"]["sha256"]:
        raise SystemExit("v6's fresh problems do not regenerate with their preregistered sha256: do not go on")
    th = v6["thresholds"]
    cases = controls.escalated_cases(run, {p.id: p for p in problems}, th["tau_lp"], th["tau_h"])
    power = {f"discordant {int(100 * d)}%, {k}": v for d in (0.2, 0.3)
             for k, v in controls.power_at(len(cases), d).items()}
    out = controls.build_prereg(run=run, cases=cases, problems=problems, v6_prereg=v6, power=power,
                                tau_lp=th["tau_lp"], tau_h=th["tau_h"])
    controls.PREREG_PATH.parent.mkdir(parents=True, exist_ok=True)
    controls.PREREG_PATH.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps(out, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
