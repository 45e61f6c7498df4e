"""What a lecturer presents of an executed chapter, and how long it takes: the cell tags the book
reads, the chapter budget (cells, words, tables, figures), the lecturer's clock and the seminar
path (the cells tagged ``seminar``). Executing the chapters is :mod:`lase_nb.book.execution`; the HTML
book that shows them is :mod:`lase_nb.book.html`."""

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


#: Code a lecturer skips (issue 67): fenced blocks (a command line, a listing) and inline code spans.
_FENCED = re.compile(r"^\s*(```|~~~).*?^\s*\1[^\n]*$", re.S | re.M)
_INLINE_CODE = re.compile(r"`[^`\n]+`")
#: A printed line that is a command, not a result (a lecturer skips it): a shell prompt or a command name first.
_COMMAND_LINE = re.compile(r"^\s*(?:\$ |>>> |(?:lase-nb|python3?|papermill|make|pip|git|jupyter)\s)")


def count_words(markdown: str, *, skip_code: bool = False) -> int:
    """Words a reader reads in ``markdown``: whitespace-separated tokens holding a letter or digit,
    after dropping HTML comments and tags and link targets (``[text](target)`` counts its text).
    ``skip_code``: also drop fenced code blocks and inline code spans (the lecturer's clock skips them)."""
    if skip_code:
        markdown = _INLINE_CODE.sub(" ", _FENCED.sub(" ", markdown))
    text = _HTML_TAG.sub(" ", _HTML_COMMENT.sub(" ", LINK_TARGET.sub("]", markdown)))
    return sum(1 for tok in text.split() if any(ch.isalnum() for ch in tok))


def printed_words(text: str) -> int:
    """Words of printed results a lecturer reads out: :func:`count_words` of ``text`` without its
    command lines (``$ ...``, ``lase-nb ...``, ``python ...``)."""
    return count_words("\n".join(line for line in text.splitlines() if not _COMMAND_LINE.match(line)))


def markdown_tables(markdown: str) -> list[int]:
    """The column count of each table in ``markdown`` (a header row followed by a ``|---|`` rule)."""
    return [cols for _, cols in markdown_table_shapes(markdown)]


def markdown_table_shapes(markdown: str) -> list[tuple[int, int]]:
    """``(body rows, columns)`` of each table in ``markdown`` (a header row followed by a ``|---|`` rule)."""
    lines = markdown.splitlines()
    out = []
    for i, (head, rule) in enumerate(zip(lines, lines[1:])):
        if "|" in head and "|" in rule and _MD_TABLE_RULE.match(rule):
            rows = 0
            for line in lines[i + 2:]:
                if "|" not in line or not line.strip():
                    break
                rows += 1
            out.append((rows, len(head.strip().strip("|").split("|"))))
    return out


def html_tables(text: str) -> list[int]:
    """The column count of each ``<table>`` in ``text``: its widest row, ``colspan`` counted, the
    index columns of a pandas table included (a reader sees them)."""
    return [cols for _, cols in html_table_shapes(text)]


