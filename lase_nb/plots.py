"""One house style for every chapter's figures, one look per strategy, and one place that writes figures.

:data:`STYLE` gives each strategy (and each fixed policy) ONE colour and marker, used by every
chapter module (:func:`style`), and :func:`label` its readable name with the sizes that matter;
both read each strategy's record (:data:`lase_nb.strategies.SPECS`).

Usage in a notebook::

    from lase_nb import plots
    plots.set_style()
    fig, ax = plt.subplots()
    ...
    plots.savefig(fig, "theory_martingale")   # -> figures/theory_martingale.png

:func:`place_label` writes a label at the first of several places that touches no line, bar or
other label (:func:`touches`), so that names sit beside points instead of moving the points.

Figures go to the folder named by the environment variable ``LASE_FIGURES_DIR`` when it is set
(CI points it at a build folder), otherwise to ``figures/`` at the repository root. A figure drawn
from a live model call (``savefig(..., live=True)``) is never written into the committed
``figures/``: its numbers are the CPU's float arithmetic, whose last bits differ between CPUs, so
it goes to ``LASE_LIVE_FIGURES_DIR`` when set, else beside the others, else (when those are the
committed ``figures/``) to ``build/figures/`` (:func:`live_figures_dir`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from .paths import REPO_ROOT
from .strategies import SPECS

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.text import Annotation
    from matplotlib.transforms import Bbox

#: Environment variable that redirects exported figures.
FIGURES_ENV = "LASE_FIGURES_DIR"
#: Environment variable that redirects figures drawn from a live model call (:func:`live_figures_dir`).
LIVE_FIGURES_ENV = "LASE_LIVE_FIGURES_DIR"
#: Seaborn palette of the house style (distinguishable for colour-blind readers).
PALETTE = "colorblind"

#: LASE's colour; the marker of LASE at chosen thresholds (a star) wears it in every chapter.
CHOSEN_COLOR = SPECS["lase"].color
#: The Pareto front of a threshold grid, and the oracle gate (chapter 05).
FRONT_COLOR = "#222222"
ORACLE_COLOR = "#B2182B"

#: One colour and marker per strategy (from its record, :data:`lase_nb.strategies.SPECS`) or fixed
#: policy, the same in every figure (Okabe-Ito colours). ``label`` is the long name, ``short`` the
#: one drawn beside a point. "lase-full" (LASE forced through every stage) is the always-interact
#: policy and looks like it.
STYLE: dict[str, dict[str, str]] = {
    "solo": dict(color=SPECS["single"].color, marker="s", label="leader alone", short="leader alone"),
    **{n: dict(color=s.color, marker=s.marker, label=s.legend, short=s.short) for n, s in SPECS.items()},
}
STYLE["always-interact"] = STYLE["lase-full"]


# --------------------------------------------------------------------------------------------
# one meaning per colour (issue 67, item 5): a colour names one thing on the seminar path
# --------------------------------------------------------------------------------------------

#: The paper's own numbers and aims, drawn beside ours (dark purple, apart from every strategy).
PAPER_COLOR = "#6A3D9A"
#: The gate followed by one call of organism v6's revision adapter and no supporter (the cascade,
#: the second look with no note: chapter 06, section 6.7).
SECOND_LOOK_COLOR = "#56B4E9"
def _ramp(light: str, mid: str, dark: str, n: int) -> tuple[str, ...]:
    """``n`` hex colours from ``light`` through ``mid`` to ``dark``, evenly in RGB."""
    rgb = [np.array([int(c[i:i + 2], 16) for i in (1, 3, 5)], float) for c in (light, mid, dark)]
    out = []
    for t in np.linspace(0, 2, n):
        a, b = (rgb[0], rgb[1]) if t <= 1 else (rgb[1], rgb[2])
        c = a + (t if t <= 1 else t - 1) * (b - a)
        out.append("#" + "".join(f"{int(round(v)):02X}" for v in c))
    return tuple(out)


#: Symmetric debate (MAD), light to dark: one line per starting accuracy (chapter 01, section 1.1),
#: seven shades through MAD's own, so that up to seven lines differ.
DEBATE_SHADES = _ramp("#EBC3DB", SPECS["mad"].color, "#A0527D", 7)
#: Neutral ink for what names no strategy (counts, note kinds, verdicts, reference lines): greys,
#: told apart by shade, marker and hatch.
NEUTRAL_DARK, NEUTRAL_MID, NEUTRAL_LIGHT = "#333333", "#8C8C8C", "#C8C8C8"


@dataclass(frozen=True)
class Meaning:
    """A colour of the house (with its shades) and the one thing it means; ``labels`` is a regular
    expression (case-insensitive) that every legend entry or text drawn in the colour matches."""

    name: str
    colors: tuple[str, ...]
    labels: str


#: Every colour a figure may draw in, each with one meaning: the strategies' (from their records;
#: the leader alone is the single agent) and the few that name no strategy. Greys and black are
#: neutral (:func:`is_neutral`) and mean nothing by themselves; a value scale (chapter 05's
#: escalation rate) is drawn in greys too (:func:`scale_cmap`), so that no dot wears a meaning.
#: :func:`colour_problems` checks a figure (colour-mapped artists aside).
MEANINGS: tuple[Meaning, ...] = (
    Meaning("one model answers alone", (SPECS["single"].color,), r"alone|single"),
    Meaning("LASE: the gated chain and its escalation", (SPECS["lase"].color,), r"LASE|gated|chain|escalat"),
    Meaning("always interact: every stage runs", (SPECS["lase-full"].color,), r"always|ungated"),
    Meaning("majority vote", (SPECS["mv"].color,), r"MV|majority"),
    Meaning("symmetric debate (MAD)", DEBATE_SHADES, r"MAD|debate|start \d+%"),
    Meaning("the gate and one revision-adapter call, no supporter", (SECOND_LOOK_COLOR,), r"cascade|no note|second look"),
    Meaning("the paper's numbers", (PAPER_COLOR,), r"paper"),
    Meaning("the oracle gate", (ORACLE_COLOR,), r"oracle"),
    Meaning("mixture of agents", (SPECS["moa"].color,), r"mixture|MoA"),
    Meaning("LASE + MV", (SPECS["lase-mv"].color,), r"LASE"),
    Meaning("LASE, shuffled order", (SPECS["lase-shuffled"].color,), r"shuffl"),
    Meaning("LASE, supporter group", (SPECS["lase-ensemble"].color,), r"group|ensemble"),
)
#: The ends of the colour scale of a value that names no strategy (chapter 05's escalation rate of a
#: threshold pair): light grey at 0, near black at 1, so that no dot wears a strategy's colour.
SCALE_ENDS = ("#DDDDDD", "#1A1A1A")


def scale_cmap():
    """:data:`SCALE_ENDS` as a matplotlib colour map (for ``scatter(c=..., cmap=...)``)."""
    from matplotlib.colors import LinearSegmentedColormap

    return LinearSegmentedColormap.from_list("lase-scale", SCALE_ENDS)


def scale_palette(n: int = 256) -> list[str]:
    """:data:`SCALE_ENDS` as ``n`` hex colours, light to dark (a Bokeh palette)."""
    from matplotlib.colors import to_hex

    cmap = scale_cmap()
    return [to_hex(cmap(i / (n - 1))) for i in range(n)]


#: Two colours closer than this (RGB, 0-1 per channel) are one colour to a reader: seaborn's
#: colour-blind "C1" is Okabe-Ito's orange, so a figure cannot slip a meaning in by a near copy.
SAME_COLOR = 0.1


def is_neutral(color: Any) -> bool:
    """Whether a colour is grey, black or white (its channels within 0.06 of each other)."""
    from matplotlib.colors import to_rgb

    rgb = to_rgb(color)
    return max(rgb) - min(rgb) < 0.06


def meaning_of(color: Any) -> Meaning | None:
    """The meaning a chromatic colour carries (the nearest house colour within :data:`SAME_COLOR`),
    None for a neutral colour; raises ``KeyError`` for a colour the house does not hold."""
    from matplotlib.colors import to_rgb

    if is_neutral(color):
        return None
    rgb = np.array(to_rgb(color))
    dist, best = min((float(np.linalg.norm(rgb - np.array(to_rgb(c)))), m.name) for m in MEANINGS for c in m.colors)
    if dist > SAME_COLOR:
        from matplotlib.colors import to_hex

        raise KeyError(f"{to_hex(color)} is no colour of the house (plots.MEANINGS)")
    return next(m for m in MEANINGS if m.name == best)


def _drawn_colors(artist: Any) -> list[Any]:
    """The colours an artist draws with (transparent ones and colour-mapped values left out)."""
    from matplotlib.collections import Collection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.text import Text

    if not artist.get_visible():
        return []
    if isinstance(artist, Line2D):
        out = [artist.get_color(), artist.get_markerfacecolor(), artist.get_markeredgecolor()]
    elif isinstance(artist, Patch):
        out = [artist.get_facecolor(), artist.get_edgecolor()]
    elif isinstance(artist, Collection):
        out = [] if artist.get_array() is not None else [*artist.get_facecolors(), *artist.get_edgecolors()]
    elif isinstance(artist, Text):
        out = [artist.get_color()] if artist.get_text() else []
    else:
        return []
    from matplotlib.colors import to_rgba

    return [c for c in out if not (isinstance(c, str) and c == "none") and to_rgba(c)[3] > 0]


def colour_problems(fig) -> list[str]:
    """Where ``fig`` breaks one meaning per colour (empty when it keeps it): a chromatic colour the
    house does not hold (:data:`MEANINGS`), or a legend entry or text in a house colour that does
    not name that colour's meaning."""
    import re

    from matplotlib.colors import to_hex
    from matplotlib.text import Text

    problems: list[str] = []

    def check(color: Any, text: str | None) -> None:
        try:
            meaning = meaning_of(color)
        except KeyError as err:
            problems.append(str(err.args[0]))
            return
        if meaning is not None and text is not None and not re.search(meaning.labels, text, re.I):
            problems.append(f"{text!r} is drawn in {to_hex(color)}, which means {meaning.name}")

    legends = [leg for leg in [*(ax.get_legend() for ax in fig.axes), *fig.legends] if leg is not None]
    in_legend = {id(a) for leg in legends for a in leg.findobj()}
    for artist in fig.findobj():
        if id(artist) in in_legend:
            continue  # a legend is checked entry by entry below
        for color in _drawn_colors(artist):
            check(color, artist.get_text() if isinstance(artist, Text) else None)
    for leg in legends:
        for handle, text in zip(leg.legend_handles, leg.get_texts()):
            for color in _drawn_colors(handle):
                check(color, text.get_text())
    return sorted(set(problems))


