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
# # 4. LASE against the baselines, on the same problems
#
# The paper's headline is that LASE is about as accurate as majority voting and debate while
# spending little more than a single agent. This chapter puts **every strategy on the same
# problems** and measures accuracy with intervals, tokens two ways, and paired tests, with the
# paper's own numbers beside ours, labelled.
#
# **What you will learn**
#
# 1. How the strategies differ in what they call and who reads whom: single agent, majority vote
#    (MV), multi-agent debate (MAD, as Du et al. define it), mixture-of-agents (MoA), DOWN (which
#    gates on its own confidence score), LASE, LASE+MV and LASE with a shuffled supporter order;
#    their sizes and calls per problem are printed from the runs in section 4.0.
# 2. How to read a comparison honestly: Wilson intervals, exact McNemar tests on paired
#    problems, tokens as completion only and as prompt + completion, and multipliers vs the
#    single agent.
# 3. How to compare at **equal compute**: majority vote over the first k of the recorded samples
#    against LASE at thresholds that spend no more.
# 4. Why debate can start behind the single agent before any agent reads another.
# 5. How to set several studies side by side, and test the paper's headline (LASE above the
#    single agent at about its cost, near MV(7) at a fraction of MV's tokens) on one.
#
# **You need** chapters 1 and 3. The chapter reads a study's recorded runs (`traces`: your study,
# or the committed recordings); LASE itself is replayed from its full-chain recording at the chosen
# thresholds (no model call). With `live=True` every strategy is run (through the call cache) on
# `n_problems` problems with the backend you choose. Its logic is `lase_nb/chapters/comparison.py`;
# the comparison table is `lase_nb.runs.comparison_table`, the one every chapter uses.
#
# **The papers' numbers**, the reference column of this chapter. LASE's Table 1 (six data sets,
# Gemini-2.0-Flash and GPT-4.1-mini) has LASE the most accurate or tied on every row, while
# spending on average 1.3x the single agent's tokens (the mean of its 12 rows; section 4.4 sets it
# beside the multipliers of single settings), against 7.1x for MV(7) and 15.7x for MAD(3x2).
# Its side results: LASE+MV(5) edges out MV(7) at about the same tokens; shuffling the supporters'
# order changes accuracy by a fraction of a point; MoA is less accurate than LASE at four times
# its tokens. DOWN reports up to about six times fewer agent calls than always debating, at equal
# or better accuracy. The exact values sit in the tables below, in columns marked "paper".

# %% tags=["parameters"]
backend = "local"  # local | openai | gemini (live runs only)
model = None  # None: the default model of the backend
base_url = None  # an OpenAI-compatible server, for the openai backend
concurrency = None  # API backends: calls in flight (default 8; 1 for a one-slot server)
timeout = None  # API backends: seconds one call may take (default 60)
examples = None  # worked examples per prompt (None: 2 for the embedded model, 0 for API models; 2 helps a small model box its answers)
dataset = "arith"  # live runs: arith (generated) or a paper set loaded from data_path
data_path = None  # file/folder of a paper data set (never shipped)
n_problems = 4  # live runs: problems per strategy
traces = "committed"  # your study (a folder of run folders: lase-full/, single/, mv/, ...), read unless live; "committed": data/traces/arith-smollm2
studies = "auto"  # studies beside it in 4.4 (folders or [label, folder] pairs); auto: the committed ones only when traces is committed; None: none
live = False  # True: run every strategy now (cached) instead of reading the traces
tau_lp = 0.8  # LASE gate: exp(LP_min) below this is uncertain
tau_h = 0.5  # LASE gate: H_max (nats) above this is uncertain
paper_model = "GPT-4.1-mini"  # the row of the paper Table 1 shown beside ours
paper_dataset = "GSM-Symbolic"  # closest paper set to grade-school arithmetic
headline_study = None  # label of the study the paper's headline is tested on in 4.3; None: the second study shown, else the first
max_tokens = None  # live runs: answer token limit (None: library default)
seed = 0
interactive = None  # None: sliders only in a live Jupyter session (never under papermill); True or False forces it

