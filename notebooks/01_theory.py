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
# Multi-agent debate is expensive, and often it is no better than asking several agents once and
# taking a vote. This chapter explains, with small simulations you can rerun and vary, **when
# talking to other agents can raise expected accuracy and when it cannot**, and why LASE's design
# (one leader, one peer at a time, only when the leader is unsure) sits on the helpful side.
#
# **What you will learn**
#
# 1. Why symmetric debate among similar agents is *neutral*: their belief in the right answer is a
#    martingale, so debate reshapes the spread of outcomes but not the expected accuracy.
# 2. Why debate becomes *corrective* when some response carries strong evidence for the true
#    answer (a "correct seed"), and how that lets debate beat the initial majority vote.
# 3. How a leader star that consults peers only when it is uncertain breaks the symmetry the
#    martingale needs, and drifts towards its peers exactly on the uncertain instances: up when
#    the peers' plurality is right, down when it is not.
# 4. The selective-gain bound $\mathrm{Acc(LASE)} \ge \mathrm{Acc(solo)} + P(U{=}1)\,\rho\,\delta$,
#    the cost identity $\mathrm{Cost(LASE)} = C_L + P(U{=}1)\,C_{peer}$, and what they imply for
#    the accuracy-cost frontier.
# 5. Why all-to-all debate makes $\Theta(T n^2)$ context inclusions while a leader star makes at
#    most $2kT$, whatever the number of agents.
#
# **Paper results covered** (LASE paper, Sections 2 and 3), one section each:
#
# | paper statement | what it says | section |
# | --- | --- | --- |
# | Figure 2 | vote, debate and the gated leader star | 1.0 |
# | Theorem 2.7 (Choi et al.) | symmetric debate is a martingale: neutral | 1.1 |
# | Theorem 2.4 (Hu et al.) | a correct seed raises the next round: corrective | 1.2 |
# | Theorem 2.5 (Hu et al.) | so debate can beat the initial majority vote | 1.2 |
# | Proposition 3.2 | the leader star and the gate on $U = 1$ break Theorem 2.7's symmetry condition (the proof shows the star voids it; the gate selects where the leader reads) | 1.3 |
# | Assumption 3.3 | lower confidence means lower accuracy (calibration) | 1.3, chapter 02 |
# | Assumptions 3.4-3.6 (A1-A3) | seed rate rho, amplification delta, no harm without a seed | 1.4 |
# | Theorem 3.7 | selective gain: Acc(LASE) >= Acc(solo) + P(U=1) rho delta | 1.4 |
# | Eq. (20) | cost identity: Cost(LASE) = C_L + P(U=1) C_peer | 1.4 |
# | Corollary 3.9 | with 0 < P(U=1) < 1 and A1-A3, LASE is strictly cheaper than always-debate and keeps Theorem 3.7's gain | 1.4 |
# | Proposition 3.8 | all-to-all debate costs Theta(T n^2) inclusions, a star O(T) | 1.5 |
#
# **You need** basic probability (expectations, conditional probability, Bayes' rule) and some
# numpy. No language model is called here: every model is a toy, and each section ends with the
# assumption a real LLM agent breaks. The simulations live in `lase_nb.chapters.theory`; the cells below
# only call them and draw.

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

from lase_nb import plots, widgets
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
# on the leader's own answer tokens decides whether to consult a supporter (devil's advocate,
# then collaborator, then senior expert), one at a time, and stops as soon as the leader is sure.

# %%
fig = theory.plot_architectures()
plots.savefig(fig, "theory_architectures");

# %% [markdown]
# ### DOWN, and how its gate differs from LASE's
#
# DOWN ("Debate Only When Necessary", Eo et al. 2025) also debates only when unsure, with a
# different gate and a different debate:
#
# - **its score** is the mean token probability over the *whole* first response,
#   $c_1 = \frac{1}{|r|}\sum_i P(t_i)$, reasoning included; LASE looks only at the tokens of the
#   final answer (lowest probability $\exp(LP_{min})$, highest entropy $H_{max}$);
# - **its trigger**: accept the first answer when $c_1 > \theta$, debate when $c_1 \le \theta$;
# - **its debate**: all agents, two rounds, each agent sees the peers' responses *and their
#   confidence scores*; the final answer is a majority vote or a designated judge's; there is no
#   early stop on consensus. LASE instead has one leader read one supporter at a time, re-checks
#   its gate after every revision, and supporters never give an answer.
#
# A long, fluent response can have a high mean token probability while its one answer token is
# a guess, which is why the two gates escalate different problems; chapters 02 and 04 compare them.

