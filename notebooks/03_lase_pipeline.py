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
# transcripts of that pipeline and follows one problem from the leader's first answer to the stage
# where LASE stops, then looks at a whole batch.
#
# **What you will learn**
#
# 1. What each role is told and what it sees (the prompts, exactly as the code sends them), beside
#    the paper's intents, and how often each role runs out of tokens.
# 2. How the gate works on a real chain: the leader's $\exp(\mathrm{LP}_{\min})$ and
#    $H_{\max}$ after every stage, the thresholds, and where LASE stops.
# 3. How often LASE escalates, where it stops, what that costs in tokens, and whether the
#    revisions helped, on a batch of problems.
# 4. Why supporters must not give answers, and how often ours tried to (leaks counted).
# 5. How many cross-agent context inclusions LASE really makes, counted from the transcripts
#    and checked against the star bound $2kT$ (and against all-to-all debate's $Tn(n-1)$).
# 6. The paper's selective-gain bound (Theorem 3.7) checked with its own terms: $P(U=1)$, the
#    share $\rho$ of escalated problems whose notes hold a correct seed, the gain $\delta$ a seed
#    brings, and whether escalation without a seed hurts (A3), on the embedded model and on the
#    model organism, whose walk-through shows a supporter's note fixing a wrong answer.
#
# **You need** chapter 1 (the gate $U$, the star topology) and chapter 2 helps (what the
# confidence numbers mean). By default the chapter reads **recorded traces** of the embedded
# model (SmolLM2-135M) on the project's arithmetic problems: every stage of every chain was
# recorded once, so any thresholds can be replayed with no model call (the replay section below).
# With `live=True` it runs LASE itself on `n_problems` problems with the backend you choose,
# e.g. `papermill 03_lase_pipeline.ipynb out.ipynb -p live True -p backend openai -p model gpt-4.1-mini`.
#
# The chapter's logic lives in `lase_nb/chapters/pipeline.py`; transcripts are drawn by
# `lase_nb/transcripts.py`, runs loaded by `lase_nb/runs.py` and replay done by `lase_nb/replay.py`.
# It covers the paper's Theorem 3.7 (the selective-gain bound, section 3.5) and the
# escalation rates of its Table 5 (section 3.4 prints them from `lase_nb.reference`).

# %% tags=["parameters"]
backend = "local"  # local | openai | gemini (live runs only)
model = None  # None: the default model of the backend
base_url = None  # an OpenAI-compatible server, for the openai backend
dataset = "arith"  # live runs: arith (generated) or a paper set loaded from data_path
data_path = None  # file/folder of a paper data set (never shipped)
n_problems = 4  # live runs: problems to run
traces = "../data/traces/arith-smollm2"  # recorded runs, read unless live
point_traces = "../data/traces/arith-organism-point"  # the pointing organism (v5)'s recorded full chains, measured beside it in 3.5; None: skip
control_traces = "../data/traces/control-level1"  # both models' full chains on the same level-1 problems (3.5); None: skip
tell_traces = "../data/traces/arith-organism-tell"  # 3.6: the telling organism (v4), set beside the organism; None: skip
live = False  # True: run LASE now (full chain, cached) instead of reading the traces
tau_lp = 0.8  # gate: exp(LP_min) below this is uncertain
tau_h = 0.5  # gate: H_max (nats) above this is uncertain
max_tokens = None  # live runs: leader token limit (None: library default)
seed = 0
run_episode = True  # section 3.3: run one LASE episode now with `backend` (at most 7 calls, cached)
episode_max_tokens = 64  # section 3.3: token cap of each call of that episode (the check holds at any cap; a live run uses its own max_tokens here, so the episode reuses its calls)
interactive = True  # False under papermill: no widgets

# %%
from dataclasses import asdict

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from lase_nb import plots, prompts, reference, runs as run_store
from lase_nb import regimes, transcripts
from lase_nb.chapters import pipeline
from lase_nb.replay import chains_from_stages, replay

plots.set_style()
pd.set_option("display.precision", 3)
pd.set_option("display.max_colwidth", 120)

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
    engine = live_engine(backend, model, base_url)
    cfg = live_config(backend, model, tau_lp=tau_lp, tau_h=tau_h, seed=seed, max_tokens=max_tokens, full_chain=True)
    results = run_problems("lase", problem_list, engine, cfg, progress=False)
    run = run_store.run_from_results(results, problem_list, {
        "backend": engine.backend.name, "model": engine.backend.model, "dataset": dataset, "n": len(problem_list),
        "seed": seed, "config": asdict(cfg)})
    problems = {p.id: p for p in problem_list}
    print(f"live run: {engine.stats.model_calls} model calls, {engine.stats.cache_hits} from the cache")
