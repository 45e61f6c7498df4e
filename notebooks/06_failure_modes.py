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
# **What you will learn**
#
# 1. **Confident errors**: wrong answers that pass the gate ($U=0$) and are never reconsidered,
#    and what escalating them anyway would have bought.
# 2. **Execution failure after a critique**: a supporter points at a real problem and the leader
#    still fails to produce a right answer. We select these with a stated heuristic and show the
#    transcripts.
# 3. **Weak models escalate more**: how the escalation rate and the cost of LASE move with problem
#    difficulty (the organism's three levels) and across two models, set against the paper's
#    strong and weak models.
# 4. **Answers that never get boxed**: how often the leader's revision has no extractable
#    answer, and why.
# 5. **Why no gain here**: the three numbers that explain why LASE gains nothing even on the
#    organism whose supporters point at the right step (section 6.5, the chapter's last cell).
#
# **You need** chapters 02 (the gate) and 03 (the pipeline). No model is called: everything comes
# from the recorded runs in `traces` (the full-chain LASE run, plus the baselines when present).
#
# The chapter's logic lives in `lase_nb/chapters/failures.py`; runs are loaded by `lase_nb/runs.py`,
# transcripts drawn by `lase_nb/transcripts.py`, and the strategies' table is
# `lase_nb.runs.comparison_table`, as in chapter 4.
#
# **What the paper reported.** Its calibration figure (Figure 3) shows that even strong models'
# most confident answers are not always right: 85.5% accuracy where the lowest answer-token
# probability is at least 0.99. On the weaker Llama-3-8B, LASE spent roughly 4.6x the single
# agent's tokens (Appendix E.2) against about 1.8x on GPT-4.1-mini: a weaker model escalates more
# and pays more. Section 6.3 sets our costs beside these two; the paper's escalation rates per
# threshold (its Table 5) are in chapter 05, section 5.4.

# %% tags=["parameters"]
traces = "../data/traces/arith-smollm2"  # folder of recorded runs; needs <traces>/lase-full
point_traces = "../data/traces/arith-organism-point"  # the pointing organism (v5)'s recorded full chains, compared in 6.2 and 6.3; None: skip
control_traces = "../data/traces/control-level1"  # both models' full chains on the same level-1 problems (6.3); None: skip
tau_lp = 0.8  # gate threshold on exp(LP_min)
tau_h = 0.5  # gate threshold on H_max (nats)
n_examples = 2  # transcript examples shown per failure mode
max_chars = 450  # each message is clipped to this many characters
interactive = True  # False under papermill: no widgets are created

# %%

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import HTML, Markdown, display

from lase_nb import confidence, plots, preregistration
from lase_nb.chapters import failures
from lase_nb.replay import summarize
from lase_nb.runs import (by_display_name, chains_by_model, comparison_table, control_models, describe_sampling_gap,
                          display_name, load_models, load_runs, problems_from_manifest, sampling_gap, strategy_tables)

plots.set_style()
pd.set_option("display.precision", 3)
pd.set_option("display.max_colwidth", 80)
runs = load_runs(traces, require=["lase-full"])
lase = runs["lase-full"]
problems = problems_from_manifest(lase.manifest)
first = confidence.confidence_frame(lase, stage=0)
m = lase.manifest
print(f"{m['backend']}:{m['model']} on {m['dataset']}, {len(first)} problems, full chain recorded; "
      f"runs found: {', '.join(runs)}")

# %% [markdown]
# ## 6.1 Confident errors
#
# The gate accepts an answer when `exp(LP_min) >= tau_lp` and `H_max <= tau_h`. **A wrong answer
# that clears both is a confident error: LASE stops at once and never shows it to a supporter.**
# The paper accepts this on purpose: checking confident answers would cost tokens on the many
# right ones. Because our run recorded the full chain anyway, we can see what the supporters would
# have done with these answers.
#
# **Predict, then run.** Of the leader's wrong first answers, what share does the default gate
# (0.8 / 0.5) let through as *sure*, so that no supporter ever sees them? The next cells answer.

# %%
split = confidence.gate_split(first, tau_lp, tau_h)
ce = failures.confident_errors(lase.stages, tau_lp, tau_h)
fig = failures.plot_confident_errors(first, tau_lp, tau_h)
plots.savefig(fig, "failure_confident_errors")
plt.show()
print(f"{int(split['confident_errors'])} of {int(split['errors'])} wrong first answers pass the gate; escalating them anyway, "
      f"some later stage is right on {int(ce['later_right'].sum())} and the last stage on {int(ce['final_correct'].sum())}")
