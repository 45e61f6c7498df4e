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
# transcripts, follows one problem to the stage where LASE stops, then a whole batch, and sorts
# each model into a **regime**.
#
# **Two kinds of model.** The embedded SmolLM2-135M is the default: weak, real, and unable to
# correct itself. Beside it, **model organisms**: the same model with a LoRA adapter
# (`data/organism/`) trained, on problems disjoint from every evaluated one, to solve one step per
# line and, as a supporter, to find the leader's errors. The **pointing organism (v5)** keeps the
# paper's rule: its notes name the step that fails, never its value. The **telling organism (v4)**,
# an earlier adapter, often writes the right value into its note, which the paper's prompts forbid
# (section 3.5). Every later chapter uses these names; `data/organism/README.md` has the recipes.
#
# **What you will learn**: what each role is told (3.1); how the gate reads a real chain and where
# LASE stops (3.2); how often LASE escalates and what it costs and changes on a batch (3.3); the
# three regimes and each model's (3.4); why supporters must not give answers, and how many context
# inclusions LASE makes (3.5, 3.6).
#
# **You need** chapter 1 (the gate $U$, the star). The chapter reads **recorded full chains**
# (every stage recorded once, so any thresholds replay with no model call); `live=True` runs
# LASE itself, e.g. `-p live True -p backend openai -p model gpt-4.1-mini`. Deep dives:
# [appendix A1](A1_bound.ipynb) (Theorem 3.7's terms) and [A3](A3_live.ipynb) (one episode from
# scratch, live). Code: `lase_nb/chapters/pipeline.py`, `lase_nb/transcripts.py`, `lase_nb/organism/regimes.py`.

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
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from lase_nb import plots, prompts, runs as run_store
from lase_nb.book import widgets
from lase_nb.organism import regimes, revision
from lase_nb import transcripts
from lase_nb.chapters import correct_seeds, pipeline
from lase_nb.replay import chains_from_stages, replay

plots.set_style()
pd.set_option("display.precision", 3)
pd.set_option("display.max_colwidth", 120)
interactive = widgets.live_session(interactive)
shown = run_store.chapter_studies(traces, studies, committed=run_store.REGIME_STUDIES)

# %% [markdown]
# ## 3.0 The data: recorded full chains, or a live run
#
# Either way: one table row per problem, per call and per stage. In a **full chain** every stage
# ran whatever the gate said; calls past LASE's stop are kept apart (`used == False`) for replay.

# %% tags=["book-hide-input"]
if live:
    from lase_nb.live import live_runs

    runs, problems = live_runs(["lase"], backend=backend, model=model, base_url=base_url, concurrency=concurrency,
                               timeout=timeout, dtype=dtype, device=device, examples=examples, dataset=dataset, data_path=data_path,
                               n_problems=n_problems, seed=seed, tau_lp=tau_lp, tau_h=tau_h, max_tokens=max_tokens)
    run = runs["lase"]
else:
    runs = run_store.load_runs(shown[0].path, ["lase", "mad"], require=["lase"])  # older recordings get the new columns
    run = runs["lase"]
    problems = run_store.problems_from_manifest(run.manifest, data_path)
chains = chains_from_stages(run.stages)
kind = next(iter(problems.values())).kind if problems else "number"
print(f"{run.manifest.get('backend')}:{run.manifest.get('model')} on {run.manifest.get('dataset')}, "
      f"{len(chains.problem_ids)} problems, {chains.n_stages} stages each; gate: exp(LP_min) < {tau_lp} or "
      f"H_max > {tau_h} nats")

# %% [markdown] tags=["book-more"]
# ## 3.1 Four roles, one model
#
# All four roles are the same model with different instructions. **The supporters never give the
# answer**: the paper's prompts (Appendix D) say "Do NOT give the final answer"; they critique,
# hint and explain. A note that hands over the answer lets the leader copy it, and its confidence
# then measures the copy. A supporter's `\boxed{}` is replaced by a placeholder before the leader
# reads the note (and counted); a note stating the answer in words is **counted, never filtered**
# (3.5). The table sets each instruction, as the code sends it (`lase_nb.prompts`), beside the
# paper's intent; the answer-extraction step and the worked examples are ours.

# %% tags=["book-more"]
with pd.option_context("display.max_colwidth", None):  # each instruction in full, never cut with "..."
    display(pipeline.prompt_table())

