"""Threshold sliders for a live notebook, wrapping pure functions (chapter 05; chapter 02's gate
panel is :mod:`lase_nb.chapters.gate_panel`).

Every panel is a set of persistent widgets (sliders, an Image for the figure, HTML for the
numbers) whose values a callback replaces in place: nothing is cleared and re-displayed, so the
figure never vanishes and the page does not jump while a slider moves.

Chapter 05 (notebooks/05_pareto), from the inside out:

- :func:`lase_nb.replay.operating_point`: what LASE outputs and spends at one (tau_lp, tau_h),
  by replay of a full-chain recording (no model call). The notebook calls it once with its
  parameters, so a papermill run never depends on a widget.
- :func:`point_sentence` / :func:`point_row_html`: an operating point in words and as a table row;
  :func:`change_note`: whether a move changed it (a move between two recorded confidences changes
  no problem's stop stage, and the panel says so instead of appearing frozen).
- :func:`draw_view` / :func:`place_star`: what the panel draws (the recording's frontier and a star)
  and where the star goes at one (tau_lp, tau_h).
- :class:`FrontierView`: the frontier figure with a movable marker. :meth:`FrontierView.update`
  moves the marker to an operating point; :meth:`FrontierView.png` renders it,
  redrawing only the marker over a cached background.
- :func:`small_multiples`: the same panel frozen at several threshold pairs, one small panel each
  (for pages where widgets do not run, e.g. the HTML book).
- :func:`frontier_panel`: the same panel without a kernel (the HTML book, JupyterLab): Bokeh
  sliders over :func:`point_lookup`, every slider position replayed once (:mod:`lase_nb.book.panels`).
- :func:`threshold_sliders`: two FloatSliders, an Image (the figure), and HTML for the table row
  and a sentence. Moving a slider calls :meth:`ThresholdControls.update`, a plain method that
  tests drive without a browser or a kernel. Given several recordings (label -> chains), a row of
  buttons switches the model (:meth:`ThresholdControls.switch`), keeping the thresholds.
"""

from __future__ import annotations

import html
import io
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ..replay import Chains, fixed_policies, front_of, operating_point, oracle_frontier, stop_stages, sweep
from ..plots import CHOSEN_COLOR, MAX_WIDTH_IN, style
from ..book.widgets import TEXT_CLASS, note_html
from .pareto import _frontier_points, draw_frontier, label_points, threshold_axes

__all__ = ["point_sentence", "point_row_html", "point_caption", "change_note", "draw_view", "place_star",
           "FrontierView", "small_multiples", "STRICT_TO_LAX", "ThresholdControls", "threshold_sliders",
           "PointLookup", "point_lookup", "point_rows", "baseline_rows", "frontier_panel"]

#: The numbers the panel shows for an operating point, and their formats.
POINT_FORMATS = {"tau_lp": "{:.3g}", "tau_h": "{:.3g}", "accuracy": "{:.1%}", "avg_tokens": "{:,.0f}",
                 "escalation_rate": "{:.1%}"}

#: The star marking LASE's operating point.
STAR = dict(marker="*", ls="none", ms=24, color=CHOSEN_COLOR, mec="black", mew=1.3, zorder=10)

#: Threshold pairs from strict (almost every problem escalated) to lax (almost none), with the
#: chapter's default (0.8, 0.5) third: :func:`small_multiples`' panels.
STRICT_TO_LAX = ((0.95, 0.1), (0.9, 0.25), (0.8, 0.5), (0.65, 0.75), (0.5, 1.0), (0.2, 2.0))


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
    stops = [k for k in point.index if str(k).startswith("stop_")]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in [*POINT_FORMATS, *stops])
    body = "".join(f"<td>{fmt.format(point[c])}</td>" for c, fmt in POINT_FORMATS.items())
    body += "".join(f"<td>{int(point[k])}</td>" for k in stops)
    return f"<table class='lase-point'><tr>{head}</tr><tr>{body}</tr></table>"


