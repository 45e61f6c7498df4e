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
# **What you will learn**: what each strategy calls and who reads whom (4.0); how to read a
# comparison honestly: Wilson intervals, exact McNemar tests on paired problems, tokens as
# completion only and as prompt + completion (4.1); why debate can start behind the single agent
# (4.1); how to compare at **equal compute** (4.2); studies side by side, and the paper's headline
# tested on one (4.3).
#
# **You need** chapters 1 and 3. The chapter reads a study's recorded runs (`traces`); LASE is
# replayed from its full chain at the chosen thresholds. `live=True` runs every strategy (cached)
# on `n_problems` problems. Code: `lase_nb/chapters/comparison.py`, `lase_nb/tables.py` (`comparison_table`).
#
# **The paper's numbers.** LASE's Table 1 (six data sets, Gemini-2.0-Flash and GPT-4.1-mini) has
# LASE the most accurate or tied on every row at on average **1.3x** the single agent's tokens
# (the mean of its 12 rows), against **7.1x** for MV(7) and **15.7x** for MAD(3x2). LASE+MV(5)
# edges out MV(7) at about the same tokens; shuffling the supporters' order changes accuracy by a
# fraction of a point; MoA is less accurate than LASE at four times its tokens. DOWN reports up to
# about six times fewer agent calls than always debating, at equal or better accuracy.

# %% tags=["parameters"]
backend = "local"  # local | openai | gemini (live runs only)
model = None  # None: the default model of the backend
base_url = None  # an OpenAI-compatible server, for the openai backend
concurrency = None  # API backends: calls in flight (default 8; 1 for a one-slot server)
timeout = None  # API backends: seconds one call may take (default 60)
dtype = None  # local backend: float32, bfloat16 or auto (None: auto, float32 unless the CPU has native bfloat16)
device = "cpu"  # local backend: cpu, cuda, cuda:N, mps or auto (docs/your_model.md, "Your GPU")
examples = None  # worked examples per prompt (None: 2 for the embedded model, 0 for API models; 2 helps a small model box its answers)
dataset = "arith"  # live runs: arith (generated) or a paper set loaded from data_path
data_path = None  # file/folder of a paper data set (never shipped)
n_problems = 4  # live runs: problems per strategy
traces = "committed"  # your study (a folder of run folders: lase-full/, single/, mv/, ...), read unless live; "committed": data/traces/arith-smollm2
studies = "auto"  # studies beside it in 4.3 (folders or [label, folder] pairs); auto: the committed ones only when traces is committed; None: none
live = False  # True: run every strategy now (cached) instead of reading the traces
tau_lp = 0.8  # LASE gate: exp(LP_min) below this is uncertain
tau_h = 0.5  # LASE gate: H_max (nats) above this is uncertain
paper_model = "GPT-4.1-mini"  # the row of the paper Table 1 shown beside ours
paper_dataset = "GSM-Symbolic"  # closest paper set to grade-school arithmetic
price = "gpt-4.1-mini"  # a model of data/prices.json: 4.1's costs in dollars at its list price; None: tokens only
headline_study = None  # label of the study the paper's headline is tested on in 4.3; None: the second study shown, else the first
max_tokens = None  # live runs: answer token limit (None: library default)
seed = 0
interactive = None  # None: sliders only in a live Jupyter session (never under papermill); True or False forces it

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from lase_nb import costs, plots, reference, runs as run_store, strategies
from lase_nb.book import widgets
from lase_nb.tables import (baseline_formats, comparison_table, describe_sampling_gap, main_comparison, off_format,
                            sampling_gap, split_by_coverage, strategy_tables)
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
# Each run has one row per problem and one per call. LASE is replayed at `(tau_lp, tau_h)`;
# LASE+MV and the shuffled order stop at the thresholds they were run with. **Single agent**: the
# leader's first answer. **MV(7)**: a vote over 7 samples at a temperature. **MAD** (Du et al.):
# 3 agents, 2 rounds (independent answers, then one round reading the others). **MoA**: layers of
# proposers, each reading the previous layer, and an aggregator. **LASE+MV(5)**: a vote over 5
# LASE chains; **shuffled**: the supporters in a random order per problem.
#
# **DOWN** asks one agent and scores the response by the mean probability of *all* its tokens
# (LASE reads only the answer's tokens); only a low score starts DOWN's "two-round refinement"
# (the agents' first answers, then two rounds each reading the others' answers with their scores,
# then a vote). DOWN's threshold-selection text is not available to us, so the recording picks
# $\theta$ by a stated rule on a calibration split the evaluated run never sees: the best accuracy
# there, ties to fewer debates (`replay.choose_down_threshold`); the cell prints $\theta$ and the
# calls per problem of each run.

