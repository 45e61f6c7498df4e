"""Chapter 02's gate panel (lase_nb.chapters.gate_panel): sliders that redraw in place."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from lase_nb.chapters import gate_panel  # noqa: E402
from lase_nb.confidence import gate_split  # noqa: E402
from tests.test_sliders import _answers  # noqa: E402


def test_gate_panel_updates_its_widgets_in_place():
    import matplotlib.pyplot as plt

    f = _answers()
    figs_before = plt.get_fignums()
    ctl = gate_panel.gate_sliders(f, 0.8, 0.5)
    children, fig, png = ctl.box.children, ctl.fig, ctl.image.value
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(fig.axes) == 4
    assert ctl.history[-1]["escalation_rate"] == gate_split(f, 0.8, 0.5)["escalation_rate"]
    ctl.tau_lp.value = 0.9  # 0.85 now escalates: one answer changes side
    split = gate_split(f, 0.9, 0.5)
    assert ctl.box.children == children and ctl.fig is fig and len(fig.axes) == 4  # nothing re-created
    assert ctl.image.value != png  # the threshold line moved in the picture
    assert f"<td>{split['escalation_rate']:.1%}</td>" in ctl.row.value
    assert f"<td>{int(split['confident_errors'])}</td>" in ctl.row.value
    assert ctl.notes[-1] == "1 answer(s) changed side of the gate."
    ctl.tau_lp.value = 0.92  # no answer's p_min lies in [0.9, 0.92)
    assert ctl.notes[-1].startswith("The gate's verdict is unchanged") and "unchanged" in ctl.row.value
    assert plt.get_fignums() == figs_before  # no pyplot figure: the inline backend shows nothing twice


def test_gate_counts_come_from_gate_split():
    f = _answers()  # 6 answers, 2 right; one unanswered (wrong, always escalated)
    for tau in (0.0, 0.5, 0.8, 0.9, 1.0):
        c = gate_panel.gate_counts(f, tau, 0.5)
        split = gate_split(f, tau, 0.5)
        assert c["escalated"] == round(split["escalation_rate"] * 6) and c["errors"] == split["errors"] == 4
        assert c["caught"] == split["errors"] - split["confident_errors"] and c["right"] == 2
        assert c["right_escalated"] + c["caught"] == c["escalated"]
    # by hand: 0.6, 0.3 and 0.85 are below 0.9, and the unanswered one: all four wrong; 0.99 and 0.97 pass
    assert gate_panel.gate_counts(f, 0.9, 0.5) == {"answers": 6, "escalated": 4, "errors": 4, "caught": 4, "right": 2,
                                                     "right_escalated": 0}
    assert gate_panel.gate_counts(f, 0.98, 0.5)["right_escalated"] == 1  # 0.97 now escalated too


def test_gate_book_panel_embeds_every_position():
    from lase_nb.confidence import uncertain_mask

    f = _answers()
    for tau_h in (0.5, float("inf")):  # the entropy gate held at 0.5, or off (the default: exp(LP_min) alone)
        panel = gate_panel.gate_book_panel(f, 0.8, tau_h=tau_h)
        axis, first = panel.data["axis"], panel.data["first"]
        for k, tau in enumerate(axis.values):
            u = uncertain_mask(f["p_min"].to_numpy(float), f["h_max"].to_numpy(float), tau, tau_h)
            assert ((first <= k) == u).all()
            assert panel.data["texts"][k] == gate_panel.gate_text(gate_panel.gate_counts(f, float(tau), tau_h))
        assert "4 of 6 (66.7%)" in panel.data["texts"][axis.index(0.9)] and "4 of 6 (66.7%)" in panel.html
    # with the entropy gate off, 0.3 (H 1.4) is escalated only once tau_lp passes it
    assert gate_panel.gate_counts(f, 0.2, float("inf"))["escalated"] == 1  # the unanswered one
    assert gate_panel.gate_counts(f, 0.2, 0.5)["escalated"] == 3  # and 0.6 (H 0.7), 0.3 (H 1.4) by entropy