# %% [markdown]
# ## 1.1 The neutral regime: symmetric debate is a martingale (Theorem 2.7)
#
# **Setting (Choi et al.).** Each of $n$ agents keeps a Dirichlet belief over the $K$ options,
# with parameters $\alpha_{i,t}$. In every round each agent answers by sampling from its posterior,
# then reads the answers around it and adds their counts: $\alpha_{i,t} = \alpha_{i,t-1} + c_{i,t}$.
# Let $p_{i,t}$ be the posterior-mean probability of the correct option.
#
# **Theorem (in words).** The count an agent adds has expectation equal to the beliefs of the
# agents it reads. So **when an agent's belief equals the average belief of those it reads, its
# belief in the right answer is a martingale: $E[p_{i,t} \mid \text{past}] = p_{i,t-1}$, and debate
# cannot change expected correctness.** Homogeneous agents reading everyone (themselves included)
# satisfy the condition in every round.
#
# One update written out from scratch, for three agents and four options: agent $i$ adds one to
# option $k$ for every agent $j$ it reads that answered $k$. The simulations use
# `theory.dirichlet_update`; the cell checks that it does exactly this.

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
# We run `n_runs` debates for a few starting accuracies and follow the mean of $p_{i,t}$ and the
# share of right answers.
#
# **Predict, then run.** The agents read everyone's answers and update, round after round, for
# `n_rounds` rounds. Will their average belief in the right answer rise, fall or stay where it
# started? Does your answer depend on whether they start above or below 50%? The figure answers.

# %%
traces = {a: theory.dirichlet_debate(n_agents, n_options, n_rounds, a, n_runs=n_runs, seed=seed) for a in accuracies}
fig = theory.plot_martingale(traces)
plots.savefig(fig, "theory_martingale");

# %% [markdown]
# The martingale test: the mean one-round increment of the group belief, with its standard error
# over runs (each run's increments are averaged first, so runs are the independent units).

# %%
tests = {a: theory.increment_test(t.group_belief) for a, t in traces.items()}
pd.DataFrame({"initial accuracy": list(tests),
              "mean increment per round": [t.mean_increment for t in tests.values()],
              "standard error": [t.se for t in tests.values()],
              "z": [t.z for t in tests.values()]})

# %% [markdown]
# **What it shows.** Left: the mean belief in the right answer (line, 95% band) and the share of
# right answers (dots) stay at their starting value for every starting accuracy; the increments
# above are within a couple of standard errors of zero (column `z`). Middle: what debate *does* change is the spread.
# Each run drifts towards a consensus, right or wrong, so the standard deviation of the outcome
# across runs grows round after round (fast at first, then slowly, as in a Polya urn). Right: as
# agents herd, their answers stop being independent, and the majority vote of a round gets
# *worse* than the round-0 vote. Voting on the round-0 answers is the
# better use of the same agents, which is Choi et al.'s explanation for why plain voting so often
# matches or beats debate.
#
# **Caveat.** The model assumes identical agents whose only update is counting what they read.
# Real LLMs differ in skill, weigh arguments rather than counts, are swayed by confident wording
# and by their own earlier answer, and do not sample from a well-defined posterior. Any of these
# breaks the "belief equals neighbours' average" condition, in either direction.

# %% [markdown]
# ## 1.2 The corrective regime: a correct seed is amplified (Theorems 2.4 and 2.5)
#
# **Setting (our toy version of Hu et al.).** A problem has $K$ latent concepts; concept $k$
# leads to answer $k$, and concept 0 is the true one. Given the concept behind each response,
# responses are independent. An agent samples a concept from its posterior and answers with it.
# An agent holding the true concept backs its answer with a *grounded* argument (one that can be
# checked against the problem) with probability `ground_prob`; wrong concepts cannot produce one.
# Readers update by Bayes' rule: a grounded response multiplies the odds of its concept by a
# likelihood ratio `strength`, and *every* response, grounded or not, by a weaker `bare_strength`:
# an unsupported answer is weak evidence, not none. So an unseeded pool moves too, and whether a
# seed matters is something the simulation shows, not something built into it.
#
# **Theorem (in words).** **If the pool holds at least one correct seed, the next round's
# expected correctness is strictly higher than without it.** The comparison is seeded against
# unseeded pools, not seeded against zero. Because the seed can come from a minority, the debated outcome can beat
# the initial majority vote, which neutral debate never does in expectation.
#
# We compare three worlds: no grounded arguments at all, grounded arguments for right answers,
# and grounded arguments plus occasional *misleading* ones for wrong answers (probability 0.1).

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