# %%
from dataclasses import asdict

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from lase_nb import plots, reference, runs as run_store, strategies, widgets
from lase_nb.runs import comparison_table
from lase_nb.replay import chains_from_stages, outcomes_at, replay, sweep
from lase_nb.chapters import comparison
from lase_nb.answers import answer_or_none
from lase_nb.confidence import uncertain_mask

plots.set_style()
pd.set_option("display.precision", 3)
pd.set_option("display.max_colwidth", 140)
pd.set_option("display.width", 200)
names = strategies.compared()  # every strategy's record (lase_nb.strategies.SPECS), in display order
interactive = widgets.live_session(interactive)
shown = run_store.chapter_studies(traces, studies, committed=run_store.COMMITTED_STUDIES)

# %% [markdown]
# ## 4.0 The runs, and what each strategy does
#
# Each strategy's run is a table with one row per problem (answer, right or wrong, tokens) and one
# row per call. LASE is recorded as a full chain and replayed at `(tau_lp, tau_h)`. LASE+MV and the
# shuffled-order variant stop at the thresholds they were run with (printed below).
#
# **MAD and DOWN, as their papers define them.** MAD is Du et al.'s debate with 3 agents and 2
# rounds: round 1 is the independent answers, round 2 one round of reading the others. DOWN asks
# one agent first and scores that response by its own confidence, the mean probability of all its
# tokens; only a low score starts a debate, which is DOWN's "two-round refinement": the agents'
# first answers, then two rounds in which each reads the others' answers with their scores, then a
# vote. **DOWN's threshold is chosen, not fixed**: DOWN describes a threshold-selection strategy we
# do not have the text of, so the recording script picks $\theta$ by a stated rule on a calibration
# split of problems the evaluated run never sees: the $\theta$ with the best accuracy there, ties
# going to fewer debates (`replay.choose_down_threshold`). The manifest records $\theta$, the rule
# and the calibration table; the cell below prints them. LASE's gate differs in what it reads (the answer's
# tokens only, lowest probability and highest entropy) and in what it calls (one supporter at a
# time, not a debate); chapter 1 has the long version.
#
# The other strategies: the **single agent** is the leader's first answer; **MV(7)** votes over 7
# independent samples at a temperature; **MoA** has layers of proposers (each later layer reads
# the previous one) and an aggregator that writes the answer; **LASE+MV(5)** votes over 5 LASE
# chains; **LASE, shuffled order** calls the supporters in a random order per problem. The table
# below gives each run's size, and the last line the calls per problem counted from its recording.

# %%
if live:
    from lase_nb.datasets import load_dataset
    from lase_nb.live import live_config, live_engine
    from lase_nb.runner import run_problems

    problem_list = load_dataset(dataset, data_path, n_problems, seed)
    engine = live_engine(backend, model, base_url, concurrency=concurrency, timeout=timeout)
    cfg = live_config(backend, model, examples=examples, tau_lp=tau_lp, tau_h=tau_h, seed=seed, max_tokens=max_tokens)
    runs = {}
    for s in names:
        name, c = strategies.SPECS[s].recording(cfg)  # "lase": the full chain it is replayed from
        res = run_problems(name, problem_list, engine, c, progress=False)
        runs[s] = run_store.run_from_results(res, problem_list, {"backend": engine.backend.name, "model": engine.backend.model,
                                                              "dataset": dataset, "config": asdict(c)})
    missing = []
    print(f"live: {engine.stats.model_calls} model calls, {engine.stats.cache_hits} answered from the cache")
else:
    runs = run_store.load_runs(shown[0].path, names, require=["lase"])
    missing = [s for s in names if s not in runs]
configs = {s: r.manifest.get("config", {}) for s, r in runs.items()}
problems = {p.id: p for p in problem_list} if live else run_store.problems_from_manifest(runs["lase"].manifest, data_path)
kind = next(iter(problems.values())).kind if problems else "number"
print("problems and calls per problem:", ", ".join(f"{s} {r.problems['problem_id'].nunique()} x "
                                                    f"{comparison.calls_per_problem(r.calls):.1f}"
                                                    for s, r in runs.items() if s != "lase"))
