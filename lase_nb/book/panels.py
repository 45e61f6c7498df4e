"""Threshold panels that work without a kernel: Bokeh sliders over numbers computed once, in
Python, and embedded in the page (chapters 00, 02 and 05; the ipywidgets panels of
:mod:`lase_nb.book.widgets` stay for what needs a live model call).

A panel is one standalone HTML document, BokehJS inlined (no network, no CDN), shown in an
``<iframe srcdoc>``: the same output works in the HTML book opened from disk and in JupyterLab,
with no kernel callback, and under papermill it is just an HTML output.

The browser does no arithmetic on the data. Every number a panel prints is formatted here, for
every slider position, by the package's own functions (:func:`lase_nb.replay.operating_point`,
:func:`lase_nb.confidence.gate_split` ...). A slider's position becomes an index
(:meth:`SliderAxis.index`, and the same rounding in :data:`INDEX_JS`), and the index picks the
texts and coordinates to show.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["SliderAxis", "INDEX_JS", "READOUT_CLASS", "PANEL_CLASS", "TABLE_STYLE", "Panel", "embed", "first_true",
           "slider", "readout_div"]

#: CSS class of the HTML a panel prints its numbers into (a browser test reads it by this name).
READOUT_CLASS = "lase-readout"
#: CSS class of a panel's ``<iframe>`` (the book's budget counts such an output as a figure).
PANEL_CLASS = "lase-panel"

#: The JavaScript function every panel's callback uses to turn a slider's value into an index.
INDEX_JS = ("function index(s, n) { return Math.min(n - 1, Math.max(0, "
            "Math.round((s.value - s.start) / s.step))); }\n")


@dataclass(frozen=True)
class SliderAxis:
    """The positions of one slider: ``start``, ``start + step``, ... up to ``end`` (inclusive)."""

    start: float
    end: float
    step: float = 0.01

    def __post_init__(self) -> None:
        if not (self.step > 0 and self.end > self.start):
            raise ValueError(f"a slider needs start < end and a positive step (got {self.start}, {self.end}, "
                             f"{self.step})")

    def __len__(self) -> int:
        return int(round((self.end - self.start) / self.step)) + 1

    @property
    def values(self) -> np.ndarray:
        """The thresholds at the slider's positions (rounded to the step's decimals, as shown)."""
        return np.round(self.start + self.step * np.arange(len(self)), 10)

    def index(self, value: float) -> int:
        """The position of ``value`` on the slider: what :data:`INDEX_JS` computes in the browser."""
        return int(min(len(self) - 1, max(0, np.floor((value - self.start) / self.step + 0.5))))

    def labels(self, fmt: str = "{:.2f}") -> list[str]:
        """The thresholds as the panel prints them."""
        return [fmt.format(v) for v in self.values]


def first_true(mask: np.ndarray) -> np.ndarray:
    """For a (positions x items) boolean array that, per item, switches from False to True at most
    once as the position grows: the first position where it is True (``len(mask)``: never).

    A panel sends this per item (a token below the threshold, an answer the gate escalates), so
    the browser compares two integers instead of re-evaluating the rule. Raises ValueError when an
    item switches back, which would make one number per item wrong.
    """
    m = np.asarray(mask, dtype=bool)
    if m.ndim != 2:
        raise ValueError(f"first_true needs a (positions x items) array, got shape {m.shape}")
    if (m[:-1] & ~m[1:]).any():
        raise ValueError("the rule is not monotone in the slider: an item turns False again")
    return np.where(m.any(axis=0), m.argmax(axis=0), len(m)).astype(np.int32)


def slider(axis: SliderAxis, value: float, title: str, name: str, width: int = 380):
    """A Bokeh slider over ``axis`` starting at the position nearest ``value``."""
    from bokeh.models import Slider

    return Slider(start=axis.start, end=axis.end, step=axis.step, value=float(axis.values[axis.index(value)]),
                  title=title, name=name, format="0.00", width=width)


@dataclass
class Panel:
    """A kernel-free panel: ``html`` is the ``<iframe>`` a notebook output holds; ``data`` what it
    embeds (for tests)."""

    html: str
    data: dict[str, Any]
    height: int

    def _repr_html_(self) -> str:
        return self.html

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, str]:
        return {"text/html": self.html, "text/plain": f"<{self.data.get('kind', 'panel')} panel: move the sliders "
                                                      "in a browser (JupyterLab or the HTML book)>"}


def embed(layout: Any, height: int, title: str, data: dict[str, Any] | None = None, width: int = 1100) -> Panel:
    """``layout`` (a Bokeh Document or model) as a standalone page with BokehJS inlined, in an ``<iframe
    srcdoc>`` of ``height`` pixels and at most ``width`` wide."""
    from bokeh.embed import file_html
    from bokeh.resources import INLINE

    page = file_html(layout, INLINE, title=title)
    frame = (f'<iframe class="{PANEL_CLASS}" title="{html.escape(title)}" sandbox="allow-scripts allow-downloads" '
             f'style="width:100%;max-width:{width}px;height:{height}px;border:0" srcdoc="{html.escape(page)}">'
             f"</iframe>")
    return Panel(frame, dict(data or {}), height)


def readout_div(text: str, width: int):
    """The Bokeh Div a panel prints its numbers into (class :data:`READOUT_CLASS`)."""
    from bokeh.models import Div

    return Div(text=text, width=width, css_classes=[READOUT_CLASS], name="readout",
               styles={"font-size": "14px", "line-height": "1.45"})


#: Style of a panel's readout tables (inside the Div's own HTML).
TABLE_STYLE = ("<style>table.lase{border-collapse:collapse;margin-top:4px}table.lase td,table.lase th{padding:2px 10px;"
               "border-bottom:1px solid #ddd;text-align:right}table.lase td:first-child,table.lase th:first-child"
               "{text-align:left}mark.lase{background:#d0d0d0;padding:0}</style>")
