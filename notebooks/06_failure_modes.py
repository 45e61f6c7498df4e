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
# # 6. Failure modes: where confidence-gated debate goes wrong
#
# The earlier chapters show what LASE is for. This one shows, from real transcripts, **the ways it
# fails, which the design accepts knowingly or which a weak model exposes**. Each section gives a
# count, a figure and examples pulled from the recorded full-chain run.
#
# **What you will learn**: **confident errors**, wrong answers that pass the gate and are never
# reconsidered (6.1); **execution failure after a critique**, selected by a stated heuristic and
# shown in transcripts (6.2); **do weaker models escalate more?**, answered in print with
# intervals (6.3); **answers that never get boxed** (6.4); and **why no gain**: three numbers on
# the committed pointing organism (6.5), then the note and the leader separated, and the
# preregistered test of organism v6 and what its gain is made of (6.6).
#
# **You need** chapters 02 (the gate) and 03 (the pipeline). No model is called: everything comes
# from a study's full-chain recording (`traces`: your study, or the committed recordings). The
# chapter's logic is `lase_nb/chapters/failures.py`; transcripts are drawn by `lase_nb/transcripts.py`.
#
# **What the paper reported.** Even strong models' most confident answers are not always right
# (Figure 3: 85.5% accuracy where the lowest answer-token probability is at least 0.99). On the
# weaker Llama-3-8B, LASE spent roughly 4.6x the single agent's tokens (Appendix E.2) against about
# 1.8x on GPT-4.1-mini: the paper reads this as a weaker model escalating more and paying more.

# %% tags=["parameters"]
traces = "committed"  # your study (a folder holding lase-full/); "committed": data/traces/arith-smollm2
studies = "auto"  # studies beside it in 6.2 and 6.3 (folders or [label, folder] pairs); auto: the committed ones only when traces is committed; None: none
control_traces = "auto"  # two studies of the same problems (a folder of study folders), compared in 6.3; None: skip
tau_lp = 0.8  # gate threshold on exp(LP_min)
tau_h = 0.5  # gate threshold on H_max (nats)
n_examples = 2  # transcript examples shown per failure mode
max_chars = 450  # each message is clipped to this many characters
interactive = None  # None: sliders only in a live Jupyter session (never under papermill); True or False forces it

# %%

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import HTML, Markdown, display

from lase_nb.organism import ceiling, controls, preregistration, revision
from lase_nb import confidence, plots
from lase_nb.book import widgets
from lase_nb import runs as run_store
from lase_nb.chapters import failures
from lase_nb.replay import summarize
from lase_nb.runs import chains_by_model, load_runs, problems_from_manifest

plots.set_style()
pd.set_option("display.precision", 3)
pd.set_option("display.max_colwidth", 80)
interactive = widgets.live_session(interactive)
shown = run_store.chapter_studies(traces, studies)  # the reader's study first; one line each
runs = load_runs(shown[0].path, require=["lase-full"])
lase = runs["lase-full"]
problems = problems_from_manifest(lase.manifest)
first = confidence.confidence_frame(lase, stage=0)
m = lase.manifest
print(f"{m['backend']}:{m['model']} on {m['dataset']}, {len(first)} problems, full chain recorded; "
      f"runs found: {', '.join(runs)}")

# %% [markdown] tags=["seminar"]
# ## 6.1 Confident errors
#
# The gate accepts an answer when `exp(LP_min) >= tau_lp` and `H_max <= tau_h`. **A wrong answer
# that clears both is a confident error: LASE stops at once and no supporter sees it.** The paper
# accepts this on purpose (checking confident answers costs tokens on the many right ones); the
# full chain shows what the supporters would have done with them. Chapter 02 (2.4) gave their
# share; here is what escalating them anyway would have bought.

