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
# # 5. Thresholds as a dial: the accuracy-vs-tokens frontier
#
# LASE has two knobs: $\tau_{lp}$ (the leader is unsure if its lowest answer-token probability
# $\exp(LP_{min})$ falls below it) and $\tau_h$ (unsure if its highest answer-token entropy
# $H_{max}$ rises above it). This chapter turns both knobs across their whole range **without a
# single model call**, by replaying one recording of full chains, and asks what they buy.
#
# **What you will learn**: why **one full-chain recording evaluates every threshold pair** exactly
# (5.1); how to read the accuracy-vs-tokens frontier and **the oracle gate**, the bound no
# confidence gate can beat (5.2); where LASE escalates (5.3); whether our model reproduces the
# paper's reading of its sweep (5.4); how to **choose thresholds for a budget honestly** (5.5); and
# studies' fronts side by side, read from paired intervals (5.6).
#
# **You need** chapter 3 (the LASE pipeline) for what a stage is. The chapter reads a study's
# full-chain recording (`traces`: your study, or the committed recordings; `lase-nb run --strategy
# lase --full-chain` writes one, with `mv` and `mad` runs beside it for the baselines). Its logic is
# `lase_nb/chapters/pareto.py` and `lase_nb/chapters/sliders.py`; replay is `lase_nb/replay.py`.
#
# **What the paper reported.** Its threshold sweep (Table 5, GPT-4.1-mini on MATH-500): moving
# $\tau_{lp}$ from 0.5 to 0.95 raised the escalation rate from about a fifth to about two fifths
# of the problems and the tokens from 1.8k to 3.1k per problem, while accuracy stayed within about
# a point (74.1% to 75.1%). Section 5.4 prints it beside ours.

# %% tags=["parameters"]
traces = "committed"  # your study (a folder holding lase-full/, and mv/, mad/ for the baselines); "committed": data/traces/arith-smollm2
studies = "auto"  # studies beside it in 5.6 (folders or [label, folder] pairs); auto: the committed ones only when traces is committed; None: none
tau_lp = 0.8  # the default thresholds, marked on every figure (inferred from the paper; chapter 02)
tau_h = 0.5
grid_size = 41  # the threshold grid is grid_size x grid_size
budget = None  # avg tokens per problem for section 5.5; None: the median over the threshold grid
seed = 0  # the split into halves in section 5.5
interactive = None  # None: sliders only in a live Jupyter session (never under papermill); True or False forces it

# %%
import time

import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from lase_nb import plots, reference
from lase_nb.book import widgets
from lase_nb import runs as run_store
from lase_nb.chapters import pareto, sliders
from lase_nb.replay import (chains_from_stages, fixed_policies, grid_metrics, operating_point, oracle_frontier, replay,
                            sweep)
from lase_nb.runs import chains_by_model, common_ids, load_runs

plots.set_style()
pd.set_option("display.precision", 3)
interactive = widgets.live_session(interactive)
# the reader's study first; one line each. Beside the committed embedded model: organism v6 (5.6)
shown = run_store.chapter_studies(traces, studies, committed=run_store.HEADLINE_STUDIES)
baseline_names = pareto.paper_baselines()  # the paper's Table 1 baselines (MV, MAD), drawn as points

run = load_runs(shown[0].path, ["lase"], require=["lase"])["lase"]  # the lase-full folder
chains = chains_from_stages(run.stages)
n = len(chains.problem_ids)
m = run.manifest
print(f"{n} problems x {chains.n_stages} stages, model {m.get('model')} ({m.get('backend')}), "
      f"data set {m.get('dataset')}, recorded {m.get('date')}")