def style(strategy: str) -> dict[str, str]:
    """The colour, marker and names of a strategy (black dots, named as given, for unknown ones)."""
    return STYLE.get(strategy, dict(color="black", marker="o", label=strategy, short=strategy))


def label(strategy: str, config: Mapping[str, Any] | None = None) -> str:
    """A readable name with the sizes that matter: ``MV(7)``, ``MAD(3x2)``, ``LASE+MV(5)``..."""
    spec = SPECS.get(strategy)
    return spec.label(dict(config or {})) if spec is not None else strategy


#: The one font of every figure: DejaVu Sans ships inside matplotlib, so a figure draws the same
#: glyphs on every machine, whatever fonts the system has (a system font would change the PNG).
FONT = "DejaVu Sans"
#: Resolution of exported figures (dots per inch); inline figures are drawn at 100.
SAVE_DPI = 150
#: The size rule of every figure (issue 67: a figure must read at a projector, a page about 1,000
#: pixels wide): at most :data:`MAX_WIDTH_IN` inches wide, 1,200 pixels at the book's 100 dpi, so it
#: shrinks to no less than 83% there; tick labels at least :data:`MIN_TICK_PT` points (the style's
#: are 12.65). :func:`size_problems` checks a figure; the tests check every drawn PNG under figures/.
MAX_WIDTH_IN = 12.0
MIN_TICK_PT = 10.0
#: The book's resolution (dots per inch): figures are shown inline at this, and the size rule is in its pixels.
BOOK_DPI = 100


