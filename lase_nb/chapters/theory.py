"""Toy models of multi-agent debate (the LASE paper's Sections 2-3; chapter 01), as pure seeded numpy simulations.

Five pieces, one per claim of the theory chapter:

1. :func:`dirichlet_debate` -- the *neutral* regime: agents with Dirichlet beliefs add up the
   answers they read. With symmetric all-to-all reading the belief in the correct option is a
   martingale (:func:`increment_test` measures it).
2. :func:`latent_concept_debate` -- the *corrective* regime: Bayesian updating over latent concepts,
   where a grounded correct response (a "seed") is strong evidence. :func:`seed_effect` splits the
   one-step change by whether a seed was in the pool.
3. :func:`gated_star` -- the LASE topology: only the leader reads, one peer per stage, and only
   while its own uncertainty event fires. :func:`star_drift` shows where the drift comes from.
4. :func:`selective_gain` / :func:`pareto_table` -- the selective-gain bound and the cost identity.
5. :func:`all_to_all_schedule`, :func:`star_schedule`, :func:`count_inclusions` -- who reads whom,
   and how many cross-agent context inclusions each topology makes.

Every function takes a ``seed`` and builds its own :class:`numpy.random.Generator`, so a call is a
pure function of its arguments. In every model option 0 is the correct answer (the options are
exchangeable, so nothing is lost by fixing it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from ..errors import ConfigError
from ..plots import MAX_WIDTH_IN

#: Index of the correct option (and of the true latent concept) in every model.
CORRECT = 0


# --------------------------------------------------------------------------------------------
# small shared helpers
# --------------------------------------------------------------------------------------------


def _check_prob(name: str, value: float, *, open_low: bool = False, open_high: bool = False) -> None:
    low_ok = value > 0 if open_low else value >= 0
    high_ok = value < 1 if open_high else value <= 1
    if not (low_ok and high_ok):
        raise ConfigError(f"{name} must be a probability in {'(' if open_low else '['}0, 1"
                          f"{')' if open_high else ']'}, got {value!r}")


def _check_positive_int(name: str, value: int, minimum: int = 1) -> None:
    if int(value) != value or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")


def initial_mean(n_options: int, accuracy: float) -> np.ndarray:
    """Probability vector with ``accuracy`` on the correct option and the rest spread evenly."""
    _check_positive_int("n_options", n_options, 2)
    _check_prob("accuracy", accuracy, open_low=True, open_high=True)
    m = np.full(n_options, (1.0 - accuracy) / (n_options - 1))
    m[CORRECT] = accuracy
    return m


def _categorical(rng: np.random.Generator, probs: np.ndarray) -> np.ndarray:
    """One draw per row of ``probs`` (last axis = options), vectorised by inverse CDF."""
    cdf = np.cumsum(probs, axis=-1)
    u = rng.random(probs.shape[:-1] + (1,)) * cdf[..., -1:]
    return np.minimum((cdf < u).sum(axis=-1), probs.shape[-1] - 1)


def majority_credit(answers: np.ndarray, n_options: int) -> np.ndarray:
    """Majority-vote correctness over the last axis, ties credited fractionally.

    If the correct option shares the top count with m-1 others the vote earns 1/m: the expected
    score of a fair tie-break, without drawing a random number (and without the bias a fixed
    "lowest index wins" rule would give to option 0).
    """
    counts = (answers[..., None] == np.arange(n_options)).sum(axis=-2)
    top = counts == counts.max(axis=-1, keepdims=True)
    return top[..., CORRECT] / top.sum(axis=-1)


def _mean_ci(x: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error along ``axis``."""
    n = x.shape[axis]
    return x.mean(axis=axis), x.std(axis=axis, ddof=1) / np.sqrt(n)


def all_to_all(n_agents: int, include_self: bool = True) -> np.ndarray:
    """Reading matrix ``R[reader, author]`` where everybody reads everybody."""
    _check_positive_int("n_agents", n_agents, 2)
    reads = np.ones((n_agents, n_agents), dtype=bool)
    if not include_self:
        np.fill_diagonal(reads, False)
    return reads


# --------------------------------------------------------------------------------------------
# 1. the neutral regime: Dirichlet debate
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DebateTrace:
    """Per run, round and agent: posterior probability of the correct option and answer correctness.

    ``belief`` and ``correct`` have shape (runs, rounds + 1, agents); ``majority`` has shape
    (runs, rounds + 1) and holds the tie-credited majority-vote score of each round.
    """

    belief: np.ndarray
    correct: np.ndarray
    majority: np.ndarray

    @property
    def group_belief(self) -> np.ndarray:
        """Mean over agents of the belief in the correct option, shape (runs, rounds + 1)."""
        return self.belief.mean(axis=2)

    def summary(self) -> pd.DataFrame:
        """One row per round: means with standard errors, and the spread of the group belief."""
        g = self.group_belief
        acc = self.correct.mean(axis=2)
        rows = {"round": np.arange(g.shape[1])}
        rows["belief"], rows["belief_se"] = _mean_ci(g)
        rows["belief_q10"], rows["belief_q90"] = np.quantile(g, [0.1, 0.9], axis=0)
        rows["belief_sd"] = g.std(axis=0, ddof=1)
        rows["agent_spread"] = self.belief.std(axis=2).mean(axis=0)
        rows["correct"], rows["correct_se"] = _mean_ci(acc)
        rows["majority"], rows["majority_se"] = _mean_ci(self.majority)
        return pd.DataFrame(rows)


def dirichlet_update(alpha: np.ndarray, answers: np.ndarray, reads: np.ndarray) -> np.ndarray:
    """One round of the counting update: ``alpha[..., i, k] + #{j : reads[i, j] and answers[..., j] == k}``.

    ``alpha`` has shape (..., agents, options), ``answers`` (..., agents) holds option indices and
    ``reads[i, j]`` says whether agent i reads agent j. Returns a new array.
    """
    alpha = np.asarray(alpha, dtype=float)
    counts = np.eye(alpha.shape[-1])[np.asarray(answers)]  # one-hot, (..., agents, options)
    return alpha + np.einsum("ij,...jk->...ik", np.asarray(reads, dtype=float), counts)


def dirichlet_debate(
    n_agents: int = 5,
    n_options: int = 4,
    n_rounds: int = 10,
    initial_accuracy: float = 0.5,
    prior_strength: float = 2.0,
    n_runs: int = 2000,
    seed: int = 0,
    reads: np.ndarray | None = None,
) -> DebateTrace:
    """Debate in the neutral regime of Choi et al.

    Every agent starts from the same Dirichlet belief ``prior_strength * m`` with
    ``m[correct] = initial_accuracy``. Each round every agent answers by sampling from its
    posterior (Dirichlet draw, then a categorical draw: marginally the posterior mean), then adds
    to its Dirichlet parameters the counts of the answers it reads. ``reads[i, j]`` says whether
    agent i reads agent j; the default is symmetric all-to-all including oneself.
    """
    _check_positive_int("n_agents", n_agents, 2)
    _check_positive_int("n_rounds", n_rounds, 1)
    _check_positive_int("n_runs", n_runs, 2)
    if prior_strength <= 0:
        raise ConfigError(f"prior_strength must be > 0, got {prior_strength!r}")
    reads = all_to_all(n_agents, include_self=True) if reads is None else np.asarray(reads, dtype=bool)
    if reads.shape != (n_agents, n_agents):
        raise ConfigError(f"reads must have shape ({n_agents}, {n_agents}), got {reads.shape}")
    rng = np.random.default_rng(seed)
    alpha = np.broadcast_to(prior_strength * initial_mean(n_options, initial_accuracy),
                            (n_runs, n_agents, n_options)).copy()
    w = reads.astype(float)
    belief = np.empty((n_runs, n_rounds + 1, n_agents))
    correct = np.empty((n_runs, n_rounds + 1, n_agents), dtype=bool)
    majority = np.empty((n_runs, n_rounds + 1))
    for t in range(n_rounds + 1):
        probs = alpha / alpha.sum(axis=-1, keepdims=True)
        belief[:, t] = probs[..., CORRECT]
        answers = _categorical(rng, probs)
        correct[:, t] = answers == CORRECT
        majority[:, t] = majority_credit(answers, n_options)
        if t < n_rounds:
            alpha = dirichlet_update(alpha, answers, w)
    return DebateTrace(belief, correct, majority)