# %%
low_start = round(1 / n_options - 0.05, 2)  # a starting accuracy below 1/K: a wrong answer leads
worlds_low = {f"no seeds possible, start {low_start:.0%}": theory.latent_concept_debate(
    n_agents, n_options, 4, low_start, ground_prob=0.0, **concept)}
pd.concat({name: theory.seed_effect(t) for name, t in {**worlds, **worlds_low}.items()}).droplevel(1).reset_index(
    names="world")

# %% [markdown]
# **What it shows.** With correct seeds, accuracy climbs round after round: seeds convince other
# agents, who then find grounded arguments of their own. Split by round-0 pool, debates that had a
# seed gain far more than those without, which is Theorem 2.4's claim (Theorem 2.5 draws the consequence: debate can then beat the
# initial majority vote). Unseeded pools are not
# flat: bare answers are weak evidence, so a pool drifts towards its plurality, up when the
# right answer leads and down when a wrong one does (the below-1/K run, last row of the table). With misleading
# seeds, debates without a correct seed do worse still: the same mechanism that amplifies a right
# argument amplifies a persuasive wrong one.
#
# **Caveat.** Everything hinges on grounded arguments being rarer for wrong answers than for right
# ones and on readers weighting them accordingly. LLM readers cannot verify arguments reliably;
# they are persuaded by fluent, confident text, right or wrong, and peers' responses are not
# independent given the concept when the agents are copies of one model with shared blind spots.

# %% [markdown]
# ## 1.3 LASE's reconciliation: the gated leader star (Proposition 3.2)
#
# LASE keeps the *neutral* counting update of section 1.1 and changes only who reads whom and when:
#
# - **topology**: a directed star, the leader reads peers, peers never read each other;
# - **conditioning**: the leader reads a peer only while its uncertainty event $U$ fires, and $U$
#   is computed from its own transcript (here: its largest posterior probability is below $\tau$).
#
# Every leader and peer belief is drawn from the same distribution, so a leader is on average
# exactly as good as a peer. If the leader always read its peers, its expected belief would not
# move. **But conditioning on $U=1$ selects the instances where the leader's belief is below its
# peer's, so the martingale condition fails there, and the expected correctness drifts towards
# the peers; on confident instances the leader does not read at all.** Towards the peers is *up*
# only when the right option is the peers' plurality, i.e. when the starting accuracy is above
# 1/K; below it the same gate drifts down. **Proposition 3.2 names two breaks, the star and the
# gate on $U = 1$**; its proof shows the first already voids the symmetry condition: when peers
# never read each other, the leader's belief is no longer the average of its neighbours', so the
# condition of Theorem 2.7 fails. Failing the condition does not by itself make
# the drift positive: the ungated star below, whose leader is drawn like its peers, stays level on
# average. Conditioning on $U$ is what the gate adds on top: it selects the instances where
# reading a peer helps. The third star below starts below 1/K.

# %%
tau = 0.6
star_gated = theory.gated_star(n_problems, n_options, 3, initial_accuracy, tau=tau, gated=True, seed=seed)
star_open = theory.gated_star(n_problems, n_options, 3, initial_accuracy, tau=tau, gated=False, seed=seed)
star_low = theory.gated_star(n_problems, n_options, 3, low_start, tau=tau, gated=True, seed=seed)
fig = theory.plot_star(star_gated, star_open, tau, low=star_low)
plots.savefig(fig, "theory_star");

# %%
for name, star in (("gated", star_gated), ("ungated", star_open), (f"gated, start {low_start:.0%}", star_low)):
    change = star.belief[:, -1] - star.belief[:, 0]  # per instance, first to last stage
    z = change.mean() / (change.std(ddof=1) / np.sqrt(len(change)))
    print(f"{name} leader: mean belief in the right option {star.belief[:, 0].mean():.4f} -> "
          f"{star.belief[:, -1].mean():.4f} (z = {z:+.1f})")
theory.star_drift(star_gated)

