"""The notebook collection: clean sources, in sync with their jupytext twins, and executing under papermill."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import papermill as pm
import pytest

from lase_nb.errors import ConfigError
from lase_nb.book.html import build_book
from lase_nb.book.budget import inline_images
from lase_nb.book.execution import NOTEBOOKS, NotebookTimeout, execute, kernel_environment, list_notebooks, parse_value

BOOKS = list_notebooks()
WIDGET = "application/vnd.jupyter.widget-view+json"


def _outputs(path: Path) -> list[dict]:
    return [o for c in json.loads(path.read_text())["cells"] for o in c.get("outputs", [])]


def _text(outputs: list[dict]) -> str:
    parts = []
    for o in outputs:
        parts.append("".join(o.get("text", "")))
        parts.extend("".join(v) if isinstance(v, list) else str(v)
                     for k, v in o.get("data", {}).items() if k.startswith("text/"))
    return "\n".join(parts)


def _tiny_notebook(path: Path, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))
    return path


def test_collection_is_numbered_and_present():
    names = [b.stem for b in BOOKS]
    assert names and names[0] == "00_quickstart"
    assert names == sorted(names)


#: The core path a lecturer presents in about 90 minutes: each numbered chapter stays within this
#: many cells (markdown and code); the deep dives go to the appendix notebooks (A1_..., A2_...).
CORE_CELL_BUDGET = 45
CORE = [b for b in BOOKS if b.stem[0].isdigit()]
APPENDIX = [b for b in BOOKS if b.stem[0] == "A"]


@pytest.mark.parametrize("nb", CORE, ids=lambda p: p.stem)
def test_core_chapter_stays_within_its_cell_budget(nb: Path):
    n = len(jupytext.read(nb.with_suffix(".py")).cells)
    assert n <= CORE_CELL_BUDGET, f"{nb.stem} has {n} cells, over the core budget of {CORE_CELL_BUDGET}: move a deep dive to an appendix"


def test_every_appendix_is_linked_from_a_core_chapter_and_links_back():
    assert APPENDIX, "the appendix notebooks (notebooks/A1_*.py ...) are part of the collection"
    core_text = {b.stem: b.with_suffix(".py").read_text() for b in CORE}
    for a in APPENDIX:
        linking = [c for c, text in core_text.items() if f"]({a.stem}.ipynb)" in text]
        assert linking, f"no core chapter links to {a.stem}"
        chapter = re.search(r"appendix to chapter (\d\d)", a.with_suffix(".py").read_text()).group(1)
        assert any(c.startswith(chapter) for c in linking), f"{a.stem}: chapter {chapter} should link to it"
        assert re.search(rf"\]\({chapter}_\w+\.ipynb\)", a.with_suffix(".py").read_text()), f"{a.stem} links back"


def test_the_regime_paragraph_is_written_in_one_chapter():
    """The regimes are defined once (chapter 03); the other chapters refer to it in a sentence."""
    calls = {b.stem: len(re.findall(r"regimes\.(?:describe_regime|describe_gain_regime|regime_table)\(",
                                    b.with_suffix(".py").read_text())) for b in BOOKS}
    assert [c for c, n in calls.items() if n] == ["03_lase_pipeline"], calls


def test_no_page_says_lase_beats_moa_where_the_moa_follow_ups_are_off_format():
    """The organisms were trained for LASE's roles only; their MoA aggregators write LASE's revision
    text, so "LASE beats MoA" on them is an artefact (chapter 04 measures it, chapter 07's verdict
    is "not testable here"). No chapter source or README sentence may claim it."""
    claim = re.compile(r"LASE (?:\w+ )?(?:beats|is above|above|outperforms|over) (?:MoA|Mixture-of-Agents)", re.I)
    pages = [b.with_suffix(".py") for b in BOOKS] + [NOTEBOOKS.parent / "README.md"]
    found = {p.name: claim.findall(p.read_text()) for p in pages}
    # the claims table names the paper's claim as a row label, with a verdict per model beside it
    found = {k: [m for m in v if "Mixture-of-Agents (Section" not in m] for k, v in found.items()}
    assert not any(found.values()), found


def test_book_hides_the_parameters_cells(tmp_path):
    """Neither the chapter's parameters cell nor papermill's injected one is on the page: a
    lecturer shows results, and the values the chapter ran with show in its outputs."""
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("answer = 1  # the chapter's own parameter")
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# 98 Params\n\nSee [A1](A1_bound.ipynb)."), cell,
                nbformat.v4.new_code_cell("print(answer * 7)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    src = tmp_path / "98_params.ipynb"
    nbformat.write(nb, str(src))
    (tmp_path / "out").mkdir()
    execute(src, tmp_path / "out" / "98_params.ipynb", {"answer": 6})
    assert "injected-parameters" in (tmp_path / "out" / "98_params.ipynb").read_text()
    build_book(tmp_path / "out", tmp_path / "book")
    page = (tmp_path / "book" / "98_params.html").read_text()
    assert "42" in page  # the output of the injected value
    assert "own parameter" not in page and "Injected" not in page and "answer = 6" not in page
    assert 'href="A1_bound.html"' in page  # a link to another notebook opens its page in the book


@pytest.mark.parametrize("nb", BOOKS, ids=lambda p: p.stem)
def test_committed_notebook_has_no_outputs(nb: Path):
    data = json.loads(nb.read_text())
    for cell in data["cells"]:
        if cell["cell_type"] == "code":
            assert not cell.get("outputs") and cell.get("execution_count") is None, f"{nb.name}: strip outputs"


@pytest.mark.parametrize("nb", BOOKS, ids=lambda p: p.stem)
def test_ipynb_matches_its_jupytext_source(nb: Path):
    src = nb.with_suffix(".py")
    assert src.exists(), f"{nb.name} has no py:percent twin; run `make sync-notebooks`"
    a = [(c.cell_type, c.source.strip()) for c in jupytext.read(src).cells]
    b = [(c.cell_type, c.source.strip()) for c in jupytext.read(nb).cells]
    assert a == b, f"{nb.name} differs from {src.name}: run `make sync-notebooks`"


@pytest.mark.parametrize("nb", BOOKS, ids=lambda p: p.stem)
def test_notebook_declares_parameters(nb: Path):
    declared = pm.inspect_notebook(str(nb))
    assert "interactive" in declared, f"{nb.name}: the parameters cell must set `interactive`"


@pytest.mark.parametrize("nb", BOOKS, ids=lambda p: p.stem)
def test_papermill_reads_every_parameter(nb: Path, caplog):
    """Papermill finds each name the parameters cell assigns (a second `=` on a line, even in its
    comment, makes it skip the line with "Unable to parse", and `-p` then drops that parameter)."""
    import ast

    cell = next(c for c in nbformat.read(str(nb), as_version=4).cells if "parameters" in c.metadata.get("tags", []))
    assigned = [t.id for node in ast.parse(cell.source).body if isinstance(node, ast.Assign)
                for t in node.targets if isinstance(t, ast.Name)]
    with caplog.at_level("WARNING", logger="papermill"):
        declared = pm.inspect_notebook(str(nb))
    assert not [r for r in caplog.records if "Unable to parse" in r.getMessage()], caplog.text
    assert list(declared) == assigned


@pytest.mark.parametrize("text, value", [("False", False), ("false", False), ("True", True), ("no", False),
                                         ("None", None), ("3", 3), ("0.25", 0.25), ("gpt-4.1-mini", "gpt-4.1-mini"),
                                         ("[1, 2]", [1, 2]), ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1")])
def test_command_line_parameters_are_typed(text, value):
    got = parse_value(text)
    assert got == value and type(got) is type(value)


def test_executed_notebook_keeps_inline_figures_and_no_progress_bars(tmp_path, monkeypatch):
    """Even when the caller exports MPLBACKEND=Agg, the kernel draws inline; tqdm bars stay out."""
    monkeypatch.setenv("MPLBACKEND", "Agg")
    src = _tiny_notebook(tmp_path / "99_tiny.ipynb",
                         "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([0, 1], [1, 0])",
                         "from tqdm.auto import tqdm\nfor _ in tqdm(range(3), desc='Loading weights'):\n    pass")
    out = tmp_path / "out" / "99_tiny.ipynb"
    out.parent.mkdir()
    execute(src, out)
    assert inline_images(out) == 1
    assert "Loading weights" not in _text(_outputs(out))
    index = build_book(out.parent, tmp_path / "book")
    page = (tmp_path / "book" / "99_tiny.html").read_text()
    assert 'href="99_tiny.html"' in index.read_text()
    assert "data:image/png;base64," in page  # the figure is embedded, not linked
    assert not re.search(r'src="https?://', page), "the page would load something from the network"


def test_kernel_starts_without_a_transport_warning(tmp_path, capfd):
    """The chapters' kernels talk over CurveZMQ-encrypted sockets, so ipykernel has no plain-TCP
    warning to print for every chapter (and the run still works)."""
    src = _tiny_notebook(tmp_path / "97_quiet.ipynb", "print(6 * 7)")
    execute(src, tmp_path / "out.ipynb")
    assert "42" in _text(_outputs(tmp_path / "out.ipynb"))
    err = capfd.readouterr().err
    assert "without encryption" not in err and "WARNING" not in err, err[-2000:]


def test_a_hung_cell_fails_in_bounded_time_naming_chapter_and_cell(tmp_path):
    src = _tiny_notebook(tmp_path / "98_hang.ipynb", "x = 1", "import time\ntime.sleep(120)")
    with pytest.raises(NotebookTimeout, match=r"98_hang: cell 1 .*time.* longer than 3 s"):
        execute(src, tmp_path / "out.ipynb", cell_timeout=3)


def test_book_typesets_formulas_as_mathml_offline(tmp_path, capsys):
    """Real math becomes MathML; code spans, code blocks and dollar amounts stay text; a formula
    latex2mathml cannot convert keeps its source and is counted; no page loads anything remote."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(s) for s in (
        "The threshold $\\tau_{lp}$ gates the leader.",
        "$$H = -\\sum_i p_i \\log p_i$$",
        "In code: `$x$` and\n\n```\ny = $z$\n```",
        "It costs $5 and $6, or $5-$10.",
        "Broken: $\\frac{1}{$ here.")]
    (tmp_path / "nb").mkdir()
    nbformat.write(nb, str(tmp_path / "nb" / "96_math.ipynb"))
    build_book(tmp_path / "nb", tmp_path / "book")
    page = (tmp_path / "book" / "96_math.html").read_text(encoding="utf-8")
    body = page[page.index("<body"):]
    assert body.count("<math") == 2
    assert "<mi>\u03c4</mi>" in body and 'display="block"' in body  # tau, and H as display math
    assert "<code>$x$</code>" in body and "y = $z$" in body
    assert "costs $5 and $6, or $5-$10." in body
    assert "$\\frac{1}{$" in body
    assert "2 formulas as MathML, 1 kept as LaTeX source" in capsys.readouterr().out
    assert not re.search(r'src="https?://', page), "the page would load something from the network"


