# %% [markdown]
# # Chapter 04: solutions
#
# The exercises read the embedded model's recordings (`data/traces/arith-smollm2`), LASE replayed
# at the default thresholds, as chapter 04 does.

# %%
import numpy as np

from lase_nb import stats
from lase_nb.replay import chains_from_stages, outcomes_at, replay
from lase_nb.runs import load_runs
from lase_nb.tables import comparison_table

runs = load_runs("data/traces/arith-smollm2", ["single", "mv", "mad", "moa", "down", "lase"], require=["lase"])
chains = chains_from_stages(runs["lase"].stages)
tables = {s: r.problems for s, r in runs.items() if s != "lase"}
tables["lase"] = replay(chains, 0.8, 0.5)
tables["lase-full"] = outcomes_at(chains, chains.n_stages - 1)
table = comparison_table(tables)
print(table[["n", "accuracy", "avg_tokens", "wins_vs_single", "losses_vs_single", "p_vs_single"]].round(3).to_string())

# %% [markdown]
# **Exercise 04.1.** The table tests every other strategy against the single agent, one test per
# row. With that many tests at alpha = 0.05, how likely is at least one false alarm if no strategy
# differs (tests taken as independent)? Adjust the p-values with Holm's method: does any difference survive?

# %%
others = table.drop(index="single")
print(f"P(at least one false alarm in {len(others)} tests) = 1 - 0.95^{len(others)} = {1 - 0.95 ** len(others):.2f}")
adjusted = stats.holm(others["p_vs_single"].to_numpy())
for s, p, q in zip(others.index, others["p_vs_single"], adjusted):
    print(f"{s:>10}: p {p:.3f}, Holm {q:.3f}")
assert np.all(adjusted >= others["p_vs_single"].to_numpy() - 1e-12)  # Holm never lowers a p-value

# %% [markdown]
# **Exercise 04.2.** Compute matched, pair by pair. How many of MV's recorded samples does LASE's
# average token count buy (MV's tokens per sample on these problems)? Vote over that many
# (`comparison.mv_subsample`, the first k samples of each problem) and test MV(k) against LASE on the
# same problems with the exact McNemar test and the paired interval: at equal compute, which is
# ahead, and can the test tell?

# %%
from lase_nb.chapters import comparison

mv_calls, mv_problems = runs["mv"].calls, runs["mv"].problems
per_sample = mv_problems["total_tokens"].mean() / mv_calls.groupby("problem_id").size().mean()
k = max(1, int(tables["lase"]["total_tokens"].mean() // per_sample))
votes = comparison.mv_subsample(mv_calls, mv_problems, ks=[k])
mv_k = votes[votes["k"] == k].set_index("problem_id")["correct"]
lase = tables["lase"].set_index("problem_id")["correct"]
both = lase.index.intersection(mv_k.index)
t = stats.paired_test(mv_k.loc[both].to_numpy(bool), lase.loc[both].to_numpy(bool), n_boot=2000, seed=0)
print(f"LASE spends {tables['lase']['total_tokens'].mean():.0f} tokens a problem, MV {per_sample:.0f} a sample: "
      f"MV({k}) at equal compute; on {len(both)} problems MV({k}) - LASE = {100 * t['diff']:+.1f} points "
      f"[{100 * t['diff_lo']:+.1f}, {100 * t['diff_hi']:+.1f}], McNemar p = {t['p_value']:.2g}, "
      f"{t['b'] + t['c']} problems differ")
assert 1 <= k and t["n"] == len(both)

# %% [markdown]
# **Exercise 04.3.** MAD against LASE, pair by pair: on the problems both ran, how many does each
# get right that the other gets wrong, and what do the exact McNemar test and the paired bootstrap
# interval say?

# %%
mad = tables["mad"].set_index("problem_id")["correct"]
lase = tables["lase"].set_index("problem_id")["correct"]
ids = mad.index.intersection(lase.index)
test = stats.paired_test(lase.loc[ids].to_numpy(bool), mad.loc[ids].to_numpy(bool), seed=0)
print(f"on {test['n']} problems: LASE {test['acc_a']:.1%}, MAD {test['acc_b']:.1%}; LASE alone right {test['b']}, "
      f"MAD alone right {test['c']}; McNemar p = {test['p_value']:.3f}; difference {test['diff']:+.3f} "
      f"[{test['diff_lo']:+.3f}, {test['diff_hi']:+.3f}]; a claim needs both: {stats.clears_both(test)}")
