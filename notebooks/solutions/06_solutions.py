# %% [markdown]
# # Chapter 06: solutions
#
# The exercises read the leader's first answers of the two models the chapter shows: the embedded
# SmolLM2-135M (`data/traces/arith-smollm2`) and the pointing organism v5
# (`data/traces/arith-organism-point`).

# %%
import os

from lase_nb.confidence import confidence_frame, gate_split
from lase_nb.runs import display_name, load_runs, problems_from_manifest

FOLDERS = (os.environ.get("LASE_SOLUTION_TRACES", "data/traces/arith-smollm2"), "data/traces/arith-organism-point")
runs = {display_name(f): load_runs(f, ["lase"])["lase"] for f in FOLDERS}
firsts = {name: confidence_frame(run, stage=0) for name, run in runs.items()}

# %% [markdown]
# **Exercise 06.1.** Confident errors: what share of each study's wrong first answers is *very*
# confident (`exp(LP_min)` at least 0.99)? No threshold on `exp(LP_min)` below 0.99 can send those
# to a supporter.

# %%
for name, f in firsts.items():
    wrong = f[~f["correct"].astype(bool) & f["answered"].astype(bool)]
    very = int((wrong["p_min"] >= 0.99).sum())
    print(f"{name}: {very} of {len(wrong)} wrong answers ({very / len(wrong):.0%}) have exp(LP_min) >= 0.99")
    assert very <= gate_split(f, 0.99, float("inf"))["errors"]

# %% [markdown]
# **Exercise 06.2.** Breaks come from the gate's false alarms: a right first answer the gate calls
# unsure goes to the supporters, and a revision can turn it wrong. On each study, replay LASE on its
# full chains at a strict gate (0.95 / 0.2), the default (0.8 / 0.5) and a lax one (0.5 / 1.0): how
# many wrong first answers end right (fixes), how many right ones end wrong (breaks), and which gate
# nets most? (`replay.replay`; the first answers are stage 0 of the chains.)

# %%
from lase_nb.replay import chains_from_stages, replay

for name, run in runs.items():
    chains = chains_from_stages(run.stages)
    first = chains.correct[:, 0].astype(bool)
    nets = {}
    for gate in ((0.95, 0.2), (0.8, 0.5), (0.5, 1.0)):
        end = replay(chains, *gate)["correct"].to_numpy(bool)
        fixes, breaks = int((~first & end).sum()), int((first & ~end).sum())
        nets[gate] = fixes - breaks
        print(f"{name}, gate {gate[0]} / {gate[1]}: {fixes} fixed, {breaks} broken, net {fixes - breaks:+d} of {len(first)}")
        assert fixes - breaks == int(end.sum()) - int(first.sum())  # the net is the accuracy change
    best = [f"{g[0]} / {g[1]}" for g, v in nets.items() if v == max(nets.values())]
    print(f"{name}: the most net: {' and '.join(best)}")
