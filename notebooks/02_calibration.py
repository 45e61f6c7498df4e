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
# recorded first answers and sets the paper's numbers beside ours.
#
# **What you will learn**
#
# 1. How to read a reliability plot of `exp(LP_min)` and `H_max`: bars count the answers in each
#    bin, the line is the accuracy in that bin, with a 95% interval.
# 2. Two numbers the paper does not give: the **AUROC** of each proxy for flagging errors, with a
#    bootstrap interval, and the **expected calibration error (ECE)**.
# 3. What the gate $U$ does at chosen thresholds: how many answers it escalates, and how many
#    wrong answers it lets through (confident errors).
# 4. How far the entropy an API lets you compute (the top-k alternatives plus one bucket for the
#    rest) is from the exact full-vocabulary entropy a local model gives.
# 5. How to set several studies side by side, and compare two on the same problems.
#
# **You need** chapter 00 (what `LP_min` and `H_max` are). The chapter reads the first answers of a
# recorded full-chain run (`traces`: your study, or the committed recordings), so it needs no model
# except in the short live step of section 2.6; `live=True` measures the leader on your backend now.
# Its logic is `lase_nb/chapters/calibration.py`.
#
# **The paper's evidence** (its Figure 3): on 2,000 MATH-500 answers of two strong models,
# accuracy was 85.5% when the lowest answer-token probability was at least 0.99, 50.9% when it was
# below 0.50, and 30.4% when the answer entropy exceeded 1.0 nats.
#
# **Units and defaults.** The paper's Eq. 7 compares $LP_{min}$, a log-probability, with
# $\tau_{lp} \in [0.5, 0.95]$; those thresholds only make sense as probabilities, so every chapter
# gates on $\exp(LP_{min}) < \tau_{lp}$. Entropy is in nats. The paper never states default
# thresholds: 0.8 / 0.5 is inferred (Table 5's $\tau_{lp} = 0.80$ row matches Table 1's 74.2%),
# and the chapters call it "the default".

# %% tags=["parameters"]
backend = "local"  # local | openai | gemini (used by the live steps)
model = None  # None: the default model of the backend
base_url = None  # an OpenAI-compatible server, e.g. "http://127.0.0.1:8000/v1"
concurrency = None  # API backends: calls in flight (default 8; 1 for a one-slot server)
timeout = None  # API backends: seconds one call may take (default 60)
dtype = None  # local backend: float32, bfloat16 or auto (None: auto, float32 unless the CPU has native bfloat16)
device = "cpu"  # local backend: cpu, cuda, cuda:N, mps or auto (docs/your_model.md, "Your GPU")
examples = None  # worked examples per prompt (None: 2 for the embedded model, 0 for API models)
traces = "committed"  # your study (a folder holding lase-full/); "committed": data/traces/arith-smollm2
studies = "auto"  # studies beside it in 2.5 (folders or [label, folder] pairs); auto: the committed ones only when traces is committed; None: none
control_traces = "auto"  # two studies of the same problems (a folder of study folders), compared in 2.5; None: skip
live = False  # True: run the leader on n_problems now and calibrate those answers instead
dataset = "arith"  # data set for the live steps (see lase_nb.datasets.DATASETS)
data_path = None  # file of a paper data set (not needed for arith)
n_problems = 12  # problems of the live run (live True)
n_entropy_problems = 6  # problems of section 2.6's live measurement of the top-k entropy
top_k = 20  # alternatives per token an API returns (OpenAI allows up to 20)
tau_lp = 0.8  # gate threshold on exp(LP_min)
tau_h = 0.5  # gate threshold on H_max (nats)
seed = 0  # problem subset and bootstrap
interactive = None  # None: sliders only in a live Jupyter session (never under papermill); True or False forces it

# %%
import functools

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from lase_nb import confidence, plots, reference
from lase_nb.book import widgets
from lase_nb import runs as run_store
from lase_nb.chapters import calibration, gate_panel
from lase_nb.datasets import load_dataset
from lase_nb.engine import Call, Engine
from lase_nb.prompts import solver_messages
from lase_nb.runner import run_problems
from lase_nb.live import live_config, live_engine

plots.set_style()
pd.set_option("display.precision", 3)
interactive = widgets.live_session(interactive)
cfg = live_config(backend, model, examples=examples, tau_lp=tau_lp, tau_h=tau_h, seed=seed, top_logprobs=top_k)
shown = run_store.chapter_studies(traces, studies)  # the reader's study first; one line each


