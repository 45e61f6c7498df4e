"""Answer-span confidence: token location, LP_min, H_max, top-k entropy, the U rule."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lase_nb.confidence import (
    ESTIMATOR,
    Confidence,
    answer_token_indices,
    confidence_arrays,
    is_uncertain,
    measure,
    token_entropy,
    topk_entropy,
    uncertain_mask,
)
from lase_nb.errors import ConfigError, LogprobsUnavailable
from lase_nb.types import (
    ENTROPY_EXACT,
    ENTROPY_TOPK_RESIDUAL,
    KIND_CHOICE,
    KIND_MATH,
    KIND_NUMBER,
    Generation,
    TokenLogprob,
)

LN = math.log


def make_gen(pieces: list[tuple], estimator: str = ENTROPY_TOPK_RESIDUAL) -> Generation:
    """A Generation from (token, logprob[, top[, entropy]]) pieces; offsets are cumulative."""
    toks = []
    off = 0
    for p in pieces:
        tok, lp = p[0], p[1]
        top = tuple(p[2]) if len(p) > 2 else ()
        ent = p[3] if len(p) > 3 else None
        toks.append(TokenLogprob(tok, lp, off, top, ent))
        off += len(tok)
    text = "".join(p[0] for p in pieces)
    return Generation(text, toks, 10, len(toks), "stop", 0.1, estimator, "test", "toy")


# ------------------------------------------------------------------ top-k entropy


def test_topk_entropy_full_distribution_is_exact() -> None:
    # top-k covers all the mass: plain Shannon entropy
    assert topk_entropy([LN(0.5), LN(0.5)]) == pytest.approx(LN(2), abs=1e-12)
    assert topk_entropy([LN(0.25)] * 4) == pytest.approx(LN(4), abs=1e-12)
    assert topk_entropy([0.0]) == pytest.approx(0.0, abs=1e-15)


def test_topk_entropy_residual_bucket() -> None:
    # uniform top-4 at 0.2 each, residual 0.2 as ONE bucket -> exactly the uniform entropy on 5 outcomes
    assert topk_entropy([LN(0.2)] * 4) == pytest.approx(LN(5), abs=1e-12)
    # non-uniform: p = 0.5, 0.3; residual 0.2
    want = -(0.5 * LN(0.5) + 0.3 * LN(0.3) + 0.2 * LN(0.2))
    assert topk_entropy([LN(0.5), LN(0.3)]) == pytest.approx(want, abs=1e-12)
    # a single alternative with mass 0.9: residual 0.1
    assert topk_entropy([LN(0.9)]) == pytest.approx(-(0.9 * LN(0.9) + 0.1 * LN(0.1)), abs=1e-12)


def test_topk_entropy_is_lower_bound_of_true_entropy() -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        p = np.sort(rng.dirichlet(np.ones(30)))[::-1]
        exact = float(-(p * np.log(p)).sum())
        est = topk_entropy(np.log(p[:5]).tolist())
        assert est <= exact + 1e-12
        assert topk_entropy(np.log(p).tolist()) == pytest.approx(exact, abs=1e-9)


def test_topk_entropy_rounding_edge_cases() -> None:
    # sum > 1 from rounded log-probs: renormalised, no residual, no nan, no negative
    h = topk_entropy([LN(0.6), LN(0.6)])
    assert h == pytest.approx(LN(2), abs=1e-12)
    # a log-prob a hair above zero and a certain token
    assert topk_entropy([1e-9]) == pytest.approx(0.0, abs=1e-12)
    assert topk_entropy([1e-9, -30.0]) >= 0.0
    # -inf alternative contributes nothing
    assert topk_entropy([LN(0.5), LN(0.5), -math.inf]) == pytest.approx(LN(2), abs=1e-12)
    # nothing known
    assert math.isnan(topk_entropy([]))
    assert ESTIMATOR == ENTROPY_TOPK_RESIDUAL


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=-50, max_value=1e-6, allow_nan=False), min_size=1, max_size=20))
def test_topk_entropy_is_finite_and_bounded(lps: list[float]) -> None:
    h = topk_entropy(lps)
    assert 0.0 <= h <= LN(len(lps) + 1) + 1e-9


def test_token_entropy_prefers_given_and_adds_chosen_token() -> None:
    assert token_entropy(TokenLogprob("a", LN(0.5), 0, (("a", LN(0.5)),), 1.234)) == (1.234, False)
    # chosen token "z" is not in the top list: its probability becomes a known bucket
    tok = TokenLogprob("z", LN(0.1), 0, (("a", LN(0.4)), ("b", LN(0.3))))
    h, est = token_entropy(tok)
    assert est is True
    want = -(0.4 * LN(0.4) + 0.3 * LN(0.3) + 0.1 * LN(0.1) + 0.2 * LN(0.2))
    assert h == pytest.approx(want, abs=1e-12)
    # chosen token already listed: not counted twice
    tok = TokenLogprob("a", LN(0.4), 0, (("a", LN(0.4)), ("b", LN(0.3))))
    assert token_entropy(tok)[0] == pytest.approx(topk_entropy([LN(0.4), LN(0.3)]), abs=1e-12)


# ------------------------------------------------------------------ span -> tokens


def test_answer_token_indices_overlap() -> None:
    g = make_gen([("The", 0.0), (" answer", 0.0), (" is", 0.0), (" \\", 0.0), ("boxed", 0.0),
                  ("{", 0.0), ("1", 0.0), ("2", 0.0), ("}", 0.0), (".", 0.0)])
    s = g.text.index("12")
    assert answer_token_indices(g, (s, s + 2)) == [6, 7]
    assert answer_token_indices(g, (s, s + 1)) == [6]
    assert answer_token_indices(g, (s, s)) == []
    # a token that starts before the span but reaches into it counts
    assert answer_token_indices(g, (1, 2)) == [0]
    assert answer_token_indices(g, (3, 5)) == [1]  # " answer" covers [3, 10)


def test_answer_token_indices_merged_and_whitespace_tokens() -> None:
    g = make_gen([("\\boxed{", 0.0), (" 3", 0.0), (" ", 0.0), ("\\sqrt", 0.0), ("{2}", 0.0), (" }", 0.0)])
    s = g.text.index("3")
    e = g.text.index("}", g.text.index("{2")) + 1
    assert g.text[s:e] == "3 \\sqrt{2}"
    # " 3" overlaps (leading space merged), inner " " counts, " }" does not overlap
    assert answer_token_indices(g, (s, e)) == [1, 2, 3, 4]


def test_answer_token_indices_zero_length_tokens() -> None:
    toks = [TokenLogprob("\\boxed{", 0.0, 0), TokenLogprob("", -1.0, 7), TokenLogprob("é", -0.1, 7),
            TokenLogprob("}", 0.0, 8)]
    g = Generation("\\boxed{é}", toks, 1, 4, "stop", 0.0, ENTROPY_EXACT)
    assert answer_token_indices(g, (7, 8)) == [1, 2]


# ------------------------------------------------------------------ measure


def test_measure_lp_min_h_max_on_boxed_content() -> None:
    top_a = [("4", LN(0.9)), ("5", LN(0.05))]
    top_b = [("2", LN(0.6)), ("7", LN(0.3))]
    g = make_gen([
        ("So", LN(0.1)), (" the", LN(0.2)), (" answer", LN(0.3)), (" is", LN(0.4)),  # low but outside
        (" $\\boxed{", LN(0.99)),
        ("4", LN(0.9), top_a),
        ("2", LN(0.6), top_b),
        ("}$", LN(0.05)),  # low but outside the content
    ])
    c = measure(g, KIND_NUMBER)
    assert c.answer == "42"
    assert c.n_answer_tokens == 2
    assert c.lp_min == pytest.approx(LN(0.6))
    assert c.p_min == pytest.approx(0.6)
    h_a = -(0.9 * LN(0.9) + 0.05 * LN(0.05) + 0.05 * LN(0.05))
    h_b = -(0.6 * LN(0.6) + 0.3 * LN(0.3) + 0.1 * LN(0.1))
    assert h_b > h_a
    assert c.h_max == pytest.approx(h_b, abs=1e-12)
    assert c.estimator == ENTROPY_TOPK_RESIDUAL
    assert c.span is not None and g.text[c.span[0]:c.span[1]] == "42"


def test_measure_uses_last_box_and_exact_entropy() -> None:
    g = make_gen([
        ("\\boxed{", 0.0, (), 0.0), ("7", LN(0.3), (), 2.0), ("}", 0.0, (), 0.0), (" no: ", 0.0, (), 0.0),
        ("\\boxed{", 0.0, (), 0.0), ("8", LN(0.8), (), 0.7), ("}", 0.0, (), 0.0),
    ], estimator=ENTROPY_EXACT)
    c = measure(g, KIND_NUMBER)
    assert (c.answer, c.n_answer_tokens) == ("8", 1)
    assert c.lp_min == pytest.approx(LN(0.8))
    assert c.h_max == pytest.approx(0.7)
    assert c.estimator == ENTROPY_EXACT


def test_measure_choice_uses_letter_only() -> None:
    g = make_gen([("\\boxed{", 0.0), ("(", LN(0.2)), ("B", LN(0.7), [("B", LN(0.7)), ("C", LN(0.3))]),
                  (")", LN(0.1)), ("}", 0.0)])
    c = measure(g, KIND_CHOICE)
    assert c.answer == "B"
    assert c.n_answer_tokens == 1
    assert c.p_min == pytest.approx(0.7)
    assert c.h_max == pytest.approx(-(0.7 * LN(0.7) + 0.3 * LN(0.3)), abs=1e-12)


def test_measure_no_answer_and_no_tokens() -> None:
    g = make_gen([("I", LN(0.5)), (" give", LN(0.5)), (" up", LN(0.5))])
    c = measure(g, KIND_MATH)
    assert (c.answer, c.lp_min, c.h_max, c.n_answer_tokens) == (None, None, None, 0)
    assert c.p_min is None
    assert is_uncertain(c, 0.0, math.inf)  # no answer is always uncertain
    bare = Generation("\\boxed{1}", None, 1, 1, "stop", 0.0, "none", "gemini", "m1")
    with pytest.raises(LogprobsUnavailable, match="m1"):
        measure(bare, KIND_NUMBER)
    with pytest.raises(LogprobsUnavailable):
        measure(Generation("\\boxed{1}", [], 1, 1, "stop", 0.0, "none", "openai", "m2"), KIND_NUMBER)


def test_measure_unknown_entropy_is_nan() -> None:
    g = make_gen([("\\boxed{", 0.0), ("5", LN(0.95)), ("}", 0.0)])  # no top-k, no entropy
    c = measure(g, KIND_NUMBER)
    assert c.answer == "5" and math.isnan(c.h_max)  # type: ignore[arg-type]
    assert is_uncertain(c, 0.5, 1.0)  # entropy gate on, entropy unknown -> uncertain
    assert not is_uncertain(c, 0.5, math.inf)  # entropy gate off -> only the probability decides


# ------------------------------------------------------------------ the U rule


def _conf(p: float | None, h: float | None, answer: str | None = "1") -> Confidence:
    return Confidence(answer, None if p is None else LN(p), h, 1, ESTIMATOR)


@pytest.mark.parametrize(
    "p, h, tau_lp, tau_h, want",
    [
        (0.95, 0.1, 0.9, 0.5, False),
        (0.85, 0.1, 0.9, 0.5, True),  # low probability
        (0.95, 0.6, 0.9, 0.5, True),  # high entropy
        (0.9, 0.5, 0.9, 0.5, False),  # boundaries: p < tau_lp and h > tau_h are strict
        (0.1, 3.0, 0.0, math.inf, False),  # gate off
        (1.0, 0.0, 1.0, 0.0, False),
    ],
)
def test_is_uncertain(p: float, h: float, tau_lp: float, tau_h: float, want: bool) -> None:
    assert is_uncertain(_conf(p, h), tau_lp, tau_h) is want


def test_uncertain_mask_vectorised_with_nan() -> None:
    p = np.array([0.95, 0.85, 0.95, np.nan, 0.99, 0.99])
    h = np.array([0.1, 0.1, 0.6, 0.0, np.nan, 0.1])
    got = uncertain_mask(p, h, 0.9, 0.5)
    assert got.dtype == bool
    assert got.tolist() == [False, True, True, True, True, False]
    assert uncertain_mask(p, h, 0.9, math.inf).tolist() == [False, True, False, True, False, False]
    # broadcasting over a grid of thresholds is the caller's business; scalars work
    assert uncertain_mask(0.5, 0.1, 0.4, 1.0).shape == ()


def test_scalar_and_vector_rules_agree() -> None:
    rng = np.random.default_rng(1)
    confs = [_conf(float(p), float(h)) for p, h in zip(rng.uniform(0, 1, 200), rng.uniform(0, 2, 200))]
    confs.append(_conf(None, None, answer=None))
    ps, hs = confidence_arrays(confs)
    assert math.isnan(ps[-1]) and math.isnan(hs[-1])
    for tau_lp, tau_h in [(0.5, 0.5), (0.9, 1.5), (0.0, math.inf), (1.0, 0.0)]:
        mask = uncertain_mask(ps, hs, tau_lp, tau_h)
        assert mask.tolist() == [is_uncertain(c, tau_lp, tau_h) for c in confs]


@pytest.mark.parametrize("tau_lp, tau_h", [(-0.1, 0.5), (1.5, 0.5), (math.nan, 0.5), (0.5, -1.0), (0.5, math.nan)])
def test_thresholds_validated(tau_lp: float, tau_h: float) -> None:
    with pytest.raises(ConfigError, match="tau_"):
        is_uncertain(_conf(0.5, 0.5), tau_lp, tau_h)
    with pytest.raises(ConfigError):
        uncertain_mask(np.array([0.5]), np.array([0.5]), tau_lp, tau_h)