def set_style(context: str = "notebook", font_scale: float = 1.15) -> None:
    """Apply the house style: seaborn whitegrid, colour-blind palette, large readable text, and the
    bundled font (:data:`FONT`) for text and formulas, so that figures render alike everywhere."""
    import seaborn as sns

    sns.set_theme(
        context=context,
        style="whitegrid",
        palette=PALETTE,
        font=FONT,
        font_scale=font_scale,
        rc={
            "figure.dpi": BOOK_DPI,
            "savefig.dpi": SAVE_DPI,
            "savefig.bbox": "tight",
            "axes.titleweight": "bold",
            "axes.titlesize": "large",
            "legend.frameon": True,
            "legend.framealpha": 0.9,
            "font.sans-serif": [FONT],
            "mathtext.fontset": "dejavusans",
            "svg.hashsalt": "lase-nb",
            "svg.fonttype": "path",
        },
    )


def size_problems(fig) -> list[str]:
    """What breaks the size rule in ``fig`` (empty when it keeps it): wider than
    :data:`MAX_WIDTH_IN` inches, or a visible tick label smaller than :data:`MIN_TICK_PT` points."""
    out = []
    width = fig.get_size_inches()[0]
    if width > MAX_WIDTH_IN + 1e-9:
        out.append(f"{width:g} inches wide > {MAX_WIDTH_IN:g}")
    small = sorted({round(t.get_fontsize(), 1) for ax in fig.axes for t in (*ax.get_xticklabels(), *ax.get_yticklabels())
                    if t.get_visible() and t.get_text() and t.get_fontsize() < MIN_TICK_PT})
    if small:
        out.append(f"tick labels at {', '.join(f'{s:g}' for s in small)} pt < {MIN_TICK_PT:g}")
    return out


