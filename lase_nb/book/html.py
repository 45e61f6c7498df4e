"""The HTML book of the executed chapters (``make book``, ``lase-nb book``): what each page shows,
the recordings it names, formulas as MathML, no network; and the seminar path alone
(``make seminar``, ``lase-nb book --seminar``). Which cells a lecturer shows and for how long is
:mod:`lase_nb.book.budget`; executing the chapters is :mod:`lase_nb.book.execution`."""

from __future__ import annotations

import contextlib
import html
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from .budget import (BOOK_MORE, IMAGE_TYPES, LINK_TARGET, SEMINAR, book_hides, book_hides_input, cell_tags,
                     cell_text, chapter_budget, path_minutes, plural, seminar_minutes, seminar_sections)
from ..errors import ConfigError, LaseError
from .execution import APPENDIX_GLOB, REPO, collection, recordings_read

if TYPE_CHECKING:
    from nbconvert import HTMLExporter

def figure_alt_texts(nb: Mapping[str, Any]) -> list[str]:
    """One alternative text per image output of ``nb``, in order: the chapter section it sits in
    and the first sentence of the markdown just before its cell (which says what the figure shows)."""
    alts, section, prose = [], "", ""
    for cell in nb.get("cells", []):
        source = cell_text(cell.get("source", ""))
        if cell.get("cell_type") == "markdown":
            text = " ".join(ln.strip() for ln in source.splitlines() if ln.strip() and not ln.lstrip().startswith("#"))
            heads = [ln.lstrip("#").strip() for ln in source.splitlines() if ln.lstrip().startswith("#")]
            if heads:
                section = heads[-1]
            if text:
                prose = re.split(r"(?<=[.?!])\s", re.sub(r"[*`$\\]", "", LINK_TARGET.sub("]", text)), maxsplit=1)[0]
                prose = prose.replace("[", "").replace("]", "")
            continue
        for o in cell.get("outputs", []) or []:
            if any(k in (o.get("data") or {}) for k in IMAGE_TYPES):
                alts.append(f"Figure in section {section}: {prose}" if prose else f"Figure in section {section}")
    return alts



def failed_cell(nb: Mapping[str, Any]) -> tuple[int, str] | None:
    """Where an executed notebook failed: the index of the first cell with an error output and a
    one-line reason (``ValueError: ...``), or None when it ran to its end. A notebook papermill
    marks as failed (``metadata.papermill.exception``) without an error output reports cell -1."""
    for i, cell in enumerate(nb.get("cells", [])):
        for o in cell.get("outputs", []) or []:
            if o.get("output_type") == "error":
                value = str(o.get("evalue", "")).strip().splitlines()
                return i, f"{o.get('ename', 'Error')}: {value[0][:200] if value else ''}".rstrip(": ")
    if (nb.get("metadata", {}).get("papermill") or {}).get("exception"):
        return -1, "papermill marked the run as failed"
    return None



#: A chapter heading's own number (``00 ·``, ``1.``, ``A1.``), replaced by the book's one numbering.
_HEADING_NUMBER = re.compile(r"^\s*(?:\d+|A\d+)\s*(?:[.·:\-\u2013\u2014]\s*|\s+)")


def chapter_number(stem: str) -> str:
    """The number the book gives a notebook: ``0`` ... ``7`` for the core chapters, ``A1`` ... for
    the appendix."""
    head = stem.split("_", 1)[0]
    return str(int(head)) if head.isdigit() else head


def book_title(stem: str, heading: str) -> str:
    """A notebook's title in the book's one numbering, ``"<number>. <title>"``: whatever number
    the notebook's own heading carries (``00 ·``, ``1.``, ``A1.``) is replaced."""
    return f"{chapter_number(stem)}. {_HEADING_NUMBER.sub('', heading).strip()}"


def _title(nb_path: Path) -> str:
    """The first markdown heading of a notebook, without its leading ``#``s."""
    import nbformat

    nb = nbformat.read(str(nb_path), as_version=4)
    return _first_heading(nb)[1] or nb_path.stem