@dataclass(frozen=True)
class IncrementTest:
    """Test of "mean increment = 0" for a per-run trajectory.

    ``per_round`` has one row per step t -> t+1 (mean increment, standard error, z). The pooled
    numbers average each run's increments over rounds first, so runs are the independent units.
    """

    per_round: pd.DataFrame
    mean_increment: float
    se: float
    z: float
    n_runs: int


def increment_test(trajectory: np.ndarray) -> IncrementTest:
    """Mean one-round increment of ``trajectory`` (shape runs x (rounds + 1)) and its standard error."""
    x = np.asarray(trajectory, dtype=float)
    d = np.diff(x, axis=1)
    mean, se = _mean_ci(d)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, mean / se, 0.0)
    per_round = pd.DataFrame({"step": np.arange(1, d.shape[1] + 1), "mean_increment": mean, "se": se, "z": z})
    run_mean = d.mean(axis=1)
    m, s = float(run_mean.mean()), float(run_mean.std(ddof=1) / np.sqrt(len(run_mean)))
    return IncrementTest(per_round, m, s, m / s if s > 0 else 0.0, len(run_mean))


# --------------------------------------------------------------------------------------------
# 2. the corrective regime: latent-concept debate
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConceptTrace:
    """Latent-concept debate record; arrays are (runs, rounds + 1, agents) unless noted.

    ``belief``: posterior probability of the true concept; ``correct``: the agent's answer is
    right; ``grounded``: its response carried a grounded argument; ``majority`` (runs, rounds + 1).
    """

    belief: np.ndarray
    correct: np.ndarray
    grounded: np.ndarray
    majority: np.ndarray

    @property
    def seed(self) -> np.ndarray:
        """(runs, rounds + 1): the pool of that round holds at least one correct grounded response."""
        return (self.grounded & self.correct).any(axis=2)

    @property
    def group_belief(self) -> np.ndarray:
        return self.belief.mean(axis=2)

    def summary(self) -> pd.DataFrame:
        """Per round: mean belief, answer accuracy and majority vote, each with its standard error."""
        rows = {"round": np.arange(self.belief.shape[1])}
        rows["belief"], rows["belief_se"] = _mean_ci(self.group_belief)
        rows["correct"], rows["correct_se"] = _mean_ci(self.correct.mean(axis=2))
        rows["majority"], rows["majority_se"] = _mean_ci(self.majority)
        rows["seed_rate"] = self.seed.mean(axis=0)
        return pd.DataFrame(rows)


def latent_concept_debate(
    n_agents: int = 5,
    n_options: int = 4,
    n_rounds: int = 4,
    initial_accuracy: float = 0.35,
    ground_prob: float = 0.3,
    false_ground_prob: float = 0.0,
    strength: float = 20.0,
    n_runs: int = 2000,
    seed: int = 0,
    reads: np.ndarray | None = None,
    bare_strength: float = 1.5,
) -> ConceptTrace:
    """Debate in the corrective regime of Hu et al. (our toy version).

    A task has K latent concepts; concept k leads to answer k and concept 0 is the true one.
    Each agent holds a posterior over concepts (initially ``initial_accuracy`` on the truth).
    Each round it samples a concept, answers accordingly, and with probability ``ground_prob``
    (if its concept is the true one) or ``false_ground_prob`` (if not) backs the answer with a
    grounded argument. Given the concepts, responses are independent. Readers update by Bayes'
    rule: every response for answer k multiplies the odds of concept k by ``bare_strength`` (an
    unsupported answer is weak evidence; 1 makes it none), and a grounded one by ``strength`` on
    top. With ``bare_strength`` > 1 an unseeded pool moves too, so "no seed, no drift" is a
    finding of the simulation rather than a rule built into it. ``reads`` defaults to all-to-all
    without oneself.
    """
    _check_positive_int("n_agents", n_agents, 2)
    _check_positive_int("n_rounds", n_rounds, 1)
    _check_positive_int("n_runs", n_runs, 2)
    _check_prob("ground_prob", ground_prob)
    _check_prob("false_ground_prob", false_ground_prob)
    if strength < 1:
        raise ConfigError(f"strength is a likelihood ratio and must be >= 1, got {strength!r}")
    if bare_strength < 1:
        raise ConfigError(f"bare_strength is a likelihood ratio and must be >= 1, got {bare_strength!r}")
    reads = all_to_all(n_agents, include_self=False) if reads is None else np.asarray(reads, dtype=bool)
    rng = np.random.default_rng(seed)
    logb = np.broadcast_to(np.log(initial_mean(n_options, initial_accuracy)),
                           (n_runs, n_agents, n_options)).copy()
    eye = np.eye(n_options)
    w = reads.astype(float)
    shape = (n_runs, n_rounds + 1, n_agents)
    belief, correct, grounded = np.empty(shape), np.empty(shape, bool), np.empty(shape, bool)
    majority = np.empty(shape[:2])
    for t in range(n_rounds + 1):
        b = np.exp(logb - logb.max(axis=-1, keepdims=True))
        b /= b.sum(axis=-1, keepdims=True)
        belief[:, t] = b[..., CORRECT]
        concept = _categorical(rng, b)
        correct[:, t] = concept == CORRECT
        p_ground = np.where(correct[:, t], ground_prob, false_ground_prob)
        grounded[:, t] = rng.random(p_ground.shape) < p_ground
        majority[:, t] = majority_credit(concept, n_options)
        if t < n_rounds:
            evidence = eye[concept] * (np.log(bare_strength) + np.log(strength) * grounded[:, t, :, None])
            logb += np.einsum("ij,rjk->rik", w, evidence)
    return ConceptTrace(belief, correct, grounded, majority)


