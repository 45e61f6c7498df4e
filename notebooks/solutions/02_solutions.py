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
# `exp(LP_min)` with 5, 10 and 20 bins, count how many bins hold answers, and resample the answers
# (a bootstrap) to see how far each ECE moves by chance. Does the choice of bins change the ECE by
# more than that?

# %%
import numpy as np

have = ~np.isnan(p_min)
p, right = p_min[have], ok[have]
rng = np.random.default_rng(0)
draws = [rng.integers(0, len(p), len(p)) for _ in range(500)]
eces = {}
for bins in (5, 10, 20):
    eces[bins] = stats.ece(p, right, n_bins=bins)
    filled = np.bincount(np.minimum((p * bins).astype(int), bins - 1), minlength=bins)
    sd = float(np.std([stats.ece(p[d], right[d], n_bins=bins) for d in draws]))
    print(f"{bins:>2} bins: ECE {eces[bins]:.3f} (bootstrap sd {sd:.3f}); {int((filled > 0).sum())} bins hold "
          f"answers, the fullest {int(filled.max())} of {len(p)}")
    # the check: the ECE by hand, bin by bin, as the gap between right answers and summed confidence
    idx = np.minimum((p * bins).astype(int), bins - 1)
    by_hand = sum(abs(right[idx == k].sum() - p[idx == k].sum()) for k in range(bins)) / len(p)
    assert np.isclose(by_hand, eces[bins])
spread = max(eces.values()) - min(eces.values())
print(f"the bins move the ECE by {spread:.3f}: most answers sit in the top bins whatever their width, so the "
      "ECE mostly measures those bins' gap; compare the spread with the bootstrap sd before reading anything into it")