# %% tags=["seminar"]
split = confidence.gate_split(first, tau_lp, tau_h)
ce = failures.confident_errors(lase.stages, tau_lp, tau_h)
fig = failures.plot_confident_errors(first, tau_lp, tau_h)
plots.savefig(fig, "failure_confident_errors")
plt.show()
print(f"{int(split['confident_errors'])} of {int(split['errors'])} wrong first answers pass the gate; escalating them anyway, "
      f"some later stage is right on {int(ce['later_right'].sum())} and the last stage on {int(ce['final_correct'].sum())}")

# %% [markdown] tags=["seminar"]
# **How to read the figure.** Both axes measure the distance from certainty on a log scale; bottom
# right is the most confident. The line above says whether escalating the confident errors
# anyway would have helped.

# %% [markdown] tags=["book-more"]
# **A confident error, found by hand**: the stage-0 rows the gate accepts that are wrong, most
# confident first, checked against `failures.confident_errors`. In the chain printed last, a stage
# whose revision wrote no answer has no confidence (NaN; section 6.4 counts them).
# Below the check, the most confident of them as the leader wrote them.

# %% tags=["book-more"]
display(ce.set_index("problem_id")[["answer", "p_min", "h_max", "later_right", "final_correct"]].head(5))
st = lase.stages
lead = st[st["stage"] == 0].set_index("problem_id")
p, h = lead["p_min"].astype(float), lead["h_max"].astype(float)
accepted = (p >= tau_lp) & (h <= tau_h)  # a missing answer (NaN) compares False: never accepted
# the float column goes in before the rows are picked (assigned to an empty pick, a column would bring its rows back)
by_hand = lead.assign(p_min=p)[accepted & ~lead["correct"].astype(bool)].sort_values("p_min", ascending=False,
                                                                                      kind="stable")
assert by_hand.index.astype(str).tolist() == ce["problem_id"].tolist()
if len(by_hand):
    worst = by_hand.index[0]
    chain = st[st["problem_id"] == worst].sort_values("stage")
    assert chain.loc[chain["stage"] > 0, "correct"].astype(bool).any() == ce["later_right"].iloc[0]
    print(f"the most confident error: {worst}, answer {by_hand['answer'].iloc[0]} (gold {problems[worst].gold if worst in problems else '?'}), "
          f"exp(LP_min) = {by_hand['p_min'].iloc[0]:.3f}, H_max = {by_hand['h_max'].iloc[0]:.3f} nats")
    print(chain[["stage", "supporter", "answer", "correct", "p_min", "h_max"]].to_string(index=False))

for r in ce.head(n_examples).itertuples():
    display(HTML(failures.render_answer(lase, r.problem_id, 0, problems.get(r.problem_id), max_chars)))

# %% [markdown] tags=["seminar"]
# **What the paper says.** Confident errors are a deliberate trade: LASE never reconsiders an
# answer with $U=0$. The better a model's calibration, the cheaper this trade.

# %% [markdown]
# ## 6.2 Execution failure after a critique
#
# After an escalation the leader reads one note and revises; a revision can fail even when the
# note was useful. We cannot grade a note automatically, so we select **candidates** by heuristic:
# the answer before the note was wrong, the note claims an error (a word such as "incorrect" or
# "should be", `failures.ERROR_WORDS`), and the revision is still wrong or unboxed. **This reads
# words, not reasoning.** Two stronger signals: the note brings in the gold answer, which neither
# question nor attempt held (`note_has_gold`), and the revision writes the gold answer yet does
# not box it (`revision_has_gold`). Stages the gate would have skipped count too.

# %%
outcomes = failures.revision_outcomes(lase, problems)
fig = failures.plot_revision_outcomes(outcomes)
plots.savefig(fig, "failure_revisions")
plt.show()
coarse = outcomes["outcome"].map(lambda o: "broken" if o.startswith("broke") else o if o in ("fixed", "kept right")
                                else "still wrong")  # the seven outcomes of failures.revision_outcomes, in four
pd.crosstab(outcomes["stage"], coarse)

