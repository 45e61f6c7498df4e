"""The package's layout: imports point one way between its folders and never in a circle.

The method and its records are ``lase_nb``'s flat modules; the model organism and its experiments
are ``lase_nb/organism/``; the book (executing the chapters, the lecturer's clock, the HTML pages,
panels and widgets) is ``lase_nb/book/``; the chapters' logic is ``lase_nb/chapters/``. The
organism and the book stand on the method and not on each other; a chapter may import any of them;
the command line (``lase_nb.cli``, ``__main__``) is the one entry point, above the method and the book.

Read from the source with ``ast`` (nothing is imported), so a function-level import counts too.
"""
from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "lase_nb"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The lase_nb modules ``name`` imports (``from pkg import mod`` counts as ``pkg.mod``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return {m for m in found if m in known and m != name}


@cache
def _graph() -> dict[str, frozenset[str]]:
    modules = _modules()
    return {name: frozenset(_imports(name, path, set(modules))) for name, path in modules.items()}


def test_the_graph_sees_both_kinds_of_import():
    graph = _graph()
    assert "lase_nb.chapters.sliders" in graph and "lase_nb.replay" in graph
    assert {"lase_nb.replay", "lase_nb.chapters.pareto"} <= graph["lase_nb.chapters.sliders"]
    assert "lase_nb.chapters.pareto" in graph["lase_nb.chapters.sliders"]
    assert "lase_nb.errors" in graph["lase_nb.backends"]  # from .. import, one level up


def test_the_core_never_imports_a_chapter_module():
    chapters = "lase_nb.chapters"
    wrong = {name: sorted(m for m in deps if m == chapters or m.startswith(chapters + "."))
             for name, deps in _graph().items()
             if not (name == chapters or name.startswith(chapters + "."))}
    assert {name: deps for name, deps in wrong.items() if deps} == {}


def test_no_import_cycle():
    graph = _graph()
    # Module-to-package edges (``from lase_nb import x`` in a submodule of lase_nb) are how Python
    # resolves the parent; only edges between modules that hold code count as a cycle.
    graph = {name: {m for m in deps if not name.startswith(m + ".")} for name, deps in graph.items()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = 1
        path.append(name)
        for dep in sorted(graph[name]):
            if state.get(dep) == 1:
                return path[path.index(dep):] + [dep]
            if dep not in state and (cycle := visit(dep)):
                return cycle
        path.pop()
        state[name] = 2
        return None

    for name in sorted(graph):
        if name not in state:
            cycle = visit(name)
            assert cycle is None, " -> ".join(cycle)


def test_a_chapter_module_imports_only_its_own_chapters_modules():
    from lase_nb.chapters import CHAPTER_OF

    found = {p.stem for p in (PACKAGE / "chapters").glob("*.py") if p.stem != "__init__"}
    assert found == set(CHAPTER_OF), "list every chapter module in lase_nb.chapters.CHAPTER_OF"
    prefix = "lase_nb.chapters."
    wrong = {}
    for name, deps in _graph().items():
        if not name.startswith(prefix):
            continue
        mine = CHAPTER_OF[name[len(prefix):]]
        other = sorted(m for m in deps if m.startswith(prefix) and CHAPTER_OF[m[len(prefix):]] != mine)
        if other:
            wrong[name] = other
    assert wrong == {}


def test_a_notebook_imports_the_core_and_its_own_chapters_modules():
    from lase_nb.chapters import CHAPTER_OF

    folder = PACKAGE.parent / "notebooks"
    notebooks = sorted(folder.glob("[0-9][0-9]_*.py")) + sorted(folder.glob("A[0-9]_*.py"))
    assert notebooks
    wrong = {}
    for nb in notebooks:
        # an appendix notebook belongs to the chapter its title names: "# # A1. ... (appendix to chapter 03)"
        chapter = nb.name[:2] if nb.name[0].isdigit() else re.search(r"appendix to chapter (\d\d)", nb.read_text()).group(1)
        used = set()
        for node in ast.walk(ast.parse(nb.read_text(), str(nb))):
            if isinstance(node, ast.ImportFrom) and node.module == "lase_nb.chapters":
                used |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lase_nb.chapters."):
                used.add(node.module.split(".")[2])
            elif isinstance(node, ast.Import):
                used |= {a.name.split(".")[2] for a in node.names if a.name.startswith("lase_nb.chapters.")}
        other = sorted(m for m in used if CHAPTER_OF.get(m) != chapter)
        if other:
            wrong[nb.name] = other
    assert wrong == {}


def test_stats_is_a_leaf():
    """Intervals, tests and formatters depend on nothing else of the package (the replay uses them)."""
    assert _graph()["lase_nb.stats"] == frozenset()


#: Each layer and the layers it may import besides itself (method <- organism, method <- book,
#: chapters import any; the command line runs the book's ``notebooks`` and ``book`` commands).
MAY_IMPORT = {"method": set(), "organism": {"method"}, "book": {"method"},
              "chapters": {"method", "organism", "book"}, "entry": {"method", "book"}}


def _layer(name: str) -> str:
    parts = name.split(".")
    if len(parts) > 1 and parts[1] in ("organism", "book", "chapters"):
        return parts[1]
    if name in ("lase_nb.cli", "lase_nb.__main__"):
        return "entry"
    return "method"


def test_the_folders_point_one_way():
    """The method's modules never import the organism or the book; the organism and the book import
    the method only (not each other); chapters import any; nothing imports a chapter module."""
    graph = _graph()
    assert {_layer(n) for n in graph} == set(MAY_IMPORT)
    assert _layer("lase_nb.runs") == "method" and _layer("lase_nb.organism.recipe") == "organism"
    wrong = {name: sorted(m for m in deps if _layer(m) != _layer(name) and _layer(m) not in MAY_IMPORT[_layer(name)])
             for name, deps in graph.items()}
    assert {name: deps for name, deps in wrong.items() if deps} == {}


def test_no_notebook_rebinds_a_name_it_imported_from_the_package():
    """A name a notebook imports from ``lase_nb`` keeps meaning that all through the chapter: no other
    import, assignment, loop or definition binds it again (``import ipywidgets as widgets`` over
    ``lase_nb.book.widgets`` would make rerunning the setup cell after a slider cell call ipywidgets')."""
    folder = PACKAGE.parent / "notebooks"
    wrong = {}
    for nb in sorted(folder.glob("*.py")):
        tree = ast.parse(nb.read_text(), str(nb))
        ours: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "lase_nb":
                ours |= {a.asname or a.name for a in node.names}
            elif isinstance(node, ast.Import):
                ours |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] == "lase_nb"}
        again = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] != "lase_nb":
                again |= {a.asname or a.name for a in node.names}
            elif isinstance(node, ast.Import):
                again |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] != "lase_nb"}
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                again.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                again.add(node.name)
        if ours & again:
            wrong[nb.name] = sorted(ours & again)
    assert wrong == {}