def point_caption(point: pd.Series) -> str:
    """The operating point in four short lines, with the numbers of :func:`point_row_html`."""
    f = {c: fmt.format(point[c]) for c, fmt in POINT_FORMATS.items()}
    stops = " / ".join(str(int(point[k])) for k in point.index if str(k).startswith("stop_"))
    return (f"tau_lp = {f['tau_lp']}, tau_h = {f['tau_h']}\n"
            f"accuracy {f['accuracy']} ({point['n_correct']} of {point['n']})\n"
            f"{f['avg_tokens']} tokens per problem, {f['escalation_rate']} escalated\n"
            f"stops per stage: {stops}")


def change_note(before: pd.Series | None, after: pd.Series, stops_before: np.ndarray | None,
                stops_after: np.ndarray) -> str:
    """Whether a slider move changed the operating point, in one sentence ("" for the first point).

    The point is unchanged exactly when every problem stops at the same stage as before (the
    thresholds crossed no recorded confidence), whatever the thresholds now read.
    """
    if before is None or stops_before is None:
        return ""
    where = f"tau_lp = {before['tau_lp']:.3g}, tau_h = {before['tau_h']:.3g}"
    moved = int((np.asarray(stops_before) != np.asarray(stops_after)).sum())
    if moved == 0:
        return (f"Operating point unchanged: every problem stops at the same stage as at {where} "
                "(no recorded confidence lies between the old and the new thresholds), so accuracy "
                "and tokens stay the same.")
    return (f"Operating point moved from {where}: {moved} of {len(stops_after)} problems now stop at another "
            f"stage; accuracy {before['accuracy']:.1%} -> {after['accuracy']:.1%}, tokens per problem "
            f"{before['avg_tokens']:,.0f} -> {after['avg_tokens']:,.0f}.")


def draw_view(ax, chains: Chains, grid: pd.DataFrame, baselines: pd.DataFrame | None = None, *,
              colorbar: bool = True, point_labels: bool = True, ms: float = 24, animated: bool = False):
    """What the slider panel draws on ``ax``: the recording's frontier (:func:`draw_frontier`: the
    threshold grid coloured by escalation rate, its front, the oracle, the fixed policies and any
    baselines) and a star for LASE's operating point, still empty (:func:`place_star` puts it).

    Returns ``(cloud, star)``: the grid's scatter (for a colour bar) and the star's Line2D.
    """
    cloud = draw_frontier(ax, grid, fixed_policies(chains), oracle_frontier(chains), baselines, colorbar=colorbar,
                          point_labels=point_labels)
    (star,) = ax.plot([], [], **{**STAR, "ms": ms}, animated=animated, label="LASE at the sliders' thresholds")
    return cloud, star


def place_star(star, chains: Chains, tau_lp: float, tau_h: float) -> tuple[pd.Series, np.ndarray]:
    """Replay at (tau_lp, tau_h), put ``star`` on the operating point, and return the point and
    each problem's stop stage."""
    pt = operating_point(chains, tau_lp, tau_h)
    star.set_data([pt["avg_tokens"]], [pt["accuracy"]])
    return pt, stop_stages(chains, tau_lp, tau_h)


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
        _, self.marker = draw_view(self.ax, chains, grid, baselines, animated=True)
        self.ax.set_title("Move the sliders: the star is LASE at those thresholds")
        self.ax.legend(handles=self.ax.get_legend_handles_labels()[0][:-1], loc="best", fontsize="x-small")
        self._background = None
        self.point: pd.Series | None = None
        self.stops: np.ndarray | None = None  # each problem's stop stage at the current point

    def update(self, tau_lp: float, tau_h: float) -> pd.Series:
        """Replay at (tau_lp, tau_h), move the marker there, and return the operating point."""
        self.point, self.stops = place_star(self.marker, self.chains, tau_lp, tau_h)
        return self.point

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


