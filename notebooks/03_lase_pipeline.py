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
# # 3. The LASE pipeline, one stage at a time
#
# LASE gives one model four roles. A **leader** answers alone; only while its answer-token
# confidence says it is unsure does it call, one at a time, a **devil's advocate**, a
# **collaborator** and a **senior expert**, and revise after each. This chapter opens real
# transcripts of that pipeline, follows one problem from the leader's first answer to the stage
# where LASE stops, then a whole batch, and sorts each model into a **regime**.
#
# **Two kinds of model.** The embedded SmolLM2-135M is the default model: weak, real, and unable to
# correct itself. Beside it the project trained **model organisms**: the same 135M model with a LoRA
# adapter (`data/organism/`) taught, on problems disjoint from every evaluated one, to solve one
# step per line and, as a supporter, to find the leader's errors. The **pointing organism (v5)**
# keeps the paper's rule: its notes check each step by its inverse operation and name the step that
# fails, never its value. The **telling organism (v4)**, an earlier adapter, often writes the right
# value into its note, the answer included, which the paper's prompts forbid (section 3.5 shows
# why that matters). Both were trained for LASE's roles only. Every later chapter uses these names;
# `data/organism/README.md` has the recipes.
#
# **What you will learn**
#
# 1. What each role is told and sees (the prompts, exactly as the code sends them) and how often a
#    call runs out of tokens.
# 2. How the gate works on a real chain: $\exp(\mathrm{LP}_{\min})$ and $H_{\max}$ after every
#    stage, the thresholds, and where LASE stops.
# 3. How often LASE escalates, where it stops, what it costs and what it changes, on a batch.
# 4. The three **regimes** (corrective, neutral, destructive), defined once here, and which one each
#    model is in; the organism's supporters point at the right step and its leader mostly fails to
#    act on the pointer.
# 5. Why supporters must not give answers (telling vs pointing), and how many cross-agent context
#    inclusions LASE makes, counted from the transcripts.
#
# **You need** chapter 1 (the gate $U$, the star topology); chapter 2 helps. By default the chapter
# reads **recorded full chains** (every stage of every chain recorded once, so any thresholds can
# be replayed with no model call). With `live=True` it runs LASE itself on `n_problems` problems,
# e.g. `papermill 03_lase_pipeline.ipynb out.ipynb -p live True -p backend openai -p model gpt-4.1-mini`.
#
# **Deep dives**: [appendix A1](A1_bound.ipynb) measures Theorem 3.7's terms ($P(U=1)$, $\rho$,
# $\delta$, A3) and the preregistered prediction; [appendix A3](A3_live.ipynb) writes one LASE
# episode from scratch and runs it live. The logic lives in `lase_nb/chapters/pipeline.py`,
# transcripts in `lase_nb/transcripts.py`, regimes in `lase_nb/regimes.py`.

# %% tags=["parameters"]
backend = "local"  # local | openai | gemini (live runs only)
model = None  # None: the default model of the backend
base_url = None  # an OpenAI-compatible server, for the openai backend
concurrency = None  # API backends: calls in flight (default 8; 1 for a one-slot server)
timeout = None  # API backends: seconds one call may take (default 60)
examples = None  # worked examples per prompt (None: 2 for the embedded model, 0 for API models; 2 helps a small model box its answers)
dataset = "arith"  # live runs: arith (generated) or a paper set loaded from data_path
data_path = None  # file/folder of a paper data set (never shipped)
n_problems = 4  # live runs: problems to run
traces = "committed"  # your study (a folder holding lase-full/), read unless live; "committed": data/traces/arith-smollm2
studies = "auto"  # studies beside it in 3.4 and 3.5 (folders or [label, folder] pairs); auto: the committed ones only when traces is committed; None: none
control_traces = "auto"  # two studies of the same problems (a folder of study folders), compared in 3.4; None: skip
live = False  # True: run LASE now (full chain, cached) instead of reading the traces
tau_lp = 0.8  # gate: exp(LP_min) below this is uncertain
tau_h = 0.5  # gate: H_max (nats) above this is uncertain
max_tokens = None  # live runs: leader token limit (None: library default)
seed = 0
interactive = None  # None: sliders only in a live Jupyter session (never under papermill); True or False forces it