# %% tags=["book-hide-input"]
if live:
    from lase_nb.live import live_runs

    runs, problems = live_runs(names, backend=backend, model=model, base_url=base_url, concurrency=concurrency,
                               timeout=timeout, dtype=dtype, device=device, examples=examples, dataset=dataset, data_path=data_path,
                               n_problems=n_problems, seed=seed, tau_lp=tau_lp, tau_h=tau_h, max_tokens=max_tokens)
    missing = []
else:
    runs = run_store.load_runs(shown[0].path, names, require=["lase"])
    missing = [s for s in names if s not in runs]
    problems = run_store.problems_from_manifest(runs["lase"].manifest, data_path)
configs = {s: r.manifest.get("config", {}) for s, r in runs.items()}
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

# %% [markdown] tags=["book-more"]
# **Majority vote and one debate round, by hand.** The most frequent answer wins; an unparsed
# answer does not vote; a tie goes to the answer whose voters were surer (mean `exp(LP_min)`), then
# to the first seen. MAD's second round has every agent read the other two first replies (never
# its own), and votes over that round. Written out over the recorded calls and checked against
# the recorded answers (a reply without a box votes with what its extraction step recovered):

# %% tags=["book-more"]
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
# All strategies are compared **on the problems every one answered** (a run on far fewer problems
# gets its own small table). Accuracy has a 95% Wilson interval; **strict** accuracy does not
# count answers the extraction step supplied. Tokens per problem are **completion only** and
# **prompt + completion** (what an API bills). McNemar pairs each strategy with the single agent:
# `+wins/-losses` are the problems only one of them got right. **LASE, every stage** forces all
# three supporters (what the gate saves).
#
# **Predict, then run.** Which strategy will be the most accurate, which the most expensive, and
# will MAD beat the single agent?

# %%
chains = chains_from_stages(runs["lase"].stages)
lase_now = replay(chains, tau_lp, tau_h)
replayed = {"lase": lase_now, "lase-full": outcomes_at(chains, chains.n_stages - 1)}
tables = {s: replayed[s] if s in replayed else runs[s].problems
          for s in comparison.STRATEGY_ORDER if s in replayed or s in runs}
main, short = split_by_coverage(tables)  # a run on far fewer problems gets its own table below
table = main_comparison(tables)  # chapter 07 reads its token ratios from the same table
paper = comparison.paper_reference(paper_model, paper_dataset)
labels = {s: plots.label(s, configs.get(s, configs.get("lase"))) for s in table.index}
shown_table = comparison.comparison_display(table, paper, configs)
shown_table = shown_table.set_index("method")
display(shown_table[["accuracy % [95% CI]", "strict accuracy %", "paper accuracy %", "vs single: +wins/-losses",
                     "McNemar p vs single"]])
shown_table[["avg tokens (completion)", "avg tokens (prompt+completion)", "x single (prompt+completion)",
             "paper multiplier", "paper multiplier, all datasets"]]

# %% [markdown]
# A strategy recorded on far fewer problems (if any), on its own problems:

# %%
short_tables = comparison.short_tables(tables, short)
for s, t in short_tables.items():
    print(f"{labels.get(s, s)}: on the {int(t['n'].iloc[0])} problems it shares with the single agent, MV and LASE")
    print(comparison.comparison_display(t, paper, configs)[comparison.SHORT_COLUMNS].to_string(index=False))
if not short_tables:
    print("every strategy was recorded on about as many problems as the others")

# %% [markdown]
# The paper columns are **the paper's numbers** (the Table 1 row of `paper_model` and
# `paper_dataset`, and its average multipliers): a reference for the pattern, not a target.

# %% tags=["book-more"]
print(f"paper columns: {paper.attrs['row']} (Table 1), from {paper.attrs['source']}")
display(Markdown(comparison.describe_mad_cost(table, {s: runs[s].calls for s in ("mad", "mv") if s in runs})))

# %%
fig = comparison.plot_accuracy_vs_tokens(table, paper, labels=labels)
plots.savefig(fig, "comparison_accuracy_tokens")
plt.show()

# %%
display(Markdown(comparison.describe_comparison(tables, table, configs, seed=seed)))

# %% [markdown] tags=["book-more"]
# **Why debate can start behind.** MAD's round-1 agents, MoA's first layer and MV's samples answer
# the single agent's own prompt *sampled* at a temperature, while the single agent decodes
# greedily. How often each first answer is right, graded by its own box (`tables.sampling_gap`),
# before any agent reads another:

# %% tags=["book-more"]
gap = sampling_gap(runs, problems)
display(Markdown(describe_sampling_gap(gap)))

# %% [markdown] tags=["book-more"]
# **In dollars.** An API bills tokens, and bills input it has cached (a prompt prefix it saw in an
# earlier call) at a lower rate. At the list price of `price` (`data/prices.json`, with its source
# and date; edit it for yours), each strategy's cost per 1,000 problems: every input token at the
# full rate, then cached input at the cached rate. Cached input is what the provider reports where
# it does, else estimated as the prompt prefix a call shares with an earlier call of the same
# problem; a provider caches only prefixes of a minimum length (OpenAI: 1,024 tokens), so the last
# column says what a cache of any prefix would save. Gated LASE's calls are those its gate makes.

# %% tags=["book-more"]
if price:
    # each row's calls as billed (lase-nb report's too): gated LASE's are those its gate makes, LASE every stage all
    billed = costs.billed_calls({s: r for s, r in runs.items() if s in table.index}, lase_now)
    dollars = costs.dollar_comparison(billed, costs.price_for(price), labels)
    display(Markdown(costs.describe_dollars(dollars)))
    display(dollars)
else:
    print("price is None: costs are shown in tokens only (the table above)")

# %% [markdown]
# ## 4.2 At equal compute
#
# **What would majority voting reach with the same tokens?** The MV run recorded 7 samples per
# problem, so the vote over the first k is MV(k), with no new call. For each MV(k) budget we take
# the best LASE threshold pair that spends no more, picked on the problems it is scored on, so
# **the LASE column is optimistic**.

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
# each on the problems its main runs share. This section reads recordings, also when `live=True`.

# %% tags=["book-more"]
models = run_store.load_studies(shown, names, require=["lase"])
tables_by_model = {m: strategy_tables(r, tau_lp, tau_h) for m, r in models.items()}
chains_by_model = run_store.chains_by_model(models)
both = comparison.comparison_by_model(tables_by_model)
configs_by_model = {m: {s: r.manifest.get("config", {}) for s, r in rs.items()} for m, rs in models.items()}
display(comparison.comparison_display_by_model(both, configs_by_model).set_index(["model", "method"])[
    ["accuracy % [95% CI]", "x single (prompt+completion)", "vs single: +wins/-losses", "McNemar p vs single"]])