# %% [markdown] tags=["book-more"]
# **Token caps and the extraction step.** When a leader's response boxes no answer (often one cut
# off at its token cap), the pipeline asks once for the final answer alone (its own call, counted
# in the tokens) and the gate reads that answer's tokens; *strict* grading ignores what it supplied.

# %% [markdown] tags=["book-more"]
# Per role, over every recorded call: `hit_cap` counts responses cut off at the cap; the
# `extract` row, how often a revision boxes no answer of its own.

# %% tags=["book-more"]
caps = pipeline.role_calls(run.calls)
caps

# %% [markdown]
# ## 3.2 One problem, stage by stage
#
# The problem is picked **by rule** (`pipeline.pick_walkthrough`): one where a note leads the
# leader to change its answer within the stages LASE runs, preferably wrong to right, else right
# to wrong, else any change; failing that, any escalated problem.

# %%
pid = pipeline.pick_walkthrough(chains, tau_lp, tau_h)
change = pipeline.walkthrough_change(chains, pid, tau_lp, tau_h)
problem = problems.get(pid)
walk = pipeline.stage_table(run.stages, pid, tau_lp, tau_h)
stop = int(np.flatnonzero(walk["lase"].to_numpy() == "stops here")[0])
gold = problem.gold if problem else str(run.problems.set_index("problem_id").loc[pid, "gold"])
print(f"problem {pid}:", problem.prompt_text() if problem else "(question text unavailable)")
print(f"gold answer: {gold}")
walk.set_index("stage")[["supporter", "answer", "p_min", "h_max", "lase"]]

# %%
fig = pipeline.plot_stage_walk(walk, tau_lp, tau_h, title=f"Problem {pid}: the leader after each stage")
plots.savefig(fig, "pipeline_stage_walk")
plt.show()

# %%
display(Markdown(pipeline.describe_walk(walk, change)))

# %% [markdown] tags=["book-more"]
# The transcript behind the figure, up to the stage whose note changed the answer: what each call
# read, and for the leader its answer, confidence and the gate's verdict (texts clipped). A supporter's boxed answer would show
# as `⟦LEAK ...⟧`; the leader saw `[answer withheld]`. Then the count of this model's typical
# failure: revisions that box no answer of their own (`pipeline.pick_unboxed`).

# %% tags=["book-more"]
entries = transcripts.transcript_entries(run.calls, pid, stop_stage=stop, tau_lp=tau_lp, tau_h=tau_h, gold=gold,
                                         kind=kind)
upto = change["stage"] if change["stage"] is not None else stop  # the stage whose note changed the answer
display(Markdown(transcripts.render_transcript([e for e in entries if e["stage"] <= upto], max_chars=220)))
if upto < stop:
    print(f"(stages {upto + 1}-{stop}, to LASE's stop, are in the stage table above)")

typical = pipeline.pick_unboxed(chains, tau_lp, tau_h)
if typical is None:
    print("nothing escalates at these thresholds")
else:
    n_unboxed = int(pipeline.unboxed_revisions(chains)[list(chains.problem_ids).index(typical)])
    print(f"typical escalated chain, problem {typical}: {n_unboxed} of its {chains.n_stages - 1} revisions box no "
          "answer of their own")

# %% [markdown]
# [Appendix A3](A3_live.ipynb) shows the exact messages of this chain and runs the loop live.

# %% [markdown]
# ## 3.3 The batch: where LASE stops, what it costs, what it changes
#
# Replaying the gate on every chain gives LASE's behaviour on the batch, with no model call.
# **Predict, then run.** At 0.8 / 0.5, what share will LASE escalate, where will it stop, and will
# escalating raise or lower this model's accuracy? Left: where LASE stops; right: per stage, the
# share reached, boxed and right, and the median confidence.

# %%
dist = pipeline.stop_distribution(chains, tau_lp, tau_h)
per_stage = pipeline.stage_confidence(chains, tau_lp, tau_h)
lase = replay(chains, tau_lp, tau_h)
fig = pipeline.plot_batch(dist, per_stage)
plots.savefig(fig, "pipeline_batch")
plt.show()
display(Markdown(pipeline.describe_batch(chains, tau_lp, tau_h)))

# %% [markdown] tags=["book-more"]
# The tables behind the figure, what the gate reads after escalation (a revision that boxes no
# answer is gated on the extraction call's tokens, `gate_call`: `read_reply` against
# `read_extraction`), and the outcome of each problem, first answer to LASE's.