def small_multiples(chains: Chains, pairs: Sequence[tuple[float, float]] = STRICT_TO_LAX, *,
                    grid: pd.DataFrame | None = None, baselines: pd.DataFrame | None = None, grid_size: int = 41,
                    ncols: int = 2, title: str | None = None):
    """The slider panel frozen at several (tau_lp, tau_h) pairs, for pages where widgets do not run:
    one small panel per pair, each :func:`draw_view` with the star placed by :func:`place_star`,
    titled with the panel's numbers (:func:`point_caption`). Returns the matplotlib figure."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import PercentFormatter

    if not pairs:
        raise ValueError("small_multiples needs at least one (tau_lp, tau_h) pair")
    if grid is None:
        grid = sweep(chains, *threshold_axes(chains, grid_size))
    nrows = -(-len(pairs) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(min(MAX_WIDTH_IN, 5.6 * ncols), 4.6 * nrows), squeeze=False, sharex=True,
                             sharey=True, gridspec_kw={"hspace": 0.5, "wspace": 0.06, "right": 0.9})
    top, bottom = fig.subplotpars.top, fig.subplotpars.bottom
    cax = fig.add_axes((0.915, bottom, 0.012, top - bottom))
    cloud = None
    for ax, (tau_lp, tau_h) in zip(axes.flat, pairs):
        cloud, star = draw_view(ax, chains, grid, baselines, colorbar=False, point_labels=False, ms=18)
        star.set_label("LASE at the panel's thresholds (numbers above the panel)")
        ax.set_title(point_caption(place_star(star, chains, tau_lp, tau_h)[0]), fontsize="small")
    for ax in axes.flat[len(pairs):]:
        ax.set_visible(False)
    for ax in axes.flat[:len(pairs)]:
        ax.set_xlabel("tokens per problem" if ax.get_subplotspec().is_last_row() else "")
        ax.set_ylabel("accuracy" if ax.get_subplotspec().is_first_col() else "")
    cb = fig.colorbar(cloud, cax=cax)
    cb.set_label("escalation rate of a threshold pair")
    cb.ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    points, oracle = _frontier_points(fixed_policies(chains), baselines), oracle_frontier(chains)
    for ax in axes.flat[:len(pairs)]:  # the fixed policies' names, off the star and the front
        label_points(ax, points, oracle)
    fig.legend(*axes.flat[0].get_legend_handles_labels(), loc="upper center", bbox_to_anchor=(0.45, 0.0), ncol=2,
               frameon=False)
    fig.suptitle(title or f"The sliders at {len(pairs)} threshold pairs, strict to lax "
                 f"({len(chains.problem_ids)} problems, replayed)", fontweight="bold", va="bottom",
                 y=top + 0.85 / fig.get_figheight())  # above the panels' 4-line titles
    return fig


@dataclass
class ThresholdControls:
    """The slider panel's widgets and its callback. ``box`` is what a notebook displays."""

    view: FrontierView
    tau_lp: Any  # ipywidgets.FloatSlider
    tau_h: Any  # ipywidgets.FloatSlider
    image: Any  # ipywidgets.Image: the frontier with the marker
    row: Any  # ipywidgets.HTML: the operating point as a table row
    text: Any  # ipywidgets.HTML: whether the move changed the point, and the point in a sentence
    box: Any  # ipywidgets.VBox holding everything
    history: list[pd.Series] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # change_note of every update ("" for the first)
    views: dict[str, FrontierView] = field(default_factory=dict)  # label -> its recording's view
    model: Any = None  # ipywidgets.ToggleButtons choosing the recording, when there are several

    def switch(self, change: dict | None = None) -> pd.Series:
        """The model buttons' callback: show the chosen recording's frontier at the sliders' thresholds."""
        self.view = self.views[self.model.value]
        self.view.point, self.view.stops = None, None  # a new figure: no "unchanged" note against an old point
        self.image.value = b""
        return self.update()

    def update(self, change: dict | None = None) -> pd.Series:
        """The slider callback: replay at the sliders' values and refresh figure, row and text.

        The figure is re-encoded only when the marker moved; the text always changes, and says
        "Operating point unchanged" when the move left every problem's stop stage as it was.
        """
        before, stops_before = self.view.point, self.view.stops
        pt = self.view.update(self.tau_lp.value, self.tau_h.value)
        note = change_note(before, pt, stops_before, self.view.stops)
        xy_before = None if before is None else (before["avg_tokens"], before["accuracy"])
        if xy_before != (pt["avg_tokens"], pt["accuracy"]) or not self.image.value:
            self.image.value = self.view.png()
        self.row.value = point_row_html(pt)
        solo = float(self.view.chains.total_tokens[:, 0].mean())
        self.text.value = note_html(note) + f"<p>{html.escape(point_sentence(pt, solo))}</p>"
        self.history.append(pt)
        self.notes.append(note)
        return pt

    def _ipython_display_(self) -> None:  # pragma: no cover - needs a front end
        from IPython.display import display

        display(self.box)


