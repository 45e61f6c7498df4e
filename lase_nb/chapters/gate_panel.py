"""Chapter 02's gate panel: sliders for tau_lp and tau_h over one set of answers.

:func:`gate_sliders` moves the gate over a :func:`lase_nb.confidence.confidence_frame`;
:meth:`GateControls.update` redraws :func:`lase_nb.chapters.calibration.plot_reliability` into the
same figure and refreshes :func:`lase_nb.confidence.gate_split` as a table row (a kernel);
:func:`gate_book_panel` is the gate on exp(LP_min) without a kernel (the HTML book, JupyterLab). The notebook calls
the pure functions once with its parameters, so a papermill run never depends on a widget.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..confidence import gate_split, uncertain_mask
from ..strategies import SPECS
from ..book.widgets import TEXT_CLASS, note_html, png_bytes
from .calibration import RELIABILITY_SIZE, plot_reliability

__all__ = ["gate_row_html", "GateControls", "gate_sliders", "gate_counts", "gate_text", "gate_book_panel"]



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

    fig = Figure(figsize=RELIABILITY_SIZE)
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


# ---------------------------------------------------------------------------------------------
# The gate without a kernel (the HTML book, JupyterLab): one slider for tau_lp, Bokeh
# ---------------------------------------------------------------------------------------------

#: Colours of an answer the gate escalates (LASE's: its chain goes on) and of one it accepts (the
#: leader alone's: its answer stands), as ``plots.MEANINGS`` gives them.
ESCALATED_COLOR, ACCEPTED_COLOR = SPECS["lase"].color, SPECS["single"].color


def gate_counts(frame: pd.DataFrame, tau_lp: float, tau_h: float) -> dict[str, int]:
    """What the panel prints at one gate, from :func:`lase_nb.confidence.gate_split`: answers,
    escalated, errors, errors caught (wrong answers escalated), right answers and right answers escalated."""
    split = gate_split(frame, tau_lp, tau_h)
    n, errors = int(split["answers"]), int(split["errors"])
    escalated = int(round(float(split["escalation_rate"]) * n)) if n else 0
    caught = errors - int(split["confident_errors"])
    return {"answers": n, "escalated": escalated, "errors": errors, "caught": caught, "right": n - errors,
            "right_escalated": escalated - caught}


def _share(k: int, n: int) -> str:
    return f"{k} of {n} ({k / n:.1%})" if n else f"{k} of 0"


def gate_text(counts: dict[str, int]) -> str:
    """The panel's numbers at one gate, as HTML (each number in an element named by ``data-key``)."""
    c = counts
    return (f"<table class='lase'><tr><th>escalated (all answers)</th><th>errors caught</th>"
            f"<th>right answers escalated</th></tr><tr><td data-key='escalated'>{_share(c['escalated'], c['answers'])}</td>"
            f"<td data-key='caught'>{_share(c['caught'], c['errors'])}</td>"
            f"<td data-key='right_escalated'>{_share(c['right_escalated'], c['right'])}</td></tr></table>")


_GATE_JS = """
const k = index(lp, labels.length);
tau.location = lp.value;
const d = src.data, c = new Array(first.length);
for (let a = 0; a < first.length; a++) c[a] = first[a] <= k ? esc_color : ok_color;
src.data = Object.assign({}, d, {color: c});
readout.text = head.replace('{lp}', labels[k]) + texts[k];
"""


