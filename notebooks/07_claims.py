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
# # 7. The paper's claims, tested
#
# The earlier chapters each test a piece of the paper. This one puts the pieces in **one table**:
# each claim the paper makes, the paper's number, ours on each recorded model with its interval,
# and a verdict. Then a box of what a careful reader should notice in the paper itself.
#
# **How a verdict is decided** (fixed in `lase_nb/chapters/claims.py` before any table is read):
#
# - **reproduced**: the test a reviewer would run clears in the paper's direction. For "A is more
#   accurate than B" that is *both* the exact McNemar test (p < 0.05) and the paired bootstrap 95%
#   interval of the difference above zero, on the problems both strategies ran. "Matches or beats"
#   is a non-inferiority claim: the interval's lower end above -3 points. "Matters little" asks
#   the interval to lie within 5 points either way.
# - **refuted**: both tests clear the other way (or, for a cost, the measured ratio says the
#   opposite).
# - **not shown**: neither: on these problems the data cannot tell the difference from chance.
#   This is not a refutation; read the interval for how large a difference is still possible.
# - **not testable here**: on this model the baseline is not answering in its own format. The
#   organisms were trained for LASE's roles only, so their MoA, MAD and DOWN follow-ups write LASE's
#   revision text (chapter 04, section 4.4, counts them); a difference would measure that training,
#   not the strategy. This is not a verdict.
# - **not testable offline**: the claim is about the paper's own models and data sets.
#
# Each row is one test; across the table we make many, so expect about one in twenty
# "reproduced" or "refuted" verdicts on a true null by chance (chapter 04 adjusts the organism's
# preregistered family of tests with Holm's method). Our models are small and our data set is
# arithmetic: a verdict says what happens *here*, which is the point of a reproduction, not
# whether the paper is right about GPT-4.1-mini on MATH-500.
#
# **You need** chapters 02-05 (the tests are the ones they use). No model is called.

# %% tags=["parameters"]
traces = "../data/traces/arith-smollm2"  # the embedded model's recorded runs
point_traces = "../data/traces/arith-organism-point"  # the pointing organism (v5)'s recorded runs; None: skip
tell_traces = "../data/traces/arith-organism-tell"  # the telling organism (v4), a labelled contrast; None: skip
tau_lp = 0.8  # gate threshold on exp(LP_min) (LASE is replayed at it)
tau_h = 0.5  # gate threshold on H_max (nats)
interactive = True  # False under papermill: no widgets are created

# %%
import pandas as pd
from IPython.display import Markdown, display

from lase_nb import plots
from lase_nb import runs as run_store
from lase_nb import strategies
from lase_nb.chapters import claims

plots.set_style()
pd.set_option("display.max_colwidth", 90)
models = run_store.load_models(run_store.by_display_name([traces, point_traces, tell_traces]), strategies.compared(),
                               require=["lase"])
for label, rs in models.items():
    print(f"{label}: {run_store.model_label(rs['lase'])}, runs {', '.join(rs)}")

# %% [markdown]
# ## 7.1 One table
#
# **Predict, then run.** The embedded model is a 135M model that answers about half of its
# arithmetic right; the pointing organism (v5) and the telling organism (v4) are the same model trained here
# (chapter 03 introduces them).
# Before you run the next cell: which of the paper's claims do you expect to be *reproduced* on
# each? Which *refuted*? Write down a guess for the calibration claim and for "LASE is more
# accurate than the single agent".

# %%
tables = {m: run_store.strategy_tables(rs, tau_lp, tau_h) for m, rs in models.items()}
off = {m: run_store.off_format(run_store.baseline_formats(rs)) for m, rs in models.items()}  # chapter 04, section 4.4
table = claims.claims_by_model(tables, {m: rs["lase"] for m, rs in models.items()}, off)
display(table)
counts = claims.verdict_counts(table)
counts

# %%
display(Markdown(claims.describe_verdicts(table)))
fig = claims.plot_claims(table)
plots.savefig(fig, "claims_forest");