# %% tags=["book-more"]
fails = failures.execution_failures(outcomes).sort_values(
    ["note_has_gold", "revision_has_gold", "stage"], ascending=[False, False, True], kind="stable")
display(Markdown(failures.describe_revisions(outcomes, fails)))
fails.set_index("problem_id")[["stage", "note_has_gold", "revision_has_gold", "answer"]].head(5)

# %% [markdown] tags=["book-more"]
# Transcript excerpts, stronger signals first (a boxed answer in a note was replaced by
# "[answer withheld]" before the leader read it):

# %% tags=["book-more"]
show = fails.drop_duplicates("problem_id").head(n_examples)
for r in show.itertuples():
    display(HTML(failures.render_exchange(lase, r.problem_id, r.stage, problems.get(r.problem_id), max_chars)))

# %% [markdown]
# **How to read it.** Read the excerpts before the count: the candidates mix notes that were not
# useful and leaders that could not use a useful note. **The selective-gain bound needs the second
# to be rare** (A2: with a correct seed, accuracy rises); a weak leader breaks it.

# %% [markdown] tags=["book-more"]
# **The paper's own failure cases** (Appendix H): a right critique the leader still executes
# wrongly, and a senior expert's note that sends a right answer astray. Where supporters name the
# failing step ("Step 2 fails", as the organisms' do) on problems with a known chain, both are
# found by rule; each study beside yours is searched:

# %% tags=["book-more"]
for study in shown[1:]:
    org_run = load_runs(study.path, ["lase"])["lase"]
    org_problems = problems_from_manifest(org_run.manifest)
    cases = failures.appendix_h_cases(org_run, org_problems)
    counts = cases.groupby("kind").size().reindex(list(failures.APPENDIX_H_RULES), fill_value=0)
    print(f"{study.label}: " + "; ".join(f"{k}: {n}" for k, n in counts.items()))
    for kind, group in cases.groupby("kind", sort=False):
        r = group.iloc[0]
        display(Markdown(f"**{kind}** ({r['problem_id']}, stage {r['stage']}; answer {r['prev_answer']} before the "
                         f"note, {r['answer']} after)"))
        display(HTML(failures.render_exchange(org_run, r["problem_id"], int(r["stage"]),
                                              org_problems.get(r["problem_id"]), max_chars)))
if len(shown) < 2:
    print("no study beside yours (studies): the Appendix-H search is skipped")

# %% [markdown]
# ## 6.3 Do weaker models escalate more?
#
# The expectation (the paper's, and chapter 01's) is that a weaker model is unsure more often, so
# the gate escalates more. We test it **across problem levels** (harder problems make a model
# relatively weaker) and **across studies**, replaying the gate on the full chains.

# %%
esc, cost = failures.level_view(lase, tau_lp, tau_h)
paper = failures.paper_escalation(tau_lp, sweep=False)  # the paper's costs; its sweep (Table 5) is chapter 05's
if esc["level"].nunique() > 2:  # levels and "all"
    fig = failures.plot_escalation(esc, cost, paper, tau_lp, tau_h)
    plots.savefig(fig, "failure_escalation")
    plt.show()
display(Markdown(failures.describe_escalation(esc, cost, paper)))

# %% [markdown] tags=["book-more"]
# **Across studies.** Two studies of the same problems (`control_traces`: both committed models
# on the same 80 level-1 problems; without a control, each study's own problems) give the
# paper's strong-vs-weak comparison. Per leader: accuracy, escalation rate (95% Wilson
# intervals), and accuracy on the problems it escalates and keeps (`acc_kept`): a gate sees only
# confidence, so a model whose wrong answers are confident keeps them however weak it is.

# %% tags=["book-more"]
models = run_store.load_studies(shown, ["lase"], require=["lase"])
control = run_store.control_studies(control_traces, traces)
if control:
    model_chains = chains_by_model(run_store.load_studies(control, ["lase"], require=["lase"]))
