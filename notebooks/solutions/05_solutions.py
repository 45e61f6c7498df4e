# %% [markdown]
# # Chapter 05: solutions
#
# The exercises replay the recorded full chains of the studies the chapter shows by default in
# section 5.6 (`data/traces/arith-smollm2`, or the study in `$LASE_SOLUTION_TRACES`, and the
# committed organism v6) on the chapter's grid (`grid_size` 41); no model call.

# %%
import os

import numpy as np

from lase_nb.chapters import pareto
from lase_nb.replay import chains_from_stages, choose_thresholds, operating_point, pareto_front, split_halves, sweep
from lase_nb.runs import display_name, load_runs

FOLDERS = (os.environ.get("LASE_SOLUTION_TRACES", "data/traces/arith-smollm2"), "data/traces/arith-organism-v6")
chains = {display_name(f): chains_from_stages(load_runs(f, ["lase"])["lase"].stages) for f in FOLDERS}
axes = {name: pareto.threshold_axes(c, 41) for name, c in chains.items()}
grids = {name: sweep(c, *axes[name]) for name, c in chains.items()}
alone = {name: operating_point(c, 0.0, np.inf) for name, c in chains.items()}  # tau_lp 0, tau_h infinite: no escalation
for name, c in chains.items():
    print(f"{name}: {len(c.problem_ids)} problems; the leader alone {alone[name]['accuracy']:.1%} at "
          f"{alone[name]['avg_tokens']:.0f} tokens")

# %% [markdown]
# **Exercise 05.1.** On each model of section 5.6, what is the cheapest threshold pair on the grid
# that is at least as accurate as the leader alone plus one point, and what does it cost relative to
# the leader alone? On one model there is none: what does that say about its supporters?

# %%
for name, grid in grids.items():
    good = grid[grid["accuracy"] >= alone[name]["accuracy"] + 0.01]
    if good.empty:
        best = grid["accuracy"].max()
        c = chains[name]
        rescued = int((~c.correct[:, 0] & c.correct[:, 1:].any(axis=1)).sum())  # wrong alone, right at a later stage
        print(f"{name}: no pair on the grid gains a point; the best scores {best:.1%} against the leader's "
              f"{alone[name]['accuracy']:.1%}. Its supporters turn {rescued} of its {int((~c.correct[:, 0]).sum())} "
              "wrong first answers into a right one at any stage, so no threshold can buy accuracy, only spend tokens")
        assert best < alone[name]["accuracy"] + 0.01
        continue
    cheap = good.sort_values(["avg_tokens", "tau_lp"], ascending=[True, False]).iloc[0]
    print(f"{name}: tau_lp {cheap['tau_lp']:.3f}, tau_h {cheap['tau_h']:.2f}: {cheap['accuracy']:.1%}, "
          f"{cheap['avg_tokens'] / alone[name]['avg_tokens']:.2f}x the leader's tokens, escalates "
          f"{cheap['escalation_rate']:.0%}")
    # it lies on the accuracy-vs-tokens front: nothing on the grid is as cheap and more accurate
    front = grid.iloc[pareto_front(grid["avg_tokens"].to_numpy(), grid["accuracy"].to_numpy())]
    assert not ((front["avg_tokens"] <= cheap["avg_tokens"]) & (front["accuracy"] > cheap["accuracy"])).any()

# %% [markdown]
# **Exercise 05.2.** Choosing thresholds on the same problems you report can flatter them. Split the
# problems in two halves 20 times; each time choose the most accurate pair within section 5.5's
# budget (the median over the grid) on half A and score it on half B. What is the median optimism
# (accuracy on A minus accuracy on B)? It is negative on some splits: why? Compare the *gains*
# over the leader alone on each half instead, which removes how hard each half happens to be. Use
# organism v6: on the embedded model the chosen pair hardly escalates, so its gain is 0.
#
# On organism v6, at the budget section 5.5 uses:

# %%
name = display_name(FOLDERS[1])
c, (tau_lp, tau_h) = chains[name], axes[name]
budget = float(np.median(grids[name]["avg_tokens"]))  # section 5.5's default budget
checks = pareto.split_checks(c, tau_lp, tau_h, budget=budget, seeds=range(20))
solo_a = np.array([c.correct[split_halves(c.problem_ids, int(sd))[0], 0].mean() for sd in checks["seed"]])
checks = checks.assign(solo_a=solo_a, easier_b=checks["solo_b"] - solo_a,
                       gain_gap=(checks["acc_a"] - solo_a) - (checks["acc_b"] - checks["solo_b"]))
print(checks[["seed", "acc_a", "acc_b", "optimism", "solo_a", "solo_b", "gain_gap"]].round(3).head().to_string(index=False))
neg = checks[checks["optimism"] < 0]
print(f"median optimism {checks['optimism'].median():+.3f}; negative on {len(neg)} of {len(checks)} splits")
print(f"why negative: on {int((neg['easier_b'] > 0).sum())} of those {len(neg)} splits the leader alone scores "
      f"higher on half B than on half A (by {neg['easier_b'].mean():+.3f} on average): half B was easier, so "
      "the held-out accuracy rose for a reason that has nothing to do with the choice")
print(f"within {budget:,.0f} tokens per problem the chosen pair escalates {checks['esc_b'].mean():.1%} of half B on "
      f"average, and the optimism takes {checks['optimism'].round(6).nunique()} different values over the 20 splits")
assert checks["optimism"].round(6).nunique() > 1, "degenerate: every split gives the same optimism"
print(f"median optimism of the gain (gain on A minus gain on B) {checks['gain_gap'].median():+.3f}; negative on "
      f"{int((checks['gain_gap'] < 0).sum())} of {len(checks)} splits: the halves' difficulty cancels out")
assert (checks["gain_gap"].abs() > 1e-9).any(), "degenerate: the chosen pairs escalate nothing on any split"
assert np.allclose(checks["optimism"], checks["acc_a"] - checks["acc_b"])
assert np.allclose(checks["optimism"] - checks["gain_gap"], -checks["easier_b"])  # optimism = gain gap + (solo_a - solo_b)
pick = choose_thresholds(grids[name], budget)  # on all problems, for comparison
print(f"chosen on all problems: tau_lp {pick['tau_lp']:.3f}, tau_h {pick['tau_h']:.2f}, {pick['accuracy']:.1%}")
