# %% [markdown]
# # Chapter 06: solutions
#
# The exercises read the leader's first answers of the two models the chapter shows: the embedded
# SmolLM2-135M (`data/traces/arith-smollm2`) and the pointing organism v5
# (`data/traces/arith-organism-point`).

# %%
import os

from lase_nb.chapters import failures
from lase_nb.confidence import confidence_frame, gate_split
from lase_nb.runs import display_name, load_runs, problems_from_manifest

FOLDERS = (os.environ.get("LASE_SOLUTION_TRACES", "data/traces/arith-smollm2"), "data/traces/arith-organism-point")
runs = {display_name(f): load_runs(f, ["lase"])["lase"] for f in FOLDERS}
firsts = {name: confidence_frame(run, stage=0) for name, run in runs.items()}

# %% [markdown]
# **Exercise 06.1.** Confident errors: what share of each study's wrong first answers is *very*
# confident (`exp(LP_min)` at least 0.99)? No threshold on `exp(LP_min)` below 0.99 can send those
# to a supporter.

# %%
for name, f in firsts.items():
    wrong = f[~f["correct"].astype(bool) & f["answered"].astype(bool)]
    very = int((wrong["p_min"] >= 0.99).sum())
    print(f"{name}: {very} of {len(wrong)} wrong answers ({very / len(wrong):.0%}) have exp(LP_min) >= 0.99")
    assert very <= gate_split(f, 0.99, float("inf"))["errors"]

# %% [markdown]
# **Exercise 06.2.** Failure after a critique: from section 6.2's revision outcomes, at which
# stage does the leader most often turn a right answer wrong ("broken"), and what share of the
# broken revisions box no answer of their own (section 6.4)?

# %%
for name, run in runs.items():
    outcomes = failures.revision_outcomes(run, problems_from_manifest(run.manifest))
    broken = outcomes[outcomes["outcome"].str.startswith("broke")]
    by_stage = broken.groupby("stage").size().reindex(sorted(outcomes["stage"].unique()), fill_value=0)
    unboxed = int(broken["answer_strict"].isna().sum())
    if broken.empty:
        print(f"{name}: no revision breaks a right answer")
        continue
    worst = int(by_stage.idxmax())
    print(f"{name}: {len(broken)} broken revisions, by stage { {int(k): int(v) for k, v in by_stage.items()} }: most at stage {worst}; "
          f"{unboxed} of {len(broken)} ({unboxed / len(broken):.0%}) box no answer of their own")
    assert by_stage.sum() == len(broken) and unboxed <= len(broken)