else:
    print("no control: comparing each study's own recording, which are not the same problems")
    model_chains = chains_by_model(models)
by_model = failures.escalation_by_model(model_chains, tau_lp, tau_h)
display(by_model.set_index("model")[["n", "leader_accuracy", "escalation_rate", "acc_escalated", "acc_kept"]])
display(Markdown(failures.describe_escalation_by_model(by_model)))
for label, model_runs in list(models.items())[1:]:  # each study beside yours, by level
    o_esc, o_cost = failures.level_view(model_runs["lase"], tau_lp, tau_h)
    if o_esc["level"].nunique() > 2:
        fig = failures.plot_escalation(o_esc, o_cost, paper, tau_lp, tau_h, model=label)
        plots.savefig(fig, "failure_escalation_by_level")
        plt.show()
    display(Markdown(f"**{label}**: " + failures.describe_escalation(o_esc, o_cost, paper)))
for label, model_runs in models.items():  # whether escalation can track weakness: chapter 02's separation
    display(Markdown(failures.describe_separation(label, confidence.confidence_frame(model_runs["lase"], stage=0))))

# %% [markdown] tags=["book-more"]
# ## 6.4 Answers that never get boxed
#
# An answer counts only if it sits in the last `\boxed{}`; anything else is unparsed, wrong and,
# for the gate, uncertain. **A revision is harder to box** than a first answer: the prompt is
# longer, carries a note, and the model may ramble or copy the note until the token limit.

# %% tags=["book-more"]
unp = failures.unparsed_by_stage(lase)
order = lase.stages.drop_duplicates("stage").sort_values("stage")["supporter"].tolist()[1:]
fig = failures.plot_unparsed(unp, order)
plots.savefig(fig, "failure_unparsed")
plt.show()
print(failures.describe_unparsed(unp))

# %% [markdown] tags=["book-more"]
# The extraction step recovers an answer where it can, so under the default grading such
# revisions count; strict grading counts them wrong (chapter 04 reports both). One revision that
# boxed no answer of its own:

# %% tags=["book-more"]
unboxed = outcomes[outcomes["answer_strict"].isna()].sort_values("stage", kind="stable")
print(f"{len(unboxed)} of {len(outcomes)} revisions box no answer of their own")
for r in unboxed.head(1).itertuples():
    display(HTML(failures.render_answer(lase, r.problem_id, r.stage, problems.get(r.problem_id), max_chars)))

# %% [markdown] tags=["seminar"]
# ## 6.5 Why no gain on the pointing organism
#
# The pointing organism (v5) is the instructive case: its supporters were trained to do what the
# paper asks of them. **Does gated LASE gain on it, and if not, why?** Three numbers, each from its
# recordings: whether **the gate separates** (AUROC), whether **the notes point and keep the
# rule**, and **fixes against breaks on the preregistered test**.

# %% tags=["seminar"]
point = next((s for s in shown if s.committed and s.path.name == "arith-organism-point"), None)
if point is not None:
    org_run = load_runs(point.path, ["lase"])["lase"]
    org_problems = problems_from_manifest(org_run.manifest)
    why = failures.why_no_gain(org_run, org_problems, preregistration.load(),
                               load_runs(point.path, ["lase-large"]).get("lase-large"))
    display(Markdown(failures.describe_why_no_gain(why, point.label)))
else:
    print("section 6.5 reads the committed preregistered study, which is not shown here: skipped")

# %% [markdown] tags=["book-more"]
# Two short exchanges, one pointer acted on and one not. Read the notes' own arithmetic too: a note
# can point at the right step while its own recomputation slips (a 135M devil's backward checks
# often do); what the leader can use is the pointer, not the note's numbers.

# %% tags=["book-more"]
if point is not None:
    for title, (pid, stage) in why["examples"].items():
        display(Markdown(f"**{title}** ({pid}, stage {stage}):"))
        display(HTML(failures.render_exchange(org_run, pid, stage, org_problems.get(pid), 320)))