def html_table_shapes(text: str) -> list[tuple[int, int]]:
    """``(body rows, columns)`` of each ``<table>`` in ``text``: rows inside ``<tbody>`` (every row
    but the first where there is none), columns of the widest row with ``colspan`` counted."""
    from html.parser import HTMLParser

    class Tables(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.shapes: list[tuple[int, int]] = []
            self.stack: list[list[int]] = []  # per open table: widest row, rows, body rows, in tbody
            self.row = 0

        def handle_starttag(self, tag, attrs):
            if tag == "table":
                self.stack.append([0, 0, 0, 0])
            elif not self.stack:
                return
            elif tag == "tbody":
                self.stack[-1][3] = 1
            elif tag == "tr":
                self.row = 0
                self.stack[-1][1] += 1
                self.stack[-1][2] += self.stack[-1][3]
            elif tag in ("td", "th"):
                span = dict(attrs).get("colspan") or "1"
                self.row += int(span) if str(span).isdigit() else 1
                self.stack[-1][0] = max(self.stack[-1][0], self.row)

        def handle_endtag(self, tag):
            if tag == "table" and self.stack:
                cols, rows, body, tbody = self.stack.pop()
                self.shapes.append((body if tbody else max(rows - 1, 0), cols))

    parser = Tables()
    parser.feed(text)
    return parser.shapes


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

#: The lecturer's clock (:func:`presenting_minutes`), the outside lecturer's rates (issue 67; they
#: prepared the seminar from ``make seminar``'s pages and counted 122 minutes where the earlier
#: clock, issue 56's, said 76): prose and printed results read at 120 words a minute, command lines
#: and code skipped; 3 minutes a multi-panel figure, 2 a single-panel one, 2.5 a slider panel; 1 to
#: 3 a table by its size (:func:`table_minutes`); 2 a predict-then-run pause; 1.5 a transcript
#: exchange (:func:`transcript_exchanges`); 1.5 for each term the seminar path uses before it defines it
#: (:data:`TERMS`, :func:`first_uses`).
WORDS_PER_MINUTE = 120
MINUTES_PER_FIGURE = 2.0
MINUTES_PER_MULTI_FIGURE = 3.0
MINUTES_PER_SLIDER = 2.5
MINUTES_PER_PAUSE = 2.0
MINUTES_PER_EXCHANGE = 1.5
MINUTES_PER_UNDEFINED_TERM = 1.5
#: A table's minutes by its size, cells of its body (rows x columns): at most 24 cells 1 minute, at
#: most 60 cells 2, larger 3.
TABLE_MINUTES: tuple[tuple[float, float], ...] = ((24, 1.0), (60, 2.0), (float("inf"), 3.0))
#: The seminar slot (minutes): the seminar path's cells plus :data:`DISCUSSION_MINUTES` fit in it.
CORE_MINUTES = 90
#: Minutes of the slot left for questions and discussion (the lecturer's proposal, issue 56).
DISCUSSION_MINUTES = 9
#: What a predict-then-run pause says in a markdown cell (the room predicts before the cell runs).
PREDICT_MARK = "Predict, then run."
#: A supporter's call in a transcript (:func:`lase_nb.transcripts.render_transcript` heads each call
#: ``Stage N · role``; a supporter speaks at a stage after 0 and is not the leader).
_SUPPORTER_CALL = re.compile(r"Stage [1-9]\d* · (?!leader\b)")


#: A printed question followed by the model's reply (chapter 00's first call): one exchange on the
#: clock, as a transcript's is, its words priced by the exchange.
_REPLY_SHOWN = re.compile(r"\Aquestion: .+?\n\s*\nreply:\n", re.S)


def transcript_exchanges(text: str) -> int:
    """The exchanges of one transcript on the clock: a supporter's note with the revision that
    reads it is one, and a transcript without a note (a leader's answer alone) counts one."""
    return max(1, len(_SUPPORTER_CALL.findall(text)))


def table_minutes(rows: int, columns: int) -> float:
    """Minutes a lecturer spends on a table of ``rows`` body rows and ``columns`` columns
    (:data:`TABLE_MINUTES`: 1 to 3 by its cells)."""
    return next(m for most, m in TABLE_MINUTES if rows * columns <= most)


def presenting_minutes(words: int, printed_words: int = 0, figures: int = 0, tables: Sequence[tuple[int, int]] = (),
                       pauses: int = 0, exchanges: int = 0, *, multi_figures: int = 0, sliders: int = 0,
                       undefined: int = 0) -> float:
    """Minutes a lecturer needs to present what was counted, by the lecturer's clock.

    The markdown's ``words`` and the ``printed_words`` (results the code printed, command lines
    left out) read at :data:`WORDS_PER_MINUTE` (120 a minute); ``figures`` single-panel figures at
    :data:`MINUTES_PER_FIGURE` (2), ``multi_figures`` multi-panel ones at
    :data:`MINUTES_PER_MULTI_FIGURE` (3), ``sliders`` slider panels at :data:`MINUTES_PER_SLIDER`
    (2.5); each table of ``tables`` (``(rows, columns)``) by :func:`table_minutes`; each
    predict-then-run pause :data:`MINUTES_PER_PAUSE` (2); each transcript exchange
    :data:`MINUTES_PER_EXCHANGE` (1.5; :func:`transcript_exchanges`); each of ``undefined`` terms
    used before the path defines them :data:`MINUTES_PER_UNDEFINED_TERM` (1.5). Code cells take no time of their own (the book
    hides set-up code; the rest is shown while its result is explained), nor do cells in the
    book's closed "More" sections (not presented).
    """
    return ((words + printed_words) / WORDS_PER_MINUTE + MINUTES_PER_FIGURE * figures
            + MINUTES_PER_MULTI_FIGURE * multi_figures + MINUTES_PER_SLIDER * sliders
            + sum(table_minutes(r, c) for r, c in tables) + MINUTES_PER_PAUSE * pauses
            + MINUTES_PER_EXCHANGE * exchanges + MINUTES_PER_UNDEFINED_TERM * undefined)


@dataclass(frozen=True)
class ChapterBudget:
    """What one executed chapter (or one section of it) presents (:func:`chapter_budget`): the
    cells the book shows open, the words of their markdown (code skipped), the words printed as
    results, the tables shown (``(rows, columns)``), the figures shown (images and slider panels;
    ``multi_figures`` of the images have several panels, ``sliders`` are panels), the
    predict-then-run pauses, the transcript exchanges, and the terms charged as used before the
    path defines them (``undefined``, :func:`first_uses`)."""

    chapter: str
    code_cells: int
    markdown_cells: int
    words: int
    printed_words: int
    table_shapes: tuple[tuple[int, int], ...]
    figures: int
    more_cells: int = 0
    pauses: int = 0
    exchanges: int = 0
    multi_figures: int = 0
    sliders: int = 0
    undefined: tuple[str, ...] = ()

    @property
    def cells(self) -> int:
        return self.code_cells + self.markdown_cells

    @property
    def table_columns(self) -> tuple[int, ...]:
        return tuple(c for _, c in self.table_shapes)

    @property
    def tables(self) -> int:
        return len(self.table_shapes)

    @property
    def max_columns(self) -> int:
        return max(self.table_columns, default=0)

    @property
    def minutes(self) -> float:
        return presenting_minutes(self.words, self.printed_words, self.figures - self.multi_figures - self.sliders,
                                  self.table_shapes, self.pauses, self.exchanges, multi_figures=self.multi_figures,
                                  sliders=self.sliders, undefined=len(self.undefined))

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
    """Whether a cell output is a kernel-free slider panel (:mod:`lase_nb.book.panels`), which the book
    shows as it is and the budget counts as a figure."""
    from .panels import PANEL_CLASS

    return f'class="{PANEL_CLASS}"' in cell_text((output.get("data") or {}).get("text/html", ""))


#: What matplotlib's inline backend writes beside a figure: ``<Figure size 1000x600 with 3 Axes>``.
_AXES = re.compile(r"with (\d+) Axes")


def figure_panels(output: Mapping[str, Any]) -> int:
    """The panels (Axes) of a figure output, from the inline backend's text (1 when it says none)."""
    m = _AXES.search(cell_text((output.get("data") or {}).get("text/plain", "")))
    return int(m.group(1)) if m else 1


def _read(nb: Path | Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """A notebook's name and cells: an executed ``.ipynb``, a jupytext source (``.py``, no outputs)
    or a notebook already read."""
    if isinstance(nb, (str, Path)):
        if Path(nb).suffix == ".py":
            import jupytext

            return Path(nb).stem, jupytext.read(str(nb))
        import nbformat

        return Path(nb).stem, nbformat.read(str(nb), as_version=4)
    return str(nb.get("metadata", {}).get("lase_nb", {}).get("name", "notebook")), nb


def _is_transcript(output: Mapping[str, Any]) -> bool:
    from ..transcripts import TRANSCRIPT_MARK

    data = output.get("data", {}) or {}
    return any(TRANSCRIPT_MARK in cell_text(data.get(k, "")) for k in ("text/markdown", "text/html"))


def _count(name: str, cells: Sequence[Mapping[str, Any]], undefined: Sequence[str] = ()) -> ChapterBudget:
    """:class:`ChapterBudget` of ``cells`` as the book shows them (the caller picks the cells)."""
    code = md = words = printed = figures = multi = sliders = more = pauses = said = 0
    shapes: list[tuple[int, int]] = []
    for cell in cells:
        if BOOK_MORE in cell_tags(cell):
            more += 1
            continue
        source = cell_text(cell.get("source", ""))
        if cell["cell_type"] == "markdown":
            md += 1
            words += count_words(source, skip_code=True)
            shapes += markdown_table_shapes(source)
            pauses += PREDICT_MARK in source
            continue
        if cell["cell_type"] != "code":
            continue
        code += 1
        for o in cell.get("outputs", []) or []:
            data = o.get("data", {}) or {}
            if o.get("output_type") == "stream":
                text = cell_text(o.get("text", ""))
                if _REPLY_SHOWN.match(text):
                    said += 1
                else:
                    printed += printed_words(text)
            elif is_panel(o):
                figures += 1
                sliders += 1
            elif any(k in data for k in IMAGE_TYPES):
                figures += 1
                multi += figure_panels(o) > 1
            elif _is_transcript(o):
                said += transcript_exchanges(cell_text(data.get("text/markdown") or data.get("text/html")))
            elif "text/html" in data and "<table" in cell_text(data["text/html"]):
                shapes += html_table_shapes(cell_text(data["text/html"]))
            elif "text/markdown" in data:
                text = cell_text(data["text/markdown"])
                shapes += markdown_table_shapes(text)
                printed += count_words(text, skip_code=True)
    return ChapterBudget(name, code, md, words, printed, tuple(shapes), figures, more, pauses, said, multi, sliders,
                         tuple(undefined))


def _shown(node: Mapping[str, Any], only: str | None) -> list[Mapping[str, Any]]:
    """The cells the book shows (:func:`book_hides` left out), those tagged ``only`` when given."""
    return [c for c in node["cells"] if not book_hides(c) and (only is None or only in cell_tags(c))]


def chapter_budget(nb: Path | Mapping[str, Any], only: str | None = None) -> ChapterBudget:
    """Count what an executed chapter presents, as the book shows it (:func:`book_hides` cells left
    out, :data:`BOOK_MORE` cells counted apart): code and markdown cells, words of markdown
    (:func:`count_words`, code skipped), words printed as results (:func:`printed_words` of printed
    text, and ``text/markdown`` outputs), tables shown (pandas/HTML tables in outputs and markdown
    tables, with their rows and columns), figures shown (image outputs, with their panels, and
    slider panels, :func:`is_panel`), predict-then-run pauses (:data:`PREDICT_MARK`) and
    transcript exchanges (outputs marked :data:`lase_nb.transcripts.TRANSCRIPT_MARK`, counted by
    :func:`transcript_exchanges`).
    ``nb``: a path or a notebook already read; ``only``: count only the cells with this tag
    (:data:`SEMINAR`: the seminar path, :func:`seminar_budget`). Terms used before they are
    defined are a property of the whole path, charged by :func:`seminar_minutes`."""
    name, node = _read(nb)
    return _count(name, _shown(node, only))


def budget_table(chapters: Sequence[Path], budget: Budget = BUDGET) -> list[dict[str, Any]]:
    """One row per executed chapter of :func:`chapter_budget` with whether it meets ``budget``, the
    minutes of the whole chapter and those of its seminar path (:func:`seminar_minutes`: the path
    is read in the order of ``chapters``)."""
    path = seminar_minutes(chapters)
    rows = []
    for nb in chapters:
        b = chapter_budget(nb)
        rows.append({"chapter": b.chapter, "cells": b.cells, "words": b.words, "printed words": b.printed_words,
                     "tables": b.tables, "max columns": b.max_columns, "figures": b.figures,
                     "minutes": round(b.minutes), "seminar": round(path[Path(nb).stem]),
                     "meets budget": b.meets(budget), "over": "; ".join(b.over(budget))})
    return rows


# --------------------------------------------------------------------------------------------
# the seminar path: the cells tagged ``seminar``
# --------------------------------------------------------------------------------------------

#: A section heading's number (``## 2.3 The gate`` -> ``2.3``; ``# 00 · Quickstart`` -> ``00``).
_SECTION = re.compile(r"^#+\s*((?:\d+|A\d+)(?:\.\d+)*)\b")


def _headings(cell: Mapping[str, Any]) -> list[str]:
    if cell.get("cell_type") != "markdown":
        return []
    return [m.group(1) for line in cell_text(cell.get("source", "")).splitlines() if (m := _SECTION.match(line))]


def cell_sections(nb: Path | Mapping[str, Any]) -> list[str]:
    """The section of each cell of a notebook: the number of the last numbered heading at or
    before it (the chapter's own number, as its name writes it, before its first section)."""
    return _sections(*_read(nb))


def _sections(name: str, node: Mapping[str, Any]) -> list[str]:
    current, out = name[:2], []
    for cell in node["cells"]:
        heads = [h if "." in h else name[:2] for h in _headings(cell)]  # "# 3. Title": the chapter, "03"
        current = heads[0] if heads else current  # a cell's text belongs to its first heading
        out.append(current)
        current = heads[-1] if heads else current
    return out


def seminar_budget(nb: Path | Mapping[str, Any]) -> ChapterBudget:
    """What the seminar path presents of an executed chapter: :func:`chapter_budget` of the cells
    tagged :data:`SEMINAR` alone (without the charge for terms used before the path defines them,
    which :func:`seminar_minutes` adds over the whole path)."""
    return chapter_budget(nb, only=SEMINAR)


@dataclass(frozen=True)
class PathCell:
    """One cell of the seminar path: its chapter (a notebook's name), section and the cell."""

    chapter: str
    section: str
    cell: Mapping[str, Any]


def path_cells(chapters: Sequence[Path | Mapping[str, Any]]) -> list[PathCell]:
    """The seminar path in order: the cells tagged :data:`SEMINAR` that the book shows, chapter
    after chapter as given (executed ``.ipynb`` or jupytext sources)."""
    out = []
    for nb in chapters:
        name, node = _read(nb)
        for cell, section in zip(node["cells"], _sections(name, node)):
            if SEMINAR in cell_tags(cell) and not book_hides(cell) and BOOK_MORE not in cell_tags(cell):
                out.append(PathCell(name, section, cell))
    return out


def said_text(cell: Mapping[str, Any]) -> str:
    """What a lecturer says or shows of a cell in words: a markdown cell's text, a code cell's
    printed and displayed text (HTML tags dropped; transcripts, the model's own words, left out)."""
    if cell.get("cell_type") == "markdown":
        return cell_text(cell.get("source", ""))
    parts = []
    for o in cell.get("outputs", []) or []:
        data = o.get("data", {}) or {}
        if o.get("output_type") == "stream":
            parts.append(cell_text(o.get("text", "")))
        elif not _is_transcript(o) and not is_panel(o):
            text = data.get("text/markdown") or data.get("text/html") or ""
            parts.append(_HTML_TAG.sub(" ", cell_text(text)))
    return "\n".join(parts)


@dataclass(frozen=True)
class Term:
    """A term the seminar path uses: its ``name``, a regular expression that finds a use of it
    (case-sensitive unless it says ``(?i)``), and ``where``: the sections that define it (the
    book's definition first; a path that uses it first elsewhere uses it before defining it)."""

    name: str
    pattern: str
    where: tuple[str, ...]


#: The path's terms and where each is defined (issue 67, item 1: the lecturer counted the ones the
#: path uses before it defines them). A section number is where the definition is; "03" is a
#: chapter's opening, before its first section.
TERMS: tuple[Term, ...] = (
    Term("the gate", r"(?i)\bgate\b", ("00",)),
    Term("LP_min", r"LP_\{?min|LP\}?_\{\\min\}", ("00",)),
    Term("H_max", r"H_\{?max|H\}?_\{\\max\}", ("00",)),
    Term("uncertainty event U", r"(?i)uncertainty event|\bU ?= ?[01]\b|\$U=1\$", ("00",)),
    Term("confident error", r"(?i)confident(ly)? (error|wrong)", ("00", "2.4")),
    Term("supporter roles", r"(?i)\bsupporters?\b|devil|collaborator|senior expert", ("00", "1.0", "03")),
    Term("escalation", r"(?i)\bescalat", ("1.3", "2.4")),
    Term("martingale", r"(?i)martingale", ("1.1",)),
    Term("correct seed", r"(?i)correct seed", ("1.2",)),
    Term("Theorem 3.7", r"Theorem 3\.7", ("1.4",)),
    Term("AUROC", r"AUROC", ("2.3",)),
    Term("organism", r"(?i)\borganisms?\b", ("03", "3.4")),
    Term("pointing vs telling", r"(?i)\bpointing\b|\btelling\b", ("03", "3.4")),
    Term("v4/v5", r"\bv[45]\b", ("03", "3.4")),
    Term("v6", r"\bv6\b", ("3.4", "6.6")),
    Term("always-interact", r"(?i)always[- ]interact", ("3.4",)),
    Term("replay", r"(?i)\breplay", ("5.1", "5.2")),
    Term("Pareto front", r"(?i)pareto front", ("5.2",)),
    Term("oracle gate", r"(?i)\boracle\b", ("5.2",)),
    Term("MV(7)", r"\bMV\b", ("04", "5.2")),
    Term("MAD", r"\bMAD\b", ("04", "5.2")),
    Term("MoA", r"\bMoA\b", ("04", "7.1")),
    Term("DOWN", r"\bDOWN\b", ("04",)),
    Term("McNemar", r"McNemar", ("04", "3.4")),
    Term("preregistration", r"(?i)preregist", ("07", "3.4")),
    Term("verdict labels", r"\brefuted\b", ("07", "7.1")),
    Term("Holm", r"\bHolm", ("07", "7.1")),
    Term("stop rule", r"(?i)stop rule", ("6.6",)),
    # the outside lecturer's read of the path (issue 67, item 6) found these used before they were defined
    Term("tau_lp / tau_h", r"tau_lp|tau_h|\\tau_\{?(lp|h)|τ", ("00",)),
    Term("bootstrap", r"(?i)bootstrap", ("2.3", "3.4")),
    Term("Mann-Whitney", r"Mann-Whitney", ("2.3",)),
    Term("Fisher's exact test", r"Fisher", ("2.2",)),
    Term("Wilson interval", r"Wilson", ("5.2",)),
    Term("revision", r"(?i)\brevis(e|es|ed|ion|ions)\b", ("3.4",)),
    Term("strict grading", r"(?i)\bstrict\b", ("5.2",)),
    Term("LASE+MV", r"LASE\+MV", ("7.1",)),
    Term("too few problems", r"(?i)too few problems", ("7.1",)),
    Term("cascade", r"(?i)\bcascade", ("6.7",)),
    # the fourth outside read (after stop 68) found these used before they were defined
    Term("the paper (Yoa et al.)", r"(?i)\bthe paper\b", ("00",)),
    Term("\\boxed{}", r"\\boxed", ("00",)),
    Term("the start (initial accuracy)", r"(?i)\bthe start\b|\bstart \d+%", ("1.1",)),
    Term("peers", r"(?i)\bpeers?\b", ("1.3",)),
    Term("stage", r"(?i)\bstages?\b", ("1.3", "3.4")),
    Term("the embedded model", r"(?i)embedded model|SmolLM2", ("00", "2.2")),
    Term("arith", r"\barith\b", ("2.2",)),
    Term("the threshold grid", r"(?i)\bgrid\b", ("5.2",)),
    Term("single agent", r"(?i)\bsingle agent", ("6.7",)),
    Term("about equal", r"(?i)about equal", ("7.1",)),
    Term("not testable offline", r"(?i)not testable offline", ("7.1",)),
)


@dataclass(frozen=True)
class FirstUse:
    """Where the seminar path first uses a term (:func:`first_uses`), and whether that section
    defines it (``defined``: the path defines it at or before its first use)."""

    term: str
    chapter: str
    section: str
    defined: bool


def first_uses(chapters: Sequence[Path | Mapping[str, Any]], terms: Sequence[Term] = TERMS) -> list[FirstUse]:
    """The first use of each of ``terms`` on the seminar path (:func:`path_cells`, in order), and
    whether it is defined there: the cell of its first use lies in a section of the term's
    ``where`` (the path's first mention is its definition). A term the path never uses is left out."""
    cells = [(pc, said_text(pc.cell)) for pc in path_cells(chapters)]
    out = []
    for term in terms:
        rx = re.compile(term.pattern)
        hit = next((pc for pc, text in cells if rx.search(text)), None)
        if hit is not None:
            out.append(FirstUse(term.name, hit.chapter, hit.section, hit.section in term.where))
    return out


def undefined_terms(chapters: Sequence[Path | Mapping[str, Any]], terms: Sequence[Term] = TERMS) -> list[FirstUse]:
    """The terms the seminar path uses before it defines them (:func:`first_uses`), each charged
    :data:`MINUTES_PER_UNDEFINED_TERM` where it is first used."""
    return [u for u in first_uses(chapters, terms) if not u.defined]


def section_budgets(chapters: Sequence[Path]) -> list[ChapterBudget]:
    """The seminar path by section, in order: one :class:`ChapterBudget` per section it presents
    (``chapter`` holds ``"<notebook> <section>"``), each charged for the terms first used there
    before their definition (:func:`undefined_terms`)."""
    undefined = undefined_terms(chapters)
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for pc in path_cells(chapters):
        groups.setdefault((pc.chapter, pc.section), []).append(pc.cell)
    return [_count(f"{chapter} {section}", cells,
                   [u.term for u in undefined if (u.chapter, u.section) == (chapter, section)])
            for (chapter, section), cells in groups.items()]


def seminar_minutes(chapters: Sequence[Path]) -> dict[str, float]:
    """Minutes of each executed chapter's seminar path by the lecturer's clock (0 when it presents
    nothing), the terms used before the path defines them charged where first used; with
    :data:`DISCUSSION_MINUTES`, their rounded sum (:func:`path_minutes`) must fit :data:`CORE_MINUTES`.
    ``chapters`` in path order; an appendix or a chapter that presents nothing adds 0."""
    out = {Path(nb).stem: 0.0 for nb in chapters}
    for b in section_budgets(chapters):
        out[b.chapter.split()[0]] += b.minutes
    return out


def path_minutes(minutes: Mapping[str, float]) -> int:
    """The seminar path's minutes as every page states them: the sum of each chapter's rounded
    ``minutes`` (:func:`seminar_minutes`), the numbers the README's table, the seminar pages and
    ``benchmarks/chapter_budget.py`` print (one number: issue 67, the index said 74 where the pages
    summed to 73)."""
    return sum(round(m) for m in minutes.values())


def seminar_sections(nb: Path | Mapping[str, Any]) -> list[str]:
    """The numbers of the sections the seminar path presents (``["2.2", "2.3"]``; a chapter's own
    number when it presents its opening), from the headings of the :data:`SEMINAR` cells, in order.
    Reads a notebook or a jupytext source (``.py``)."""
    node = _read(nb)[1]
    found: list[str] = []
    for cell in node["cells"]:
        if SEMINAR not in cell_tags(cell):
            continue
        for section in _headings(cell):
            if section not in found:
                found.append(section)
    return found


def inline_images(nb_path: Path) -> int:
    """Number of ``image/png`` outputs in an executed notebook."""
    data = json.loads(Path(nb_path).read_text())
    return sum("image/png" in o.get("data", {}) for c in data["cells"] for o in c.get("outputs", []))


def plural(n: int, word: str, many: str | None = None) -> str:
    """``"1 figure"``, ``"2 figures"``."""
    return f"{n} {word if n == 1 else many or word + 's'}"