def threshold_sliders(chains: Chains | Mapping[str, Chains], tau_lp: float = 0.8, tau_h: float = 0.5, *,
                      grid: pd.DataFrame | None = None, baselines: pd.DataFrame | None = None, grid_size: int = 41,
                      tau_h_max: float | None = None, step: float = 0.01) -> ThresholdControls:
    """Sliders for tau_lp and tau_h that move LASE's operating point on the frontier, by replay.

    ``chains`` is one recording's full chains, or several (label -> chains, e.g. from
    :func:`lase_nb.runs.chains_by_model`): then buttons above the sliders switch the model, and
    ``grid`` and ``baselines`` belong to the first. Works without a browser: set
    ``controls.tau_lp.value`` (or ``controls.model.value``) and the callback runs, updating
    ``controls.image``, ``controls.row`` and ``controls.text``.
    """
    import ipywidgets as w

    by_model = dict(chains) if isinstance(chains, Mapping) else {"": chains}
    if not by_model:
        raise ValueError("threshold_sliders needs at least one recording's chains")
    views = {label: FrontierView(c, grid=grid if i == 0 else None, baselines=baselines if i == 0 else None,
                                 grid_size=grid_size) for i, (label, c) in enumerate(by_model.items())}
    view = next(iter(views.values()))
    top = tau_h_max if tau_h_max is not None else max(float(threshold_axes(c, 2)[1][-1]) for c in by_model.values())
    top = max(top, tau_h)
    style = {"description_width": "initial"}
    layout = w.Layout(width="520px")
    s_lp = w.FloatSlider(value=tau_lp, min=0.0, max=1.0, step=step, readout_format=".2f", continuous_update=True,
                         description="tau_lp (min answer-token probability)", style=style, layout=layout)
    s_h = w.FloatSlider(value=tau_h, min=0.0, max=top, step=step, readout_format=".2f", continuous_update=True,
                        description="tau_h (max answer-token entropy, nats)", style=style, layout=layout)
    image = w.Image(format="png")
    row, text = w.HTML(), w.HTML()
    text.add_class(TEXT_CLASS)
    model = w.ToggleButtons(options=list(views), value=next(iter(views)), description="model",
                            style=style) if len(views) > 1 else None
    box = w.VBox(([model] if model is not None else []) + [w.HBox([s_lp, s_h]), image, row, text])
    controls = ThresholdControls(view, s_lp, s_h, image, row, text, box, views=views, model=model)
    s_lp.observe(controls.update, names="value")
    s_h.observe(controls.update, names="value")
    if model is not None:
        model.observe(controls.switch, names="value")
    controls.update()
    return controls


# ---------------------------------------------------------------------------------------------
# The same panel without a kernel (the HTML book, JupyterLab): Bokeh over a lookup made by replay
# ---------------------------------------------------------------------------------------------

#: Bokeh's names for the matplotlib markers of :data:`lase_nb.plots.STYLE`.
_BOKEH_MARKERS = {"o": "circle", "s": "square", "D": "diamond", "d": "diamond", "^": "triangle",
                  "v": "inverted_triangle", "P": "plus", "X": "x", "*": "star", "h": "hex", "p": "hex"}