def _first_heading(nb: Mapping[str, Any]) -> tuple[int, str]:
    """The index of the first markdown cell holding a heading, and the heading's text."""
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "markdown":
            for line in cell_text(cell["source"]).splitlines():
                if line.startswith("#"):
                    return i, line.lstrip("#").strip()
    return -1, ""


def _study_label(folder: Path) -> str:
    """A study's label: ``study.json``'s ``label``, else the model its full-chain run names
    (:func:`lase_nb.runs.display_name`), else the folder's name."""
    meta = folder / "study.json"
    if meta.is_file():
        with contextlib.suppress(OSError, ValueError, AttributeError):
            label = json.loads(meta.read_text()).get("label")
            if label:
                return str(label)
    from ..runs import display_name

    try:
        return display_name(folder)
    except (LaseError, OSError, ValueError):
        return folder.name


def recordings_summary(manifests: Sequence[Path]) -> list[dict[str, Any]]:
    """The studies behind ``manifests`` (run manifests), in the order first read: per study its
    ``label``, ``folder`` (relative to the repository when inside it), ``model``, ``dataset``,
    ``n`` (problems per run, ``{run: n}``) and ``dtype`` (None when no manifest names one)."""
    studies: dict[Path, dict[str, Any]] = {}
    for path in manifests:
        try:
            m = json.loads(Path(path).read_text())
        except (OSError, ValueError):
            continue
        run, folder = Path(path).parent, Path(path).parent.parent
        s = studies.setdefault(folder, {"label": _study_label(folder), "folder": _shown_path(folder),
                                        "model": [], "dataset": [], "n": {}, "dtype": []})
        for key, value in (("model", m.get("model")), ("dataset", m.get("dataset")),
                           ("dtype", m.get("dtype") or (m.get("config") or {}).get("dtype"))):
            if value and str(value) not in s[key]:
                s[key].append(str(value))
        s["n"][run.name] = m.get("n")
    for s in studies.values():
        for key in ("model", "dataset", "dtype"):
            s[key] = ", ".join(s[key]) or None
    return list(studies.values())


def _shown_path(folder: Path) -> str:
    try:
        return str(Path(folder).resolve().relative_to(REPO))
    except ValueError:
        return str(folder)


def describe_recordings(studies: Sequence[Mapping[str, Any]]) -> str:
    """Markdown naming the recordings a page shows (:func:`recordings_summary`), one line a study."""
    if not studies:
        return "*Recordings: this page reads no recorded run (it simulates, or calls a model live).*"
    lines = ["**Recordings shown on this page**"]
    for s in studies:
        by_n: dict[Any, list[str]] = {}
        for run, n in s["n"].items():
            by_n.setdefault(n, []).append(run)
        ns = "; ".join(f"n = {n} ({', '.join(runs)})" for n, runs in by_n.items())
        parts = [f"model {s['model'] or 'unknown'}", f"data set {s['dataset'] or 'unknown'}", ns]
        if s.get("dtype"):
            parts.append(f"dtype {s['dtype']}")
        lines.append(f"- **{s['label']}** (`{s['folder']}`): " + ", ".join(parts))
    return "\n".join(lines)


_MARK = "<!-- lase-nb:{}-{} -->"
#: A markdown cell holding only a section marker ("more" or "seminar"), as nbconvert's lab template writes it.
_MARK_CELL = re.compile(r'<div class="jp-Cell jp-MarkdownCell[^"]*"[^>]*>(?:(?!<div class="jp-Cell ).)*?'
                        r"<!-- lase-nb:(more|seminar)-(start|end) -->\s*</div>\s*</div>\s*</div>\s*</div>", re.S)


