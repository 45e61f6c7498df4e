# %% [markdown]
# # Chapter 07: solutions

# %%
from scipy import stats as st

from lase_nb import runs, strategies
from lase_nb.tables import baseline_formats, off_format, strategy_tables
from lase_nb.chapters import claims

# %% [markdown]
# **Exercise 07.1.** The paper's Table 1 gives LASE 74.2% and the single agent 73.0% on the 500
# MATH-500 problems. Without the paired answers we cannot run McNemar's test, but we can bound it:
# what is the smallest number of discordant problems for which a 6-problem difference (371 vs 365
# right) is significant at 0.05, and the largest? What does that say about the claim?

# %%
lase, single = round(0.742 * 500), round(0.730 * 500)
gap = lase - single  # b - c: problems only LASE got right minus problems only the single agent got right
significant = [n for n in range(gap, 500, 2) if st.binomtest((n + gap) // 2, n, 0.5).pvalue < 0.05]
print(f"{lase} vs {single} right: b - c = {gap}; significant at 0.05 only for b + c in {significant}")
print(f"p at b + c = {gap + 2}: {st.binomtest((gap + 2 + gap) // 2, gap + 2, 0.5).pvalue:.3f}")
assert significant == [gap]  # only if LASE changed exactly 6 answers, all from wrong to right

# %% [markdown]
# Only if LASE changed exactly six answers, every one from wrong to right, would the difference be
# significant; any escalation that broke a right answer makes it chance-level. The claim "LASE is
# more accurate" is not shown by Table 1 alone, whatever the paired data were.
#
# **Exercise 07.2.** Change the verdict rule: call a claim "reproduced" when the bootstrap interval
# alone clears zero, with no exact test and no Holm adjustment (the rule a hurried reader uses).
# Which verdicts in the table change, and why?

# %%
# the chapter's three recordings, labelled as the chapter labels them (SmolLM2-135M, pointing organism (v5),
# telling organism (v4)), and its rule for baselines that are not in their own format
models = runs.load_models(runs.by_display_name(["data/traces/arith-smollm2", "data/traces/arith-organism-point",
                                                "data/traces/arith-organism-tell"]), strategies.compared(), require=["lase"])
off = {m: off_format(baseline_formats(r)) for m, r in models.items()}
table = claims.claims_by_model({m: strategy_tables(r, 0.8, 0.5) for m, r in models.items()},
                               {m: r["lase"] for m, r in models.items()}, off)
print("models:", ", ".join(models))
long = table.attrs["why"]
better = long[long["kind"] == "better"].copy()
better["bootstrap alone"] = ["reproduced" if lo > 0 else "refuted" if hi < 0 else "not shown"
                             for lo, hi in zip(better["diff_lo"], better["diff_hi"])]
changed = better[better["bootstrap alone"] != better["verdict"]]
print(changed[["claim", "model", "verdict", "bootstrap alone", "p_value", "p_holm", "diff_lo"]].to_string(index=False)
      if len(changed) else "no verdict changes on these recordings")
assert ((changed["p_holm"] >= 0.05) | (changed["verdict"] == "too few problems")).all()  # only the (Holm-adjusted) exact test or too few problems holds a verdict back
assert len(changed), "degenerate: the two rules agree everywhere"
