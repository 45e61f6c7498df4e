# %% [markdown]
# # Chapter 01: solutions

# %%
from lase_nb.chapters import theory

# %% [markdown]
# **Exercise 01.1.** Theorem 3.7 by hand. A gate escalates 30% of problems; 40% of escalations
# bring a correct seed; a seed raises the leader's accuracy by 0.5 and no seed changes nothing
# (A3 holds with equality). What gain over the leader alone does the decomposition give? Check
# it against a simulation with `theory.selective_gain` (escalating at random). Why does the
# simulated gain fall short, and does the decomposition hold with the terms the simulation measures?

# %%
p_u, rho, delta, a3 = 0.3, 0.4, 0.5, 0.0
by_hand = p_u * (rho * delta + (1 - rho) * a3)
print(f"gain = P(U=1) [rho delta + (1 - rho) a3] = {p_u} x ({rho} x {delta} + {1 - rho:.1f} x {a3}) = {by_hand:.3f}")
sim = theory.selective_gain(n_problems=200_000, gate_rate=p_u, rho=rho, delta=delta, gate="random",
                            confidence=(1.0, 3.0), seed=1)
print(f"simulated: gain {sim.gain:+.4f} (se {sim.gain_se:.4f}); measured P(U=1) {sim.p_uncertain:.3f}, "
      f"rho {sim.rho_hat:.3f}, delta {sim.delta_hat:.3f}")

# %% [markdown]
# The simulated gain falls short of it: a seed lifts the leader's accuracy by 0.5 only up to 1, so the
# measured delta (the rise among problems with a seed) is smaller than the 0.5 we asked for. With
# the *measured* terms the decomposition holds again, because it is an identity (the law of total
# probability): gain = P(U=1) [rho delta + (1 - rho) a3] with a3 = 0 here.

# %%
identity = sim.p_uncertain * sim.rho_hat * sim.delta_hat
print(f"P(U=1) rho delta from the measured terms: {identity:+.4f}")
assert sim.gain <= by_hand + 3 * sim.gain_se
assert abs(sim.gain - identity) < 3 * sim.gain_se

# %% [markdown]
# **Exercise 01.2.** Symmetric debate is a martingale (Theorem 2.7). Run the neutral-regime debate
# with 9 agents starting at 70% accuracy for 10 rounds. Does the group's belief in the right answer
# drift? Test its mean one-round increment against zero.

# %%
trace = theory.dirichlet_debate(n_agents=9, n_options=4, n_rounds=10, initial_accuracy=0.7, n_runs=2000, seed=3)
test = theory.increment_test(trace.group_belief)
print(f"mean increment of the group's belief per round {test.mean_increment:+.5f} (se {test.se:.5f}, "
      f"z {test.z:+.2f}) over {test.n_runs} runs")
assert abs(test.z) < 3  # no drift: the expected accuracy after any round equals the start

# %% [markdown]
# **Exercise 01.3.** Proposition 3.8 in use. A context window holds a fixed number of messages: over
# 3 rounds, how many agents can an all-to-all debate have before it puts more than 100 messages into
# contexts, and how many can a star with one peer per round? Count on the schedules
# (`theory.all_to_all_schedule`, `theory.star_schedule`), then say which closed form predicts each.

# %%
def most_agents(schedule, cap: int = 100, rounds: int = 3, limit: int = 60) -> int:
    """The most agents whose schedule puts at most ``cap`` messages into contexts over ``rounds``."""
    fits = [n for n in range(2, limit) if theory.count_inclusions(schedule(n, rounds)) <= cap]
    return max(fits)


n_full = most_agents(theory.all_to_all_schedule)
n_star = most_agents(lambda n, t: theory.star_schedule(n, t, k_peers=1))
print(f"all-to-all: at most {n_full} agents (T n (n-1) = {theory.inclusions_formula('all_to_all', n_full, 3)} "
      f"messages; {n_full + 1} agents: {theory.inclusions_formula('all_to_all', n_full + 1, 3)})")
print(f"star, one peer a round: {'every size tried' if n_star == 59 else f'at most {n_star} agents'} "
      f"(2 k T = {theory.inclusions_formula('star', n_star, 3)} messages whatever n)")
assert theory.inclusions_formula("all_to_all", n_full, 3) <= 100 < theory.inclusions_formula("all_to_all", n_full + 1, 3)
assert n_star > n_full