def test_book_leaves_latex_to_a_given_mathjax(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("The threshold $\\tau_{lp}$.")]
    (tmp_path / "nb").mkdir()
    nbformat.write(nb, str(tmp_path / "nb" / "96_math.ipynb"))
    url = "https://course.example/mathjax/tex-chtml.js"
    build_book(tmp_path / "nb", tmp_path / "book", mathjax_url=url)
    page = (tmp_path / "book" / "96_math.html").read_text()
    assert "$\\tau_{lp}$" in page and "<math" not in page[page.index("<body"):]
    assert url in page


def test_book_needs_executed_chapters(tmp_path):
    from lase_nb.errors import ConfigError
    with pytest.raises(ConfigError, match="make notebooks"):
        build_book(tmp_path, tmp_path / "book")


@pytest.mark.slow
@pytest.mark.parametrize("nb", BOOKS, ids=lambda p: p.stem)
def test_notebook_executes(nb: Path, tmp_path, monkeypatch):
    monkeypatch.setenv("LASE_FIGURES_DIR", str(tmp_path / "figures"))
    monkeypatch.setenv("LASE_LIVE_FIGURES_DIR", str(tmp_path / "live"))  # as `make notebooks`: apart from figures/
    monkeypatch.setenv("LASE_CACHE", str(tmp_path / "cache.sqlite"))
    out = tmp_path / nb.name
    if nb.stem.startswith("02"):
        # the exact command a user types from the repository root: data paths must still resolve
        # (kernel_environment: the same quiet kernels as `lase-nb notebooks`, so that the output
        # checks below hold; the papermill command itself is the user's)
        root = NOTEBOOKS.parent
        with kernel_environment():
            done = subprocess.run([sys.executable, "-m", "papermill", str(nb.relative_to(root)), str(out),
                                   "-p", "interactive", "False", "--no-progress-bar"],
                                  cwd=root, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-2000:]
    else:
        execute(nb, out, {"interactive": False})
    outputs = _outputs(out)
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert not errors
    if "savefig(" in nb.with_suffix(".py").read_text():  # every core chapter draws; an appendix may only tabulate
        assert list((tmp_path / "figures").glob("*.png")) or list((tmp_path / "live").glob("*.png")), \
            f"{nb.name} exported no figure"
        # Every chapter that draws a figure shows it inline, and makes no widget when not interactive.
        assert inline_images(out) >= 1, f"{nb.name}: figures were saved but none is shown in the notebook"
    assert not [o for o in outputs if WIDGET in o.get("data", {})], f"{nb.name}: widget output with interactive=False"
    assert "Loading weights" not in _text(outputs) and "it/s]" not in _text(outputs)
    _EXECUTED[nb.stem] = (out, tmp_path / "figures")  # the budget and figure tests below read it