# %% [markdown]
# **The test that was fixed first.** "LASE is more accurate than the single agent" is the claim the
# project preregistered for the organism (`data/traces/preregistration.json`: thresholds, tests and
# the predicted bound fixed on calibration problems before any held-out recording), on a separate,
# larger recording, `lase-large`: gated LASE on 600 further held-out problems, its stage 0 being the
# leader alone.

# %%
from lase_nb import preregistration

large = run_store.load_runs(point_traces, ["lase-large"]).get("lase-large") if point_traces else None
if large is not None:
    prereg = preregistration.load()
    display(Markdown(claims.describe_primary(preregistration.primary_from_gated_run(prereg, large), prereg)))
else:
    print("no lase-large recording here: the preregistered primary test is not run")

# %% [markdown]
# **Reading it.** Expect most rows to be *not shown*: with one or two hundred paired problems, a
# difference of a few points is within chance, and the paper's own margins (Table 1: LASE 74.2%
# against the single agent's 73.0% on MATH-500; exercise 07.1) are of that size. What comes out
# clearly is what has a large effect, in either direction. A cost claim has no sampling test here:
# the token ratio is measured on the same problems, and a small model that escalates often pastes
# long contexts into every supporter's prompt.
#
# The reason for each verdict, per model:

# %%
table.attrs["why"][["claim", "model", "verdict", "why"]]

# %% [markdown]
# ## 7.2 What the paper itself contradicts
#
# A reproduction reads the paper as closely as its code. These are the places where the paper's
# numbers or definitions disagree with each other, each computed from the paper's tables as
# `lase_nb/reference.py` holds them:

# %%
box = claims.paper_inconsistencies()
box

# %% [markdown]
# > **For the seminar.** (1) Table 5's escalation rates (the table itself is in
# > [chapter 05, section 5.4](05_pareto.ipynb)) cannot come from one deterministic gate
# > applied to one set of first answers: raising $\tau_{lp}$ can only add escalations. Perhaps each
# > row is a separate run with sampled first answers; the paper does not say. (2) The default
# > thresholds are nowhere stated; the chapters use 0.8 / 0.5 because that row matches Table 1.
# > (3) Eq. 7 compares a log-probability with a number in [0.5, 0.95]; read literally, every answer
# > escalates. (4) $\delta$ is defined against the leader's accuracy on all problems in the main
# > text and on the escalated problems in Appendix A.2; [appendix A1](A1_bound.ipynb) shows that
# > the two can differ in sign. Not a contradiction but a rounding: Llama-3-8B's "4.6x" in the text
# > against 4.7x from its table's rounded totals.

# %% [markdown]
# ## Exercises
#
# Solutions are kept apart, in `notebooks/solutions/07_solutions.py` (run it as a script or open it
# as a notebook); the test suite runs them, so they stay right.
#
# **Exercise 07.1.** The paper's Table 1 gives LASE 74.2% and the single agent 73.0% on the 500
# MATH-500 problems. Without the paired answers we cannot run McNemar's test, but we can bound it:
# what is the smallest number of discordant problems for which a 6-problem difference (371 vs 365
# right) is significant at 0.05, and the largest? What does that say about the claim?
#
# **Exercise 07.2.** Change the verdict rule: call a claim "reproduced" when the bootstrap interval
# alone clears zero (the rule a hurried reader uses). Which verdicts in the table change?

# %% [markdown]
# ## Summary
#
# - One table holds the paper's claims, its numbers, ours on each model with intervals, and a
#   verdict from a test fixed before the data: most claims are *not shown* here, a few large
#   effects are clear either way, and claims about the paper's models are not testable offline.
# - "Not shown" is an honest answer with an interval, not a failure to reproduce.
# - The paper has inconsistencies of its own (Table 5's escalation rates, Eq. 7's units, the
#   unstated defaults, two definitions of $\delta$) that a reader should notice before relying on
#   its numbers.