def book_notebook(nb_path: Path, seminar: bool = False, minutes: float | None = None):
    """The executed notebook as the book shows it: the cells :func:`book_hides` left out, runs of
    :data:`BOOK_MORE` cells between markers that :func:`build_book` turns into closed "More"
    sections and runs of :data:`SEMINAR` cells between markers it turns into marked "Seminar path"
    sections, the first heading in the book's numbering (:func:`book_title`), the recordings the
    chapter read named under its title (:func:`describe_recordings`), and error outputs dropped.
    A chapter that failed (:func:`failed_cell`) gets a FAILED banner at the top and ends at the
    failing cell (no traceback). ``seminar``: the seminar path alone, the title then the
    :data:`SEMINAR` cells in order, with a line naming the sections, their ``minutes``
    (:func:`describe_path`) and a link to the full chapter. Returns the notebook node."""
    import nbformat

    nb = nbformat.read(str(nb_path), as_version=4)
    failed = failed_cell(nb)
    studies = recordings_summary(recordings_read(nb))  # before the parameters cells go
    cells = list(nb.cells)
    title_at = _first_heading(nb)[0]
    skipped = 0
    if failed is not None and failed[0] >= 0:
        skipped = sum(1 for c in cells[failed[0] + 1:] if not book_hides(c))
        cells = cells[:failed[0] + 1]
    shown = []
    for i, cell in enumerate(cells):
        if book_hides(cell):
            continue
        if seminar and SEMINAR not in cell_tags(cell):
            if i != title_at:
                continue
            cell.source = next(ln for ln in cell.source.splitlines() if ln.startswith("#"))  # the title alone
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.get("outputs", []) if o.get("output_type") != "error"]
            if book_hides_input(cell):
                cell.metadata.setdefault("transient", {})["remove_source"] = True
                if not cell.outputs:
                    continue
        shown.append(cell)
    nb.cells = shown
    at, heading = _first_heading(nb)
    if at >= 0:
        src = nb.cells[at].source
        line = next(ln for ln in src.splitlines() if ln.startswith("#"))
        nb.cells[at].source = src.replace(line, "# " + book_title(nb_path.stem, heading), 1)
    notes = [describe_recordings(studies)]
    if seminar:
        notes.insert(0, describe_path(nb_path, minutes))
    for note in reversed(notes):
        nb.cells.insert(at + 1, nbformat.v4.new_markdown_cell(note))
    out, inside = [], None
    for cell in nb.cells:
        tags = cell_tags(cell)
        kind = "more" if BOOK_MORE in tags else "seminar" if SEMINAR in tags and not seminar else None
        if kind != inside:
            out += [nbformat.v4.new_markdown_cell(_MARK.format(k, e)) for k, e in ((inside, "end"), (kind, "start")) if k]
            inside = kind
        out.append(cell)
    if inside:
        out.append(nbformat.v4.new_markdown_cell(_MARK.format(inside, "end")))
    nb.cells = out
    nb.metadata["lase_alt"] = figure_alt_texts(nb)
    if failed is not None:
        where = f"cell {failed[0]}" if failed[0] >= 0 else "a cell"
        banner = (f"**FAILED.** This chapter did not run to its end: {where} raised "
                  f"`{failed[1]}`. What follows is the part that ran"
                  + (f"; the {plural(skipped, 'remaining cell')} did not run." if skipped else ".")
                  + " Fix the error and execute the chapter again (`lase-nb notebooks`).")
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(banner))
    return nb


def describe_path(nb_path: Path, minutes: float | None = None) -> str:
    """Markdown under a seminar page's title: the sections the seminar presents of the executed
    chapter, their ``minutes`` by the lecturer's clock (:func:`lase_nb.book.budget.seminar_minutes` of the
    whole path; without them, of this chapter read alone), and a link to the full chapter (the rest
    is reading)."""
    sections = seminar_sections(nb_path)
    minutes = round(seminar_minutes([nb_path])[nb_path.stem] if minutes is None else minutes)
    return (f"*Seminar path: {plural(len(sections), 'section')} ({', '.join(sections)}), about {minutes} min by "
            f"the lecturer's clock. The rest of the chapter is reading: [the full chapter]({nb_path.stem}.ipynb).*")


#: The alternative text nbconvert gives an image that has none.
_NO_ALT = 'alt="No description has been provided for this image"'


def _with_alt_texts(body: str, alts: Sequence[str]) -> str:
    """Each image's generic alternative text replaced, in order, by one of :func:`figure_alt_texts`."""
    parts = body.split(_NO_ALT)
    out = [parts[0]]
    for i, rest in enumerate(parts[1:]):
        alt = alts[i] if i < len(alts) else "Figure"
        out.append(f'alt="{html.escape(alt, quote=True)}"' + rest)
    return "".join(out)


