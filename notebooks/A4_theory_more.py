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
# # A4. The theory, in more detail (appendix to chapter 01)
#
# The deep dives [chapter 01](01_theory.ipynb) leaves out: one Dirichlet update written out by hand (section 1.1),
# the selective-gain bound on three settings of the chapter's parameters and Corollary 3.9 at
# eight gate rates (section 1.4), and the topology counts drawn, with the transcripts behind them
# (section 1.5). No model is called; the simulations are in `lase_nb.chapters.theory`.

# %% tags=["parameters"]
n_options = 4  # answer options K (option 0 is the correct one)
n_rounds = 10  # debate rounds T of the longer topology panel
gate_rate = 0.3  # share of problems on which the leader escalates, P(U)
rho = 0.5  # chance of a correct seed on an escalated problem
delta = 0.3  # accuracy rise given a seed
n_problems = 20000  # simulated problems
seed = 0  # every simulation derives its random numbers from this
interactive = None  # this appendix makes no widgets

# %%
import numpy as np
import pandas as pd

from lase_nb import plots
from lase_nb.chapters import theory

plots.set_style()
pd.set_option("display.precision", 4)

# %% [markdown]
# ## A4.1 One Dirichlet update, by hand
#
# Three agents, four options: agent $i$ adds one to option $k$ for every agent $j$ it reads that
# answered $k$. The chapter's simulations use `theory.dirichlet_update`; the cell checks that it
# does exactly this.

# %%
alpha = np.array([[1.0, 0.5, 0.5, 0.5], [0.8, 0.8, 0.2, 0.2], [2.0, 0.1, 0.1, 0.1]])
answers = np.array([0, 2, 0])  # what each agent answered this round
reads = np.array([[1, 1, 1], [1, 1, 0], [0, 1, 1]], dtype=bool)  # reads[i, j]: agent i reads agent j
by_hand = alpha.copy()
for i in range(3):
    for j in range(3):
        if reads[i, j]:
            by_hand[i, answers[j]] += 1
assert np.allclose(by_hand, theory.dirichlet_update(alpha, answers, reads))
by_hand

# %% [markdown]
# ## A4.2 The bound on three settings, paired
#
# The chapter's parameters three times, on the same simulated problems: A3 holding exactly, the
# peer helping a little without a seed (+0.05), and A3 violated (-0.10). Column `z` is
# (gain - bound) in standard errors; `cost_formula` is $C_L + P(U{=}1)C_{peer}$ and `cost_always`
# is $C_L + C_{peer}$. The bound is on the *expected* gain: where it is tight, a measured gain is
# as likely to fall below it as above.

# %%
settings = {"A3 holds": dict(gate_rate=gate_rate, rho=rho, delta=delta),
            "peer helps (+0.05)": dict(gate_rate=gate_rate, rho=rho, delta=delta, noseed_shift=0.05),
            "A3 violated (-0.10)": dict(gate_rate=gate_rate, rho=rho, delta=delta, noseed_shift=-0.10)}
three = theory.bound_table(list(settings.values()), n_problems=n_problems, seed=seed)
three.index = pd.Index(list(settings), name="setting")
three.assign(z=(three["gain"] - three["bound"]) / three["gain_se"])[
    ["acc_solo", "acc_lase", "gain", "gain_se", "bound", "z", "cost", "cost_formula", "cost_always"]]

# %% [markdown]
# ## A4.3 Corollary 3.9 at eight gate rates
#
# With $0 < P(U{=}1) < 1$ and A1-A3, LASE is strictly cheaper than always interacting and keeps
# Theorem 3.7's gain of at least $P(U{=}1)\rho\delta$ over the solo leader. It does *not* say LASE
# is more accurate than always interacting. Sweeping the gate rate traces a curve from solo to
# always-interact; a random gate with the same escalation rate costs the same. A high gate rate
# also escalates leaders so confident that $\tau + \delta > 1$: they cannot rise by $\delta$, so
# A2 fails (`a2_holds`). The table checks each part (`cheaper`; `gain_holds`: the gain within 4
# standard errors of the bound or above it) and the sentence under it counts them.

# %%
gate_rates = [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 0.9]
pareto = theory.pareto_table(gate_rates, rho=rho, delta=delta, n_problems=n_problems, seed=seed)
fig = theory.plot_pareto(pareto)
plots.savefig(fig, "theory_pareto");

# %%
corollary = theory.corollary_39(gate_rates, rho=rho, delta=delta, n_problems=n_problems, seed=seed)
print(theory.describe_corollary(corollary))
corollary.set_index("gate_rate")[["a2_holds", "cheaper", "gain", "bound", "gain_holds", "acc_lase", "acc_always"]]

# %% [markdown]
# ## A4.4 Topology cost, drawn, and the transcripts behind the counts
#
# Markers are counted inclusions, lines the formulas $Tn(n-1)$ and $2kT$, for $T = 3$ and
# $T = $ `n_rounds`; the gated star is the mean over random draws of which rounds escalate. Below,
# the rows behind two small counts.

# %%
topology = {T: theory.topology_costs([2, 4, 8, 16, 32, 64, 128, 256], n_rounds=T, k_peers=1, gate_rate=gate_rate,
                                     seed=seed) for T in (3, n_rounds)}
fig = theory.plot_topology(topology)
plots.savefig(fig, "theory_topology");

# %%
pd.concat({"all-to-all (n=3, T=1)": theory.transcript(theory.all_to_all_schedule(3, 1)),
           "leader star (n=3, T=1, k=1)": theory.transcript(theory.star_schedule(3, 1, k_peers=1))}, names=["topology"])
