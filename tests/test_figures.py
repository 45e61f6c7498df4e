"""The size rule of every figure (issue 67, item 5: readable at a projector, a page about 1,000
pixels wide): at most ``plots.MAX_WIDTH_IN`` inches at the book's 100 dpi, tick labels at least
``plots.MIN_TICK_PT`` points; checked on the style, on a drawn figure and on every PNG under figures/."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

from lase_nb import plots  # noqa: E402

FIGURES = Path(__file__).resolve().parents[1] / "figures"


@pytest.fixture(autouse=True)
def _own_rc():
    """The house style applied here stays here: other tests place labels at matplotlib's defaults."""
    with matplotlib.rc_context():
        yield
#: Committed figures drawn by code another change owns, still wider than the rule: the test of each
#: is an expected failure until that code is fixed (take it off this list then).
STILL_WIDE: dict[str, str] = {}


def test_the_style_keeps_tick_labels_readable():
    import matplotlib as mpl

    plots.set_style()
    assert mpl.rcParams["figure.dpi"] == plots.BOOK_DPI == 100
    for key in ("xtick.labelsize", "ytick.labelsize"):
        size = mpl.rcParams[key]
        size = size if isinstance(size, (int, float)) else mpl.font_manager.FontProperties(size=size).get_size_in_points()
        assert size >= plots.MIN_TICK_PT, (key, size)


def test_size_problems_names_a_wide_figure_and_small_ticks():
    import matplotlib.pyplot as plt

    plots.set_style()
    fig, ax = plt.subplots(figsize=(15, 4))
    ax.set_xticks([0, 1], ["a", "b"], fontsize=8)
    assert plots.size_problems(fig) == ["15 inches wide > 12", "tick labels at 8 pt < 10"]
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(plots.MAX_WIDTH_IN, 4))
    ax.plot([0, 1], [0, 1])
    assert plots.size_problems(fig) == []
    plt.close(fig)


@pytest.mark.parametrize("n", [6, 24, 170])
def test_token_bars_keep_the_size_rule_by_wrapping_a_long_reply(n: int):
    """Chapter 00's token figure: one label per token at the style's size, within 12 inches; a
    reply longer than a row wraps onto further rows, every token shown once."""
    import matplotlib.pyplot as plt

    plots.set_style()
    tokens = [f"t{i}" for i in range(n)]
    fig = plots.token_bars(tokens, [0.5] * n, {n - 2})
    assert plots.size_problems(fig) == []
    shown = [t.get_text() for ax in fig.axes for t in ax.get_xticklabels()]
    assert shown == tokens and len(fig.axes) == -(-n // plots.TOKENS_PER_ROW)
    plt.close(fig)


@pytest.mark.parametrize("png", sorted(FIGURES.glob("*.png")), ids=lambda p: p.name)
def test_every_committed_figure_keeps_the_size_rule(png: Path):
    """Each PNG under figures/ (saved at ``plots.SAVE_DPI``) is at most 1,200 pixels wide at the
    book's 100 dpi, that is at most ``MAX_WIDTH_IN`` inches."""
    from PIL import Image

    if png.name in STILL_WIDE:
        pytest.xfail(f"{png.name}: {STILL_WIDE[png.name]}")
    width = Image.open(png).size[0] / plots.SAVE_DPI * plots.BOOK_DPI
    assert width <= plots.MAX_WIDTH_IN * plots.BOOK_DPI, f"{png.name} is {width:.0f} px wide at {plots.BOOK_DPI} dpi"