#: Each chapter executed once in a session as `make notebooks` runs it (``interactive=False``): its
#: executed copy and the folder its figures went to. :func:`test_notebook_executes` fills it.
_EXECUTED: dict[str, tuple[Path, Path]] = {}


def _executed(nb: Path, tmp_path_factory) -> tuple[Path, Path]:
    """The chapter's executed copy and figures folder, executing it when this session has not yet."""
    if nb.stem not in _EXECUTED:
        folder = tmp_path_factory.mktemp(nb.stem)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("LASE_CACHE", str(folder / "cache.sqlite"))
            execute(nb, folder / nb.name, {"interactive": False}, figures=folder / "figures",
                    live_figures=folder / "live")
        _EXECUTED[nb.stem] = (folder / nb.name, folder / "figures")
    return _EXECUTED[nb.stem]


def test_figures_go_under_the_output_folder_unless_asked(tmp_path, monkeypatch):
    from lase_nb.book.execution import figures_folder

    monkeypatch.delenv("LASE_FIGURES_DIR", raising=False)
    assert figures_folder(tmp_path / "run") == tmp_path / "run" / "figures"
    assert figures_folder(tmp_path / "run", tmp_path / "mine") == tmp_path / "mine"
    monkeypatch.setenv("LASE_FIGURES_DIR", str(tmp_path / "env"))
    assert figures_folder(tmp_path / "run") == tmp_path / "env"


def test_an_executed_chapter_saves_its_figures_where_it_is_told(tmp_path):
    import os

    from lase_nb.plots import FIGURES_ENV, figures_dir

    repo_figures = {p.name: p.stat().st_mtime_ns for p in figures_dir().glob("*")} \
        if FIGURES_ENV not in os.environ else None
    src = _tiny_notebook(tmp_path / "96_fig.ipynb",
                         "import matplotlib.pyplot as plt\nfrom lase_nb import plots\nfig, ax = plt.subplots()\n"
                         "print(plots.savefig(fig, 'probe_issue38'))")
    execute(src, tmp_path / "out.ipynb", figures=tmp_path / "figs")
    assert (tmp_path / "figs" / "probe_issue38.png").stat().st_size > 0
    if repo_figures is not None:
        assert {p.name: p.stat().st_mtime_ns for p in figures_dir().glob("*")} == repo_figures


def test_chapters_that_call_a_model_start_first():
    from lase_nb.book.execution import start_order

    order = [b.stem for b in start_order(BOOKS)]
    calling = [b.stem for b in BOOKS if re.search(r"\blive_(?:engine|runs)\(", b.with_suffix(".py").read_text())]
    assert sorted(order) == sorted(b.stem for b in BOOKS) and set(order[:len(calling)]) == set(calling)
    assert order[0] == "A3_live"  # the live episode, the longest chapter, never starts last
    rest = order[len(calling):]
    assert rest == [b.stem for b in BOOKS if b.stem in rest]


def test_chapters_run_at_once_each_in_its_kernel(tmp_path, monkeypatch):
    """`make notebooks` runs the chapters in a pool sized to the cores: each in its own kernel,
    the model's threads shared out, figures where they belong; a chapter that fails beside others
    is named with its cell and error; a chapter that calls the model waits for its conversion, which
    runs beside those that call none (two pools of tiny chapters, to keep the fast tier fast)."""
    from lase_nb.book import execution

    books = tmp_path / "books"
    books.mkdir()
    _tiny_notebook(books / "90_one.ipynb",
                   "import os, matplotlib.pyplot as plt\nfrom lase_nb import plots\nfig, ax = plt.subplots()\n"
                   "plots.savefig(fig, '90_one')\nplots.savefig(fig, '90_one_live', live=True)\n"
                   "print('threads', os.environ.get('OMP_NUM_THREADS'))")
    _tiny_notebook(books / "92_broken.ipynb", "raise ValueError('not enough values 92')")
    monkeypatch.setattr(execution, "NOTEBOOKS", books)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(execution, "default_jobs", lambda: 2)
    with pytest.raises(execution.NotebookFailed, match=r"92_broken failed at cell 1: ValueError: not enough values 92"):
        execution.run_notebooks(params={"interactive": False}, out=tmp_path / "out", figures=tmp_path / "figs", jobs=2)
    assert (tmp_path / "out" / "92_broken.ipynb").is_file()
    assert "threads 1" in _text(_outputs(tmp_path / "out" / "90_one.ipynb"))  # two cores, two kernels: one thread each
    assert [p.name for p in (tmp_path / "figs").glob("*.png")] == ["90_one.png"]
    assert [p.name for p in (tmp_path / "out" / "figures").glob("*.png")] == ["90_one_live.png"]
    with pytest.raises(ConfigError, match="--jobs must be a positive number"):
        execution.run_notebooks(out=tmp_path / "out", jobs=0)

    # a chapter whose source calls the model (live_engine) waits for the conversion: when it fails, the
    # chapter never starts, the one that calls no model has run beside it, and the conversion's error is raised
    _tiny_notebook(books / "89_calls.ipynb", "print('model chapter 89')")
    (books / "89_calls.py").write_text("engine = live_engine()\nprint('model chapter 89')\n")
    (books / "92_broken.ipynb").unlink()
    with pytest.raises(ConfigError, match="GGUF file not found"):
        execution.run_notebooks(params={"interactive": False, "model": str(tmp_path / "missing.gguf")},
                                out=tmp_path / "out2", figures=tmp_path / "figs2", jobs=2)
    assert sorted(p.name for p in (tmp_path / "out2").glob("*.ipynb")) == ["90_one.ipynb"]


def test_the_kernels_shutdown_interrupt_is_not_logged_as_an_error(tmp_path, capfd):
    """jupyter_client interrupts every kernel it shuts down; a kernel still finishing a message
    logs that as an ERROR. The kernels' log drops that line and keeps every other."""
    src = _tiny_notebook(tmp_path / "95_log.ipynb",
                         "log = get_ipython().kernel.log\nlog.error('KeyboardInterrupt caught in kernel.')\n"
                         "log.error('a real kernel error 95')")
    execute(src, tmp_path / "out.ipynb")
    err = capfd.readouterr().err
    assert "a real kernel error 95" in err and "KeyboardInterrupt caught" not in err, err[-2000:]