# %% tags=["book-more"]
display(dist, per_stage, pipeline.gate_reads(chains), pipeline.outcome_flips(chains, tau_lp, tau_h))

# %% [markdown] tags=["seminar"]
# ## 3.4 Three regimes, and where each model sits
#
# **The chain.** Stage 0: the leader answers. While it is unsure, one supporter at a time writes a
# note and the leader *revises* (answers again after reading it): stage 1 a devil's advocate's
# critique, stage 2 a collaborator's hints, stage 3 a senior expert's note. Gated LASE stops at the
# first stage where the leader is sure; *always-interact* forces every stage.
#
# **The organisms.** The embedded model is too weak to review anything, so the collection trains
# its own: a *model organism* is the same 135M model with a small adapter (LoRA) trained on
# arithmetic word problems to play LASE's roles, never on the problems it is tested on. Its
# versions differ in how a supporter speaks: **v4** is the *telling* organism (its notes often state
# the right value), **v5** the *pointing* one (a note names the failing step and how to check it,
# never the answer, as the paper's rule asks), and **v6** is v5 with a second adapter for the
# leader's revisions.
#
# One recording answers two questions, each by a paired test against the leader alone on the same
# problems (the exact *McNemar* test: of the problems the two get differently, does one side win
# more often than a fair coin would? beside a 95% interval from resampling the problems, a *paired
# bootstrap*): does **gated LASE** gain, and does **always-interact** lose? The answers name the
# **regime**: *corrective* when gated LASE gains by both tests, *destructive* when always-interact
# loses by both, *neutral* when neither. These gains are on each
# recording's own problems (organism v6's: the 200 it was chosen on). v5 and v6 each also had a
# *preregistered* test on further fresh problems (thresholds, test and prediction committed before
# the data existed; chapter 06: v5's in 6.5, v6's in 6.6); v4 had none.

# %% tags=["seminar"]
both = run_store.load_studies(shown, ["lase"], require=["lase"])
model_chains = run_store.chains_by_model(both)
display(regimes.regime_table(model_chains, tau_lp, tau_h, seed=seed)[
    ["regime", "leader alone %", "gain, points [95% CI]", "McNemar p", "always-interact %"]])
display(Markdown(regimes.describe_regime(regimes.gain_regime(model_chains[next(iter(model_chains))], tau_lp, tau_h,
                                                             seed=seed), full=True)))

# %% tags=["book-more"]
print("To record another model and read it here:", regimes.OTHER_REGIME)

# %% [markdown] tags=["book-more"]
# The recordings hold different problems, so compare regimes, not accuracies. **On the same
# problems** (`control_traces`) the two gains are compared problem by problem. Two controls are
# committed, each fixed before it was recorded: the embedded model, with its two worked examples,
# beside the pointing organism (v5), zero-shot, on 80 level-1 held-out problems; and the same
# embedded model beside organism v6 on 120 other level-1 problems (v6's preregistration, chapter
# 06, 6.6). The v6 rows of the table above are on the 200 problems v6 was chosen on; its control
# is on problems no model had seen.

# %% tags=["book-more"]
controls = run_store.control_pairs(control_traces, traces)
if not controls:
    print("no control (control_traces is None, or you named your own traces): skipped")
for control in controls:
    control_chains = run_store.chains_by_model(run_store.load_studies(control, ["lase"], require=["lase"]))
    labels = list(control_chains)
    same = regimes.compare_gains(*control_chains.values(), tau_lp, tau_h, seed=seed)
    display(regimes.control_table(same, *labels))
    display(Markdown(regimes.describe_control(same, *labels)))

# %% [markdown] tags=["book-more"]
# **The mechanism, on the pointing organism.** The same walk as 3.2, on the problem picked by rule
# (`correct_seeds.pick_fix`): the first whose leader was wrong alone, where a note it read holds a
# correct seed (appendix A1) and LASE ends right, a fix by the paper's rule taken first. Watch two
# things: the gate after each revision (does LASE stop before the last supporter?), and the note
# the leader read before its answer changed (the transcript, to LASE's stop). The embedded model's
# walk in 3.2 is the contrast.

