# %% [markdown]
# # Chapter 06: solutions
#
# The exercises read the leader's first answers of the two models the chapter shows: the embedded
# SmolLM2-135M (`data/traces/arith-smollm2`) and the pointing organism v5
# (`data/traces/arith-organism-point`).

# %%
from fractions import Fraction

from lase_nb.confidence import confidence_frame, gate_split
from lase_nb.notes import numbers_in
from lase_nb.prompts import WORKED_EXAMPLES
from lase_nb.runs import display_name, load_runs, problems_from_manifest

FOLDERS = ("data/traces/arith-smollm2", "data/traces/arith-organism-point")
runs = {display_name(f): load_runs(f, ["lase"])["lase"] for f in FOLDERS}
firsts = {name: confidence_frame(run, stage=0) for name, run in runs.items()}

# %% [markdown]
# **Exercise 06.1.** What share of each model's wrong first answers is *very* confident
# (`exp(LP_min)` at least 0.99)? No threshold on `exp(LP_min)` below 0.99 can send those to a supporter.

# %%
for name, f in firsts.items():
    wrong = f[~f["correct"].astype(bool) & f["answered"].astype(bool)]
    very = int((wrong["p_min"] >= 0.99).sum())
    print(f"{name}: {very} of {len(wrong)} wrong answers ({very / len(wrong):.0%}) have exp(LP_min) >= 0.99")
    assert very <= gate_split(f, 0.99, float("inf"))["errors"]

# %% [markdown]
# **Exercise 06.2.** Read the rows: what are the most common wrong first answers of each model, and
# what does the most common one suggest (a copied example, a number from the question, an off-by-one)?
#
# Each wrong answer is put in the first kind it fits: the answer of a worked example the prompt
# showed (a copy), a number written in the question, one away from the gold answer, or none of
# these (an arithmetic slip or a wrong operation).

# %%
examples = {v for _, answer in WORKED_EXAMPLES["number"] for v in numbers_in(answer.split("boxed")[-1])}


def kind_of(answer, problem) -> str:
    value = next(iter(numbers_in(str(answer))), None)
    if value is None:
        return "not a number"
    if value in examples:
        return "a worked example's answer"
    if value in numbers_in(problem.question):
        return "a number from the question"
    if abs(value - Fraction(str(problem.gold))) == 1:
        return "off by one"
    return "another number"


MEANS = {"a worked example's answer": "it copies an example", "a number from the question": "it repeats a number it read",
         "off by one": "its arithmetic slips by one, a carry or a borrow",
         "another number": "a slip elsewhere or a wrong operation", "not a number": "no number at all"}

for name, f in firsts.items():
    problems = problems_from_manifest(runs[name].manifest)
    wrong = f[~f["correct"].astype(bool) & f["answered"].astype(bool)]
    wrong = wrong.assign(kind=[kind_of(a, problems[p]) for a, p in zip(wrong["answer"], wrong["problem_id"])])
    top = wrong["answer"].value_counts().head(5)
    common = wrong[wrong["answer"] == top.index[0]]["kind"].value_counts()
    counts = wrong["kind"].value_counts()
    print(f"{name}: the most common wrong answers {({k: int(v) for k, v in top.items()})} (of {len(wrong)})")
    print(f"  the most common, {top.index[0]}, on {top.iloc[0]} problems: "
          + ", ".join(f"{k} {v}" for k, v in common.items()))
    print("  all its wrong answers: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    copied = int(counts.get("a worked example's answer", 0))
    print(f"  reading: {top.index[0]} is "
          + ("one mistake repeated" if len(common) == 1 else f"no single mistake: its {top.iloc[0]} cases are "
             f"{len(common)} kinds of error that happen to land on the same value")
          + (f"; the worked examples' answers appear {copied} times, so the model does not copy them. "
             if runs[name].manifest["config"].get("examples") else "; it is shown no worked example to copy. ")
          + "; ".join(f"{v} of {len(wrong)} are {k} ({MEANS[k]})" for k, v in counts.head(2).items()) + ".")
    assert counts.sum() == len(wrong) and top.sum() <= len(wrong)
