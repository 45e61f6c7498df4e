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
# # 1. Why debate sometimes helps: the theory behind LASE
#
# Multi-agent debate is expensive, and often no better than a vote. With small simulations you
# can rerun, this chapter shows **when talking to other agents can raise expected accuracy and
# when it cannot**, and why LASE's design (one leader, one peer at a time, only when the leader is
# unsure) is built for the helpful side. What you will learn, with the LASE paper's statements:
#
# | paper (Sections 2, 3) | what you will learn | section |
# | --- | --- | --- |
# | Theorem 2.7 (Choi et al.) | symmetric debate is a martingale: neutral | 1.1 |
# | Theorems 2.4, 2.5 (Hu et al.) | a correct seed is amplified: corrective | 1.2 |
# | Proposition 3.2, Assumption 3.3 | a gated leader star breaks the symmetry | 1.3 |
# | Theorem 3.7, Eq. (20), Corollary 3.9 | the selective-gain bound, the cost identity | 1.4 |
# | Proposition 3.8 | all-to-all costs $\Theta(Tn^2)$ inclusions, a star $2kT$ | 1.5 |
#
# Every model is a toy from `lase_nb.chapters.theory`; each section ends with the assumption a
# real LLM breaks. Appendix [A4](A4_theory_more.ipynb) holds the deep dives.

# %% tags=["parameters"]
n_agents = 5  # agents in the symmetric debates
n_options = 4  # answer options K (option 0 is the correct one)
n_rounds = 10  # debate rounds T in section 1
initial_accuracy = 0.5  # probability an agent is right before any interaction
ground_prob = 0.3  # section 2: chance that a right agent backs its answer with a grounded argument
bare_strength = 1.5  # section 2: likelihood ratio of an unsupported answer (1: no evidence)
gate_rate = 0.3  # section 4: share of problems on which the leader escalates, P(U)
rho = 0.5  # section 4: chance of a correct seed on an escalated problem
delta = 0.3  # section 4: accuracy rise given a seed
n_runs = 2000  # independent simulated debates per setting
n_problems = 20000  # simulated problems in sections 3 and 4
seed = 0  # every simulation derives its random numbers from this
interactive = None  # None: sliders only in a live Jupyter session (never under papermill); True or False forces it

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from lase_nb import plots
from lase_nb.book import widgets
from lase_nb.chapters import theory

plots.set_style()
interactive = widgets.live_session(interactive)
pd.set_option("display.precision", 4)
accuracies = sorted({round(a, 2) for a in (initial_accuracy - 0.2, initial_accuracy, initial_accuracy + 0.2)
                     if 1 / n_options < a < 1})

# %% [markdown]
# ## 1.0 Three architectures (the paper's Figure 2)
#
# **Vote** asks N agents independently and takes the most frequent answer. **Debate** lets every
# agent read every other agent's answer for T rounds, then votes. **LASE** has one leader; a gate
# on the leader's answer tokens decides whether to consult a supporter (devil's advocate, then
# collaborator, then senior expert), one at a time, and stops as soon as the leader is sure.
# (DOWN, which also debates only when unsure, is defined in chapter 04.)

# %%
fig = theory.plot_architectures()
plots.savefig(fig, "theory_architectures");

# %% [markdown] tags=["seminar"]
# ## 1.1 Symmetric debate is a martingale (Theorem 2.7)
#
# **Setting (Choi, Zhu & Li, "Debate or vote", NeurIPS 2025).** Each of $n$ agents keeps a Dirichlet belief over $K$ options (one count
# per option, read as probabilities in proportion to the counts). Each
# round it answers by sampling from its posterior, reads the answers around it and adds their
# counts. Let $p_{i,t}$ be its posterior-mean probability of the
# correct option.
#
# **Theorem.** The count an agent adds has expectation equal to the beliefs of those it reads.
# **When an agent's belief equals their average, $E[p_{i,t} \mid \text{past}] = p_{i,t-1}$: debate
# cannot change expected correctness** (a *martingale*: the expected next value is the current
# one). Homogeneous agents reading everyone satisfy this.
#
# **Predict, then run.** Will the average belief rise, fall or stay? Does it depend on the start (the
# agents' probability of the correct option at round 0, one line each, in symmetric debate's pinks)?
# Left: mean belief (line, 95% band) and share right (dots) per round; middle: the spread across
# runs; right: each round's majority vote against the round-0 vote.