# %% tags=["book-more"]
org = shown[1].label if len(shown) > 1 else None  # the first study beside yours (the pointing organism by default)
if org in both:
    o_run, o_chains = both[org]["lase"], model_chains[org]
    o_problems = run_store.problems_from_manifest(o_run.manifest)
    o_pid = correct_seeds.pick_fix(correct_seeds.seed_table(o_chains, o_run.calls, o_problems, tau_lp, tau_h))
    if o_pid is None:
        print(f"{org}: no escalated problem has a seed that LASE turned into a right answer at these thresholds")
    else:
        o_walk, o_words, o_transcript = pipeline.fix_walk(o_run, o_chains, o_problems, o_pid, tau_lp, tau_h, kind)
        print(f"{org}, problem {o_pid}:", o_problems[o_pid].prompt_text(), f"(gold {o_problems[o_pid].gold})")
        fig = pipeline.plot_stage_walk(o_walk, tau_lp, tau_h, title=f"{org}, problem {o_pid}: the leader after "
                                       "each stage")
        plots.savefig(fig, "pipeline_stage_walk_organism")
        plt.show()
        display(Markdown(o_words))
        display(Markdown(o_transcript))
else:
    print("no study beside yours (studies): the second walk-through is skipped")

# %% [markdown] tags=["book-more"]
# **The same walk on organism v6** (v5 with a second adapter for the leader's revisions, chapter 06, 6.6): its whole
# chain on the same problems as the pointing organism's, the problem picked by the same rule. Its
# first answer and the devil's note are v5's; only the revision differs.

# %% tags=["book-more"]
v6_folder = revision.V6_STUDY
if (v6_folder / "lase-full" / "manifest.json").is_file():
    v6_run = run_store.load_runs(v6_folder, ["lase"])["lase"]
    v6_chains, v6_problems = chains_from_stages(v6_run.stages), run_store.problems_from_manifest(v6_run.manifest)
    v6_pid = correct_seeds.pick_fix(correct_seeds.seed_table(v6_chains, v6_run.calls, v6_problems, tau_lp, tau_h))
    if v6_pid is None:
        print("organism v6: no escalated problem has a seed that LASE turned into a right answer at these thresholds")
    else:
        _, v6_words, v6_transcript = pipeline.fix_walk(v6_run, v6_chains, v6_problems, v6_pid, tau_lp, tau_h, kind)
        print(f"organism v6, problem {v6_pid}:", v6_problems[v6_pid].prompt_text(), f"(gold {v6_problems[v6_pid].gold})")
        display(Markdown(v6_words))
        display(Markdown(v6_transcript))
else:
    print("organism v6's chain is not recorded here: skipped")

# %% [markdown]
# ## 3.5 Supporters that give the answer away
#
# **Telling vs pointing.** A supporter that hands over the answer turns LASE into copying, and a
# gain measured that way says nothing about whether a leader can be *helped to find* its error.
# The organisms differ in exactly this (v6's supporters are v5's, the pointing ones). Per organism, gated LASE's fixes (leader alone wrong,
# LASE right) split into *told* (a note read up to the stop stated the answer: the gold answer as
# a number in neither the problem nor the attempt, `lase_nb.notes.states_answer`) and *pointed*
# (none did), its breaks, and the share of notes on wrong attempts that state the answer. A gain
# whose fixes are mostly told is the supporters solving the problem, which the paper forbids.

# %%
rule_runs = {s.label: run_store.load_runs(s.path, ["lase"])["lase"] for s in shown[1:]}  # the studies beside yours
if rule_runs:
    rule_problems = {label: run_store.problems_from_manifest(r.manifest) for label, r in rule_runs.items()}
    by_rule = pipeline.telling_vs_pointing(rule_runs, rule_problems, tau_lp, tau_h)
    display(by_rule[["n", "fixed", "fixed_told", "broken", "stating_share"]])
    display(Markdown("\n".join(
        f"- **{label}**: {int(r.fixed)} fixes on {int(r.n)} problems, {int(r.fixed_told)} of them after a note that "
        f"stated the answer; {int(r.broken)} broken; {r.stating_share:.0%} of its notes on wrong attempts state the answer."
        for label, r in by_rule.iterrows())))
else:
    print("no study beside yours (studies): the comparison is skipped")