# %% [markdown]
# ## 5.1 One recording, every threshold
#
# The recording forced every stage on every problem (leader, then devil's advocate, collaborator
# and senior expert, the leader revising after each), and kept the leader's answer, its
# $\exp(LP_{min})$, $H_{max}$ and the cumulative tokens after each stage. **LASE at any thresholds
# stops at the first stage whose answer is certain (or at the last stage), so its output and cost
# are read off the recording**, with the one uncertainty rule of `lase_nb.confidence`.
#
# A check: the recording also logged what the live gate did at its own thresholds; replay there
# must agree on every problem.

# %%
rec = m.get("config", {})
agree = pareto.recorded_gate_check(chains, run.problems, rec.get("tau_lp", tau_lp), rec.get("tau_h", tau_h))
print(f"replay at the recorded thresholds (tau_lp = {rec.get('tau_lp', tau_lp)}, tau_h = {rec.get('tau_h', tau_h)}) "
      f"against the live run, {int(agree['n'])} problems: same stop stage on {agree['stop_stage']:.0%}, "
      f"same grade on {agree['correct']:.0%}, same tokens on {agree['total_tokens']:.0%}")

# %% [markdown] tags=["book-more"]
# **The gate and the replay, written out.** Over the recorded arrays (problems x stages) a stage
# is *certain* when it has an answer with $\exp(LP_{min}) \ge \tau_{lp}$ and $H_{max} \le \tau_h$
# (a missing answer, NaN, never is). LASE stops at the first certain stage, or at the last when no
# supporter is left, and outputs and spends what the recording shows at that stage. From scratch,
# then checked against the package's `replay.replay`:

# %% tags=["book-more"]
def replay_from_scratch(chains, tau_lp, tau_h):
    """Stop stage, grade and tokens (prompt + completion) per problem, at (tau_lp, tau_h)."""
    with np.errstate(invalid="ignore"):  # NaN (no answer) compares False: never certain
        certain = (chains.p_min >= tau_lp) & (chains.h_max <= tau_h)
    certain[:, -1] = True  # no supporter left: the last stage always stops
    stop = certain.argmax(axis=1)  # the first certain stage
    rows = np.arange(len(stop))
    return stop, chains.correct[rows, stop], chains.total_tokens[rows, stop]


stop, correct, tokens = replay_from_scratch(chains, tau_lp, tau_h)
package = replay(chains, tau_lp, tau_h)
assert np.array_equal(stop, package["stop_stage"]) and np.array_equal(correct, package["correct"])
assert np.array_equal(tokens, package["total_tokens"])
print(f"from scratch at tau_lp={tau_lp}, tau_h={tau_h}: accuracy {correct.mean():.1%}, {tokens.mean():,.0f} tokens "
      f"per problem, {(stop > 0).mean():.0%} escalated; the package's replay agrees on all {n} problems")

# %% [markdown]
# Now the whole grid: `grid_size` values of $\tau_{lp}$ in $[0, 1]$ times `grid_size` values of
# $\tau_h$ from 0 nats to just above the largest recorded $H_{max}$ (beyond it the entropy gate
# never fires). Every pair costs one replay; the grid is evaluated as one vectorised computation.

# %%
tl, th = pareto.threshold_axes(chains, grid_size)
t0 = time.perf_counter()
metrics = grid_metrics(chains, tl, th)
grid = sweep(chains, tl, th)
print(f"{len(grid):,} threshold pairs x {n} problems replayed in {time.perf_counter() - t0:.3f} s, no model call")
default = operating_point(chains, tau_lp, tau_h)
solo_tokens = float(chains.total_tokens[:, 0].mean())
print(sliders.point_sentence(default, solo_tokens))

