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
- :func:`check_format`: a clear error for a run recorded by an older version.

A run folder is what ``lase-nb run --out`` writes (:func:`lase_nb.traces.load_run` reads one);
it is finished when its ``manifest.json`` exists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .errors import DataError, LaseError, show_in_one_line
from .paths import REPO_ROOT
from .schema import RecordingError, read_manifest
from .stats import PAIRED_N_BOOT, bool_array, mcnemar, wilson_interval
from .strategies import SPECS
from .traces import Run, call_rows, load_run, problem_rows, stage_rows

if TYPE_CHECKING:
    from .replay import Chains

show_in_one_line()  # in a notebook, an error a reader can fix (a damaged study) is one line, not a traceback

__all__ = ["RUN_DIRS", "PROBLEM_SETS", "RECORD_COMMANDS", "PLUGINS", "register_problem_set", "resolve_data_path", "UNFINISHED", "left_out_runs", "load_runs", "load_models", "chains_by_model", "control_models", "paired_correct", "model_label",
           "record_command", "check_format", "run_from_results", "problems_from_manifest", "common_ids",
           "comparison_table", "strategy_tables", "display_name", "by_display_name",
           "REVISION_TEXT", "FOLLOW_UP_ROLES", "FORMAT_TOLERANCE", "baseline_formats", "off_format",
           "FIRST_ROUND", "FIRST_ROUND_LABEL", "sampling_gap", "describe_sampling_gap",
           "Study", "AUTO", "COMMITTED", "COMMITTED_STUDIES", "HEADLINE_STUDIES", "REGIME_STUDIES", "COMMITTED_CONTROL", "V6_CONTROL", "control_pairs", "PATH_PARAMETERS", "absolute_paths",
           "study_folder", "study_label", "chapter_studies", "describe_study", "control_studies", "load_studies",
           "MIN_DECIDABLE", "MIN_DISCORDANT", "decidable", "gain_words",
           "split_by_coverage", "main_comparison"]

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


def strategy_tables(runs: Mapping[str, Run], tau_lp: float, tau_h: float) -> dict[str, pd.DataFrame]:
    """Each strategy's problems table as the chapters compare them, in display order (``SPECS``): LASE
    replayed from the full chain (``runs["lase"]``, or ``runs["lase-full"]`` when loaded by folder
    name) at (tau_lp, tau_h), ``lase-full`` = every stage, ``single`` (when no single run was
    recorded) = the full chain's stage 0, the leader alone on the same prompt; every other run as
    recorded."""
    from .replay import chains_from_stages, outcomes_at, replay

    chains = chains_from_stages(runs["lase" if "lase" in runs else "lase-full"].stages)
    replayed = {"lase": replay(chains, tau_lp, tau_h), "lase-full": outcomes_at(chains, chains.n_stages - 1)}
    if "single" not in runs:  # the single agent is the leader alone: the full chain's stage 0, same prompt
        replayed["single"] = outcomes_at(chains, 0)
    return {s: replayed[s] if s in replayed else runs[s].problems for s in SPECS if s in replayed or s in runs}


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