# %% tags=["seminar"]
traces = {a: theory.dirichlet_debate(n_agents, n_options, n_rounds, a, n_runs=n_runs, seed=seed) for a in accuracies}
fig = theory.plot_martingale(traces)
plots.savefig(fig, "theory_martingale");

# %% [markdown] tags=["book-more"]
# The martingale test: the mean one-round increment of the group belief over runs; $|z| < 2$
# means no drift this test can see.

# %% tags=["book-more"]
tests = {a: theory.increment_test(t.group_belief) for a, t in traces.items()}
pd.DataFrame({"mean increment per round": [t.mean_increment for t in tests.values()],
              "standard error": [t.se for t in tests.values()],
              "z": [t.z for t in tests.values()]}, index=pd.Index(list(tests), name="initial accuracy"))

# %% [markdown] tags=["seminar"]
# Debate changes the spread, not the mean: runs herd towards a consensus, right or wrong, so a
# later vote can be worse than the round-0 vote (Choi et al.'s reason plain voting often matches
# debate). **Caveat.** Real LLMs differ in skill, weigh arguments rather than counts and are swayed
# by confident wording: any of these breaks the condition, in either direction.

# %% [markdown]
# ## 1.2 The corrective regime: a correct seed is amplified (Theorems 2.4 and 2.5)
#
# **Setting (our toy version of Hu et al.).** Concept $k$ leads to answer $k$; concept 0 is true.
# An agent holding the true concept backs its answer with a *grounded* argument with probability
# `ground_prob`; wrong concepts cannot. Readers update by Bayes' rule: a grounded response
# multiplies its concept's odds by a likelihood ratio, every response by a weaker `bare_strength`.
#
# **Theorem.** **A correct seed in the pool makes the next round's expected correctness strictly
# higher than without it** (2.4); since a seed can come from a minority, debate can beat the
# initial vote (2.5). Three worlds: no grounded arguments, grounded ones for right answers, and
# also misleading ones for wrong answers (probability 0.1). The table splits runs by whether round
# 0 held a seed; its last row starts below 1/K. **Do seeded pools gain more, and which way do
# unseeded ones drift?**

# %%
concept = dict(n_runs=n_runs, seed=seed, bare_strength=bare_strength)
worlds = {
    "no seeds possible": theory.latent_concept_debate(n_agents, n_options, 4, initial_accuracy, ground_prob=0.0,
                                                      **concept),
    "correct seeds": theory.latent_concept_debate(n_agents, n_options, 4, initial_accuracy, ground_prob=ground_prob,
                                                  **concept),
    "correct + misleading seeds": theory.latent_concept_debate(n_agents, n_options, 4, initial_accuracy,
                                                               ground_prob=ground_prob, false_ground_prob=0.1,
                                                               **concept),
}
fig = theory.plot_amplification(worlds)
plots.savefig(fig, "theory_amplification");

# %% tags=["book-more"]
low_start = round(1 / n_options - 0.05, 2)  # a starting accuracy below 1/K: a wrong answer leads
worlds_low = {f"no seeds possible, start {low_start:.0%}": theory.latent_concept_debate(
    n_agents, n_options, 4, low_start, ground_prob=0.0, **concept)}
pd.concat({name: theory.seed_effect(t) for name, t in {**worlds, **worlds_low}.items()}).droplevel(1).reset_index(
    names="world")

# %% [markdown]
# **Caveat.** This needs grounded arguments to be rarer for wrong answers and readers to weigh
# them so. LLM readers are persuaded by fluent text, right or wrong, and copies of one model share
# blind spots: what amplifies a right argument amplifies a persuasive wrong one.

# %% [markdown] tags=["seminar"]
# ## 1.3 LASE's reconciliation: the gated leader star (Proposition 3.2)
#
# LASE keeps 1.1's update and changes who reads whom, and when: a **directed star** (the leader
# reads peers, LASE's supporters, one more at each *stage*; peers never read each other), read only while the leader's
# **uncertainty event $U$** fires (here: its largest posterior probability is below $\tau$).
# Leader and peers are drawn alike. The star alone voids Theorem 2.7's condition but does not make
# the drift positive; **conditioning on $U=1$ selects instances where the leader's belief is below
# its peer's, so correctness drifts towards the peers**: up when the right option is their
# plurality (start above 1/K), down otherwise.
#
# Left: the leader's drift by its confidence; middle: the peer-minus-leader gap the martingale
# needs to be zero; right: the change of correctness for a gated (orange, LASE's colour wherever a
# figure draws it), an ungated (vermilion) and a gated star starting below 1/K (K options). **Which star
# gains?** The right panel answers.

