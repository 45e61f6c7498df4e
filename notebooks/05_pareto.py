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
# **What you will learn**
#
# 1. Why **one full-chain recording is enough to evaluate every threshold pair**: early stopping
#    only truncates the chain, so replay is exact, and we check that it reproduces the live run.
# 2. How to read the accuracy-vs-tokens frontier: the threshold grid, its Pareto front, the
#    leader alone, always-interact, majority vote and MAD, and **the oracle gate, the upper bound
#    no confidence gate can beat**.
# 3. Where in the $(\tau_{lp}, \tau_h)$ plane LASE escalates, and how that maps to tokens.
# 4. Whether our model reproduces the paper's reading of its threshold sweep ("the thresholds
#    are a budget knob, not an accuracy knob"), with the paper's Table 5 printed beside ours.
# 5. How to **choose thresholds for a token budget honestly**: on one half of the problems,
#    checked on the other half.
# 6. How the frontier looks on two models trained from the same weights, one whose supporters
#    cannot correct it and one whose supporters can (the sliders switch between them).
#
# **You need** chapter 3 (the LASE pipeline) for what a stage is. By default the chapter reads
# the traces recorded with the embedded model (SmolLM2-135M-Instruct) on the arithmetic set; point
# `traces` at your own recording (`lase-nb run --strategy lase --full-chain --out <folder>/lase-full`,
# plus `--strategy mv` and `--strategy mad` runs beside it) to redo everything for your model.
#
# The chapter's logic lives in `lase_nb/chapters/pareto.py` (frontier, sweeps, held-out choice) and
# `lase_nb/chapters/sliders.py` (the sliders); replay is `lase_nb/replay.py`, and the strategies' colours
# come from `lase_nb/plots.py`.
#
# **What the paper reported.** Its threshold sweep (Table 5, GPT-4.1-mini on MATH-500): moving
# $\tau_{lp}$ from 0.5 to 0.95 raised the escalation rate from about a fifth to about two fifths
# of the problems and the tokens from 1.8k to 3.1k per problem, while accuracy stayed within about
# a point (74.1% to 75.1%). Its Table 1 puts LASE at 1.3x the single agent's tokens on average,
# against 7.1x for MV(7) and 15.7x for MAD. Sections 5.2 and 5.4 print these beside ours.

# %% tags=["parameters"]
traces = "../data/traces/arith-smollm2"  # folder with lase-full/ (a --full-chain LASE run), mv/, mad/
point_traces = "../data/traces/arith-organism-point"  # the pointing organism (v5)'s recorded full chains, shown beside it in 5.6; None: skip
tau_lp = 0.8  # the default thresholds, marked on every figure (inferred from the paper; chapter 02)
tau_h = 0.5
grid_size = 41  # the threshold grid is grid_size x grid_size
budget = None  # avg tokens per problem for section 5.5; None: the median over the threshold grid
seed = 0  # the split into halves in section 5.5
interactive = True  # False under papermill: no widgets are created

# %%
import time

import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from lase_nb import plots, reference
from lase_nb.chapters import pareto, sliders
from lase_nb.replay import chains_from_stages, grid_metrics, operating_point, replay, sweep
from lase_nb.runs import by_display_name, chains_by_model, common_ids, load_models, load_runs

plots.set_style()
pd.set_option("display.precision", 3)
baseline_names = pareto.paper_baselines()  # the paper's Table 1 baselines (MV, MAD), drawn as points

run = load_runs(traces, ["lase"], require=["lase"])["lase"]  # the lase-full folder
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
# First a check that this is not just a story: the recording also logged what the live gate did at
# the thresholds it ran with. Replay at those thresholds must agree on every problem.

# %%
rec = m.get("config", {})
agree = pareto.recorded_gate_check(chains, run.problems, rec.get("tau_lp", tau_lp), rec.get("tau_h", tau_h))
print(f"replay at the recorded thresholds (tau_lp = {rec.get('tau_lp', tau_lp)}, tau_h = {rec.get('tau_h', tau_h)}) "
      f"against the live run, {int(agree['n'])} problems: same stop stage on {agree['stop_stage']:.0%}, "
      f"same grade on {agree['correct']:.0%}, same tokens on {agree['total_tokens']:.0%}")

# %% [markdown]
# **The gate and the replay, written out.** Over the recorded arrays (problems x stages) a stage
# is *certain* when it has an answer with $\exp(LP_{min}) \ge \tau_{lp}$ and $H_{max} \le \tau_h$
# (a missing answer, NaN, never is). LASE stops at the first certain stage, or at the last when no
# supporter is left, and outputs and spends what the recording shows at that stage. From scratch,
# then checked against the package's `replay.replay`:

# %%
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

# %% [markdown]
# ## 5.2 The frontier
#
# Each dot below is one threshold pair: what LASE would have scored (y) and spent (x, prompt +
# completion tokens per problem, log scale) on these problems. The black line is the
# **Pareto front**, the pairs no other pair beats on both axes (it can be a single point). The
# **red dashed line is the oracle gate**: it knows which answers are right, sends a wrongly answered
# problem exactly as far as its first right stage, and fixes the cheapest ones first. It is the best
# any stopping rule on these chains could do at each cost, so no dot can lie above it. The text
# under the figure splits the distance from LASE to the oracle into what simply not escalating
# recovers and what a perfect confidence signal would add beyond that.
#
# The right panel repeats the grid on the problems that the majority-vote (MV) and MAD runs also
# answered, so that every point there is measured on the same problems. Error bars are 95% Wilson
# intervals.
#
# **Predict, then run.** As the thresholds let LASE spend more tokens, does accuracy keep rising?
# Will the default pair (0.8, 0.5) sit on the frontier or inside it? The figure below answers.

# %%
baseline_runs = load_runs(traces, baseline_names)
shared = common_ids(baseline_runs, chains.problem_ids)
in_common = np.isin(chains.problem_ids.astype(str), shared)
baselines = pareto.baseline_points(baseline_runs, shared)
policies = pareto.policy_points(chains)
oracle = pareto.oracle_frontier(chains)
common = None
if len(baselines):
    cc = chains.subset(in_common)
    common = {"grid": sweep(cc, tl, th), "policies": pareto.policy_points(cc),
              "default": operating_point(cc, tau_lp, tau_h),
              "oracle": pareto.oracle_frontier(cc), "baselines": baselines}
fig = pareto.plot_frontier(grid, policies, oracle, default, common)
plots.savefig(fig, "pareto_frontier");

# %% [markdown]
# The numbers behind the points. `x leader` is the token multiplier against the leader alone on
# the same problems.

# %%
rows = [policies.assign(problems="all")]
if common is not None:
    rows += [common["policies"].assign(problems="common"),
             baselines.rename(columns={"strategy": "policy"}).assign(problems="common", escalation_rate=np.nan)]
points = pd.concat(rows, ignore_index=True)
solo_by = points[points["policy"] == "solo"].set_index("problems")["avg_tokens"]
points["x leader"] = points["avg_tokens"] / points["problems"].map(solo_by)
points[["problems", "policy", "n", "accuracy", "acc_lo", "acc_hi", "accuracy_strict", "avg_tokens", "x leader",
        "escalation_rate"]]

# %%
effects = pareto.stage_effects(chains)
display(Markdown(pareto.describe_frontier(grid, policies, oracle, default, effects, baselines,
                                          common["grid"] if common is not None else None)))

# %% [markdown]
# **What the paper reported.** The paper draws no frontier; it reports a threshold sweep (section
# 5.4 below) and one operating point per method. Below, from `lase_nb.reference`: its average
# token multipliers against the single agent over all data sets, and its Table-1 points for the
# model and data set of its threshold sweep (accuracy in %, tokens per problem).

# %%
sweep_setting = (reference.THRESHOLD_SWEEP.attrs["model"], reference.THRESHOLD_SWEEP.attrs["dataset"])
paper_points = reference.TABLE1.set_index(["model", "dataset"]).loc[sweep_setting].reset_index()
display(reference.TOKEN_MULTIPLIERS)
paper_points

# %% [markdown]
# **Caveats.** The tokens count prompt and completion (the paper does not say which it counts).
# One problem moves accuracy by one over the number of problems, and the baselines ran on fewer
# problems than the full chain: read the error bars before reading the ranking. The oracle is not
# a method, it is a bound: it needs the gold answer.

# %% [markdown]
# ## 5.3 Where LASE escalates
#
# The escalation rate is the share of problems the gate sends past the leader. The left map shows
# it over the whole $(\tau_{lp}, \tau_h)$ plane, with white contours of average tokens per problem;
# the right map shows accuracy. The star is the default pair and the cyan rings are the pairs
# of the paper's sweep.

# %%
fig = pareto.plot_escalation(tl, th, metrics, (tau_lp, tau_h), reference.THRESHOLD_SWEEP)
plots.savefig(fig, "pareto_escalation");

