# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown] tags=["seminar"]
# # 00 · Quickstart: one question, one answer, and how sure the model was
#
# **The question.** When a language model answers, can we tell from the answer itself whether to
# trust it, without asking anyone else? LASE (Leader-Adaptive Structured Engagement; Yoa et al.,
# ICML 2026, *the paper* in these chapters) bets that we can: it reads how probable the model found
# the few tokens of its final answer (which the prompt asks for inside `\boxed{}`, so that it can be
# found), and calls in help only when that number is low.
#
# When it is low, the model that answered (LASE's *leader*) asks *supporters* for help: other calls
# of the same model in a critic's role, one at a time. By default the model is SmolLM2-135M, small
# enough to answer live on a laptop.
#
# **What you will learn.** Where a model's final answer sits among the tokens it generated, and
# the two confidence numbers LASE gates on: the lowest answer-token probability `exp(LP_min)` and
# the highest answer-token entropy `H_max`. The answer is *unsure* when `exp(LP_min)` is below a
# threshold `tau_lp` or `H_max` above `tau_h`; the defaults, `tau_lp` = 0.8 (a probability) and
# `tau_h` = 0.5 nats (entropy in natural-log units), are inferred from the paper (it states none).

# %% [markdown] tags=["book-more"]
# **Paper results covered.** The LASE paper's confidence proxies (the lowest
# answer-token log-probability $LP_{min}$, the highest answer-token entropy $H_{max}$, and the
# uncertainty event $U$ built from them), measured on one answer. Whether they are calibrated
# (the paper's Assumption 3.3) is chapter 02; the theory they feed is chapter 01.
#
# **Who this is for.** Anyone who wants to check in a minute that a backend works and returns
# token log-probabilities, before spending money on a study.
#
# By default the notebook runs the embedded model (SmolLM2-135M-Instruct, shipped inside a
# Python wheel, on the CPU). Point it at your own model with papermill, for example
# `papermill 00_quickstart.ipynb out.ipynb -p backend openai -p model gpt-4.1-mini`.

# %% tags=["parameters"]
backend = "local"  # local | openai | gemini
model = None  # None: the backend's default model
base_url = None  # an OpenAI-compatible server, e.g. "http://127.0.0.1:8000/v1"
concurrency = None  # API backends: calls in flight (default 8; 1 for a one-slot server)
timeout = None  # API backends: seconds one call may take (default 60)
dtype = None  # local backend: float32, bfloat16 or auto (None: auto, float32 unless the CPU has native bfloat16)
device = "cpu"  # local backend: cpu, cuda, cuda:N, mps or auto (docs/your_model.md, "Your GPU")
question = "Sara has 9 stickers and gets 6 more. How many stickers does she have now?"
gold = "15"  # the right answer to question, to grade the reply (None: not graded); change both together
kind = "number"  # number | math | choice
top_logprobs = 5
tau_lp = 0.8  # the gate's thresholds: exp(LP_min) below tau_lp, or H_max above tau_h (nats), is "unsure"
tau_h = 0.5
traces = "committed"  # recorded answers (a folder holding lase-full/) for the confidently wrong example; "committed": data/traces/arith-smollm2
interactive = None  # None: widgets only in a live Jupyter session (never under papermill); True or False forces it

# %% tags=["seminar"]
import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from lase_nb import plots
from lase_nb.book import widgets
from lase_nb.chapters import quickstart
from lase_nb.confidence import answer_token_indices, confidence_frame, is_uncertain, measure, uncertain_mask
from lase_nb.engine import Call
from lase_nb.live import live_engine
from lase_nb.prompts import solver_messages
from lase_nb.strategies import default_examples
from lase_nb.types import GenParams, Problem

plots.set_style()
interactive = widgets.live_session(interactive)
engine = live_engine(backend, model, base_url, concurrency=concurrency, timeout=timeout, dtype=dtype, device=device)  # the backend, with the call cache
problem = Problem("quickstart", question, gold=gold or "", kind=kind)

# %% [markdown] tags=["book-more"]
# The model sees a short instruction, **two worked examples as earlier chat turns** on the local
# model (small models only box their answers reliably when shown how; API models get none, as in
# the papers), and then the question:

# %% tags=["book-more"]
messages = solver_messages(problem, examples=default_examples(backend, model))
for m in messages:
    print(f"[{m['role']}] {m['content']}\n")

# %% tags=["seminar"]
(gen,) = engine.run([Call("solver", 0, messages, GenParams(max_tokens=160, top_logprobs=top_logprobs))])
print(f"question: {question}\n\nreply:")
print(gen.text)
print("\n" + quickstart.token_count_line(gen.prompt_tokens, gen.completion_tokens, len(gen.tokens or [])) +
      f", {gen.latency_s:.2f} s, finish reason: {gen.finish_reason}")

# %% [markdown] tags=["seminar"]
# ## Where the answer is, and how sure the model was
#
# The confidence proxies look **only at the tokens of the final answer**, the content of the last
# `\boxed{}`; the reasoning before it does not count. The span is found from the tokens' character
# offsets, not by tokenising the text again.
#
# **Predict, then run.** Read the reply above before running the next cells. Will the gate call
# the model *sure* (U = 0) or *unsure* at 0.8 / 0.5? And is the answer the least sure part of the
# reply, or does the model hesitate more on the reasoning before it? The next cell answers the
# first question; the panel of every token below answers the second.

# %% tags=["seminar"]
conf = measure(gen, problem.kind)
print(f"extracted answer: {conf.answer}; " + quickstart.grade_line(conf.answer, gold, kind))
if conf.answer is not None:
    print(f"exp(LP_min) = {math.exp(conf.lp_min):.3f}   H_max = {conf.h_max:.3f} nats")
unsure = is_uncertain(conf, tau_lp, tau_h)
print(f"gate at tau_lp = {tau_lp}, tau_h = {tau_h}: " + ("unsure (U = 1): LASE would call its first supporter"
      if unsure else "sure (U = 0): LASE would stop here and output this answer"))

# %% tags=["book-more"]
if conf.answer is not None:
    from lase_nb.answers import extract_answer

    ex = extract_answer(gen.text, problem.kind)
    idx = answer_token_indices(gen, (ex.start, ex.end))
    table = pd.DataFrame([{
        "token": repr(gen.tokens[i].token),
        "probability": math.exp(gen.tokens[i].logprob),
        "entropy (nats)": gen.tokens[i].entropy,
        "top alternatives": ", ".join(f"{t!r}:{math.exp(lp):.2f}" for t, lp in gen.tokens[i].top[:3]),
    } for i in idx])
    display(table)

# %% [markdown] tags=["book-more"]
# **The two numbers, by hand.** A reply is a list of tokens, each with its text, its character
# offset in the reply, its log-probability and the entropy of the distribution it was drawn from
# (exact on a local model; an API gives only the top-k alternatives, so the entropy is estimated
# from them plus one bucket for the missing mass). The whole mechanism is four steps: find the
# content of the last `\boxed{...}` (braces balanced, spaces trimmed), keep the tokens whose
# characters overlap it, and take the **lowest log-probability** and the **highest entropy** among
# them. Written out with numpy, then checked against `confidence.measure`:

# %% tags=["book-more"]
def entropy(t):
    """Exact when the backend gives it; else the top-k alternatives plus one residual bucket."""
    if t.entropy is not None:
        return t.entropy
    p = np.exp([lp for _, lp in t.top])
    rest = max(1.0 - p.sum(), 0.0)
    return float(-(p * np.log(p)).sum() - (rest * np.log(rest) if rest > 0 else 0.0))


text = gen.text
if conf.answer is not None and kind != "choice" and "\\boxed{" in text:
    start = text.rindex("\\boxed{") + len("\\boxed{")
    end, depth = start, 1
    while depth:  # walk to the brace that closes the box
        depth += (text[end] == "{") - (text[end] == "}")
        end += 1
    end -= 1
    while text[start].isspace():
        start += 1
    while text[end - 1].isspace():
        end -= 1
    offsets = np.array([t.offset for t in gen.tokens])
    lengths = np.array([len(t.token) for t in gen.tokens])
    in_answer = (offsets < end) & (offsets + lengths > start)  # any overlap with the span counts
    logprob = np.array([t.logprob for t in gen.tokens])
    lp_min = logprob[in_answer].min()
    h_max = max(entropy(gen.tokens[i]) for i in np.flatnonzero(in_answer))
    print(f"answer {text[start:end]!r} in characters [{start}, {end}), tokens {np.flatnonzero(in_answer).tolist()}: "
          f"exp(LP_min) = {np.exp(lp_min):.3f}, H_max = {h_max:.3f} nats")
    assert (text[start:end], (start, end)) == (conf.answer, conf.span)
    assert np.flatnonzero(in_answer).tolist() == idx
    assert np.isclose(lp_min, conf.lp_min) and np.isclose(h_max, conf.h_max)
