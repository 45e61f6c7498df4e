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
from typing import TYPE_CHECKING, Any, Iterator, Sequence

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
#: so the kernel's log drops that one line.
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
"""


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
def kernel_environment(figures: Path | None = None) -> Iterator[None]:
    """Set :data:`KERNEL_ENV` and remove :data:`KERNEL_ENV_DROP` for the kernels started inside;
    the kernels read a private IPython profile whose startup file silences progress bars (see
    :data:`_QUIET_STARTUP`). ``figures``: the folder their figures go to (``$LASE_FIGURES_DIR``)."""
    import tempfile

    from .plots import FIGURES_ENV

    saved = {k: os.environ.get(k) for k in (*KERNEL_ENV, *KERNEL_ENV_DROP, "IPYTHONDIR", FIGURES_ENV)}
    ipython_dir = tempfile.TemporaryDirectory(prefix="lase-nb-ipython-")
    startup = Path(ipython_dir.name) / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-lase-quiet.py").write_text(_QUIET_STARTUP)
    os.environ.update(KERNEL_ENV, IPYTHONDIR=ipython_dir.name)
    if figures is not None:
        Path(figures).mkdir(parents=True, exist_ok=True)
        os.environ[FIGURES_ENV] = str(Path(figures).resolve())
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
            figures: Path | None = None) -> None:
    """Run one chapter with papermill into ``out``, its figures saved under ``figures`` (default: as
    the environment says, see :func:`lase_nb.plots.figures_dir`); a cell running past
    ``cell_timeout`` seconds raises :class:`NotebookTimeout` naming the chapter and the cell."""
    import papermill as pm
    from nbclient.exceptions import CellTimeoutError

    current: dict[str, Any] = {}

    def on_cell_start(cell, cell_index: int) -> None:
        current.update(index=cell_index, source=cell.source)

    with kernel_environment(figures):
        try:
            pm.execute_notebook(str(nb), str(out), parameters=params or {}, cwd=str(NOTEBOOKS),
                                kernel_name="python3", progress_bar=False, execution_timeout=cell_timeout,
                                on_cell_start=on_cell_start, config=kernel_config())
        except CellTimeoutError:
            first = (current.get("source") or "").strip().splitlines()[:1]
            raise NotebookTimeout(
                f"{nb.stem}: cell {current.get('index', '?')} ({first[0][:70] if first else 'empty'!r}) ran "
                f"longer than {cell_timeout} s and was stopped; the partial notebook is in {out}") from None


def run_notebooks(names: Sequence[str] | None = None, params: dict[str, Any] | None = None,
                  out: Path = REPO / "build" / "notebooks", timeout: int = CELL_TIMEOUT_S,
                  figures: Path | None = None) -> dict[str, float]:
    """Run each notebook with papermill into ``out``; pass each only the parameters it declares.

    Figures go to :func:`figures_folder` (``out/figures`` unless ``figures`` or
    ``$LASE_FIGURES_DIR`` says otherwise). ``timeout`` bounds every cell (seconds). Returns the
    execution time per chapter.
    """
    import papermill as pm

    from .runs import absolute_paths

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    params = absolute_paths(params or {})  # a folder the caller names is read from the caller's folder, not notebooks/
    times = {}
    for nb in list_notebooks(names):
        declared = pm.inspect_notebook(str(nb))
        mine = {k: v for k, v in params.items() if k in declared}
        t0 = time.perf_counter()
        print(f"[notebooks] {nb.name} {mine or ''}", flush=True)
        execute(nb, out / nb.name, mine, timeout, figures=figures_folder(out, figures))
        times[nb.stem] = time.perf_counter() - t0
        print(f"[notebooks] {nb.name} done in {times[nb.stem]:.1f} s", flush=True)
    return times


# --------------------------------------------------------------------------------------------
# the HTML book
# --------------------------------------------------------------------------------------------


def _title(nb_path: Path) -> str:
    """The first markdown heading of a notebook, without its leading ``#``s."""
    import nbformat

    nb = nbformat.read(str(nb_path), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("#"):
                    return line.lstrip("#").strip()
    return nb_path.stem


def inline_images(nb_path: Path) -> int:
    """Number of ``image/png`` outputs in an executed notebook."""
    data = json.loads(Path(nb_path).read_text())
    return sum("image/png" in o.get("data", {}) for c in data["cells"] for o in c.get("outputs", []))


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


def without_injected_parameters(nb_path: Path):
    """The executed notebook without the cell papermill injects (tagged ``injected-parameters``):
    a reader of the book sees the chapter's own parameters cell, not a second one."""
    import nbformat

    nb = nbformat.read(str(nb_path), as_version=4)
    nb.cells = [c for c in nb.cells if "injected-parameters" not in c.get("metadata", {}).get("tags", [])]
    return nb


def build_book(executed: Path = REPO / "build" / "notebooks", out: Path = REPO / "build" / "book",
               mathjax_url: str | None = None) -> Path:
    """Convert every executed chapter in ``executed`` to standalone HTML and write an
    ``index.html`` linking them; return the index path.

    Figures are embedded and no page loads anything from the network: formulas are typeset as
    MathML (a formula latex2mathml cannot convert keeps its LaTeX source and is counted in the
    line printed per chapter). Pass ``mathjax_url`` (e.g. the MathJax copy of a course site) to
    leave the LaTeX to that MathJax instead.
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
    for nb in chapters:
        body, _ = exporter.from_notebook_node(without_injected_parameters(nb),
                                              resources={"metadata": {"name": nb.stem, "path": str(nb.parent)}})
        body = _NOTEBOOK_LINK.sub(r'href="\1.html"', body)  # a link to another chapter opens its page
        body = _REMOTE_SCRIPT.sub(lambda m: m.group(0) if mathjax_url and mathjax_url in m.group(0) else "", body)
        (out / f"{nb.stem}.html").write_text(body, encoding="utf-8")
        if not mathjax_url:
            n = exporter.formulas
            print(f"[book] {nb.stem}: {n['converted']} formulas as MathML, {n['kept']} kept as LaTeX source",
                  flush=True)
            n.clear()
        title = _title(nb)
        rows[nb.match(APPENDIX_GLOB)].append(f'<li><a href="{nb.stem}.html">{html.escape(title)}</a> '
                                             f'<span class="meta">({inline_images(nb)} figures)</span></li>')
    index = out / "index.html"
    index.write_text(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<title>lase-nb: confidence-gated multi-agent reasoning</title>"
        "<style>body{font-family:sans-serif;max-width:46em;margin:3em auto;line-height:1.5}"
        ".meta{color:#666;font-size:90%}</style></head><body>\n"
        "<h1>Confidence-gated multi-agent reasoning: the notebook collection</h1>\n"
        "<p>Executed chapters of <code>lase-nb</code> (LASE and DOWN). Each page is self-contained: "
        "figures are embedded, nothing is fetched from the network.</p>\n<ol start=\"0\">\n"
        + "\n".join(rows[False]) + "\n</ol>\n"
        + ("<h2>Appendix: the deep dives the chapters link to</h2>\n<ul>\n" + "\n".join(rows[True]) + "\n</ul>\n"
           if rows[True] else "")
        + "</body></html>\n", encoding="utf-8")
    return index
