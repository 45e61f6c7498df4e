"""The controlled experiment's numbers, as the preregistration fixed them: print them as markdown.

    python data/traces/report.py [--organism data/traces/arith-organism-point] [--control data/traces/control-level1]
    python data/traces/report.py --v6      # organism v6's own preregistration (arith-organism-v6)

The preregistration was written for the pointing organism (v5), whose recordings are in
``data/traces/arith-organism-point`` (the default); ``--organism`` reads another organism's.

Reads the committed preregistration and whatever recordings exist (a missing one is named, not
guessed): the primary test on ``lase-large``, Theorem 3.7's predicted lower bound against the
held-out gain, the secondary family under Holm's correction, the aim's criteria, and the two models
on the same level-1 problems. Every number comes from the package's tested functions.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from lase_nb.organism import preregistration as P
from lase_nb.organism import regimes
from lase_nb.errors import LaseError
from lase_nb.runs import display_name, load_runs
from lase_nb.tables import strategy_tables
from lase_nb.stats import points


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _test_line(t: dict) -> str:
    if "acc_a" not in t:  # a difference of gains (stats.gain_difference)
        return (f"{points(t['gain_a'])} vs {points(t['gain_b'])} points: difference {points(t['diff'])} "
                f"[{points(t['diff_lo'])}, {points(t['diff_hi'])}], sign test p = {t['p_value']:.3g}, n = {t['n']}")
    return (f"{_pct(t['acc_a'])} vs {_pct(t['acc_b'])}: {points(t['diff'])} points "
            f"[{points(t['diff_lo'])}, {points(t['diff_hi'])}], {t['b']} vs {t['c']} discordant, "
            f"McNemar p = {t['p_value']:.3g}, n = {t['n']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--organism", default="data/traces/arith-organism-point",
                    help="the organism's recordings (default: the pointing organism, v5)")
    ap.add_argument("--control", default="data/traces/control-level1")
    ap.add_argument("--v6", action="store_true",
                    help="organism v6's preregistered test and secondary endpoints (arith-organism-v6, control-level1-v6)")
    args = ap.parse_args()
    if args.v6:
        return v6_report()
    prereg = P.load()
    th = prereg["thresholds"]
    runs = load_runs(args.organism, ["single", "mv", "mad", "moa", "down", "lase", "lase-mv", "lase-shuffled",
                                     "lase-large"])
    print(f"# The controlled experiment (preregistered {prereg['date']}; thresholds {th['tau_lp']} / {th['tau_h']})\n")
    print(f"organism: {display_name(args.organism)}; runs found in {args.organism}: {', '.join(runs) or 'none'}\n")

    if "lase-large" in runs:
        r = P.primary_from_gated_run(prereg, runs["lase-large"])
        print("## Primary: gated LASE vs the leader alone on lase-large\n")
        print(f"- {_test_line(r)}; escalated {r['escalated']}; **claimed: {r['claimed']}** (both tests needed)")
        if "predicted_lower_bound" in r:
            print(f"- Theorem 3.7's preregistered lower bound {points(r['predicted_lower_bound'])} points: "
                  f"{'met' if r['prediction_met'] else 'missed'} by the held-out gain {points(r['diff'])}")
        print()
    else:
        print("## Primary: lase-large not recorded yet\n")

    if "lase" in runs:
        chains = P.chains_of(runs["lase"])
        r = P.primary_result(prereg, chains)
        print("## Gated LASE vs the leader alone on lase-full (the same test)\n")
        print(f"- {_test_line(r)}; claimed: {r['claimed']}\n")
        tables = strategy_tables(runs, th["tau_lp"], th["tau_h"])
        bp = prereg["budget_pair"]
        control = Path(args.control)
        ctl = {m: load_runs(control / m, ["lase"]).get("lase") for m in ("organism", "smollm2")}
        c = (regimes.compare_gains(P.chains_of(ctl["organism"]), P.chains_of(ctl["smollm2"]), th["tau_lp"], th["tau_h"])
             if all(ctl.values()) else None)
        pairs = P.secondary_pairs(prereg, runs, c)
        rows = P.secondary_results(prereg, pairs)
        print("## Secondary family (Holm)\n")
        print("| comparison | result | Holm p | claimed |\n|---|---|---|---|")
        for s in rows:
            print(f"| {s['name']} | {_test_line(s)} | {s['p_holm']:.3g} | {s['claimed']} |")
        print()
        if "mv" in tables:
            aim = P.aim_result(tables["lase"], tables["mv"])
            print("## The aim\n")
            print(f"- LASE within {100 * P.AIM['points']:g} point of MV(7) or above, at <= {P.AIM['token_ratio']}x its "
                  f"tokens: LASE {_pct(aim['acc_lase'])}, MV {_pct(aim['acc_mv'])} on {aim['n']} problems, "
                  f"{aim['token_ratio']:.2f}x MV's tokens: **{'met' if aim['met'] else 'not met'}**")
        t = [s for s in rows if s["name"] == "LASE at the budget pair vs the leader alone"]
        if t:
            print(f"- at the preregistered budget pair ({bp['tau_lp']:.2f}, {bp['tau_h']:.2f}): {_test_line(t[0])}: "
                  f"interval above zero: **{t[0]['diff_lo'] > 0}**")
        print()
        if all(ctl.values()):
            labels = ("organism (zero-shot)", "SmolLM2-135M (two worked examples)")
            table = regimes.control_table(c, *labels)
            print(f"## The negative control: both models on the same {c['n']} level-1 problems\n")
            print(f"| | {labels[0]} | {labels[1]} |\n|---|---|---|")
            for row, values in table.iterrows():
                print(f"| {row} | {values[labels[0]]} | {values[labels[1]]} |")
            print(f"\n{regimes.describe_control(c, 'the organism', 'the base model')}\n")
        else:
            missing = [m for m, r in ctl.items() if r is None]
            print(f"## The negative control: not yet recorded ({', '.join(missing)})")
    return 0


def v6_report() -> int:
    """Organism v6's preregistration (``arith-organism-v6/preregistration.json``): the primary test
    with the told-answer sensitivity, and the secondary endpoints, reported without a claim."""
    from lase_nb.organism import ceiling, controls, revision

    prereg = P.load(P.V6_PATH)
    print(f"# Organism v6 (preregistered {prereg['date']})\n")
    print(controls.describe_v6(prereg, made_of=False) + "\n")
    print("## Secondary endpoints (reported, no claim)\n")
    print(ceiling.markdown(revision.v6_secondary(prereg).reset_index()))
    made_of = controls.load_controls()
    if made_of is None:
        print("\n## What the gain is made of: the controls are not recorded yet (data/traces/controls.py)")
        return 0
    print("\n## What the gain is made of (the controls' preregistration, arith-organism-v6/controls)\n")
    print(controls.describe_primary(controls.primary(made_of.prereg, made_of.table), made_of.prereg) + "\n")
    print(ceiling.markdown(controls.arm_counts(made_of.table)) + "\n")
    print(controls.secondary_markdown(controls.secondary(made_of.prereg, made_of.table)) + "\n")
    costs = controls.cost_table(made_of.run, made_of.table, made_of.mv)
    print(ceiling.markdown(costs.round(3)) + "\n")
    print(controls.describe_cost(costs, controls.where_tokens_go(made_of.run), P.AIM) + "\n")
    print(controls.describe_replay(controls.replay_check()))
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    try:
        sys.exit(main())
    except LaseError as e:  # a missing or damaged recording: one line, as `lase-nb` prints it
        print(f"report.py: error: {e}", file=sys.stderr)
        sys.exit(2)