def _navigation(pages: Sequence[tuple[str, str]], i: int) -> str:
    """The previous / contents / next links of page ``i`` of ``pages`` ((file stem, title) pairs)."""
    links = []
    if i > 0:
        links.append(f'<a rel="prev" href="{pages[i - 1][0]}.html">&larr; {html.escape(pages[i - 1][1])}</a>')
    links.append('<a href="index.html">Contents</a>')
    if i + 1 < len(pages):
        links.append(f'<a rel="next" href="{pages[i + 1][0]}.html">{html.escape(pages[i + 1][1])} &rarr;</a>')
    return '<nav class="lase-nav">' + " &middot; ".join(links) + "</nav>"


def _marked_sections(body: str) -> str:
    """Turn the markers of :func:`book_notebook` into sections: "More" ones as closed ``<details>``,
    the seminar path's as a marked ``<div>``."""
    opening = {"more": '<details class="lase-more"><summary>More (not presented; click to open)</summary>',
               "seminar": '<div class="lase-seminar"><p class="lase-seminar-label">Seminar path</p>'}
    closing = {"more": "</details>", "seminar": "</div>"}
    return _MARK_CELL.sub(lambda m: (opening if m.group(2) == "start" else closing)[m.group(1)], body)


#: Style of the book's own parts: the "More" sections, the seminar path's and the FAILED mark in the index.
_BOOK_CSS = ("<style>details.lase-more{border-left:3px solid #bbb;margin:1em 0;padding-left:.8em}"
             "details.lase-more>summary{cursor:pointer;color:#555;font-style:italic}"
             "div.lase-seminar{border-left:3px solid #2166AC;margin:1em 0;padding-left:.8em}"
             "p.lase-seminar-label{font-family:sans-serif;color:#2166AC;font-size:85%;margin:0}"
             "nav.lase-nav{font-family:sans-serif;margin:1em auto;max-width:60em;padding:.5em 1em;color:#555}</style>")


#: A ``<script>`` that would load code from the network (require.js, MathJax from a CDN).
_REMOTE_SCRIPT = re.compile(r'<script[^>]*\bsrc="https?://[^"]*"[^>]*>\s*</script>\s*')

#: A link from one chapter to another (``[appendix A1](A1_bound.ipynb)``), pointed at its page in the book.
_NOTEBOOK_LINK = re.compile(r'href="((?:[0-9][0-9]|A[0-9])_\w+)\.ipynb"')

#: Inline math as pandoc reads it: no space after the opening ``$``, none before the closing one,
#: and no digit right after it, so that "costs $5 and $6" stays text.
_INLINE_MATH = r"(?<![$\\])\$(?![\s$])(?P<math_inline_tex>[^$]*?[^\s$\\])\$(?!\d)"

#: What latex2mathml writes for a command it does not know (``<mi>\foo</mi>``): not typeset.
_UNKNOWN_COMMAND = re.compile(r">\\[A-Za-z]")


def latex_to_mathml(latex: str, display: str = "inline") -> str | None:
    """``latex`` as a MathML ``<math>`` element, or None when latex2mathml cannot convert it."""
    from latex2mathml.converter import convert

    try:
        mathml = convert(latex.strip(), display=display)
    except Exception:  # latex2mathml raises its own errors, and IndexError & co. on odd input
        return None
    return None if _UNKNOWN_COMMAND.search(mathml) else mathml


