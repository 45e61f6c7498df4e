# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-all
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A2. The statistics behind the comparisons (appendix to chapter 04)
#
# Chapter 04 reads each comparison with two tests: the exact McNemar test on the problems where two
# strategies disagree, and a paired bootstrap 95% interval of the difference (problems resampled
# together, so the two strategies' answers stay paired). A claim needs both. This appendix holds
# what a reader checking those numbers goes looking for: the organism's **preregistered family**
# of secondary comparisons under Holm's adjustment, and the difference of two models' gains on
# the same problems, tested by a sign test on the problems where the gains differ. The functions
# are `lase_nb.stats` (`paired_test`, `mcnemar`, `holm`, `gain_difference`) and
# `lase_nb.organism.preregistration`. No model is called.

# %% tags=["parameters"]
point_traces = "../data/traces/arith-organism-point"  # the pointing organism (v5), for which the family was preregistered
control_traces = "../data/traces/control-level1"  # both models on the same level-1 problems (the last comparison); None: skip
tau_lp = 0.8  # gate thresholds (the preregistered ones)
tau_h = 0.5
interactive = None  # this appendix makes no widgets

# %%
from IPython.display import Markdown, display

from lase_nb.organism import preregistration, regimes
from lase_nb import runs as run_store
from lase_nb import strategies

ORG = run_store.display_name(point_traces)
models = {ORG: run_store.load_runs(point_traces, strategies.compared())}
print(f"{ORG}: runs {', '.join(models[ORG])}")

# %% [markdown]
# ## A2.1 The preregistered family, Holm-adjusted
#
# Chapters 04 to 07 report their p-values one by one, and with a dozen tests one of them will fall
# below 0.05 on a true null about half the time. Before any held-out recording,
# `data/traces/preregistration.json` fixed the organism's secondary comparisons as **one family**:
# LASE against MV(7), MAD, MoA and DOWN, LASE+MV against MV, the shuffled order, the budget pair
# and always-interact against the leader alone, and the difference between the two models' gains
# on the same level-1 problems (the negative control). Holm's step-down adjustment keeps the chance
# of any false claim in the family at 5%; a comparison is claimed only where the paired bootstrap
# interval excludes zero and the *adjusted* p is below 0.05. The "first" and "second" columns are
# the two accuracies (%; for the last row, the two gains in points).

# %%
if ORG in models:
    prereg = preregistration.load()
    control = (regimes.compare_gains(*run_store.chains_by_model(run_store.control_models(
        control_traces, models=("organism", "smollm2"))).values(), tau_lp, tau_h) if control_traces else None)
    family = preregistration.secondary_results(prereg, preregistration.secondary_pairs(prereg, models[ORG], control))
    shown = preregistration.secondary_table(family)
    shown[["p", "Holm p"]] = shown[["p", "Holm p"]].map(lambda x: f"{x:.3g}")  # 2e-10 stays readable
    display(shown)
    display(Markdown(preregistration.describe_secondary(family)))

# %% [markdown]
# The MoA, MAD and DOWN rows of this family are computed as preregistered; chapter 04 (section
# 4.3) shows why they are not comparable on this organism (its follow-ups write LASE's revision
# text), so read them as a record of what the preregistration asked, not as claims about those
# strategies. Back to [chapter 04](04_comparison.ipynb).