# %% [markdown]
# **What it shows.** Both thresholds cut the same cloud of first-answer confidences, most of it
# just below certainty, so the escalation rate climbs steeply once $\tau_{lp}$ passes into that
# cloud (or $\tau_h$ falls into it), and the token contours follow the escalation rate, because
# escalation is what costs. Accuracy falls where escalation rises: on this recording the
# supporters break more right answers than they fix.
#
# **Caveat.** Where the map is flat the gate is not choosing anything: the thresholds lie outside
# the range of the recorded confidences. A better-calibrated or larger model spreads its
# confidences and gives the thresholds more to do (chapter 2 measures this).

# %% [markdown]
# ## 5.4 The paper's threshold sweep beside ours
#
# The paper swept $\tau_{lp}$ at a fixed $\tau_h$ (Table 5; its model and data set are printed
# below) and read it as **"the thresholds are a budget knob, not an accuracy knob"**: from the
# first to the last row tokens and escalation rose while accuracy barely moved (the exact numbers
# are given at the top of the chapter and in the reading below). We replay the same five pairs on
# our recording; the paper's columns come from `lase_nb.reference` (accuracy and escalation as
# fractions here).

# %%
t5 = pareto.paper_sweep_beside(chains)
print(f"paper: {t5.attrs['model']}, {t5.attrs['dataset']}; this run: {m.get('model')}, {m.get('dataset')}, {n} problems")
t5

# %%
fig = pareto.plot_sweep_vs_paper(t5, n=n)
plots.savefig(fig, "pareto_sweep_vs_paper");

# %%
display(Markdown(pareto.describe_sweep(t5, grid, n)))

# %% [markdown]
# The paper also varied $\tau_h$ with $\tau_{lp}$ fixed (its $\tau_{lp}$ is not restated in our
# notes; ours is the `tau_lp` parameter):

# %%
tau_h_beside = pareto.tau_h_beside(chains, tau_lp)
tau_h_beside

# %% [markdown]
# **Why the readings can differ.** The paper's reading needs two things. First, confidence that
# separates right from wrong answers, so that a stricter gate sends mostly wrong answers onwards.
# Second, supporters that fix at least as many answers as they break. Where either fails, more
# escalation spends more tokens and also moves accuracy. The recording measures both:

# %%
effects

# %% [markdown]
# **What it shows.** Read `fixed_vs_leader` against `broken_vs_leader`: where the supporters'
# stages break more right first answers than they fix wrong ones, every step towards more
# escalation costs accuracy as well as tokens, and the paper's reading cannot hold. (The first
# condition is chapter 02's AUROC. Why the supporters do not fix more, on this model and on the
# organism whose notes point at the right step: [chapter 06, section 6.5](06_failure_modes.ipynb).)
#
# **Caveat.** Five threshold pairs on one small data set. The grey band in the left panel is one
# problem either way: differences inside it are noise, and a flat line and a gentle slope are hard
# to tell apart. The paper's sweep covered all of MATH-500, with a far stronger model.

# %% [markdown]
# ## 5.5 Choosing thresholds for a budget, honestly
#
# A practitioner has a budget (tokens per problem) and wants the most accurate thresholds within
# it. Picking them on the same problems one reports on flatters the choice. So we split the
# problems into two random halves (`replay.split_halves`), pick the best pair within the budget on
# half A (`replay.choose_thresholds`), and replay that pair on half B.

# %%
budget_tokens = float(np.median(grid["avg_tokens"])) if budget is None else float(budget)
check = pareto.select_and_check(chains, tl, th, budget_tokens, seed=seed)
many = pareto.split_checks(chains, tl, th, budget_tokens, seeds=range(seed, seed + 200))
pd.DataFrame({
    "half A (chosen here)": [check.n_a, check.acc_a, check.tokens_a, np.nan],
    "half B (held out)": [check.n_b, check.acc_b, check.tokens_b, check.esc_b],
    "half B, best pair in hindsight": [check.n_b, check.best_b_acc, np.nan, np.nan],
    "half B, leader alone": [check.n_b, check.solo_b, np.nan, np.nan],
    "half B, always interact": [check.n_b, check.full_b, np.nan, np.nan],
}, index=["problems", "accuracy", "avg tokens", "escalation rate"]).T

# %%
fig = pareto.plot_split(chains, tl, th, check, many)
plots.savefig(fig, "pareto_split");

# %%
display(Markdown(pareto.describe_split(check, many, budget is None)))

