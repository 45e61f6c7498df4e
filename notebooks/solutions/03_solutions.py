# %% [markdown]
# # Chapter 03: solutions
#
# The exercises replay the embedded model's recorded full chains
# (`data/traces/arith-smollm2/lase-full`): no model call.

# %%
import numpy as np

from lase_nb import stats
from lase_nb.chapters import pipeline
from lase_nb.notes import count_answer_notes
from lase_nb.replay import chains_from_stages, replay
from lase_nb.runs import load_runs, problems_from_manifest

run = load_runs("data/traces/arith-smollm2", ["lase"])["lase"]
chains = chains_from_stages(run.stages)
print(f"{len(chains.problem_ids)} problems, {chains.n_stages} stages each")

# %% [markdown]
# **Exercise 03.1.** At 0.8 / 0.5, on how many problems does LASE *fix* the leader (stage 0 wrong,
# final answer right), and on how many does it *break* it (right, then wrong)? Is the difference
# significant by the exact McNemar test?

# %%
alone, lase = chains.correct[:, 0], replay(chains, 0.8, 0.5)["correct"].to_numpy(bool)
fixed, broken = int((~alone & lase).sum()), int((alone & ~lase).sum())
b, c, p = stats.mcnemar(lase, alone)
print(f"fixed {fixed}, broken {broken}; McNemar p = {p:.3f}; accuracy {alone.mean():.1%} alone, {lase.mean():.1%} LASE")
assert (b, c) == (fixed, broken)  # McNemar reads exactly these two counts

# %% [markdown]
# **Exercise 03.2.** Raise tau_lp to 0.95 (tau_h 0.5). Where does LASE stop now, and what does the
# extra caution cost in tokens per problem?

# %%
for tl in (0.8, 0.95):
    r = replay(chains, tl, 0.5)
    print(f"tau_lp {tl}: stops {np.bincount(r['stop_stage'], minlength=chains.n_stages).tolist()} "
          f"(stage 0..{chains.n_stages - 1}), {r['total_tokens'].mean():.0f} tokens, accuracy {r['correct'].mean():.1%}")
dist = pipeline.stop_distribution(chains, 0.95, 0.5)
print(dist.iloc[:, :5].to_string(index=False))
assert dist["problems"].tolist() == np.bincount(r["stop_stage"], minlength=chains.n_stages).tolist()

# %% [markdown]
# On this model no escalated answer ever becomes confident: LASE stops at stage 0 or runs every
# supporter, and the extra escalations at 0.95 mostly turn right answers wrong (see the accuracy of
# the problems that run to the expert).

# %%
print(f"accuracy of the problems that reach the expert at 0.95: {dist['accuracy'].iloc[-1]:.0%}")

# %% [markdown]
# **Exercise 03.3.** The paper's rule: a supporter never states the final answer. Count, per role,
# the notes that break it in this recording, and compare with the count the recording's manifest
# carries.

# %%
problems = list(problems_from_manifest(run.manifest).values())
counts = count_answer_notes(run.calls, run.stages, problems)
print(counts)
print("manifest:", run.manifest.get("notes_stating_answer"))
assert counts == run.manifest["notes_stating_answer"]