# %%
from dataclasses import asdict

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from lase_nb import plots, prompts, runs as run_store, widgets
from lase_nb import regimes, transcripts
from lase_nb.chapters import correct_seeds, pipeline
from lase_nb.replay import chains_from_stages, replay

plots.set_style()
pd.set_option("display.precision", 3)
pd.set_option("display.max_colwidth", 120)
interactive = widgets.live_session(interactive)
shown = run_store.chapter_studies(traces, studies, committed=run_store.COMMITTED_STUDIES)

# %% [markdown]
# ## 3.0 The data: recorded full chains, or a live run
#
# Either way we end up with the same three tables: one row per problem, per call and per stage.
# The run is a **full chain**: every stage was run whatever the gate said, and the calls past
# LASE's stop are kept apart (`used == False`), so that any thresholds can be replayed.

# %%
if live:
    from lase_nb.datasets import load_dataset
    from lase_nb.live import live_config, live_engine
    from lase_nb.runner import run_problems

    problem_list = load_dataset(dataset, data_path, n_problems, seed)
    engine = live_engine(backend, model, base_url, concurrency=concurrency, timeout=timeout)
    cfg = live_config(backend, model, examples=examples, tau_lp=tau_lp, tau_h=tau_h, seed=seed, max_tokens=max_tokens, full_chain=True)
    results = run_problems("lase", problem_list, engine, cfg, progress=False)
    run = run_store.run_from_results(results, problem_list, {
        "backend": engine.backend.name, "model": engine.backend.model, "dataset": dataset, "n": len(problem_list),
        "seed": seed, "config": asdict(cfg)})
    problems = {p.id: p for p in problem_list}
    print(f"live run: {engine.stats.model_calls} model calls, {engine.stats.cache_hits} from the cache")
else:
    runs = run_store.load_runs(shown[0].path, ["lase", "mad"], require=["lase"])  # older recordings get the new columns
    run = runs["lase"]
    problems = run_store.problems_from_manifest(run.manifest, data_path)
chains = chains_from_stages(run.stages)
kind = next(iter(problems.values())).kind if problems else "number"
print(f"{run.manifest.get('backend')}:{run.manifest.get('model')} on {run.manifest.get('dataset')}, "
      f"{len(chains.problem_ids)} problems, {chains.n_stages} stages each; gate: exp(LP_min) < {tau_lp} or "
      f"H_max > {tau_h} nats")

# %% [markdown]
# ## 3.1 Four roles, one model
#
# All four roles are the same model with different instructions. **The supporters never give the
# answer**: the paper's prompts (Appendix D) tell them "Do NOT give the final answer" and "Do NOT
# provide your own answer"; they critique, hint and explain. A note that hands over the answer
# would let the leader copy it, and the leader's confidence would then measure the copy rather
# than its own reasoning. Two checks keep the rule visible: a supporter's `\boxed{}` is removed
# before the leader reads the note (replaced by a placeholder, and counted), and a note that
# states the final answer in words is **counted, never filtered** (section 3.5): what a
# supporter writes is what the leader reads, so the model must obey the rule it is shown.
#
# Our instructions are in our own words. The table sets each one, exactly as the code sends it
# (`lase_nb.prompts`), beside the paper's intent for that role, and names where we differ: the
# answer-extraction step and the worked examples are ours, not the paper's.

# %%
pipeline.prompt_table()

# %% [markdown]
# **Token caps and the extraction step.** A response cut off at its token cap usually has no
# boxed answer. When a leader's response has none, the pipeline asks once for the final answer
# alone (the extraction step, its own call, counted in the tokens) and the gate reads that
# answer's tokens; *strict* grading ignores what the step supplied. Per role, over every
# recorded call (look at the `hit_cap` column, and at the `extract` row: how often a revision
# boxes no answer of its own):

# %%
caps = pipeline.role_calls(run.calls)
caps


# %% [markdown]
# ## 3.2 One problem, stage by stage
#
# We pick the problem to walk through **by rule, not by hand** (`pipeline.pick_walkthrough`): one
# where a supporter's note leads the leader to change its answer within the stages LASE runs at the
# chosen thresholds, preferably from wrong to right, else from right to wrong, else any change;
# failing that, any escalated problem.

