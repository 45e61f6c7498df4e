"""A plausible full-chain recording without a model, for tests and benchmarks (not a chapter's logic)."""

from __future__ import annotations

import numpy as np

from lase_nb.replay import Chains

def synthetic_chains(n: int = 1000, n_stages: int = 4, seed: int = 0, no_answer: float = 0.1) -> Chains:
    """A plausible full-chain recording without a model: calibrated-ish confidence, cumulative tokens.

    Stage 0 is right with probability ``p_min ** 2``; each later stage keeps the answer or
    re-answers with a chance of fixing it; a share ``no_answer`` of later stages has no
    extractable answer (NaN confidence, wrong). Tokens are integers.
    """
    rng = np.random.default_rng(seed)
    p = rng.beta(6, 1.2, (n, n_stages))
    h = np.clip(rng.gamma(1.5, 0.25, (n, n_stages)) * (1.2 - p), 0, None)
    correct = np.empty((n, n_stages), bool)
    correct[:, 0] = rng.random(n) < p[:, 0] ** 2
    for t in range(1, n_stages):
        redo = rng.random(n) < 0.5
        correct[:, t] = np.where(redo, rng.random(n) < 0.5 * p[:, t], correct[:, t - 1])
    missing = rng.random((n, n_stages)) < no_answer
    missing[:, 0] = False
    p[missing], h[missing] = np.nan, np.nan
    correct[missing] = False
    answers = np.where(correct, "right", "wrong").astype(object)
    answers[missing] = None
    prompt = np.cumsum(np.column_stack([rng.integers(150, 250, n)] +
                                       [rng.integers(500, 900, n) for _ in range(n_stages - 1)]), axis=1)
    completion = np.cumsum(rng.integers(20, 300, (n, n_stages)), axis=1)
    return Chains(np.array([f"syn-{i:05d}" for i in range(n)], dtype=object), p, h, correct, answers,
                  prompt.astype(float), completion.astype(float))


def gated(solo, esc, final) -> Chains:
    """Two-stage chains: the leader's answer (``solo``), unsure (p_min 0.5) where ``esc``, and the
    answer after one supporter (``final`` where escalated; kept otherwise)."""
    solo, esc = np.asarray(solo, bool), np.asarray(esc, bool)
    after = np.where(esc, np.asarray(final, bool), solo)
    n = len(solo)
    p = np.column_stack([np.where(esc, 0.5, 0.99), np.full(n, 0.99)])
    return Chains(np.array([f"q{i}" for i in range(n)], dtype=object), p, np.full((n, 2), 0.05),
                  np.column_stack([solo, after]), np.full((n, 2), "1", dtype=object),
                  np.tile([100.0, 500.0], (n, 1)), np.tile([20.0, 60.0], (n, 1)))


def model(n_right: int, n_esc: int, n: int = 100, esc_right: int = 0, fix: int = 0, brk: int = 0) -> Chains:
    """``n`` problems, ``n_right`` right alone; ``n_esc`` escalated, of which the first ``esc_right``
    were right alone; escalation fixes ``fix`` wrong ones and breaks ``brk`` right ones."""
    solo, esc = np.zeros(n, bool), np.zeros(n, bool)
    esc[:n_esc] = True
    solo[:esc_right] = True
    solo[n_esc:n_esc + n_right - esc_right] = True
    final = solo.copy()
    wrong_esc = np.flatnonzero(esc & ~solo)[:fix]
    right_esc = np.flatnonzero(esc & solo)[:brk]
    final[wrong_esc], final[right_esc] = True, False
    return gated(solo, esc, final)
