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
# # 2. Calibration: do token probabilities know when the leader is wrong?
#
# LASE calls its supporters only when the leader looks unsure, so everything rests on one
# assumption: **a low answer-token probability or a high answer-token entropy should mean a lower
# chance of being right** (the paper's Assumption 3.3). This chapter measures that assumption on
# recorded answers of our embedded model and sets the paper's numbers beside ours.
#
# **What you will learn**
#
# 1. How to read a reliability plot of `exp(LP_min)` and `H_max`: bars count the answers in each
#    bin, the line is the accuracy in that bin, with a 95% interval.
# 2. Two numbers the paper does not give: the **AUROC** of each proxy for flagging errors, with a
#    bootstrap interval, and the **expected calibration error (ECE)**.
# 3. What the gate $U$ does at chosen thresholds: how many answers it escalates, and how many
#    wrong answers it lets through (confident errors).
# 4. How far the entropy an API lets you compute (the top-k alternatives plus one bucket for the rest)
#    is from the exact full-vocabulary entropy a local model gives. This step runs the model live.
# 5. How the same proxies fare on a second model trained from the same weights, the model
#    organism: two reliability panels with their AUROCs side by side.
#
# **You need** chapter 00 (what `LP_min` and `H_max` are). By default the chapter reads the
# recorded full-chain LASE run of SmolLM2-135M on the arithmetic set (`data/traces`), so it needs
# no model except in the short live step of section 2.6. Set `live=True` to measure the leader on
# your own backend and data set instead, e.g.
# `papermill 02_calibration.ipynb out.ipynb -p live True -p backend openai -p model gpt-4.1-mini`.
#
# The chapter's logic lives in `lase_nb/chapters/calibration.py` (reliability, AUROC and ECE come from
# `lase_nb/stats.py`, whose one interval for an accuracy, Wilson's, every chapter uses).
#
# **The paper's evidence** (its Figure 3, the support for Assumption 3.3): on 2,000 MATH-500
# answers of two strong models, accuracy was 85.5% when the lowest answer-token probability was
# at least 0.99, 50.9% when it was below 0.50, and 30.4% when the answer entropy exceeded 1.0
# nats. Section 2.2 sets our answers beside these numbers, condition by condition, in a column
# labelled as the paper's.
#
# **Units and defaults.** The paper's Eq. 7 compares $LP_{min}$, a log-probability, with
# $\tau_{lp} \in [0.5, 0.95]$; those thresholds only make sense as probabilities, so every chapter
# gates on $\exp(LP_{min}) < \tau_{lp}$. Entropy is in nats (our choice; the paper does not say).
# The paper never states default thresholds: 0.8 / 0.5 is inferred (Table 5's $\tau_{lp} = 0.80$
# row, with $\tau_h = 0.50$, matches Table 1's 74.2%), and the chapters call it "the default".

# %% tags=["parameters"]
backend = "local"  # local | openai | gemini (used by the live steps)
model = None  # None: the default model of the backend
base_url = None  # an OpenAI-compatible server, e.g. "http://127.0.0.1:8000/v1"
concurrency = None  # API backends: calls in flight (default 8; 1 for a one-slot server)
timeout = None  # API backends: seconds one call may take (default 60)
examples = None  # worked examples per prompt (None: 2 for the embedded model, 0 for API models; 2 helps a small model box its answers)
traces = "../data/traces/arith-smollm2"  # recorded runs; the chapter reads <traces>/lase-full
point_traces = "../data/traces/arith-organism-point"  # the pointing organism (v5)'s recorded full chains, set beside it in 2.5; None: skip
control_traces = "../data/traces/control-level1"  # both models' full chains on the same level-1 problems (2.5); None: skip
live = False  # True: run the leader on n_problems now and calibrate those answers instead
dataset = "arith"  # data set for the live steps (see lase_nb.datasets.DATASETS)
data_path = None  # file of a paper data set (not needed for arith)
n_problems = 12  # problems of the live run (live True)
n_entropy_problems = 6  # problems of section 2.6's live measurement of the top-k entropy
top_k = 20  # alternatives per token an API returns (OpenAI allows up to 20)
tau_lp = 0.8  # gate threshold on exp(LP_min)
tau_h = 0.5  # gate threshold on H_max (nats)
seed = 0  # problem subset and bootstrap
interactive = True  # False under papermill: no widgets are created

