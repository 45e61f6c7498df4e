"""Chapter 05 (notebooks/05_pareto): threshold sliders for a live notebook, wrapping pure replay.

The pieces, from the inside out:

- :func:`lase_nb.analysis.operating_point`: what LASE outputs and spends at one (tau_lp, tau_h),
  by replay of a full-chain recording (no model call). The notebook calls it once with its
  parameters, so a papermill run never depends on a widget.
- :func:`point_sentence` / :func:`point_row_html`: an operating point in words and as a table row.
- :class:`FrontierView`: the frontier figure with a movable marker. :meth:`FrontierView.update`
  moves the marker to an operating point; :meth:`FrontierView.png` renders it,
  redrawing only the marker over a cached background.
- :func:`threshold_sliders`: two FloatSliders, an Image (the figure), and HTML for the table row
  and a sentence. Moving a slider calls :meth:`ThresholdControls.update`, a plain method that
  tests drive without a browser or a kernel.
"""

from __future__ import annotations

import html
import io
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .analysis import Chains, operating_point, sweep
from .pareto import draw_frontier, oracle_frontier, policy_points, threshold_axes
from .plots import CHOSEN_COLOR

__all__ = ["point_sentence", "point_row_html", "FrontierView", "ThresholdControls",
           "threshold_sliders"]


def point_sentence(point: pd.Series, solo_tokens: float | None = None) -> str:
    """One plain sentence describing an operating point (numbers from ``point`` only)."""
    stops = [int(point[k]) for k in point.index if str(k).startswith("stop_")]
    rel = f" ({point['avg_tokens'] / solo_tokens:.1f}x the leader alone)" if solo_tokens else ""
    return (f"At tau_lp = {point['tau_lp']:.3g} and tau_h = {point['tau_h']:.3g}: accuracy "
            f"{point['accuracy']:.1%} ({point['n_correct']} of {point['n']}), {point['avg_tokens']:,.0f} tokens per "
            f"problem{rel}; {point['escalation_rate']:.0%} escalated; problems stopping at stages "
            f"0..{len(stops) - 1}: {' / '.join(map(str, stops))}.")


def point_row_html(point: pd.Series) -> str:
    """The operating point as a one-row HTML table (what the slider panel shows)."""
    cols = {"tau_lp": "{:.3g}", "tau_h": "{:.3g}", "accuracy": "{:.1%}", "avg_tokens": "{:,.0f}",
            "escalation_rate": "{:.1%}"}
    stops = [k for k in point.index if str(k).startswith("stop_")]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in [*cols, *stops])
    body = "".join(f"<td>{fmt.format(point[c])}</td>" for c, fmt in cols.items())
    body += "".join(f"<td>{int(point[k])}</td>" for k in stops)
    return f"<table class='lase-point'><tr>{head}</tr><tr>{body}</tr></table>"


class FrontierView:
    """The frontier of one recording with a marker for the current operating point.

    The static part (grid, front, oracle, fixed policies, baselines) is drawn once; ``update``
    only moves the marker, and ``png`` paints it over the cached background (blitting) and
    encodes the result, so a slider step costs tens of milliseconds, not a full redraw.
    """

    def __init__(self, chains: Chains, grid: pd.DataFrame | None = None, baselines: pd.DataFrame | None = None,
                 grid_size: int = 41, figsize: tuple[float, float] = (9.5, 6), dpi: int = 90):
        from matplotlib.figure import Figure
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        self.chains = chains
        if grid is None:
            grid = sweep(chains, *threshold_axes(chains, grid_size))
        self.grid = grid
        self.fig = Figure(figsize=figsize, dpi=dpi)  # not registered with pyplot: never shown twice
        FigureCanvasAgg(self.fig)
        self.ax = self.fig.add_subplot()
        draw_frontier(self.ax, grid, policy_points(chains), oracle_frontier(chains), baselines)
        self.ax.set_title("Move the sliders: the star is LASE at those thresholds")
        self.ax.legend(loc="best", fontsize="x-small")
        (self.marker,) = self.ax.plot([], [], "*", ms=24, color=CHOSEN_COLOR, mec="black", mew=1.3, zorder=10,
                                      animated=True, label="LASE at the sliders' thresholds")
        self._background = None
        self.point: pd.Series | None = None

    def update(self, tau_lp: float, tau_h: float) -> pd.Series:
        """Replay at (tau_lp, tau_h), move the marker there, and return the operating point."""
        pt = operating_point(self.chains, tau_lp, tau_h)
        self.marker.set_data([pt["avg_tokens"]], [pt["accuracy"]])
        self.point = pt
        return pt

    def marker_xy(self) -> tuple[float, float]:
        """Where the marker is drawn (data coordinates)."""
        x, y = self.marker.get_data()
        return float(x[0]), float(y[0])

    def png(self) -> bytes:
        """The figure as PNG bytes: cached background plus the current marker and label."""
        from PIL import Image

        canvas = self.fig.canvas
        if self._background is None:
            canvas.draw()
            self._background = canvas.copy_from_bbox(self.fig.bbox)
        else:
            canvas.restore_region(self._background)
        self.ax.draw_artist(self.marker)  # text is left to the HTML row: glyphs cost ~10x a marker
        buf = io.BytesIO()
        Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0, 1) \
            .convert("RGB").save(buf, format="png", compress_level=1)
        return buf.getvalue()