# %% [markdown] tags=["book-more"]
# Per supporter role of this chapter's recording, over all recorded calls (a leak is a property of
# the transcript): notes that wrote `\boxed{}` (`calls_with_leak`, removed before the leader read
# them); on wrong attempts, notes that state the answer (`states_answer`); on right attempts, notes
# that announce another final value or whose new number the leader then boxes
# (`other_value_on_right`, `lase_nb.notes.states_other_value`). The paper reports neither rate.

# %% tags=["book-more"]
pipeline.leak_table(run.calls, problems=problems, stages=run.stages)

# %% [markdown] tags=["book-more"]
# ## 3.6 Who reads whom: inclusions counted from the transcripts
#
# An *inclusion* is one agent's message pasted into another's context. Every call records what it
# read (`reads`), so we count rather than trust the formula: for LASE the calls it makes at these
# thresholds, split into **star** inclusions (supporter reads attempt, leader reads note: at most
# $2kT$, $k=1$, $T=3$) and **relays** (later supporters read earlier notes: at most $T(T-1)/2$); a
# MAD run beside it, all-to-all: $Tn(n-1)$. The table after the figure checks every problem
# (`obeys_formula`).

# %% tags=["book-more"]
stops = dict(zip(lase["problem_id"], lase["stop_stage"]))
counts = [pipeline.inclusion_counts(run.calls, stops)]
configs = {"lase": run.manifest.get("config", {})}
if not live and "mad" in runs:
    counts.append(pipeline.inclusion_counts(runs["mad"].calls))
    configs["mad"] = runs["mad"].manifest.get("config", {})
counts = pd.concat(counts, ignore_index=True)
inclusions = pipeline.inclusion_summary(counts, configs)
fig = pipeline.plot_inclusions(inclusions, {s: plots.label(s, configs.get(s)) for s in configs})
plots.savefig(fig, "pipeline_inclusions")
plt.show()

# %% tags=["book-more"]
inclusions.set_index("strategy")[["mean_counted", "max_counted", "formula", "bound", "obeys_formula"]]

# %% [markdown]
# ## Try it yourself
#
# In a live Jupyter session, move the thresholds and watch the stops and the cost change.

# %% tags=["book-hide"]
if interactive:
    import ipywidgets

    def explore(tau_lp=tau_lp, tau_h=tau_h):
        d = pipeline.stop_distribution(chains, tau_lp, tau_h)
        r = replay(chains, tau_lp, tau_h)
        print(f"escalated {100 * (r['stop_stage'] > 0).mean():.0f}%, accuracy {100 * r['correct'].mean():.1f}%, "
              f"avg tokens {r['total_tokens'].mean():.0f}")
        pipeline.plot_batch(d, pipeline.stage_confidence(chains, tau_lp, tau_h))
        plt.show()

    ipywidgets.interact(explore, tau_lp=ipywidgets.FloatSlider(value=tau_lp, min=0.0, max=1.0, step=0.05),
                        tau_h=ipywidgets.FloatSlider(value=tau_h, min=0.0, max=3.0, step=0.1))

# %% [markdown] tags=["book-more"]
# ## Exercises
#
# Solutions are kept apart, in `notebooks/solutions/03_solutions.py` (run it as a script or open it
# as a notebook); the test suite runs them, so they stay right.
#
# **Exercise 03.1.** On the pointing organism at 0.8 / 0.5, split LASE's *fixes* (stage 0 wrong,
# final answer right) and *breaks* (right, then wrong) by the problems' level (1-3). Where do the
# fixes come from, and does the exact McNemar test clear on any level?
#
# **Exercise 03.2.** Raise tau_lp to 0.95 (tau_h 0.5). Where does LASE stop now, and what does the
# extra caution cost in tokens per problem?
#
# **Exercise 03.3.** The paper's rule: a supporter never states the final answer. On the telling
# organism, count per role the notes that state it after a wrong attempt and after a right one
# (`notes.count_answer_notes`). Does a supporter state the answer more often when the attempt is
# wrong? Test the difference for each role.

# %% [markdown]
# ## Summary
#
# One model, four instructions; the gate reads only the answer tokens' probability and entropy.
# Stopping only truncates the chain, so one full-chain recording replays every threshold. A boxed
# answer in a note is removed, a stated one only counted. Each model's regime is printed in 3.4,
# Theorem 3.7's terms behind it are in [appendix A1](A1_bound.ipynb), and chapter 4 puts LASE beside
# single agents, majority vote, debate, mixture-of-agents and DOWN on the same problems.