# %% [markdown] tags=["seminar"]
# ## 5.2 The frontier
#
# **Replay.** LASE's early stop only truncates the chain: what the leader says at stage t does not
# depend on the thresholds. So one recording of every problem's full chain (every stage forced)
# tells, for any pair of thresholds, what LASE would have answered and spent, with no further model
# call. The *grid* is `grid_size` values of `tau_lp` from 0 to 1 times `grid_size` values of `tau_h`
# from 0 nats to just above the largest recorded `H_max` (41 x 41 = 1,681 pairs by default).
# Each dot below is one threshold pair replayed: what LASE would have scored (y) and spent (x,
# prompt + completion tokens per problem, log scale) on these problems. In black, the **Pareto front**: the
# pairs no other pair beats on both axes (a line, or a single point when no pair beats the cheapest).
# In red (dashes, or a ring on a single point), **the oracle gate**: it knows which answers are right, sends a wrongly answered
# problem exactly as far as its first right stage, and fixes the cheapest ones first; no stopping
# rule on these chains can do better at any cost. The text under the figure says which shapes this
# recording gives and splits the distance from LASE to the oracle.
#
# A right panel repeats the grid on the problems that the majority vote of seven samples (MV(7))
# and multi-agent debate (MAD: three agents, two rounds) also answered, when the study has them.
# Error bars are 95% intervals for a share (Wilson's).
#
# **Predict, then run.** As the thresholds let LASE spend more tokens, does accuracy keep rising?
# Will the default pair (0.8, 0.5) sit on the frontier or inside it? The figure below answers.

# %% tags=["seminar"]
baseline_runs = load_runs(shown[0].path, baseline_names)
for s in baseline_names:
    if s not in baseline_runs:
        print(f"no finished {s} run in {shown[0].path.name}: {s} is not drawn")
if not baseline_runs:
    print("no baseline run: the right panel (baselines on their common problems) is dropped")
shared = common_ids(baseline_runs, chains.problem_ids)
in_common = np.isin(chains.problem_ids.astype(str), shared)
baselines = pareto.baseline_points(baseline_runs, shared)
policies = fixed_policies(chains)
oracle = oracle_frontier(chains)
common = None
if len(baselines):
    cc = chains.subset(in_common)
    common = {"grid": sweep(cc, tl, th), "policies": fixed_policies(cc),
              "default": operating_point(cc, tau_lp, tau_h),
              "oracle": oracle_frontier(cc), "baselines": baselines}
fig = pareto.plot_frontier(grid, policies, oracle, default, common)
plots.savefig(fig, "pareto_frontier");

# %% [markdown] tags=["book-more"]
# The numbers behind the points (`x leader`: tokens against the leader alone on the same problems;
# tokens count prompt and completion). One problem moves accuracy by one over the number of problems.

# %% tags=["book-more"]
rows = [policies.assign(problems="all")]
if common is not None:
    rows += [common["policies"].assign(problems="common"),
             baselines.rename(columns={"strategy": "policy"}).assign(problems="common", escalation_rate=np.nan)]
points = pd.concat(rows, ignore_index=True)
solo_by = points[points["policy"] == "solo"].set_index("problems")["avg_tokens"]
points["x leader"] = points["avg_tokens"] / points["problems"].map(solo_by)
points.assign(point=points["policy"] + " (" + points["problems"] + ", n=" + points["n"].astype(str) + ")") \
    .set_index("point")[["accuracy", "acc_lo", "acc_hi", "avg_tokens", "x leader"]]

# %% tags=["seminar"]
effects = pareto.stage_effects(chains)
display(Markdown(pareto.describe_frontier(grid, policies, oracle, default, effects, baselines,
                                          common["grid"] if common is not None else None)))

# %% [markdown] tags=["book-more"]
# ## 5.3 Where LASE escalates
#
# The escalation rate is the share of problems the gate sends past the leader. The left map shows
# it over the whole $(\tau_{lp}, \tau_h)$ plane, with white contours of average tokens per problem;
# the right map shows accuracy. The star is the default pair and the cyan rings are the pairs
# of the paper's sweep.

# %% tags=["book-more"]
fig = pareto.plot_escalation(tl, th, metrics, (tau_lp, tau_h), reference.THRESHOLD_SWEEP)
plots.savefig(fig, "pareto_escalation");