# %% [markdown]
# **Caveat.** The spread between splits is the honest error bar of a threshold choice made on
# this many problems: when it is several points, the selection mostly chases noise. Report the
# held-out number, and with a new model record enough problems for the halves to agree. The
# budget holds on average per problem, not for every problem.

# %% [markdown]
# ## 5.6 Two models, one code path
#
# The same replay on two recordings of models trained from the same weights: the embedded
# SmolLM2-135M, and the model organism (the same model with a LoRA adapter trained in this
# repository to solve, point at a failing step without stating the answer, and revise; chapter
# 03's opening), on problems it never trained on. Each panel is one model's
# threshold grid with its front, its oracle staircase, the leader alone, always-interact and LASE
# at the chapter's thresholds (the star). **Where the supporters can correct the leader, the front
# rises above the leader alone; where they cannot, it stays flat or falls.** The table's regime
# column is chapter 03's (section 3.4); why neither model gains is chapter 06's last section.

# %%
models = load_models(by_display_name([traces, point_traces]), ["lase"], require=["lase"])
by_model = chains_by_model(models)
fronts = pareto.frontiers_by_model(by_model, tau_lp, tau_h, grid_size)
fig = pareto.plot_frontier_by_model(fronts)
plots.savefig(fig, "pareto_two_models");

# %%
pareto.frontier_table(fronts)  # each model's regime: chapter 03, section 3.4

# %% [markdown]
# **The gain itself, with its uncertainty.** A front that rises a point or two above the leader is
# hard to read on an accuracy axis from 0 to 100%. The figure below draws each model's gain over its
# own leader on the same problems, gated LASE and always-interact, with the paired bootstrap 95%
# interval (the problems resampled jointly) and the exact McNemar p: on the full scale, then zoomed
# to a few points, where you can see whether an interval crosses zero.

# %%
gains = pareto.gain_rows(by_model, tau_lp, tau_h, seed=seed)
fig = pareto.plot_gains(gains)
plots.savefig(fig, "pareto_gains");

# %% [markdown]
# ## 5.7 Try it yourself
#
# In a live Jupyter session the sliders below move the star on the frontier (the buttons above
# them switch between the two models' recordings, keeping the thresholds): every movement
# replays the recording at the new thresholds (no model call) and updates the figure, the table
# row and the sentence under it, which starts with "Operating point unchanged" when the move
# crossed no recorded confidence (every problem stops where it did). Under papermill
# (`interactive = False`) no widget is made; the same function, `operating_point`, gave
# the default point above.

# %%
if interactive:
    # the first model's chains are this chapter's (a live run when live=True), whose grid is drawn above
    controls = sliders.threshold_sliders({**by_model, next(iter(by_model)): chains}, tau_lp, tau_h, grid=grid)
    display(controls.box)

# %% [markdown]
# Widgets do not run in the HTML book or a static copy of this notebook, so here is the same panel
# at six threshold pairs, from strict to lax: each panel is what the sliders show at its pair.

# %%
fig = sliders.small_multiples(chains, sliders.STRICT_TO_LAX, grid=grid)
plots.savefig(fig, "pareto_sliders");

# %% [markdown]
# ## Exercises
#
# Solutions are kept apart, in `notebooks/solutions/05_solutions.py` (run it as a script or open it
# as a notebook); the test suite runs them, so they stay right.
#
# **Exercise 05.1.** On each model of section 5.6, what is the cheapest threshold pair on the grid
# that is at least as accurate as the leader alone plus one point, and what does it cost relative to
# the leader alone? On one model there is none: what does that say about its supporters?
#
# **Exercise 05.2.** Choosing thresholds on the same problems you report flatters them. Split the
# problems in two halves 20 times; each time choose the most accurate pair within 1.5x the leader's
# tokens on half A and score it on half B. What is the median optimism (accuracy on A minus
# accuracy on B)? It is negative on some splits: why? Compare the *gains* over the leader alone on
# each half instead, which removes how hard each half happens to be.

# %% [markdown]
# ## Summary
#
# - A full-chain recording answers "what would LASE have done at these thresholds?" exactly, for
#   thousands of threshold pairs in well under a second.
# - The frontier puts the thresholds in their place: between the leader alone and always
#   interacting, below the oracle gate, beside majority vote and MAD at their own costs. Why it
#   stays flat here: [chapter 06, section 6.5](06_failure_modes.ipynb).
# - Whether the thresholds are "a budget knob, not an accuracy knob" depends on the model: it needs
#   informative confidence and supporters that help. This chapter prints which reading the
#   recording supports instead of assuming the paper's.
# - Choose thresholds on some problems and report on others.