#: The repository around an editable install (None for an installed copy, which has none).
_REPO = REPO_ROOT
REPO: Path | None = _REPO if (_REPO / "pyproject.toml").exists() else None


def figures_dir() -> Path:
    """The folder figures are written to (created if missing)."""
    env = os.environ.get(FIGURES_ENV)
    if env:
        folder = Path(env).expanduser()
    else:
        # An installed (non-editable) copy has no repository around it: use the working folder.
        folder = (REPO or Path.cwd()) / "figures"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def is_committed_figures(folder: Path) -> bool:
    """Whether ``folder`` is the repository's committed ``figures/`` (the README's images)."""
    return REPO is not None and Path(folder).expanduser().resolve() == (REPO / "figures").resolve()


def live_figures_dir() -> Path:
    """The folder a figure drawn from a live model call is written to (created if missing):
    ``$LASE_LIVE_FIGURES_DIR`` when set, else :func:`figures_dir`; never the committed ``figures/``,
    whose place ``build/figures/`` takes (so ``make notebooks`` leaves ``git status`` clean on any CPU)."""
    env = os.environ.get(LIVE_FIGURES_ENV)
    folder = Path(env).expanduser() if env else figures_dir()
    if is_committed_figures(folder):
        folder = (REPO or Path.cwd()) / "build" / "figures"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


#: PNG metadata of exported figures: none. Matplotlib writes its version as ``Software`` by
#: default, so a figure would change with the library even when every pixel is the same.
PNG_METADATA: dict[str, Any] = {"Software": None}