def _mathml_exporter() -> HTMLExporter:
    """An ``HTMLExporter`` whose markdown typesets formulas as MathML (no script, no network);
    its ``formulas`` counts them: ``converted``, and ``kept`` (shown as their LaTeX source)."""
    from collections import Counter

    from nbconvert import HTMLExporter
    from nbconvert.exporters.html import contextfilter
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath, MathInlineParser

    class StrictMathParser(MathInlineParser):
        SPECIFICATION = {**MathInlineParser.SPECIFICATION, "inline_math_tex": _INLINE_MATH}

    class MathMLRenderer(IPythonRenderer):
        def _math(self, latex: str, display: str, source: str) -> str:
            mathml = latex_to_mathml(latex, display)
            exporter.formulas["converted" if mathml else "kept"] += 1
            return mathml or source

        def inline_math(self, body: str) -> str:
            return self._math(body, "inline", super().inline_math(body))

        def block_math(self, body: str) -> str:
            return self._math(body, "block", super().block_math(body))

        def latex_environment(self, name: str, body: str) -> str:
            return self._math(f"\\begin{{{name}}}{body}\\end{{{name}}}", "block",
                              super().latex_environment(name, body))

    class MathMLExporter(HTMLExporter):
        @contextfilter
        def markdown2html(self, context, source: str) -> str:
            """nbconvert's markdown filter (same renderer options) with the MathML renderer."""
            cell = context.get("cell", {})
            renderer = MathMLRenderer(escape=False, attachments=cell.get("attachments", {}),
                                      embed_images=self.embed_images,
                                      path=context.get("resources", {}).get("metadata", {}).get("path", ""),
                                      anchor_link_text=self.anchor_link_text,
                                      exclude_anchor_links=self.exclude_anchor_links, **self.lexer_options)
            return MarkdownWithMath(renderer=renderer, inline=StrictMathParser(hard_wrap=False)).render(source)

    exporter = MathMLExporter(template_name="lab", embed_images=True)
    exporter.formulas = Counter()
    return exporter


def build_book(executed: Path = REPO / "build" / "notebooks", out: Path = REPO / "build" / "book",
               mathjax_url: str | None = None, seminar: bool = False) -> Path:
    """Convert every executed chapter in ``executed`` to standalone HTML and write an
    ``index.html`` linking them; return the index path.

    Each page is what a lecturer shows (:func:`book_notebook`): no parameters cell, no
    widget-only or ``book-hide`` cell, no empty cell, ``book-more`` cells in closed "More"
    sections, the seminar path's cells marked, one numbering of titles, the recordings the chapter
    read named under its title. A chapter that failed is marked FAILED at the top of its page and
    in the index, and shows no traceback. Figures are embedded and no page loads anything from the
    network: formulas are typeset as MathML (a formula latex2mathml cannot convert keeps its LaTeX
    source and is counted in the line printed per chapter). Pass ``mathjax_url`` (e.g. the MathJax
    copy of a course site) to leave the LaTeX to that MathJax instead.

    ``seminar``: the seminar path alone (``lase-nb book --seminar``): a page per chapter that
    presents something, its :data:`SEMINAR` cells in order with their figures and panels, each
    linking to its full chapter, which is built beside it (``out/full``) so the links work offline.
    """
    executed, out = Path(executed), Path(out)
    chapters = collection(executed)
    if not chapters:
        raise ConfigError(f"no executed chapters in {executed}; run `make notebooks` first")
    path = seminar_minutes(chapters)  # the path in the collection's order: a term is charged where first used
    if seminar:
        build_book(executed, out / "full", mathjax_url)
        chapters = [nb for nb in chapters if seminar_sections(nb)]
    out.mkdir(parents=True, exist_ok=True)
    exporter = _exporter(mathjax_url)
    rows: dict[bool, list[str]] = {False: [], True: []}
    pages = [(nb.stem, book_title(nb.stem, _title(nb))) for nb in chapters]  # the reading order, for the links
    for i, nb in enumerate(chapters):
        node = book_notebook(nb, seminar=seminar, minutes=path[nb.stem])
        failed = failed_cell(json.loads(nb.read_text()))
        body, _ = exporter.from_notebook_node(node, resources={"metadata": {"name": nb.stem, "path": str(nb.parent)}})
        # a link to another chapter opens its page (in the seminar, its full chapter)
        body = _NOTEBOOK_LINK.sub(r'href="full/\1.html"' if seminar else r'href="\1.html"', body)
        body = _REMOTE_SCRIPT.sub(lambda m: m.group(0) if mathjax_url and mathjax_url in m.group(0) else "", body)
        body = _marked_sections(body).replace("</head>", _BOOK_CSS + "</head>", 1)
        body = _with_alt_texts(body, node.metadata.get("lase_alt", []))
        nav = _navigation(pages, i)
        body = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + nav, body, count=1).replace("</body>", nav + "</body>", 1)
        (out / f"{nb.stem}.html").write_text(body, encoding="utf-8")
        if not mathjax_url:
            n = exporter.formulas
            print(f"[book] {nb.stem}: {n['converted']} formulas as MathML, {n['kept']} kept as LaTeX source",
                  flush=True)
            n.clear()
        if failed is not None:
            print(f"[book] {nb.stem}: FAILED ({failed[1]}); its page says so and shows the part that ran",
                  flush=True)
        shown = chapter_budget(nb)
        meta = [plural(shown.figures, "figure"), plural(shown.tables, "table")]
        if seminar:
            meta = [f"sections {', '.join(seminar_sections(nb))}", f"about {round(path[nb.stem])} min"]
        elif not nb.match(APPENDIX_GLOB):
            meta.append(f"about {round(shown.minutes)} min" + (f", seminar path {round(path[nb.stem])}"
                                                                if seminar_sections(nb) else ""))
        mark = '<strong class="failed">FAILED</strong> ' if failed is not None else ""
        rows[nb.match(APPENDIX_GLOB)].append(f'<li>{mark}<a href="{nb.stem}.html">{html.escape(pages[i][1])}</a> '
                                             f'<span class="meta">({", ".join(meta)})</span></li>')
    return _write_index(out / "index.html", rows, path_minutes(path) if seminar else None)