def gate_book_panel(frame: pd.DataFrame, tau_lp: float = 0.8, *, tau_h: float = float("inf"), step: float = 0.01,
                    seed: int = 0, title: str | None = None):
    """Chapter 02's gate for a page without a kernel (:mod:`lase_nb.book.panels`): a slider for tau_lp
    over the answers of ``frame`` (:func:`lase_nb.confidence.confidence_frame`), with the entropy
    gate held at ``tau_h`` (default off, so that the slider moves the gate on exp(LP_min) alone),
    drawn at their exp(LP_min), right ones above wrong ones, coloured by what the gate does; the
    share escalated, the errors caught and the right answers escalated are printed, all computed
    here at every slider position (:func:`gate_counts`). Returns a :class:`lase_nb.book.panels.Panel`."""
    from bokeh.document import Document
    from bokeh.events import DocumentReady
    from bokeh.layouts import column
    from bokeh.models import ColumnDataSource, CustomJS, NumeralTickFormatter, Span
    from bokeh.plotting import figure

    from ..book.panels import INDEX_JS, TABLE_STYLE, SliderAxis, embed, first_true, readout_div, slider

    axis = SliderAxis(0.0, 1.0, step)
    held = "entropy gate off" if np.isinf(tau_h) else f"and H_max above tau_h = {tau_h:g}, held"
    p_min = frame["p_min"].to_numpy(float)
    h_max = frame["h_max"].to_numpy(float)
    escalated = uncertain_mask(p_min[None, :], h_max[None, :], axis.values[:, None], tau_h)
    first = first_true(escalated)
    texts = [gate_text(gate_counts(frame, float(v), tau_h)) for v in axis.values]
    answered = frame["answered"].to_numpy(bool) & np.isfinite(p_min)
    rows = np.where(~answered, "no answer", np.where(frame["correct"].to_numpy(bool), "right", "wrong"))
    factors = [r for r in ("no answer", "wrong", "right") if (rows == r).any()]
    level = np.array([factors.index(r) for r in rows], dtype=float)
    y = level + np.random.default_rng(seed).uniform(-0.3, 0.3, len(rows))  # spread the dots of one row apart
    src = ColumnDataSource(dict(x=np.where(answered, p_min, 0.0), y=y, color=[ACCEPTED_COLOR] * len(rows),
                                answer=frame["answer"].astype(str).tolist(), h=h_max), name="answers")
    n = len(frame)
    p = figure(width=900, height=110 + 70 * len(factors), y_range=(-0.5, len(factors) - 0.5), x_range=(-0.02, 1.02),
               title=title or f"{n} answers at their exp(LP_min) (no answer: drawn at 0); orange: escalated, "
                              f"blue: accepted ({held})",
               x_axis_label="exp(LP_min): the lowest answer-token probability", toolbar_location=None,
               tools="hover", tooltips=[("answer", "@answer"), ("exp(LP_min)", "@x{0.000}"), ("H_max", "@h{0.00}")])
    p.scatter("x", "y", source=src, size=8, alpha=0.75, color="color", line_color=None)
    p.yaxis.ticker = list(range(len(factors)))
    p.yaxis.major_label_overrides = {i: f"{f} ({int((rows == f).sum())})" for i, f in enumerate(factors)}
    p.ygrid.visible = False
    tau = Span(location=tau_lp, dimension="height", line_color="black", line_dash="dashed", line_width=2)
    p.add_layout(tau)
    p.xaxis.formatter = NumeralTickFormatter(format="0.0")
    s = slider(axis, tau_lp, "tau_lp (the gate escalates an answer whose exp(LP_min) is below it)", "tau_lp", 520)
    readout = readout_div("Move the slider (this panel needs JavaScript).", 900)
    head = (TABLE_STYLE + f"<div>The gate escalates an answer whose exp(LP_min) is below <b>tau_lp = "
            f"<span data-key='tau_lp'>{{lp}}</span></b> ({held}) or that has no answer. Of these {n} answers:</div>")
    callback = CustomJS(args=dict(lp=s, tau=tau, src=src, first=first, esc_color=ESCALATED_COLOR,
                                  ok_color=ACCEPTED_COLOR, readout=readout, head=head, labels=axis.labels(),
                                  texts=texts), code=INDEX_JS + _GATE_JS)
    s.js_on_change("value", callback)
    doc = Document()
    doc.add_root(column(s, p, readout))
    doc.js_on_event(DocumentReady, callback)
    return embed(doc, 60 + int(p.height) + 110, "Chapter 02: the gate on exp(LP_min)",
                 {"kind": "gate", "axis": axis, "first": first, "texts": texts, "tau_h": tau_h, "n": n})
