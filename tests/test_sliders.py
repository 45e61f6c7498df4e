"""The threshold sliders, driven without a browser: moving a slider moves the point exactly as replay says."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from lase_nb import analysis, sliders  # noqa: E402
from lase_nb.analysis import replay  # noqa: E402
from tests.synthetic import synthetic_chains  # noqa: E402
from tests.test_pareto import hand_chains  # noqa: E402


def test_operating_point_by_hand():
    c = hand_chains()
    pt = analysis.operating_point(c, 0.8, 0.5)
    assert pt["accuracy"] == pytest.approx(1.0) and pt["n_correct"] == 3 and pt["n"] == 3
    assert pt["avg_tokens"] == pytest.approx((110 + 890 + 130) / 3)
    assert pt["avg_completion_tokens"] == pytest.approx((10 + 90 + 10) / 3)
    assert pt["escalation_rate"] == pytest.approx(1 / 3)
    assert [pt[f"stop_{s}"] for s in range(3)] == [2, 0, 1]
    pt = analysis.operating_point(c, 0.0, np.inf)  # nothing is uncertain except the missing answer
    assert [pt[f"stop_{s}"] for s in range(3)] == [3, 0, 0]


@pytest.mark.parametrize("tau_lp,tau_h", [(0.5, 0.5), (0.9, 0.2), (1.0, 0.0), (0.33, 1.7)])
def test_operating_point_agrees_with_replay(tau_lp, tau_h):
    c = synthetic_chains(n=200, seed=1)
    pt = analysis.operating_point(c, tau_lp, tau_h)
    r = replay(c, tau_lp, tau_h)
    assert pt["accuracy"] == r["correct"].mean()
    assert pt["avg_tokens"] == pytest.approx(r["total_tokens"].mean())
    assert pt["escalation_rate"] == (r["stop_stage"] > 0).mean()
    counts = [pt[f"stop_{s}"] for s in range(c.n_stages)]
    assert counts == [int((r["stop_stage"] == s).sum()) for s in range(c.n_stages)] and sum(counts) == 200


def test_point_sentence_and_row_use_the_point():
    pt = analysis.operating_point(hand_chains(), 0.81, 0.5)
    s = sliders.point_sentence(pt, solo_tokens=120.0)
    assert "66.7% (2 of 3)" in s and "0.81" in s and "1 / 1 / 1" in s and "x the leader alone" in s
    html = sliders.point_row_html(pt)
    assert "<td>66.7%</td>" in html and "<th>stop_2</th>" in html


@pytest.fixture(scope="module")
def controls():
    c = synthetic_chains(n=150, seed=2)
    return sliders.threshold_sliders(c, tau_lp=0.8, tau_h=0.5, grid_size=9)


def test_sliders_start_at_the_given_thresholds(controls):
    assert controls.tau_lp.value == 0.8 and controls.tau_h.value == 0.5
    pt = controls.history[-1]
    assert (pt["tau_lp"], pt["tau_h"]) == (0.8, 0.5)
    assert controls.view.marker_xy() == pytest.approx((pt["avg_tokens"], pt["accuracy"]))
    assert controls.image.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert controls.tau_h.max >= float(np.nanmax(controls.view.chains.h_max))


@pytest.mark.parametrize("slider,value", [("tau_lp", 0.95), ("tau_lp", 0.3), ("tau_h", 0.1), ("tau_h", 1.0)])
def test_moving_a_slider_moves_the_point_as_replay_says(controls, slider, value):
    before_png, n_before = controls.image.value, len(controls.history)
    getattr(controls, slider).value = value  # traitlets fires the observer, as a browser would
    assert len(controls.history) == n_before + 1
    tl, th = controls.tau_lp.value, controls.tau_h.value
    expect = analysis.operating_point(controls.view.chains, tl, th)
    got = controls.history[-1]
    assert (got["tau_lp"], got["tau_h"]) == (tl, th)
    assert got["accuracy"] == expect["accuracy"] and got["avg_tokens"] == expect["avg_tokens"]
    assert got["escalation_rate"] == expect["escalation_rate"]
    assert controls.view.marker_xy() == pytest.approx((expect["avg_tokens"], expect["accuracy"]))
    assert f"<td>{expect['accuracy']:.1%}</td>" in controls.row.value
    assert f"{expect['avg_tokens']:,.0f} tokens per problem" in controls.text.value
    if (expect["avg_tokens"], expect["accuracy"]) != tuple(controls.history[-2][["avg_tokens", "accuracy"]]):
        assert controls.image.value != before_png  # the marker moved in the picture too


def test_update_is_a_plain_callable(controls):
    controls.tau_lp.value, controls.tau_h.value = 0.6, 0.4
    pt = controls.update({"name": "value"})  # what the observer calls; no browser or kernel involved
    assert pt["tau_lp"] == 0.6 and pt["tau_h"] == 0.4
    assert pt["accuracy"] == replay(controls.view.chains, 0.6, 0.4)["correct"].mean()


def test_view_update_without_widgets():
    view = sliders.FrontierView(hand_chains(), grid_size=5)
    pt = view.update(0.81, 0.5)
    assert view.marker_xy() == pytest.approx((pt["avg_tokens"], pt["accuracy"]))
    first = view.png()
    view.update(0.0, np.inf)
    assert view.png() != first