# %% [markdown] tags=["seminar"]
# ## 6.6 The note or the leader? From v5's null result to what v6's gain is made of
#
# Gated LASE's first stage is one devil's note and one revision: **how good is the note**, and
# **can the leader use it** (the paper's Appendix H: the leader accepts a critique and still cannot
# rebuild the path)? Stage 1 is replayed on the problems v5's gate escalates, with two notes (*v5's
# own devil note*, or a *perfect note* written by code: the first failing step, never the answer)
# and two leaders (*v5's revision*, or a *pilot* revision trained on perfect notes; the third
# group, v6, is introduced below). A revision was to be trained further only if it fixed at least
# 25% and broke at most 5% (the round's bar).

# %% tags=["seminar"]
if point is not None:
    org_cfg = org_run.manifest["config"]  # the thresholds the replays were run at, not this chapter's
    alone = org_run.stages[org_run.stages["stage"] == 0].set_index("problem_id")["correct"].astype(bool)
    decomp = revision.decomposition_sources(org_run, org_problems, ceiling.load_rows(), org_cfg["tau_lp"],
                                            org_cfg["tau_h"])
    grid = revision.note_leader_grid(decomp)
    fig = failures.plot_note_vs_leader(grid)
    plots.savefig(fig, "failure_note_vs_leader")
    plt.show()
else:
    print("section 6.6 reads the committed pointing organism's study, which is not shown here: skipped")

# %% [markdown] tags=["seminar"]
# **Reading the bars.** Each group is one leader, each shade one note. No bar clears both of the
# round's bars, so that round stopped (v6's too: what was then tested is its gain over the leader alone). The pilot's bars were a lead found after the fact, so the
# next step was a test, not a claim: **organism v6** is v5 with the pilot's revision (retrained) as
# a second adapter for every revision after a note, its prediction and primary test preregistered
# before any fresh recording. Its verdict on 600 fresh problems, by both tests:

# %% tags=["seminar"]
if point is not None:
    prereg_v6 = preregistration.load(preregistration.V6_PATH) if preregistration.V6_PATH.is_file() else None
    display(Markdown(controls.describe_v6(prereg_v6, made_of=False, sensitivity=False)))

# %% [markdown] tags=["book-more"]
# The bars in words, then v6's verdict with its two sensitivity analyses (not preregistered):
# without the problems where a note states the answer, and without those that redo a training
# problem's arithmetic. Then the pilot's lead as found and as audited, v6's whole chain on the 200 spent problems that chose it
# (stage by stage, then its gain beside v5's: the prediction, not evidence), and every organism's
# round in one table:

# %% tags=["book-more"]
if point is not None:
    display(Markdown(revision.describe_note_leader(grid)))
    print(controls.describe_v6(prereg_v6, made_of=False))
    display(Markdown(revision.describe_pilot_audit(decomp["pilot reads v5's devil"],
                                                   revision.pilot_audit(decomp["pilot reads v5's devil"], org_problems,
                                                                        alone), alone)))
    v6_full = revision.V6_STUDY / "lase-full"
    if (v6_full / "manifest.json").is_file():
        v6_chains = preregistration.chains_of(load_runs(revision.V6_STUDY, ["lase"])["lase"])
        display(revision.stage_flow(v6_chains, org_cfg["tau_lp"], org_cfg["tau_h"]).set_index("stage"))
        spent = {"v5 (recorded)": revision.whole_chain_test(preregistration.chains_of(org_run), org_cfg["tau_lp"], org_cfg["tau_h"]),
                 "v6, spent problems": revision.whole_chain_test(v6_chains, org_cfg["tau_lp"], org_cfg["tau_h"])}
        display(Markdown(revision.describe_whole_chain(spent, org_cfg["tau_lp"], org_cfg["tau_h"])))
    display(revision.rounds_table(prereg=preregistration.load(), prereg_v6=prereg_v6).set_index("organism"))

