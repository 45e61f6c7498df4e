"""Chapter 02's gate panel: sliders for tau_lp and tau_h over one set of answers.

:func:`gate_sliders` moves the gate over a :func:`lase_nb.confidence.confidence_frame`;
:meth:`GateControls.update` redraws :func:`lase_nb.chapters.calibration.plot_reliability` into the
same figure and refreshes :func:`lase_nb.confidence.gate_split` as a table row. The notebook calls
the pure functions once with its parameters, so a papermill run never depends on a widget.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..confidence import gate_split, uncertain_mask
from ..widgets import TEXT_CLASS, note_html, png_bytes
from .calibration import plot_reliability

__all__ = ["gate_row_html", "GateControls", "gate_sliders"]



def gate_row_html(split: pd.Series) -> str:
    """:func:`lase_nb.confidence.gate_split` as a one-row HTML table (rates in %, counts as integers)."""
    def fmt(k: str, v: Any) -> str:
        if pd.isna(v):
            return "n/a"
        return f"{v:.1%}" if k in ("escalation_rate", "accuracy", "accuracy_if_U0", "accuracy_if_U1",
                                   "confident_share_of_errors") else f"{int(v)}"
    head = "".join(f"<th>{html.escape(str(k))}</th>" for k in split.index)
    body = "".join(f"<td>{fmt(str(k), v)}</td>" for k, v in split.items())
    return f"<table class='lase-gate'><tr>{head}</tr><tr>{body}</tr></table>"


@dataclass
class GateControls:
    """Chapter 02's panel: sliders for the gate, the reliability figure, and the gate's split.

    The figure is one matplotlib Figure (not registered with pyplot, so the inline backend never
    shows it a second time) redrawn in place and sent to ``image``; ``row`` holds the split.
    """

    frame: pd.DataFrame
    fig: Any  # matplotlib.figure.Figure, redrawn on every move
    tau_lp: Any  # ipywidgets.FloatSlider
    tau_h: Any  # ipywidgets.FloatSlider
    image: Any  # ipywidgets.Image: the reliability figure
    row: Any  # ipywidgets.HTML: gate_split as a table row, and whether the move changed it
    box: Any  # ipywidgets.VBox holding everything
    title: str | None = None
    dpi: float = 60
    history: list[pd.Series] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    _escalated: np.ndarray | None = None

    def update(self, change: dict | None = None) -> pd.Series:
        """The slider callback: split the answers at the sliders' values, redraw the figure in place."""
        tl, th = float(self.tau_lp.value), float(self.tau_h.value)
        split = gate_split(self.frame, tl, th).rename(None)
        u = uncertain_mask(self.frame["p_min"].to_numpy(float), self.frame["h_max"].to_numpy(float), tl, th)
        note = ""
        if self._escalated is not None:
            moved = int((u != self._escalated).sum())
            note = ("The gate's verdict is unchanged: no answer's confidence lies between the old and "
                    "the new thresholds." if moved == 0 else
                    f"{moved} answer(s) changed side of the gate.")
        self._escalated = u
        self.row.value = note_html(note) + gate_row_html(split)
        plot_reliability(self.frame, tl, th, title=self.title, fig=self.fig)
        self.image.value = png_bytes(self.fig, self.dpi)
        self.history.append(pd.Series({"tau_lp": tl, "tau_h": th, **split.to_dict()}, dtype=object))
        self.notes.append(note)
        return split

    def _ipython_display_(self) -> None:  # pragma: no cover - needs a front end
        from IPython.display import display

        display(self.box)


def gate_sliders(frame: pd.DataFrame, tau_lp: float = 0.8, tau_h: float = 0.5, *, title: str | None = None,
                 lp_range: tuple[float, float, float] = (0.5, 0.99, 0.01),
                 h_range: tuple[float, float, float] = (0.05, 1.5, 0.05), dpi: float = 60) -> GateControls:
    """Sliders for tau_lp and tau_h over one set of answers (a :func:`lase_nb.confidence.confidence_frame`).

    Ranges are (min, max, step). ``continuous_update`` is off: the reliability figure is a full
    redraw (a few tenths of a second), so it follows a released slider, not every pixel of a drag.
    Works without a browser: set ``controls.tau_lp.value`` and the callback runs.
    """
    import ipywidgets as w
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(16, 6.2))
    FigureCanvasAgg(fig)
    style = {"description_width": "initial"}
    layout = w.Layout(width="420px")
    s_lp = w.FloatSlider(value=tau_lp, min=lp_range[0], max=max(lp_range[1], tau_lp), step=lp_range[2],
                         readout_format=".2f", continuous_update=False, description="tau_lp", style=style,
                         layout=layout)
    s_h = w.FloatSlider(value=tau_h, min=h_range[0], max=max(h_range[1], tau_h), step=h_range[2],
                        readout_format=".2f", continuous_update=False, description="tau_h (nats)", style=style,
                        layout=layout)
    image = w.Image(format="png", layout=w.Layout(width="100%", max_width="1100px"))
    row = w.HTML()
    row.add_class(TEXT_CLASS)
    box = w.VBox([w.HBox([s_lp, s_h]), image, row])  # the figure first: the note below never moves it
    controls = GateControls(frame, fig, s_lp, s_h, image, row, box, title=title, dpi=dpi)
    s_lp.observe(controls.update, names="value")
    s_h.observe(controls.update, names="value")
    controls.update()
    return controls
