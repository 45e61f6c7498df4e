"""Execute the notebook collection with papermill (``make notebooks``, ``lase-nb notebooks``) and
turn the executed chapters into a browsable HTML book (``make book``)."""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import time
from pathlib import Path
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from .errors import ConfigError, LaseError

if TYPE_CHECKING:
    from nbconvert import HTMLExporter

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPO / "notebooks"

#: Seconds one cell may run before the chapter fails (``lase-nb notebooks --cell-timeout``).
CELL_TIMEOUT_S = 900

#: Environment of the kernels papermill starts: no progress bars in the saved outputs, and no
#: ``MPLBACKEND`` so the kernel keeps its inline backend and figures land in the notebook.
KERNEL_ENV = {"TQDM_DISABLE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error"}
KERNEL_ENV_DROP = ("MPLBACKEND",)


class NotebookTimeout(LaseError):
    """A cell of a chapter ran longer than the cell timeout."""


#: The core chapters (``00_quickstart`` ...) and the appendix notebooks they link to (``A1_bound`` ...).
CHAPTER_GLOB, APPENDIX_GLOB = "[0-9][0-9]_*.ipynb", "A[0-9]_*.ipynb"


def collection(folder: Path) -> list[Path]:
    """The notebooks in ``folder``: the numbered core chapters in order, then the appendix."""
    return sorted(folder.glob(CHAPTER_GLOB)) + sorted(folder.glob(APPENDIX_GLOB))


def list_notebooks(names: Sequence[str] | None = None) -> list[Path]:
    """The collection's notebooks in chapter order (the appendix last), optionally filtered by name or prefix."""
    books = collection(NOTEBOOKS)
    if not names:
        return books
    chosen = [b for b in books if any(b.stem == n or b.stem.startswith(n) for n in names)]
    if not chosen:
        raise ConfigError(f"no notebook matches {list(names)}; available: {', '.join(b.stem for b in books)}")
    return chosen


def parse_value(text: str) -> Any:
    """A ``-p KEY VALUE`` value typed as the notebook expects it.

    ``True``/``False`` (any case, also ``yes``/``no``) become booleans, ``None``/``null`` becomes
    None, integers and floats become numbers, JSON lists and objects are decoded; anything else
    stays a string. So ``-p interactive False`` arrives as ``False``, not as the truthy ``"False"``.
    """
    s = text.strip()
    low = s.lower()
    if low in ("true", "yes"):
        return True
    if low in ("false", "no"):
        return False
    if low in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(s)
        except ValueError:
            pass
    if s[:1] in "[{\"":
        try:
            return json.loads(s)
        except json.JSONDecodeError:
            pass
    return text


#: IPython startup file of the papermill kernels: ``tqdm.auto`` would pick the notebook bar, which
#: ignores ``TQDM_DISABLE`` and prints a text bar into the outputs; the plain bar honours it. And
#: jupyter_client interrupts (SIGINT) every kernel it shuts down: a kernel still finishing a message
#: then logs "KeyboardInterrupt caught in kernel." as an ERROR although the chapter ran to its end,
#: so the kernel's log drops that one line. Last, an audit hook notes every run manifest the
#: chapter opens (``$LASE_RECORDINGS_LOG``), so that the book can name the recordings a page shows.
_QUIET_STARTUP = """import logging
import tqdm.auto, tqdm.std
tqdm.auto.tqdm = tqdm.std.tqdm


class _ShutdownInterrupt(logging.Filter):
    def filter(self, record):
        return not record.getMessage().startswith("KeyboardInterrupt caught in kernel")


try:
    get_ipython().kernel.log.addFilter(_ShutdownInterrupt())
except AttributeError:  # not a kernel (plain IPython)
    pass


def _log_manifests():
    # Append each run manifest the chapter reads to $LASE_RECORDINGS_LOG (the book names them).
    import os
    import sys

    log = os.environ.get("LASE_RECORDINGS_LOG")
    if not log:
        return
    seen = set()

    def hook(event, args):
        if event != "open" or not args or not isinstance(args[0], (str, os.PathLike)):
            return
        path = os.fspath(args[0])
        mode = args[1] if len(args) > 1 else "r"
        if isinstance(path, str) and path.endswith("manifest.json") and path not in seen \\
                and (mode is None or "r" in str(mode)):
            seen.add(path)
            try:
                with open(log, "a", encoding="utf-8") as f:
                    f.write(os.path.abspath(path) + "\\n")
            except OSError:
                pass

    sys.addaudithook(hook)


_log_manifests()
del _log_manifests
"""

