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
# **Exercise 00.1.** The gate escalates an answer when `exp(LP_min)` is below 0.8 **or** `H_max` is
# above 0.5 nats. On the recorded first answers, how many does each test flag on its own, how many
# both, and how many decisions would change if the gate read `exp(LP_min)` alone?

# %%
p, h = first["p_min"].to_numpy(float), first["h_max"].to_numpy(float)
by_p = uncertain_mask(p, h, 0.8, float("inf"))  # exp(LP_min) < 0.8 alone (an unanswered reply counts as unsure)
by_h = uncertain_mask(p, h, 0.0, 0.5)  # H_max > 0.5 alone
gate = uncertain_mask(p, h, 0.8, 0.5)
print(f"exp(LP_min) alone flags {int(by_p.sum())}, H_max alone {int(by_h.sum())}, both {int((by_p & by_h).sum())}; "
      f"the gate escalates {int(gate.sum())} of {len(first)}; reading exp(LP_min) alone changes "
      f"{int((gate != by_p).sum())} decisions")
assert (gate == (by_p | by_h)).all()  # the gate is the union of its two tests
assert gate_split(first, 0.8, 0.5)["escalation_rate"] == gate.mean()

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
