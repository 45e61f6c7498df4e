"""Kernel-free panels (lase_nb.panels): slider positions, the per-item switch the browser reads,
the standalone page (BokehJS inlined, nothing from the network); chapter 00's gate playground."""

from __future__ import annotations

import html
import math
import re

import numpy as np
import pytest

from lase_nb.chapters import quickstart
from lase_nb.confidence import Confidence, is_uncertain
from lase_nb.panels import INDEX_JS, SliderAxis, first_true


def test_slider_positions_and_the_index_the_browser_computes():
    a = SliderAxis(0.0, 1.0, 0.01)
    assert len(a) == 101 and a.values[0] == 0.0 and a.values[80] == 0.8 and a.values[-1] == 1.0
    assert [a.index(v) for v in (0.0, 0.8, 0.8049, 0.805, 1.0, -3.0, 7.0)] == [0, 80, 80, 81, 100, 0, 100]
    assert a.labels()[80] == "0.80"
    assert "Math.round((s.value - s.start) / s.step)" in INDEX_JS  # Math.round(x) = floor(x + 0.5), as index()
    h = SliderAxis(0.0, 3.3, 0.01)
    assert len(h) == 331 and h.values[-1] == 3.3 and h.values[50] == 0.5
    with pytest.raises(ValueError, match="start < end"):
        SliderAxis(1.0, 1.0)


def test_first_true_is_where_each_item_switches():
    m = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0]], dtype=bool)
    assert first_true(m).tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match="not monotone"):
        first_true(np.array([[1], [0]], dtype=bool))


def _conf(p: float, h: float) -> Confidence:
    return Confidence("15", math.log(p), h, 2, "exact")


@pytest.mark.parametrize("tau", [0.3, 0.55, 0.56, 0.9])
def test_gate_verdict_follows_the_gate(tau):
    conf = _conf(0.55, 0.2)
    text = quickstart.gate_verdict(conf, tau, 0.5)
    assert text.startswith("Unsure (U = 1)" if is_uncertain(conf, tau, 0.5) else "Sure (U = 0)")
    assert "0.550" in text and f"{tau:.2f}" in text
    assert quickstart.gate_verdict(_conf(0.99, 0.9), 0.5, 0.5).startswith("Unsure") and "H_max = 0.900" in \
        quickstart.gate_verdict(_conf(0.99, 0.9), 0.5, 0.5)
    assert quickstart.gate_verdict(Confidence(None, None, None, 0, "exact"), tau, 0.5).startswith("No boxed answer")


def test_token_panel_is_a_standalone_page_with_every_position_computed():
    tokens, probs = ["The", " answer", " is", " \\boxed{", "1", "5", "}"], [0.9, 0.5, 0.99, 0.97, 0.7, 0.4, 0.99]
    conf = _conf(0.4, 0.3)
    panel = quickstart.token_panel(tokens, probs, [4, 5], conf, 0.8, 0.5)
    first, axis = panel.data["first"], panel.data["axis"]
    for k, tau in enumerate(axis.values):  # token t is highlighted at position k exactly when its p < tau
        assert ((first <= k) == (np.array(probs) < tau)).all()
    assert panel.html.startswith('<iframe class="lase-panel"') and 'sandbox="allow-scripts"' in panel.html
    page = html.unescape(re.search(r'srcdoc="([^"]*)"', panel.html).group(1))
    assert "Bokeh" in page and len(page) > 500_000  # BokehJS inlined
    assert not re.search(r"<(?:script|link)[^>]+(?:src|href)=[\"']?https?://", page)  # nothing from the network
    for verdict in (quickstart.gate_verdict(conf, 0.8, 0.5), quickstart.gate_verdict(conf, 0.3, 0.5)):
        assert html.escape(verdict) in page or verdict in page
    with pytest.raises(ValueError, match="one probability per token"):
        quickstart.token_panel(tokens, probs[:-1], [4, 5], conf)