#: Environment variable naming the file a chapter's kernel appends every run manifest it reads to
#: (:data:`_QUIET_STARTUP` installs the audit hook; :func:`execute` stores the list in the notebook).
RECORDINGS_ENV = "LASE_RECORDINGS_LOG"


def figures_folder(out: Path, figures: Path | None = None) -> Path:
    """Where executed chapters save their figures: ``figures`` when given, else
    ``$LASE_FIGURES_DIR`` when set, else ``out/figures`` (so a rerun with other parameters leaves
    the repository's ``figures/``, the README's images, alone; ``make notebooks`` asks for them)."""
    from .plots import FIGURES_ENV

    if figures is not None:
        return Path(figures)
    env = os.environ.get(FIGURES_ENV)
    return Path(env) if env else Path(out) / "figures"


@contextlib.contextmanager
def kernel_environment(figures: Path | None = None, recordings: Path | None = None,
                       live_figures: Path | None = None, threads: int | None = None) -> Iterator[None]:
    """Set :data:`KERNEL_ENV` and remove :data:`KERNEL_ENV_DROP` for the kernels started inside;
    the kernels read a private IPython profile whose startup file silences progress bars (see
    :data:`_QUIET_STARTUP`). ``figures``: the folder their figures go to (``$LASE_FIGURES_DIR``);
    ``live_figures``: the folder of figures drawn from a live model call (``$LASE_LIVE_FIGURES_DIR``;
    never the committed ``figures/``, see :func:`lase_nb.plots.live_figures_dir`); ``recordings``: a
    file the kernels append each run manifest they read to (``$LASE_RECORDINGS_LOG``); ``threads``:
    CPU threads of each kernel's model (``$OMP_NUM_THREADS``, unless the caller set it)."""
    import tempfile

    from .plots import FIGURES_ENV, LIVE_FIGURES_ENV

    saved = {k: os.environ.get(k) for k in (*KERNEL_ENV, *KERNEL_ENV_DROP, "IPYTHONDIR", FIGURES_ENV, RECORDINGS_ENV,
                                            LIVE_FIGURES_ENV, "OMP_NUM_THREADS")}
    ipython_dir = tempfile.TemporaryDirectory(prefix="lase-nb-ipython-")
    startup = Path(ipython_dir.name) / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-lase-quiet.py").write_text(_QUIET_STARTUP)
    os.environ.update(KERNEL_ENV, IPYTHONDIR=ipython_dir.name)
    if figures is not None:
        Path(figures).mkdir(parents=True, exist_ok=True)
        os.environ[FIGURES_ENV] = str(Path(figures).resolve())
    if live_figures is not None:
        Path(live_figures).mkdir(parents=True, exist_ok=True)
        os.environ[LIVE_FIGURES_ENV] = str(Path(live_figures).resolve())
    if threads is not None and not saved["OMP_NUM_THREADS"]:
        os.environ["OMP_NUM_THREADS"] = str(threads)
    if recordings is not None:
        os.environ[RECORDINGS_ENV] = str(Path(recordings).resolve())
    else:
        os.environ.pop(RECORDINGS_ENV, None)
    for k in KERNEL_ENV_DROP:
        os.environ.pop(k, None)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        ipython_dir.cleanup()


def kernel_config():
    """Traitlets config for the kernels papermill starts: CurveZMQ transport encryption.

    A kernel reached over TCP without encryption warns about it on every start (ipykernel 7); the
    kernel manager (jupyter_client >= 8.10) provisions CurveZMQ keys when the kernelspec declares
    support (``"auto"``), so the chapters' traffic is encrypted and the kernel has nothing to warn
    about. Older jupyter_client versions, or a pyzmq without CurveZMQ, keep their default.
    """
    import zmq
    from jupyter_client.manager import KernelManager
    from traitlets.config import Config

    if "transport_encryption" in KernelManager.class_trait_names() and zmq.has("curve"):
        return Config({"KernelManager": {"transport_encryption": "auto"}})
    return Config()