# %%
pid = pipeline.pick_walkthrough(chains, tau_lp, tau_h)
change = pipeline.walkthrough_change(chains, pid, tau_lp, tau_h)
problem = problems.get(pid)
walk = pipeline.stage_table(run.stages, pid, tau_lp, tau_h)
stop = int(np.flatnonzero(walk["lase"].to_numpy() == "stops here")[0])
gold = problem.gold if problem else str(run.problems.set_index("problem_id").loc[pid, "gold"])
print(f"problem {pid}:", problem.prompt_text() if problem else "(question text unavailable)")
print(f"gold answer: {gold}")
walk

# %%
fig = pipeline.plot_stage_walk(walk, tau_lp, tau_h, title=f"Problem {pid}: the leader after each stage")
plots.savefig(fig, "pipeline_stage_walk")
plt.show()

# %%
display(Markdown(pipeline.describe_walk(walk, change)))

# %% [markdown]
# The transcript behind the figure. Each call shows what it read, its token count, and for the
# leader the boxed answer, its confidence and the gate's verdict. Supporters' boxed answers, if
# any, are marked `⟦LEAK ...⟧`: the leader saw `[answer withheld]` in their place. Calls after
# LASE's stop were recorded only so that other thresholds can be replayed. Long texts are clipped.
# Then, for contrast, the typical escalated chain: the one whose revisions most often box no
# answer of their own (the first such by problem id, `pipeline.pick_unboxed`), the typical failure
# of a small model (texts clipped harder).

# %%
entries = transcripts.transcript_entries(run.calls, pid, stop_stage=stop, tau_lp=tau_lp, tau_h=tau_h, gold=gold,
                                         kind=kind)
display(Markdown(transcripts.render_transcript(entries, max_chars=600)))

typical = pipeline.pick_unboxed(chains, tau_lp, tau_h)
if typical is None:
    print("nothing escalates at these thresholds")
elif typical == pid:
    print("the walkthrough above is already the typical escalated chain")
else:
    t_gold = problems[typical].gold if typical in problems else None
    t_stop = int(replay(chains, tau_lp, tau_h).set_index("problem_id").loc[typical, "stop_stage"])
    print(f"problem {typical}:", problems[typical].prompt_text() if typical in problems else "", f"(gold {t_gold})")
    display(Markdown(transcripts.render_transcript(transcripts.transcript_entries(
        run.calls, typical, stop_stage=t_stop, tau_lp=tau_lp, tau_h=tau_h, gold=t_gold, kind=kind), max_chars=250)))
    n_unboxed = int(pipeline.unboxed_revisions(chains)[list(chains.problem_ids).index(typical)])
    print(f"{n_unboxed} of its {chains.n_stages - 1} revisions box no answer of their own")

# %% [markdown]
# [Appendix A3](A3_live.ipynb) shows the exact messages each role received in this chain, writes
# the loop from scratch in a dozen lines and runs it live on the problem above, beside the package.

# %% [markdown]
# ## 3.3 The batch: where LASE stops, what it costs, what it changes
#
# Replaying the gate on every recorded chain gives LASE's behaviour on the whole batch at the
# chosen thresholds, with no model call.
#
# **Predict, then run.** At 0.8 / 0.5, what share of the problems will LASE escalate, at which
# stage will the escalated ones stop, and will escalating raise or lower this model's accuracy?
# The next cell replays the gate on every chain and answers.

# %%
dist = pipeline.stop_distribution(chains, tau_lp, tau_h)
per_stage = pipeline.stage_confidence(chains, tau_lp, tau_h)
lase = replay(chains, tau_lp, tau_h)
display(dist)
display(per_stage)

# %%
fig = pipeline.plot_batch(dist, per_stage)
plots.savefig(fig, "pipeline_batch")
plt.show()

# %% [markdown]
# **What the gate reads after escalation.** When a revision boxes no answer, the extraction step
# asks for the answer alone and the gate reads *that* call's answer tokens (the recording keeps
# which call, `gate_call`, for every stage):

# %%
pipeline.gate_reads(chains)

# %% [markdown]
# The gate reads the leader's own box on its first answers, and on almost every revision the
# extraction step's: after escalation it mostly gates on how sure the model is when asked for the
# answer alone, not on its revision.