# %% tags=["seminar"]
tau = 0.6
star_gated = theory.gated_star(n_problems, n_options, 3, initial_accuracy, tau=tau, gated=True, seed=seed)
star_open = theory.gated_star(n_problems, n_options, 3, initial_accuracy, tau=tau, gated=False, seed=seed)
star_low = theory.gated_star(n_problems, n_options, 3, low_start, tau=tau, gated=True, seed=seed)
fig = theory.plot_star(star_gated, star_open, tau, low=star_low)
plots.savefig(fig, "theory_star");

# %% tags=["book-more"]
for name, star in (("gated", star_gated), ("ungated", star_open), (f"gated, start {low_start:.0%}", star_low)):
    change = star.belief[:, -1] - star.belief[:, 0]  # per instance, first to last stage
    z = change.mean() / (change.std(ddof=1) / np.sqrt(len(change)))
    print(f"{name} leader: mean belief in the right option {star.belief[:, 0].mean():.4f} -> "
          f"{star.belief[:, -1].mean():.4f} (z = {z:+.1f})")
theory.star_drift(star_gated).set_index(["stage", "uncertain"])[["drift", "drift_se", "gap", "gap_se"]]

# %% [markdown] tags=["seminar"]
# **Caveat.** This gate is *calibrated*: the less sure the leader, the likelier it is wrong (the
# paper's Assumption 3.3). A confidently wrong leader is never
# corrected, and in this model a weak leader *escalates* (calls a peer, $U=1$) nearly always. Chapter 02 measures real
# confidence.

# %% [markdown]
# ## 1.4 The selective-gain bound (Theorem 3.7) and the cost identity (Eq. 20)
#
# **Theorem 3.7.** If a correct seed appears with probability at least $\rho$ when $U=1$ (A1), it
# raises the leader's accuracy by at least $\delta$ (A2), and no seed never lowers it (A3), then
# **$\mathrm{Acc(LASE)} \ge \mathrm{Acc(solo)} + P(U{=}1)\,\rho\,\delta$.** Split by seed, the gain
# is exactly $P(U{=}1)\,[\rho\,\delta + (1-\rho)\,a_3]$ ($a_3$: the gain without a seed), an
# identity; the content is the assumptions, so on recordings one tests A3 and a bound predicted
# from other problems ([appendix A1](A1_bound.ipynb)).
#
# **Cost identity.** The leader pays $C_L$, the peers $C_{peer}$ only when $U=1$:
# **$\mathrm{Cost(LASE)} = C_L + P(U{=}1)\,C_{peer} \le C_L + C_{peer}$** (always interact).
# Corollary 3.9: then LASE is strictly cheaper than always interacting and keeps the gain, not
# more accurate ([A4](A4_theory_more.ipynb)).
#
# The simulation escalates the least confident `gate_rate` share of problems (calibrated
# confidence $c \sim \mathrm{Beta}(4, 1.5)$); with a seed the leader is right with probability
# $\min(1, c+\delta)$, without one $c$ plus 0 (A3 exact), +0.05 or -0.10 (A3 violated); $C_L = 1000$,
# $C_{peer} = 800$ tokens. Left: gain against bound; right: tokens against the identity. **Where
# A3 is exact the bound is tight and about half the gains fall below it by chance; how many fall
# clearly below in each regime?**

# %%
regimes = {"A3 holds (no change without seed)": 0.0, "peer helps without seed (+0.05)": 0.05,
           "A3 violated (-0.10 without seed)": -0.10}
grid = [dict(gate_rate=q, rho=r, delta=d, noseed_shift=shift, regime=name)
        for name, shift in regimes.items() for q in (0.1, 0.2, 0.3, 0.4) for r in (0.3, 0.6, 0.9) for d in (0.1, 0.3)]
grid_table = theory.bound_grid(grid, n_problems=n_problems, seed=seed)  # each setting its own seed: independent trials
costs = theory.bound_table([dict(gate_rate=q) for q in np.linspace(0.05, 0.95, 10)], n_problems=n_problems, seed=seed)
fig = theory.plot_bound(grid_table, costs)
plots.savefig(fig, "theory_bound");
print(theory.describe_bound(grid_table))