# %% [markdown] tags=["seminar"]
# **What v6's gain is made of.** v6 differs from v5 only in the adapter that writes the leader's
# revisions, and that adapter redoes the whole chain after any note. So the gain could come from
# what the note says, from a second look at the attempt, or from a second solver answering the
# problems the gate picks. Controls preregistered before any call separate them on the same 364
# escalated problems: the recorded devil's note; **no note** (the same request with the note taken
# out); **another problem's note** (one of the same difficulty); and **the revision adapter alone**, given
# the problem only. The primary is note against no note at stage 1, by both tests; an interval
# within 7 points either way (half of what stage 1 gains on these problems) counts as *no
# difference that matters*.

# %% tags=["seminar"]
made_of = controls.load_controls() if point is not None else None
if made_of is not None:
    gain_parts = controls.primary(made_of.prereg, made_of.table)
    display(Markdown(controls.describe_primary(gain_parts, made_of.prereg)))
    display(controls.arm_counts(made_of.table).set_index("stage 1 reads"))
else:
    print("the controls of v6's gain read the committed v6 study and its control arms, which are not shown here: skipped")

# %% [markdown] tags=["seminar"]
# ## 6.7 The paper's headline: multi-agent accuracy at what cost?
#
# The paper's headline is multi-agent accuracy at near single-agent cost: LASE at about **1.3x** the
# tokens of the *single agent* (the paper's name for one model answering alone: our leader alone)
# on average (its Table 1), within a point of MV(7) at a fraction of MV's
# tokens. Here is the same question on organism v6's 600 fresh problems, each policy at its
# accuracy and its tokens per problem (prompt + completion), with 95% intervals both ways: the
# leader alone, gated LASE, MV(7) of the leader; the chain **stopped after stage 1** (a stage
# budget, replayed); the **cascade** (the same gate, then the revision adapter's own answer to the
# problem) and that adapter alone; and, built after the results, the gate followed by the
# **revision with no note** (the no-note control), no supporter at all. The shaded corner is the
# paper's aim as our preregistration fixed it (within a point of MV(7) at no more than 0.7x its
# tokens; chapter 07 judges the paper's cost claim by a stricter bar, under half of MV(7)'s tokens),
# the dotted line its 1.3x.
# Each colour is one family: blue a model alone, orange LASE's chain (whole, or stopped after stage
# 1, hollow), sky blue the gate with one revision-adapter call, green MV, purple the paper.

# %% tags=["seminar"]
if made_of is not None:
    v6_costs = controls.cost_table(made_of.run, made_of.table, made_of.mv)
    fig = controls.plot_cost(v6_costs, preregistration.AIM)
    plots.savefig(fig, "v6_cost")
    plt.show()
    display(Markdown(controls.describe_gain_parts(made_of)))
    display(Markdown(controls.describe_cost(v6_costs, controls.where_tokens_go(made_of.run), preregistration.AIM,
                                            controls.why_multiple(made_of.run), detail=False)))

# %% [markdown] tags=["book-more"]
# **What the gain is made of, in full**: the primary with every control beside it, then the controls'
# secondary contrasts, each by both tests with Holm's adjustment over the family
# (reported, no claim), the primary per level, the cost table, and where the whole chain's tokens go:
#
# **v6's secondary endpoints**, as its preregistration lists them: stage 1 on the escalated
# problems, the tokens, the paper's headline against MV(7) on the same fresh problems (the aim:
# within a point of MV(7) at no more than 0.7x its tokens), the notes that state the answer, and
# the control pair on level-1 problems no other recording uses. Each with both tests where it
# compares answers, **reported without a claim**: only the primary test above was fixed to decide.
#
# **The ceiling on every first answer** (not only the escalated ones: its own denominator, every wrong
# and right first answer of each committed full-chain recording), with the variants (b: the kind of
# error; c: the failing step's right value, a stronger supporter than the paper's prompts ask for),
# NoOp problems (one irrelevant quantity: errors of reading), and the ceiling's own stop rule (60%
# fixed, 5% broken), written before any note was sent (`benchmarks/ceiling.py`, `data/ceiling/`).