else:
    runs = run_store.load_runs(traces, ["lase", "mad"], require=["lase"])  # older recordings get the new columns
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
# states the final answer in words is **counted, never filtered** (section 3.6): what a
# supporter writes is what the leader reads, so the model must obey the rule it is shown.
#
# Our instructions are in our own words. The table sets each one, exactly as the code sends it
# (`lase_nb.prompts`), beside the paper's intent for that role, and names where we differ: the
# answer-extraction step and the worked examples are ours, not the paper's.

# %%
pipeline.prompt_table()

# %% [markdown]
# The project also ships a **model organism** (`--model organism`: the embedded model with a LoRA
# adapter trained here, `data/organism/`), whose supporters were taught to find its own errors
# by the paper's rule:

# %%
import json

from lase_nb import organism
from lase_nb.backends.local.files import ORGANISM_DIR

_manifest = ORGANISM_DIR / "manifest.json"
display(Markdown(organism.describe_answer_rule(
    json.loads(_manifest.read_text()).get("evaluation") if _manifest.is_file() else None)))

# %% [markdown]
# **Token caps and the extraction step.** A response cut off at its token cap usually has no
# boxed answer. When a leader's response has none, the pipeline asks once for the final answer
# alone (the extraction step, its own call, counted in the tokens) and the gate reads that
# answer's tokens; *strict* grading ignores what the step supplied. Per role, over every
# recorded call:

# %%
caps = pipeline.role_calls(run.calls)
caps

# %% [markdown]
# **What it shows.** On this recording no call ran into its token cap, so truncation explains no
# missing answer. The `extract` row is the point: the leader's revisions seldom box an answer of
# their own, and the extraction step supplies the answer for most of them. Strict grading, which
# counts those answers as missing, is reported beside the default grading throughout.

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
fig = pipeline.plot_stage_walk(walk, tau_lp, tau_h, title=f"Problem {pid}: the leader after each stage "
                             "(green = right, red = wrong)")
plots.savefig(fig, "pipeline_stage_walk")
plt.show()

# %%
display(Markdown(pipeline.describe_walk(walk, change)))

# %% [markdown]
# The transcript behind the figure. Each call shows what it read, its token count, and for the
# leader the boxed answer, its confidence and the gate's verdict. Supporters' boxed answers, if
# any, are marked `⟦LEAK ...⟧`: the leader saw `[answer withheld]` in their place. Calls after
# LASE's stop were recorded only so that other thresholds can be replayed. Long texts are clipped.

# %%
entries = transcripts.transcript_entries(run.calls, pid, stop_stage=stop, tau_lp=tau_lp, tau_h=tau_h, gold=gold,
                                         kind=kind)
display(Markdown(transcripts.render_transcript(entries, max_chars=600)))

# %% [markdown]
# For contrast, the typical escalated chain: the one whose revisions most often box no answer
# of their own (the first such by problem id), the typical failure of a small model (texts
# clipped harder). The rule (`pipeline.pick_unboxed`) finds one whenever anything escalates.

# %%
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
# The exact messages the devil's advocate received in this chain (the collaborator and the
# expert get the same layout, plus the critique and the hints):

# %%
if problem is not None:
    attempt = next(e["text"] for e in entries if e["role"] == "leader" and e["stage"] == 0)
    for m in prompts.supporter_messages(problem, "devil", attempt):
        print(f"[{m['role']}]\n{m['content']}\n")

# %% [markdown]
# ## 3.3 One LASE episode, written out
#
# The tables above come from `lase_nb.strategies.lase`. **The method itself is a short loop**, written
# here from scratch with the package's prompt builders (`lase_nb.prompts`) and its engine (one call
# primitive for any backend): the leader answers; while its answer is uncertain ($U = 1$: no boxed
# answer, $\exp(LP_{min}) < \tau_{lp}$ or $H_{max} > \tau_h$), the next supporter writes a note (any
# boxed answer in it is withheld) and the leader revises. It stops at the first confident answer,
# or after the last supporter. A leader response without an answer gets the extraction step, and
# the gate reads the extracted answer.

