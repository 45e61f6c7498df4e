"""Chapter 00 (notebooks/00_quickstart): the gate playground, one answer's tokens and a slider.

:func:`token_panel` shows every token of one reply with its probability, a slider for tau_lp
that highlights the tokens below it, a slider for tau_h, and whether the gate (the one uncertainty
rule, :func:`lase_nb.confidence.uncertain_mask`, on the answer tokens only) would call the supporters. It is a kernel-free panel
(:mod:`lase_nb.book.panels`): it works in the HTML book and in JupyterLab without a kernel, with every
text computed here for every slider position.
"""

from __future__ import annotations

import html
import math
from typing import Sequence

import numpy as np

from ..answers import grade
from ..confidence import Confidence, uncertain_mask
from ..plots import NEUTRAL_DARK, NEUTRAL_LIGHT, token_label

__all__ = ["VERDICTS", "gate_table", "lp_clauses", "h_clauses", "token_panel", "token_count_line", "grade_line"]

#: Colour of a token whose probability is below the slider's tau_lp, and of the other tokens:
#: neutral greys, dark below the threshold (the reply's text is highlighted in light grey, by the
#: book's panel style), since no strategy is meant (``plots.MEANINGS``: orange is LASE's).
BELOW_COLOR, ABOVE_COLOR = NEUTRAL_DARK, NEUTRAL_LIGHT

#: What the gate's verdict means for LASE, by U (0: sure, 1: unsure); ``{answer}`` is the answer.
VERDICTS = ("Sure (U = 0): LASE would stop here and output {answer}.",
            "Unsure (U = 1): LASE would call its first supporter.")


def token_count_line(prompt_tokens: int, completion_tokens: int, with_text: int) -> str:
    """The reply's token counts as printed under it (chapter 00). A local model counts its
    end-of-sequence token among the completion tokens; it has no text, so the token panel draws one
    fewer, and the line says so."""
    line = f"{prompt_tokens} prompt tokens, {completion_tokens} completion tokens"
    if with_text and completion_tokens == with_text + 1:
        line += f" ({with_text} with text, drawn below; the last is the end-of-sequence token, which has none)"
    return line


def grade_line(answer: str | None, gold: str | None, kind: str) -> str:
    """Whether the extracted answer is right (chapter 00), graded as every recording grades it, when
    the right answer is given."""
    if not gold:
        return "right answer: not given (the gold parameter grades the reply)"
    if answer is None:
        return f"right answer: {gold}; the reply boxed no answer, which counts as wrong"
    return f"right answer: {gold}, so the reply is " + ("right" if grade(answer, gold, kind) else "wrong")


def _p_h(conf: Confidence) -> tuple[float, float]:
    """The two numbers the gate reads, as :func:`lase_nb.confidence.is_uncertain` reads them (NaN: none)."""
    p = np.nan if conf.answer is None or conf.p_min is None else float(conf.p_min)
    h = np.nan if conf.h_max is None else float(conf.h_max)
    return p, h


def gate_table(conf: Confidence, tau_lp: np.ndarray, tau_h: np.ndarray) -> np.ndarray:
    """U of one answer at every (tau_lp, tau_h) pair of two slider axes: ``(len(tau_lp), len(tau_h))``,
    by the one uncertainty rule (:func:`lase_nb.confidence.uncertain_mask`, read as :func:`lase_nb.confidence.is_uncertain` reads it)."""
    p, h = _p_h(conf)
    u = uncertain_mask(np.array([p]), np.array([h]), np.asarray(tau_lp, float)[:, None, None],
                       np.asarray(tau_h, float)[None, :, None])
    return u[..., 0].astype(np.int8)


def lp_clauses(conf: Confidence, tau_lp: np.ndarray) -> list[str]:
    """Where the answer's exp(LP_min) lies against each tau_lp, in words."""
    p, _ = _p_h(conf)
    if math.isnan(p):
        return ["there is no boxed answer (no exp(LP_min))"] * len(tau_lp)
    return [f"exp(LP_min) = {p:.3f} is {'below' if p < t else 'at or above'} tau_lp = {t:.2f}" for t in tau_lp]


def h_clauses(conf: Confidence, tau_h: np.ndarray) -> list[str]:
    """Where the answer's H_max lies against each tau_h, in words."""
    _, h = _p_h(conf)
    if math.isnan(h):
        return ["H_max is unknown"] * len(tau_h)
    return [f"H_max = {h:.3f} nats is {'above' if h > t else 'at or below'} tau_h = {t:.2f}" for t in tau_h]


_TOKENS_JS = """
const i = index(lp, lp_labels.length), j = index(h, h_labels.length);
const m = h_labels.length;
tau.location = lp.value;
const c = new Array(first.length);
let t = '';
for (let a = 0; a < first.length; a++) {
  const below = first[a] <= i;
  c[a] = below ? below_color : base_color[a];
  t += below ? '<mark class="lase">' + shown[a] + '</mark>' : shown[a];
}
src.data = Object.assign({}, src.data, {color: c});
readout.text = head.replace('{lp}', lp_labels[i]).replace('{h}', h_labels[j]) + counts[i]
  + '<p><b data-key="verdict">' + verdicts[u[i * m + j]] + '</b> <span data-key="why">'
  + lp_clauses[i] + '; ' + h_clauses[j] + '.</span></p>'
  + '<div style="white-space:pre-wrap;font-family:monospace;border:1px solid #ddd;padding:6px">' + t + '</div>';
"""