# --------------------------------------------------------------------------------------------
# the chapter budget and the book a lecturer shows
# --------------------------------------------------------------------------------------------

from lase_nb.book import html as lase_book, budget as bud  # noqa: E402

_PANDAS_TABLE = ('<table border="1" class="dataframe"><thead><tr style="text-align: right;"><th></th><th>a</th>'
                 '<th>b</th></tr></thead><tbody><tr><th>0</th><td>1</td><td>2</td></tr></tbody></table>')


def _executed_notebook(path: Path | None = None, failed: bool = False):
    """A hand-built executed chapter: a title, a parameters cell, papermill's injected cell, a
    widget-only cell, an empty cell, a tagged hidden cell, a "more" cell, a markdown table, a pandas
    table, a figure, a printed sentence; optionally a cell that failed and one that never ran."""
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    params = code("interactive = True\ntraces = '../data/traces/arith-smollm2'")
    params.metadata["tags"] = ["parameters"]
    injected = code("# Parameters\ninteractive = False\n")
    injected.metadata["tags"] = ["injected-parameters"]
    hidden, more = code("panel = build_widgets()"), md("A deep dive, one two three.")
    hidden.metadata["tags"] = [bud.BOOK_HIDE]
    more.metadata["tags"] = [bud.BOOK_MORE]
    table = code("df")
    table.outputs = [nbformat.v4.new_output("execute_result", {"text/html": _PANDAS_TABLE, "text/plain": "df"},
                                            execution_count=1)]
    figure = code("fig")
    figure.outputs = [nbformat.v4.new_output("display_data", {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"})]
    said = code("print(describe())")
    said.outputs = [nbformat.v4.new_output("stream", name="stdout", text="The gate escalates 12 problems.\n")]
    cells = [md("# 98 · Budget: a chapter to count\n\nThe first words of [the chapter](A1_bound.ipynb)."),
             params, injected, code("if interactive:\n    display(panel)"), code(""), md("  "), hidden,
             md("| a | b | c |\n|---|:-:|---|\n| 1 | 2 | 3 |"), table, figure, said, more]
    if failed:
        boom = code("raise ValueError('not enough values to unpack')")
        boom.outputs = [nbformat.v4.new_output("error", ename="ValueError", evalue="not enough values to unpack",
                                               traceback=["Traceback (most recent call last)", "SECRET-TRACE"])]
        cells += [boom, code("print('never ran')")]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    if path is not None:
        nbformat.write(nb, str(path))
    return nb


def test_words_and_tables_are_counted_as_a_reader_sees_them():
    assert bud.count_words("The **gate** reads [two numbers](02_calibration.ipynb): $p$ and 0.8 -- see <b>it</b>.") == 10
    assert bud.count_words("<!-- a comment -->") == 0
    # the lecturer's clock skips code: fenced blocks and inline code spans (issue 67)
    assert bud.count_words("Run `lase-nb record --n 6` now.\n\n```bash\nmake notebooks\n```\nDone.", skip_code=True) == 3
    assert bud.printed_words("$ lase-nb book --seminar\nThe gate escalates 12 problems.\npython x.py") == 5
    assert bud.markdown_tables("| a | b | c |\n|---|:-:|---:|\n| 1 | 2 | 3 |\n\ntext | not a table") == [3]
    assert bud.markdown_table_shapes("| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\nafter") == [(2, 2)]
    assert bud.html_tables(_PANDAS_TABLE) == [3]  # the index column counts: a reader sees it
    assert bud.html_table_shapes(_PANDAS_TABLE) == [(1, 3)]
    assert bud.html_tables('<table><tr><th colspan="4">x</th></tr><tr><td>1</td></tr></table>') == [4]
    assert bud.html_table_shapes('<table><tr><th colspan="4">x</th></tr><tr><td>1</td></tr></table>') == [(1, 4)]


def test_the_budget_counts_what_the_book_shows(tmp_path):
    _executed_notebook(tmp_path / "98_budget.ipynb")
    b = bud.chapter_budget(tmp_path / "98_budget.ipynb")
    # shown: the title, the markdown table, and three code cells; hidden: parameters, injected,
    # widget-only, empty (two), book-hide; the book-more cell is counted apart
    assert (b.chapter, b.markdown_cells, b.code_cells, b.more_cells) == ("98_budget", 2, 3, 1)
    assert b.cells == 5
    assert b.words == bud.count_words("98 · Budget: a chapter to count The first words of the chapter.") + 6
    assert b.printed_words == 5
    assert b.table_shapes == ((1, 3), (1, 3)) and b.table_columns == (3, 3) and b.tables == 2 and b.max_columns == 3
    assert (b.figures, b.multi_figures, b.sliders) == (1, 0, 0)
    assert b.minutes == pytest.approx(bud.presenting_minutes(b.words, 5, 1, b.table_shapes))
    assert b.meets() and b.over() == []


def test_the_budget_says_what_is_over():
    b = bud.ChapterBudget("99_big", code_cells=30, markdown_cells=15, words=1600, printed_words=0,
                          table_shapes=((4, 3), (4, 7), (4, 10), (2, 2), (2, 2), (2, 2)), figures=6)
    assert b.over() == ["45 cells > 40", "1600 words of markdown > 1500", "6 tables > 5",
                        "2 tables wider than 6 columns (widest 10)", "6 figures > 5"]
    assert not b.meets() and b.meets(bud.Budget(cells=50, words=2000, tables=6, columns=10, figures=6))


def test_presenting_minutes_follow_the_outside_lecturers_rates():
    """Issue 67: 120 words a minute for prose and printed results alike, 2 minutes a single-panel
    figure, 3 a multi-panel one, 2.5 a slider, 1-3 a table by its size, 2 a predict-then-run pause,
    1.5 a transcript exchange and 1.5 a term used before the path defines it."""
    assert bud.WORDS_PER_MINUTE == 120
    assert [bud.table_minutes(r, c) for r, c in ((4, 6), (5, 6), (10, 6), (11, 6))] == [1, 2, 2, 3]
    m = bud.presenting_minutes(words=1080, printed_words=360, figures=2, tables=[(3, 3), (8, 6), (20, 5)], pauses=1,
                               exchanges=2, multi_figures=1, sliders=1, undefined=2)
    assert m == pytest.approx(12 + 2 * 2 + 3 + 2.5 + (1 + 2 + 3) + 2 + 2 * 1.5 + 2 * 1.5)
    assert bud.presenting_minutes(0) == 0
    assert bud.transcript_exchanges("Stage 0 · leader ... Stage 1 · devil's advocate ... Stage 1 · leader (revision)") == 1
    assert bud.transcript_exchanges("Stage 0 · leader") == 1  # a leader's answer alone is one exchange to read


def test_the_clock_counts_pauses_and_transcripts_and_the_seminar_path_alone():
    """A predict-then-run pause is a markdown cell saying so; a transcript is counted by its
    exchanges, not by its words; a figure by its panels; the seminar path counts only the cells
    tagged ``seminar``."""
    from lase_nb.transcripts import TRANSCRIPT_MARK

    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    pause, intro = md(f"## 2.3 The gate\n\n**{bud.PREDICT_MARK}** Will it stop?"), md("# 02 · Title\n\nFour words here now.")
    said = code("show()")
    said.outputs = [nbformat.v4.new_output("display_data", {"text/markdown": TRANSCRIPT_MARK + "\n**Stage 0 · leader** "
                                                            + "word " * 300 + "**Stage 1 · devil's advocate** note"})]
    figure = code("fig")
    figure.outputs = [nbformat.v4.new_output("display_data", {"image/png": "iVBORw0KGgo=",
                                                              "text/plain": "<Figure size 1000x500 with 2 Axes>"})]
    for cell in (pause, said):
        cell.metadata["tags"] = [bud.SEMINAR]
    nb = nbformat.v4.new_notebook(cells=[intro, pause, said, figure])
    whole, path = bud.chapter_budget(nb), bud.seminar_budget(nb)
    assert (whole.pauses, whole.exchanges, whole.printed_words, whole.figures, whole.multi_figures) == (1, 1, 0, 1, 1)
    assert (path.cells, path.pauses, path.exchanges, path.figures) == (2, 1, 1, 0)
    assert path.minutes == pytest.approx(bud.count_words(pause.source) / 120 + 2 + 1.5)
    assert bud.seminar_sections(nb) == ["2.3"]
    assert whole.minutes == pytest.approx(path.minutes + bud.count_words(intro.source) / 120 + 3)
    # chapter 00's printed question and reply is one exchange; other printed text is read
    asked = code("ask()")
    asked.outputs = [nbformat.v4.new_output("stream", name="stdout", text="question: Two plus two?\n\nreply:\n"
                                                                               "It is \\boxed{4}.\n")]
    printed = code("print()")
    printed.outputs = [nbformat.v4.new_output("stream", name="stdout", text="reply: four words here now\n")]
    both = bud.chapter_budget(nbformat.v4.new_notebook(cells=[asked, printed]))
    assert (both.exchanges, both.printed_words) == (1, 5)


def _path_notebook(name: str, *cells: tuple[str, bool]):
    """A chapter of markdown cells, ``(text, on the seminar path)`` each."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text) for text, _ in cells])
    for cell, (_, on) in zip(nb.cells, cells):
        cell.metadata["tags"] = [bud.SEMINAR] if on else []
    nb.metadata["lase_nb"] = {"name": name}
    return nb


def test_a_term_used_before_the_path_defines_it_is_charged_where_first_used():
    """Issue 67: the path's first use of a term must lie in a section that defines it
    (:data:`lase_nb.book.budget.TERMS`); otherwise it costs the lecturer 1.5 minutes there."""
    terms = (bud.Term("organism", r"(?i)\borganism", ("03",)), bud.Term("replay", r"(?i)\breplay", ("5.1",)),
             bud.Term("Holm", r"\bHolm", ("07",)))
    first = _path_notebook("03_x", ("# 3. Pipeline\n\nAn **organism** is the model with an adapter.", True),
                           ("## 3.4 Regimes\n\nThe organism gains.", True))
    second = _path_notebook("05_y", ("## 5.1 Replay\n\nReplay reads recorded chains.", False),
                            ("## 5.2 Frontier\n\nWe replay the grid.", True))
    uses = bud.first_uses([first, second], terms)
    assert [(u.term, u.section, u.defined) for u in uses] == [("organism", "03", True), ("replay", "5.2", False)]
    assert [u.term for u in bud.undefined_terms([first, second], terms)] == ["replay"]
    assert bud.cell_sections(second) == ["5.1", "5.2"]


def test_the_path_by_section_and_its_one_total():
    """The seminar path by section: one budget per section presented, in path order; the chapters'
    minutes are their sections' sums, and the total every page prints is the sum of the rounded
    chapter minutes (issue 67, item 14: the index said 74 where the README's minutes summed to 73)."""
    nb = _path_notebook("02_z", ("## 2.2 Plots\n\n" + "word " * 120, True), ("## 2.3 AUROC\n\n" + "word " * 60, True),
                        ("## 2.4 Gate\n\nnot presented", False))
    sections = bud.section_budgets([nb])
    assert [s.chapter for s in sections] == ["02_z 2.2", "02_z 2.3"]
    assert [round(s.minutes, 2) for s in sections] == [round(122 / 120, 2), round(62 / 120, 2)]
    assert bud.path_minutes({"a": 10.4, "b": 20.4, "c": 30.4}) == 60  # not round(61.2) = 61


def test_the_paths_undefined_terms_are_the_budget_reports(tmp_path):
    """Issue 67: the committed seminar path uses no term before it defines it (by its sources: the
    markdown a lecturer reads), and the report prints the same count."""
    for nb in CORE:
        nbformat.write(jupytext.read(nb.with_suffix(".py")), str(tmp_path / f"{nb.stem}.ipynb"))
    sources = [nb.with_suffix(".py") for nb in CORE]
    undefined = bud.undefined_terms(sources)
    print("used on the path before it defines them:", ", ".join(f"{u.term} ({u.section})" for u in undefined))
    assert not undefined, [(u.term, u.section) for u in undefined]
    script = NOTEBOOKS.parent / "benchmarks" / "chapter_budget.py"
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"undefined terms on the path: {len(undefined)}" in done.stdout
    assert f"undefined_terms={len(undefined)}" in done.stdout


def test_the_budget_script_prints_a_row_per_chapter(tmp_path):
    _executed_notebook(tmp_path / "98_budget.ipynb")
    script = NOTEBOOKS.parent / "benchmarks" / "chapter_budget.py"
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("98_budget"))
    minutes = round(bud.chapter_budget(tmp_path / "98_budget.ipynb").minutes)
    assert row.split() == ["98_budget", "5", "18", "5", "2", "3", "1", str(minutes), "0", "yes"]
    failing = subprocess.run([sys.executable, str(script), str(tmp_path), "--check", "--cells", "4"],
                             capture_output=True, text=True, timeout=120)
    assert failing.returncode == 1 and "5 cells > 4" in failing.stdout


def test_book_titles_share_one_numbering_and_plurals_agree():
    assert lase_book.book_title("00_quickstart", "00 · Quickstart: one question") == "0. Quickstart: one question"
    assert lase_book.book_title("01_theory", "1. Why debate sometimes helps") == "1. Why debate sometimes helps"
    assert lase_book.book_title("A1_bound", "A1. The selective-gain bound") == "A1. The selective-gain bound"
    assert lase_book.book_title("07_claims", "The paper's claims") == "7. The paper's claims"
    assert [bud.plural(n, "figure") for n in (0, 1, 2)] == ["0 figures", "1 figure", "2 figures"]


def test_book_page_shows_what_a_lecturer_presents(tmp_path):
    (tmp_path / "nb").mkdir()
    _executed_notebook(tmp_path / "nb" / "98_budget.ipynb")
    index = build_book(tmp_path / "nb", tmp_path / "book").read_text()
    page = (tmp_path / "book" / "98_budget.html").read_text()
    body = page[page.index("<body"):]
    assert "interactive = True" not in body and "Parameters" not in body  # no parameters cell, none injected
    assert "if interactive" not in body and "build_widgets" not in body  # no widget-only or book-hide code
    assert "jp-mod-noOutputs" not in body  # no empty code box (every code cell shown has an output)
    assert ">0. Budget: a chapter to count<" not in body and "98. Budget: a chapter to count" in body
    assert '<details class="lase-more"><summary>' in body and "A deep dive" in body
    assert body.index("<details") < body.index("A deep dive") < body.index("</details>")
    assert "Recordings shown on this page" in body and "data/traces/arith-smollm2" in body  # from its parameters
    assert "98. Budget: a chapter to count" in index and "(1 figure, 2 tables, about" in index
    assert "<ol" not in index  # the titles carry the numbers; no second numbering


def test_book_marks_a_failed_chapter_and_shows_no_traceback(tmp_path, capsys):
    (tmp_path / "nb").mkdir()
    _executed_notebook(tmp_path / "nb" / "98_budget.ipynb", failed=True)
    index = build_book(tmp_path / "nb", tmp_path / "book").read_text()
    body = (tmp_path / "book" / "98_budget.html").read_text()
    body = body[body.index("<body"):]
    assert "FAILED" in body[:body.index("Budget: a chapter")]  # at the top of the page
    assert "ValueError: not enough values to unpack" in body
    assert "SECRET-TRACE" not in body and "Traceback" not in body and "never ran" not in body
    assert "1 remaining cell did not run" in body
    assert 'class="failed">FAILED</strong>' in index
    assert "98_budget: FAILED" in capsys.readouterr().out


def test_book_names_the_recordings_the_chapter_read(tmp_path):
    """An executed chapter remembers each run manifest its kernel opened; its page names the
    studies: label, model, data set, n and dtype."""
    study = tmp_path / "mine"
    for run, n in (("lase-full", 12), ("mv", 6)):
        (study / run).mkdir(parents=True)
        (study / run / "manifest.json").write_text(json.dumps(
            {"model": "my-model", "dataset": "math500", "n": n, "dtype": "bfloat16", "backend": "openai"}))
    (study / "study.json").write_text(json.dumps({"label": "my study"}))
    src = _tiny_notebook(tmp_path / "95_reads.ipynb",
                         "import json, pathlib\n"
                         f"for run in ('lase-full', 'mv'):\n    json.loads(pathlib.Path({str(study)!r}, run, 'manifest.json').read_text())")
    (tmp_path / "out").mkdir()
    execute(src, tmp_path / "out" / "95_reads.ipynb")
    stored = nbformat.read(str(tmp_path / "out" / "95_reads.ipynb"), as_version=4).metadata["lase_nb"]["recordings"]
    assert stored == [str(study / "lase-full" / "manifest.json"), str(study / "mv" / "manifest.json")]
    build_book(tmp_path / "out", tmp_path / "book")
    page = (tmp_path / "book" / "95_reads.html").read_text()
    assert "my study" in page and "my-model" in page and "math500" in page and "bfloat16" in page
    assert "n = 12 (lase-full); n = 6 (mv)" in page


@pytest.mark.parametrize("nb", BOOKS, ids=lambda p: p.stem)
def test_no_notebook_has_an_empty_cell(nb: Path):
    """A blank line too many after the jupytext header makes an empty first code cell, an empty
    box above the title in JupyterLab."""
    cells = jupytext.read(nb.with_suffix(".py")).cells
    assert cells[0].cell_type == "markdown" and cells[0].source.lstrip().startswith("# "), f"{nb.stem}: title first"
    assert not [i for i, c in enumerate(cells) if not c.source.strip()], f"{nb.stem}: empty cells"


#: Core chapters that do not meet the budget yet (issue 43): their budget test is an expected
#: failure. Take a chapter off this list once `python benchmarks/chapter_budget.py` says it fits.
OVER_BUDGET: tuple[str, ...] = ()


def _over_budget(nb: Path):
    if nb.stem in OVER_BUDGET:
        return pytest.param(nb, marks=pytest.mark.xfail(strict=False, reason=f"{nb.stem} is over the chapter budget "
                                                        "(issue 43); OVER_BUDGET lists it"))
    return nb


@pytest.mark.slow
@pytest.mark.parametrize("nb", [_over_budget(b) for b in CORE], ids=lambda p: p.stem)
def test_core_chapter_meets_its_budget(nb: Path, tmp_path_factory):
    """What a lecturer presents of each core chapter (the book's view of the executed chapter):
    at most 40 cells, 1,500 words of markdown, 5 tables of at most 6 columns, 5 figures."""
    from lase_nb.book.budget import chapter_budget

    b = chapter_budget(_executed(nb, tmp_path_factory)[0])
    assert b.meets(), f"{nb.stem}: {'; '.join(b.over())}: move what does not fit to an appendix or a book-more section"


@pytest.mark.slow
@pytest.mark.xfail(bool(OVER_BUDGET), strict=False, reason="the core chapters are over the budget (issue 43)")
def test_core_chapters_fit_the_total_words(tmp_path_factory):
    from lase_nb.book.budget import BUDGET, chapter_budget

    words = {nb.stem: chapter_budget(_executed(nb, tmp_path_factory)[0]).words for nb in CORE}
    assert sum(words.values()) <= BUDGET.core_words, words


@pytest.mark.slow
def test_readme_seminar_path_is_the_lecturers_clock_and_fits_90_minutes(tmp_path_factory):
    """Issue 56: the README's chapter minutes are the seminar path's (the cells tagged ``seminar``)
    by :func:`lase_nb.book.budget.presenting_minutes` of the executed chapters (what
    ``benchmarks/chapter_budget.py`` prints in its ``seminar`` column, rounded), and the path with
    :data:`lase_nb.book.budget.DISCUSSION_MINUTES` of discussion fits :data:`lase_nb.book.budget.CORE_MINUTES`."""
    from lase_nb.book.budget import CORE_MINUTES, DISCUSSION_MINUTES, path_minutes, seminar_minutes

    exact = seminar_minutes([_executed(nb, tmp_path_factory)[0] for nb in CORE])
    minutes = {k: round(m) for k, m in exact.items()}
    assert _readme_path_minutes() == minutes, \
        "update the README's seminar minutes from `python benchmarks/chapter_budget.py` (its seminar column)"
    assert path_minutes(exact) == sum(minutes.values())  # the seminar index's total is the README's sum
    assert path_minutes(exact) + DISCUSSION_MINUTES <= CORE_MINUTES, minutes


@pytest.mark.slow
@pytest.mark.parametrize("nb", CORE, ids=lambda p: p.stem)
def test_the_seminar_paths_printed_sentences_point_only_to_what_it_shows(nb: Path, tmp_path_factory):
    """Issue 67: what a seminar cell prints (a ``describe_*`` sentence) names no section the path
    leaves out; ``tests/test_xrefs.py`` checks the markdown of the same cells."""
    from lase_nb.book.budget import path_cells, said_text
    from tests.test_xrefs import PATH_XREFS_PENDING, off_path

    chapter = nb.stem[:2]
    if chapter in PATH_XREFS_PENDING:
        pytest.xfail(PATH_XREFS_PENDING[chapter])
    cells = [pc.cell for pc in path_cells([_executed(nb, tmp_path_factory)[0]]) if pc.cell.get("cell_type") == "code"]
    bad = off_path([said_text(c) for c in cells], nb.name, chapter)
    assert not bad, [(r.text, r.target) for r in bad]


def _readme_path() -> dict[str, tuple[str, str]]:
    """The README's chapter table: per core chapter, the sections presented and their minutes (as written)."""
    readme = (NOTEBOOKS.parent / "README.md").read_text()
    return {k: (sections, minutes) for k, sections, minutes in
            re.findall(r"^\| `(\d\d_\w+)` \|[^|]*\| ([^|]*) \| (\d+) \|\s*$", readme, re.M)}


def _readme_path_minutes() -> dict[str, int]:
    return {k: int(m) for k, (_, m) in _readme_path().items()}


def test_readme_names_the_sections_the_seminar_presents():
    """The README's path column lists, per chapter, the sections tagged ``seminar`` in its source
    ("the whole chapter" where its opening is tagged and it has no numbered section, "reading" where
    it presents none), and its minutes with the discussion stay within the slot."""
    from lase_nb.book.budget import CORE_MINUTES, DISCUSSION_MINUTES, seminar_sections

    table = _readme_path()
    assert set(table) == {nb.stem for nb in CORE}, table
    for nb in CORE:
        sections = seminar_sections(nb.with_suffix(".py"))
        written = table[nb.stem][0].strip()
        expected = ("the whole chapter" if sections == [nb.stem[:2]] else ", ".join(sections) or "reading")
        assert written == expected, (nb.stem, written, sections)
    assert sum(_readme_path_minutes().values()) + DISCUSSION_MINUTES <= CORE_MINUTES


@pytest.mark.parametrize("nb", CORE, ids=lambda p: p.stem)
def test_no_cell_is_both_on_the_seminar_path_and_in_more(nb: Path):
    """A closed "More" section is not presented: a cell tagged ``seminar`` is never ``book-more``
    nor ``book-hide``."""
    from lase_nb.book.budget import BOOK_HIDE, BOOK_MORE, SEMINAR

    both = [c.source[:60] for c in jupytext.read(nb.with_suffix(".py")).cells
            if SEMINAR in c.metadata.get("tags", []) and {BOOK_MORE, BOOK_HIDE} & set(c.metadata.get("tags", []))]
    assert not both, both


DRAWING = [b for b in BOOKS if "savefig(" in b.with_suffix(".py").read_text()]
#: Figures drawn from a live call of the embedded model (``plots.savefig(..., live=True)``), not
#: from a recording: their numbers are the model's float arithmetic on this CPU, whose last bits
#: differ between CPUs, so they are written under build/, never into the committed figures/.
LIVE_FIGURES = sorted(f"{name}.png" for b in BOOKS for name in
                      re.findall(r"savefig\(\s*\w+,\s*[\"']([\w-]+)[\"'][^)]*live=True", b.with_suffix(".py").read_text()))


def test_no_committed_figure_is_drawn_from_a_live_model_call():
    """`make notebooks` leaves `git status` clean on any CPU: the figures a live model call draws
    (quickstart tokens, exact vs top-k entropy) are not in figures/ and the README shows none."""
    assert {"quickstart_tokens.png", "calibration_entropy_estimate.png"} <= set(LIVE_FIGURES), LIVE_FIGURES
    figures = NOTEBOOKS.parent / "figures"
    assert not [f for f in LIVE_FIGURES if (figures / f).exists()], "remove live figures from figures/ (git rm)"
    readme = (NOTEBOOKS.parent / "README.md").read_text()
    assert not [f for f in LIVE_FIGURES if f in readme]


def test_a_live_figure_never_goes_into_the_committed_figures(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lase_nb import plots

    monkeypatch.setattr(plots, "REPO", tmp_path)  # a repository whose figures/ is the committed one
    monkeypatch.delenv(plots.LIVE_FIGURES_ENV, raising=False)
    monkeypatch.setenv(plots.FIGURES_ENV, str(tmp_path / "figures"))
    fig, _ = plt.subplots()
    assert plots.savefig(fig, "drawn") == tmp_path / "figures" / "drawn.png"
    assert plots.savefig(fig, "called", live=True) == tmp_path / "build" / "figures" / "called.png"
    monkeypatch.setenv(plots.FIGURES_ENV, str(tmp_path / "elsewhere"))  # a user's run: all figures together
    assert plots.savefig(fig, "called", live=True) == tmp_path / "elsewhere" / "called.png"
    monkeypatch.setenv(plots.LIVE_FIGURES_ENV, str(tmp_path / "figures"))  # even when told so
    assert plots.savefig(fig, "called", live=True).parent == tmp_path / "build" / "figures"
    assert not (tmp_path / "figures" / "called.png").exists()
    plt.close(fig)


@pytest.mark.slow
@pytest.mark.parametrize("nb", DRAWING, ids=lambda p: p.stem)
def test_executed_chapter_draws_the_committed_figures(nb: Path, tmp_path_factory):
    """The committed figures are what the code draws: executing a chapter as `make notebooks` does
    writes each of its figures byte for byte as committed in figures/ (so `git status figures/`
    stays clean); a difference means the code or the data changed and figures/ was not refreshed.
    Figures from a live model call go elsewhere (:data:`LIVE_FIGURES`), so none is exempt here."""
    import hashlib

    figures = NOTEBOOKS.parent / "figures"
    folder = _executed(nb, tmp_path_factory)[1]
    written = sorted(folder.glob("*.png"))
    live = sorted((folder.parent / "live").glob("*.png"))  # beside it, as both executions above put them
    assert written or live, f"{nb.stem} wrote no figure"
    assert {p.name for p in live} <= set(LIVE_FIGURES), "a figure went to the live folder without live=True"
    digest = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()  # noqa: E731
    changed = [p.name for p in written
               if not (figures / p.name).is_file() or digest(p) != digest(figures / p.name)]
    assert not changed, (f"{nb.stem} draws {changed} differently from figures/: run `make notebooks` and commit "
                         "figures/ (or find what made the drawing change)")


@pytest.mark.slow
def test_make_notebooks_writes_exactly_the_committed_figures(tmp_path_factory):
    """Issue 56: the set of figures the chapters write on their defaults (as `make notebooks` runs
    them) is the set committed in figures/: a committed figure no default run draws (one that needs
    several difficulty levels, say) is stale, and a figure drawn but not committed is missing."""
    written = {p.name for nb in DRAWING for p in _executed(nb, tmp_path_factory)[1].glob("*.png")}
    committed = {p.name for p in (NOTEBOOKS.parent / "figures").glob("*.png")}
    assert written == committed, (f"committed but not drawn: {sorted(committed - written)}; "
                                  f"drawn but not committed: {sorted(written - committed)}")


def test_book_pages_link_to_each_other_describe_figures_and_hide_set_up_code(tmp_path):
    """Issue 51: previous/next links on every page, an alternative text naming each figure's section
    (not nbconvert's "No description has been provided"), and the set-up and loader code hidden
    while their printed lines stay."""
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    (tmp_path / "nb").mkdir()
    for stem, title in (("97_first", "First chapter"), ("98_budget", None)):
        if title is None:
            _executed_notebook(tmp_path / "nb" / f"{stem}.ipynb")
            continue
        setup = code("import pandas as pd\nfrom lase_nb import runs\nshown = runs.chapter_studies('committed')")
        setup.outputs = [nbformat.v4.new_output("stream", name="stdout", text="study 'SmolLM2-135M': committed\n")]
        loader = code("runs = load_everything()")
        loader.metadata["tags"] = [bud.BOOK_HIDE_INPUT]
        loader.outputs = [nbformat.v4.new_output("stream", name="stdout", text="loaded 7 runs\n")]
        figure = code("fig = plot()")
        figure.outputs = [nbformat.v4.new_output("display_data", {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"})]
        nb = nbformat.v4.new_notebook(cells=[md(f"# 97 · {title}"), setup, loader,
                                             md("## 1.2 The gate\n\nThe **gate** escalates the unsure ones. More."),
                                             figure])
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, str(tmp_path / "nb" / f"{stem}.ipynb"))
    build_book(tmp_path / "nb", tmp_path / "book")
    first = (tmp_path / "book" / "97_first.html").read_text()
    second = (tmp_path / "book" / "98_budget.html").read_text()
    body = first[first.index("<body"):]
    assert 'rel="next" href="98_budget.html"' in body and 'rel="prev"' not in body and 'href="index.html"' in body
    assert 'rel="prev" href="97_first.html"' in second and 'rel="next"' not in second
    assert "No description has been provided" not in first + second
    assert 'alt="Figure in section 1.2 The gate: The gate escalates the unsure ones."' in body
    assert "import pandas" not in body and "load_everything" not in body  # set-up and loader code hidden
    assert "study &#x27;SmolLM2-135M&#x27;: committed" in body or "study 'SmolLM2-135M': committed" in body
    assert "loaded 7 runs" in body  # their printed lines stay


def test_seminar_book_builds_the_path_alone_and_the_full_book_marks_it(tmp_path, capsys):
    """Issue 56: `lase-nb book --seminar` writes a page per chapter that presents something: the
    title, the cells tagged ``seminar`` in order (figures included), the sections and minutes, a
    link to the full chapter built beside it; nothing loaded from the network. The full book marks
    the path's cells; a chapter that presents nothing has no seminar page."""
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    (tmp_path / "nb").mkdir()
    _executed_notebook(tmp_path / "nb" / "97_reading.ipynb")  # no seminar cell: reading only
    nb = _executed_notebook()
    section = md("## 98.2 The gate\n\nThe **gate** decides; see [A1](A1_bound.ipynb).")
    figure = next(c for c in nb.cells if c.cell_type == "code" and c.get("outputs")
                  and "image/png" in c.outputs[0].get("data", {}))
    for cell in (section, figure):
        cell.metadata["tags"] = [bud.SEMINAR]
    nb.cells = nb.cells[:9] + [section] + nb.cells[9:]  # just before the figure: one run of path cells
    nbformat.write(nb, str(tmp_path / "nb" / "98_budget.ipynb"))
    index = build_book(tmp_path / "nb", tmp_path / "seminar", seminar=True).read_text()
    assert (tmp_path / "seminar" / "full" / "98_budget.html").is_file() and (tmp_path / "seminar" / "full" / "index.html").is_file()
    assert not (tmp_path / "seminar" / "97_reading.html").exists()
    page = (tmp_path / "seminar" / "98_budget.html").read_text()
    body = page[page.index("<body"):]
    assert "98. Budget: a chapter to count" in body and "98.2 The gate" in body and "data:image/png;base64," in body
    assert "The first words of" not in body and "The gate escalates 12 problems" not in body  # untagged cells left out
    assert "Seminar path: 1 section (98.2), about" in body and 'href="full/98_budget.html"' in body
    assert 'href="full/A1_bound.html"' in body  # links to other chapters open the full book
    assert not re.search(r'src="https?://', page)
    path = bud.seminar_minutes(sorted((tmp_path / "nb").glob("*.ipynb")))
    minutes = bud.path_minutes(path)
    assert minutes == round(path["98_budget"])  # the index's total is the pages' sum
    assert "the seminar path</h1>" in index and f"about {minutes} min" in index and "97_reading" not in index
    assert f"Seminar path: 1 section (98.2), about {round(path['98_budget'])} min" in body
    full = (tmp_path / "seminar" / "full" / "98_budget.html").read_text()
    body = full[full.index("<body"):]
    assert body.count('class="lase-seminar"') == 1 and body.index('class="lase-seminar"') < body.index("98.2 The gate")
    assert "The gate escalates 12 problems" in body and "seminar path" in (tmp_path / "seminar" / "full" / "index.html").read_text()