@functools.cache
def engine() -> Engine:
    """One engine for the live steps, built on first use; every call goes through the call cache."""
    return live_engine(backend, model, base_url, max_batch=16, concurrency=concurrency, timeout=timeout, dtype=dtype, device=device)


# %% [markdown]
# ## 2.1 The answers we calibrate
#
# One row per leader answer: the two proxies, measured on the tokens of the boxed answer only,
# and whether the answer was right. An answer the model never boxed has no confidence at all; the
# gate treats it as uncertain and grading counts it wrong, so it gets its own bar below.

# %% tags=["book-hide-input"]
if live:
    problems = load_dataset(dataset, data_path, n_problems, seed)
    results = run_problems("single", problems, engine(), cfg, progress=False)
    frame = confidence.confidence_frame(results, problems=problems)
    source = f"live: {engine().backend.name}:{engine().backend.model}, {dataset}, {len(frame)} problems"
else:
    run = run_store.load_runs(shown[0].path, ["lase"], require=["lase"])["lase"]  # the lase-full folder
    frame = confidence.confidence_frame(run, stage=0)
    source = f"{shown[0].label}, {run.manifest['dataset']}, {len(frame)} problems"
print(source)
print(calibration.describe_answers(frame))

# %% [markdown] tags=["seminar"]
# ## 2.2 Reliability plots, with the paper's numbers as a reference
#
# The figure's title names the recording: by default the *embedded model*, SmolLM2-135M (a
# 135-million-parameter model that runs on a laptop's CPU), on *arith*, generated arithmetic word
# problems. The bins include the paper's cut points and the gate thresholds, so every dashed
# purple paper value sits over exactly the bins its condition covers.
# **If the proxy is informative, accuracy should climb from left to right in both panels.**
#
# **Predict, then run.** Sort the leader's answers by `exp(LP_min)`. Will the answers the model
# is most sure of (0.99 and above) be the most accurate bin? Roughly how accurate will the answers
# below 0.5 be? Write your guesses down; the figure below answers.

# %% tags=["seminar"]
fig = calibration.plot_reliability(frame, tau_lp, tau_h, title=f"Reliability of the confidence proxies ({source})")
plots.savefig(fig, "calibration_reliability")
plt.show()

# %% tags=["seminar"]
tables = {p: calibration.reliability(frame, p, tau=t) for p, t in (("p_min", tau_lp), ("h_max", tau_h))}
print(calibration.describe_reliability(tables["p_min"]))

# %% [markdown] tags=["book-more"]
# The bins behind the figure, with their counts and Wilson intervals:

# %% tags=["book-more"]
pd.concat(tables, names=["proxy"]).reset_index(level=0).assign(bin=lambda t: t["proxy"] + " " + t["bin"]) \
    .set_index("bin")[["count", "n_correct", "accuracy", "ci_lo", "ci_hi"]]

# %% [markdown] tags=["book-more"]
# **Reliability bins, by hand.** A reliability table is a histogram with a second count: cut the
# confidence axis at the edges, count the answers in each bin and how many of them are right. An
# answer exactly on an edge goes to the more confident side, as in the gate (`exp(LP_min) >=
# tau_lp` is certain), so bins are $[lo, hi)$, the last one closed. Checked against the table:

# %% tags=["book-more"]
answered = frame[frame["answered"] & frame["p_min"].notna()]  # with a confidence (some replies come without logprobs)
p_min, right = answered["p_min"].to_numpy(float), answered["correct"].to_numpy(bool)
edges = calibration.default_bins("p_min", tau_lp)
counts, n_right = [], []
for lo, hi in zip(edges[:-1], edges[1:]):
    inside = (p_min >= lo) & ((p_min < hi) | (hi == edges[-1]))
    counts.append(int(inside.sum()))
    n_right.append(int(right[inside].sum()))
library = tables["p_min"][tables["p_min"]["bin"] != calibration.NO_ANSWER]
assert counts == library["count"].tolist() and n_right == library["n_correct"].tolist()
print(f"by hand: {len(counts)} bins, counts {counts}, right {n_right}: the library's table")

# %% [markdown] tags=["book-more"]
# The paper's calibration conditions beside the same conditions on our answers (accuracies as
# fractions, our 95% Wilson interval; compare the `n` column before the accuracies):

# %% tags=["book-more"]
cond = calibration.paper_conditions(frame)
print(reference.CALIBRATION.attrs["source"])
cond.set_index("condition")[["n", "accuracy", "ci_lo", "ci_hi", "paper_accuracy"]]

