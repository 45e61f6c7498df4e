"""Kernel-free panels (lase_nb.book.panels): slider positions, the per-item switch the browser reads,
the standalone page (BokehJS inlined, nothing from the network); chapter 00's gate playground."""

from __future__ import annotations

import html
import math
import re

import numpy as np
import pytest

from lase_nb.chapters import quickstart
from lase_nb.confidence import Confidence, is_uncertain
from lase_nb.book.panels import INDEX_JS, SliderAxis, first_true


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


def test_the_gate_table_is_the_gate_at_every_pair():
    lp, h = SliderAxis(0.0, 1.0, 0.05).values, SliderAxis(0.0, 2.0, 0.1).values
    for conf in (_conf(0.55, 0.2), _conf(0.99, 0.9), Confidence(None, None, None, 0, "exact"),
                 Confidence("7", math.log(0.9), None, 1, "exact")):
        u = quickstart.gate_table(conf, lp, h)
        assert u.shape == (len(lp), len(h))
        assert all(u[i, j] == is_uncertain(conf, tl, th) for i, tl in enumerate(lp) for j, th in enumerate(h))
    conf = _conf(0.55, 0.2)
    assert quickstart.lp_clauses(conf, [0.55, 0.56]) == ["exp(LP_min) = 0.550 is at or above tau_lp = 0.55",
                                                         "exp(LP_min) = 0.550 is below tau_lp = 0.56"]
    assert quickstart.h_clauses(conf, [0.1, 0.2]) == ["H_max = 0.200 nats is above tau_h = 0.10",
                                                      "H_max = 0.200 nats is at or below tau_h = 0.20"]
    none = Confidence(None, None, None, 0, "exact")
    assert quickstart.lp_clauses(none, [0.5]) == ["there is no boxed answer (no exp(LP_min))"]


def test_token_panel_is_a_standalone_page_with_every_position_computed():
    tokens, probs = ["The", " answer", " is", " \\boxed{", "1", "5", "}"], [0.9, 0.5, 0.99, 0.97, 0.7, 0.4, 0.99]
    conf = _conf(0.4, 0.3)
    panel = quickstart.token_panel(tokens, probs, [4, 5], conf, 0.8, 0.5)
    first, axis = panel.data["first"], panel.data["lp"]
    for k, tau in enumerate(axis.values):  # token t is highlighted at position k exactly when its p < tau
        assert ((first <= k) == (np.array(probs) < tau)).all()
    assert panel.html.startswith('<iframe class="lase-panel"') and 'sandbox="allow-scripts allow-downloads"' in panel.html
    page = html.unescape(re.search(r'srcdoc="([^"]*)"', panel.html).group(1))
    assert "Bokeh" in page and len(page) > 500_000  # BokehJS inlined
    assert not re.search(r"<(?:script|link)[^>]+(?:src|href)=[\"']?https?://", page)  # nothing from the network
    assert (panel.data["u"] == quickstart.gate_table(conf, axis.values, panel.data["h"].values)).all()
    assert "LASE would call its first supporter" in page and "LASE would stop here and output 15" in page
    with pytest.raises(ValueError, match="one probability per token"):
        quickstart.token_panel(tokens, probs[:-1], [4, 5], conf)


def test_the_budget_counts_a_panel_as_a_figure():
    import nbformat

    from lase_nb.book.budget import chapter_budget, is_panel

    panel = quickstart.token_panel(["1", "5"], [0.9, 0.4], [0, 1], _conf(0.4, 0.3))
    out = nbformat.v4.new_output("display_data", {"text/html": panel.html, "text/plain": "panel"})
    cell = nbformat.v4.new_code_cell("quickstart.token_panel(...)", outputs=[out])
    nb = nbformat.v4.new_notebook(cells=[cell])
    assert is_panel(out) and chapter_budget(nb).figures == 1 and chapter_budget(nb).tables == 0


def test_chapter_00_grades_the_reply_and_accounts_for_every_token():
    from lase_nb.chapters import quickstart

    assert quickstart.grade_line("6", "15", "number") == "right answer: 15, so the reply is wrong"
    assert quickstart.grade_line("15.0", "15", "number").endswith("the reply is right")
    assert "boxed no answer" in quickstart.grade_line(None, "15", "number")
    assert "not given" in quickstart.grade_line("6", None, "number")
    line = quickstart.token_count_line(219, 25, 24)
    assert line.startswith("219 prompt tokens, 25 completion tokens (24 with text") and "end-of-sequence" in line
    assert quickstart.token_count_line(219, 24, 24) == "219 prompt tokens, 24 completion tokens"