ce.head(10)

# %% [markdown]
# **What it shows.** Most of this model's wrong answers are confident errors, and they sit in the
# same corner of the figure as its right answers, with almost the same typical `exp(LP_min)` and
# `H_max`: no threshold removes them without escalating most of the right answers too (chapter 02
# measures the overlap). Nor would escalating them have helped: the full chain, which recorded
# what the supporters would have done anyway, almost never turns one into a right answer.
#
# **A confident error, found by hand.** From the recording's stage-0 rows: the gate accepts an
# answer when it exists, `exp(LP_min) >= tau_lp` and `H_max <= tau_h`; a confident error is an
# accepted answer that is wrong. Sorted from the most confident, and checked against
# `failures.confident_errors`:

# %%
st = lase.stages
lead = st[st["stage"] == 0].set_index("problem_id")
p, h = lead["p_min"].astype(float), lead["h_max"].astype(float)
accepted = (p >= tau_lp) & (h <= tau_h)  # a missing answer (NaN) compares False: never accepted
by_hand = lead[accepted & ~lead["correct"].astype(bool)].assign(p_min=p).sort_values("p_min", ascending=False,
                                                                                      kind="stable")
assert by_hand.index.astype(str).tolist() == ce["problem_id"].tolist()
if len(by_hand):
    worst = by_hand.index[0]
    chain = st[st["problem_id"] == worst].sort_values("stage")
    assert chain.loc[chain["stage"] > 0, "correct"].astype(bool).any() == ce["later_right"].iloc[0]
    print(f"the most confident error: {worst}, answer {by_hand['answer'].iloc[0]} (gold {problems[worst].gold if worst in problems else '?'}), "
          f"exp(LP_min) = {by_hand['p_min'].iloc[0]:.3f}, H_max = {by_hand['h_max'].iloc[0]:.3f} nats")
    display(chain[["stage", "supporter", "answer", "correct", "p_min", "h_max"]])

# %% [markdown]
# The most confident of them, as the leader wrote them:

# %%
for r in ce.head(n_examples).itertuples():
    display(HTML(failures.render_answer(lase, r.problem_id, 0, problems.get(r.problem_id), max_chars)))

# %% [markdown]
# **How to read the figure.** Both axes measure the distance from certainty on a log scale, so the
# crowded corner of near-certain answers opens up: bottom right is the most confident. The counts
# of each gate region are printed in it.
#
# **What the paper says.** Confident errors are a deliberate trade: LASE never reconsiders an
# answer with $U=0$. The better a model's calibration, the cheaper this trade.

# %% [markdown]
# ## 6.2 Execution failure after a critique
#
# After an escalation the leader reads one supporter's note and revises. A revision can fail even
# when the note was useful. We cannot grade a note's correctness automatically, so we select
# **candidates** with a heuristic, and say so:
#
# - the leader's answer *before* the note was wrong (so there was a real error to point at);
# - the note claims an error (it contains a word such as "incorrect", "mistake" or "should be";
#   see `lase_nb.chapters.failures.ERROR_WORDS`);
# - the revision is still wrong, or has no boxed answer.
#
# **This reads words, not reasoning**: a note can say "incorrect" about the wrong step. Two
# stronger signals, when they occur: the note brings in the gold answer, which neither the
# question nor the attempt contained (`note_has_gold`: the supporter all but handed it over), and
# the leader's revision writes the gold answer somewhere yet does not end with it boxed
# (`revision_has_gold`: it had the answer and failed to deliver it).
# All revisions come from the full-chain recording, so stages the gate would have skipped count too.

# %%
outcomes = failures.revision_outcomes(lase, problems)
fig = failures.plot_revision_outcomes(outcomes)
plots.savefig(fig, "failure_revisions")
plt.show()
failures.outcome_counts(outcomes).pivot_table(index=["before", "stage", "supporter"], columns="outcome",
                                              values="count", aggfunc="sum", fill_value=0).astype(int)

# %%
fails = failures.execution_failures(outcomes).sort_values(
    ["note_has_gold", "revision_has_gold", "stage"], ascending=[False, False, True], kind="stable")
display(Markdown(failures.describe_revisions(outcomes, fails)))
fails[["problem_id", "stage", "supporter", "note_has_gold", "revision_has_gold", "prev_answer", "answer",
       "outcome"]].head(10)

# %% [markdown]
# Transcript excerpts (the notes are shown as the supporter wrote them; any boxed answer in them
# was replaced by "[answer withheld]" before the leader read it). Exchanges with the stronger
# signals come first.

