# %% [markdown]
# # Chapter 06: solutions
#
# The exercises read the leader's first answers of both recorded models: the embedded SmolLM2-135M
# (`data/traces/arith-smollm2`) and the telling organism v4 (`data/traces/arith-organism-tell`).

# %%
from lase_nb.confidence import confidence_frame, gate_split
from lase_nb.runs import load_runs

firsts = {name: confidence_frame(load_runs(f"data/traces/{name}", ["lase"])["lase"], stage=0)
          for name in ("arith-smollm2", "arith-organism-tell")}

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

# %%
for name, f in firsts.items():
    wrong = f[~f["correct"].astype(bool) & f["answered"].astype(bool)]
    top = wrong["answer"].value_counts().head(5)
    print(f"{name}: {({k: int(v) for k, v in top.items()})} (of {len(wrong)} wrong answers)")
    assert top.sum() <= len(wrong)
