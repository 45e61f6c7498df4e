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
# # A5. A group of supporters at each stage: the paper's Appendix I, built (appendix to chapter 06)
#
# The LASE paper closes (Appendix I) with one direction it did not build: replace the single
# supporter at each stage by a small group that debates among itself and hands the leader one
# consensus signal, more robust, at a higher cost. [Chapter 06](06_failure_modes.ipynb) (6.6) shows
# where robustness could matter: a supporter that raises a false alarm on a right answer invites the leader to break it.
# Independent supporters rarely share a false alarm unless their errors are shared, so a vote or
# a debate among them could keep the pointers and drop the alarms. **That is a hypothesis, not a
# result**: this appendix states the design, its cost, and what spent problems show, without a
# claim: the embedded model's recording beside LASE's (A5.3-A5.4) and the organism's first stage
# replayed with one devil or a vote of three (A5.5). No model is called.
#
# The strategy is `lase-ensemble` (`lase_nb/strategies.py`); this appendix's logic lives in
# `lase_nb/chapters/ensemble.py`.

# %% tags=["parameters"]
traces = "committed"  # a study holding LASE's full chain (lase-full/); "committed": data/traces/arith-smollm2
group_traces = "committed"  # a study holding a lase-ensemble/ run of the same problems; "committed": data/traces/arith-smollm2-ensemble
stage1_traces = "committed"  # the organism's stage-1 replay (ensemble_stage1.py's --out); "committed": data/revision
tau_lp = 0.8  # gate: exp(LP_min) below this is uncertain
tau_h = 0.5  # gate: H_max (nats) above this is uncertain
seed = 0  # bootstrap seed
interactive = None  # this appendix makes no widgets

# %% tags=["book-hide"]
import pandas as pd
from IPython.display import Markdown, display

from lase_nb import plots
from lase_nb import runs as run_store
from lase_nb.chapters import ensemble

plots.set_style()
pd.set_option("display.precision", 3)
shown = run_store.chapter_studies(traces, None)
group_folder = run_store.COMMITTED_DIR / ensemble.COMMITTED_GROUP if group_traces == "committed" else group_traces

# %% [markdown]
# ## A5.1 The design
#
# LASE's gate and star stay as they are: the leader answers; while its answer is uncertain
# ($U = 1$), the stages run in order (devil's advocate, collaborator, senior expert), and after
# each the leader revises. At an escalated stage, instead of one supporter:
#
# 1. **k supporters** of that stage's role write notes on the same attempt, sampled with distinct
#    seeds at the run's `temperature` (0.7 by default), so that their errors can differ;
# 2. **r reading rounds**: each reads the others' previous notes and writes its note again
#    ($r = 0$: independent notes);
# 3. **one consensus note** goes where LASE's single note goes, formed in one of two ways:
#    - **the vote**: each supporter ends its note with one verdict line, "step N fails" or
#      "every step holds"; the majority verdict wins, ties (and no verdict at all) go to "holds",
#      and the leader reads the first note that carries the winning verdict (the verdict line
#      alone when no note voted);
#    - **the synthesis**: a moderator reads the k last notes and writes one note, under the same
#      rule as every supporter: never the final answer, never a `\boxed{}`.
#
# Every note counts against the supporters' rule in the recording's manifest
# (`notes_stating_answer`), as in every LASE run: the pipeline never filters a note.

# %%
fig = ensemble.draw_group_star(k=3, rounds=1, consensus="vote")
plots.savefig(fig, "ensemble_star");

# %% [markdown]
# ## A5.2 What it costs
#
# An escalated LASE stage makes 2 calls: one note and the revision. A group's stage makes
# $k\,(r+1)$ notes, plus the consensus (one moderator call under the synthesis, none under the
# vote, which code counts), plus the revision: $k\,(r+1) + 1$ calls with the vote and
# $k\,(r+1) + 2$ with the synthesis. The table is computed from the strategy's record, the same
# formula the recording plan uses.