# %% [markdown] tags=["seminar"]
# ## 2.3 AUROC and ECE: how well does each proxy flag errors?
#
# - **AUROC for errors**: the chance that a randomly chosen wrong answer looks *less* confident
#   than a randomly chosen right one. 0.5 means no information, 1.0 perfect separation. **An AUROC
#   of 0.6 means that in six of ten (wrong, right) pairs the wrong answer looks less sure: any
#   threshold that escalates most errors also escalates many right answers.** The interval comes
#   from resampling the answers (a bootstrap); a proxy is called better than chance only when it
#   lies above 0.5 *and* the rank test that the AUROC is (Mann-Whitney) gives p < 0.05. Missing
#   answers are left out (they are always wrong, so counting them flatters the proxy).
# - **ECE**: the gap between confidence and accuracy, averaged over ten equal-width bins. Only
#   `exp(LP_min)` is a probability; for `H_max` we score `exp(-H_max)`, a rough indication.

# %% tags=["seminar"]
scores = calibration.proxy_scores(frame, tau_lp, tau_h, seed=seed)
display(Markdown(calibration.describe_scores(scores)))

# %% tags=["book-more"]
scores.set_index("proxy")[["n_answered", "errors_answered", "auroc", "auroc_lo", "auroc_hi"]]

# %% [markdown] tags=["book-more"]
# **AUROC, by hand.** Take every pair of one wrong and one right answer; count the pairs in which
# the wrong answer has the lower `exp(LP_min)` (ties count one half) and divide by the number of
# pairs. The library computes the same count as a Mann-Whitney statistic (`stats.auroc_for_errors`).

# %% tags=["book-more"]
pairs = p_min[~right][:, None] - p_min[right][None, :]  # one row per wrong answer, one column per right one
auc = ((pairs < 0).sum() + 0.5 * (pairs == 0).sum()) / pairs.size if pairs.size else float("nan")
assert np.isclose(auc, scores.loc[0, "auroc"], equal_nan=True)
print(f"{pairs.shape[0]} wrong x {pairs.shape[1]} right = {pairs.size} pairs; the wrong answer is less sure in "
      f"{(pairs < 0).sum()} (ties {(pairs == 0).sum()}): AUROC = {auc:.3f}")

# %% [markdown] tags=["seminar"]
# ## 2.4 What the gate does with these answers
#
# The gate escalates an answer when `exp(LP_min) < tau_lp` or `H_max > tau_h` (or when nothing
# was boxed). **A wrong answer with $U=0$ is a confident error: LASE accepts it and never looks
# again.** Chapter 06 (6.1) counts what the supporters would have done with them.

# %% tags=["seminar"]
split = confidence.gate_split(frame, tau_lp, tau_h)
print(calibration.describe_gate(split, tau_lp, tau_h))

# %% [markdown] tags=["book-more"]
# ## 2.5 Studies side by side
#
# The same measurement on every study in `studies`, one reliability panel each, on the same bins.
# The committed ones are the embedded SmolLM2-135M and the **pointing organism (v5)**: the same
# small model with a LoRA adapter trained to solve one step per line and, as a supporter, to name
# the step that fails (chapter 03 introduces it). **Does a study's answer-token probability separate
# right from wrong answers better than another's?** Two studies on different problems are compared
# by shape and AUROC, not by accuracy; the verdict under the table uses the bootstrap test of the
# difference, not overlapping intervals.

# %% tags=["book-more"]
models = run_store.load_studies(shown, ["lase"], require=["lase"])
frames = calibration.frames_by_model(models)
by_model = calibration.calibration_by_model(frames, tau_lp, tau_h, seed=seed)
if len(frames) > 1:
    fig = calibration.plot_reliability_by_model(frames, tau_lp, tau_h, table=by_model)
    plots.savefig(fig, "calibration_two_models")
    plt.show()
else:
    print("one study: no panels to set side by side (pass studies to add more)")
display(Markdown(calibration.describe_calibration_by_model(by_model, calibration.auroc_gap(frames, seed=seed))))
by_model.set_index("model")[["n", "accuracy", "escalation_rate", "auroc_p_min", "ece"]]

# %% [markdown] tags=["book-more"]
# **On the same problems.** A control (`control_traces`) is two studies of the same problems (the
# committed one: both models on the same 80 level-1 problems of the held-out split), so the two
# AUROCs can be compared problem by problem, the bootstrap resampling the problems jointly:

# %% tags=["book-more"]
control = run_store.control_studies(control_traces, traces)
if control:
    same_frames = calibration.frames_by_model(run_store.load_studies(control, ["lase"], require=["lase"]))
    same_table = calibration.calibration_by_model(same_frames, tau_lp, tau_h, seed=seed)
    display(Markdown(calibration.describe_calibration_by_model(same_table, calibration.auroc_gap(same_frames, seed=seed))))