# %% [markdown]
# **What it shows.** Left: reading a peer moves the leader towards the peer population's average,
# so the drift is positive when the leader is unsure and *negative* when it is confident. An
# always-reading leader gets both halves, and they cancel. The gate keeps the positive half: to
# the right of $\tau$ nobody is read and the drift is exactly zero. Middle: the gap between the
# peer's and the leader's belief, which the martingale condition requires to be zero, is clearly
# positive on uncertain instances and negative on confident ones. Right: the change of expected
# correctness since stage 0, in percentage points: it rises only for the gated star that starts
# above 1/K; the ungated star (same topology, no gate) stays level, and the gated star that
# starts below 1/K loses. The table gives the drift per stage for $U=1$ and $U=0$.
#
# **Caveat.** The gate here is *calibrated* (the paper's Assumption 3.3): low confidence really
# means a lower chance of being right. LLM confidence is imperfect. A confidently wrong leader ($U=0$ on a wrong answer) is never
# corrected, and a weak model is unsure so often that it escalates nearly always. The calibration
# chapter measures how well real token probabilities do.

# %% [markdown]
# ## 1.4 The selective-gain bound (Theorem 3.7), the cost identity (Eq. 20), Corollary 3.9
#
# **Theorem 3.7 (selective gain).** Assume (A1, Assumption 3.4) a correct seed appears with
# probability at least $\rho$ when $U=1$; (A2, Assumption 3.5) with a seed the leader's accuracy
# rises by at least $\delta$; (A3, Assumption 3.6) without a seed it does not fall. Then **$\mathrm{Acc(LASE)} \ge \mathrm{Acc(solo)} + P(U{=}1)\,\rho\,\delta$:
# the gain is at least the escalation rate times the seed rate times the amplification.**
#
# **Where the bound comes from: the law of total probability plus the assumptions.** Split the
# escalated problems by whether a seed appeared: the gain is exactly
# $P(U{=}1)\,[\rho\,\delta + (1-\rho)\,a_3]$, where $\rho$ is the seed rate, $\delta$ the gain
# with a seed and $a_3$ the gain without one. That split is an identity, true of any sample. The
# theorem's content is the assumptions: with $\rho \ge \rho_0$, $\delta \ge \delta_0$ and
# $a_3 \ge 0$ the second term can be dropped. So a "bound vs observed" check on the same data
# only restates $a_3 \ge 0$; what can be tested is A3 on its own, and a bound predicted from
# one set of problems and met (or missed) on another ([appendix A1](A1_bound.ipynb)).
#
# **Cost identity (Eq. 20).** The leader always pays $C_L$; a peer stage costs $C_{peer}$ and is paid only
# when $U=1$, so **$\mathrm{Cost(LASE)} = C_L + P(U{=}1)\,C_{peer} \le C_L + C_{peer} =
# \mathrm{Cost(always\ interact)}$.**
#
# The simulation draws problems with a calibrated confidence $c \sim \mathrm{Beta}(4, 1.5)$ (the
# leader alone is right with probability $c$) and sets $U=1$ on the least confident `gate_rate`
# share. With a seed the leader is right with probability $\min(1, c+\delta)$; without one with
# probability $c$ plus a `noseed_shift` that we vary: zero (A3 just holds), positive (the peer helps
# even without a seed) or negative (A3 violated). Token counts are random, with means $C_L = 1000$
# and $C_{peer} = 800$.
#
# The table runs the chapter's parameters three times, on the same simulated problems (a paired
# comparison): with A3 holding exactly, with the peer helping a little even without a seed, and
# with A3 violated. Column `z` is (gain - bound) in standard errors. **What the bound promises**
# is a floor on the *expected* gain; a simulation measures the gain on finitely many problems. When
# A3 holds with equality the bound is tight, so the measured gain is as likely to fall below it as
# above it, and more than two standard errors below in about one setting in forty.
#
# This is the bound on simulated problems whose $\rho$, $\delta$ and A3 we set. On real recordings
# they have to be measured: [appendix A1](A1_bound.ipynb) classifies every supporter's note for a correct
# seed and estimates $P(U=1)$, $\rho$, $\delta$ and A3 with intervals (`lase_nb/chapters/correct_seeds.py`).

# %%
settings = [dict(gate_rate=gate_rate, rho=rho, delta=delta),  # A3 holds with equality: the bound is tight
            dict(gate_rate=gate_rate, rho=rho, delta=delta, noseed_shift=0.05),  # A3 with room to spare
            dict(gate_rate=gate_rate, rho=rho, delta=delta, noseed_shift=-0.10)]  # A3 violated
three = theory.bound_table(settings, n_problems=n_problems, seed=seed)
three.assign(z=(three["gain"] - three["bound"]) / three["gain_se"])[
    ["gate_rate", "rho", "delta", "tau", "acc_solo", "acc_lase", "gain", "gain_se", "bound", "z",
     "cost", "cost_se", "cost_formula", "cost_always"]]