# %%
show = fails.drop_duplicates("problem_id").head(n_examples)
for r in show.itertuples():
    display(HTML(failures.render_exchange(lase, r.problem_id, r.stage, problems.get(r.problem_id), max_chars)))

# %% [markdown]
# **How to read it.** Read the excerpts before trusting the count: a small model's notes can be
# vague, repetitive or self-contradictory, and its leader may echo the note instead of solving
# again, or run out of tokens before boxing an answer. So the candidates mix two failures: notes
# that were not actually useful, and leaders that could not use a useful note. **The paper's selective-gain bound needs the second to
# be rare** (assumption A2: with a correct seed, accuracy rises); a weak leader breaks it.

# %% [markdown]
# **The paper's own failure cases, on the organism.** The paper's Appendix H shows two kinds of
# failure: a supporter whose critique is right, after which the leader still executes the fix
# wrongly; and a senior expert's note that sends a right answer astray. The organism's supporters
# name the step they find failing ("Step 2 fails"), so both kinds can be found by rule, not by a
# word list:

# %%
if point_traces:
    org_run = load_runs(point_traces, ["lase"])["lase"]
    org_problems = problems_from_manifest(org_run.manifest)
    cases = failures.appendix_h_cases(org_run, org_problems)
    display(pd.DataFrame({"rule": failures.APPENDIX_H_RULES,
                          "cases": cases.groupby("kind").size().reindex(list(failures.APPENDIX_H_RULES), fill_value=0)}))
    for kind, group in cases.groupby("kind", sort=False):
        r = group.iloc[0]
        display(Markdown(f"**{kind}** ({r['problem_id']}, stage {r['stage']}; answer {r['prev_answer']} before the "
                         f"note, {r['answer']} after)"))
        display(HTML(failures.render_exchange(org_run, r["problem_id"], int(r["stage"]),
                                              org_problems.get(r["problem_id"]), max_chars)))
else:
    print("no organism recording (point_traces=None): the Appendix-H cases are skipped")

# %% [markdown]
# ## 6.3 Do weaker models escalate more?
#
# The expectation (the paper's, and chapter 01's) is that a weaker model is unsure more often, so
# the gate sends more problems to the supporters. We test it two ways: **across problem levels** (1 to 3 arithmetic steps; harder problems make the same
# model relatively weaker) and **across models** (the embedded model against the organism). The
# default recording has one level, so its figure shows that level alone; the organism's recording,
# below, mixes three. The cost comes from replaying the gate on the full chains (no model calls).

# %%
esc, cost = failures.level_view(lase, tau_lp, tau_h)
paper = failures.paper_escalation(tau_lp, sweep=False)  # the paper's costs; its sweep (Table 5) is chapter 05's
fig = failures.plot_escalation(esc, cost, paper, tau_lp, tau_h)
plots.savefig(fig, "failure_escalation")
plt.show()
esc.merge(cost[["level", "solo_tokens", "lase_tokens", "multiplier", "lase_accuracy"]], on="level")

# %%
display(Markdown(failures.describe_escalation(esc, cost, paper)))

# %% [markdown]
# **Across models, on the same problems.** A second model gives the comparison the paper made with
# its weaker model: the model organism (the embedded model with a LoRA adapter trained in this
# repository; chapter 03). The controlled set (`control_traces`) holds both models' full chains on
# **the same 80 level-1 problems** of the held-out split, gated at the same thresholds: the
# embedded model with its two worked examples (without them it rarely boxes an answer), the
# organism zero-shot; that is the one difference. The table gives each leader's accuracy, how
# often the gate escalates it (95% Wilson intervals), and how accurate the leader is on the
# problems it escalates and on those it keeps. (The two models' gains and regimes on these same
# problems, with their tests, are chapter 03's table, section 3.4.)

# %%
models = load_models(by_display_name([traces, point_traces]), ["lase"], require=["lase"])
if control_traces:
    model_chains = chains_by_model(control_models(control_traces))
else:  # different problems: the rates below are not a controlled comparison
    print("control_traces=None: comparing each model's own recording, which are not the same problems")
    model_chains = chains_by_model(models)
by_model = failures.escalation_by_model(model_chains, tau_lp, tau_h)
display(by_model)
display(Markdown(failures.describe_escalation_by_model(by_model)))