def seed_effect(trace: ConceptTrace, round_index: int = 0) -> pd.DataFrame:
    """One-step change of the mean belief in the truth, split by "a correct seed was in the pool".

    Uses round ``round_index`` -> ``round_index + 1`` only, so runs are independent units.
    Returns one row per condition: runs, mean increment, standard error.
    """
    g = trace.group_belief
    d = g[:, round_index + 1] - g[:, round_index]
    has = trace.seed[:, round_index]
    rows = []
    for label, mask in (("correct seed in pool", has), ("no correct seed", ~has)):
        x = d[mask]
        se = float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")
        rows.append({"condition": label, "runs": int(mask.sum()),
                     "mean_increment": float(x.mean()) if len(x) else float("nan"), "se": se})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# 3. the gated leader star
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StarTrace:
    """Leader-star record for many independent instances.

    Shapes: ``belief``, ``correct``, ``uncertain``: (instances, stages + 1), the leader's state after
    each stage (column 0 = alone); ``confidence`` (same shape) is the leader's largest posterior
    probability, the quantity its gate looks at. ``consulted``: (instances, stages), whether the
    leader read that stage's peer. ``peer_belief``: (instances, stages), that peer's probability of
    the correct option.
    """

    belief: np.ndarray
    correct: np.ndarray
    uncertain: np.ndarray
    confidence: np.ndarray
    consulted: np.ndarray
    peer_belief: np.ndarray

    def inclusions(self) -> np.ndarray:
        """Cross-agent context inclusions per instance: peer reads leader + leader reads peer."""
        return 2 * self.consulted.sum(axis=1)


def gated_star(
    n_instances: int = 20000,
    n_options: int = 4,
    n_stages: int = 3,
    initial_accuracy: float = 0.5,
    concentration: float = 2.0,
    prior_strength: float = 2.0,
    tau: float = 0.6,
    gated: bool = True,
    seed: int = 0,
) -> StarTrace:
    """A leader consults peers one at a time (the LASE star), with the same counting update as
    :func:`dirichlet_debate`.

    Each instance draws the leader's and every peer's belief independently from
    Dirichlet(``concentration`` * m), so the population is homogeneous: on average the leader is
    exactly as good as a peer. The leader answers by sampling from its posterior and raises its
    uncertainty event U when its posterior puts less than ``tau`` on its favourite option (a
    quantity of its own transcript only). At stage s, if U = 1 (or always, when ``gated`` is
    False) it reads peer s's sampled answer, adds it to its Dirichlet counts, answers again and
    re-evaluates U. Peers never read anything. Because U depends on the belief and not on the
    sampled answer, the expected correctness at every stage equals the mean belief.
    """
    _check_positive_int("n_instances", n_instances, 2)
    _check_positive_int("n_stages", n_stages, 1)
    _check_prob("tau", tau)
    if concentration <= 0 or prior_strength <= 0:
        raise ConfigError("concentration and prior_strength must be > 0")
    rng = np.random.default_rng(seed)
    m = initial_mean(n_options, initial_accuracy)
    leader = rng.dirichlet(concentration * m, size=n_instances)
    peers = rng.dirichlet(concentration * m, size=(n_instances, n_stages))
    alpha = prior_strength * leader
    eye = np.eye(n_options)

    def posterior(a: np.ndarray) -> np.ndarray:
        return a / a.sum(axis=1, keepdims=True)

    shape = (n_instances, n_stages + 1)
    belief, correct, uncertain = np.empty(shape), np.empty(shape, bool), np.empty(shape, bool)
    confidence = np.empty(shape)
    consulted = np.zeros((n_instances, n_stages), bool)
    p = posterior(alpha)
    answer = _categorical(rng, p)
    belief[:, 0], correct[:, 0] = p[:, CORRECT], answer == CORRECT
    confidence[:, 0] = p.max(axis=1)
    uncertain[:, 0] = confidence[:, 0] < tau
    for s in range(n_stages):
        active = uncertain[:, s] if gated else np.ones(n_instances, bool)
        peer_answer = _categorical(rng, peers[:, s])
        alpha = alpha + eye[peer_answer] * active[:, None]
        p = posterior(alpha)
        answer = np.where(active, _categorical(rng, p), answer)
        consulted[:, s] = active
        belief[:, s + 1], correct[:, s + 1] = p[:, CORRECT], answer == CORRECT
        confidence[:, s + 1] = p.max(axis=1)
        uncertain[:, s + 1] = confidence[:, s + 1] < tau
    return StarTrace(belief, correct, uncertain, confidence, consulted, peers[..., CORRECT])


def star_drift(trace: StarTrace) -> pd.DataFrame:
    """Per stage and per value of the leader's U before the stage: mean belief increment of the
    leader, the symmetry gap E[peer belief - leader belief] (zero under the martingale condition),
    standard errors, and how many instances fell in the group."""
    rows = []
    for s in range(trace.consulted.shape[1]):
        d = trace.belief[:, s + 1] - trace.belief[:, s]
        gap = trace.peer_belief[:, s] - trace.belief[:, s]
        for u in (True, False):
            mask = trace.uncertain[:, s] == u
            if mask.sum() < 2:
                continue
            dm, dse = _mean_ci(d[mask])
            gm, gse = _mean_ci(gap[mask])
            rows.append({"stage": s + 1, "uncertain": u, "instances": int(mask.sum()),
                         "consulted": float(trace.consulted[mask, s].mean()),
                         "drift": float(dm), "drift_se": float(dse), "gap": float(gm), "gap_se": float(gse)})
    return pd.DataFrame(rows)


def drift_by_confidence(trace: StarTrace, bins: int = 10) -> pd.DataFrame:
    """First-stage belief increment of the leader binned by its confidence before the stage.

    Columns: confidence (bin centre), instances, drift, drift_se, consulted (share of the bin
    that read a peer). Empty bins are dropped.
    """
    conf = trace.confidence[:, 0]
    d = trace.belief[:, 1] - trace.belief[:, 0]
    edges = np.linspace(conf.min(), conf.max(), bins + 1)
    which = np.clip(np.digitize(conf, edges) - 1, 0, bins - 1)
    rows = []
    for k in range(bins):
        mask = which == k
        if mask.sum() < 2:
            continue
        m, se = _mean_ci(d[mask])
        rows.append({"confidence": 0.5 * (edges[k] + edges[k + 1]), "instances": int(mask.sum()),
                     "drift": float(m), "drift_se": float(se), "consulted": float(trace.consulted[mask, 0].mean())})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# 4. the selective-gain bound, the cost identity and the Pareto corollary
# --------------------------------------------------------------------------------------------

Gate = Literal["confidence", "random", "always", "never"]


@dataclass(frozen=True)
class GainResult:
    """Outcome of :func:`selective_gain`: accuracies, gain against the bound, and costs (tokens)."""

    gate: str
    gate_rate: float  # nominal P(U=1)
    tau: float  # confidence threshold of the gate (nan unless gate == "confidence")
    p_uncertain: float  # measured P(U=1)
    rho: float
    rho_hat: float  # measured P(seed | U=1)
    delta: float
    delta_hat: float  # measured accuracy rise given a seed, among U=1
    acc_solo: float
    acc_lase: float
    gain: float
    gain_se: float
    bound: float  # gate_rate * rho * delta
    cost: float  # measured mean tokens per problem
    cost_se: float
    cost_formula: float  # C_L + gate_rate * C_peer
    cost_always: float  # C_L + C_peer

    def as_dict(self) -> dict[str, float | str]:
        return asdict(self)