if missing:
    print("not recorded (left out of the comparison):", ", ".join(missing))
if "down" in runs and isinstance(runs["down"].manifest.get("down_threshold"), dict):
    display(Markdown(comparison.describe_down(runs["down"].manifest)))
elif "down" in runs:
    print(f"DOWN's theta = {configs['down'].get('down_threshold')} (fixed in this run, not calibrated)")

# %% [markdown]
# **Majority vote and one debate round, by hand.** Both baselines end in the same vote: the most
# frequent answer wins, an unparsed answer does not vote, and a tie goes to the answer whose
# voters were surer on average (their mean `exp(LP_min)`), then to the one seen first. MV votes
# over its independent samples. MAD's first round *is* three independent samples; in its second
# round every agent reads the other two agents' first replies (never its own) and answers again,
# and the vote is over that round. Written out over the recorded calls, then checked against the
# answers the strategies recorded, on every problem. A reply without a box votes with the answer
# its extraction step recovered (the one grading rule of every strategy), or not at all:

# %%
def vote(answers, p_min):
    """The most frequent answer; a tie goes to the higher mean p_min of its voters, then to the first seen."""
    best, best_key = None, None
    for a in dict.fromkeys(x for x in answers if x is not None):  # each answer once, in order of first appearance
        sure = [p for x, p in zip(answers, p_min) if x == a and not np.isnan(p)]
        key = (answers.count(a), np.mean(sure) if sure else -1.0)
        if best_key is None or key > best_key:
            best, best_key = a, key
    return best


def graded(calls):
    """Each answering call with its graded answer: its own box, else what its extraction step
    (the call of role `extract` for the same problem, stage and agent) recovered, with that step's p_min."""
    own = calls[calls["role"] != "extract"].copy()
    ext = calls[calls["role"] == "extract"].drop_duplicates(["problem_id", "stage", "agent"]) \
        .set_index(["problem_id", "stage", "agent"])
    for i, r in own.iterrows():
        key = (r["problem_id"], r["stage"], r["agent"])
        if answer_or_none(r["answer"]) is None and key in ext.index:
            own.loc[i, ["answer", "p_min"]] = [ext.loc[key, "answer"], ext.loc[key, "p_min"]]
    return own


def votes(calls):
    """The vote over each problem's calls, in their recorded order."""
    return {pid: vote([answer_or_none(a) for a in g["answer"]], g["p_min"].to_numpy(float))
            for pid, g in calls.groupby("problem_id", sort=False)}


for s in ("mv", "mad"):
    if s not in runs:
        continue
    calls = graded(runs[s].calls)
    if s == "mad":
        first_round, calls = calls[calls["stage"] == 0], calls[calls["stage"] == calls["stage"].max()]
        for (pid, agent), reads in calls.set_index(["problem_id", "agent"])["reads"].items():
            others = set(first_round.loc[first_round["problem_id"] == pid, "agent"]) - {agent}
            assert sorted(reads) == sorted(others), (pid, agent, reads)  # all-to-all, never itself
    recorded = runs[s].problems.set_index("problem_id")["answer"].map(answer_or_none)
    by_hand = votes(calls)
    assert all(by_hand[pid] == answer_or_none(recorded[pid]) for pid in by_hand), s
    print(f"{s}: the vote written out reproduces the recorded answer on all {len(by_hand)} problems")
if "mad" in runs:
    pid = runs["mad"].problems["problem_id"].iloc[0]
    one = graded(runs["mad"].calls[runs["mad"].calls["problem_id"] == pid])
    for r in one.itertuples():
        print(f"{pid} round {r.stage + 1}, {r.agent} (reads {list(r.reads) or 'nobody'}): {answer_or_none(r.answer)}")
    print(f"MAD's answer is the vote over round 2: {votes(one[one['stage'] == one['stage'].max()])[pid]}")

