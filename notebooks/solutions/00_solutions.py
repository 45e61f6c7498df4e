# %% [markdown]
# # Chapter 00: solutions
#
# Both exercises read the leader's first answers in the recorded full-chain run of the embedded
# model (`data/traces/arith-smollm2/lase-full`, stage 0 = the leader alone).

# %%
import numpy as np

from lase_nb.confidence import confidence_frame, gate_split, uncertain_mask
from lase_nb.runs import load_runs

run = load_runs("data/traces/arith-smollm2", ["lase"])["lase"]
first = confidence_frame(run, stage=0)
print(f"{len(first)} first answers")

# %% [markdown]
# **Exercise 00.1.** At the default gate (0.8 / 0.5) and at a stricter one (0.95 / 0.2), what share of
# the first answers is escalated, and how many answers change side between the two gates?

# %%
default, strict = gate_split(first, 0.8, 0.5), gate_split(first, 0.95, 0.2)
p, h = first["p_min"].to_numpy(float), first["h_max"].to_numpy(float)
moved = int((uncertain_mask(p, h, 0.8, 0.5) != uncertain_mask(p, h, 0.95, 0.2)).sum())
print(f"escalated: {default['escalation_rate']:.0%} at 0.8/0.5, {strict['escalation_rate']:.0%} at 0.95/0.2; "
      f"{moved} answers change side")
# the check: a stricter gate only adds escalations, so the rates differ by exactly the answers that moved
assert round((strict["escalation_rate"] - default["escalation_rate"]) * len(first)) == moved

# %% [markdown]
# **Exercise 00.2.** Find the least confident right first answer (the lowest `exp(LP_min)` among
# right answers). What did the leader answer, and would the default gate (0.8 / 0.5) escalate it?

# %%
right = first[first["correct"].astype(bool) & first["answered"].astype(bool)]
low = right.sort_values("p_min", kind="stable").iloc[0]
escalated = bool(low["p_min"] < 0.8 or low["h_max"] > 0.5)
print(f"{low['problem_id']}: answered {low['answer']!r}, right, with exp(LP_min) = {low['p_min']:.3f} and "
      f"H_max = {low['h_max']:.3f} nats: the default gate {'escalates' if escalated else 'accepts'} it")
assert low["p_min"] == np.nanmin(right["p_min"].to_numpy(float))
assert escalated == bool(uncertain_mask(np.array([low["p_min"]], float), np.array([low["h_max"]], float), 0.8, 0.5)[0])