# %%
regimes = {"A3 holds (no change without seed)": 0.0, "peer helps without seed (+0.05)": 0.05,
           "A3 violated (-0.10 without seed)": -0.10}
grid = [dict(gate_rate=q, rho=r, delta=d, noseed_shift=shift, regime=name)
        for name, shift in regimes.items() for q in (0.1, 0.2, 0.3, 0.4) for r in (0.3, 0.6, 0.9) for d in (0.1, 0.3)]
grid_table = theory.bound_grid(grid, n_problems=n_problems, seed=seed)  # each setting its own seed: independent trials
costs = theory.bound_table([dict(gate_rate=q) for q in np.linspace(0.05, 0.95, 10)], n_problems=n_problems, seed=seed)
fig = theory.plot_bound(grid_table, costs)
plots.savefig(fig, "theory_bound");

# %%
print(theory.describe_bound(grid_table))

# %% [markdown]
# **What it shows.** When A1-A3 hold, the points lie on or above the diagonal up to sampling
# noise. Each setting has its own seed, so the counts above are independent trials: where A3 holds
# with equality about half of them should fall below the bound, and almost none by more than two
# standard errors; compare the counts with what chance predicts. The bound is tight when the peer
# does nothing without a seed, and loose when it helps anyway. When A3 fails (an unseeded peer talks a right leader out
# of its answer), points fall clearly below the line: the bound is only as good as its assumptions. Right: the measured tokens per problem follow
# $C_L + P(U{=}1) C_{peer}$ and reach the always-interact cost only when every problem escalates.
#
# **Corollary 3.9.** With $0 < P(U{=}1) < 1$ and A1-A3, LASE is strictly cheaper than
# always-interacting in expected cost and keeps Theorem 3.7's gain of at least
# $P(U{=}1)\rho\delta$ over the solo leader. It does *not* say LASE is more accurate than
# always-interacting. Sweeping the gate rate traces a curve from solo to always-interact; gating
# on *confidence* puts the peer calls where they pay off, and a random gate with the same
# escalation rate costs the same and gains less. (The escalation rates the paper's own threshold
# sweep reached are in chapter 05, section 5.4.)

# %%
pareto = theory.pareto_table([0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 0.9], rho=rho, delta=delta,
                             n_problems=n_problems, seed=seed)
fig = theory.plot_pareto(pareto)
plots.savefig(fig, "theory_pareto");

# %%
corollary = theory.corollary_39([0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 0.9], rho=rho, delta=delta,
                                n_problems=n_problems, seed=seed)
corollary

# %% [markdown]
# **What it shows.** At every gate rate LASE costs less than always interacting (`cheaper`). Its
# gain over the solo leader reaches the bound $P(U{=}1)\rho\delta$ (`gain_holds`) except at the
# highest gate rates. A high gate rate also escalates leaders so confident that
# $\tau + \delta > 1$: they cannot rise by $\delta$, assumption A2 fails (`a2_holds`), and at the
# highest rates the measured gain falls short of the bound. And
# always interacting stays the more accurate policy at every rate, because in this simulation a
# peer never hurts. That is all Corollary 3.9 claims: the same gain for less cost, not more
# accuracy than always interacting.

# %% [markdown]
# **Caveat.** Real problems do not come with a known $\rho$ or $\delta$, and the peer stages of
# LASE are not independent coin flips: a critique can plant a wrong idea (A3 fails), and the
# leader can accept a correct critique and still fail to use it. In the simulation the confidence
# is perfectly calibrated, so gating on it is as good as gating can be. The pipeline chapter
# replays real transcripts to measure $P(U{=}1)$, the seed rate and the gain directly.

# %% [markdown]
# ## 1.5 Topology cost: who reads whom (Proposition 3.8)
#
# **Claim.** In all-to-all debate every agent reads every other agent's previous answer in each
# of $T$ rounds: **$T\,n(n-1)$ ordered cross-agent context inclusions, $\Theta(Tn^2)$.** A leader
# star that consults $k$ peers per round makes two inclusions per consultation (the peer reads the
# leader's attempt, the leader reads the reply): **at most $2kT$, independent of $n$**, and fewer
# when a gate skips rounds.
#
# We do not trust the formula: we build the reading schedule (the same reading matrix the debate
# of section 1.1 uses), list every (round, reader, author) inclusion as a transcript row, and
# count the rows.

# %%
topology = {T: theory.topology_costs([2, 4, 8, 16, 32, 64, 128, 256], n_rounds=T, k_peers=1, gate_rate=gate_rate,
                                     seed=seed) for T in (3, n_rounds)}
