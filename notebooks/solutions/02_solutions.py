# %% [markdown]
# # Chapter 02: solutions
#
# The exercises read the leader's first answers of the embedded model's recorded full chains
# (`data/traces/arith-smollm2/lase-full`, stage 0).

# %%
import os

from lase_nb import stats
from lase_nb.chapters import calibration
from lase_nb.confidence import confidence_frame, gate_split
from lase_nb.runs import load_runs

TRACES = os.environ.get("LASE_SOLUTION_TRACES", "data/traces/arith-smollm2")  # the study the answers are read from
first = confidence_frame(load_runs(TRACES, ["lase"])["lase"], stage=0)
ok = first["correct"].to_numpy(bool)
p_min, h_max = first["p_min"].to_numpy(float), first["h_max"].to_numpy(float)

# %% [markdown]
# **Exercise 02.1.** Which proxy flags errors better on these answers, `exp(LP_min)` or `H_max`?
# Compare their AUROCs with a test of the difference (the same answers score both, so pair them),
# not by whether two intervals overlap.

# %%
# an AUROC for errors wants a score that is high when unsure: -exp(LP_min) and H_max; answered rows only
ans = first["answered"].to_numpy(bool)
d = stats.auroc_difference(-p_min[ans], ok[ans], h_max[ans], ok[ans], paired=True, n_boot=2000, seed=0)
print(f"AUROC exp(LP_min) {d['auroc_a']:.3f}, H_max {d['auroc_b']:.3f}: difference {d['diff']:+.3f} "
      f"[{d['lo']:+.3f}, {d['hi']:+.3f}], bootstrap p = {d['p_value']:.2f} on {ans.sum()} answers")
scores = calibration.proxy_scores(first, 0.8, 0.5)
print(scores.iloc[:, :4].to_string(index=False))
assert abs(d["auroc_a"] - scores.loc[scores["proxy"] == "exp(LP_min)", "auroc"].item()) < 1e-9

# %% [markdown]
# **Exercise 02.2.** Tighten the gate from 0.8 / 0.5 to 0.95 / 0.2. How many confident errors (wrong
# answers the gate lets through) remain, and what does that cost in escalations?

# %%
for tl, th in [(0.8, 0.5), (0.95, 0.2)]:
    g = gate_split(first, tl, th)
    print(f"{tl} / {th}: escalates {g['escalation_rate']:.0%}, confident errors {int(g['confident_errors'])} "
          f"of {int(g['errors'])} errors")
a, b = gate_split(first, 0.8, 0.5), gate_split(first, 0.95, 0.2)
assert b["confident_errors"] <= a["confident_errors"] and b["escalation_rate"] >= a["escalation_rate"]

# %% [markdown]
# **Exercise 02.3.** The expected calibration error depends on its bins. Compute the ECE of
# `exp(LP_min)` as a probability of being right with 5, 10 and 20 bins. Why is the number with 20
# bins hard to trust on a recording of this size?

# %%
for bins in (5, 10, 20):
    print(f"ECE with {bins:>2} bins: {stats.ece(p_min[ans], ok[ans], n_bins=bins):.3f}")
print(f"{ans.sum()} answers: 20 bins hold about {ans.sum() / 20:.0f} each, and most fall in the top bin")
