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
#
# **You need** chapter 00 (what `LP_min` and `H_max` are). By default the chapter reads the
# recorded full-chain LASE run of SmolLM2-135M on the arithmetic set (`data/traces`), so it needs
# no model except in the short live step of section 2.5. Set `live=True` to measure the leader on
# your own backend and data set instead, e.g.
# `papermill 02_calibration.ipynb out.ipynb -p live True -p backend openai -p model gpt-4.1-mini`.
#
# The chapter's logic lives in `lase_nb/calibration.py` (reliability, AUROC and ECE come from
# `lase_nb/stats.py`, whose one interval for an accuracy, Wilson's, every chapter uses). It covers
# the paper's calibration figure (Figure 3), the evidence for its Assumption 3.3, printed below in
# the paper's own numbers.

# %% tags=["parameters"]
backend = "local"  # local | openai | gemini (used by the live steps)
model = None  # None: the default model of the backend
base_url = None  # an OpenAI-compatible server, e.g. "http://127.0.0.1:8000/v1"
traces = "../data/traces/arith-smollm2"  # recorded runs; the chapter reads <traces>/lase-full
live = False  # True: run the leader on n_problems now and calibrate those answers instead
dataset = "arith"  # data set for the live steps (see lase_nb.datasets.DATASETS)
data_path = None  # file of a paper data set (not needed for arith)
n_problems = 12  # problems in the live steps
top_k = 20  # alternatives per token an API returns (OpenAI allows up to 20)
tau_lp = 0.8  # gate threshold on exp(LP_min)
tau_h = 0.5  # gate threshold on H_max (nats)
seed = 0  # problem subset and bootstrap
interactive = True  # False under papermill: no widgets are created

# %%
import functools

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from lase_nb import calibration, plots, reference
from lase_nb.backends import make_backend
from lase_nb.cache import CallCache
from lase_nb.datasets import load_dataset
from lase_nb.engine import Call, Engine
from lase_nb.prompts import solver_messages
from lase_nb.runner import run_problems
from lase_nb.runs import load_runs
from lase_nb.strategies import StrategyConfig, default_examples

plots.set_style()
pd.set_option("display.precision", 3)
display(Markdown(reference.describe_results("calibration")))
cfg = StrategyConfig(tau_lp=tau_lp, tau_h=tau_h, top_logprobs=top_k, seed=seed, examples=default_examples(backend))


@functools.cache
def engine() -> Engine:
    """One engine for the live steps, built on first use; every call goes through the call cache."""
    extra = {"max_batch": 16} if backend == "local" else {}
    return Engine(make_backend(backend, model, base_url, **extra), CallCache())


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
    frame = calibration.confidence_frame(results, problems=problems)
    source = f"live: {engine().backend.name}:{engine().backend.model}, {dataset}, {len(frame)} problems"
else:
    run = load_runs(traces, ["lase"], require=["lase"])["lase"]  # the lase-full folder
    frame = calibration.confidence_frame(run, stage=0)
    m = run.manifest
    source = f"recorded: {m['backend']}:{str(m['model']).split(' (')[0]}, {m['dataset']}, {len(frame)} problems"
print(source)
frame.head()

# %%
display(Markdown(calibration.describe_frame(frame)))

# %% [markdown]
# ## 2.2 Reliability plots, with the paper's numbers as a reference
#
# The bins include the paper's cut points (read from `lase_nb.reference.CALIBRATION`) and the gate
# thresholds, so every dashed purple paper value sits over exactly the bins its condition covers.
# **If the proxy is informative, accuracy should climb from left to right in both panels.**

# %%
fig = calibration.plot_reliability(frame, tau_lp, tau_h, title=f"Reliability of the confidence proxies ({source})")
plots.savefig(fig, "calibration_reliability")
plt.show()

# %%
tables = {p: calibration.reliability(frame, p, tau=t) for p, t in (("p_min", tau_lp), ("h_max", tau_h))}
pd.concat(tables, names=["proxy"]).droplevel(1)[["bin", "count", "n_correct", "accuracy", "ci_lo", "ci_hi",
                                                  "share"]]

# %% [markdown]
# The paper's calibration table (its conditions, on MATH-500 answers of two strong models), beside
# the same conditions on our answers (accuracies as fractions, with our 95% Wilson interval):

# %%
cond = calibration.paper_conditions(frame)
print(reference.CALIBRATION.attrs["source"])
print(reference.CALIBRATION.attrs["note"])
cond

# %%
display(Markdown(calibration.describe_reliability(frame, tables, cond)))

# %%
scores = calibration.proxy_scores(frame, tau_lp, tau_h, seed=seed)
display(Markdown(calibration.describe_paper(frame, scores)))

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
scores

# %%
display(Markdown(calibration.describe_scores(scores, frame)))

# %% [markdown]
# ## 2.4 What the gate does with these answers
#
# With the chapter's thresholds, the gate escalates an answer when `exp(LP_min) < tau_lp` or
# `H_max > tau_h` (or when nothing was boxed). **A wrong answer with $U=0$ is a confident error:
# LASE accepts it and never looks again.** Chapter 06 pulls examples of them from the transcripts.

# %%
split = calibration.gate_split(frame, tau_lp, tau_h)
display(split.to_frame(f"tau_lp={tau_lp:g}, tau_h={tau_h:g}"))
display(Markdown(calibration.describe_gate(split)))

# %% [markdown]
# ## 2.5 Exact entropy vs the top-k estimate (live, small)
#
# An API returns, for each generated token, only the `top_k` most likely alternatives. The entropy
# must then be *estimated*: `lase_nb.confidence.topk_entropy` adds one bucket holding the missing
# probability mass $r = 1 - \sum_{i \le k} p_i$, so $\hat H = -\sum_i p_i \log p_i - r \log r$.
# **Lumping the tail into one outcome can only lose entropy, so the estimate is a lower bound on
# the exact value.** A local model gives the exact full-vocabulary entropy, so we can measure the
# gap: the leader answers `n_problems` problems once (greedy, batched, through the call cache),
# and we recompute each token's entropy from its first k alternatives for several k.

# %%
live_problems = load_dataset(dataset, data_path, n_problems, seed)
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
# `sliders.gate_sliders`, around `calibration.gate_split` and `calibration.plot_reliability`.
# (Under papermill `interactive` is False and no widget is made.)

# %%
if interactive:
    from lase_nb import sliders

    gate_panel = sliders.gate_sliders(frame, tau_lp, tau_h, title=f"Reliability of the confidence proxies ({source})")
    display(gate_panel.box)

# %% [markdown]
# ## Summary

# %%
display(Markdown(calibration.describe_summary(frame, scores, split)))

# %% [markdown]
# Chapter 06 looks at the errors the gate lets through, and at what happens after it escalates.