# %% [markdown]
# ## 4.1 One table, the same problems
#
# All strategies are compared **on the problems every one of them answered** (the baselines
# were recorded on the first problems of the LASE recording's set; a run made on far fewer
# problems gets its own small table, so that it does not shrink this one). Accuracy has a 95% Wilson
# interval (the one interval the package uses for an accuracy, in every chapter); beside it the
# **strict** accuracy, which does not count answers the extraction step supplied. Tokens are per
# problem, **completion only** (what the models wrote) and
# **prompt + completion** (what an API bills; it counts every pasted context again). The
# McNemar tests pair the strategies problem by problem: `+wins/-losses` are the problems this
# strategy got right and the single agent wrong, and the reverse; only they carry information.
#
# Two LASE rows: **LASE** at the chosen thresholds, and **LASE, every stage** (always consulting
# all three supporters: what the gate saves).
#
# **Predict, then run.** On this model, which strategy will be the most accurate, which the most
# expensive, and will the debate (MAD) beat the single agent? The table below answers.

# %%
chains = chains_from_stages(runs["lase"].stages)
lase_now = replay(chains, tau_lp, tau_h)
replayed = {"lase": lase_now, "lase-full": outcomes_at(chains, chains.n_stages - 1)}
tables = {s: replayed[s] if s in replayed else runs[s].problems
          for s in comparison.STRATEGY_ORDER if s in replayed or s in runs}
main, short = comparison.split_by_coverage(tables)  # a run on far fewer problems gets its own table below
table = comparison.main_comparison(tables)  # chapter 07 reads its token ratios from the same table
paper = comparison.paper_reference(paper_model, paper_dataset)
labels = {s: plots.label(s, configs.get(s, configs.get("lase"))) for s in table.index}
shown_table = comparison.comparison_display(table, paper, configs)
shown_table = shown_table.set_index("method")
display(shown_table[["accuracy % [95% CI]", "strict accuracy %", "paper accuracy %", "vs single: +wins/-losses",
                     "McNemar p vs single"]])
shown_table[["avg tokens (completion)", "avg tokens (prompt+completion)", "x single (prompt+completion)",
             "paper multiplier", "paper multiplier, all datasets"]]

# %% [markdown]
# A strategy recorded on far fewer problems than the others (if any) is compared on its own
# problems only, beside the single agent, MV and LASE, so that it does not shrink the main table:

# %%
short_tables = comparison.short_tables(tables, short)
for s, t in short_tables.items():
    print(f"{labels.get(s, s)}: on the {int(t['n'].iloc[0])} problems it shares with the single agent, MV and LASE")
    print(comparison.comparison_display(t, paper, configs)[comparison.SHORT_COLUMNS].to_string(index=False))
if not short_tables:
    print("every strategy was recorded on about as many problems as the others")

# %% [markdown]
# The paper columns are **the paper's numbers**: the Table 1 row chosen by the parameters
# `paper_model` and `paper_dataset` (printed below), and the paper's average multipliers over all
# its data sets. They are a reference for the pattern, not a target: different models, data and
# budgets. Results the paper reports in other settings are listed as text.

# %%
print(f"paper columns: {paper.attrs['row']} (Table 1), from {paper.attrs['source']}")
display(Markdown(comparison.describe_mad_cost(table)))

# %%
fig = comparison.plot_accuracy_vs_tokens(table, paper, labels=labels)
plots.savefig(fig, "comparison_accuracy_tokens")
plt.show()

# %%
display(Markdown(comparison.describe_comparison(tables, table, configs, seed=seed)))

# %% [markdown]
# **Why debate can start behind.** MAD's round-1 agents, MoA's first layer and MV's samples answer
# the single agent's own prompt *sampled* at a temperature, while the single agent decodes
# greedily. How often each first answer is right, graded by its own box (`runs.sampling_gap`),
# before any agent reads another:

# %%
gap = run_store.sampling_gap(runs, problems)
display(Markdown(run_store.describe_sampling_gap(gap)))

# %% [markdown]
# ## 4.2 At equal compute
#
# A fair question to any method that spends more than a single agent: **what would majority
# voting have reached with the same tokens?** The MV run recorded 7 independent samples per
# problem, so the vote over the first k of them is MV(k), for every k, with no new call. LASE is
# replayed on a grid of thresholds; for each MV(k) budget we take the best LASE threshold pair that
# spends no more. That pick is made on the same problems it is scored on, so **the LASE column
# is optimistic**.