for m, short_runs in both.attrs["short"].items():  # as in 4.1: on their own problems, beside single, MV, LASE
    for s in short_runs:
        print(f"{m}, {plots.label(s, configs_by_model[m].get(s))}: recorded on far fewer problems, left out here")

# %%
if len(models) > 1:  # the table above, drawn (the book shows the figure and keeps the table under "More")
    fig = comparison.plot_accuracy_vs_tokens_by_model(both, labels=labels, not_comparable={
        m: off_format(baseline_formats(rs)) for m, rs in models.items()})
    plots.savefig(fig, "comparison_two_models")
    plt.show()

# %% [markdown]
# **Are the baselines answering in their own format?** A model trained for LASE's roles only
# answers a baseline's follow-up (MAD's second round, MoA's aggregator, DOWN's refinements) with
# LASE's revision. Such a baseline measures the training, not the strategy: it is drawn hollow
# above, and LASE against it is **not comparable**, not a result (`tables.baseline_formats`).

# %%
for m, rs in models.items():
    formats = baseline_formats(rs)
    display(Markdown(f"**{m}**: " + ("; ".join(f"{s.upper() if s != 'moa' else 'MoA'} not comparable ({w})"
                                              for s, w in off_format(formats).items())
                                     or "every baseline answers in its own format")))

# %% [markdown]
# ### The paper's headline, tested on a study
#
# The headline in four parts, on one study (`headline_study`; by default the second shown): gated
# LASE beats the leader alone (paired bootstrap interval above zero), at no more than 1.5x its
# tokens, no more than 3 points below MV(7), at no more than a third of MV's tokens. Two operating
# points: **recorded** (the default thresholds) and **budget** (the most accurate thresholds at
# most 1.5x the leader alone, chosen on one random half, scored on the other). The last row is the
# paper's average multiples. One escalated stage costs several single answers, so 1.5x leaves
# room to escalate only a few problems.

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
    import ipywidgets

    def explore(tau_lp=tau_lp, tau_h=tau_h):
        t = dict({s: tables[s] for s in main}, lase=replay(chains, tau_lp, tau_h))
        print(comparison.comparison_display(comparison_table(t), None, configs)
              .loc[["single", "lase"] + (["mv"] if "mv" in t else [])].T.to_string())

    ipywidgets.interact(explore, tau_lp=ipywidgets.FloatSlider(value=tau_lp, min=0.0, max=1.0, step=0.05),
                        tau_h=ipywidgets.FloatSlider(value=tau_h, min=0.0, max=3.0, step=0.1))

# %% [markdown] tags=["book-more"]
# ## Exercises
#
# Solutions: `notebooks/solutions/04_solutions.py` (run by the tests).
#
# **Exercise 04.1.** The table tests every other strategy against the single agent, one test per
# row. With that many tests at alpha = 0.05, how likely is at least one false alarm if no strategy
# differs (tests taken as independent)? Adjust the p-values with Holm's method: does any difference survive?
#
# **Exercise 04.2.** Compute matched, pair by pair. How many of MV's recorded samples does LASE's
# average token count buy (MV's tokens per sample on these problems)? Vote over that many
# (`comparison.mv_subsample`, the first k samples of each problem) and test MV(k) against LASE on the
# same problems with the exact McNemar test and the paired interval: at equal compute, which is
# ahead, and can the test tell?
#
# **Exercise 04.3.** MAD against LASE, pair by pair: on the problems both ran, how many does each
# get right that the other gets wrong, and what do the exact McNemar test and the paired bootstrap
# interval say?

# %% [markdown]
# ## Summary
#
# - Compare strategies on the same problems, with intervals and paired tests, and report tokens
#   both ways: a prompt bills every pasted context again.
# - Compare at equal compute: MV(k) comes free from the recorded samples, LASE's curve from replay.
# - MV and MAD end in the same vote; MAD adds one round of reading the others.
# - Section 4.1 prints which strategy differs from the single agent on your study, and at what
#   cost, or that it has too few problems to say; 4.3 does so per study.