# %%
from lase_nb.answers import strip_boxed
from lase_nb.confidence import measure
from lase_nb.engine import Call


def lead(engine, cfg, t, messages, kind):
    """One leader call, plus the extraction step if its response has no answer: (text, confidence, tokens)."""
    (gen,) = engine.run([Call("leader", t, messages, cfg.params())])
    conf, spent = measure(gen, kind), gen.prompt_tokens + gen.completion_tokens
    if conf.answer is None and cfg.extract_answers:
        (x,) = engine.run([Call("extract", t, prompts.extract_messages(messages, gen.text), cfg.extract_params())])
        conf, spent = measure(x, kind), spent + x.prompt_tokens + x.completion_tokens
    return gen.text, conf, spent


def lase_from_scratch(problem, engine, cfg):
    """One LASE episode: (stop stage, final answer, tokens spent: prompt + completion)."""
    ex, sup = cfg.examples, cfg.params(supporter=True)
    attempt, conf, spent = lead(engine, cfg, 0, prompts.solver_messages(problem, examples=ex), problem.kind)
    notes = {}
    for t, role in enumerate(cfg.supporter_order, start=1):
        if conf.answer is not None and conf.p_min >= cfg.tau_lp and conf.h_max <= cfg.tau_h:
            return t - 1, conf.answer, spent  # U = 0: confident, stop here
        critique = notes.get("devil") if role in ("collaborator", "expert") else None
        hints = notes.get("collaborator") if role == "expert" else None
        (note,) = engine.run([Call(role, t, prompts.supporter_messages(problem, role, attempt, critique, hints), sup)])
        notes[role], _ = strip_boxed(note.text)  # a supporter may not hand over an answer
        revise = prompts.revise_messages(problem, attempt, role, notes[role], examples=ex)
        attempt, conf, used = lead(engine, cfg, t, revise, problem.kind)
        spent += note.prompt_tokens + note.completion_tokens + used
    return len(cfg.supporter_order), conf.answer, spent  # no supporter left


# %% [markdown]
# Run it on the walk-through problem, then let the package run LASE on the same problem with the
# same engine. They must agree on where LASE stops, what it answers and what it spends, and **the
# package must make no model call of its own**: every call it needs is already in the call cache,
# because our loop made exactly the same calls (same messages, same sampling parameters).

# %%
if run_episode and problem is not None:
    from lase_nb.live import live_config, live_engine
    from lase_nb.runner import run_problems

    if not live:
        engine = live_engine(backend, model, base_url)
    cfg1 = live_config(backend, model, tau_lp=tau_lp, tau_h=tau_h, seed=seed,
                       max_tokens=max_tokens if live else episode_max_tokens)
    ours = lase_from_scratch(problem, engine, cfg1)
    calls_before = engine.stats.model_calls
    (package,) = run_problems("lase", [problem], engine, cfg1, progress=False)
    assert ours == (package.stop_stage, package.answer, package.prompt_tokens + package.completion_tokens), \
        (ours, package.stop_stage, package.answer)
    assert engine.stats.model_calls == calls_before, "the package made a call our loop did not"
    print(f"problem {problem.id}: our loop stops at stage {ours[0]} with answer {ours[1]} after {ours[2]} tokens; "
          f"lase_nb.strategies.lase agrees, with 0 new model calls")
else:
    print("episode skipped (run_episode=False, or the problem text is not available here)")

# %% [markdown]
# ## 3.4 The batch: where LASE stops, what it costs, what it changes
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
# **What it shows.** At the default thresholds (0.8 / 0.5) the gate escalates a minority of the problems,
# and the revisions do not pay for themselves: they rescue almost nothing and talk the leader out
# of a right answer now and then, so LASE ends no better than the leader alone, at several times
# its tokens, and forcing every stage is far worse. This is the weak-model regime section 3.5
# names.
#
# **What the paper reported** (Table 5, GPT-4.1-mini on MATH-500, $\tau_h = 0.5$): escalation
# stayed near a fifth of the problems from $\tau_{lp} = 0.5$ to $0.8$, then rose to about two
# fifths at $0.95$, with tokens per problem rising from 1.8k to 3.1k. The rate is not even
# monotone at the low end: a minority of problems escalates at every threshold.

