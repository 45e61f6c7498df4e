"""Executing the notebook collection with papermill (``make notebooks``, ``lase-nb notebooks``):
which notebooks, the kernels' environment, one chapter or many at once, and the recordings an
executed chapter read. What a lecturer presents is :mod:`lase_nb.book.budget`; the HTML book is
:mod:`lase_nb.book.html`."""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from ..errors import ConfigError, LaseError
from ..paths import REPO_ROOT

REPO = REPO_ROOT
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
    from ..plots import FIGURES_ENV

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

    from ..plots import FIGURES_ENV, LIVE_FIGURES_ENV

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
    notebook's metadata (``lase_nb.recordings``), where :func:`lase_nb.book.html.build_book` finds them."""
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


#: A chapter whose source calls this may call a model (the embedded one on the default backend).
_CALLS_A_MODEL = re.compile(r"\blive_(?:engine|runs)\(")


def _calls_a_model(nb: Path) -> bool:
    source = nb.with_suffix(".py")
    return source.is_file() and bool(_CALLS_A_MODEL.search(source.read_text()))


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
    from ..backends.local.files import DEFAULT_MODEL, prepare

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

    from ..runs import absolute_paths

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


# the recordings an executed chapter read (the book names them on its page)

def _parameters(nb: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters an executed chapter ran with: its parameters cell's values, overridden by
    those papermill injected (read from the source, nothing is run)."""
    import ast

    values: dict[str, Any] = {}
    for cell in nb["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        if cell["cell_type"] == "code" and ("parameters" in tags or "injected-parameters" in tags):
            try:
                source = cell["source"]
                tree = ast.parse("".join(source) if isinstance(source, list) else source)
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