def paired_correct(tables: Mapping[str, pd.DataFrame], a: str, b: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Strategy ``a``'s and ``b``'s correctness on the problems both ran (from
    :func:`strategy_tables`), in the same order: the input of a paired test; None when either is
    missing or they share no problem."""
    if a not in tables or b not in tables:
        return None
    x = tables[a].set_index(tables[a]["problem_id"].astype(str))["correct"]
    y = tables[b].set_index(tables[b]["problem_id"].astype(str))["correct"]
    ids = x.index.intersection(y.index)
    return (x.loc[ids].to_numpy(bool), y.loc[ids].to_numpy(bool)) if len(ids) else None


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


def _ref_columns(ok: np.ndarray, ref_ok: np.ndarray | None, tag: str) -> dict[str, float]:
    if ref_ok is None:
        return {f"wins_vs_{tag}": np.nan, f"losses_vs_{tag}": np.nan, f"p_vs_{tag}": np.nan}
    wins, losses, p = mcnemar(ok, ref_ok)
    return {f"wins_vs_{tag}": wins, f"losses_vs_{tag}": losses, f"p_vs_{tag}": p}


def comparison_table(runs: Mapping[str, pd.DataFrame] | pd.DataFrame, baseline: str | None = "single",
                     vote: str | None = "mv", level: float = 0.95) -> pd.DataFrame:
    """Every strategy on the problems ALL of them answered: the one comparison table (chapters 04, 06).

    ``runs`` maps a strategy to its problems table, or is one long table with a ``strategy``
    column (first-seen order). Each needs problem_id, correct and total_tokens, one row per
    problem; completion_tokens and stop_stage / x_debated (for the escalation rate) are optional.

    Columns: n (common problems), accuracy with a Wilson interval (acc_lo, acc_hi: the package's
    one interval for an accuracy), accuracy_strict (graded without the answer-extraction step:
    ``correct_strict`` where the table has it, else ``correct``), avg_tokens and total_tokens (prompt + completion),
    avg_completion_tokens and total_completion_tokens, token_multiplier and
    completion_multiplier (avg tokens / the ``baseline`` row's), escalation_rate, and for each of
    ``baseline`` and ``vote`` an exact McNemar test: wins_vs_<name> (this right, that wrong),
    losses_vs_<name>, p_vs_<name> (NaN on its own row, or where that strategy is absent).
    """
    from .replay import escalation_rate

    if isinstance(runs, pd.DataFrame):
        if "strategy" not in runs:
            raise ValueError(f"column 'strategy' missing; have {list(runs.columns)}")
        runs = {name: g for name, g in runs.groupby("strategy", sort=False)}
    if not runs:
        raise DataError("no runs to compare")
    for name, df in runs.items():
        for col in ("problem_id", "correct", "total_tokens"):
            if col not in df:
                raise ValueError(f"{name}: column {col!r} missing; have {list(df.columns)}")
        if df["problem_id"].duplicated().any():
            raise ValueError(f"{name}: duplicate problem_id rows; one graded answer per problem per strategy")
    common = set.intersection(*(set(df["problem_id"]) for df in runs.values()))
    if not common:
        raise DataError("the runs share no problem ids; record them on the same data set, n and seed")
    ids = sorted(common)
    aligned = {s: df.set_index("problem_id").loc[ids] for s, df in runs.items()}
    correct = {s: bool_array(df["correct"], "correct") for s, df in aligned.items()}
    refs = [r for r in dict.fromkeys([baseline, vote]) if r is not None]
    rows = {}
    for s, df in aligned.items():
        ok = correct[s]
        lo, hi = wilson_interval(int(ok.sum()), len(ok), level)
        comp = df["completion_tokens"] if "completion_tokens" in df else pd.Series(np.nan, index=df.index)
        strict = bool_array(df["correct_strict"], "correct_strict") if "correct_strict" in df else ok
        row = {"n": len(ids), "accuracy": float(ok.mean()), "acc_lo": lo, "acc_hi": hi,
               "accuracy_strict": float(strict.mean()),
               "avg_tokens": float(df["total_tokens"].mean()), "total_tokens": float(df["total_tokens"].sum()),
               "avg_completion_tokens": float(comp.mean()), "total_completion_tokens": float(comp.sum(min_count=1)),
               "escalation_rate": escalation_rate(df.reset_index())}
        for r in refs:
            row.update(_ref_columns(ok, correct[r] if r in correct and r != s else None, r))
        rows[s] = row
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "strategy"
    for col, name in (("avg_tokens", "token_multiplier"), ("avg_completion_tokens", "completion_multiplier")):
        out[name] = out[col] / out.loc[baseline, col] if baseline in out.index else np.nan
    return out


#: The phrases of the organisms' trained LASE revision (``lase_nb.organism.recipe``: "Step 2 again: ...",
#: "so I change it and carry it on", "so my answer stands"). A follow-up of another strategy that
#: writes them answers in LASE's format, not its own.
REVISION_TEXT = re.compile(r"\b[Ss]tep \d+ again\b|\bI change it and carry it on\b|\bmy answer stands\b")

#: The roles that answer after reading other replies, per baseline (their calls at stage 1 and later).
FOLLOW_UP_ROLES = {"mad": ("debater",), "moa": ("proposer", "aggregator"), "down": ("debater",)}

#: The largest share of a baseline's follow-ups that may write another strategy's text for its row to
#: be compared (issue 35's target: at least 95% of the replies in their own format).
FORMAT_TOLERANCE = 0.05


def baseline_formats(runs: Mapping[str, Run]) -> pd.DataFrame:
    """Are the baselines answering in their own format? One row per recorded baseline with follow-ups
    (MAD's second round, MoA's second layer and aggregator, DOWN's refinements): ``follow_ups``, those
    that write LASE's revision text (:data:`REVISION_TEXT`), their share, ``lase_roles_only`` (the
    model's manifest says its adapter was trained for LASE's roles only, so no follow-up role was
    taught), and ``comparable``: neither. A row that is not comparable measures the training, not the
    strategy."""
    rows = []
    for s, roles in FOLLOW_UP_ROLES.items():
        if s not in runs:
            continue
        calls = runs[s].calls
        fu = calls[calls["role"].isin(roles) & (calls["stage"] >= 1)] if len(calls) else calls
        n = len(fu)
        k = int(fu["text"].fillna("").map(lambda t: bool(REVISION_TEXT.search(t))).sum()) if n else 0
        variant = runs[s].manifest.get("organism_variant") or {}
        lase_only = bool(variant.get("lase_roles_only"))
        rows.append({"strategy": s, "follow_ups": n, "with_lase_revision_text": k, "share": k / n if n else 0.0,
                     "lase_roles_only": lase_only, "comparable": not lase_only and (k <= FORMAT_TOLERANCE * n)})
    return pd.DataFrame(rows, columns=["strategy", "follow_ups", "with_lase_revision_text", "share",
                                       "lase_roles_only", "comparable"]).set_index("strategy")


def off_format(formats: pd.DataFrame) -> dict[str, str]:
    """The baselines of :func:`baseline_formats` that are not comparable, each with the reason in words."""
    names = {"mad": "MAD", "moa": "MoA", "down": "DOWN"}
    out = {}
    for s, r in formats[~formats["comparable"]].iterrows():
        k, n, name = int(r["with_lase_revision_text"]), int(r["follow_ups"]), names.get(s, s)
        seen = f"{k} of its {n} {name} follow-up replies write LASE's revision text"
        if not r["lase_roles_only"]:
            out[s] = f"its follow-ups are off format: {seen}"
        elif k:
            out[s] = f"the model was trained for LASE's roles only, and {seen}"
        else:
            out[s] = (f"the model was trained for LASE's roles only (no {name} role was taught); {seen}, "
                      "so this rests on the training alone, not on a count of off-format replies")
    return out


#: The answers a strategy writes before any agent reads another (role, at stage 0): the single
#: agent's greedy answer, and the independent samples that MV votes over, that open MAD's debate
#: (its round 1) and that MoA's first layer proposes. All answer the single agent's own prompt
#: (``lase_nb.strategies``: ``single`` decodes greedily, ``_samples`` at the run's temperature).
FIRST_ROUND = {"single": "solver", "mv": "sample", "mad": "debater", "moa": "proposer"}
FIRST_ROUND_LABEL = {"single": "single agent", "mv": "MV's samples", "mad": "MAD's round 1",
                     "moa": "MoA's first layer"}


def sampling_gap(runs: Mapping[str, Run], problems: Mapping[str, Any], n_boot: int = PAIRED_N_BOOT,
                 seed: int = 0) -> pd.DataFrame:
    """How often the first answers are right before any agent reads another: the greedy single
    agent against the sampled first round of MV, MAD and MoA (:data:`FIRST_ROUND`), each answer graded
    by its own box (strict: no extraction step, which MAD's and MoA's first rounds do not run).

    One row per strategy present (``single`` first): temperature (0 for the single agent, the
    run's ``temperature`` for the samples), answers, boxed (those with a box of their own), right, accuracy with a Wilson interval (over
    answers, which cluster by problem), problems; and for each sampled row ``gap``: on the problems
    it shares with the single agent, the mean over problems of (share of its answers right - the
    single agent right), with a bootstrap interval over problems (``gap_lo``, ``gap_hi``).
    ``problems`` maps a problem id to its :class:`lase_nb.types.Problem` (the gold and kind)."""
    from .answers import answer_or_none, grade
    from .stats import bootstrap_ci

    per_problem: dict[str, pd.Series] = {}
    rows = []
    for s, role in FIRST_ROUND.items():
        if s not in runs or not len(runs[s].calls):
            continue
        calls = runs[s].calls
        first = calls[(calls["role"] == role) & (calls["stage"] == 0)]
        first = first[first["problem_id"].astype(str).isin(problems)]
        if first.empty:
            continue
        right = pd.Series([bool(grade(answer_or_none(a), problems[str(p)].gold, problems[str(p)].kind))
                           for a, p in zip(first["answer"], first["problem_id"])], index=first.index)
        per_problem[s] = right.groupby(first["problem_id"].astype(str)).mean()
        k, n = int(right.sum()), len(right)
        boxed = int(sum(answer_or_none(a) is not None for a in first["answer"]))
        lo, hi = wilson_interval(k, n)
        temperature = 0.0 if s == "single" else float(runs[s].manifest.get("config", {}).get("temperature", np.nan))
        rows.append({"strategy": s, "first answers": FIRST_ROUND_LABEL[s], "temperature": temperature,
                     "answers": n, "boxed": boxed, "right": k, "accuracy": k / n, "acc_lo": lo, "acc_hi": hi,
                     "problems": int(first["problem_id"].nunique())})
    out = pd.DataFrame(rows, columns=["strategy", "first answers", "temperature", "answers", "boxed", "right",
                                      "accuracy", "acc_lo", "acc_hi", "problems"]).set_index("strategy")
    out["gap"] = out["gap_lo"] = out["gap_hi"] = np.nan
    if "single" in per_problem:
        ref = per_problem["single"]
        for s, share in per_problem.items():
            if s == "single":
                continue
            ids = share.index.intersection(ref.index)
            if len(ids):
                out.loc[s, ["gap", "gap_lo", "gap_hi"]] = bootstrap_ci(
                    (share.loc[ids] - ref.loc[ids]).to_numpy(float), n_boot=n_boot, seed=seed)
    return out


def describe_sampling_gap(table: pd.DataFrame) -> str:
    """:func:`sampling_gap` in words: the greedy single agent's first answers against each sampled
    first round, with the gap and its interval, and what follows for the strategies built on them."""
    if "single" not in table.index or len(table) < 2:
        return "No sampled first round to set beside the single agent's greedy answers."
    if "boxed" in table and not table["boxed"].any():
        return ("No first answer has a box of its own (the extraction step supplied every answer), so this "
                "comparison, which grades each first answer by its own box, has nothing to compare.")
    s = table.loc["single"]
    parts = []
    for _, r in table.drop(index="single").iterrows():
        gap = "" if np.isnan(r["gap"]) else (f", {100 * r['gap']:+.1f} points [{100 * r['gap_lo']:+.1f}, "
                                              f"{100 * r['gap_hi']:+.1f}]")
        parts.append(f"{r['first answers']} {int(r['right'])} of {int(r['answers'])} ({100 * r['accuracy']:.1f}%, "
                     f"temperature {r['temperature']:g}){gap}")
    below = [r["first answers"] for _, r in table.drop(index="single").iterrows() if r["gap_hi"] < 0]
    tail = (f" {', '.join(below)} {'is' if len(below) == 1 else 'are'} detectably less often right (the interval "
            "lies below zero): a debate or an aggregator built on these answers starts behind the single agent "
            "before any agent reads another." if below else
            " No sampled first round is detectably below the single agent here.")
    return (f"The single agent decodes greedily (temperature 0): {int(s['right'])} of {int(s['answers'])} first "
            f"answers right ({100 * s['accuracy']:.1f}%). The same prompt, sampled: " + "; ".join(parts)
            + " (each against the single agent on the same problems, in points, with a 95% bootstrap interval "
            "over problems)." + tail)


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


#: Fewest paired problems on which a chapter decides an accuracy claim; below it, "too few problems to say".
MIN_DECIDABLE = 20
#: Fewest discordant problems (right under one, wrong under the other) for which the exact McNemar
#: test can reach p < 0.05 at all (all six the same way: p = 2 / 2**6 = 0.031).
MIN_DISCORDANT = 6


def decidable(n: int, discordant: float | None = None) -> bool:
    """Whether an accuracy comparison on ``n`` paired problems can be decided at all: at least
    :data:`MIN_DECIDABLE` problems and, when known, :data:`MIN_DISCORDANT` discordant ones. Below
    that a chapter prints "too few problems to say" with the interval, never a verdict."""
    if n < MIN_DECIDABLE:
        return False
    return discordant is None or not np.isfinite(discordant) or discordant >= MIN_DISCORDANT


def gain_words(gain: float, lo: float, hi: float, p: float, n: int, discordant: float | None = None,
               what: str = "the leader alone") -> str:
    """A paired accuracy gain in words: the gain and its 95% interval in points, the exact p, and
    "above"/"below" ``what`` only when the interval and the test agree (and :func:`decidable`);
    "too few problems to say" below that size; otherwise "not shown to differ"."""
    head = f"{100 * gain:+.1f} points [{100 * lo:+.1f}, {100 * hi:+.1f}], p = {p:.2g}, {n} problems"
    if not decidable(n, discordant):
        differ = f" ({int(discordant)} of {n} answers differ)" if discordant is not None and n >= MIN_DECIDABLE else ""
        return f"{head}: too few problems to say{differ}"
    if lo > 0 and p < 0.05:
        return f"{head}: above {what}"
    if hi < 0 and p < 0.05:
        return f"{head}: below {what}"
    return f"{head}: not shown to differ from {what}"


def split_by_coverage(tables: Mapping[str, pd.DataFrame], ratio: float = 0.8) -> tuple[list[str], list[str]]:
    """Strategies with about as many problems as the typical run (``main``) and those recorded on far fewer.

    A strategy is short when its problem count is below ``ratio`` times the median count; comparing
    everything on the common ids would otherwise shrink the whole table to the shortest run.
    """
    counts = {s: int(t["problem_id"].nunique()) for s, t in tables.items()}
    cut = ratio * float(np.median(list(counts.values())))
    return [s for s in tables if counts[s] >= cut], [s for s in tables if counts[s] < cut]


def main_comparison(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The one comparison table of a study (chapters 04 and 07 print its token ratios): every
    strategy of :func:`split_by_coverage`'s main group on the problems all of them answered
    (:func:`comparison_table`)."""
    main, _ = split_by_coverage(tables)
    return comparison_table({s: tables[s] for s in main})
