"""Finished runs on disk, by strategy: the one loader every chapter uses.

- :func:`load_runs`: the finished run folders under a traces folder, by strategy name;
- :func:`run_from_results`: the same tables built in memory from a live run;
- :func:`problems_from_manifest`: a run's problems (question, gold, level) rebuilt from its manifest;
- :func:`common_ids`: the problem ids a set of runs all answered.

A run folder is what ``lase-nb run --out`` writes (:func:`lase_nb.traces.load_run` reads one);
it is finished when its ``manifest.json`` exists.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .errors import DataError, LaseError
from .traces import Run, call_rows, load_run, problem_rows, stage_rows

__all__ = ["RUN_DIRS", "load_runs", "run_from_results", "problems_from_manifest", "common_ids"]

#: Folder of a strategy name when it differs from the name: "lase" is read from the full-chain run
#: (LASE at any thresholds is replayed from it).
RUN_DIRS: dict[str, str] = {"lase": "lase-full"}

RECORD_HINT = "record them with `bash data/traces/record.sh` or pass the folder as `traces`"


def load_runs(folder: str | Path, names: Iterable[str] | None = None, require: Sequence[str] = ()) -> dict[str, Run]:
    """The finished runs under ``folder`` by name (``lase`` = the ``lase-full`` folder, :data:`RUN_DIRS`).

    ``names`` restricts and orders them (default: every subfolder, sorted); unfinished or missing
    ones are left out (``[n for n in names if n not in runs]`` lists them), except those named
    in ``require``, which raise :class:`~lase_nb.errors.DataError`.
    """
    folder = Path(folder)
    if names is None:
        if not folder.is_dir():
            raise DataError(f"no folder of recorded runs at {folder.resolve()}; {RECORD_HINT}")
        names = sorted(p.name for p in folder.iterdir() if p.is_dir())
    runs = {}
    for name in names:
        path = folder / RUN_DIRS.get(name, name)
        if (path / "manifest.json").exists():
            runs[name] = load_run(path)
    for name in require:
        if name not in runs:
            path = folder / RUN_DIRS.get(name, name)
            raise DataError(f"no finished run {path}; record it with `bash data/traces/record.sh` "
                            f"(or `lase-nb run --strategy lase --full-chain --out {path}`)")
    return runs


def run_from_results(results: Sequence, problems: Sequence, manifest: Mapping[str, Any] | None = None) -> Run:
    """The same tables :func:`lase_nb.traces.load_run` gives, built in memory from live results."""
    return Run(Path("<live>"), dict(manifest or {}), pd.DataFrame(problem_rows(results, problems)),
               pd.DataFrame(call_rows(results)), pd.DataFrame(stage_rows(results)))


def problems_from_manifest(manifest: Mapping[str, Any], data_path: str | None = None) -> dict[str, Any]:
    """The run's problems by id, regenerated from its manifest (data set, n, seed).

    ``{}`` when the data set cannot be loaded here (a user file that is not present, an unknown
    name): the problems' text is a nicety, the tables do not need it.
    """
    from .datasets import DATASETS, load_dataset
    from .names import resolve

    try:
        name = resolve(manifest.get("dataset", "arith"), DATASETS, "data set")
        probs = load_dataset(name, data_path or manifest.get("data_path"), manifest.get("n"), manifest.get("seed", 0))
    except (LaseError, OSError):
        return {}
    return {p.id: p for p in probs}


def common_ids(runs: Mapping[str, Run], problem_ids: Sequence[str]) -> np.ndarray:
    """The ids of ``problem_ids`` that every run in ``runs`` also answered (in ``problem_ids``' order)."""
    keep = {str(i) for i in problem_ids}
    for run in runs.values():
        keep &= set(run.problems["problem_id"].astype(str))
    return np.array([i for i in map(str, problem_ids) if i in keep], dtype=object)