def execute(nb: Path, out: Path, params: dict[str, Any] | None = None, cell_timeout: int = CELL_TIMEOUT_S,
            figures: Path | None = None, live_figures: Path | None = None, threads: int | None = None) -> None:
    """Run one chapter with papermill into ``out``, its figures saved under ``figures`` and those
    drawn from a live model call under ``live_figures`` (default: as the environment says, see
    :func:`lase_nb.plots.figures_dir` and :func:`~lase_nb.plots.live_figures_dir`); ``threads``: the
    model's CPU threads in the kernel. A cell running past ``cell_timeout`` seconds raises
    :class:`NotebookTimeout` naming the chapter and the cell."""
    import papermill as pm
    from nbclient.exceptions import CellTimeoutError

    import tempfile

    current: dict[str, Any] = {}

    def on_cell_start(cell, cell_index: int) -> None:
        current.update(index=cell_index, source=cell.source)

    with tempfile.TemporaryDirectory(prefix="lase-nb-recordings-") as tmp:
        log = Path(tmp) / "manifests.txt"
        try:
            with kernel_environment(figures, recordings=log, live_figures=live_figures, threads=threads):
                pm.execute_notebook(str(nb), str(out), parameters=params or {}, cwd=str(NOTEBOOKS),
                                    kernel_name="python3", progress_bar=False, execution_timeout=cell_timeout,
                                    on_cell_start=on_cell_start, config=kernel_config())
        except CellTimeoutError:
            first = (current.get("source") or "").strip().splitlines()[:1]
            raise NotebookTimeout(
                f"{nb.stem}: cell {current.get('index', '?')} ({first[0][:70] if first else 'empty'!r}) ran "
                f"longer than {cell_timeout} s and was stopped; the partial notebook is in {out}") from None
        finally:
            _store_recordings(Path(out), log)


def _store_recordings(executed: Path, log: Path) -> None:
    """Write the run manifests the chapter read (``log``, one path a line) into the executed
    notebook's metadata (``lase_nb.recordings``), where :func:`build_book` finds them."""
    import nbformat

    if not executed.is_file():
        return
    paths = list(dict.fromkeys(log.read_text(encoding="utf-8").splitlines())) if log.is_file() else []
    nb = nbformat.read(str(executed), as_version=4)
    nb.metadata.setdefault("lase_nb", {})["recordings"] = [p for p in paths if p]
    nbformat.write(nb, str(executed))


class NotebookFailed(LaseError):
    """A chapter run beside others stopped with an error (its executed copy shows the cell)."""