# %%
reference.paper_column(reference.THRESHOLD_SWEEP[["tau_lp", "tau_h", "escalation_rate", "avg_tokens"]])

# %% [markdown]
# A weaker model is unsure more often, so it escalates more and costs more; the paper's own
# comparison of its two models is printed by `reference.LLAMA3_8B_NOTE`:

# %%
print(reference.LLAMA3_8B_NOTE)

# %% [markdown]
# ## 3.5 What the recording says about the selective-gain bound (Theorem 3.7)
#
# The paper's Theorem 3.7 says: if an escalated problem holds a correct seed with probability at
# least $\rho$ (A1), a seed raises the leader's accuracy by at least $\delta$ (A2), and escalation
# without a seed never lowers it (A3), then
# $\mathrm{Acc}(\mathrm{LASE}) \ge \mathrm{Acc}(\mathrm{solo}) + P(U=1)\,\rho\,\delta$.
#
# **Checked on the same problems, the bound is an identity.** Split the escalated problems by
# whether a note held a seed: the gain over the leader alone is exactly
# $P(U{=}1)\,[\rho\,\delta + (1-\rho)\,a_3]$ (the law of total probability), whatever the
# definitions, so "bound vs observed" on the same recording only restates $a_3 \ge 0$. What can
# be tested: A3 on its own, with its interval (holds / violated / undetermined), and a lower bound
# predicted from *other* problems (the preregistration, `data/traces/preregistration.json`, fixes
# one from calibration problems before the held-out recording), which the held-out gain meets or
# misses. We classify every note the leader read before LASE stopped
# (`lase_nb/chapters/correct_seeds.py`). A note **holds a correct seed** when it carries something
# only the right solution has and the attempt it reviewed lacks: a value of the problem's worked
# solution that the attempt and the question do not contain (the right result of a step the
# attempt got wrong or skipped, up to the answer itself), or, for a note that points rather than
# tells, the first step where the attempt departs from the worked solution, named as failing. A
# right attempt has neither, so its notes hold no seed and only A3 protects it. The rule reads
# numbers and step names, not arguments, so $\rho$ here is an upper estimate.
#
# **Which $\delta$.** The paper defines it twice and we add a third: Appendix A.2 compares LASE's
# accuracy on the seeded escalated problems with the leader's over *all* escalated problems,
# $P(y_{solo} = y \mid U = 1)$ (A.3 likewise for the unseeded); main-text Assumption 3.5 compares
# with the leader's accuracy over all problems; "within the group" compares with the leader on the
# same seeded problems. The table shows all three (`delta_paper`, `delta_main`, `delta`; `a3_paper`,
# `a3_gap`), each with a 95% bootstrap interval (problems resampled together, so the intervals are
# paired) and a one-sided lower bound (`lcb`).

# %%
from lase_nb.chapters import correct_seeds

seed_rows = correct_seeds.seed_table(chains, run.calls, problems, tau_lp, tau_h)
check = correct_seeds.bound_check(seed_rows)
display(check.round(3))
display(Markdown(correct_seeds.describe_assumptions(check)))
display(Markdown(regimes.describe_regime(regimes.gain_regime(chains, tau_lp, tau_h, seed=seed), full=True)))

# %% [markdown]
# **The same terms on the model organism.** The embedded model with a LoRA adapter trained in this
# repository, on problems it never trained on (the eval split, seed 22), to solve one step per line
# and, as a supporter, to check each step by its inverse operation and name the failing step,
# never its value (the paper's rule; `data/organism/README.md`). Its terms, then its regime:

# %%
both = run_store.load_models(run_store.by_display_name([traces, point_traces]), ["lase"], require=["lase"])
checks = {"SmolLM2-135M": check}
others = {}  # label -> (run, chains, problems, seed rows) of each other model, for the walk-through below
for label, model_runs in list(both.items())[1:]:
    o_run = model_runs["lase"]
    o_chains = chains_from_stages(o_run.stages)
    o_problems = run_store.problems_from_manifest(o_run.manifest)
    o_rows = correct_seeds.seed_table(o_chains, o_run.calls, o_problems, tau_lp, tau_h)
    others[label] = (o_run, o_chains, o_problems, o_rows)
    checks[label] = correct_seeds.bound_check(o_rows)
    display(Markdown(f"**{label}.** " + correct_seeds.describe_assumptions(checks[label])))
    display(Markdown(regimes.describe_gain_regime(label, regimes.gain_regime(o_chains, tau_lp, tau_h, seed=seed))))