# %%
import functools

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from lase_nb import confidence, plots, reference
from lase_nb.chapters import calibration, gate_panel
from lase_nb.datasets import load_dataset
from lase_nb.engine import Call, Engine
from lase_nb.prompts import solver_messages
from lase_nb.runner import run_problems
from lase_nb.runs import by_display_name, control_models, load_models, load_runs
from lase_nb.live import live_config, live_engine

plots.set_style()
pd.set_option("display.precision", 3)
cfg = live_config(backend, model, examples=examples, tau_lp=tau_lp, tau_h=tau_h, seed=seed, top_logprobs=top_k)


@functools.cache
def engine() -> Engine:
    """One engine for the live steps, built on first use; every call goes through the call cache."""
    return live_engine(backend, model, base_url, max_batch=16, concurrency=concurrency, timeout=timeout)


# %% [markdown]
# ## 2.1 The answers we calibrate
#
# One row per leader answer: the two proxies, measured on the tokens of the boxed answer only,
# and whether the answer was right. An answer the model never boxed has no confidence at all; the
# gate treats it as uncertain and grading counts it wrong, so it gets its own bar below.

# %%
if live:
    problems = load_dataset(dataset, data_path, n_problems, seed)
    results = run_problems("single", problems, engine(), cfg, progress=False)
    frame = confidence.confidence_frame(results, problems=problems)
    source = f"live: {engine().backend.name}:{engine().backend.model}, {dataset}, {len(frame)} problems"
else:
    run = load_runs(traces, ["lase"], require=["lase"])["lase"]  # the lase-full folder
    frame = confidence.confidence_frame(run, stage=0)
    m = run.manifest
    source = f"recorded: {m['backend']}:{str(m['model']).split(' (')[0]}, {m['dataset']}, {len(frame)} problems"
print(source)
frame.head()

# %%
print(f"{len(frame)} answers, {frame['correct'].mean():.0%} right, {int((~frame['answered']).sum())} never boxed")
frame[frame["answered"]].groupby("correct")[["p_min", "h_max"]].describe().T

# %% [markdown]
# **What the table says.** The embedded model boxes its first answers, and gets roughly half of
# them right. Its answer tokens are very probable almost everywhere: the typical `exp(LP_min)` is
# well above 0.9 for right and wrong answers alike, and the two groups differ only a little in
# their medians. The question of this chapter is whether that little is enough to gate on.

# %% [markdown]
# ## 2.2 Reliability plots, with the paper's numbers as a reference
#
# The bins include the paper's cut points (read from `lase_nb.reference.CALIBRATION`) and the gate
# thresholds, so every dashed purple paper value sits over exactly the bins its condition covers.
# **If the proxy is informative, accuracy should climb from left to right in both panels.**
#
# **Predict, then run.** Sort the leader's answers by `exp(LP_min)`. Will the answers the model
# is most sure of (0.99 and above) be the most accurate bin? Roughly how accurate will the answers
# below 0.5 be? Write your guesses down; the table and figure below answer.

# %%
fig = calibration.plot_reliability(frame, tau_lp, tau_h, title=f"Reliability of the confidence proxies ({source})")
plots.savefig(fig, "calibration_reliability")
plt.show()

# %%
tables = {p: calibration.reliability(frame, p, tau=t) for p, t in (("p_min", tau_lp), ("h_max", tau_h))}
pd.concat(tables, names=["proxy"]).droplevel(1)[["bin", "count", "n_correct", "accuracy", "ci_lo", "ci_hi",
                                                  "share"]]

# %% [markdown]
# **Reliability bins, by hand.** A reliability table is a histogram with a second count: cut the
# confidence axis at the edges, count the answers that fall in each bin and how many of them are
# right. An answer exactly on an edge goes to the more confident side, as in the gate
# (`exp(LP_min) >= tau_lp` is certain), so bins are $[lo, hi)$, the last one closed. The edges are
# the library's (`calibration.default_bins`: a few round values, the paper's cut points and
# `tau_lp`); the counts are checked against the table above.