def savefig(fig, name: str, *, dpi: int = SAVE_DPI, live: bool = False) -> Path:
    """Write ``fig`` as PNG under :func:`figures_dir` and return the path (``.png`` is added).

    The file depends only on what is drawn: a fixed resolution, no metadata (:data:`PNG_METADATA`)
    and, with :func:`set_style`, the font that ships with matplotlib. Drawing the same figure twice
    writes the same bytes, so ``git status`` shows a committed figure as changed only when the
    figure changed (``tests/test_notebooks.py`` checks it on the executed chapters). ``live``: the
    figure is drawn from a live model call, whose float bits depend on the CPU; it goes to
    :func:`live_figures_dir`, never into the committed ``figures/``."""
    folder = live_figures_dir() if live else figures_dir()
    path = folder / (name if name.endswith(".png") else f"{name}.png")
    fig.savefig(path, dpi=dpi, bbox_inches="tight", format="png", metadata=PNG_METADATA)
    return path


def band(ax, x, mean, lo, hi, *, label: str | None = None, color=None, alpha: float = 0.25, **line_kw):
    """Draw ``mean`` as a line with a shaded band from ``lo`` to ``hi``; return the line."""
    (line,) = ax.plot(np.asarray(x), np.asarray(mean), label=label, color=color, **line_kw)
    ax.fill_between(np.asarray(x), np.asarray(lo), np.asarray(hi), color=line.get_color(), alpha=alpha, lw=0)
    return line


#: A place to try for a label: anchor (data coordinates), offset from it (points), ha, va.
Spot = tuple[tuple[float, float], tuple[float, float], str, str]


def text_extent(text: Artist) -> Bbox:
    """A text's display box including the padding of its background box (``bbox=dict(boxstyle=...,
    pad=...)``), which covers what lies under it: two labels whose texts do not overlap can still
    hide each other's letters behind their boxes."""
    ext = text.get_window_extent()
    patch = text.get_bbox_patch()
    if patch is None:
        return ext
    pad = getattr(patch.get_boxstyle(), "pad", 0.0) * text.get_size() * text.figure.dpi / 72
    return ext.padded(pad)


def touches(artist: Artist, box: Bbox) -> bool:
    """Whether ``artist`` (a line, a collection, a text or a patch) touches the display box ``box``."""
    from matplotlib.collections import Collection
    from matplotlib.lines import Line2D
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    if not artist.get_visible():
        return False
    if isinstance(artist, Text):
        return bool(artist.get_text()) and text_extent(artist).overlaps(box)
    if isinstance(artist, Line2D):
        from matplotlib.cbook import STEP_LOOKUP_MAP
        from matplotlib.path import Path

        def shown(xy: np.ndarray) -> np.ndarray:
            out = artist.get_transform().transform(xy)
            return out[np.isfinite(out).all(axis=1)]

        pts = shown(artist.get_xydata())
        drawn = shown(np.asarray(STEP_LOOKUP_MAP[artist.get_drawstyle()](*artist.get_xydata().T)).T)
        if len(drawn) > 1 and artist.get_linestyle() not in ("None", "none", " ", "") \
                and Path(drawn).intersects_bbox(box, filled=False):
            return True
        if artist.get_marker() not in (None, "None", "none", " ", ""):
            r = artist.get_markersize() * artist.figure.dpi / 72 / 2
            return any(Bbox([[x - r, y - r], [x + r, y + r]]).overlaps(box) for x, y in pts)
        return False
    if isinstance(artist, Collection):
        t = artist.get_transform()
        return any(t.transform_path(p).intersects_bbox(box, filled=False) for p in artist.get_paths())
    return artist.get_window_extent().overlaps(box)


def place_label(ax: Axes, text: str, spots: list[Spot], *, avoid: list[Artist] | None = None, **kw: Any) -> Annotation:
    """Annotate ``text`` at the first of ``spots`` whose box lies inside the axes and touches none
    of ``avoid`` (default: the axes' lines, line collections, patches and texts); where none is free,
    at the spot touching the fewest. Call it once the axes' limits and the figure's layout are final.
    Returns the annotation."""
    from matplotlib.collections import LineCollection

    if avoid is None:
        avoid = [*ax.lines, *[c for c in ax.collections if isinstance(c, LineCollection)], *ax.patches, *ax.texts]
    kw = {"textcoords": "offset points", "annotation_clip": False, **kw}
    (xy, off, ha, va), *_ = spots
    ann = ax.annotate(text, xy, xytext=off, ha=ha, va=va, **kw)
    inside = ax.get_window_extent()
    best, best_cost = spots[0], None
    for spot in spots:
        xy, off, ha, va = spot
        ann.xy, ann.xyann = xy, off
        ann.set(ha=ha, va=va)
        box = text_extent(ann).padded(2)
        cost = sum(touches(a, box) for a in avoid if a is not ann)
        cost += 100 * (not (inside.contains(box.x0, box.y0) and inside.contains(box.x1, box.y1)))
        if best_cost is None or cost < best_cost:
            best, best_cost = spot, cost
        if cost == 0:
            break
    xy, off, ha, va = best
    ann.xy, ann.xyann = xy, off
    ann.set(ha=ha, va=va)
    return ann