def token_panel(tokens: Sequence[str], probs: Sequence[float], answer: Sequence[int], conf: Confidence,
                tau_lp: float = 0.8, tau_h: float = 0.5, *, step: float = 0.01, title: str | None = None):
    """The gate playground: one reply's ``tokens`` with their ``probs`` as bars (``answer``: the
    indices of the answer tokens, outlined), sliders for tau_lp and tau_h, the tokens below tau_lp
    highlighted in the bars and in the reply (answer tokens underlined), the count of them, and
    what the gate does with the answer (:func:`gate_table`, :data:`VERDICTS`) and why
    (:func:`lp_clauses`, :func:`h_clauses`), all computed here for every slider position.
    Returns a :class:`lase_nb.book.panels.Panel`."""
    from bokeh.document import Document
    from bokeh.events import DocumentReady
    from bokeh.layouts import column
    from bokeh.models import ColumnDataSource, CustomJS, Span
    from bokeh.plotting import figure

    from ..book.panels import INDEX_JS, TABLE_STYLE, SliderAxis, embed, first_true, readout_div, slider

    if len(tokens) != len(probs):
        raise ValueError(f"token_panel needs one probability per token ({len(tokens)} tokens, {len(probs)} probabilities)")
    lp = SliderAxis(0.0, 1.0, step)
    h_top = _p_h(conf)[1]
    h = SliderAxis(0.0, max(2.0, tau_h, math.ceil(10 * h_top) / 10 + 0.5 if not math.isnan(h_top) else 0.0), step)
    pr = np.asarray(probs, dtype=float)
    ans = sorted(set(int(i) for i in answer))
    below = pr[None, :] < lp.values[:, None]
    first = first_true(below)
    counts = [f"<div data-key='below'>{int(b.sum())} of {len(pr)} tokens are below tau_lp; "
              f"{int(b[ans].sum())} of the {len(ans)} answer tokens.</div>" for b in below]
    u = gate_table(conf, lp.values, h.values)
    verdicts = [html.escape(v.format(answer=conf.answer)) for v in VERDICTS]
    is_ans = np.isin(np.arange(len(pr)), ans)
    base = [ABOVE_COLOR] * len(pr)
    src = ColumnDataSource(dict(x=np.arange(len(pr)), top=pr, color=list(base), token=[token_label(t) for t in tokens],
                                line=["black" if a else None for a in is_ans]), name="tokens")
    width = min(1100, max(700, 14 * len(pr) + 120))
    p = figure(width=width, height=300, y_range=(0, 1.05), x_range=(-0.7, len(pr) - 0.3), toolbar_location=None,
               tools="hover", tooltips=[("token", "@token"), ("probability", "@top{0.000}")],
               title=title or "Each generated token's probability; answer tokens outlined in black; "
                              "tokens below tau_lp in dark grey",
               x_axis_label="generated tokens, in order", y_axis_label="probability")
    p.vbar(x="x", top="top", width=0.8, source=src, fill_color="color", line_color="line", line_width=2)
    tau = Span(location=tau_lp, dimension="width", line_color="black", line_dash="dashed", line_width=2)
    p.add_layout(tau)
    if len(pr) <= 70:  # one label a token while they fit
        p.xaxis.ticker = list(range(len(pr)))
        p.xaxis.major_label_overrides = {i: token_label(t) for i, t in enumerate(tokens)}
        p.xaxis.major_label_orientation = math.pi / 2
    p.xgrid.visible = False
    s_lp = slider(lp, tau_lp, "tau_lp (tokens below it are highlighted; the gate reads answer tokens only)",
                  "tau_lp", 600)
    s_h = slider(h, tau_h, "tau_h (unsure when the answer's H_max is above it, nats)", "tau_h", 600)
    readout = readout_div("Move the sliders (this panel needs JavaScript).", width)
    head = (TABLE_STYLE + "<div>At <b>tau_lp = <span data-key='tau_lp'>{lp}</span></b> and <b>tau_h = "
            "<span data-key='tau_h'>{h}</span></b>:</div>")
    shown = [f"<u><b>{html.escape(t)}</b></u>" if a else html.escape(t) for t, a in zip(tokens, is_ans)]
    callback = CustomJS(args=dict(lp=s_lp, h=s_h, tau=tau, src=src, first=first, below_color=BELOW_COLOR,
                                  base_color=base, shown=shown, readout=readout, head=head, lp_labels=lp.labels(),
                                  h_labels=h.labels(), counts=counts, u=u.ravel(), verdicts=verdicts,
                                  lp_clauses=[html.escape(c) for c in lp_clauses(conf, lp.values)],
                                  h_clauses=[html.escape(c) for c in h_clauses(conf, h.values)]),
                        code=INDEX_JS + _TOKENS_JS)
    s_lp.js_on_change("value", callback)
    s_h.js_on_change("value", callback)
    doc = Document()
    doc.add_root(column(s_lp, s_h, p, readout))
    doc.js_on_event(DocumentReady, callback)
    lines = 1 + sum(len(t) for t in tokens) // 110 + "".join(tokens).count("\n")
    return embed(doc, 110 + 300 + 130 + 20 * lines, "Chapter 00: the gate playground",
                 {"kind": "tokens", "lp": lp, "h": h, "first": first, "u": u, "n": len(pr)})
