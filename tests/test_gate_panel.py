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