def selective_gain(
    n_problems: int = 20000,
    gate_rate: float = 0.3,
    rho: float = 0.5,
    delta: float = 0.3,
    noseed_shift: float = 0.0,
    gate: Gate = "confidence",
    confidence: tuple[float, float] = (4.0, 1.5),
    leader_tokens: float = 1000.0,
    peer_tokens: float = 800.0,
    seed: int = 0,
) -> GainResult:
    """Simulate one gated-interaction policy on problems with known confidence.

    Problem i has a calibrated confidence c_i ~ Beta(*confidence): the leader alone is right with
    probability c_i. ``gate`` decides U: "confidence" sets U = 1 for the ``gate_rate`` least
    confident problems (the LASE gate), "random" flips a coin with that rate, "always"/"never"
    interact on every/no problem. With U = 1 a correct seed turns up with probability ``rho`` (A1);
    with a seed the leader is then right with probability min(1, c_i + ``delta``) (A2), without one
    with probability c_i + ``noseed_shift`` (A3 holds when the shift is >= 0). One uniform number
    per problem decides right/wrong in every branch, so a seed never turns a right answer wrong.
    Tokens per call are Gamma-distributed with means ``leader_tokens`` and ``peer_tokens``.
    """
    _check_positive_int("n_problems", n_problems, 2)
    for name, v in (("gate_rate", gate_rate), ("rho", rho), ("delta", delta)):
        _check_prob(name, v)
    if gate not in ("confidence", "random", "always", "never"):
        raise ConfigError(f"gate must be confidence, random, always or never, got {gate!r}")
    q = {"always": 1.0, "never": 0.0}.get(gate, gate_rate)
    a, b = confidence
    rng = np.random.default_rng(seed)
    # Draw every random number up front and in a fixed order: policies that share a seed then see
    # the same problems, seeds and token counts (common random numbers, paired comparisons).
    c = rng.beta(a, b, n_problems)
    u = rng.random(n_problems)
    coin = rng.random(n_problems)
    seed_draw = rng.random(n_problems)
    tok_leader = rng.gamma(4.0, leader_tokens / 4.0, n_problems)
    tok_peer = rng.gamma(4.0, peer_tokens / 4.0, n_problems)

    tau = float(stats.beta.ppf(q, a, b)) if gate == "confidence" else float("nan")
    if gate == "confidence":
        uncertain = c < tau
    else:
        uncertain = coin < q
    has_seed = uncertain & (seed_draw < rho)
    solo = u < c
    p_after = np.where(has_seed, np.minimum(1.0, c + delta), np.clip(c + noseed_shift, 0.0, 1.0))
    after = u < p_after
    final = np.where(uncertain, after, solo)
    diff = final.astype(float) - solo
    cost = tok_leader + uncertain * tok_peer

    n_u, n_s = int(uncertain.sum()), int(has_seed.sum())
    return GainResult(
        gate=gate,
        gate_rate=q,
        tau=tau,
        p_uncertain=float(uncertain.mean()),
        rho=rho,
        rho_hat=n_s / n_u if n_u else float("nan"),
        delta=delta,
        delta_hat=float((after[has_seed].astype(float) - solo[has_seed]).mean()) if n_s else float("nan"),
        acc_solo=float(solo.mean()),
        acc_lase=float(final.mean()),
        gain=float(diff.mean()),
        gain_se=float(diff.std(ddof=1) / np.sqrt(n_problems)),
        bound=q * rho * delta,
        cost=float(cost.mean()),
        cost_se=float(cost.std(ddof=1) / np.sqrt(n_problems)),
        cost_formula=leader_tokens + q * peer_tokens,
        cost_always=leader_tokens + peer_tokens,
    )


def bound_table(settings: list[dict], **common) -> pd.DataFrame:
    """:func:`selective_gain` for each dict of overrides in ``settings``; one row per setting."""
    return pd.DataFrame([selective_gain(**{**common, **s}).as_dict() for s in settings])


def setting_seeds(seed: int, n: int) -> list[int]:
    """``n`` independent seeds drawn from one ``seed`` (numpy's ``SeedSequence``): reproducible, and
    no two settings share their random numbers."""
    return [int(x) for x in np.random.SeedSequence(seed).generate_state(n)]


def bound_grid(settings: list[dict], seed: int = 0, **common) -> pd.DataFrame:
    """:func:`selective_gain` for each dict in ``settings`` (keys other than its arguments, such as
    ``regime``, are kept as columns), each setting with its own seed (:func:`setting_seeds`), so
    that the settings' sampling errors are independent and can be counted as independent trials
    (:func:`describe_bound`). One row per setting, with its ``seed``."""
    import inspect

    args = set(inspect.signature(selective_gain).parameters)
    rows = []
    for s, sd in zip(settings, setting_seeds(seed, len(settings))):
        r = selective_gain(**{**common, **{k: v for k, v in s.items() if k in args}, "seed": sd}).as_dict()
        rows.append({**r, **{k: v for k, v in s.items() if k not in args}, "seed": sd})
    return pd.DataFrame(rows)


def pareto_table(gate_rates: list[float] | np.ndarray, **kwargs) -> pd.DataFrame:
    """Accuracy and cost of solo, always-interact, LASE (confidence gate) and a random gate at each
    rate. All rows share one seed, hence the same problems. Columns: policy, gate_rate, accuracy,
    accuracy_se, cost, cost_se."""
    kwargs = {k: v for k, v in kwargs.items() if k not in ("gate", "gate_rate")}
    runs = [("solo", selective_gain(gate="never", **kwargs)),
            ("always interact", selective_gain(gate="always", **kwargs))]
    for q in gate_rates:
        runs.append(("LASE (confidence gate)", selective_gain(gate="confidence", gate_rate=float(q), **kwargs)))
        runs.append(("random gate", selective_gain(gate="random", gate_rate=float(q), **kwargs)))
    n = kwargs.get("n_problems", 20000)
    return pd.DataFrame([{
        "policy": name, "gate_rate": r.gate_rate, "accuracy": r.acc_lase,
        "accuracy_se": float(np.sqrt(r.acc_lase * (1 - r.acc_lase) / n)),
        "cost": r.cost, "cost_se": r.cost_se,
    } for name, r in runs])


# --------------------------------------------------------------------------------------------
# 5. topology cost: who reads whom
# --------------------------------------------------------------------------------------------


def all_to_all_schedule(n_agents: int, n_rounds: int) -> np.ndarray:
    """Reading schedule of all-to-all debate, shape (rounds, agents, agents).

    ``S[t, i, j]`` is True when agent i's context in round t + 1 includes agent j's round-t
    response. Everyone reads everyone's previous response (its own too, which is not counted as a
    cross-agent inclusion).
    """
    _check_positive_int("n_rounds", n_rounds, 1)
    return np.broadcast_to(all_to_all(n_agents, include_self=True), (n_rounds, n_agents, n_agents)).copy()


def star_schedule(n_agents: int, n_rounds: int, k_peers: int = 1, active: np.ndarray | None = None,
                  leader: int = 0) -> np.ndarray:
    """Reading schedule of a leader star, shape (rounds, agents, agents).

    In every round where ``active[t]`` holds (default: every round) the leader sends its current
    attempt to ``k_peers`` peers, taken in turn from the others, and reads each of their replies:
    two inclusions per consulted peer. Peers never read each other.
    """
    _check_positive_int("n_agents", n_agents, 2)
    _check_positive_int("n_rounds", n_rounds, 1)
    _check_positive_int("k_peers", k_peers, 1)
    if k_peers > n_agents - 1:
        raise ConfigError(f"k_peers={k_peers} exceeds the {n_agents - 1} available peers")
    active = np.ones(n_rounds, bool) if active is None else np.asarray(active, bool)
    others = np.array([a for a in range(n_agents) if a != leader])
    sched = np.zeros((n_rounds, n_agents, n_agents), bool)
    for t in np.flatnonzero(active):
        peers = others[(t * k_peers + np.arange(k_peers)) % len(others)]
        sched[t, peers, leader] = True  # peer reads the leader's attempt
        sched[t, leader, peers] = True  # leader reads the peer's reply
    return sched