FOLDERS = {"method": "", "organism": "organism", "book": "book", "chapter": "chapters"}


def _contributing_tables() -> dict[str, set[str]]:
    """The module names CONTRIBUTING.md's library tables list, by folder."""
    text = (PACKAGE.parent / "CONTRIBUTING.md").read_text()
    out: dict[str, set[str]] = {}
    for kind in FOLDERS:
        head = re.search(rf"^\| {kind} module \(`lase_nb/[\w/]*`\) \|.*\n\|---\|---\|\n((?:\|.*\n)+)", text, re.M)
        assert head, f"CONTRIBUTING.md has no '{kind} module' table"
        out[kind] = {m for row in head.group(1).splitlines() for m in re.findall(r"`(\w+)`", row.split("|")[1])}
    return out


def test_contributing_lists_every_module_of_each_folder():
    listed = _contributing_tables()
    for kind, folder in FOLDERS.items():
        base = PACKAGE / folder if folder else PACKAGE
        found = {p.stem for p in base.glob("*.py") if p.stem not in ("__init__", "__main__")}
        found |= {p.parent.name for p in base.glob("*/__init__.py")} - set(FOLDERS.values())
        assert listed[kind] == found, f"{kind}: listed but missing {sorted(listed[kind] - found)}, " \
                                      f"not listed {sorted(found - listed[kind])}"


def test_every_module_function_contributing_names_resolves():
    """Every `module.name` in CONTRIBUTING.md whose first part is a module of the package (by its name
    in its folder, or written from ``lase_nb``) names something that exists."""
    import importlib

    modules = set(_modules())
    prefixes = ("lase_nb.", "lase_nb.organism.", "lase_nb.book.", "lase_nb.chapters.")
    text = (PACKAGE.parent / "CONTRIBUTING.md").read_text()
    names = {m.group(1) for m in re.finditer(r"`([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\([^`]*\))?`", text)}
    wrong, checked = [], 0
    for name in sorted(n for n in names if n.rpartition(".")[2] not in ("py", "md", "json", "jsonl", "toml")):
        full = name if name.startswith("lase_nb.") else next(
            (p + name for p in prefixes if (p + name.split(".")[0]) in modules), None)
        if full is None:
            continue  # not a module of the package (a class attribute, ...)
        parts = full.split(".")
        k = max(i for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in modules)
        obj = importlib.import_module(".".join(parts[:k]))
        checked += 1
        for attr in parts[k:]:
            if not hasattr(obj, attr):
                wrong.append(name)
                break
            obj = getattr(obj, attr)
    assert checked > 20 and wrong == [], wrong