@dataclass
class ThresholdControls:
    """The slider panel's widgets and its callback. ``box`` is what a notebook displays."""

    view: FrontierView
    tau_lp: Any  # ipywidgets.FloatSlider
    tau_h: Any  # ipywidgets.FloatSlider
    image: Any  # ipywidgets.Image: the frontier with the marker
    row: Any  # ipywidgets.HTML: the operating point as a table row
    text: Any  # ipywidgets.HTML: the same in a sentence
    box: Any  # ipywidgets.VBox holding everything
    history: list[pd.Series] = field(default_factory=list)

    def update(self, change: dict | None = None) -> pd.Series:
        """The slider callback: replay at the sliders' values and refresh figure, row and text."""
        pt = self.view.update(self.tau_lp.value, self.tau_h.value)
        self.image.value = self.view.png()
        self.row.value = point_row_html(pt)
        solo = float(self.view.chains.total_tokens[:, 0].mean())
        self.text.value = f"<p>{html.escape(point_sentence(pt, solo))}</p>"
        self.history.append(pt)
        return pt

    def _ipython_display_(self) -> None:  # pragma: no cover - needs a front end
        from IPython.display import display

        display(self.box)


def threshold_sliders(chains: Chains, tau_lp: float = 0.8, tau_h: float = 0.5, *, grid: pd.DataFrame | None = None,
                      baselines: pd.DataFrame | None = None, grid_size: int = 41, tau_h_max: float | None = None,
                      step: float = 0.01) -> ThresholdControls:
    """Sliders for tau_lp and tau_h that move LASE's operating point on the frontier, by replay.

    Works without a browser: set ``controls.tau_lp.value`` and the callback runs, updating
    ``controls.image``, ``controls.row`` and ``controls.text``.
    """
    import ipywidgets as w

    view = FrontierView(chains, grid=grid, baselines=baselines, grid_size=grid_size)
    top = tau_h_max if tau_h_max is not None else float(threshold_axes(chains, 2)[1][-1])
    top = max(top, tau_h)
    style = {"description_width": "initial"}
    layout = w.Layout(width="520px")
    s_lp = w.FloatSlider(value=tau_lp, min=0.0, max=1.0, step=step, readout_format=".2f", continuous_update=True,
                         description="tau_lp (min answer-token probability)", style=style, layout=layout)
    s_h = w.FloatSlider(value=tau_h, min=0.0, max=top, step=step, readout_format=".2f", continuous_update=True,
                        description="tau_h (max answer-token entropy, nats)", style=style, layout=layout)
    image = w.Image(format="png")
    row, text = w.HTML(), w.HTML()
    box = w.VBox([w.HBox([s_lp, s_h]), image, row, text])
    controls = ThresholdControls(view, s_lp, s_h, image, row, text, box)
    s_lp.observe(controls.update, names="value")
    s_h.observe(controls.update, names="value")
    controls.update()
    return controls