# %%
ids = sorted(set.intersection(*(set(tables[s]["problem_id"]) for s in main)))
mv_k = None
if "mv" in runs:
    mv_per = comparison.mv_subsample(runs["mv"].calls, runs["mv"].problems, kind=kind)
    full_k = mv_per[mv_per["k"] == mv_per["k"].max()].set_index("problem_id")["correct"]
    recorded = runs["mv"].problems.set_index("problem_id")["correct"].loc[full_k.index]
    print(f"check: the vote over all {mv_per['k'].max()} samples reproduces the recorded MV result on "
          f"{int((full_k == recorded).sum())} of {len(full_k)} problems")
    mv_k = comparison.mv_curve(mv_per, ids)
grid = sweep(chains.subset(np.isin(chains.problem_ids, ids)),
                      [0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99, 1.0], [0.1, 0.25, 0.5, 1.0, 2.0, np.inf])
matched = comparison.compute_matched(mv_k, grid) if mv_k is not None else pd.DataFrame()
if mv_k is None:
    print("no mv run: the equal-compute comparison is skipped")
matched.set_index("k")[["mv_accuracy", "budget", "lase_accuracy", "lase_tokens", "lase_escalation"]] if len(matched) else matched

# %%
fig = comparison.plot_accuracy_vs_tokens(table, None, mv=mv_k, grid=grid, labels=labels)
fig.axes[0].set_title("Accuracy vs tokens, with MV(k) and LASE at other thresholds")
plots.savefig(fig, "comparison_compute_matched")
plt.show()

# %%
if len(matched):
    display(Markdown(comparison.describe_matched(matched, mv_k, grid)))

# %% [markdown]
# Which of the paper's claims these numbers reproduce, by a rule fixed beforehand, is
# [chapter 07](07_claims.ipynb)'s table; why escalation buys no gain is [chapter 06](06_failure_modes.ipynb)'s.
#
# ## 4.3 Studies side by side
#
# The same comparison for every study in `studies` (chapter 03 introduces the committed ones),
# each on the problems all its main runs share; a study without baselines shows the runs it has
# (the leader alone is stage 0 of its full chains). This section reads recordings, also when
# `live=True`.

# %%
models = run_store.load_studies(shown, names, require=["lase"])
tables_by_model = {m: run_store.strategy_tables(r, tau_lp, tau_h) for m, r in models.items()}
chains_by_model = run_store.chains_by_model(models)
both = comparison.comparison_by_model(tables_by_model)
configs_by_model = {m: {s: r.manifest.get("config", {}) for s, r in rs.items()} for m, rs in models.items()}
display(comparison.comparison_display_by_model(both, configs_by_model).set_index(["model", "method"])[
    ["accuracy % [95% CI]", "x single (prompt+completion)", "vs single: +wins/-losses", "McNemar p vs single"]])
for m, short_runs in both.attrs["short"].items():  # as in 4.1: on their own problems, beside single, MV, LASE
    for s in short_runs:
        print(f"{m}, {plots.label(s, configs_by_model[m].get(s))}: recorded on far fewer problems, left out here")
if len(models) > 1:
    fig = comparison.plot_accuracy_vs_tokens_by_model(both, labels=labels)
    plots.savefig(fig, "comparison_two_models")
    plt.show()

# %% [markdown]
# **Are the baselines answering in their own format?** A model trained for LASE's roles only (the
# committed organisms) answers a strategy's follow-up (MAD's second round, MoA's aggregator, DOWN's
# refinements) with the one habit it has for "read other replies and answer again": LASE's
# revision. Counted per study (`runs.baseline_formats`), a baseline marked not comparable measures
# the training, not the strategy: read LASE against it as **not comparable**, not as a result.

# %%
for m, rs in models.items():
    formats = run_store.baseline_formats(rs)
    display(Markdown(f"**{m}**: " + ("; ".join(f"{s.upper() if s != 'moa' else 'MoA'} not comparable ({w})"
                                              for s, w in run_store.off_format(formats).items())
                                     or "every baseline answers in its own format")))