# %%
answered = frame[frame["answered"]]
p_min, right = answered["p_min"].to_numpy(float), answered["correct"].to_numpy(bool)
edges = calibration.default_bins("p_min", tau_lp)
rows = []
for lo, hi in zip(edges[:-1], edges[1:]):
    inside = (p_min >= lo) & ((p_min < hi) | (hi == edges[-1]))
    rows.append({"lo": lo, "hi": hi, "count": int(inside.sum()), "n_correct": int(right[inside].sum())})
by_hand = pd.DataFrame(rows).assign(accuracy=lambda t: t["n_correct"] / t["count"].where(t["count"] > 0))
library = tables["p_min"][tables["p_min"]["bin"] != calibration.NO_ANSWER]
assert by_hand["count"].tolist() == library["count"].tolist()
assert by_hand["n_correct"].tolist() == library["n_correct"].tolist()
by_hand

# %% [markdown]
# The paper's calibration table (its conditions, on MATH-500 answers of two strong models), beside
# the same conditions on our answers (accuracies as fractions, with our 95% Wilson interval):

# %%
cond = calibration.paper_conditions(frame)
print(reference.CALIBRATION.attrs["source"])
print(reference.CALIBRATION.attrs["note"])
cond

# %% [markdown]
# **What it shows.** Most answers crowd into the bins just below certainty, and there the right
# and the wrong ones sit side by side; the table's own reading is printed below. So few answers
# fall at either end that the intervals overlap widely. The paper's conditions pick out only a
# handful of our answers each: compare the `n` column before reading the accuracies against the
# paper's.

# %%
print(calibration.describe_reliability(tables["p_min"]))

# %% [markdown]
# **What the paper reported, and why ours differs.** The paper's strong models were right on most
# answers and unsure on few, and their probability split the two. Ours gives its answer tokens a
# high probability whether it is right or wrong, so the probability separates them better than
# chance but far from cleanly: the next section puts a number on it.

# %% [markdown]
# ## 2.3 AUROC and ECE: how well does each proxy flag errors?
#
# A reliability plot is hard to compare across runs. Two numbers help:
#
# - **AUROC for errors**: the chance that a randomly chosen wrong answer looks *less* confident
#   than a randomly chosen right one. 0.5 means the proxy carries no information, 1.0 that it
#   separates them perfectly. **For a gate, an AUROC of 0.6 means that in six of ten (wrong,
#   right) pairs the wrong answer looks less sure: any threshold that escalates most errors also
#   escalates many right answers, so the gate saves little over escalating at random.** The
#   interval is a stratified bootstrap (`lase_nb.stats.auroc_with_ci`).
#   We compute it on boxed answers only; the column `auroc_with_unanswered` also counts missing
#   answers as the least confident, which flatters the proxy because such answers are always wrong.
# - **ECE**: the gap between confidence and accuracy, averaged over ten equal-width bins. Only
#   `exp(LP_min)` is a probability; for `H_max` we score `exp(-H_max)`, which is not one, so treat
#   that ECE as a rough indication.

# %%
scores = calibration.proxy_scores(frame, tau_lp, tau_h, seed=seed)
scores

# %% [markdown]
# **AUROC, by hand.** Take every pair of one wrong and one right answer; count the pairs in which
# the wrong answer has the lower `exp(LP_min)` (ties count one half) and divide by the number of
# pairs. That fraction is the AUROC for errors; the library computes it as a Mann-Whitney
# statistic (`stats.auroc_for_errors`), which is the same count without the pairs table.

# %%
pairs = p_min[~right][:, None] - p_min[right][None, :]  # one row per wrong answer, one column per right one
auc = ((pairs < 0).sum() + 0.5 * (pairs == 0).sum()) / pairs.size
assert np.isclose(auc, scores.set_index("proxy").loc["exp(LP_min)", "auroc"])
print(f"{pairs.shape[0]} wrong x {pairs.shape[1]} right = {pairs.size} pairs; the wrong answer is less sure in "
      f"{(pairs < 0).sum()} (ties {(pairs == 0).sum()}): AUROC = {auc:.3f}")