fig = theory.plot_topology(topology)
plots.savefig(fig, "theory_topology");
topology[3].pivot(index="n_agents", columns="topology", values="counted").astype(
    {"all-to-all": int, "leader star": int})

# %%
pd.concat({"all-to-all (n=3, T=1)": theory.transcript(theory.all_to_all_schedule(3, 1)),
           "leader star (n=3, T=1, k=1)": theory.transcript(theory.star_schedule(3, 1, k_peers=1))}, names=["topology"])

# %% [markdown]
# **What it shows.** The counted inclusions land exactly on the formulas: a slope-2 line for
# all-to-all and a flat line for the star: at a few hundred agents, all-to-all debate pastes
# hundreds of thousands of responses into contexts where the star pastes a handful. The two
# small transcripts above list the rows behind the counts. The gated leader of section 1.3 made
# two inclusions per peer it consulted, never more than the bound $2kT$:

# %%
print(f"gated star (section 1.3): {star_gated.inclusions().mean():.2f} inclusions per instance on average, "
      f"max {star_gated.inclusions().max()} (bound 2kT = {2 * star_gated.consulted.shape[1]})")

# %% [markdown]
# **Caveat.** An inclusion is not a token: real responses differ in length, and MAD implementations
# often paste the whole history rather than only the previous round, which grows faster still.
# The LASE pipeline also relays the earlier critiques to later supporters, adding a few inclusions
# per stage; that does not depend on $n$ either.

# %% [markdown]
# ## Try it yourself
#
# When the notebook runs in a live Jupyter session, the sliders below rerun the symmetric debate
# of section 1.1 with another starting accuracy or group size. (Under papermill `interactive` is
# False and no widget is made.) Notice that whatever you choose, the left panel stays flat.

# %% tags=["book-hide"]
if interactive:
    import ipywidgets as widgets

    def explore(initial_accuracy=initial_accuracy, n_agents=n_agents):
        trace = theory.dirichlet_debate(n_agents, n_options, n_rounds, initial_accuracy, n_runs=n_runs, seed=seed)
        theory.plot_martingale({initial_accuracy: trace})
        plt.show()

    widgets.interact(explore,
                     initial_accuracy=widgets.FloatSlider(value=initial_accuracy, min=0.3, max=0.95, step=0.05,
                                                          description="start acc."),
                     n_agents=widgets.IntSlider(value=n_agents, min=2, max=15, description="agents"))

# %% [markdown]
# ## Exercises
#
# Solutions are kept apart, in `notebooks/solutions/01_solutions.py` (run it as a script or open it
# as a notebook); the test suite runs them, so they stay right.
#
# **Exercise 01.1.** Theorem 3.7 by hand. A gate escalates 30% of problems; 40% of escalations
# bring a correct seed; a seed raises the leader's accuracy by 0.5 and no seed changes nothing
# (A3 holds with equality). What gain over the leader alone does the decomposition give? Check
# it against a simulation with `theory.selective_gain`, escalating at random so that the seed's
# effect is not capped at accuracy 1.
#
# **Exercise 01.2.** Symmetric debate is a martingale (Theorem 2.7). Run the neutral-regime debate
# with 9 agents starting at 70% accuracy for 10 rounds. Does the group's belief in the right answer
# drift? Test its mean one-round increment against zero.
#
# **Exercise 01.3.** Proposition 3.8. How many messages does an all-to-all debate of 5 agents over
# 3 rounds put into contexts, and how many does a star with one peer per round? Count them on the
# schedules themselves and compare with the closed forms.

# %% [markdown]
# ## Summary
#
# - Symmetric debate among similar agents is neutral: expected correctness is a martingale.
#   Debate changes the spread, and it can make the final vote worse than the first one.
# - Debate is corrective when a response carries strong evidence for the truth. It then amplifies
#   that seed, and it amplifies persuasive errors just as readily.
# - LASE keeps a neutral update but reads asymmetrically and only under uncertainty. Topology and
#   gate together break the symmetry; the drift is positive when the peers' plurality is right
#   (accuracy above 1/K) and negative when it is not.
# - The gain is at least $P(U{=}1)\rho\delta$, the cost is $C_L + P(U{=}1)C_{peer}$, and a star
#   costs at most $2kT$ inclusions against $Tn(n-1)$ for all-to-all.
#
# The next chapters test the assumption all of this rests on: that the leader's token
# probabilities tell it when it is likely to be wrong.