# %%
print(ensemble.describe_cost())
ensemble.cost_table().set_index("k x (r + 1) notes")

# %% [markdown]
# ## A5.3 Measured on the embedded model, beside LASE (exploratory)
#
# The group's recording holds every stage, as `lase-full` does; the line below says what it
# recorded and on which problems. The committed one shares its problems with chapter 05's full
# chain, which the chapters have already looked at: on spent problems, what follows is a look,
# not a test. The first table: each recording's leader alone, gated at the thresholds above, and
# always interacting.

# %%
pair = ensemble.load_pair(shown[0].path, group_folder)
if pair is not None:
    print(ensemble.describe_recording(pair))
    display(ensemble.policy_table(pair, tau_lp, tau_h))
    print(ensemble.describe_pair(pair, tau_lp, tau_h, seed=seed))

# %% [markdown]
# **Did the vote drop false alarms?** Each escalated stage read an attempt that was right or
# wrong. On a right attempt a "step N fails" verdict is a false alarm; on a wrong one it is a
# pointer. The table counts the supporters' own verdicts and the consensus, stage by stage. A vote
# can only work with supporters that write its verdict line and sometimes say a step fails, so
# read the `verdicts` and `say fails` columns first: can this model take part in a vote at all?

# %%
if pair is not None:
    verdicts = ensemble.verdict_table(pair.group_run)
    display(verdicts)
    print(ensemble.describe_verdicts(verdicts))

# %% [markdown]
# ## A5.4 Both fronts, by replay
#
# Both recordings hold every stage, so chapter 05's replay gives each one's accuracy and tokens at
# any thresholds without a model call. Change `tau_lp` / `tau_h` above and rerun to move the
# marked points. The faint points are every threshold pair of the grid; each front (the line
# through its circles) keeps the pairs that no other pair beats at equal or lower cost. A front
# of one point means that escalating never paid on these problems.

# %%
if pair is not None:
    front = ensemble.fronts(pair)
    fig = ensemble.plot_fronts(front, pair, tau_lp, tau_h)
    plots.savefig(fig, "ensemble_fronts")
    print(ensemble.describe_fronts(front))

# %% [markdown]
# ## A5.5 The organism's stage 1: one devil or a vote of three (exploratory)
#
# Where supporters can point, the question is sharper. On the 104 problems the default gate
# escalates on the pointing organism's recording (chapter 06, 6.6: 64 wrong and 40 right first
# answers, spent problems), stage 1 is replayed twice: with the **recorded devil's note**, and with
# the **vote of 3 devils** sampled from the same model at temperature 0.7 (the strategy's own vote:
# the majority verdict, ties to "holds"). Each note is read by v5's revision and by v6's. What we
# expected was written before any vote was sampled (`ensemble.STAGE1_EXPECTATION`, in
# `data/revision/README.md`): fewer false alarms, not half as many, and a few pointers lost.

# %%
stage1 = ensemble.load_stage1(None if stage1_traces == "committed" else stage1_traces)
if stage1 is None:
    print("the stage-1 replay is not run here (python data/revision/ensemble_stage1.py writes it)")
else:
    s1_rows, s1_meta = stage1
    s1_arms, s1_paired = ensemble.stage1_arms(s1_rows), ensemble.stage1_paired(s1_rows)
    display(s1_arms.set_index(["notes", "leader"]))
    display(s1_paired.set_index(["measure", "leader"]))
    print(ensemble.describe_stage1(s1_arms, s1_paired, k=int(s1_meta["k"])))
    print(ensemble.describe_expectation(ensemble.stage1_expectation(s1_paired)))

# %% [markdown]
# **Where this could be tested.** A lead, if one shows here, would be a hypothesis for a
# preregistered test on fresh problems with a model whose supporters can point (chapter 06's
# organism), not a finding: these problems were spent, and one recording of a 135M model says
# little about a group's value.