# %%
display(pipeline.outcome_flips(chains, tau_lp, tau_h))
display(Markdown(pipeline.describe_batch(chains, tau_lp, tau_h)))

# %% [markdown]
# **What it shows.** At the default thresholds (0.8 / 0.5, inferred from the paper, which states no
# defaults) the gate escalates a minority of this model's problems, and the revisions do not pay
# for themselves: they rescue almost nothing and now and then talk the leader out of a right
# answer, so LASE ends no better than the leader alone at several times its tokens, and forcing
# every stage is far worse. Section 3.4 gives this a name. (The paper's own escalation rates per
# threshold, its Table 5, are in chapter 05, section 5.4.)

# %% [markdown]
# ## 3.4 Three regimes, and where each model sits
#
# One recording of full chains answers two questions, each by a paired test against the leader
# alone on the same problems: does **gated LASE** gain, and does **always-interact** (every stage
# forced) lose? Chapter 01's theory names the outcomes, and the rest of the collection uses the names:
#
# - **corrective**: gated LASE gains by both the exact McNemar test and the paired bootstrap
#   interval: the supporters hand the leader a correct seed often enough, and it uses it;
# - **destructive**: always-interact loses by both tests: reading notes makes the leader worse;
# - **neutral**: neither clears: escalation fixes and breaks about as many answers.
#
# **Predict, then run.** The organisms were trained to review; the embedded model was not. Which
# regime do you expect for each?

# %%
both = run_store.load_studies(shown, ["lase"], require=["lase"])
model_chains = run_store.chains_by_model(both)
display(regimes.regime_table(model_chains, tau_lp, tau_h, seed=seed))
display(Markdown(regimes.describe_regime(regimes.gain_regime(model_chains[next(iter(model_chains))], tau_lp, tau_h,
                                                             seed=seed), full=True)))

# %% [markdown]
# The three recordings hold different problems (the embedded model's level-1 problems of one seed,
# the organisms' levels 1 to 3), so compare regimes, not accuracies. **On the same problems**
# (`control_traces`: both the embedded model and the pointing organism on the same 80 level-1
# held-out problems; the embedded model with its two worked examples, which it needs to box an
# answer, the organism zero-shot) the difference of the two gains is tested problem by problem:

# %%
control = run_store.control_studies(control_traces, traces)
if not control:
    print("no control (control_traces is None, or you named your own traces): skipped")
else:
    control_chains = run_store.chains_by_model(run_store.load_studies(control, ["lase"], require=["lase"]))
    labels = list(control_chains)
    same = regimes.compare_gains(*control_chains.values(), tau_lp, tau_h, seed=seed)
    display(regimes.control_table(same, *labels))
    display(Markdown(regimes.describe_control(same, *labels)))

# %% [markdown]
# **The pointing organism, stage by stage: a note that fixes a wrong answer.** Section 3.2 walked
# the embedded model through one problem; here is the same walk on the pointing organism, picked by
# rule (`correct_seeds.pick_fix`): the first problem whose leader was wrong alone, where a note the
# leader read holds a correct seed (appendix A1 defines it), and where LASE ends right, a fix by the
# paper's rule (no note states the answer) taken before a told one. Fixes like this exist; chapter
# 06 ends with why, on the whole, they do not add up to a gain.

# %%
org = shown[1].label if len(shown) > 1 else None  # the first study beside yours (the pointing organism by default)
if org in both:
    o_run, o_chains = both[org]["lase"], model_chains[org]
    o_problems = run_store.problems_from_manifest(o_run.manifest)
    o_pid = correct_seeds.pick_fix(correct_seeds.seed_table(o_chains, o_run.calls, o_problems, tau_lp, tau_h))
    if o_pid is None:
        print(f"{org}: no escalated problem has a seed that LASE turned into a right answer at these thresholds")
    else:
        o_walk = pipeline.stage_table(o_run.stages, o_pid, tau_lp, tau_h)
        o_change = pipeline.walkthrough_change(o_chains, o_pid, tau_lp, tau_h)
        print(f"{org}, problem {o_pid}:", o_problems[o_pid].prompt_text(), f"(gold {o_problems[o_pid].gold})")
        fig = pipeline.plot_stage_walk(o_walk, tau_lp, tau_h, title=f"{org}, problem {o_pid}: the leader after "
                                       "each stage")
        plots.savefig(fig, "pipeline_stage_walk_organism")
        plt.show()
        display(Markdown(pipeline.describe_walk(o_walk, o_change)))
        display(Markdown(transcripts.render_transcript(transcripts.transcript_entries(
            o_run.calls, o_pid, stop_stage=o_change["stop"], tau_lp=tau_lp, tau_h=tau_h, gold=o_problems[o_pid].gold,
            kind=kind), max_chars=900)))