def transcript(schedule: np.ndarray) -> pd.DataFrame:
    """The cross-agent inclusions of a schedule as rows (round, reader, author), reader != author."""
    t, i, j = np.nonzero(schedule)
    keep = i != j
    return pd.DataFrame({"round": t[keep] + 1, "reader": i[keep], "author": j[keep]})


def count_inclusions(schedule: np.ndarray) -> int:
    """Number of ordered cross-agent context inclusions in a schedule (off-diagonal entries)."""
    s = np.asarray(schedule, bool)
    return int(s.sum() - np.trace(s, axis1=1, axis2=2).sum())


def inclusions_formula(topology: Literal["all_to_all", "star"], n_agents: int, n_rounds: int,
                       k_peers: int = 1) -> int:
    """Closed forms: T n (n - 1) for all-to-all, 2 k T (an upper bound, reached without a gate) for a star."""
    if topology == "all_to_all":
        return n_rounds * n_agents * (n_agents - 1)
    if topology == "star":
        return 2 * k_peers * n_rounds
    raise ConfigError(f"unknown topology {topology!r}")


def topology_costs(agent_counts: list[int] | np.ndarray, n_rounds: int = 3, k_peers: int = 1,
                   gate_rate: float = 0.3, n_draws: int = 200, seed: int = 0) -> pd.DataFrame:
    """Count inclusions from constructed transcripts for each n and compare them with the formulas.

    Rows: n_agents, topology (all-to-all, leader star, gated star), counted, formula. The gated star
    consults in each round with probability ``gate_rate``; its ``counted`` is the mean over
    ``n_draws`` gate patterns, ``counted_max`` the largest, and its formula is the bound 2kT.
    """
    _check_prob("gate_rate", gate_rate)
    _check_positive_int("n_draws", n_draws, 1)
    rng = np.random.default_rng(seed)
    rows = []
    for n in agent_counts:
        n = int(n)
        k = min(k_peers, n - 1)
        full = inclusions_formula("all_to_all", n, n_rounds)
        star = inclusions_formula("star", n, n_rounds, k)
        a2a = len(transcript(all_to_all_schedule(n, n_rounds)))
        rows.append({"n_agents": n, "topology": "all-to-all", "counted": a2a, "counted_max": a2a, "formula": full})
        s = len(transcript(star_schedule(n, n_rounds, k)))
        rows.append({"n_agents": n, "topology": "leader star", "counted": s, "counted_max": s, "formula": star})
        gated = [len(transcript(star_schedule(n, n_rounds, k, active=rng.random(n_rounds) < gate_rate)))
                 for _ in range(n_draws)]
        rows.append({"n_agents": n, "topology": "gated star", "counted": float(np.mean(gated)),
                     "counted_max": int(np.max(gated)), "formula": star})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# 6. what the chapter says: sentences generated from the simulations (so they stay true)
# --------------------------------------------------------------------------------------------


def plurality_is_correct(initial_accuracy: float, n_options: int) -> bool:
    """Whether the correct option is the peers' plurality: ``initial_accuracy`` above the
    (1 - a) / (K - 1) of each wrong option, which is the same as ``initial_accuracy`` > 1/K."""
    return initial_accuracy > 1.0 / n_options


def corollary_39(gate_rates: list[float] | np.ndarray, rho: float = 0.5, delta: float = 0.3, z: float = 4.0,
                 **kwargs) -> pd.DataFrame:
    """Corollary 3.9 checked at each gate rate q with :func:`selective_gain` (shared problems):
    LASE costs less than always-interact, and gains at least q * rho * delta over solo (within
    ``z`` paired standard errors).

    Columns: gate_rate, tau, a2_holds (tau + delta <= 1: every gated leader can rise by delta),
    cost, cost_always, cheaper, gain, gain_se, bound, gain_holds, acc_lase, acc_always (the
    corollary says nothing about this last comparison)."""
    kwargs = {k: v for k, v in kwargs.items() if k not in ("gate", "gate_rate")}
    always = selective_gain(gate="always", rho=rho, delta=delta, **kwargs)
    rows = []
    for q in gate_rates:
        r = selective_gain(gate="confidence", gate_rate=float(q), rho=rho, delta=delta, **kwargs)
        rows.append({"gate_rate": r.gate_rate, "tau": r.tau, "a2_holds": bool(r.tau + delta <= 1), "cost": r.cost,
                     "cost_always": always.cost, "cheaper": bool(r.cost < always.cost), "gain": r.gain,
                     "gain_se": r.gain_se, "bound": r.bound, "gain_holds": bool(r.gain >= r.bound - z * r.gain_se),
                     "acc_lase": r.acc_lase, "acc_always": always.acc_lase})
    return pd.DataFrame(rows)


def describe_corollary(table: pd.DataFrame) -> str:
    """What a :func:`corollary_39` table says, counted from its rows: at how many gate rates LASE
    is cheaper than always interacting, keeps the gain (``gain_holds``), meets A2 (``a2_holds``),
    how many measured gains lie below their bound at all, and at how many rates always interacting
    is the more accurate policy (a comparison the corollary does not make)."""
    n = len(table)
    count = lambda col: int(table[col].sum())  # noqa: E731
    below = int((table["gain"] < table["bound"]).sum())
    fails = table.loc[~table["gain_holds"].astype(bool), "gate_rate"]
    where = f" (gate rates {', '.join(f'{q:g}' for q in fails)})" if len(fails) else ""
    more = int((table["acc_always"] > table["acc_lase"]).sum())
    return (f"Of {n} gate rates: LASE is cheaper than always interacting at {count('cheaper')}; its gain keeps the "
            f"bound (within the table's standard errors) at {count('gain_holds')}, falls clearly short at "
            f"{n - count('gain_holds')}{where}, and lies below the bound at all at {below}; A2 holds "
            f"(tau + delta <= 1) at {count('a2_holds')}. Always interacting is the more accurate policy at {more} "
            f"of {n}: Corollary 3.9 claims the gain for less cost, not more accuracy.")