# %% [markdown]
# **What it shows.** On this recording both proxies flag errors better than chance, but only
# modestly, and their bootstrap intervals reach down close to 0.5: the data allow anything from
# almost no signal to a modest one. The gate, a yes/no verdict, ranks errors less well than the
# proxies here: it keeps only which side of the thresholds an answer fell on.
# The ECE of `exp(LP_min)` is large: the answer-token probabilities promise far more accuracy
# than the model delivers. The paper reports neither number.

# %% [markdown]
# ## 2.4 What the gate does with these answers
#
# With the chapter's thresholds, the gate escalates an answer when `exp(LP_min) < tau_lp` or
# `H_max > tau_h` (or when nothing was boxed). **A wrong answer with $U=0$ is a confident error:
# LASE accepts it and never looks again.** Chapter 06 pulls examples of them from the transcripts.

# %%
split = confidence.gate_split(frame, tau_lp, tau_h)
split.to_frame(f"tau_lp={tau_lp:g}, tau_h={tau_h:g}")

# %% [markdown]
# **What it shows.** At the default thresholds (0.8 / 0.5) the gate escalates a minority of the answers, and
# those it escalates are right much less often than those it accepts: the gate does point at
# errors. But most of the wrong answers look as confident as the right ones and pass it:
# **confident errors are the majority of this model's errors**, and LASE never revisits them.

# %% [markdown]
# ## 2.5 Two models: does calibration come with training?
#
# The same measurement on a model organism: the embedded model with a LoRA adapter trained in
# this repository on the project's problems, to write one step per line and to carry out the last
# operation inside the box, so that the answer tokens are where the result is first computed
# (`data/organism/README.md`). **If its answer-token probability separates right from wrong
# answers better, the gate has more to work with: the panels should climb more steeply, and its
# AUROC should sit further above 0.5.** The recording read here is the organism's first answers on
# 200 problems it never trained on (the eval split of the generator, seed 22, levels 1-3;
# `data/traces/arith-organism-point`, the pointing organism v5), the embedded model's on its own 80 (level 1): not the same
# problems, so compare the shapes and AUROCs, not the accuracies. The same measurement on the
# same problems follows the figure.

# %%
models = load_models(by_display_name([traces, point_traces]), ["lase"], require=["lase"])
frames = calibration.frames_by_model(models)
by_model = calibration.calibration_by_model(frames, tau_lp, tau_h, seed=seed)
fig = calibration.plot_reliability_by_model(frames, tau_lp, tau_h, table=by_model)
plots.savefig(fig, "calibration_two_models")
plt.show()
display(by_model)
display(Markdown(calibration.describe_calibration_by_model(by_model, calibration.auroc_gap(frames, seed=seed))))

# %% [markdown]
# **On the same problems.** The negative control (`control_traces`) holds both models' first answers
# on the same 80 level-1 problems of the held-out split (the embedded model with its two worked
# examples, the organism zero-shot), so the two AUROCs can be compared problem by problem (the
# bootstrap resamples the problems jointly):

# %%
if control_traces:
    same_frames = calibration.frames_by_model(control_models(control_traces))
    same_table = calibration.calibration_by_model(same_frames, tau_lp, tau_h, seed=seed)
    display(same_table)
    display(Markdown(calibration.describe_calibration_by_model(same_table, calibration.auroc_gap(same_frames, seed=seed))))

# %% [markdown]
# A gate that separates right from wrong answers is half of what LASE needs; the other half is
# supporters that correct what it escalates. Whether they do is each model's *regime*, which
# chapter 03 defines (section 3.4) and measures.

# %% [markdown]
# ## 2.6 Exact entropy vs the top-k estimate (live, small)
#
# An API returns, for each generated token, only the `top_k` most likely alternatives. The entropy
# must then be *estimated*: `lase_nb.confidence.topk_entropy` adds one bucket holding the missing
# probability mass $r = 1 - \sum_{i \le k} p_i$, so $\hat H = -\sum_i p_i \log p_i - r \log r$.
# **Lumping the tail into one outcome can only lose entropy, so the estimate is a lower bound on
# the exact value.** A local model gives the exact full-vocabulary entropy, so we can measure the
# gap: the leader answers `n_entropy_problems` problems once (greedy, batched, through the call cache),
# and we recompute each token's entropy from its first k alternatives for several k.