# %% tags=["book-more"]
if made_of is not None:
    display(Markdown(controls.describe_made_of(made_of)))
    display(Markdown(controls.secondary_markdown(controls.secondary(made_of.prereg, made_of.table))))
    display(v6_costs.set_index("policy").round(3))
    display(controls.where_tokens_go(made_of.run).head(8).round(3))
    display(Markdown(controls.describe_cost(v6_costs, controls.where_tokens_go(made_of.run), preregistration.AIM)))
    print(controls.describe_replay(controls.replay_check()))
if point is not None and prereg_v6 is not None:
    with pd.option_context("display.max_colwidth", None):
        display(revision.v6_secondary(prereg_v6))
if any(s.committed for s in shown):
    ceiling_rows = ceiling.load_rows()
    display(ceiling.summary(ceiling_rows).set_index("model"))
    print(ceiling.verdict(ceiling_rows))
    print(revision.learning_curve_verdict())

# %% [markdown]
# ## Try it yourself
#
# Move the gate and watch the confident errors trade against escalations (a live Jupyter session only).

# %% tags=["book-hide"]
if interactive:
    import ipywidgets

    def explore(tau_lp=tau_lp, tau_h=tau_h):
        display(confidence.gate_split(first, tau_lp, tau_h).to_frame(f"tau_lp={tau_lp:g}, tau_h={tau_h:g}"))
        failures.plot_confident_errors(first, tau_lp, tau_h)
        plt.show()

    ipywidgets.interact(explore,
                        tau_lp=ipywidgets.FloatSlider(value=tau_lp, min=0.5, max=0.999, step=0.005, description="tau_lp"),
                        tau_h=ipywidgets.FloatSlider(value=tau_h, min=0.05, max=1.5, step=0.05, description="tau_h"))

# %% [markdown] tags=["book-more"]
# ## Exercises
#
# Solutions: `notebooks/solutions/06_solutions.py` (run by the tests).
#
# **Exercise 06.1.** Confident errors: what share of each study's wrong first answers is *very*
# confident (`exp(LP_min)` at least 0.99)? No threshold on `exp(LP_min)` below 0.99 can send those
# to a supporter.
#
# **Exercise 06.2.** Breaks come from the gate's false alarms: a right first answer the gate calls
# unsure goes to the supporters, and a revision can turn it wrong. On each study, replay LASE on its
# full chains at a strict gate (0.95 / 0.2), the default (0.8 / 0.5) and a lax one (0.5 / 1.0): how
# many wrong first answers end right (fixes), how many right ones end wrong (breaks), and which gate
# nets most? (`replay.replay`; the first answers are stage 0 of the chains.)

# %% [markdown]
# ## Summary
#
# - **Confident errors** are built into the design: the gate cannot see them (6.1 counts what
#   escalating them anyway would have bought).
# - **Revisions** can fail after a useful note or follow a useless one; our selection is a
#   word-list heuristic, shown with its transcripts so you can judge it.
# - Whether a weaker model escalates more is a question of calibration first (6.3 prints the
#   answer for your studies); **unboxed revisions** are counted in 6.4.
# - **The note or the leader?** 6.6 replays stage 1 with each leader and each note on the same
#   escalated problems, tests organism v6 (v5 with a second adapter for its revisions) as
#   preregistered, and asks what its gain is made of: the note, a second look, or a second solver.
# - A supporter's **false alarms** are half of why stage 1 breaks right answers; the paper's Appendix I
#   proposes a group of supporters instead of one, built and measured in [appendix A5](A5_ensemble.ipynb).