def describe_bound(grid: pd.DataFrame, z: float = 4.0, z_chance: float = 2.0) -> str:
    """Per regime of the bound grid: settings above the bound, within ``z`` standard errors below
    it, and clearly below it; the sentence names the tolerance it applies. It then says what the
    bound promises and how often chance alone puts a finite simulation below it: the bound is on
    the expected gain, so where it is tight (A3 holds with equality, A2 exactly) a measured gain
    falls below it about half the time, and more than ``z_chance`` standard errors below it with
    probability Phi(-z_chance) (2.3% at 2); the settings must have independent seeds
    (:func:`bound_grid`) for these counts to be independent trials."""
    parts = []
    tail = stats.norm.cdf(-z_chance)
    sizes = grid.groupby("regime", sort=False).size()
    for regime, g in grid.groupby("regime", sort=False):
        diff = g["gain"] - g["bound"]
        above = int((diff >= 0).sum())
        near = int(((diff < 0) & (diff >= -z * g["gain_se"])).sum())
        below = len(g) - above - near
        far = int((diff < -z_chance * g["gain_se"]).sum())
        chance = "" if sizes.nunique() == 1 else f" (by chance: about {len(g) / 2:g} and {tail * len(g):.1f})"
        p_half = stats.binomtest(len(g) - above, len(g), 0.5).pvalue
        half = ("as many as chance puts below a tight bound" if p_half >= 0.05 else
                "more than chance puts below a tight bound" if len(g) - above > len(g) / 2 else
                "fewer than chance puts below a tight bound")
        parts.append(f"{regime}: {above} of {len(g)} settings on or above the bound, {near} below it by less "
                     f"than {z:g} standard errors (sampling noise), {below} clearly below; {far} more than "
                     f"{z_chance:g} standard errors below{chance}; {len(g) - above} below in all is {half} "
                     f"(binomial test against one half, p = {p_half:.2g})")
    each = (f" With {sizes.iloc[0]} settings a tight bound has, by chance alone, about {sizes.iloc[0] / 2:g} measured "
            f"gains below it and {tail * sizes.iloc[0]:.1f} more than {z_chance:g} standard errors below."
            if sizes.nunique() == 1 else "")
    promise = (f"What the bound promises: the expected gain is at least P(U=1) rho delta. A simulation measures the "
               f"gain on finitely many problems, each setting with its own seed, so where the bound is tight (A3 "
               f"holds with equality) the measured gain falls below it in about half of the settings, and more than "
               f"{z_chance:g} standard errors below in {100 * tail:.1f}% of them.{each} ")
    return promise + "; ".join(parts) + "."


# --------------------------------------------------------------------------------------------
# figures of the theory chapter (matplotlib is imported lazily: the simulations do not need it)
# --------------------------------------------------------------------------------------------

_Z95 = 1.96


