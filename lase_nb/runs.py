"""Finished runs on disk, by strategy: the one loader every chapter uses.

- :func:`load_runs`: the finished run folders under a traces folder, by strategy name (those it
  leaves out, :func:`left_out_runs`, are named in one line each);
- :func:`load_models`: the same for several recordings (one per model), by label; a missing one
  after the first is skipped with a note saying how to record it;
- :func:`chains_by_model`: each model's full LASE chains (for replay), from :func:`load_models`;
- :func:`model_label`: a run's model as its manifest names it (and its adapter, if any);
- :func:`run_from_results`: the same tables built in memory from a live run;
- :func:`problems_from_manifest`: a run's problems (question, gold, level) rebuilt from its manifest;
- :func:`common_ids`: the problem ids a set of runs all answered;
- :func:`check_format`: a clear error for a run recorded by an older version;
- :func:`chapter_studies`: the studies a chapter reads (the reader's, then the committed ones).

The tables made from the runs (the one comparison table, the verdict words) are
:mod:`lase_nb.tables`. A manifest that names a ``problem_set`` (the organism's held-out lists) is
regenerated through :data:`PROBLEM_SETS`, which :mod:`lase_nb.organism.recordings` fills.

A run folder is what ``lase-nb run --out`` writes (:func:`lase_nb.traces.load_run` reads one);
it is finished when its ``manifest.json`` exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .errors import DataError, LaseError, show_in_one_line
from .paths import REPO_ROOT
from .schema import RecordingError, read_manifest
from .strategies import SPECS
from .traces import Run, call_rows, load_run, problem_rows, stage_rows

if TYPE_CHECKING:
    from .replay import Chains

show_in_one_line()  # in a notebook, an error a reader can fix (a damaged study) is one line, not a traceback

__all__ = ["RUN_DIRS", "PROBLEM_SETS", "RECORD_COMMANDS", "PLUGINS", "register_problem_set", "resolve_data_path",
           "UNFINISHED", "left_out_runs", "load_runs", "load_models", "chains_by_model", "control_models", "model_label",
           "record_command", "check_format", "run_from_results", "problems_from_manifest", "common_ids",
           "display_name", "by_display_name",
           "Study", "AUTO", "COMMITTED", "COMMITTED_STUDIES", "HEADLINE_STUDIES", "REGIME_STUDIES", "COMMITTED_CONTROL",
           "V6_CONTROL", "control_pairs", "PATH_PARAMETERS", "absolute_paths",
           "study_folder", "study_label", "chapter_studies", "describe_study", "control_studies", "load_studies"]

#: Folder of a strategy name when it differs from the name: "lase" is read from the full-chain run
#: (LASE at any thresholds is replayed from it); from the strategies' records.
RUN_DIRS: dict[str, str] = {n: s.replayed_from for n, s in SPECS.items() if s.replayed_from}


def resolve_data_path(path: str | Path) -> Path:
    """``path`` as given when it exists from the working directory; otherwise the same relative
    path read from the repository's ``notebooks/`` folder (where the chapters' defaults such as
    ``../data/traces/arith-smollm2`` point) or from its root. A chapter therefore finds its data
    whether papermill runs it from ``notebooks/``, from the repository root or from elsewhere.
    Returns ``path`` unchanged when none exists (the caller's error names it)."""
    if str(path) == COMMITTED:  # the keyword of a recording slot: the first committed study
        return COMMITTED_DIR / COMMITTED_STUDIES[0]
    if str(path) in _COMMITTED_NAMES:
        return COMMITTED_DIR / str(path)
    p = Path(path).expanduser()
    if p.is_absolute() or p.exists():
        return p
    for base in (REPO_ROOT / "notebooks", REPO_ROOT):
        q = (base / p).resolve()
        if q.exists():
            return q
    return p


RECORD_HINT = "record them with `python data/traces/record.py` (or `make traces`) or pass the folder as `traces`"


#: Why a run folder without its manifest is left out, and what to do about it.
UNFINISHED = ("no manifest.json, so the run stopped before it finished or the folder was not copied whole; rerun "
              "the command that recorded it (the call cache resumes it)")

#: The left-out run folders already named in this process (a chapter reads a study in many cells).
_NOTED: set[Path] = set()


def left_out_runs(folder: str | Path, names: Iterable[str] | None = None) -> dict[str, str]:
    """The run folders under ``folder`` that :func:`load_runs` leaves out, by folder name, each with
    why (:data:`UNFINISHED`): the folders of ``names`` (default: every subfolder) that exist but hold
    no ``manifest.json``. A name with no folder at all was not recorded and is not listed. A folder
    whose manifest is there but a table is not is no left-out run: reading it raises
    :class:`~lase_nb.schema.RecordingError`."""
    folder = resolve_data_path(folder)
    if not folder.is_dir():
        return {}
    dirs = sorted(p.name for p in folder.iterdir() if p.is_dir()) if names is None else \
        [RUN_DIRS.get(n, n) for n in names]
    return {d: UNFINISHED for d in dict.fromkeys(dirs)
            if (folder / d).is_dir() and not (folder / d / "manifest.json").exists()}


def load_runs(folder: str | Path, names: Iterable[str] | None = None, require: Sequence[str] = (),
              quiet: bool = False) -> dict[str, Run]:
    """The finished runs under ``folder`` by name (``lase`` = the ``lase-full`` folder, :data:`RUN_DIRS`).

    ``names`` restricts and orders them (default: every subfolder, sorted); missing ones are left
    out (``[n for n in names if n not in runs]`` lists them), except those named in ``require``,
    which raise :class:`~lase_nb.errors.DataError`. A folder that is there but unfinished (no
    manifest) is named in one printed line, once per process (:func:`left_out_runs`), unless
    ``quiet``; a finished run with a damaged or missing table raises
    :class:`~lase_nb.schema.RecordingError`.
    """
    folder = resolve_data_path(folder)
    if names is None:
        if not folder.is_dir():
            raise DataError(f"no folder of recorded runs at {folder.resolve()}; {RECORD_HINT}")
        names = sorted(p.name for p in folder.iterdir() if p.is_dir())
    names = list(names)
    if not quiet:
        for d, why in left_out_runs(folder, names).items():
            path = (folder / d).resolve()
            if path not in _NOTED and not any(RUN_DIRS.get(r, r) == d for r in require):
                _NOTED.add(path)
                print(f"left out the run {folder / d}: {why}")
    runs = {}
    for name in names:
        path = folder / RUN_DIRS.get(name, name)
        if (path / "manifest.json").exists():
            runs[name] = check_format(load_run(path))
    for name in require:
        if name not in runs:
            path = folder / RUN_DIRS.get(name, name)
            if not folder.is_dir():
                raise DataError(f"no folder {folder.resolve()} (a relative path is read from the folder you ran "
                                f"the command in); pass the folder that holds your run folders")
            if path.is_dir():
                raise DataError(f"the run {path.resolve()} is unfinished (no manifest.json); rerun the same command "
                                "to finish it: the call cache resumes it")
            found = sorted(p.name for p in folder.iterdir() if (p / "manifest.json").exists())
            raise DataError(f"no run {path.name!r} in {folder.resolve()} (finished runs there: {', '.join(found) or 'none'}); "
                            f"record it with `lase-nb run --strategy {'lase --full-chain' if name in ('lase', 'lase-full') else name} "
                            f"--out {path}`")
    return runs


def record_command(folder: str | Path) -> str:
    """The command that records the chapters' runs into ``folder``: a registered study's own
    (:data:`RECORD_COMMANDS`, by folder name: the model organism's, :mod:`lase_nb.organism.recordings`),
    the default recording otherwise."""
    name = Path(folder).name
    if name not in RECORD_COMMANDS:
        _load_plugins()
    if name in RECORD_COMMANDS:
        return RECORD_COMMANDS[name]
    return f"python data/traces/record.py --out {folder}"


def load_models(folders: Mapping[str, str | Path | None], names: Iterable[str] | None = None,
                require: Sequence[str] = ()) -> dict[str, dict[str, Run]]:
    """:func:`load_runs` for several recordings: label -> its runs, in the order of ``folders``.

    The first recording is the reference: a missing one raises :func:`load_runs`' error. A later
    one that is ``None``, has no finished runs or lacks a run named in ``require`` is skipped, with
    a printed note naming the folder and the command that records it (:func:`record_command`; for a
    ``None`` folder, that of ``data/traces/arith-<label>``, the recordings' naming).
    """
    out: dict[str, dict[str, Run]] = {}
    names = list(names) if names is not None else None
    for i, (label, folder) in enumerate(folders.items()):
        if i == 0:
            if folder is None:
                raise DataError(f"no folder given for {label!r}, the first (reference) recording; {RECORD_HINT}")
            out[label] = load_runs(folder, names, require)
            continue
        why = "no folder given"
        if folder is not None:
            try:
                runs = load_runs(folder, names, require)
                why = "" if runs else f"no finished runs in {resolve_data_path(folder)}"
            except RecordingError:
                raise  # a damaged study stops the chapter; only a missing one is skipped
            except DataError as e:
                why = str(e).split(";")[0]
            if not why:
                out[label] = runs
                continue
        where = folder if folder is not None else f"data/traces/arith-{label}"
        print(f"note: {label!r} left out ({why}); record it with `{record_command(where)}`")
    return out


def chains_by_model(models: Mapping[str, Mapping[str, Run]]) -> dict[str, Chains]:
    """Each model's full LASE chains (:class:`lase_nb.replay.Chains`) from its ``lase`` run (or
    ``lase-full``, when the runs were loaded by folder name), in order."""
    from .replay import chains_from_stages

    out = {}
    for label, runs in models.items():
        key = next((k for k in ("lase", "lase-full") if k in runs), None)
        if key is None:
            raise DataError(f"{label}: no full-chain LASE run ('lase' or 'lase-full') among {list(runs)}")
        out[label] = chains_from_stages(runs[key].stages)
    return out


def control_models(folder: str | Path, models: Sequence[str] = ("smollm2", "organism")) -> dict[str, dict[str, Run]]:
    """The negative control's full-chain runs, by display name (:func:`load_models`): each of
    ``models`` is a subfolder of ``folder`` holding a ``lase-full`` recording of the same problems
    (``data/traces/control-level1``: both models on the same level-1 problems). A clear error when
    one is missing."""
    out = load_models(by_display_name([Path(folder) / m for m in models]), ["lase"], require=["lase"])
    if len(out) < len(models):
        raise DataError(f"the control in {folder} needs a lase-full recording in each of {list(models)}; "
                        "data/traces/README.md has the commands")
    return out


def display_name(folder: str | Path) -> str:
    """A short name for the model of the recordings in ``folder`` (read from its full-chain run's
    manifest), for tables and legends. An organism named by its manifest's ``organism_variant``
    shows as what it does and its version: ``"pointing organism (v5)"``, ``"telling organism
    (v4)"``; an adapter without one as ``"organism"``; else the manifest's model
    (``"smollm2-135m"`` shows as ``"SmolLM2-135M"``)."""
    path = resolve_data_path(folder) / RUN_DIRS.get("lase", "lase-full") / "manifest.json"
    if not path.is_file():
        raise DataError(f"no full-chain run at {path.parent}; {RECORD_HINT}")
    m = read_manifest(path)
    variant = m.get("organism_variant")
    if variant:
        version, _, what = str(variant.get("name", "")).partition(",")
        what = what.split("(")[0].strip()
        return f"{what} organism ({version.strip()})" if what else f"organism {version.strip()}"
    if (m.get("model_files") or {}).get("adapter"):
        return "organism"
    return {"smollm2-135m": "SmolLM2-135M"}.get(str(m.get("model")), str(m.get("model")))


def by_display_name(folders: Iterable[str | Path | None]) -> dict[str, str | Path]:
    """``{display_name(folder): folder}`` for the folders given (None skipped), in order: the
    ``folders`` argument of :func:`load_models` for a chapter's recordings."""
    return {display_name(f): f for f in folders if f}


def model_label(run: Run) -> str:
    """The run's model as its manifest names it (``model``), with the LoRA adapter merged into it when
    ``model_files`` names one: ``"organism (adapter: adapter, sha256 1a2b3c4d)"``."""
    m = run.manifest
    name = str(m.get("model") or "unknown model")
    files = m.get("model_files") or {}
    adapter = files.get("adapter") if isinstance(files, Mapping) else None
    if not adapter:
        return name
    sha = str(files.get("adapter_sha256") or "")[:8]
    return f"{name} (adapter: {Path(str(adapter)).name}{', sha256 ' + sha if sha else ''})"


def check_format(run: Run) -> Run:
    """The run, if it carries the columns of the current recording format; a clear error naming
    what is missing if it was recorded by an older version (re-record it). Tables written by hand
    (a manifest without a ``config``) are taken as they are."""
    if "config" not in run.manifest:
        return run
    need = [("calls", run.calls, ("hit_cap",)), ("problems", run.problems, ("correct_strict", "cap_hits")),
            ("stages", run.stages, ("correct_strict", "extracted"))]
    missing = [f"{name}.{col}" for name, table, cols in need if len(table) for col in cols if col not in table]
    missing += [f"config.{k}" for k in ("examples", "down_rounds") if k not in run.manifest["config"]]
    if missing:
        raise DataError(f"{run.path}: recorded by an older version of lase-nb (no {', '.join(missing)}); "
                        f"re-record it with `python data/traces/record.py` or `lase-nb run`")
    return run


def run_from_results(results: Sequence, problems: Sequence, manifest: Mapping[str, Any] | None = None) -> Run:
    """The same tables :func:`lase_nb.traces.load_run` gives, built in memory from live results."""
    return Run(Path("<live>"), dict(manifest or {}), pd.DataFrame(problem_rows(results, problems)),
               pd.DataFrame(call_rows(results)), pd.DataFrame(stage_rows(results)))


def problems_from_manifest(manifest: Mapping[str, Any], data_path: str | None = None) -> dict[str, Any]:
    """The run's problems by id, regenerated from its manifest (data set, n, seed, and ``offset``:
    a run on the problems after the first ``offset`` of the same list).

    ``{}`` when the data set cannot be loaded here (a user file that is not present, an unknown
    name): the problems' text is a nicety, the tables do not need it.
    """
    from .datasets import DATASETS, load_dataset
    from .names import resolve

    offset, n = int(manifest.get("offset") or 0), manifest.get("n")
    subset = manifest.get("problem_ids")  # a run on some problems of a list (a control arm): the list's size and ids
    drawn = _registered_problem_set(manifest, int(manifest["subset_of"]) if subset else None if n is None else n + offset)
    if drawn is not None:
        if subset:
            keep = set(subset)
            return {p.id: p for p in drawn if p.id in keep}
        return {p.id: p for p in drawn[offset:]}
    try:
        name = resolve(manifest.get("dataset", "arith"), DATASETS, "data set")
        probs = load_dataset(name, data_path or manifest.get("data_path"), None if n is None else n + offset,
                             manifest.get("seed", 0), levels=manifest.get("levels"),
                             split=manifest.get("split"), fields=manifest.get("data_fields"))[offset:]
    except (LaseError, OSError):
        return {}
    return {p.id: p for p in probs}


#: A manifest's ``problem_set``: a named list of problems that ``load_dataset`` alone would not
#: regenerate (the organism's held-out lists leave out problems by chain). Name -> a function of the
#: manifest and the list's size that returns the problems. Filled by the modules of :data:`PLUGINS`.
PROBLEM_SETS: dict[str, Callable[[Mapping[str, Any], int], list[Any]]] = {}
#: A study folder's name -> the command that records it, when it is not the default recording's
#: (:func:`record_command`). Filled by the modules of :data:`PLUGINS`.
RECORD_COMMANDS: dict[str, str] = {}
#: The modules that register problem sets and record commands (the model organism's), imported by
#: name the first time a manifest or a folder needs one: the loader reads the organism's recordings
#: without importing the organism's code (the method's modules never import ``lase_nb.organism.recipe``).
PLUGINS = ("lase_nb.organism.recordings",)


def _load_plugins() -> None:
    import importlib

    for name in PLUGINS:
        importlib.import_module(name)


def register_problem_set(name: str, make: Callable[[Mapping[str, Any], int], list[Any]]) -> None:
    """Make a manifest's ``problem_set: name`` regenerate its problems with ``make(manifest, n)``."""
    PROBLEM_SETS[name] = make


def _registered_problem_set(manifest: Mapping[str, Any], n: int | None) -> list[Any] | None:
    """The problems of a manifest that names a registered problem set; None when it names none."""
    kind = manifest.get("problem_set")
    if kind is None:
        return None
    if kind not in PROBLEM_SETS:
        _load_plugins()
    if kind not in PROBLEM_SETS or n is None:
        raise DataError(f"problem_set {kind!r} with n={n}: expected one of {', '.join(PROBLEM_SETS)} and a count")
    return PROBLEM_SETS[kind](manifest, n)


def common_ids(runs: Mapping[str, Run], problem_ids: Sequence[str]) -> np.ndarray:
    """The ids of ``problem_ids`` that every run in ``runs`` also answered (in ``problem_ids``' order)."""
    keep = {str(i) for i in problem_ids}
    for run in runs.values():
        keep &= set(run.problems["problem_id"].astype(str))
    return np.array([i for i in map(str, problem_ids) if i in keep], dtype=object)


# --------------------------------------------------------------------------------------------
# studies: labelled folders of run folders, the committed recordings among them
# --------------------------------------------------------------------------------------------

#: Where the committed recordings live; each subfolder is a study like any user's.
COMMITTED_DIR = REPO_ROOT / "data" / "traces"

#: The committed studies by name (a folder of :data:`COMMITTED_DIR`); ``-p studies '["arith-organism-point"]'``
#: or ``"committed"`` (every committed study the chapter shows by default) asks for them by name.
COMMITTED_STUDIES = ("arith-smollm2", "arith-organism-point", "arith-organism-tell")

#: The studies the headline figure shows (chapter 05, section 5.6): the embedded model and organism
#: v6, whose gain over its leader alone was claimed by its preregistered test (chapter 06, 6.6).
HEADLINE_STUDIES = ("arith-smollm2", "arith-organism-v6")

#: Chapter 03's regime table (3.4): every committed study and organism v6's whole chain on the 200
#: spent problems it was chosen on (its preregistered test on fresh problems is chapter 06's, 6.6).
REGIME_STUDIES = COMMITTED_STUDIES + ("arith-organism-v6",)

#: The committed negative control: two studies of the same problems (``control-level1/<model>``),
#: the pointing organism (v5) beside the embedded model, in v5's preregistered family.
COMMITTED_CONTROL = ("control-level1/smollm2", "control-level1/organism")

#: Organism v6's control, as its preregistration fixed it: both models on the same 120 level-1 problems.
V6_CONTROL = ("control-level1-v6/smollm2", "control-level1-v6/organism-v6")


#: Every committed study's short name (its folder under ``data/traces``).
_COMMITTED_NAMES = frozenset(REGIME_STUDIES + HEADLINE_STUDIES + COMMITTED_CONTROL + V6_CONTROL)

#: A recording slot's value meaning "the committed recordings when the reader named none of theirs".
AUTO = "auto"
#: A recording slot's value naming the committed recordings.
COMMITTED = "committed"

#: Parameters that name recordings or data files: ``lase-nb notebooks`` makes their relative paths
#: absolute from the caller's working folder (papermill runs the chapters from ``notebooks/``).
PATH_PARAMETERS = ("traces", "studies", "control_traces", "data_path", "group_traces", "stage1_traces")


@dataclass(frozen=True)
class Study:
    """A labelled folder of run folders (``lase-full/``, ``mv/``, ...) and whether it is committed."""

    label: str
    path: Path
    committed: bool = False


def _is_path_word(value: Any) -> bool:
    return isinstance(value, str) and value not in (AUTO, COMMITTED) and value not in COMMITTED_STUDIES \
        and not value.startswith(f"{COMMITTED}:")


def absolute_paths(params: Mapping[str, Any], cwd: str | Path | None = None) -> dict[str, Any]:
    """``params`` with each relative path in a :data:`PATH_PARAMETERS` value made absolute from
    ``cwd`` (default: the working folder): what a user types is read from where they typed it.
    Keywords (``auto``, ``committed``, a committed study's name), None and absolute paths are kept;
    in ``studies`` each folder of a list (or of a ``[label, folder]`` pair) is converted."""
    base = Path(cwd or Path.cwd())

    def fix(v: Any) -> Any:
        if _is_path_word(v):
            p = Path(v).expanduser()
            return str(p if p.is_absolute() else (base / p).resolve())
        if isinstance(v, (list, tuple)):
            if len(v) == 2 and isinstance(v[0], str) and isinstance(v[1], str) and not _looks_like_study_list(v):
                return [v[0], fix(v[1])]
            return [fix(x) for x in v]
        if isinstance(v, Mapping):
            return {k: fix(x) for k, x in v.items()}
        return v

    return {k: (fix(v) if k in PATH_PARAMETERS else v) for k, v in params.items()}


def _looks_like_study_list(v: Sequence[Any]) -> bool:
    """A 2-item list of folders (``["runs/a", "runs/b"]``) rather than one ``[label, folder]`` pair:
    both items are paths (contain a separator or exist) or keywords."""
    return all(isinstance(x, str) and ("/" in x or Path(x).expanduser().exists() or not _is_path_word(x)) for x in v)


def study_folder(value: str | Path) -> tuple[Path, bool]:
    """A study's folder and whether it is a committed recording: a committed study's name
    (:data:`COMMITTED_STUDIES`, also ``committed:<name>``) or a path (:func:`resolve_data_path`)."""
    name = str(value)
    if name.startswith(f"{COMMITTED}:"):
        name = name.split(":", 1)[1]
    if name in _COMMITTED_NAMES:
        return COMMITTED_DIR / name, True
    p = resolve_data_path(value).resolve()
    return p, COMMITTED_DIR.resolve() in p.parents


def study_label(path: str | Path) -> str:
    """A study's label: ``study.json``'s ``label`` when the folder has one (``lase-nb record
    --label``), else the model its full-chain run names (:func:`display_name`), else the folder's name."""
    import json

    p = Path(path)
    meta = p / "study.json"
    if meta.is_file():
        try:
            label = json.loads(meta.read_text()).get("label")
            if label:
                return str(label)
        except (OSError, ValueError):
            pass
    try:
        return display_name(p)
    except RecordingError:
        raise
    except DataError:
        return p.name


def chapter_studies(traces: Any, studies: Any = AUTO, committed: Sequence[str] = COMMITTED_STUDIES[:2],
                    quiet: bool = False) -> list[Study]:
    """The studies a chapter shows, the reader's first: ``traces`` (a folder, or ``"committed"``:
    the first of ``committed``), then ``studies`` beside it.

    ``studies``: ``"auto"`` (the default) is the chapter's ``committed`` studies when ``traces``
    is ``"committed"`` and none when the reader named their own; None or ``[]``: none; else a
    folder, a committed study's name, ``"committed"`` (all of ``committed``), or a list of these or of
    ``[label, folder]`` pairs, or a ``{label: folder}`` mapping. Committed studies shown beside
    the reader's are labelled "(committed)"; equal labels get their folder's name. Prints one
    line per study (label, folder, model, data set, problems) unless ``quiet``."""
    own = traces not in (None, AUTO, COMMITTED)
    first = [(None, traces)] if own else [(None, committed[0])]
    if studies == AUTO:
        rest: list[tuple[str | None, Any]] = [] if own else [(None, c) for c in committed[1:]]
    elif studies is None:
        rest = []
    elif isinstance(studies, Mapping):
        rest = list(studies.items())
    elif isinstance(studies, (str, Path)):
        rest = [(None, studies)]
    else:
        items = list(studies)
        if len(items) == 2 and all(isinstance(x, str) for x in items) and not _looks_like_study_list(items):
            items = [items]  # one [label, folder] pair
        rest = [(x[0], x[1]) if isinstance(x, (list, tuple)) else (None, x) for x in items]
    expanded: list[tuple[str | None, Any]] = []
    for label, v in first + rest:
        if v == COMMITTED:
            expanded += [(None, c) for c in committed]
        elif v not in (None, AUTO):
            expanded.append((label, v))
    out: list[Study] = []
    seen: set[Path] = set()
    for label, v in expanded:
        path, is_committed = study_folder(v)
        if path in seen:
            continue
        seen.add(path)
        out.append(Study(label or study_label(path), path, is_committed))
    if any(not s.committed for s in out):
        out = [Study(f"{s.label} (committed)", s.path, True) if s.committed else s for s in out]
    labels = [s.label for s in out]
    out = [Study(f"{s.label} ({s.path.name})", s.path, s.committed) if labels.count(s.label) > 1 else s for s in out]
    if not quiet:
        for s in out:
            print(describe_study(s))
    return out


def describe_study(study: Study) -> str:
    """One line naming a study: its label, folder, and its full-chain run's model, data set and size."""
    where = str(study.path.relative_to(REPO_ROOT)) if REPO_ROOT in study.path.parents else str(study.path)
    path = study.path / RUN_DIRS.get("lase", "lase-full") / "manifest.json"
    if not path.is_file():
        return f"study {study.label!r}: {where} (no full-chain run)"
    m = read_manifest(path)
    return (f"study {study.label!r}: {where}; {m.get('backend')}:{str(m.get('model')).split(' (')[0]}, "
            f"{m.get('dataset')}, {m.get('n')} problems{', committed' if study.committed else ''}")


def control_studies(control: Any, traces: Any, quiet: bool = False) -> list[Study]:
    """The studies of a same-problems comparison (chapter 02's and 06's control): ``"auto"`` is
    the committed control (:data:`COMMITTED_CONTROL`) when ``traces`` is ``"committed"`` and none
    otherwise; ``"committed"`` the committed control; None none; a folder holding one study per
    subfolder, or a list of study folders, the reader's own."""
    own = traces not in (None, AUTO, COMMITTED)
    if control is None or (control == AUTO and own):
        return []
    if control in (AUTO, COMMITTED):
        return _pair(COMMITTED_CONTROL, quiet)
    if isinstance(control, (str, Path)):
        folder = resolve_data_path(control)
        subs = sorted(p for p in folder.iterdir() if (p / RUN_DIRS.get("lase", "lase-full")).is_dir()) \
            if folder.is_dir() else []
        if not subs:
            raise DataError(f"no study with a lase-full run under {folder.resolve()} (the control needs one "
                            "subfolder per model, each holding lase-full/)")
        return chapter_studies(subs[0], [str(s) for s in subs[1:]], quiet=quiet)
    items = list(control)
    return chapter_studies(items[0] if not isinstance(items[0], (list, tuple)) else items[0][1], items[1:], quiet=quiet)


def _pair(names: Sequence[str], quiet: bool) -> list[Study]:
    return chapter_studies(names[0], list(names[1:]), committed=tuple(names), quiet=quiet)


def control_pairs(control: Any, traces: Any, quiet: bool = False) -> list[list[Study]]:
    """Every same-problems comparison a chapter shows: for ``"auto"`` (with the committed traces)
    or ``"committed"``, both committed controls (v5's, :data:`COMMITTED_CONTROL`, then v6's,
    :data:`V6_CONTROL`); otherwise the one :func:`control_studies` reads, or none."""
    pair = control_studies(control, traces, quiet)
    if not pair:
        return []
    return [pair, _pair(V6_CONTROL, quiet)] if control in (AUTO, COMMITTED) else [pair]


def load_studies(studies: Sequence[Study], names: Iterable[str] | None = None,
                 require: Sequence[str] = ()) -> dict[str, dict[str, Run]]:
    """:func:`load_models` for a list of :class:`Study`: label -> its runs, in order (a later study
    lacking a required run is skipped with one printed line)."""
    return load_models({s.label: s.path for s in studies}, names, require)