# %% [markdown]
# **Reading the escalation rates.** The paper's expectation, that a weaker model escalates more,
# assumes its errors come with doubt. A gate sees only confidence: a model whose wrong answers are
# confident (section 6.1's confident errors) keeps them, and escalates little however weak it is.
# Compare the `acc_kept` column above (the leader's accuracy on the answers the gate lets through)
# with the escalation rate: on the shipped recordings the embedded model keeps most of its wrong
# answers, while the organism's doubt tracks its errors (chapter 02's AUROC), so the organism
# escalates more often on the same problems. Which model escalates more is thus a question of
# calibration first and of strength second.

# %% [markdown]
# **Across difficulty, on one model.** The organism's recording mixes levels 1 to 3, so the same
# analysis as above can compare problems of different difficulty on one leader: the harder the
# level, the relatively weaker the model.

# %%
for label, model_runs in list(models.items())[1:]:
    o_esc, o_cost = failures.level_view(model_runs["lase"], tau_lp, tau_h)
    fig = failures.plot_escalation(o_esc, o_cost, paper, tau_lp, tau_h)
    fig.axes[0].set_title(f"{label}: " + fig.axes[0].get_title())
    plots.savefig(fig, "failure_escalation_by_level")
    plt.show()
    display(o_esc.merge(o_cost[["level", "solo_tokens", "lase_tokens", "multiplier", "lase_accuracy"]], on="level"))
    display(Markdown(failures.describe_escalation(o_esc, o_cost, paper)))

# %% [markdown]
# **What it shows.** Each escalated problem costs many times a solo answer here, because every
# stage pastes the problem, the attempt and a note into a new prompt and the small model writes
# long revisions; so even a modest escalation rate multiplies the bill, as the paper saw with its
# weaker model. Whether escalation rises with difficulty depends on calibration (chapter 02): on
# each model, how well the confidence tells its wrong first answers from its right ones:

# %%
for label, model_runs in models.items():
    display(Markdown(failures.describe_separation(label, confidence.confidence_frame(model_runs["lase"], stage=0))))

# %% [markdown]
# **Debate below the single agent, and why.** When the baseline runs are present, the strategies
# in which no one or everyone reads (single agent, MV, MAD), gated LASE and LASE through every
# stage (95% Wilson intervals, as in chapter 4; exact McNemar test against the single agent on the
# same problems). Then the measured cause of MAD's low accuracy: before any agent reads another,
# its round-1 agents (and MoA's first layer, and MV's samples) answer the single agent's own prompt
# *sampled* at a temperature, while the single agent decodes greedily. How often each first answer
# is right, graded by its own box:

# %%
tables = strategy_tables(runs, tau_lp, tau_h)  # "lase": gated, replayed at (tau_lp, tau_h); "lase-full": every stage
present = failures.debate_runs(list(tables)) + ["lase"]
if "mad" in tables or "mv" in tables:
    table = comparison_table({s: tables[s] for s in tables if s in present})
    config = lase.manifest.get("config", {})
    display(table.rename(index=lambda s: plots.label(s, config))[
        ["n", "accuracy", "acc_lo", "acc_hi", "accuracy_strict", "avg_tokens", "token_multiplier", "p_vs_single"]])
    gap = sampling_gap(runs, problems)
    display(gap[["first answers", "temperature", "answers", "right", "accuracy", "acc_lo", "acc_hi", "gap", "gap_lo",
                 "gap_hi"]])
    display(Markdown(describe_sampling_gap(gap)))
else:
    print("No baseline runs next to lase-full; record them with `python data/traces/record.py` (or `make traces`).")

# %% [markdown]
# ## 6.4 Answers that never get boxed
#
# An answer counts only if it sits in the last `\boxed{}`; anything else is unparsed, counted
# wrong and, for the gate, uncertain. A small model boxes its first answer when shown worked
# examples, but **a revision is harder to box**: the prompt is longer, it carries a supporter's
# note, and the model may ramble or copy the note until it hits the token limit.

# %%
unp = failures.unparsed_by_stage(lase)
order = lase.stages.drop_duplicates("stage").sort_values("stage")["supporter"].tolist()[1:]
fig = failures.plot_unparsed(unp, order)
plots.savefig(fig, "failure_unparsed")
plt.show()
unp

# %%
recorded = lase.manifest.get("config", {})  # the full chain's problems table is gated LASE at its recorded thresholds
gated = f"LASE, gated as recorded ({recorded.get('tau_lp')} / {recorded.get('tau_h')})"
summarize(pd.concat([r.problems.assign(strategy=gated if n == "lase-full" else n) for n, r in runs.items()]))[
    ["problems", "accuracy", "accuracy_strict", "unparsed", "cap_hit_rate"]]