def _spread(colors: tuple[str, ...], n: int) -> list[str]:
    """``n`` of ``colors``, light to dark, spread over the range (the middle one for ``n`` = 1; past
    ``len(colors)`` lines, shades repeat)."""
    idx = np.linspace(0, len(colors) - 1, n).round().astype(int) if n > 1 else [len(colors) // 2]
    return [colors[i] for i in idx]


def plot_martingale(traces: dict[float, DebateTrace]):
    """Three panels for symmetric debate, one line per initial accuracy: mean belief in the correct
    option (95% CI band) with answer accuracy as dots; the standard deviation of the group belief
    across runs; the majority-vote score per round."""
    import matplotlib.pyplot as plt

    from ..plots import DEBATE_SHADES, band

    fig, axes = plt.subplots(1, 3, figsize=(MAX_WIDTH_IN, 5.0))
    # symmetric debate's colour (MAD's) in shades, light to dark as the starting accuracy rises
    shades = dict(zip(sorted(traces), _spread(DEBATE_SHADES, len(traces))))
    for acc, trace in traces.items():
        s = trace.summary()
        line = band(axes[0], s["round"], s["belief"], s["belief"] - _Z95 * s["belief_se"],
                    s["belief"] + _Z95 * s["belief_se"], label=f"start {acc:.0%}", color=shades[acc], lw=2.5)
        axes[0].plot(s["round"], s["correct"], "o", color=line.get_color(), ms=5, alpha=0.8)
        axes[1].plot(s["round"], s["belief_sd"], "o-", color=line.get_color(), lw=2.5, label=f"start {acc:.0%}")
        band(axes[2], s["round"], s["majority"], s["majority"] - _Z95 * s["majority_se"],
             s["majority"] + _Z95 * s["majority_se"], color=line.get_color(), label=f"start {acc:.0%}", lw=2.5)
    axes[0].set(title="Correctness is flat", xlabel="debate round t",
                ylabel="P(correct option), mean over runs", ylim=(0, 1))
    axes[0].plot([], [], "o", color="gray", label="answer accuracy (dots)")
    axes[1].set(title="...the spread grows", xlabel="debate round t",
                ylabel="SD across runs of the group belief", ylim=(0, None))
    axes[2].set(title="Majority vote", xlabel="debate round t",
                ylabel="majority-vote accuracy", ylim=(0, 1))
    # one legend for the three panels, below them: inside, it covered the 30% curves
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=4, fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def plot_amplification(worlds: dict[str, ConceptTrace]):
    """Three panels for latent-concept debate, one colour per world: mean answer accuracy per round
    (95% CI); the one-step belief change with and without a correct seed at round 0; majority vote
    before and after debate."""
    import matplotlib.pyplot as plt

    from ..plots import band

    fig, axes = plt.subplots(1, 3, figsize=(MAX_WIDTH_IN, 5.0))
    colors = {}
    for name, trace in worlds.items():
        s = trace.summary()
        line = band(axes[0], s["round"], s["correct"], s["correct"] - _Z95 * s["correct_se"],
                    s["correct"] + _Z95 * s["correct_se"], label=name, lw=2.5)
        colors[name] = line.get_color()
    axes[0].set(title="Accuracy in debate", xlabel="debate round t",
                ylabel="share of agents answering correctly", ylim=(0, 1))
    axes[0].legend(loc="lower right", fontsize="small")

    width = 0.8 / len(worlds)
    for w, (name, trace) in enumerate(worlds.items()):
        eff = seed_effect(trace)
        x = np.arange(len(eff)) + (w - (len(worlds) - 1) / 2) * width
        y = eff["mean_increment"].fillna(0).to_numpy()
        axes[1].bar(x, y, width, yerr=_Z95 * eff["se"].fillna(0).to_numpy(), color=colors[name], label=name, capsize=4)
        for xi, (runs, mi) in zip(x, zip(eff["runs"], eff["mean_increment"])):
            if runs == 0 or mi == 0:  # make empty groups and exact zeros visible
                axes[1].annotate("none" if runs == 0 else "0", (xi, 0), textcoords="offset points", xytext=(0, 4),
                                 ha="center", fontsize="small", color=colors[name], fontweight="bold")
    axes[1].axhline(0, color="black", lw=1)
    axes[1].set_xticks(np.arange(2), ["correct seed\nin round-0 pool", "no correct seed"])
    axes[1].set(title="Change, round 0 -> 1", ylabel="change in mean P(true concept)")

    for w, (name, trace) in enumerate(worlds.items()):
        s = trace.summary()
        x = np.arange(2) + (w - (len(worlds) - 1) / 2) * width
        y = s["majority"].iloc[[0, -1]].to_numpy()
        err = _Z95 * s["majority_se"].iloc[[0, -1]].to_numpy()
        axes[2].bar(x, y, width, yerr=err, color=colors[name], label=name, capsize=4)
    axes[2].set_xticks(np.arange(2), ["initial\nmajority vote", f"majority after\n{len(s) - 1} rounds"])
    axes[2].set(title="Debate vs first vote", ylabel="majority-vote accuracy", ylim=(0, 1))
    fig.tight_layout()
    return fig


def plot_star(gated: StarTrace, ungated: StarTrace, tau: float, low: StarTrace | None = None):
    """Three panels for the leader star: first-stage drift against the leader's confidence; the
    symmetry gap split by U; the change of the mean belief in the correct option since stage 0
    (percentage points, paired per instance) for the ungated and gated stars, and for a gated star
    whose starting accuracy ``low`` is below 1/K when given."""
    import matplotlib.pyplot as plt

    from ..plots import NEUTRAL_DARK, NEUTRAL_MID
    from ..strategies import SPECS

    always, lase = SPECS["lase-full"].color, SPECS["lase"].color  # ungated is always interact; gated is LASE
    fig, axes = plt.subplots(1, 3, figsize=(MAX_WIDTH_IN, 5.0))
    for name, trace, style, color in (("ungated (always reads)", ungated, "s--", always), ("gated (LASE)", gated, "o-", lase)):
        d = drift_by_confidence(trace, bins=12)
        axes[0].errorbar(d["confidence"], d["drift"], yerr=_Z95 * d["drift_se"], fmt=style, color=color, lw=2, ms=6,
                         capsize=3, label=name)
    axes[0].axhline(0, color="black", lw=1)
    axes[0].axvline(tau, color="gray", ls=":", lw=2, label=f"gate: tau = {tau:g}")
    axes[0].set(title="Leader's drift, stage 1", xlabel="leader's confidence\nbefore the stage (max posterior)",
                ylabel="mean change in P(correct)")
    axes[0].legend(fontsize="small")

    s1 = star_drift(ungated).query("stage == 1").set_index("uncertain")
    labels = ["U = 1\n(uncertain)", "U = 0\n(confident)"]
    vals = [s1.loc[True, "gap"], s1.loc[False, "gap"]]
    errs = [_Z95 * s1.loc[True, "gap_se"], _Z95 * s1.loc[False, "gap_se"]]
    axes[1].bar(labels, vals, yerr=errs, color=[NEUTRAL_DARK, NEUTRAL_MID], capsize=5)
    axes[1].axhline(0, color="black", lw=1)
    axes[1].set(title="Symmetry broken", ylabel="E[peer belief - leader belief]")

    stages = np.arange(gated.belief.shape[1])
    start = float(gated.belief[:, 0].mean())
    policies = [(f"ungated, start {start:.0%}", ungated, "s--", always),
                (f"gated, start {start:.0%}", gated, "o-", lase)]
    if low is not None:
        policies.append((f"gated, start {low.belief[:, 0].mean():.0%} (< 1/K)", low, "v:", lase))
    rise, fall = 0.0, 0.0
    for name, trace, style, color in policies:
        change = 100 * (trace.belief - trace.belief[:, :1])
        m, se = _mean_ci(change)
        rise, fall = max(rise, float(np.max(m + _Z95 * se))), max(fall, float(-np.min(m - _Z95 * se)))
        axes[2].errorbar(stages, m, yerr=_Z95 * se, fmt=style, color=color, lw=2.5, capsize=4, label=name)
    axes[2].axhline(0, color="black", lw=1)
    top = max(1.0, float(np.abs(axes[2].get_ylim()).max()))
    axes[2].set(title="Correctness vs stage 0", xlabel="stage\n(peers read so far, at most)",
                ylabel="change in mean P(correct), points", ylim=(-top, top))
    axes[2].set_xticks(stages)
    # the legend in the half the curves reach least (the axis is symmetric about zero), off every line
    axes[2].legend(fontsize="small", loc="lower left" if rise >= fall else "upper left")
    fig.tight_layout()
    return fig


def plot_bound(grid: pd.DataFrame, costs: pd.DataFrame):
    """Left: measured gain against the bound P(U=1) rho delta for every setting in ``grid``
    (column ``regime`` colours the points). Right: measured tokens per problem against the cost
    identity, for the rows of ``costs`` (one per gate rate)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(MAX_WIDTH_IN, 5.0))
    ax = axes[0]
    for regime, g in grid.groupby("regime", sort=False):
        ax.errorbar(g["bound"], g["gain"], yerr=_Z95 * g["gain_se"], fmt="o", ms=6, capsize=2, label=regime, alpha=0.85)
    top = float(max(grid["bound"].max(), grid["gain"].max())) * 1.08
    ax.plot([0, top], [0, top], color="black", lw=1.5, label="gain = bound")
    ax.set(title="Selective gain vs the bound", xlabel="bound  P(U=1) x rho x delta  (share of problems)",
           ylabel="measured Acc(LASE) - Acc(solo)  (share)", xlim=(0, top), ylim=(min(0, grid["gain"].min() * 1.1), top))
    ax.legend(fontsize="small", loc="upper left")

    ax = axes[1]
    ax.errorbar(costs["gate_rate"], costs["cost"], yerr=_Z95 * costs["cost_se"], fmt="o", ms=7, capsize=3,
                label="measured (simulated token counts)")
    ax.plot(costs["gate_rate"], costs["cost_formula"], "-", lw=2, label="C_L + P(U=1) C_peer")
    ax.axhline(costs["cost_always"].iloc[0], color="C3", ls="--", lw=2, label="always interact: C_L + C_peer")
    ax.set(title="Cost identity", xlabel="gate rate P(U=1)", ylabel="tokens per problem")
    ax.legend(fontsize="small", loc="upper left")
    fig.tight_layout()
    return fig


def plot_pareto(table: pd.DataFrame):
    """Accuracy against tokens per problem for the policies of :func:`pareto_table`."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 6))
    for policy, style in (("LASE (confidence gate)", "o-"), ("random gate", "s--")):
        g = table[table["policy"] == policy].sort_values("cost")
        ax.errorbar(g["cost"], g["accuracy"], yerr=_Z95 * g["accuracy_se"], fmt=style, lw=2, ms=6, capsize=3,
                    label=policy)
        for _, r in g.iterrows():
            if policy.startswith("LASE"):
                ax.annotate(f"{r['gate_rate']:.0%}", (r["cost"], r["accuracy"]), textcoords="offset points",
                            xytext=(-6, 8), fontsize="small", ha="right")
    for policy, marker in (("solo", "*"), ("always interact", "D")):
        r = table[table["policy"] == policy].iloc[0]
        ax.errorbar(r["cost"], r["accuracy"], yerr=_Z95 * r["accuracy_se"], fmt=marker, ms=14, capsize=3, label=policy)
    ax.set(title="Accuracy vs cost (labels: gate rate)", xlabel="tokens per problem", ylabel="accuracy")
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    return fig


def plot_topology(tables: dict[int, pd.DataFrame]):
    """Log-log cross-agent inclusions against the number of agents, one panel per number of rounds T
    (so that no two lines of a panel share a value): one colour per topology, markers counted from
    transcripts, lines the formulas."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(tables), figsize=(min(MAX_WIDTH_IN, 5.2 * len(tables) + 1), 5.6), squeeze=False, sharey=True)
    styles = {"all-to-all": ("o", "C0", "all-to-all: T n (n-1)"),
              "leader star": ("s", "C1", "leader star: 2kT"),
              "gated star": ("^", "C2", "gated star (mean of draws)")}
    for ax, (rounds, table) in zip(axes[0], tables.items()):
        for topo, (marker, color, label) in styles.items():
            g, gated = table[table["topology"] == topo], topo == "gated star"
            # circles smaller than squares and on top: at n = 2 all-to-all and the star coincide, both show
            look = dict(color=color, ms={"o": 7, "s": 11, "^": 9}[marker], mfc="white" if gated else color,
                        mew=2 if gated else 1)
            ax.plot(g["n_agents"], g["counted"], marker, zorder=4 if marker == "o" else 3, **look)
            if not gated:  # the formula, under the counted markers
                ax.plot(g["n_agents"], g["formula"], "-", color=color, lw=1.5, alpha=0.8, zorder=2)
            if ax is axes[0, 0]:  # one legend entry per topology: marker (counted) and line (formula)
                ax.plot([], [], marker + ("" if gated else "-"), label=label, **look)
        ax.set(xscale="log", yscale="log", title=f"T = {rounds} rounds", xlabel="number of agents n")
        ax.margins(x=0.06)
    axes[0, 0].set_ylabel("ordered cross-agent inclusions")
    axes[0, 0].legend(title="markers: counted; lines: formula", fontsize="small", title_fontsize="small",
                      loc="upper left")
    fig.suptitle("Who reads whom: context inclusions per problem", fontweight="bold")
    fig.tight_layout()
    return fig


def plot_architectures():
    """The three architectures side by side, drawn from code: independent votes, all-to-all
    debate, and LASE's gated leader star (the leader reads one supporter at a time, and only while
    its answer-span gate says it is unsure)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Polygon

    fig, axes = plt.subplots(1, 3, figsize=(MAX_WIDTH_IN, 5.4))

    def agent(ax, xy, text, color="C0", r=0.075):
        ax.add_patch(Circle(xy, r, facecolor=color, edgecolor="black", lw=1.2, alpha=0.9, zorder=3))
        ax.text(*xy, text, ha="center", va="center", fontsize=10, color="white", fontweight="bold", zorder=4)

    def arrow(ax, a, b, color="0.3", both=False, rad=0.0, lw=1.5, shrink=30):
        ax.add_patch(FancyArrowPatch(a, b, arrowstyle="<|-|>" if both else "-|>", mutation_scale=13, color=color,
                                     lw=lw, shrinkA=shrink, shrinkB=shrink, connectionstyle=f"arc3,rad={rad}",
                                     zorder=2))

    def box(ax, xy, text, color="0.92", w=0.34, h=0.1):
        ax.add_patch(FancyBboxPatch((xy[0] - w / 2, xy[1] - h / 2), w, h, boxstyle="round,pad=0.02",
                                    facecolor=color, edgecolor="black", lw=1.2, zorder=3))
        ax.text(*xy, text, ha="center", va="center", fontsize=10, zorder=4)

    # (a) vote
    ax = axes[0]
    xs = np.linspace(0.15, 0.85, 5)
    for i, x in enumerate(xs):
        agent(ax, (x, 0.78), f"A{i + 1}")
        ax.add_patch(FancyArrowPatch((x, 0.78), (0.5, 0.39), arrowstyle="-|>", mutation_scale=13, color="0.3",
                                     lw=1.5, shrinkA=30, shrinkB=0, zorder=2))
    box(ax, (0.5, 0.33), "majority vote")
    arrow(ax, (0.5, 0.28), (0.5, 0.1), shrink=0)
    ax.text(0.5, 0.06, "answer", ha="center", va="top")
    ax.text(0.5, 1.0, "N independent samples;\nnobody reads anybody", ha="center", fontsize=10)
    ax.set_title("Vote (self-consistency)")

    # (b) debate
    ax = axes[1]
    angles = np.pi / 2 + np.arange(5) * 2 * np.pi / 5
    pts = [(0.5 + 0.28 * np.cos(a), 0.6 + 0.26 * np.sin(a)) for a in angles]
    for i, a in enumerate(pts):
        for b in pts[i + 1:]:
            arrow(ax, a, b, both=True, color="0.55", lw=1.1)
    for i, xy in enumerate(pts):
        agent(ax, xy, f"A{i + 1}", color="C2")
    box(ax, (0.5, 0.15), "vote over\nthe last round", h=0.15)
    arrow(ax, (0.5, 0.31), (0.5, 0.22), shrink=0)
    ax.text(0.5, 1.0, "T rounds; each agent reads every\nother: T n (n-1) inclusions", ha="center", fontsize=10)
    ax.set_title("Debate (all-to-all)")

    # (c) gated leader star
    ax = axes[2]
    leader, gate = (0.14, 0.55), (0.43, 0.55)
    agent(ax, leader, "L", color="C1", r=0.085)
    ax.text(leader[0], leader[1] - 0.13, "leader", ha="center", va="top", fontsize=10)
    ax.add_patch(Polygon([(gate[0], gate[1] + 0.11), (gate[0] + 0.12, gate[1]), (gate[0], gate[1] - 0.11),
                          (gate[0] - 0.12, gate[1])], closed=True, facecolor="C4", edgecolor="black", zorder=3))
    ax.text(*gate, "U = 1 ?", ha="center", va="center", fontsize=10, color="white", fontweight="bold", zorder=4)
    ax.add_patch(FancyArrowPatch((leader[0] + 0.085, leader[1]), (gate[0] - 0.12, gate[1]), arrowstyle="-|>",
                                 mutation_scale=13, color="0.3", lw=1.5, zorder=2))
    ax.add_patch(FancyArrowPatch((gate[0], gate[1] - 0.11), (gate[0], 0.2), arrowstyle="-|>", mutation_scale=13,
                                 color="0.3", lw=1.5, zorder=2))
    ax.text(gate[0] + 0.02, 0.33, "no", fontsize=10, fontweight="bold")
    ax.text(gate[0], 0.16, "stop: output the\nleader's answer", ha="center", va="top", fontsize=10)
    peers = [("DA", 0.86, "devil's advocate"), ("C", 0.55, "collaborator"), ("E", 0.24, "senior expert")]
    for label, y, name in peers:
        agent(ax, (0.86, y), label, color="C0")
        ax.text(0.86, y - 0.09, name, ha="center", va="top", fontsize=10)
    ax.add_patch(FancyArrowPatch((gate[0] + 0.12, gate[1]), (0.86 - 0.08, 0.86), arrowstyle="-|>", mutation_scale=13,
                                 color="C4", lw=2, shrinkB=2, zorder=2))  # to DA's left edge, clear of its name
    ax.text(0.6, 0.6, "yes", fontsize=10, fontweight="bold", color="C4")
    for (_, y0, _), (_, y1, _) in zip(peers, peers[1:]):
        ax.add_patch(FancyArrowPatch((0.86, y0), (0.86, y1), arrowstyle="-|>", mutation_scale=13, color="C4",
                                     lw=1.5, ls="--", shrinkA=30, shrinkB=30, zorder=2))
    ax.text(0.86, 0.05, "next stage only\nwhile U = 1", fontsize=10, color="C4", va="top", ha="center")
    arrow(ax, (0.86, 0.86), leader, color="C0", rad=0.35, shrink=30)
    ax.text(0.45, 1.0, "critique or hints, never an answer:\nthe leader revises; the gate checks again",
            fontsize=10, ha="center")
    ax.text(0.5, -0.2, "gate on the answer tokens only:\nexp(LP_min) < tau_lp  or  H_max > tau_h",
            ha="center", va="top", fontsize=10)
    ax.set_title("LASE: gated leader star")

    for ax in axes:
        ax.set(xlim=(0, 1), ylim=(-0.35, 1.12), aspect="equal")
        ax.axis("off")
    fig.tight_layout()
    return fig
