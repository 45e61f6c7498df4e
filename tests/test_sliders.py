"""The threshold sliders, driven without a browser: moving a slider moves the point exactly as replay says."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from lase_nb.chapters import sliders  # noqa: E402
from lase_nb.replay import operating_point, replay, stop_stages  # noqa: E402
from tests.synthetic import synthetic_chains  # noqa: E402
from tests.test_pareto import hand_chains  # noqa: E402


def test_operating_point_by_hand():
    c = hand_chains()
    pt = operating_point(c, 0.8, 0.5)
    assert pt["accuracy"] == pytest.approx(1.0) and pt["n_correct"] == 3 and pt["n"] == 3
    assert pt["avg_tokens"] == pytest.approx((110 + 890 + 130) / 3)
    assert pt["avg_completion_tokens"] == pytest.approx((10 + 90 + 10) / 3)
    assert pt["escalation_rate"] == pytest.approx(1 / 3)
    assert [pt[f"stop_{s}"] for s in range(3)] == [2, 0, 1]
    pt = operating_point(c, 0.0, np.inf)  # nothing is uncertain except the missing answer
    assert [pt[f"stop_{s}"] for s in range(3)] == [3, 0, 0]


@pytest.mark.parametrize("tau_lp,tau_h", [(0.5, 0.5), (0.9, 0.2), (1.0, 0.0), (0.33, 1.7)])
def test_operating_point_agrees_with_replay(tau_lp, tau_h):
    c = synthetic_chains(n=200, seed=1)
    pt = operating_point(c, tau_lp, tau_h)
    r = replay(c, tau_lp, tau_h)
    assert pt["accuracy"] == r["correct"].mean()
    assert pt["avg_tokens"] == pytest.approx(r["total_tokens"].mean())
    assert pt["escalation_rate"] == (r["stop_stage"] > 0).mean()
    counts = [pt[f"stop_{s}"] for s in range(c.n_stages)]
    assert counts == [int((r["stop_stage"] == s).sum()) for s in range(c.n_stages)] and sum(counts) == 200


def test_point_sentence_and_row_use_the_point():
    pt = operating_point(hand_chains(), 0.81, 0.5)
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


def test_model_buttons_switch_the_recording_and_keep_the_thresholds():
    a, b = synthetic_chains(n=150, seed=2), synthetic_chains(n=60, seed=5)
    ctl = sliders.threshold_sliders({"base": a, "organism": b}, tau_lp=0.8, tau_h=0.5, grid_size=9)
    assert ctl.model.options == ("base", "organism") and ctl.model.value == "base" and ctl.box.children[0] is ctl.model
    first = ctl.image.value
    ctl.model.value = "organism"  # the buttons' observer switches the view, as a click would
    pt = ctl.history[-1]
    assert ctl.view is ctl.views["organism"] and ctl.view.chains is b
    assert pt.equals(operating_point(b, 0.8, 0.5)) and ctl.notes[-1] == ""
    assert ctl.image.value[:8] == b"\x89PNG\r\n\x1a\n" and ctl.image.value != first
    ctl.tau_lp.value = 0.3
    assert ctl.history[-1].equals(operating_point(b, 0.3, 0.5))
    ctl.model.value = "base"
    assert ctl.history[-1].equals(operating_point(a, 0.3, 0.5))
    assert sliders.threshold_sliders(a, grid_size=5).model is None  # one recording: no buttons


@pytest.mark.parametrize("slider,value", [("tau_lp", 0.95), ("tau_lp", 0.3), ("tau_h", 0.1), ("tau_h", 1.0)])
def test_moving_a_slider_moves_the_point_as_replay_says(controls, slider, value):
    before_png, n_before = controls.image.value, len(controls.history)
    getattr(controls, slider).value = value  # traitlets fires the observer, as a browser would
    assert len(controls.history) == n_before + 1
    tl, th = controls.tau_lp.value, controls.tau_h.value
    expect = operating_point(controls.view.chains, tl, th)
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


# ---- a move that changes nothing says so ------------------------------------------------------

def test_change_note_by_hand():
    c = hand_chains()  # stage-0 p_min 0.95 / 0.6 / 0.8: nothing lies in (0.81, 0.85]; 0.95 lies below 0.96
    a, b, d = (operating_point(c, t, 0.5) for t in (0.81, 0.85, 0.96))
    sa, sb, sd = (stop_stages(c, t, 0.5) for t in (0.81, 0.85, 0.96))
    assert sliders.change_note(None, a, None, sa) == ""
    same = sliders.change_note(a, b, sa, sb)
    assert same.startswith("Operating point unchanged") and "tau_lp = 0.81" in same
    moved = sliders.change_note(b, d, sb, sd)
    assert moved.startswith("Operating point moved") and "1 of 3 problems" in moved and "unchanged" not in moved
    assert f"{b['avg_tokens']:,.0f} -> {d['avg_tokens']:,.0f}" in moved


def test_controls_report_an_unchanged_point_visibly():
    ctl = sliders.threshold_sliders(hand_chains(), tau_lp=0.81, tau_h=0.5, grid_size=5)
    png = ctl.image.value
    assert ctl.notes == [""] and "Operating point" not in ctl.text.value
    ctl.tau_lp.value = 0.85  # crosses no recorded confidence
    assert ctl.notes[-1].startswith("Operating point unchanged")
    assert "Operating point unchanged" in ctl.text.value and "tau_lp = 0.85" in ctl.text.value
    assert ctl.image.value == png  # same point: the figure is not re-encoded
    ctl.tau_lp.value = 0.96  # p0's leader (p_min 0.95) is now escalated
    assert ctl.notes[-1].startswith("Operating point moved") and "unchanged" not in ctl.text.value
    assert ctl.image.value != png


def test_unchanged_exactly_when_no_stop_stage_changes():
    c = synthetic_chains(n=120, seed=5)
    ctl = sliders.threshold_sliders(c, tau_lp=0.5, tau_h=0.5, grid_size=5)
    rng = np.random.default_rng(0)
    seen = set()
    for step in range(40):  # one slider per move, as a hand on a slider does
        slider, values = (ctl.tau_lp, np.linspace(0.4, 0.6, 21)) if step % 2 else (ctl.tau_h, [0.45, 0.5, 0.55])
        value = float(rng.choice(values))
        if value == slider.value:
            continue  # setting the value already there fires no callback
        before = stop_stages(c, ctl.tau_lp.value, ctl.tau_h.value)
        n = len(ctl.notes)
        slider.value = value
        after = stop_stages(c, ctl.tau_lp.value, ctl.tau_h.value)
        unchanged = bool(np.array_equal(before, after))
        assert len(ctl.notes) == n + 1
        assert ctl.notes[-1].startswith("Operating point unchanged") == unchanged
        assert ctl.notes[-1].startswith("Operating point moved") == (not unchanged)
        seen.add(unchanged)
    assert seen == {True, False}  # both cases were exercised


# ---- chapter 02: the gate panel redraws in place ---------------------------------------------

def _answers():
    from tests.test_calibration import _frame

    return _frame([0.99, 0.6, 0.3, 0.95, 0.85, 0.97], [0.1, 0.7, 1.4, 0.2, 0.3, 0.05],
                  [True, False, False, True, False, True], answered=[True, True, True, False, True, True])


def test_reliability_redraws_into_a_given_figure():
    from matplotlib.figure import Figure

    from lase_nb.chapters import calibration

    fig = Figure(figsize=(8, 3))
    for tau in (0.8, 0.9):
        assert calibration.plot_reliability(_answers(), tau, 0.5, fig=fig) is fig
        assert len(fig.axes) == 4  # cleared first, not stacked


# ---- the sliders as small multiples, for pages without widgets ---------------------------------

def _star(ax):
    return next(line for line in ax.get_lines() if line.get_label().startswith("LASE at"))


def test_small_multiples_show_the_slider_panel_at_each_pair(tmp_path):
    import matplotlib.pyplot as plt

    c = synthetic_chains(n=150, seed=2)
    pairs = [(0.95, 0.1), (0.8, 0.5), (0.5, 1.0), (0.2, 2.0)]
    fig = sliders.small_multiples(c, pairs, grid_size=9, ncols=3)
    panels = [ax for ax in fig.axes[:6] if ax.get_visible()]  # 2 x 3 panels, then the colour bar
    assert len(panels) == len(pairs) and not fig.axes[len(pairs)].get_visible()  # the last two are empty
    view = sliders.FrontierView(c, grid_size=9)
    for ax, (tau_lp, tau_h) in zip(panels, pairs):
        pt = operating_point(c, tau_lp, tau_h)
        assert ax.get_title() == sliders.point_caption(pt)
        assert f"{pt['accuracy']:.1%}" in ax.get_title() and f"{pt['avg_tokens']:,.0f} tokens" in ax.get_title()
        x, y = _star(ax).get_data()
        view.update(tau_lp, tau_h)  # the slider panel at the same thresholds: the same star, the same frontier
        assert (float(x[0]), float(y[0])) == pytest.approx(view.marker_xy())
        assert len(ax.collections[0].get_offsets()) == len(view.grid) == 81
    fig.savefig(tmp_path / "small_multiples.png", dpi=40)
    assert (tmp_path / "small_multiples.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    plt.close(fig)


def test_point_caption_uses_the_row_numbers():
    pt = operating_point(hand_chains(), 0.81, 0.5)
    caption = sliders.point_caption(pt)
    assert "tau_lp = 0.81, tau_h = 0.5" in caption and "66.7% (2 of 3)" in caption
    assert "1 / 1 / 1" in caption and f"{pt['escalation_rate']:.1%} escalated" in caption
    assert all(f"<td>{v}</td>" in sliders.point_row_html(pt) for v in ("66.7%", f"{pt['avg_tokens']:,.0f}"))


def test_small_multiples_need_a_pair():
    with pytest.raises(ValueError, match="at least one"):
        sliders.small_multiples(hand_chains(), [], grid_size=5)


def test_point_lookup_equals_replay_at_every_slider_position():
    from lase_nb.book.panels import SliderAxis

    c = synthetic_chains(n=60, seed=3)
    lp, h = SliderAxis(0.0, 1.0, 0.05), SliderAxis(0.0, 2.0, 0.1)
    look = sliders.point_lookup(c, lp, h)
    assert look.index.shape == (len(lp), len(h)) and len(look.points) <= look.index.size
    for i, tl in enumerate(lp.values):
        for j, th in enumerate(h.values):
            got, want = look.points.iloc[look.index[i, j]], operating_point(c, tl, th)
            for k in ("accuracy", "avg_tokens", "escalation_rate", "n_correct", "stop_0", "stop_1"):
                assert got[k] == want[k], (tl, th, k)


def test_frontier_panel_prints_replayed_rows():
    import html as html_lib
    import re

    from lase_nb.chapters import pareto
    from lase_nb.replay import sweep

    c = synthetic_chains(n=40, seed=4)
    grid = sweep(c, *pareto.threshold_axes(c, 9))
    panel = sliders.frontier_panel(c, 0.8, 0.5, grid=grid)
    look, lp, h = panel.data["lookup"], panel.data["lp"], panel.data["h"]
    pt = look.points.iloc[look.index[lp.index(0.8), h.index(0.5)]]
    assert pt["accuracy"] == operating_point(c, 0.8, 0.5)["accuracy"]
    page = html_lib.unescape(re.search(r'srcdoc="([^"]*)"', panel.html).group(1))
    row = sliders.point_rows(look.points.iloc[[look.index[lp.index(0.8), h.index(0.5)]]], "LASE, all 40 problems", "lase")[0]
    assert f"{pt['accuracy']:.1%}" in row and f"{pt['avg_tokens']:,.0f}" in row
    assert "Bokeh" in page and not re.search(r"<(?:script|link)[^>]+(?:src|href)=[\"']?https?://", page)