# %% [markdown] tags=["seminar"]
# ## 5.4 The paper's threshold sweep beside ours
#
# The paper swept $\tau_{lp}$ at a fixed $\tau_h$ (Table 5) and read it as **"the thresholds are
# a budget knob, not an accuracy knob"**. We replay the same five pairs on our recording. **Does accuracy stay put while tokens rise?** The
# verdict is decided on the paired test of the accuracy change from the first pair to the last: the
# reading is reproduced only when the interval lies within 5 points either way.

# %% tags=["book-more"]
t5 = pareto.paper_sweep_beside(chains)
print(f"paper: {t5.attrs['model']}, {t5.attrs['dataset']}; this run: {m.get('model')}, {m.get('dataset')}, {n} problems")
t5.set_index("tau_lp")[["accuracy (this run)", "avg_tokens (this run)", "escalation_rate (this run)", "accuracy (paper)",
                        "avg_tokens (paper)"]]

# %% tags=["seminar"]
display(Markdown(pareto.describe_sweep(t5, grid, n, pareto.sweep_test(chains, seed=seed))))

# %% [markdown] tags=["book-more"]
# **Why the readings can differ.** The paper's reading needs two things. First, confidence that
# separates right from wrong answers, so that a stricter gate sends mostly wrong answers onwards.
# Second, supporters that fix at least as many answers as they break. Where either fails, more
# escalation spends more tokens and also moves accuracy. The recording measures both:

# %% tags=["book-more"]
effects.set_index("stage")[["accuracy", "no_answer", "fixed_vs_leader", "broken_vs_leader", "avg_tokens"]]

# %% [markdown] tags=["book-more"]
# **How to read it.** Read `fixed_vs_leader` against `broken_vs_leader`: where the supporters'
# stages break more right first answers than they fix wrong ones, every step towards more
# escalation costs accuracy as well as tokens, and the paper's reading cannot hold. The first
# condition is chapter 02's AUROC; why supporters fail to fix is chapter 06's subject.

# %% [markdown]
# ## 5.5 Choosing thresholds for a budget, honestly
#
# A practitioner has a budget (tokens per problem) and wants the most accurate thresholds within
# it. Picking them on the problems one reports on can flatter the choice, so we split the problems
# into two random halves, pick the best pair within the budget on half A
# (`replay.choose_thresholds`), and replay it on half B; 200 splits give the spread of that choice.

# %%
budget_tokens = float(np.median(grid["avg_tokens"])) if budget is None else float(budget)
check = pareto.select_and_check(chains, tl, th, budget_tokens, seed=seed)
many = pareto.split_checks(chains, tl, th, budget_tokens, seeds=range(seed, seed + 200))
display(Markdown(pareto.describe_split(check, many, budget is None)))
pd.DataFrame({
    "half A (chosen here)": [check.n_a, check.acc_a, check.tokens_a, np.nan],
    "half B (held out)": [check.n_b, check.acc_b, check.tokens_b, check.esc_b],
    "half B, best pair in hindsight": [check.n_b, check.best_b_acc, np.nan, np.nan],
    "half B, leader alone": [check.n_b, check.solo_b, np.nan, np.nan],
    "half B, always interact": [check.n_b, check.full_b, np.nan, np.nan],
}, index=["problems", "accuracy", "avg tokens", "escalation rate"]).T

# %% [markdown] tags=["book-more"]
# ## 5.6 Studies side by side
#
# The same replay on every study in `studies`: by default the embedded model and **organism v6**,
# v5 with a second adapter for the leader's revisions (chapter 06, 6.6). v6's panel replays its full chains on
# the 200 problems its prediction was written on, spent problems and so not evidence; its
# preregistered test on 600 fresh problems is chapter 06's (6.6) and chapter 07's. Each
# panel is one study's threshold grid with its front, its oracle staircase, the leader alone,
# always-interact and LASE at the chapter's thresholds (the star). **Where the supporters can
# correct the leader, the front rises above the leader alone; where they cannot, it stays flat or
# falls.** Chapter 03 (section 3.4) names each study's regime.