#: Colour of answer tokens in token figures, with the name the figure's text uses for it. Neutral,
#: as the other tokens' grey: orange is LASE's, and chapter 00's slider colours a token below the
#: threshold, which would make LASE escalate, in it (``quickstart.BELOW_COLOR``); blue is the
#: leader alone's (:data:`MEANINGS`). The slider outlines answer tokens in the same black.
ANSWER_COLOR, ANSWER_COLOR_NAME = "#000000", "black"
#: Colour of the other (reasoning) tokens.
OTHER_COLOR, OTHER_COLOR_NAME = NEUTRAL_MID, "grey"
#: Tokens a row of :func:`token_bars` holds at most: a longer reply wraps onto further rows, as text
#: does, so that each label keeps :data:`MIN_TICK_PT` within :data:`MAX_WIDTH_IN`.
TOKENS_PER_ROW = 40


def token_label(token: str) -> str:
    """A token as an axis label: spaces as a visible mark, newlines as ``\\n``."""
    return token.replace("\n", "\\n").replace(" ", "\u2423") or "''"


def token_bars(tokens: list[str], probs: list[float], answer: set[int], *, title: str | None = None):
    """Bar chart of each generated token's probability, labelled with the token; the answer
    tokens in :data:`ANSWER_COLOR` with bold labels (the title names the colour it uses). A reply
    longer than :data:`TOKENS_PER_ROW` tokens wraps onto further rows, so the figure keeps the size
    rule (:func:`size_problems`). Returns the figure."""
    import math

    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    n = len(tokens)
    rows = max(1, math.ceil(n / TOKENS_PER_ROW))
    per_row = max(1, math.ceil(n / rows))
    fig, axes = plt.subplots(rows, 1, figsize=(min(MAX_WIDTH_IN, max(8.0, 0.3 * per_row + 2)), 0.6 + 3.4 * rows),
                             squeeze=False)
    colors = [ANSWER_COLOR if i in answer else OTHER_COLOR for i in range(n)]
    for r, ax in enumerate(axes[:, 0]):
        idx = list(range(r * per_row, min(n, (r + 1) * per_row)))
        ax.bar(idx, [probs[i] for i in idx], color=[colors[i] for i in idx])
        ax.set_xticks(idx, [token_label(tokens[i]) for i in idx], rotation=90, fontsize=MIN_TICK_PT + 1)
        for tick, i in zip(ax.get_xticklabels(), idx):
            tick.set_fontweight("bold" if i in answer else "normal")
        ax.set_xlim(idx[0] - 0.7, idx[0] + per_row - 0.3) if idx else None
        ax.set(ylabel="probability" if rows > 1 else "probability of the chosen token", ylim=(0, 1.02))
        ax.grid(axis="x", visible=False)
    axes[0, 0].set_title(title or f"Token probabilities; answer tokens in {ANSWER_COLOR_NAME}")
    # under the token labels: inside the axes, the legend covered the bars wherever it went
    fig.legend(handles=[Patch(color=ANSWER_COLOR, label=f"answer token ({ANSWER_COLOR_NAME})"),
                        Patch(color=OTHER_COLOR, label=f"other token ({OTHER_COLOR_NAME})")],
               loc="lower center", ncol=2, frameon=False)
    fig.tight_layout(rect=(0, 0.07 / rows, 1, 1))
    return fig