def _exporter(mathjax_url: str | None) -> HTMLExporter:
    """The book's HTML exporter: MathML formulas (:func:`_mathml_exporter`), or LaTeX left to ``mathjax_url``."""
    from nbconvert import HTMLExporter

    if mathjax_url:
        exporter = HTMLExporter(template_name="lab", embed_images=True)
        exporter.mathjax_url = mathjax_url
    else:
        exporter = _mathml_exporter()
    exporter.exclude_input_prompt = True
    exporter.exclude_output_prompt = True
    return exporter


def _write_index(index: Path, rows: Mapping[bool, Sequence[str]], seminar: int | None) -> Path:
    """The book's contents page: the core chapters, then the appendix. ``seminar``: the seminar
    path's minutes (:func:`lase_nb.book.budget.path_minutes`, the sum of the minutes its pages state; the
    page says it, the discussion, and that the rest is reading)."""
    from .budget import CORE_MINUTES, DISCUSSION_MINUTES

    if seminar is None:
        title = "Confidence-gated multi-agent reasoning: the notebook collection"
        intro = "Executed chapters of <code>lase-nb</code> (LASE and DOWN)."
    else:
        total = seminar
        title = "Confidence-gated multi-agent reasoning: the seminar path"
        intro = (f"The sections a lecturer presents in a {CORE_MINUTES}-minute seminar: about {total} minutes by "
                 f"the lecturer's clock and {DISCUSSION_MINUTES} of discussion. The rest of each chapter, the "
                 'chapters not listed and the appendix are reading: <a href="full/index.html">the full book</a>.')
    index.write_text(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>lase-nb: confidence-gated multi-agent reasoning{'' if seminar is None else ', the seminar path'}</title>"
        "<style>body{font-family:sans-serif;max-width:46em;margin:3em auto;line-height:1.5}"
        "ul.toc{list-style:none;padding-left:0}.meta{color:#666;font-size:90%}.failed{color:#B2182B}</style>"
        "</head><body>\n"
        f"<h1>{title}</h1>\n"
        f"<p>{intro} Each page is self-contained: "
        "figures are embedded, nothing is fetched from the network.</p>\n<ul class=\"toc\">\n"
        + "\n".join(rows[False]) + "\n</ul>\n"
        + ("<h2>Appendix: the deep dives the chapters link to</h2>\n<ul class=\"toc\">\n" + "\n".join(rows[True])
           + "\n</ul>\n" if rows[True] else "")
        + "</body></html>\n", encoding="utf-8")
    return index
