# %% [markdown]
# # Chapter 03: solutions
#
# The exercises replay recorded full chains: the embedded model's (`data/traces/arith-smollm2`),
# the pointing organism's (03.1) and the telling organism's (03.3); no model call.

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
# **Exercise 03.1.** On the pointing organism at 0.8 / 0.5, split LASE's *fixes* (stage 0 wrong,
# final answer right) and *breaks* (right, then wrong) by the problems' level (1-3). Where do the
# fixes come from, and does the exact McNemar test clear on any level?

# %%
org = load_runs("data/traces/arith-organism-point", ["lase"])["lase"]
org_chains = chains_from_stages(org.stages)
level = org.problems.set_index(org.problems["problem_id"].astype(str))["level"]
levels = level.loc[[str(p) for p in org_chains.problem_ids]].to_numpy()
alone, lase = org_chains.correct[:, 0], replay(org_chains, 0.8, 0.5)["correct"].to_numpy(bool)
for lv in sorted(set(levels)):
    on = levels == lv
    b, c, p = stats.mcnemar(lase[on], alone[on])
    print(f"level {lv}: {int(on.sum())} problems, fixed {b}, broken {c}, McNemar p = {p:.2f}")
b, c, p = stats.mcnemar(lase, alone)
print(f"all levels: fixed {b}, broken {c}, McNemar p = {p:.2f}")
# the check: the levels' fixes and breaks add up to the whole
assert (b, c) == (int((~alone & lase).sum()), int((alone & ~lase).sum()))
assert sum(stats.mcnemar(lase[levels == lv], alone[levels == lv])[0] for lv in set(levels)) == b

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
# **Exercise 03.3.** The paper's rule: a supporter never states the final answer. On the telling
# organism, count per role the notes that state it after a wrong attempt and after a right one
# (`notes.count_answer_notes`). Does a supporter state the answer more often when the attempt is
# wrong? Test the difference for each role.

# %%
tell = load_runs("data/traces/arith-organism-tell", ["lase"])["lase"]
counts = count_answer_notes(tell.calls, tell.stages, list(problems_from_manifest(tell.manifest).values()))
assert counts == tell.manifest["notes_stating_answer"]  # the check: the manifest recorded the same counts
for role, c in counts.items():
    w, r = c["on_wrong"], c["other_on_right"]
    t = stats.proportions_test(w["k"], w["n"], r["k"], r["n"])
    print(f"{role}: {w['k']} of {w['n']} notes on wrong attempts state the answer, {r['k']} of {r['n']} on right ones; "
          f"difference {100 * t['diff']:+.0f} points [{100 * t['lo']:+.0f}, {100 * t['hi']:+.0f}], Fisher p = "
          f"{t['p_value']:.2g}: {'more often on wrong attempts' if t['differs'] and t['diff'] > 0 else 'not shown to differ'}")
