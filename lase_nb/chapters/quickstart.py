"""Chapter 00 (notebooks/00_quickstart): the gate playground, one answer's tokens and a slider.

:func:`token_panel` shows every token of one reply with its probability, a slider for tau_lp
that highlights the tokens below it, and whether the gate (:func:`lase_nb.confidence.is_uncertain`,
on the answer tokens only) would call the supporters. It is a kernel-free panel
(:mod:`lase_nb.panels`): it works in the HTML book and in JupyterLab without a kernel, with every
text computed here for every slider position.
"""

from __future__ import annotations

import html
import math
from typing import Sequence

import numpy as np

from ..confidence import Confidence, is_uncertain
from ..plots import OTHER_COLOR, token_label

__all__ = ["gate_verdict", "token_panel"]

#: Colour of a token whose probability is below the slider's tau_lp (the reply's highlight is lighter).
BELOW_COLOR = "#E69F00"


def gate_verdict(conf: Confidence, tau_lp: float, tau_h: float) -> str:
    """What the gate does with one answer at (tau_lp, tau_h), in one sentence with the numbers it reads."""
    if conf.answer is None or conf.p_min is None:
        return "No boxed answer: the gate counts the reply as unsure (U = 1), so LASE would call its first supporter."
    p, h = conf.p_min, conf.h_max
    why = []
    if math.isnan(p) or p < tau_lp:
        why.append(f"exp(LP_min) = {p:.3f} is below tau_lp = {tau_lp:.2f}")
    if h is None or math.isnan(h) or h > tau_h:
        why.append(f"H_max = {h:.3f} nats is above tau_h = {tau_h:g}" if h is not None else "H_max is unknown")
    if is_uncertain(conf, tau_lp, tau_h):
        return f"Unsure (U = 1): {' and '.join(why) or 'the gate says so'}, so LASE would call its first supporter."
    return (f"Sure (U = 0): exp(LP_min) = {p:.3f} is at or above tau_lp = {tau_lp:.2f} and H_max = {h:.3f} nats is at "
            f"most tau_h = {tau_h:g}, so LASE would stop and output {conf.answer}.")


_TOKENS_JS = """
const k = index(lp, labels.length);
tau.location = lp.value;
const c = new Array(first.length);
let t = '';
for (let a = 0; a < first.length; a++) {
  const below = first[a] <= k;
  c[a] = below ? below_color : base_color[a];
  t += below ? '<mark class="lase">' + shown[a] + '</mark>' : shown[a];
}
src.data = Object.assign({}, src.data, {color: c});
readout.text = head.replace('{lp}', labels[k]) + counts[k] + '<p data-key="verdict">' + verdicts[k] + '</p>'
  + '<div style="white-space:pre-wrap;font-family:monospace;border:1px solid #ddd;padding:6px">' + t + '</div>';
"""


def token_panel(tokens: Sequence[str], probs: Sequence[float], answer: Sequence[int], conf: Confidence,
                tau_lp: float = 0.8, tau_h: float = 0.5, *, step: float = 0.01, title: str | None = None):
    """The gate playground: one reply's ``tokens`` with their ``probs`` as bars (``answer``: the
    indices of the answer tokens, outlined), a slider for tau_lp, the tokens below it highlighted in
    the bars and in the reply (answer tokens underlined), the count of them, and :func:`gate_verdict` at that tau_lp (tau_h held).
    Returns a :class:`lase_nb.panels.Panel`."""
    from bokeh.document import Document
    from bokeh.events import DocumentReady
    from bokeh.layouts import column
    from bokeh.models import ColumnDataSource, CustomJS, Span
    from bokeh.plotting import figure

    from ..panels import INDEX_JS, TABLE_STYLE, SliderAxis, embed, first_true, readout_div, slider

    if len(tokens) != len(probs):
        raise ValueError(f"token_panel needs one probability per token ({len(tokens)} tokens, {len(probs)} probabilities)")
    axis = SliderAxis(0.0, 1.0, step)
    pr = np.asarray(probs, dtype=float)
    ans = sorted(set(int(i) for i in answer))
    below = pr[None, :] < axis.values[:, None]
    first = first_true(below)
    counts = [f"<div data-key='below'>{int(b.sum())} of {len(pr)} tokens are below tau_lp; "
              f"{int(b[ans].sum())} of the {len(ans)} answer tokens.</div>" for b in below]
    verdicts = [html.escape(gate_verdict(conf, float(v), tau_h)) for v in axis.values]
    is_ans = np.isin(np.arange(len(pr)), ans)
    base = [OTHER_COLOR] * len(pr)
    src = ColumnDataSource(dict(x=np.arange(len(pr)), top=pr, color=list(base), token=[token_label(t) for t in tokens],
                                line=["black" if a else None for a in is_ans]))
    p = figure(width=min(1100, max(700, 14 * len(pr) + 120)), height=300, y_range=(0, 1.05),
               x_range=(-0.7, len(pr) - 0.3), toolbar_location=None, tools="hover",
               tooltips=[("token", "@token"), ("probability", "@top{0.000}")],
               title=title or "Each generated token's probability; answer tokens outlined in black; "
                              "tokens below tau_lp in orange",
               x_axis_label="generated tokens, in order", y_axis_label="probability")
    p.vbar(x="x", top="top", width=0.8, source=src, fill_color="color", line_color="line", line_width=2)
    tau = Span(location=tau_lp, dimension="width", line_color="black", line_dash="dashed", line_width=2)
    p.add_layout(tau)
    if len(pr) <= 70:  # one label a token while they fit
        p.xaxis.ticker = list(range(len(pr)))
        p.xaxis.major_label_overrides = {i: token_label(t) for i, t in enumerate(tokens)}
        p.xaxis.major_label_orientation = math.pi / 2
    p.xgrid.visible = False
    s = slider(axis, tau_lp, "tau_lp (a token below it is highlighted; the gate reads the answer tokens only)",
               "tau_lp", 560)
    readout = readout_div("Move the slider (this panel needs JavaScript).", min(1100, max(700, int(p.width))))
    head = TABLE_STYLE + f"<div>At <b>tau_lp = <span data-key='tau_lp'>{{lp}}</span></b> (tau_h = {tau_h:g}):</div>"
    shown = [f"<u><b>{html.escape(t)}</b></u>" if a else html.escape(t) for t, a in zip(tokens, is_ans)]
    callback = CustomJS(args=dict(lp=s, tau=tau, src=src, first=first, below_color=BELOW_COLOR, base_color=base,
                                  shown=shown, readout=readout, head=head, labels=axis.labels(), counts=counts,
                                  verdicts=verdicts), code=INDEX_JS + _TOKENS_JS)
    s.js_on_change("value", callback)
    doc = Document()
    doc.add_root(column(s, p, readout))
    doc.js_on_event(DocumentReady, callback)
    lines = 1 + sum(len(t) for t in tokens) // 110 + "".join(tokens).count("\n")
    return embed(doc, 60 + 300 + 110 + 20 * lines, "Chapter 00: the gate playground",
                 {"kind": "tokens", "axis": axis, "first": first, "tau_h": tau_h, "n": len(pr)})