# %%
live_problems = load_dataset(dataset, data_path, n_entropy_problems, seed)
gens = engine().run([Call("leader", 0, solver_messages(p, examples=cfg.examples), cfg.params()) for p in live_problems])
kind = live_problems[0].kind
ks = sorted({k for k in (1, 2, 5, 10, top_k) if k <= top_k})
tokens = pd.concat([calibration.entropy_estimates(gens, kind, k=k, answer_only=False,
                                                  problem_ids=[p.id for p in live_problems]) for k in ks])
summary = calibration.entropy_summary(tokens[tokens["is_answer"]], tau_h)
print(f"{len(gens)} responses, {int((tokens['k'] == top_k).sum())} generated tokens, "
      f"{int(((tokens['k'] == top_k) & tokens['is_answer']).sum())} of them answer tokens; "
      f"model calls {engine().stats.model_calls}, from cache {engine().stats.cache_hits}")
summary

# %%
if tokens["exact"].notna().any():
    fig = calibration.plot_entropy_estimate(tokens, summary, tau_h, k=top_k)
    plots.savefig(fig, "calibration_entropy_estimate")
    plt.show()
else:
    print(f"The {backend} backend returns no exact entropy, so there is nothing to compare against: "
          "this section needs a local model.")

# %%
if tokens["exact"].notna().any():
    display(Markdown(calibration.describe_entropy(summary, tokens, top_k, tau_h)))

# %% [markdown]
# **Caveats.** A handful of answers of one small model on easy arithmetic: the answer tokens are
# mostly peaked distributions, where the tail is thin and any estimator does well. On long free-form
# answers or hesitant models the residual mass is larger and the lower bound looser; an API with
# only a few alternatives (Gemini returns a small k) is in the regime of the left end of the right
# panel. An upper bound is possible too (spread the residual mass evenly over the rest of the
# vocabulary), but with a vocabulary of tens of thousands of tokens it is too loose to gate on.

# %% [markdown]
# ## Try it yourself
#
# In a live Jupyter session the sliders move the gate and show what it would accept and escalate
# on the same answers: the figure is redrawn in place and the row under it gives the split (and
# says so when a move changes no answer's side of the gate). The panel is
# `gate_panel.gate_sliders`, around `confidence.gate_split` and `calibration.plot_reliability`.
# (Under papermill `interactive` is False and no widget is made.)

# %%
if interactive:
    panel = gate_panel.gate_sliders(frame, tau_lp, tau_h, title=f"Reliability of the confidence proxies ({source})")
    display(panel.box)

# %% [markdown]
# ## Exercises
#
# Solutions are kept apart, in `notebooks/solutions/02_solutions.py` (run it as a script or open it
# as a notebook); the test suite runs them, so they stay right.
#
# **Exercise 02.1.** Which proxy flags errors better on these answers, `exp(LP_min)` or `H_max`?
# Compare their AUROCs with a test of the difference (the same answers score both, so pair them),
# not by whether two intervals overlap.
#
# **Exercise 02.2.** Tighten the gate from 0.8 / 0.5 to 0.95 / 0.2. How many confident errors (wrong
# answers the gate lets through) remain, and what does that cost in escalations?
#
# **Exercise 02.3.** The expected calibration error depends on its bins. Compute the ECE of
# `exp(LP_min)` as a probability of being right with 5, 10 and 20 bins. Why is the number with 20
# bins hard to trust on a recording of this size?

# %% [markdown]
# ## Summary
#
# - The gate is only as good as the link between confidence and correctness. Reliability tables
#   show that link bin by bin; AUROC and ECE put a number and an interval on it.
# - The embedded model is confident almost always, right or wrong. Its answer-token probability
#   flags errors a little better than chance, and the probabilities overstate its accuracy by a
#   wide margin. The paper's strong models were both more accurate and better calibrated.
# - At the default thresholds (0.8 / 0.5) the gate escalates few answers, of which most are wrong; most
#   wrong answers pass it as confident errors. The numbers are in sections 2.3 and 2.4.
# - With the full set of API alternatives the top-k entropy estimate stays close to the exact
#   entropy on short answers (section 2.6 measures by how much); with fewer alternatives it
#   drifts down (it is a lower bound), and a gate on `H_max` can change its verdict.

# %% [markdown]
# Chapter 06 looks at the errors the gate lets through, and at what happens after it escalates.