@dataclass
class PointLookup:
    """Every operating point the two sliders can reach, by replay: ``index[i, j]`` is the row of
    ``points`` (an :func:`operating_point` each) at the i-th tau_lp and j-th tau_h position."""

    index: np.ndarray  # (tau_lp positions x tau_h positions), int16 (int32 past 32,767 points)
    points: pd.DataFrame


def point_lookup(chains: Chains, lp: Any, h: Any) -> PointLookup:
    """Replay ``chains`` at every pair of slider positions (``lp``, ``h``: :class:`lase_nb.book.panels.SliderAxis`).

    Pairs at which every problem stops at the same stage share one operating point, so each
    distinct stop vector is replayed once (:func:`operating_point` at the first pair giving it).
    """
    keys: dict[bytes, int] = {}
    pairs: list[tuple[float, float]] = []
    th = h.values
    index = np.empty((len(lp), len(th)), dtype=np.int32)
    for i, tl in enumerate(lp.values):
        for j, row in enumerate(stop_stages(chains, float(tl), th).astype(np.int16)):
            k = keys.setdefault(row.tobytes(), len(keys))
            if k == len(pairs):
                pairs.append((float(tl), float(th[j])))
            index[i, j] = k
    points = pd.DataFrame([operating_point(chains, a, b) for a, b in pairs]).reset_index(drop=True)
    return PointLookup(index.astype(np.int16) if len(pairs) < 2 ** 15 else index, points)  # half the page bytes


def _cells(point: pd.Series, label: str) -> str:
    f = {c: fmt.format(point[c]) for c, fmt in POINT_FORMATS.items()}
    stops = " / ".join(str(int(point[k])) for k in point.index if str(k).startswith("stop_"))
    return (f"<tr><td>{html.escape(label)}</td><td>{int(point['n'])}</td>"
            f"<td data-key='accuracy'>{f['accuracy']}</td><td data-key='avg_tokens'>{f['avg_tokens']}</td>"
            f"<td data-key='escalation_rate'>{f['escalation_rate']}</td><td data-key='stops'>{stops}</td></tr>")


def point_rows(points: pd.DataFrame, label: str, row: str) -> list[str]:
    """Each operating point as the panel's table row (``row``: the row's name for a reader of the page)."""
    return [_cells(p, label).replace("<tr>", f"<tr data-row='{row}'>", 1) for _, p in points.iterrows()]


def baseline_rows(baselines: pd.DataFrame | None) -> str:
    """MV, MAD ... at their own (fixed) cost, as rows of the panel's table."""
    if baselines is None or not len(baselines):
        return ""
    out = []
    for _, b in baselines.iterrows():
        name = style(b["strategy"])["short"]
        out.append(f"<tr data-row='{html.escape(b['strategy'])}'><td>{html.escape(name)} (fixed)</td><td>{int(b['n'])}</td>"
                   f"<td data-key='accuracy'>{b['accuracy']:.1%}</td><td data-key='avg_tokens'>{b['avg_tokens']:,.0f}</td>"
                   "<td>-</td><td>-</td></tr>")
    return "".join(out)


_FRONTIER_JS = """
const i = index(lp, lp_labels.length), j = index(h, h_labels.length), m = h_labels.length;
const k = idx_all[i * m + j];
star.data = {x: [xs[k]], y: [ys[k]]};
let t = head.replace('{lp}', lp_labels[i]).replace('{h}', h_labels[j]) + rows_all[k];
if (rows_common.length) t += rows_common[idx_common[i * m + j]];
readout.text = t + fixed + tail;
"""