else:
    print("no boxed answer in this reply: nothing to measure, and the gate counts it as uncertain")

# %% [markdown] tags=["book-more"]
# Every generated token with its probability; the answer tokens in black, their labels bold (in
# the panel below, dark grey marks the tokens under the threshold). A confident answer has high
# probability on all of its tokens; one low-probability token is enough to make `exp(LP_min)` small
# and send LASE to its supporters.

# %% tags=["book-more"]
if gen.tokens:
    fig = plots.token_bars([t.token for t in gen.tokens], [math.exp(t.logprob) for t in gen.tokens],
                           set(idx) if conf.answer is not None else set())
    plots.savefig(fig, "quickstart_tokens", live=True)  # a live call: under build/, not figures/
    plt.show()

# %% [markdown] tags=["seminar"]
# **Try the gate.** Move the two sliders, $\tau_{lp}$ and $\tau_h$: the tokens whose probability lies
# below $\tau_{lp}$ turn dark in the bars and are highlighted in the text, and the line above the text says what the
# gate would do. Only the answer tokens (outlined in the bars, underlined in the text) count.

# %% tags=["seminar"]
if gen.tokens:
    display(quickstart.token_panel([t.token for t in gen.tokens], [math.exp(t.logprob) for t in gen.tokens],
                                   idx if conf.answer is not None else [], conf, tau_lp, tau_h))

# %% [markdown] tags=["seminar"]
# **What this shows.** An unsure answer is the case the gate is built for. The opposite case is
# common too: small models are often *confidently wrong*, and a high answer-token probability
# does not guarantee a right answer. Such **confident errors** are what no confidence gate can
# catch; chapter 02 measures how often they happen, and how well the two numbers separate right
# from wrong answers overall.

# %% [markdown] tags=["book-more"]
# **A confidently wrong answer.** The recorded answers of the same model (`data/traces`, no
# model call) hold many answers the gate calls *sure* that are wrong. Here is the first one:

# %% tags=["book-more"]
from lase_nb.runs import load_runs, problems_from_manifest

recorded = load_runs(traces, ["lase"])["lase"]
first = confidence_frame(recorded, stage=0)
sure = ~uncertain_mask(first["p_min"].to_numpy(float), first["h_max"].to_numpy(float), tau_lp, tau_h)
wrong_and_sure = first[sure & first["answered"] & ~first["correct"]]
if len(wrong_and_sure):
    row = wrong_and_sure.iloc[0]
    asked = problems_from_manifest(recorded.manifest).get(row["problem_id"])
    print(f"{asked.question if asked else row['problem_id']}\n  answer {row['answer']} (right: "
          f"{asked.gold if asked else '?'}), exp(LP_min) = {row['p_min']:.3f}, H_max = {row['h_max']:.3f} nats: "
          f"sure, so LASE would output it and never look again")
    print(f"{len(wrong_and_sure)} of the {int((~first['correct']).sum())} wrong first answers in this recording "
          f"pass the gate as sure")

# %% [markdown] tags=["book-more"]
# ## Exercises
#
# Solutions are kept apart, in `notebooks/solutions/00_solutions.py` (run it as a script or open it
# as a notebook); the test suite runs them, so they stay right.
#
# **Exercise 00.1.** The gate escalates an answer when `exp(LP_min)` is below 0.8 **or** `H_max` is
# above 0.5 nats. On the recorded first answers, how many does each test flag on its own, how many
# both, and how many decisions would change if the gate read `exp(LP_min)` alone?
#
# **Exercise 00.2.** Find the least confident right first answer (the lowest `exp(LP_min)` among
# right answers). What did the leader answer, and would the default gate (0.8 / 0.5) escalate it?