pd.concat({k: v["estimate"] for k, v in checks.items()}, axis=1).round(3)

# %% [markdown]
# **Both models on the same problems.** The two recordings above hold different problems (the
# embedded model's level-1 problems of another seed, the organism's levels 1 to 3), so their
# regimes cannot be set against each other number for number. The controlled set
# (`control_traces`) gives both models' full chains on the same 80 level-1 problems of the held-out
# split: the embedded model with its two worked examples (it needs them to box an answer), the
# organism zero-shot, the one difference. Each model's gain is over its own leader alone; the
# difference of the two gains is tested problem by problem (a sign test on the problems where
# they differ, beside the paired bootstrap interval).

# %%
if control_traces:
    control_chains = run_store.chains_by_model(run_store.control_models(control_traces))
    labels = list(control_chains)
    same = regimes.compare_gains(*control_chains.values(), tau_lp, tau_h, seed=seed)
    display(regimes.control_table(same, *labels))
    display(Markdown(regimes.describe_control(same, *labels)))

# %% [markdown]
# **What the theorem predicted, before the recording.** The preregistration
# (`data/traces/preregistration.json`, committed before any held-out recording) took $P(U=1)$,
# $\rho$ and $\delta$ (on Appendix A.2's definition) at their one-sided 95% lower confidence bounds on
# 100 calibration problems of another seed, and multiplied them into a lower bound for the
# held-out gain (negative terms count as zero: the theorem then promises nothing). The held-out
# recording meets it or misses it:

# %%
from lase_nb import preregistration

prereg = preregistration.load()
pred = prereg["prediction"]
for label, (o_run, o_chains, _, _) in others.items():
    held = preregistration.primary_result(prereg, o_chains)
    print(f"{label}: predicted gain >= {100 * pred['gain_lower_bound']:+.1f} points (P(U=1) >= {pred['p_u1_lcb']:.2f}, "
          f"rho >= {pred['rho_lcb']:.2f}, delta >= {pred['delta_lcb']:+.2f}); held out: {100 * held['diff']:+.1f} points "
          f"[{100 * held['diff_lo']:+.1f}, {100 * held['diff_hi']:+.1f}], McNemar p = {held['p_value']:.2f}: "
          f"{'met' if held['prediction_met'] else 'missed'}, and a gain is claimed: {held['claimed']}")

# %% [markdown]
# The notes behind $\rho$: up to three escalated problems whose notes hold a seed, with the value
# that counts as the seed and whether LASE ended right. Read them before trusting the number.

# %%
shown = seed_rows[seed_rows["seed"]].head(3)
if shown.empty:
    print("No note the leader read holds a correct seed at these thresholds.")
for _, r in shown.iterrows():
    display(Markdown(f"**{r['problem_id']}** (gold {problems[r['problem_id']].gold}; seed value {r['seed_value']}, "
                     f"{r['seed_role']}, stage {r['seed_stage']}; LASE {'right' if r['lase_right'] else 'wrong'})"))
    print("attempt:", r["attempt"][:300], "\nnote:   ", r["note"][:400], "\n")

# %% [markdown]
# **The organism, stage by stage: a note that fixes a wrong answer.** Section 3.2 walked the
# embedded model through one problem. Here is the same walk on the organism, picked by rule
# (`correct_seeds.pick_fix`): the first problem whose leader was wrong alone, where a note the leader read
# holds a correct seed, and where LASE ends right; a fix by the paper's rule (no note the leader
# read states the answer) is taken before a told one. Such a problem counts in $\rho$ (its note
# holds a seed) and in $\delta$ (reading the seed turned the answer right).