else:
    print("no control (control_traces is None, or you named your own traces): skipped")

# %% [markdown] tags=["book-more"]
# A gate that separates right from wrong answers is half of what LASE needs; the other half is
# supporters that correct what it escalates, which chapter 03 measures.

# %% [markdown] tags=["book-more"]
# ## 2.6 Exact entropy vs the top-k estimate (live, small)
#
# An API returns, for each generated token, only the `top_k` most likely alternatives. The entropy
# must then be *estimated*: `confidence.topk_entropy` adds one bucket holding the missing
# probability mass $r = 1 - \sum_{i \le k} p_i$, so $\hat H = -\sum_i p_i \log p_i - r \log r$.
# **Lumping the tail into one outcome can only lose entropy, so the estimate is a lower bound on
# the exact value.** A local model gives the exact entropy, so we measure the gap: the leader
# answers `n_entropy_problems` problems (greedy, through the call cache), and we recompute each
# token's entropy from its first k alternatives for several k.

# %% tags=["book-more"]
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
summary.set_index("k")[["tokens", "mean_abs_error", "max_abs_error", "mean_covered", "gate_flips"]]

# %% tags=["book-more"]
if tokens["exact"].notna().any():
    fig = calibration.plot_entropy_estimate(tokens, summary, tau_h, k=top_k)
    plots.savefig(fig, "calibration_entropy_estimate", live=True)  # a live call: under build/, not figures/
    plt.show()
    display(Markdown(calibration.describe_entropy(summary, tokens, top_k, tau_h)))
else:
    print(f"The {backend} backend returns no exact entropy, so there is nothing to compare against: "
          "this section needs a local model.")

# %% [markdown] tags=["book-more"]
# **Caveats.** On long free-form answers or hesitant models the residual mass is larger and the
# lower bound looser; an API with only a few alternatives (Gemini returns a small k) is in the
# regime of the left end of the right panel. An upper bound (spreading the residual evenly over
# the rest of the vocabulary) is too loose to gate on.

# %% [markdown]
# ## Try it yourself
#
# Move the slider: the gate escalates every answer whose $\exp(LP_{min})$ is below $\tau_{lp}$
# (entropy gate off; section 2.4 has both). The table prints the share escalated, the errors caught
# and the right answers escalated (`confidence.gate_split`), computed for every slider position when
# this cell ran: the panel needs no kernel.

# %%
gate_panel.gate_book_panel(frame, tau_lp, seed=seed)

# %% [markdown] tags=["book-hide"]
# In a live Jupyter session a second panel below moves both thresholds and redraws the reliability
# figure (`gate_panel.gate_sliders`, around `calibration.plot_reliability`).

# %% tags=["book-hide"]
if interactive:
    panel = gate_panel.gate_sliders(frame, tau_lp, tau_h, title=f"Reliability of the confidence proxies ({source})")
    display(panel.box)

# %% [markdown] tags=["book-more"]
# ## Exercises
#
# Solutions: `notebooks/solutions/02_solutions.py` (run by the tests).
#
# **Exercise 02.1.** Which proxy flags errors better on these answers, `exp(LP_min)` or `H_max`?
# Compare their AUROCs with a test of the difference (the same answers score both, so pair them:
# `stats.auroc_difference(..., paired=True)`), not by whether two intervals overlap.
#
# **Exercise 02.2.** Tighten the gate from 0.8 / 0.5 to 0.95 / 0.2. How many confident errors (wrong
# answers the gate lets through) remain, and what does that cost in escalations?
#
# **Exercise 02.3.** The expected calibration error depends on its bins. Compute the ECE of
# `exp(LP_min)` with 5, 10 and 20 bins, count how many bins hold answers, and resample the answers
# (a bootstrap) to see how far each ECE moves by chance. Does the choice of bins change the ECE by
# more than that?

# %% [markdown]
# ## Summary
#
# - The gate is only as good as the link between confidence and correctness. Reliability tables
#   show that link bin by bin; AUROC and ECE put a number and an interval on it, and a proxy is
#   better than chance only when both the interval and the test say so (section 2.3 prints the
#   verdict for your study).
# - The gate's split (section 2.4) counts the price of a confidence gate: confident errors, which
#   no supporter ever sees.
# - The top-k entropy estimate is a lower bound on the exact entropy; with fewer alternatives it
#   drifts down, and a gate on `H_max` can change its verdict (section 2.6 measures by how much).
# - Chapter 06 looks at the errors the gate lets through, and at what happens after it escalates.