else:
    print("no study beside yours (studies): the second walk-through is skipped")

# %% [markdown]
# ## 3.5 Supporters that give the answer away
#
# Two counts per supporter, over all recorded calls (a leak is a property of the transcript,
# whether or not LASE at these thresholds made the call): the notes that wrote `\boxed{}`
# (`calls_with_leak`; the box was removed before the leader read the note), and the notes that
# **state the final answer** (`states_answer` of `notes_on_wrong`): the gold answer appears in a
# note on a wrong attempt as a number that is in neither the problem nor the attempt the note read
# (`lase_nb.notes.states_answer`; step labels do not count). On a right attempt that count could
# never fire (the attempt holds the answer), so there the table counts what can go wrong instead
# (`other_value_on_right` of `notes_on_right`): a note that announces another final value, or
# whose new number the leader then boxes (`lase_nb.notes.states_other_value`). A box is replaced
# before the leader reads the note; a stated answer reaches the leader as written. The paper
# reports neither rate; it only states the rule.

# %%
leaks = pipeline.leak_table(run.calls, problems=problems, stages=run.stages)
leaks

# %% [markdown]
# ### Telling vs pointing: what the paper's rule is for
#
# The paper's supporters are told "Do NOT give the final answer" (its Appendix D): a supporter that
# hands over the answer turns LASE into copying, and a gain measured that way says nothing about
# whether a leader can be *helped to find* its error. The two organisms of this chapter's opening
# differ in exactly this: the telling organism (v4) hands over values, the pointing organism (v5)
# names the failing step ("Step 2 fails: redo it"). Below, each one's gated LASE at (tau_lp, tau_h): the
# fixes (the leader alone wrong, LASE right) split into *told* (a note the leader read up to its
# stop stated the answer) and *pointed* (none did), the breaks, and the share of notes on wrong
# attempts that state the answer.

# %%
rule_runs = {s.label: run_store.load_runs(s.path, ["lase"])["lase"] for s in shown[1:]}  # the studies beside yours
if rule_runs:
    rule_problems = {label: run_store.problems_from_manifest(r.manifest) for label, r in rule_runs.items()}
    by_rule = pipeline.telling_vs_pointing(rule_runs, rule_problems, tau_lp, tau_h)
    display(by_rule)
    display(Markdown("\n".join(
        f"- **{label}**: {int(r.fixed)} fixes on {int(r.n)} problems, {int(r.fixed_told)} of them after a note that "
        f"stated the answer; {int(r.broken)} broken; {r.stating_share:.0%} of its notes on wrong attempts state the answer."
        for label, r in by_rule.iterrows())))
else:
    print("no study beside yours (studies): the comparison is skipped")

# %% [markdown]
# Read the two rows together: a gain whose fixes are mostly *told* is the supporters solving the
# problem for the leader, which the paper's prompts forbid. The pointing organism's fixes are the
# kind the paper's mechanism claims, a leader that redoes the step it was pointed at; chapter 06
# ends with why they are too few to make a gain.

# %% [markdown]
# ## 3.6 Who reads whom: inclusions counted from the transcripts
#
# An *inclusion* is one agent's message pasted into another agent's context. Every call records
# the agents it read (`reads`), so we count them rather than trusting the formula. For LASE we
# count only the calls it makes at these thresholds, and split them into **star** inclusions
# (a supporter reads the leader's attempt, the leader reads the supporter's note: at most
# $2kT$ with $k=1$ peer per stage and $T=3$ stages) and **relays** (the collaborator and the expert
# also read the earlier critique and hints, at most $T(T-1)/2$ more). If the traces folder holds
# a MAD run, its all-to-all debate is counted beside it: exactly $Tn(n-1)$.

