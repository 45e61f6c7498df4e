# %% [markdown]
# # Chapter 05: solutions
#
# The exercises replay the recorded full chains of the telling organism (v4,
# `data/traces/arith-organism-tell/lase-full`, 200 problems), the recording whose gate moves the
# most; no model call.

# %%
import numpy as np

from lase_nb.chapters import pareto
from lase_nb.replay import chains_from_stages, choose_thresholds, operating_point, pareto_front, split_halves, sweep
from lase_nb.runs import load_runs

chains = chains_from_stages(load_runs("data/traces/arith-organism-tell", ["lase"])["lase"].stages)
tau_lp, tau_h = pareto.threshold_axes(chains, 21)
grid = sweep(chains, tau_lp, tau_h)
alone = operating_point(chains, 0.0, np.inf)  # tau_lp 0 and tau_h infinite: nothing escalates
print(f"{len(chains.problem_ids)} problems; the leader alone: {alone['accuracy']:.1%} at {alone['avg_tokens']:.0f} tokens")

# %% [markdown]
# **Exercise 05.1.** What is the cheapest threshold pair on the grid that is at least as accurate as
# the leader alone plus one point, and what does it cost relative to the leader alone?

# %%
good = grid[grid["accuracy"] >= alone["accuracy"] + 0.01]
if good.empty:
    print("no pair on the grid gains a point")
else:
    cheap = good.sort_values(["avg_tokens", "tau_lp"], ascending=[True, False]).iloc[0]
    print(f"tau_lp {cheap['tau_lp']:.2f}, tau_h {cheap['tau_h']:.2f}: {cheap['accuracy']:.1%}, "
          f"{cheap['avg_tokens'] / alone['avg_tokens']:.2f}x the leader's tokens, escalates {cheap['escalation_rate']:.0%}")
    # it lies on the accuracy-vs-tokens front: nothing on the grid is as cheap and more accurate
    front = grid.iloc[pareto_front(grid["avg_tokens"].to_numpy(), grid["accuracy"].to_numpy())]
    assert not ((front["avg_tokens"] <= cheap["avg_tokens"]) & (front["accuracy"] > cheap["accuracy"])).any()

# %% [markdown]
# **Exercise 05.2.** Choosing thresholds on the same problems you report flatters them. Split the
# problems in two halves 20 times; each time choose the most accurate pair within 1.5x the leader's
# tokens on half A and score it on half B. What is the median optimism (accuracy on A minus
# accuracy on B)? It is negative on some splits: why? Compare the *gains* over the leader alone on
# each half instead, which removes how hard each half happens to be.

# %%
checks = pareto.split_checks(chains, tau_lp, tau_h, budget=1.5 * alone["avg_tokens"], seeds=range(20))
print(checks[["seed", "acc_a", "acc_b", "optimism"]].round(3).head().to_string(index=False))
print(f"median optimism {checks['optimism'].median():+.3f}; negative on {(checks['optimism'] < 0).sum()} of 20 splits")
ids = chains.problem_ids
solo_a = [chains.correct[split_halves(ids, int(sd))[0], 0].mean() for sd in checks["seed"]]
gain_gap = (checks["acc_a"] - solo_a) - (checks["acc_b"] - checks["solo_b"])
print(f"median optimism of the gain (gain on A minus gain on B) {gain_gap.median():+.3f}; "
      f"negative on {(gain_gap < 0).sum()} of 20 splits")
one = checks.iloc[0]
pick = choose_thresholds(grid, 1.5 * alone["avg_tokens"])  # on all problems, for comparison
print(f"chosen on all problems: tau_lp {pick['tau_lp']:.2f}, tau_h {pick['tau_h']:.2f}, {pick['accuracy']:.1%}")
assert np.isclose(one["optimism"], one["acc_a"] - one["acc_b"])