# %%
for o_label, (o_run, o_chains, o_problems, o_rows) in others.items():
    o_pid = correct_seeds.pick_fix(o_rows)
    if o_pid is None:
        print(f"{o_label}: no escalated problem has a seed that LASE turned into a right answer at these thresholds")
    else:
        o_walk = pipeline.stage_table(o_run.stages, o_pid, tau_lp, tau_h)
        o_change = pipeline.walkthrough_change(o_chains, o_pid, tau_lp, tau_h)
        o_problem = o_problems[o_pid]
        print(f"{o_label}, problem {o_pid}:", o_problem.prompt_text(), f"(gold {o_problem.gold})")
        display(o_walk)
        fig = pipeline.plot_stage_walk(o_walk, tau_lp, tau_h, title=f"{o_label}, problem {o_pid}: the leader after "
                                       "each stage (green = right, red = wrong)")
        plots.savefig(fig, "pipeline_stage_walk_organism")
        plt.show()
        display(Markdown(pipeline.describe_walk(o_walk, o_change)))
        display(Markdown(transcripts.render_transcript(transcripts.transcript_entries(
            o_run.calls, o_pid, stop_stage=o_change["stop"], tau_lp=tau_lp, tau_h=tau_h, gold=o_problem.gold,
            kind=kind), max_chars=900)))
if not others:
    print("no organism recording: the organism's walk-through is skipped")

# %% [markdown]
# ## 3.6 Supporters that give the answer away
#
# Two counts per supporter, over all recorded calls (a leak is a property of the transcript,
# whether or not LASE at these thresholds made the call): the notes that wrote `\boxed{}`
# (`calls_with_leak`; the box was removed before the leader read the note), and the notes that
# **state the final answer** (`states_answer`, and among notes on a wrong attempt,
# `states_answer_on_wrong`): the gold answer appears in the note as a number that is in neither
# the problem nor the attempt the note read (`lase_nb.notes.states_answer`; step labels do not
# count). Those notes are not filtered.

# %%
leaks = pipeline.leak_table(run.calls, problems=problems, stages=run.stages)
leaks

# %% [markdown]
# A box is replaced before the leader reads the note; a stated answer reaches the leader as
# written. The paper does not report either rate; it only states the rule.

# %% [markdown]
# ### Telling vs pointing: what the paper's rule is for
#
# The paper's supporters are told "Do NOT give the final answer" (its Appendix D): a supporter that
# hands over the answer turns LASE into copying, and a gain measured that way says nothing about
# whether a leader can be *helped to find* its error. This repository trained two organisms from
# the same 135M model. **v4 (telling)** was trained on notes that often state the right value of a
# slipped step, the answer included; **the organism** (the current one) was trained on notes that check each
# step by its inverse operation and name the failing step ("Step 2 fails: redo it"), never its value
# (`data/organism/README.md` has both recipes). Below, each one's gated LASE at (tau_lp, tau_h): the
# fixes (the leader alone wrong, LASE right) split into *told* (a note the leader read up to its
# stop stated the answer) and *pointed* (none did), the breaks, and the share of notes on wrong
# attempts that state the answer.

# %%
rule_runs = {label: run_store.load_runs(folder, ["lase"])["lase"]
             for label, folder in run_store.by_display_name([tell_traces, point_traces]).items()}
if rule_runs:
    rule_problems = {label: run_store.problems_from_manifest(r.manifest) for label, r in rule_runs.items()}
    by_rule = pipeline.telling_vs_pointing(rule_runs, rule_problems, tau_lp, tau_h)
    display(by_rule)
    display(Markdown("\n".join(
        f"- **{label}**: {int(r.fixed)} fixes on {int(r.n)} problems, {int(r.fixed_told)} of them after a note that "
        f"stated the answer; {int(r.broken)} broken; {r.stating_share:.0%} of its notes on wrong attempts state the answer."
        for label, r in by_rule.iterrows())))
else:
    print("neither organism recording is here: the comparison is skipped")

# %% [markdown]
# Read the two rows together: a gain whose fixes are mostly *told* is the supporters solving the
# problem for the leader, which the paper's prompts forbid. The current organism's gain, whatever
# its size, is the one the paper's mechanism claims: a leader that redoes the step it was pointed
# at. Chapter 04 and the preregistered test in `data/traces/preregistration.json` say whether that
# gain is there.

# %% [markdown]
# ## 3.7 Who reads whom: inclusions counted from the transcripts
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
# cost change, replayed from the same recording (under papermill `interactive` is False).

# %%
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
# - Fixes minus breaks is bookkeeping, not a test of Theorem 3.7; classifying the notes gives its
#   own terms. Section 3.5 measures $P(U=1)$, $\rho$, $\delta$ and A3 with intervals, sets the
#   bound beside the observed accuracy, and says which regime the recording is in.
#
# Chapter 4 puts LASE beside single agents, majority vote, debate, mixture-of-agents and DOWN on
# the same problems.