# %%
stops = dict(zip(lase["problem_id"], lase["stop_stage"]))
counts = [pipeline.inclusion_counts(run.calls, stops)]
configs = {"lase": run.manifest.get("config", {})}
if not live and "mad" in runs:
    counts.append(pipeline.inclusion_counts(runs["mad"].calls))
    configs["mad"] = runs["mad"].manifest.get("config", {})
counts = pd.concat(counts, ignore_index=True)
inclusions = pipeline.inclusion_summary(counts, configs)
inclusions

# %%
fig = pipeline.plot_inclusions(inclusions, {s: plots.label(s, configs.get(s)) for s in configs})
plots.savefig(fig, "pipeline_inclusions")
plt.show()

# %% [markdown]
# **What it shows.** LASE makes few inclusions per problem on average: none where the leader
# is confident at once, and on no problem more than the star bound plus the relays. MAD's count is
# exactly its formula on every problem. LASE's count does not depend on how many agents exist;
# all-to-all debate's grows with their square (chapter 1 draws both curves).

# %% [markdown]
# ## Try it yourself
#
# In a live Jupyter session, move the thresholds and watch the stop-stage distribution and the
# cost change, replayed from the same recording.

# %% tags=["book-hide"]
if interactive:
    import ipywidgets as widgets

    def explore(tau_lp=tau_lp, tau_h=tau_h):
        d = pipeline.stop_distribution(chains, tau_lp, tau_h)
        r = replay(chains, tau_lp, tau_h)
        print(f"escalated {100 * (r['stop_stage'] > 0).mean():.0f}%, accuracy {100 * r['correct'].mean():.1f}%, "
              f"avg tokens {r['total_tokens'].mean():.0f}")
        pipeline.plot_batch(d, pipeline.stage_confidence(chains, tau_lp, tau_h))
        plt.show()

    widgets.interact(explore, tau_lp=widgets.FloatSlider(value=tau_lp, min=0.0, max=1.0, step=0.05),
                     tau_h=widgets.FloatSlider(value=tau_h, min=0.0, max=3.0, step=0.1))

# %% [markdown]
# ## Exercises
#
# Solutions are kept apart, in `notebooks/solutions/03_solutions.py` (run it as a script or open it
# as a notebook); the test suite runs them, so they stay right.
#
# **Exercise 03.1.** At 0.8 / 0.5, on how many problems does LASE *fix* the leader (stage 0 wrong,
# final answer right), and on how many does it *break* it (right, then wrong)? Is the difference
# significant by the exact McNemar test?
#
# **Exercise 03.2.** Raise tau_lp to 0.95 (tau_h 0.5). Where does LASE stop now, and what does the
# extra caution cost in tokens per problem?
#
# **Exercise 03.3.** The paper's rule: a supporter never states the final answer. Count, per role,
# the notes that break it in this recording, and compare with the count the recording's manifest
# carries.

# %% [markdown]
# ## Summary
#
# - One model, four instructions: the leader answers; the devil's advocate, the collaborator and
#   the expert critique, hint and explain, one at a time and only while the leader is unsure.
# - The gate reads only the answer tokens' probability and entropy; an unboxed answer is unsure.
# - Because stopping only truncates the chain, one full-chain recording answers "what would LASE
#   do at these thresholds" for every threshold at once.
# - Supporters sometimes give the answer away anyway: the pipeline removes a *boxed* answer from a
#   note and counts it; a note that states the answer in words is not filtered, only counted (the
#   model must obey the rule it is shown), and every recording's manifest holds that count.
# - LASE's inclusions, counted from real transcripts, stay within the star bound and do not grow
#   with the number of agents.
# - Each model sits in a regime (section 3.4): the embedded model's notes hurt when forced
#   (destructive); the pointing organism's point at the right step, but its leader fixes about as
#   many answers as it breaks (neutral). Theorem 3.7's terms behind that are in
#   [appendix A1](A1_bound.ipynb).
#
# Chapter 4 puts LASE beside single agents, majority vote, debate, mixture-of-agents and DOWN on
# the same problems.