def default_jobs() -> int:
    """Chapters :func:`run_notebooks` runs at once by default: the CPU cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


#: A chapter whose source holds this may call a model (the embedded one on the default backend).
_CALLS_A_MODEL = "live_engine("


def _calls_a_model(nb: Path) -> bool:
    source = nb.with_suffix(".py")
    return source.is_file() and _CALLS_A_MODEL in source.read_text()


def start_order(books: Sequence[Path]) -> list[Path]:
    """The order chapters start in when they run at once: those that call a model first (their
    calls are the slowest cells; an appendix's live episode before the core chapters), then the
    rest in chapter order, so that no long chapter starts last while the other cores idle."""
    def key(i_nb: tuple[int, Path]) -> tuple[bool, bool, int]:
        i, nb = i_nb
        calls = _calls_a_model(nb)
        return (not calls, calls and not nb.stem.startswith("A"), i)

    return [nb for _, nb in sorted(enumerate(books), key=key)]


def _prepare_model(params: Mapping[str, Any]) -> None:
    """Convert the local model the chapters call, once, before any of them calls it (each would
    otherwise wait for the first one's conversion, holding a core idle)."""
    from .backends.local.files import DEFAULT_MODEL, prepare

    t0 = time.perf_counter()
    prepare(str(params.get("model") or DEFAULT_MODEL))
    if time.perf_counter() - t0 > 1:
        print(f"[notebooks] the model converted once in {time.perf_counter() - t0:.1f} s", flush=True)


def _run_one(nb: Path, out: Path, params: dict[str, Any], timeout: int, figures: Path, live_figures: Path,
             threads: int | None, beside_others: bool) -> float:
    """One chapter for :func:`run_notebooks`; returns its seconds. Beside others (in a worker
    process) an error comes back as :class:`NotebookFailed`, which crosses the process boundary."""
    t0 = time.perf_counter()
    print(f"[notebooks] {nb.name} {params or ''}", flush=True)
    try:
        execute(nb, out / nb.name, params, timeout, figures=figures, live_figures=live_figures, threads=threads)
    except LaseError:
        raise
    except Exception as e:
        if not beside_others:
            raise
        where = f"cell {e.exec_count}: {e.ename}: {e.evalue}" if hasattr(e, "ename") else f"{type(e).__name__}: {e}"
        raise NotebookFailed(f"{nb.stem} failed at {where.strip()[:500]} (the executed copy: {out / nb.name})") from None
    seconds = time.perf_counter() - t0
    print(f"[notebooks] {nb.name} done in {seconds:.1f} s", flush=True)
    return seconds


def run_notebooks(names: Sequence[str] | None = None, params: dict[str, Any] | None = None,
                  out: Path = REPO / "build" / "notebooks", timeout: int = CELL_TIMEOUT_S,
                  figures: Path | None = None, jobs: int | None = None) -> dict[str, float]:
    """Run each notebook with papermill into ``out``; pass each only the parameters it declares.

    ``jobs`` chapters run at once, each in its own process (default :func:`default_jobs`, the
    cores; the chapters are independent); the model they call is converted once, in a worker beside
    the chapters that call none, before any chapter that calls it starts; each kernel's model then
    gets ``cores // jobs`` threads. Figures go to :func:`figures_folder`
    (``out/figures`` unless ``figures`` or ``$LASE_FIGURES_DIR`` says otherwise), those drawn from a
    live model call to ``out/figures`` (never the committed ``figures/``). ``timeout`` bounds every
    cell (seconds). Returns the execution time per chapter, in chapter order.
    """
    import papermill as pm

    from .runs import absolute_paths

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    params = absolute_paths(params or {})  # a folder the caller names is read from the caller's folder, not notebooks/
    books = list_notebooks(names)
    if jobs is not None and jobs < 1:
        raise ConfigError(f"--jobs must be a positive number of chapters at once (got {jobs})")
    jobs = max(1, min(jobs or default_jobs(), len(books)))
    mine = {nb: {k: v for k, v in params.items() if k in pm.inspect_notebook(str(nb))} for nb in books}
    where = dict(out=out, timeout=timeout, figures=figures_folder(out, figures), live_figures=out / "figures")
    if jobs == 1:
        return {nb.stem: _run_one(nb, params=mine[nb], threads=None, beside_others=False, **where) for nb in books}
    import concurrent.futures as cf
    import multiprocessing

    threads = max(1, default_jobs() // jobs)
    print(f"[notebooks] {len(books)} notebooks, {jobs} at once", flush=True)
    # The model's conversion takes one worker; the chapters that call no model run beside it, and
    # those that call it start once it is done (first, as start_order puts them).
    # (only the embedded, local model is converted; an empty set: nothing to wait for)
    waits_for_model = {nb for nb in books if _calls_a_model(nb)} if params.get("backend", "local") == "local" else set()
    waiting = start_order(books)
    times: dict[str, float] = {}
    with cf.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        running: dict[cf.Future, Path | None] = {}  # None: the model's conversion
        if waits_for_model:
            running[pool.submit(_prepare_model, params)] = None

        def start_next() -> None:
            while len(running) < jobs:
                nb = next((b for b in waiting if b not in waits_for_model), None)
                if nb is None:
                    return
                waiting.remove(nb)
                running[pool.submit(_run_one, nb, params=mine[nb], threads=threads, beside_others=True, **where)] = nb

        try:
            start_next()
            while running:
                done, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
                for future in done:
                    nb, seconds = running.pop(future), future.result()
                    if nb is None:
                        waits_for_model.clear()
                    else:
                        times[nb.stem] = seconds
                start_next()
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)  # the chapters already running finish; no new one starts
            raise
    return {nb.stem: times[nb.stem] for nb in books}


# --------------------------------------------------------------------------------------------
# what a lecturer shows: the cells of the book, and the chapter budget
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
    return cell.get("cell_type") == "code" and (BOOK_HIDE_INPUT in _tags(cell)
                                                 or bool(_SETUP.match(str(cell.get("source", "")))))


def figure_alt_texts(nb: Mapping[str, Any]) -> list[str]:
    """One alternative text per image output of ``nb``, in order: the chapter section it sits in
    and the first sentence of the markdown just before its cell (which says what the figure shows)."""
    alts, section, prose = [], "", ""
    for cell in nb.get("cells", []):
        source = _joined(cell.get("source", ""))
        if cell.get("cell_type") == "markdown":
            text = " ".join(ln.strip() for ln in source.splitlines() if ln.strip() and not ln.lstrip().startswith("#"))
            heads = [ln.lstrip("#").strip() for ln in source.splitlines() if ln.lstrip().startswith("#")]
            if heads:
                section = heads[-1]
            if text:
                prose = re.split(r"(?<=[.?!])\s", re.sub(r"[*`$\\]", "", _LINK_TARGET.sub("]", text)), maxsplit=1)[0]
                prose = prose.replace("[", "").replace("]", "")
            continue
        for o in cell.get("outputs", []) or []:
            if any(k in (o.get("data") or {}) for k in _IMAGE_TYPES):
                alts.append(f"Figure in section {section}: {prose}" if prose else f"Figure in section {section}")
    return alts


def _tags(cell: Mapping[str, Any]) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _is_empty(cell: Mapping[str, Any]) -> bool:
    return not str(cell.get("source", "")).strip() and not cell.get("outputs")


def book_hides(cell: Mapping[str, Any]) -> bool:
    """Whether the book leaves ``cell`` out: a tag of :data:`HIDDEN_TAGS`, an empty cell, or a code
    cell that only builds widgets (it starts with ``if interactive`` and has no output)."""
    if set(_tags(cell)) & set(HIDDEN_TAGS) or _is_empty(cell):
        return True
    return (cell.get("cell_type") == "code" and not cell.get("outputs")
            and bool(_WIDGET_ONLY.match(str(cell.get("source", "")))))


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


# --------------------------------------------------------------------------------------------
# the chapter budget: what a lecturer presents, counted from an executed chapter
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

#: The lecturer's clock (:func:`presenting_minutes`, issue 51): a figure takes a minute and a table
#: half a minute to show and explain; the two reading rates are fitted to the minutes a lecturer
#: measured presenting the executed chapters (issue 51: 00 7, 01 16, 02 17, 03 19, 04 19, 05 19,
#: 06 24, 07 10; 131 in all).
WORDS_PER_MINUTE = 170
PRINTED_WORDS_PER_MINUTE = 200
MINUTES_PER_FIGURE = 1.0
MINUTES_PER_TABLE = 0.5
#: The presenting time the core chapters must fit (a 90-minute seminar slot; issue 51).
CORE_MINUTES = 90

_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_HTML_TAG = re.compile(r"<[^>]+>")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
_MD_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
_IMAGE_TYPES = ("image/png", "image/jpeg", "image/svg+xml")


def count_words(markdown: str) -> int:
    """Words a reader reads in ``markdown``: whitespace-separated tokens holding a letter or digit,
    after dropping HTML comments and tags and link targets (``[text](target)`` counts its text)."""
    text = _HTML_TAG.sub(" ", _HTML_COMMENT.sub(" ", _LINK_TARGET.sub("]", markdown)))
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


def _joined(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


@dataclass(frozen=True)
class ChapterBudget:
    """What one executed chapter presents (:func:`chapter_budget`): the cells the book shows open,
    the words of their markdown, the words printed as prose, the tables and figures shown."""

    chapter: str
    code_cells: int
    markdown_cells: int
    words: int
    printed_words: int
    table_columns: tuple[int, ...]
    figures: int
    more_cells: int = 0

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
        return presenting_minutes(self.words, self.printed_words, self.figures, self.tables)

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


def presenting_minutes(words: int, printed_words: int = 0, figures: int = 0, tables: int = 0) -> float:
    """Estimated minutes a lecturer needs to present a chapter, by the lecturer's clock.

    The rule: each figure (a slider panel counts as one) :data:`MINUTES_PER_FIGURE` (1 minute) and
    each table :data:`MINUTES_PER_TABLE` (half a minute), as a lecturer takes them; the words of
    the markdown cells at :data:`WORDS_PER_MINUTE` (170 a minute: said or read out); the words the
    code prints as prose at :data:`PRINTED_WORDS_PER_MINUTE` (200 a minute: read with the room).
    With the figure and table times fixed, the two rates are the grid fit (10-word steps) that
    best matches the minutes a lecturer measured presenting the executed chapters (issue 51:
    00 7, 01 16, 02 17, 03 19, 04 19, 05 19, 06 24, 07 10; 131 in all) on those chapters: about
    1.3 minutes off a chapter, 131 in all. Code cells take no time of their own (the book hides
    set-up code; the rest is shown while its result is explained), nor do cells in the book's
    closed "More" sections (not presented).
    """
    return (words / WORDS_PER_MINUTE + printed_words / PRINTED_WORDS_PER_MINUTE
            + MINUTES_PER_FIGURE * figures + MINUTES_PER_TABLE * tables)


def is_panel(output: Mapping[str, Any]) -> bool:
    """Whether a cell output is a kernel-free slider panel (:mod:`lase_nb.panels`), which the book
    shows as it is and the budget counts as a figure."""
    from .panels import PANEL_CLASS

    return f'class="{PANEL_CLASS}"' in _joined((output.get("data") or {}).get("text/html", ""))


def chapter_budget(nb: Path | Mapping[str, Any]) -> ChapterBudget:
    """Count what an executed chapter presents, as the book shows it (:func:`book_hides` cells left
    out, :data:`BOOK_MORE` cells counted apart): code and markdown cells, words of markdown
    (:func:`count_words`), words printed as prose (``text/markdown`` outputs and printed text),
    tables shown (pandas/HTML tables in outputs and markdown tables, with their columns) and
    figures shown (image outputs and slider panels, :func:`is_panel`). ``nb``: a path or a notebook already read."""
    import nbformat

    if isinstance(nb, (str, Path)):
        name, node = Path(nb).stem, nbformat.read(str(nb), as_version=4)
    else:
        name, node = str(nb.get("metadata", {}).get("lase_nb", {}).get("name", "notebook")), nb
    code = md = words = printed = figures = more = 0
    columns: list[int] = []
    for cell in node["cells"]:
        if book_hides(cell):
            continue
        if BOOK_MORE in _tags(cell):
            more += 1
            continue
        source = _joined(cell.get("source", ""))
        if cell["cell_type"] == "markdown":
            md += 1
            words += count_words(source)
            columns += markdown_tables(source)
            continue
        if cell["cell_type"] != "code":
            continue
        code += 1
        for o in cell.get("outputs", []) or []:
            data = o.get("data", {}) or {}
            if o.get("output_type") == "stream":
                printed += count_words(_joined(o.get("text", "")))
            elif any(k in data for k in _IMAGE_TYPES) or is_panel(o):
                figures += 1
            elif "text/html" in data and "<table" in _joined(data["text/html"]):
                columns += html_tables(_joined(data["text/html"]))
            elif "text/markdown" in data:
                text = _joined(data["text/markdown"])
                columns += markdown_tables(text)
                printed += count_words(text)
    return ChapterBudget(name, code, md, words, printed, tuple(columns), figures, more)


def budget_table(chapters: Sequence[Path], budget: Budget = BUDGET) -> list[dict[str, Any]]:
    """One row per executed chapter of :func:`chapter_budget` with whether it meets ``budget``."""
    rows = []
    for nb in chapters:
        b = chapter_budget(nb)
        rows.append({"chapter": b.chapter, "cells": b.cells, "words": b.words, "printed words": b.printed_words,
                     "tables": b.tables, "max columns": b.max_columns, "figures": b.figures,
                     "minutes": round(b.minutes), "meets budget": b.meets(budget), "over": "; ".join(b.over(budget))})
    return rows


# --------------------------------------------------------------------------------------------
# the HTML book
# --------------------------------------------------------------------------------------------

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
            for line in _joined(cell["source"]).splitlines():
                if line.startswith("#"):
                    return i, line.lstrip("#").strip()
    return -1, ""


def inline_images(nb_path: Path) -> int:
    """Number of ``image/png`` outputs in an executed notebook."""
    data = json.loads(Path(nb_path).read_text())
    return sum("image/png" in o.get("data", {}) for c in data["cells"] for o in c.get("outputs", []))


def plural(n: int, word: str, many: str | None = None) -> str:
    """``"1 figure"``, ``"2 figures"``."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def _parameters(nb: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters an executed chapter ran with: its parameters cell's values, overridden by
    those papermill injected (read from the source, nothing is run)."""
    import ast

    values: dict[str, Any] = {}
    for cell in nb["cells"]:
        tags = _tags(cell)
        if cell["cell_type"] == "code" and ("parameters" in tags or "injected-parameters" in tags):
            try:
                tree = ast.parse(_joined(cell["source"]))
            except SyntaxError:
                continue
            for node in tree.body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    with contextlib.suppress(ValueError, SyntaxError):
                        values[node.targets[0].id] = ast.literal_eval(node.value)
    values.update((nb.get("metadata", {}).get("papermill") or {}).get("parameters") or {})
    return values


def _manifests_under(folder: Path) -> list[Path]:
    """The run manifests of a run folder or of a study (a folder of run folders, or of studies)."""
    if (folder / "manifest.json").is_file():
        return [folder / "manifest.json"]
    found = sorted(folder.glob("*/manifest.json"))
    return found or sorted(folder.glob("*/*/manifest.json"))


def recordings_read(nb: Mapping[str, Any]) -> list[Path]:
    """The run manifests an executed chapter read: those its kernel logged (:func:`execute` stores
    them in ``metadata.lase_nb.recordings``); for a notebook executed otherwise, those under the
    folders its parameters name (paths read from ``notebooks/``, or a committed study's name)."""
    meta = nb.get("metadata", {}).get("lase_nb") or {}
    if "recordings" in meta:
        return [Path(p) for p in meta["recordings"] if Path(p).is_file()]
    found: list[Path] = []

    def visit(value: Any) -> None:
        if isinstance(value, (list, tuple)):
            for v in value:
                visit(v)
        elif isinstance(value, Mapping):
            for v in value.values():
                visit(v)
        elif isinstance(value, str) and value and len(value) < 500:
            for base in (NOTEBOOKS, REPO / "data" / "traces"):
                p = (base / value).expanduser()
                if p.is_dir():
                    found.extend(_manifests_under(p))
                    break

    visit(_parameters(nb))
    return list(dict.fromkeys(m.resolve() for m in found))


def _study_label(folder: Path) -> str:
    """A study's label: ``study.json``'s ``label``, else the model its full-chain run names
    (:func:`lase_nb.runs.display_name`), else the folder's name."""
    meta = folder / "study.json"
    if meta.is_file():
        with contextlib.suppress(OSError, ValueError, AttributeError):
            label = json.loads(meta.read_text()).get("label")
            if label:
                return str(label)
    from .runs import display_name

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


_MORE_MARK = "<!-- lase-nb:more-{} -->"
#: A markdown cell holding only a "more" marker, as nbconvert's lab template writes it.
_MORE_CELL = re.compile(r'<div class="jp-Cell jp-MarkdownCell[^"]*"[^>]*>(?:(?!<div class="jp-Cell ).)*?'
                        r"<!-- lase-nb:more-(start|end) -->\s*</div>\s*</div>\s*</div>\s*</div>", re.S)


def book_notebook(nb_path: Path):
    """The executed notebook as the book shows it: the cells :func:`book_hides` left out, runs of
    :data:`BOOK_MORE` cells between markers that :func:`build_book` turns into closed "More"
    sections, the first heading in the book's numbering (:func:`book_title`), the recordings the
    chapter read named under its title (:func:`describe_recordings`), and error outputs dropped.
    A chapter that failed (:func:`failed_cell`) gets a FAILED banner at the top and ends at the
    failing cell (no traceback). Returns the notebook node."""
    import nbformat

    nb = nbformat.read(str(nb_path), as_version=4)
    failed = failed_cell(nb)
    studies = recordings_summary(recordings_read(nb))  # before the parameters cells go
    cells = list(nb.cells)
    skipped = 0
    if failed is not None and failed[0] >= 0:
        skipped = sum(1 for c in cells[failed[0] + 1:] if not book_hides(c))
        cells = cells[:failed[0] + 1]
    shown = []
    for cell in cells:
        if book_hides(cell):
            continue
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
    note = nbformat.v4.new_markdown_cell(describe_recordings(studies))
    nb.cells.insert(at + 1, note)
    out, inside = [], False
    for cell in nb.cells:
        more = BOOK_MORE in _tags(cell)
        if more != inside:
            out.append(nbformat.v4.new_markdown_cell(_MORE_MARK.format("start" if more else "end")))
            inside = more
        out.append(cell)
    if inside:
        out.append(nbformat.v4.new_markdown_cell(_MORE_MARK.format("end")))
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


def _more_sections(body: str) -> str:
    """Turn the "more" markers of :func:`book_notebook` into ``<details>`` sections, closed."""
    return _MORE_CELL.sub(lambda m: ('<details class="lase-more"><summary>More (not presented; click to open)</summary>'
                                     if m.group(1) == "start" else "</details>"), body)


#: Style of the book's own parts: the "More" sections and the FAILED mark in the index.
_BOOK_CSS = ("<style>details.lase-more{border-left:3px solid #bbb;margin:1em 0;padding-left:.8em}"
             "details.lase-more>summary{cursor:pointer;color:#555;font-style:italic}"
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
               mathjax_url: str | None = None) -> Path:
    """Convert every executed chapter in ``executed`` to standalone HTML and write an
    ``index.html`` linking them; return the index path.

    Each page is what a lecturer shows (:func:`book_notebook`): no parameters cell, no
    widget-only or ``book-hide`` cell, no empty cell, ``book-more`` cells in closed "More"
    sections, one numbering of titles, the recordings the chapter read named under its title. A
    chapter that failed is marked FAILED at the top of its page and in the index, and shows no
    traceback. Figures are embedded and no page loads anything from the network: formulas are
    typeset as MathML (a formula latex2mathml cannot convert keeps its LaTeX source and is counted
    in the line printed per chapter). Pass ``mathjax_url`` (e.g. the MathJax copy of a course
    site) to leave the LaTeX to that MathJax instead.
    """
    from nbconvert import HTMLExporter

    executed, out = Path(executed), Path(out)
    chapters = collection(executed)
    if not chapters:
        raise ConfigError(f"no executed chapters in {executed}; run `make notebooks` first")
    out.mkdir(parents=True, exist_ok=True)
    if mathjax_url:
        exporter = HTMLExporter(template_name="lab", embed_images=True)
        exporter.mathjax_url = mathjax_url
    else:
        exporter = _mathml_exporter()
    exporter.exclude_input_prompt = True
    exporter.exclude_output_prompt = True
    rows: dict[bool, list[str]] = {False: [], True: []}
    pages = [(nb.stem, book_title(nb.stem, _title(nb))) for nb in chapters]  # the reading order, for the links
    for i, nb in enumerate(chapters):
        node = book_notebook(nb)
        failed = failed_cell(json.loads(nb.read_text()))
        body, _ = exporter.from_notebook_node(node, resources={"metadata": {"name": nb.stem, "path": str(nb.parent)}})
        body = _NOTEBOOK_LINK.sub(r'href="\1.html"', body)  # a link to another chapter opens its page
        body = _REMOTE_SCRIPT.sub(lambda m: m.group(0) if mathjax_url and mathjax_url in m.group(0) else "", body)
        body = _more_sections(body).replace("</head>", _BOOK_CSS + "</head>", 1)
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
        title = book_title(nb.stem, _title(nb))
        shown = chapter_budget(nb)
        meta = [plural(shown.figures, "figure"), plural(shown.tables, "table")]
        if not nb.match(APPENDIX_GLOB):
            meta.append(f"about {round(shown.minutes)} min")
        mark = '<strong class="failed">FAILED</strong> ' if failed is not None else ""
        rows[nb.match(APPENDIX_GLOB)].append(f'<li>{mark}<a href="{nb.stem}.html">{html.escape(title)}</a> '
                                             f'<span class="meta">({", ".join(meta)})</span></li>')
    index = out / "index.html"
    index.write_text(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<title>lase-nb: confidence-gated multi-agent reasoning</title>"
        "<style>body{font-family:sans-serif;max-width:46em;margin:3em auto;line-height:1.5}"
        "ul.toc{list-style:none;padding-left:0}.meta{color:#666;font-size:90%}.failed{color:#B2182B}</style>"
        "</head><body>\n"
        "<h1>Confidence-gated multi-agent reasoning: the notebook collection</h1>\n"
        "<p>Executed chapters of <code>lase-nb</code> (LASE and DOWN). Each page is self-contained: "
        "figures are embedded, nothing is fetched from the network.</p>\n<ul class=\"toc\">\n"
        + "\n".join(rows[False]) + "\n</ul>\n"
        + ("<h2>Appendix: the deep dives the chapters link to</h2>\n<ul class=\"toc\">\n" + "\n".join(rows[True])
           + "\n</ul>\n" if rows[True] else "")
        + "</body></html>\n", encoding="utf-8")
    return index