def frontier_panel(chains: Chains, tau_lp: float = 0.8, tau_h: float = 0.5, *, grid: pd.DataFrame,
                   baselines: pd.DataFrame | None = None, common: Chains | None = None, step: float = 0.01,
                   title: str | None = None):
    """Chapter 05's slider panel for a page without a kernel (:mod:`lase_nb.book.panels`).

    Two sliders move LASE's operating point (a star) over ``grid`` (the chapter's threshold
    sweep) with its Pareto front and oracle staircase, and a table prints accuracy, tokens per
    problem, escalation rate and stops per stage at the sliders' thresholds, all read from
    :func:`point_lookup` (replay at every slider position, once). With ``baselines`` (MV, MAD on
    their common problems, :func:`lase_nb.chapters.pareto.baseline_points`) and ``common`` (the
    chains of those problems), LASE on the same problems is printed beside them.
    Returns a :class:`lase_nb.book.panels.Panel`.
    """
    from bokeh.document import Document
    from bokeh.events import DocumentReady
    from bokeh.layouts import column, row
    from bokeh.models import (ColorBar, ColumnDataSource, CustomJS, HoverTool, Label, LinearColorMapper,
                              FixedTicker, NumeralTickFormatter, Range1d, Whisker)
    from bokeh.plotting import figure

    from ..book.panels import INDEX_JS, TABLE_STYLE, SliderAxis, embed, readout_div, slider
    from ..plots import FRONT_COLOR, ORACLE_COLOR, scale_palette

    lp = SliderAxis(0.0, 1.0, step)
    h = SliderAxis(0.0, max(float(threshold_axes(chains, 2)[1][-1]), tau_h), step)
    look = point_lookup(chains, lp, h)
    n = len(chains.problem_ids)
    rows_all = point_rows(look.points, f"LASE, all {n} problems", "lase")
    have_common = common is not None and baselines is not None and len(baselines) > 0
    look_c = point_lookup(common, lp, h) if have_common else None
    rows_common = point_rows(look_c.points, "LASE on the baselines' problems", "lase-common") if look_c else []

    mapper = LinearColorMapper(palette=scale_palette(), low=0, high=1)  # greys: no strategy's colour
    p = figure(width=1060, height=440, x_axis_type="log", title=title or "LASE at the sliders' thresholds (the star) "
               "on the threshold grid", x_axis_label="average tokens per problem (prompt + completion)",
               y_axis_label="accuracy", toolbar_location="right", tools="pan,wheel_zoom,box_zoom,reset,save")
    columns = ("tau_lp", "tau_h", "accuracy", "avg_tokens", "escalation_rate")  # plain arrays: a DataFrame adds its index
    cloud = p.scatter("avg_tokens", "accuracy", source=ColumnDataSource({c: grid[c].to_numpy() for c in columns}),
                      size=7, alpha=0.8, line_color=None, fill_color={"field": "escalation_rate", "transform": mapper},
                      legend_label="a threshold pair (colour: escalation rate)")
    p.add_tools(HoverTool(renderers=[cloud], tooltips=[("tau_lp", "@tau_lp{0.00}"), ("tau_h", "@tau_h{0.00}"),
                                                        ("accuracy", "@accuracy{0.0%}"), ("tokens", "@avg_tokens{0,0}"),
                                                        ("escalated", "@escalation_rate{0%}")]))
    front = front_of(grid).sort_values("avg_tokens")
    p.step(front["avg_tokens"], front["accuracy"], mode="after", color=FRONT_COLOR, line_width=2.4,
           legend_label="Pareto front of the grid")
    p.scatter(front["avg_tokens"], front["accuracy"], size=7, color=FRONT_COLOR, legend_label="Pareto front of the grid")
    oracle = oracle_frontier(chains)
    pol = fixed_policies(chains)
    xs_all = np.concatenate([grid["avg_tokens"], oracle["avg_tokens"], pol["avg_tokens"]])
    ys_all = np.concatenate([grid["accuracy"], oracle["accuracy"], pol["acc_lo"], pol["acc_hi"]])
    x_lo, x_hi = xs_all.min() / 1.25, xs_all.max() * 1.25
    pad = max(0.03, 0.06 * (ys_all.max() - ys_all.min()))
    p.x_range = Range1d(x_lo, x_hi)
    p.y_range = Range1d(max(-0.02, ys_all.min() - pad), min(1.1, ys_all.max() + 2 * pad))
    p.step(oracle["avg_tokens"], oracle["accuracy"], mode="after", color=ORACLE_COLOR, line_width=2,
           line_dash="dashed", legend_label="oracle gate (upper bound)")
    p.scatter([oracle["avg_tokens"].iloc[-1]], [oracle["accuracy"].iloc[-1]], marker="circle", size=22,
              fill_color=None, line_color=ORACLE_COLOR, line_width=2, line_dash="dashed",
              legend_label="oracle gate (upper bound)")  # a ring: visible when the staircase is one point
    for _, r in pol.iterrows():
        if r["policy"] not in ("solo", "always-interact"):
            continue
        st = style(r["policy"])
        src = ColumnDataSource(dict(x=[r["avg_tokens"]], y=[r["accuracy"]], lo=[r["acc_lo"]], hi=[r["acc_hi"]]))
        p.add_layout(Whisker(source=src, base="x", lower="lo", upper="hi", line_color=st["color"], line_width=1.6))
        p.scatter("x", "y", source=src, marker=_BOKEH_MARKERS.get(st["marker"], "circle"), size=13,
                  color=st["color"], line_color="white")
        left = r["avg_tokens"] < np.sqrt(x_lo * x_hi)  # the name runs towards the middle, inside the axes
        p.add_layout(Label(x=r["avg_tokens"], y=r["acc_hi"], text=f"{st['short']} (n={n})", text_color=st["color"],
                           text_font_size="12px", text_font_style="bold", text_align="left" if left else "right",
                           x_offset=-8 if left else 8, y_offset=4))
    star = ColumnDataSource(dict(x=[], y=[]), name="star")
    p.scatter("x", "y", source=star, marker="star", size=28, fill_color=CHOSEN_COLOR, line_color="black",
              line_width=1.3, legend_label="LASE at the sliders' thresholds")
    p.add_layout(ColorBar(color_mapper=mapper, title="escalation rate", width=12,
                          formatter=NumeralTickFormatter(format="0%")), "right")
    p.yaxis.formatter = NumeralTickFormatter(format="0%")
    p.xaxis.formatter = NumeralTickFormatter(format="0,0")
    p.xaxis.ticker = FixedTicker(ticks=[m * 10 ** e for e in range(1, 7) for m in (1, 2, 5) if x_lo <= m * 10 ** e <= x_hi])
    p.legend.label_text_font_size = "11px"
    p.legend.spacing = 2
    p.add_layout(p.legend[0], "right")

    s_lp = slider(lp, tau_lp, "tau_lp (lowest answer-token probability)", "tau_lp")
    s_h = slider(h, tau_h, "tau_h (highest answer-token entropy, nats)", "tau_h")
    readout = readout_div("Move the sliders (this panel needs JavaScript).", 1000)
    head = (TABLE_STYLE + "<div>At <b>tau_lp = <span data-key='tau_lp'>{lp}</span></b> and <b>tau_h = "
            "<span data-key='tau_h'>{h}</span></b> (replayed, no model call):</div><table class='lase'>"
            "<tr><th></th><th>problems</th><th>accuracy</th><th>tokens per problem</th><th>escalated</th>"
            "<th>stops per stage</th></tr>")
    callback = CustomJS(args=dict(
        lp=s_lp, h=s_h, star=star, readout=readout, lp_labels=lp.labels(), h_labels=h.labels(),
        idx_all=look.index.ravel(), xs=look.points["avg_tokens"].to_numpy(float),
        ys=look.points["accuracy"].to_numpy(float), rows_all=rows_all, rows_common=rows_common,
        idx_common=(look_c.index.ravel() if look_c else np.zeros(1, np.int32)), head=head,
        fixed=baseline_rows(baselines) if have_common else "", tail="</table>"), code=INDEX_JS + _FRONTIER_JS)
    s_lp.js_on_change("value", callback)
    s_h.js_on_change("value", callback)
    doc = Document()
    doc.add_root(column(row(s_lp, s_h), p, readout))
    doc.js_on_event(DocumentReady, callback)
    data = {"kind": "frontier", "lp": lp, "h": h, "lookup": look, "common": look_c, "n": n}
    return embed(doc, 440 + 70 + 20 + 26 * (2 + (1 + len(baselines) if have_common else 0)),
                 "Chapter 05: LASE's thresholds on the frontier", data)