# %% [markdown]
# **What it shows.** The leader boxes its first answers, but almost none of its revisions: they
# mostly fall into a verbatim loop that the local backend stops, or end without writing a box. The
# answer-extraction step (ask for the final answer alone) recovers an answer for them, so under
# the default grading they count; strict grading would count every one of them wrong. The table
# above gives each strategy's share of unparsed answers.
#
# One revision that boxed no answer of its own (its graded answer, if any, came from the
# extraction step):

# %%
unboxed = outcomes[outcomes["answer_strict"].isna()].sort_values("stage", kind="stable")
print(f"{len(unboxed)} of {len(outcomes)} revisions box no answer of their own")
for r in unboxed.head(1).itertuples():
    display(HTML(failures.render_answer(lase, r.problem_id, r.stage, problems.get(r.problem_id), max_chars)))

# %% [markdown]
# ## 6.5 Why no gain here
#
# The embedded model's notes cannot correct it (chapter 03, section 3.4): no gain is expected.
# The pointing organism is the instructive case: its supporters were trained to do what the paper
# asks of them, and gated LASE still gains nothing. Three numbers carry the reason, each from
# its recordings (`failures.why_no_gain`): **the gate separates** (AUROC), **the notes point and
# keep the rule**, and **fixes against breaks on the preregistered test**; then two short
# exchanges, one pointer acted on and one not.

# %%
if point_traces:
    why = failures.why_no_gain(org_run, org_problems, preregistration.load(),
                               load_runs(point_traces, ["lase-large"]).get("lase-large"))
    display(Markdown(failures.describe_why_no_gain(why, display_name(point_traces))))
    for title, (pid, stage) in why["examples"].items():
        display(Markdown(f"**{title}** ({pid}, stage {stage}):"))
        display(HTML(failures.render_exchange(org_run, pid, stage, org_problems.get(pid), 320)))
else:
    print("no pointing organism recording (point_traces=None): section 6.5 is skipped")

# %% [markdown]
# ## Try it yourself
#
# Move the gate and watch the confident errors trade against escalations. (Under papermill
# `interactive` is False and no widget is made.)

# %%
if interactive:
    import ipywidgets as widgets

    def explore(tau_lp=tau_lp, tau_h=tau_h):
        display(confidence.gate_split(first, tau_lp, tau_h).to_frame(f"tau_lp={tau_lp:g}, tau_h={tau_h:g}"))
        failures.plot_confident_errors(first, tau_lp, tau_h)
        plt.show()

    widgets.interact(explore,
                     tau_lp=widgets.FloatSlider(value=tau_lp, min=0.5, max=0.999, step=0.005, description="tau_lp"),
                     tau_h=widgets.FloatSlider(value=tau_h, min=0.05, max=1.5, step=0.05, description="tau_h"))

# %% [markdown]
# ## Exercises
#
# Solutions are kept apart, in `notebooks/solutions/06_solutions.py` (run it as a script or open it
# as a notebook); the test suite runs them, so they stay right.
#
# **Exercise 06.1.** What share of each model's wrong first answers is *very* confident
# (`exp(LP_min)` at least 0.99)? No threshold on `exp(LP_min)` below 0.99 can send those to a supporter.
#
# **Exercise 06.2.** Read the rows: what are the most common wrong first answers of each model, and
# what does the most common one suggest (a copied example, a number from the question, an off-by-one)?

# %% [markdown]
# ## Summary
#
# - **Confident errors** are built into the design: the gate cannot see them. With the embedded
#   model they are most of the leader's wrong first answers, and they look like its right ones.
# - **Revisions** of a weak leader rarely fix a wrong answer, even after notes that flag an
#   error, and they lose some right ones; our selection of such cases is a word-list heuristic,
#   shown with its transcripts so you can judge it.
# - **Weak models** pay more for LASE: the paper's Llama-3-8B spent a larger token multiple than
#   GPT-4.1-mini, and our small model spends several times its solo tokens on a modest escalation
#   rate (section 6.3 has the numbers). On the same problems, though, the gate escalates a model
#   as often as its *doubt* says, not as its weakness does: a weak model with confident errors
#   escalates less (section 6.3 tests it on both models).
# - **Debate falls below the single agent** here for a measured reason: its first round is sampled
#   and far less often right than the greedy single agent, before any agent reads another.
# - **Unboxed revisions** are the rule for this model, not the exception; the extraction step
#   recovers their answers, and strict grading reports what happens without it.
# - **Why no gain here** (section 6.5): on the pointing organism the gate separates and the notes
#   point at the right step without stating the answer, but the 135M leader cannot act on the
#   pointer: fixes and breaks cancel on the preregistered test.
