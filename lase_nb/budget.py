"""What a lecturer presents of an executed chapter, and how long it takes: the cell tags the book
reads, the chapter budget (cells, words, tables, figures), the lecturer's clock and the seminar
path (the cells tagged ``seminar``). Executing the chapters is :mod:`lase_nb.execution`; the HTML
book that shows them is :mod:`lase_nb.book`."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

# --------------------------------------------------------------------------------------------
# the cells a lecturer shows: the book's tags
# --------------------------------------------------------------------------------------------

#: Cell tag: the book drops the cell (widget-only code, setup a lecturer does not show). The
#: notebook keeps it, and JupyterLab runs it as usual.
BOOK_HIDE = "book-hide"
#: Cell tag: the book shows the cell inside a "More" section rendered closed (a ``<details>``
#: element); consecutive tagged cells share one section. Such cells are not presented, so the
#: chapter budget (:func:`chapter_budget`) leaves them out.
BOOK_MORE = "book-more"
#: Tags of cells the book never shows: the chapter's own parameters cell, papermill's injected
#: parameters and its error banner, and :data:`BOOK_HIDE`.
HIDDEN_TAGS = ("parameters", "injected-parameters", "papermill-error-cell-tag", BOOK_HIDE)
#: Cell tag: the cell is on the seminar path, the part of a chapter a lecturer presents in class
#: (:func:`seminar_minutes`); the rest of the chapter is reading. ``lase-nb book --seminar``
#: builds the path alone; the full book marks it. A cell is never both :data:`SEMINAR` and
#: :data:`BOOK_MORE` (a closed "More" section is not presented).
SEMINAR = "seminar"

#: A code cell that only builds widgets: it starts with ``if interactive`` and showed nothing.
_WIDGET_ONLY = re.compile(r"\A(?:\s*#[^\n]*\n)*\s*if\s+interactive\b")
#: Cell tag: the book shows the cell's output but not its code (a loader a lecturer does not read
#: out). A chapter's set-up cell, the code cell that starts with its imports, is treated the same.
BOOK_HIDE_INPUT = "book-hide-input"
#: A set-up cell: its first line of code is an import.
_SETUP = re.compile(r"\A(?:\s*#[^\n]*\n)*\s*(?:import|from)\s")


def book_hides_input(cell: Mapping[str, Any]) -> bool:
    """Whether the book shows ``cell``'s outputs without its code: a code cell tagged
    :data:`BOOK_HIDE_INPUT`, or a set-up cell (it starts with an import)."""
    return cell.get("cell_type") == "code" and (BOOK_HIDE_INPUT in cell_tags(cell)
                                                 or bool(_SETUP.match(str(cell.get("source", "")))))


def cell_tags(cell: Mapping[str, Any]) -> list[str]:
    """The tags of a notebook cell."""
    return list(cell.get("metadata", {}).get("tags", []))


def _is_empty(cell: Mapping[str, Any]) -> bool:
    return not str(cell.get("source", "")).strip() and not cell.get("outputs")


def book_hides(cell: Mapping[str, Any]) -> bool:
    """Whether the book leaves ``cell`` out: a tag of :data:`HIDDEN_TAGS`, an empty cell, or a code
    cell that only builds widgets (it starts with ``if interactive`` and has no output)."""
    if set(cell_tags(cell)) & set(HIDDEN_TAGS) or _is_empty(cell):
        return True
    return (cell.get("cell_type") == "code" and not cell.get("outputs")
            and bool(_WIDGET_ONLY.match(str(cell.get("source", "")))))



LINK_TARGET = re.compile(r"\]\([^)]*\)")
_HTML_TAG = re.compile(r"<[^>]+>")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
_MD_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
IMAGE_TYPES = ("image/png", "image/jpeg", "image/svg+xml")


def count_words(markdown: str) -> int:
    """Words a reader reads in ``markdown``: whitespace-separated tokens holding a letter or digit,
    after dropping HTML comments and tags and link targets (``[text](target)`` counts its text)."""
    text = _HTML_TAG.sub(" ", _HTML_COMMENT.sub(" ", LINK_TARGET.sub("]", markdown)))
    return sum(1 for tok in text.split() if any(ch.isalnum() for ch in tok))


def markdown_tables(markdown: str) -> list[int]:
    """The column count of each table in ``markdown`` (a header row followed by a ``|---|`` rule)."""
    lines = markdown.splitlines()
    out = []
    for head, rule in zip(lines, lines[1:]):
        if "|" in head and "|" in rule and _MD_TABLE_RULE.match(rule):
            cells = head.strip().strip("|").split("|")
            out.append(len(cells))
    return out


def html_tables(text: str) -> list[int]:
    """The column count of each ``<table>`` in ``text``: its widest row, ``colspan`` counted, the
    index columns of a pandas table included (a reader sees them)."""
    from html.parser import HTMLParser

    class Tables(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.widths: list[int] = []
            self.stack: list[int] = []
            self.row = 0

        def handle_starttag(self, tag, attrs):
            if tag == "table":
                self.stack.append(0)
            elif tag == "tr" and self.stack:
                self.row = 0
            elif tag in ("td", "th") and self.stack:
                span = dict(attrs).get("colspan") or "1"
                self.row += int(span) if str(span).isdigit() else 1
                self.stack[-1] = max(self.stack[-1], self.row)

        def handle_endtag(self, tag):
            if tag == "table" and self.stack:
                self.widths.append(self.stack.pop())

    parser = Tables()
    parser.feed(text)
    return parser.widths


def cell_text(value: Any) -> str:
    """A cell's source or an output's text as one string (notebooks store either a string or a list of lines)."""
    return "".join(value) if isinstance(value, list) else str(value)


# --------------------------------------------------------------------------------------------
# the chapter budget and the lecturer's clock
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Budget:
    """The limits of a core chapter (DESIGN.md, "Studies, chapters and the ceiling"; issue 43)."""

    cells: int = 40
    words: int = 1500
    tables: int = 5
    columns: int = 6
    figures: int = 5
    core_words: int = 11_000


BUDGET = Budget()

#: The lecturer's clock (:func:`presenting_minutes`, issue 56), the rates of the slowest of three
#: readers who presented the executed chapters (DESIGN.md, last paragraph; they counted 131, 133 and
#: 227 minutes for what the earlier clock, 170 words a minute and a minute a figure, called 90):
#: markdown read aloud at 130 words a minute, half the printed text read out at that rate, 2
#: minutes a figure or slider panel, 1 a table, 1.5 a predict-then-run pause, 0.75 a transcript.
WORDS_PER_MINUTE = 130
PRINTED_SHARE = 0.5
MINUTES_PER_FIGURE = 2.0
MINUTES_PER_TABLE = 1.0
MINUTES_PER_PAUSE = 1.5
MINUTES_PER_TRANSCRIPT = 0.75
#: The seminar slot (minutes): the seminar path's cells plus :data:`DISCUSSION_MINUTES` fit in it.
CORE_MINUTES = 90
#: Minutes of the slot left for questions and discussion (the lecturer's proposal, issue 56).
DISCUSSION_MINUTES = 9
#: What a predict-then-run pause says in a markdown cell (the room predicts before the cell runs).
PREDICT_MARK = "Predict, then run."


def presenting_minutes(words: int, printed_words: int = 0, figures: int = 0, tables: int = 0,
                       pauses: int = 0, transcripts: int = 0) -> float:
    """Minutes a lecturer needs to present what was counted, by the lecturer's clock.

    The markdown's ``words`` read aloud at :data:`WORDS_PER_MINUTE` (130 a minute), the share
    :data:`PRINTED_SHARE` (half) of the ``printed_words`` the code printed as prose read out at the
    same rate, each figure or slider panel :data:`MINUTES_PER_FIGURE` (2), each table
    :data:`MINUTES_PER_TABLE` (1), each predict-then-run pause :data:`MINUTES_PER_PAUSE` (1.5) and
    each transcript :data:`MINUTES_PER_TRANSCRIPT` (0.75). On the executed chapters as the book
    shows them (everything open presented) this clock gives about the slowest reader's 227
    minutes (``benchmarks/chapter_budget.py`` prints it). Code cells take no time of their own
    (the book hides set-up code; the rest is shown while its result is explained), nor do cells in
    the book's closed "More" sections (not presented).
    """
    return ((words + PRINTED_SHARE * printed_words) / WORDS_PER_MINUTE + MINUTES_PER_FIGURE * figures
            + MINUTES_PER_TABLE * tables + MINUTES_PER_PAUSE * pauses + MINUTES_PER_TRANSCRIPT * transcripts)


@dataclass(frozen=True)
class ChapterBudget:
    """What one executed chapter presents (:func:`chapter_budget`): the cells the book shows open,
    the words of their markdown, the words printed as prose, the tables and figures shown, the
    predict-then-run pauses and the transcripts."""

    chapter: str
    code_cells: int
    markdown_cells: int
    words: int
    printed_words: int
    table_columns: tuple[int, ...]
    figures: int
    more_cells: int = 0
    pauses: int = 0
    transcripts: int = 0

    @property
    def cells(self) -> int:
        return self.code_cells + self.markdown_cells

    @property
    def tables(self) -> int:
        return len(self.table_columns)

    @property
    def max_columns(self) -> int:
        return max(self.table_columns, default=0)

    @property
    def minutes(self) -> float:
        return presenting_minutes(self.words, self.printed_words, self.figures, self.tables, self.pauses,
                                  self.transcripts)

    def over(self, budget: Budget = BUDGET) -> list[str]:
        """What exceeds ``budget``, in words (empty when the chapter meets it)."""
        wide = [c for c in self.table_columns if c > budget.columns]
        return [msg for bad, msg in (
            (self.cells > budget.cells, f"{self.cells} cells > {budget.cells}"),
            (self.words > budget.words, f"{self.words} words of markdown > {budget.words}"),
            (self.tables > budget.tables, f"{self.tables} tables > {budget.tables}"),
            (bool(wide), f"{len(wide)} table{'s' if len(wide) != 1 else ''} wider than {budget.columns} "
                         f"columns (widest {self.max_columns})"),
            (self.figures > budget.figures, f"{self.figures} figures > {budget.figures}")) if bad]

    def meets(self, budget: Budget = BUDGET) -> bool:
        return not self.over(budget)


def is_panel(output: Mapping[str, Any]) -> bool:
    """Whether a cell output is a kernel-free slider panel (:mod:`lase_nb.panels`), which the book
    shows as it is and the budget counts as a figure."""
    from .panels import PANEL_CLASS

    return f'class="{PANEL_CLASS}"' in cell_text((output.get("data") or {}).get("text/html", ""))


def _read(nb: Path | Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    import nbformat

    if isinstance(nb, (str, Path)):
        return Path(nb).stem, nbformat.read(str(nb), as_version=4)
    return str(nb.get("metadata", {}).get("lase_nb", {}).get("name", "notebook")), nb


def chapter_budget(nb: Path | Mapping[str, Any], only: str | None = None) -> ChapterBudget:
    """Count what an executed chapter presents, as the book shows it (:func:`book_hides` cells left
    out, :data:`BOOK_MORE` cells counted apart): code and markdown cells, words of markdown
    (:func:`count_words`), words printed as prose (``text/markdown`` outputs and printed text),
    tables shown (pandas/HTML tables in outputs and markdown tables, with their columns), figures
    shown (image outputs and slider panels, :func:`is_panel`), predict-then-run pauses
    (:data:`PREDICT_MARK`) and transcripts (:data:`lase_nb.transcripts.TRANSCRIPT_MARK`).
    ``nb``: a path or a notebook already read; ``only``: count only the cells with this tag
    (:data:`SEMINAR`: the seminar path, :func:`seminar_budget`)."""
    from .transcripts import TRANSCRIPT_MARK

    name, node = _read(nb)
    code = md = words = printed = figures = more = pauses = said = 0
    columns: list[int] = []
    for cell in node["cells"]:
        if book_hides(cell) or (only is not None and only not in cell_tags(cell)):
            continue
        if BOOK_MORE in cell_tags(cell):
            more += 1
            continue
        source = cell_text(cell.get("source", ""))
        if cell["cell_type"] == "markdown":
            md += 1
            words += count_words(source)
            columns += markdown_tables(source)
            pauses += PREDICT_MARK in source
            continue
        if cell["cell_type"] != "code":
            continue
        code += 1
        for o in cell.get("outputs", []) or []:
            data = o.get("data", {}) or {}
            if o.get("output_type") == "stream":
                printed += count_words(cell_text(o.get("text", "")))
            elif any(k in data for k in IMAGE_TYPES) or is_panel(o):
                figures += 1
            elif any(TRANSCRIPT_MARK in cell_text(data.get(k, "")) for k in ("text/markdown", "text/html")):
                said += 1
            elif "text/html" in data and "<table" in cell_text(data["text/html"]):
                columns += html_tables(cell_text(data["text/html"]))
            elif "text/markdown" in data:
                text = cell_text(data["text/markdown"])
                columns += markdown_tables(text)
                printed += count_words(text)
    return ChapterBudget(name, code, md, words, printed, tuple(columns), figures, more, pauses, said)


def budget_table(chapters: Sequence[Path], budget: Budget = BUDGET) -> list[dict[str, Any]]:
    """One row per executed chapter of :func:`chapter_budget` with whether it meets ``budget``, the
    minutes of the whole chapter and those of its seminar path (:func:`seminar_budget`)."""
    rows = []
    for nb in chapters:
        b = chapter_budget(nb)
        rows.append({"chapter": b.chapter, "cells": b.cells, "words": b.words, "printed words": b.printed_words,
                     "tables": b.tables, "max columns": b.max_columns, "figures": b.figures,
                     "minutes": round(b.minutes), "seminar": round(seminar_budget(nb).minutes),
                     "meets budget": b.meets(budget), "over": "; ".join(b.over(budget))})
    return rows


# --------------------------------------------------------------------------------------------
# the seminar path: the cells tagged ``seminar``
# --------------------------------------------------------------------------------------------

#: A section heading's number (``## 2.3 The gate`` -> ``2.3``; ``# 00 · Quickstart`` -> ``00``).
_SECTION = re.compile(r"^#+\s*((?:\d+|A\d+)(?:\.\d+)*)\b")


def seminar_budget(nb: Path | Mapping[str, Any]) -> ChapterBudget:
    """What the seminar path presents of an executed chapter: :func:`chapter_budget` of the cells
    tagged :data:`SEMINAR` alone."""
    return chapter_budget(nb, only=SEMINAR)


def seminar_minutes(chapters: Sequence[Path]) -> dict[str, float]:
    """Minutes of each executed chapter's seminar path by the lecturer's clock (0 when it presents
    nothing); with :data:`DISCUSSION_MINUTES`, their sum must fit :data:`CORE_MINUTES`."""
    return {Path(nb).stem: seminar_budget(nb).minutes for nb in chapters}


def seminar_sections(nb: Path | Mapping[str, Any]) -> list[str]:
    """The numbers of the sections the seminar path presents (``["2.2", "2.3"]``; a chapter's own
    number when it presents its opening), from the headings of the :data:`SEMINAR` cells, in order.
    Reads a notebook or a jupytext source (``.py``)."""
    if isinstance(nb, (str, Path)) and Path(nb).suffix == ".py":
        import jupytext

        node: Mapping[str, Any] = jupytext.read(str(nb))
    else:
        node = _read(nb)[1]
    found: list[str] = []
    for cell in node["cells"]:
        if cell["cell_type"] != "markdown" or SEMINAR not in cell_tags(cell):
            continue
        for line in cell_text(cell["source"]).splitlines():
            m = _SECTION.match(line)
            if m and m.group(1) not in found:
                found.append(m.group(1))
    return found


def inline_images(nb_path: Path) -> int:
    """Number of ``image/png`` outputs in an executed notebook."""
    data = json.loads(Path(nb_path).read_text())
    return sum("image/png" in o.get("data", {}) for c in data["cells"] for o in c.get("outputs", []))


def plural(n: int, word: str, many: str | None = None) -> str:
    """``"1 figure"``, ``"2 figures"``."""
    return f"{n} {word if n == 1 else many or word + 's'}"