# %% [markdown]
# ### The paper's headline, tested on a study
#
# The paper's headline is LASE at little more than the single agent's tokens against 7.1x for
# MV(7), at equal or better accuracy. We test it on one study (`headline_study`; by default the
# second shown, the committed pointing organism when nothing else is named) in four parts: gated LASE beats the leader alone
# (the paired bootstrap interval of the gain lies above zero), at no more than 1.5x its tokens
# (prompt + completion), no more than 3 points below MV(7), at no more than a third of MV's
# tokens. Two operating points:
#
# - **recorded**: the default thresholds, fixed before the recording;
# - **budget**: the most accurate thresholds that cost at most 1.5x the leader alone, chosen on one
#   random half of the problems and scored on the other half only, so the choice is never scored
#   on the problems it was chosen on.
#
# The last row is the paper's average multiples, a reference and not a target. The arithmetic is
# against a cheap budget: one escalated stage costs several single answers (the supporter's prompt
# and note, then the revision's prompt), so 1.5x leaves room to escalate only a few problems.

# %%
ORG = headline_study or list(models)[min(1, len(models) - 1)]
org = models[ORG]
print(f"the headline test on {ORG}")
aim = comparison.aim_check(chains_by_model[ORG], org["mv"].problems if "mv" in org else None, tau_lp, tau_h, seed=seed)
comparison.aim_display(aim).T

# %% [markdown]
# Each p-value above is read alone; [appendix A2](A2_statistics.ipynb) runs the organism's
# preregistered family with Holm's method.

# %% [markdown]
# ## Try it yourself
#
# In a live Jupyter session, move LASE's thresholds and watch its row of the comparison move (replayed).

# %% tags=["book-hide"]
if interactive:
    import ipywidgets as widgets

    def explore(tau_lp=tau_lp, tau_h=tau_h):
        t = dict({s: tables[s] for s in main}, lase=replay(chains, tau_lp, tau_h))
        print(comparison.comparison_display(comparison_table(t), None, configs)
              .loc[["single", "lase"] + (["mv"] if "mv" in t else [])].T.to_string())

    widgets.interact(explore, tau_lp=widgets.FloatSlider(value=tau_lp, min=0.0, max=1.0, step=0.05),
                     tau_h=widgets.FloatSlider(value=tau_h, min=0.0, max=3.0, step=0.1))

# %% [markdown]
# ## Exercises
#
# Solutions: `notebooks/solutions/04_solutions.py` (run by the tests).
#
# **Exercise 04.1.** The table tests seven strategies against the single agent. With seven tests at
# alpha = 0.05, how likely is at least one false alarm if no strategy differs (tests taken as
# independent)? Adjust the p-values with Holm's method: does any difference survive?
#
# **Exercise 04.2.** Accuracy per token: rank the strategies by right answers per 1,000 tokens
# (prompt + completion). Which one buys its accuracy most cheaply, and why is that not the same
# as "best"?
#
# **Exercise 04.3.** MAD against LASE, pair by pair: on the problems both ran, how many does each
# get right that the other gets wrong, and what do the exact McNemar test and the paired bootstrap
# interval say?

# %% [markdown]
# ## Summary
#
# - Compare strategies on the same problems, with intervals and paired tests; report tokens both
#   as completion only and as prompt + completion, since contexts pasted into prompts dominate
#   the bill of debate-style methods.
# - Compare at equal compute: majority vote over the first k recorded samples gives the whole
#   MV(k) curve for free, and LASE's threshold replay gives its curve.
# - Majority vote and MAD end in the same vote; MAD's difference is one round in which every
#   agent reads the others (section 4.0 writes both out over the recorded calls).
# - With strong models the paper found LASE about as accurate as voting at a fraction of the
#   tokens; section 4.1 prints, for your study, which strategy differs from the single agent and
#   at what cost, or that it has too few problems to say. A debate whose first round is sampled
#   can start behind a greedy single agent before any agent reads another.