# %% [markdown]
# **Caveat.** Real $\rho$ and $\delta$ are unknown, and a critique can plant a wrong idea (A3 fails).
# Appendix A1 measures them on recordings.

# %% [markdown] tags=["book-more"]
# ## 1.5 Topology cost: who reads whom (Proposition 3.8)
#
# **Claim.** All-to-all debate has every agent read every other's answer in each of $T$ rounds:
# **$T\,n(n-1)$ ordered context inclusions, $\Theta(Tn^2)$.** A leader star consulting $k$ peers a
# round makes two per consultation (the peer reads the attempt, the leader the reply): **at most
# $2kT$, whatever $n$.** We build the reading schedules and count the rows (drawn in A4); the table
# gives the counts for $T = 3$ to compare with the formulas.

# %% tags=["book-more"]
topology = {T: theory.topology_costs([2, 4, 8, 16, 32, 64, 128, 256], n_rounds=T, k_peers=1, gate_rate=gate_rate,
                                     seed=seed) for T in (3, n_rounds)}
print(f"gated star of section 1.3: {star_gated.inclusions().mean():.2f} inclusions per instance on average, "
      f"max {star_gated.inclusions().max()} (bound 2kT = {2 * star_gated.consulted.shape[1]})")
topology[3].pivot(index="n_agents", columns="topology", values="counted").astype(
    {"all-to-all": int, "leader star": int})

# %% [markdown] tags=["book-more"]
# **Caveat.** An inclusion is not a token, and MAD implementations often paste the whole history.

# %% [markdown]
# ## Try it yourself
#
# In a live Jupyter session the sliders rerun the debate of 1.1 with another starting accuracy or
# group size. Can you make the left panel tilt?

# %% tags=["book-hide"]
if interactive:
    import ipywidgets

    def explore(initial_accuracy=initial_accuracy, n_agents=n_agents):
        trace = theory.dirichlet_debate(n_agents, n_options, n_rounds, initial_accuracy, n_runs=n_runs, seed=seed)
        theory.plot_martingale({initial_accuracy: trace})
        plt.show()

    ipywidgets.interact(explore,
                        initial_accuracy=ipywidgets.FloatSlider(value=initial_accuracy, min=0.3, max=0.95, step=0.05,
                                                                description="start acc."),
                        n_agents=ipywidgets.IntSlider(value=n_agents, min=2, max=15, description="agents"))

# %% [markdown] tags=["book-more"]
# ## Exercises
#
# Solutions are kept apart, in `notebooks/solutions/01_solutions.py` (run it as a script or open it
# as a notebook); the test suite runs them, so they stay right.
#
# **Exercise 01.1.** Theorem 3.7 by hand. A gate escalates 30% of problems; 40% of escalations
# bring a correct seed; a seed raises the leader's accuracy by 0.5 and no seed changes nothing
# (A3 holds with equality). What gain over the leader alone does the decomposition give? Check
# it against a simulation with `theory.selective_gain` (escalating at random). Why does the
# simulated gain fall short, and does the decomposition hold with the terms the simulation measures?
#
# **Exercise 01.2.** Symmetric debate is a martingale (Theorem 2.7). Run the neutral-regime debate
# with 9 agents starting at 70% accuracy for 10 rounds. Does the group's belief in the right answer
# drift? Test its mean one-round increment against zero.
#
# **Exercise 01.3.** Proposition 3.8 in use. A context window holds a fixed number of messages: over
# 3 rounds, how many agents can an all-to-all debate have before it puts more than 100 messages into
# contexts, and how many can a star with one peer per round? Count on the schedules
# (`theory.all_to_all_schedule`, `theory.star_schedule`), then say which closed form predicts each.

# %% [markdown]
# ## Summary
#
# Symmetric debate is neutral; a correct seed makes it corrective, and persuasive errors too. LASE
# reads asymmetrically and only when unsure, drifting towards the peers' plurality, for a gain of
# at least $P(U{=}1)\rho\delta$ at cost $C_L + P(U{=}1)C_{peer}$ and at most $2kT$ inclusions. Next:
# do the leader's token probabilities tell it when it is likely to be wrong?