# %% tags=["book-more"]
models = run_store.load_studies(shown, ["lase"], require=["lase"])
by_model = chains_by_model(models)
fronts = pareto.frontiers_by_model(by_model, tau_lp, tau_h, grid_size)
if len(fronts) > 1:
    fig = pareto.plot_frontier_by_model(fronts)
    plots.savefig(fig, "pareto_two_models")
else:
    print("one study: its frontier is the figure of section 5.2 (pass studies to add more)")

# %% tags=["book-more"]
pareto.frontier_table(fronts).set_index("model")[["n", "leader_accuracy", "lase_accuracy", "always_accuracy",
                                                   "oracle_accuracy"]]

# %% [markdown] tags=["book-more"]
# **Does any front rise above its own leader alone?** A gain of a point or two is hard to read on
# an accuracy axis from 0 to 100%. The figure draws each study's gain over its own leader on the
# same problems, gated LASE and always-interact, with the paired bootstrap 95% interval and the
# exact McNemar p; the lines under it give the verdict.

# %% tags=["book-more"]
gains = pareto.gain_rows(by_model, tau_lp, tau_h, seed=seed)
fig = pareto.plot_gains(gains)
plots.savefig(fig, "pareto_gains")
display(Markdown(pareto.describe_gains(gains)))

# %% [markdown]
# ## 5.7 Try it yourself
#
# Move the sliders: the star is LASE at those thresholds on the grid of section 5.2, and the table
# prints its accuracy, tokens per problem, escalation rate and stops per stage (beside MV and MAD on
# their problems, when the study has them). Every slider position was replayed once when this cell
# ran (`operating_point`, which gave the default point above), so the panel works in the HTML book
# and in JupyterLab without a kernel.

# %%
sliders.frontier_panel(chains, tau_lp, tau_h, grid=grid, baselines=baselines,
                       common=chains.subset(in_common) if len(baselines) else None)

# %% [markdown] tags=["book-hide"]
# In a live Jupyter session a second panel below also switches between the studies of section 5.6.

# %% tags=["book-hide"]
if interactive:
    # the first model's chains are this chapter's, whose grid is drawn above
    controls = sliders.threshold_sliders({**by_model, next(iter(by_model)): chains}, tau_lp, tau_h, grid=grid)
    display(controls.box)

# %% [markdown] tags=["book-more"]
# ## Exercises
#
# Solutions: `notebooks/solutions/05_solutions.py` (run by the tests).
#
# **Exercise 05.1.** On each study of section 5.6, what is the cheapest threshold pair on the grid
# that is at least as accurate as the leader alone plus one point, and what does it cost relative to
# the leader alone? If a study has none, what does that say about its supporters?
#
# **Exercise 05.2.** Choosing thresholds on the same problems you report can flatter them. Split the
# problems in two halves 20 times; each time choose the most accurate pair within section 5.5's
# budget (the median over the grid) on half A and score it on half B. What is the median optimism
# (accuracy on A minus accuracy on B)? It is negative on some splits: why? Compare the *gains*
# over the leader alone on each half instead, which removes how hard each half happens to be. Use
# organism v6: on the embedded model the chosen pair hardly escalates, so its gain is 0.

# %% [markdown]
# ## Summary
#
# - A full-chain recording answers "what would LASE have done at these thresholds?" exactly, for
#   thousands of threshold pairs in well under a second.
# - The frontier puts the thresholds in their place: between the leader alone and always
#   interacting, below the oracle gate, beside majority vote and MAD at their own costs.
# - Whether the thresholds are "a budget knob, not an accuracy knob" depends on the model: it needs
#   informative confidence and supporters that help. The chapter prints which reading the
#   recording supports, or that it has too few problems to say, instead of assuming the paper's.
# - Choose thresholds on some problems and report on others.
