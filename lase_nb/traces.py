"""Tidy records of a run (one row per problem, per call, per LASE stage) plus a provenance manifest.

A run folder holds ``problems.jsonl``, ``calls.jsonl``, ``stages.jsonl`` and ``manifest.json``.
Every file is written to a temporary name and renamed into place, so an interrupted write
never leaves a half file; the manifest is written last and marks the run as complete.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import platform
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from . import __version__
from .errors import ConfigError, DataError
from .schema import read_manifest, read_tables
from .strategies import ProblemResult
from .types import Problem

TABLES = ("problems", "calls", "stages")


def problem_rows(results: Sequence[ProblemResult], problems: Sequence[Problem]) -> list[dict[str, Any]]:
    by_id = {p.id: p for p in problems}
    rows = []
    for r in results:
        p = by_id[r.problem_id]
        rows.append({
            "problem_id": r.problem_id, "strategy": r.strategy, "answer": r.answer, "gold": p.gold,
            "correct": bool(r.correct), "parsed": r.parsed, "answer_strict": r.answer_strict,
            "correct_strict": bool(r.correct_strict), "prompt_tokens": r.prompt_tokens,
            "completion_tokens": r.completion_tokens, "total_tokens": r.prompt_tokens + r.completion_tokens,
            "n_calls": len(r.calls), "stop_stage": r.stop_stage, "inclusions": r.inclusions,
            "leaks": r.leaks, "cap_hits": sum(c.hit_cap for c in r.calls),
            "level": p.meta.get("level"), **{f"x_{k}": v for k, v in r.extra.items()},
        })
    return rows


def call_rows(results: Sequence[ProblemResult]) -> list[dict[str, Any]]:
    rows = []
    for r in results:
        for used, calls in ((True, r.calls), (False, r.recording_calls)):
            for c in calls:
                d = asdict(c)
                d["reads"] = list(c.reads)
                rows.append({"problem_id": r.problem_id, "strategy": r.strategy, "used": used,
                             **d, "hit_cap": c.hit_cap})
    return rows


def stage_rows(results: Sequence[ProblemResult]) -> list[dict[str, Any]]:
    return [{"problem_id": r.problem_id, "strategy": r.strategy, **asdict(s)}
            for r in results for s in r.stages]


def cap_hit_rates(results: Sequence[ProblemResult]) -> dict[str, dict[str, float]]:
    """Per role: calls made, how many stopped at their ``max_tokens`` cap (and the share), and
    how many the local backend ended as verbatim loops (finish reason ``repeat``).

    Counts every call the run made, including full-chain calls past the stop (recording_calls).
    """
    made: dict[str, list[int]] = {}
    for r in results:
        for c in (*r.calls, *r.recording_calls):
            n = made.setdefault(c.role, [0, 0, 0])
            n[0] += 1
            n[1] += c.hit_cap
            n[2] += c.finish_reason == "repeat"
    return {role: {"calls": n, "cap_hits": k, "rate": round(k / n, 4), "loop_stops": loops}
            for role, (n, k, loops) in made.items()}


def provenance(**fields: Any) -> dict[str, Any]:
    """Manifest fields every run carries, plus the caller's (model, backend, parameters...)."""
    return {
        "package": "lase-nb", "version": __version__,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(), "platform": platform.platform(),
        "versions": {name: _dist_version(name) for name in ("numpy", "torch", "transformers")},
        **fields,
    }


def _dist_version(name: str) -> str | None:
    """An installed distribution's version, read from its metadata (importing torch and
    transformers only to read ``__version__`` would add seconds to every API run)."""
    from importlib import metadata
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def check_writable(out: str | Path) -> Path:
    """Create ``out`` if needed and prove it is writable, before any model call is spent."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".probe-"):
            pass
    except OSError as e:
        raise ConfigError(f"output folder {out} cannot be written ({e.strerror}); "
                          f"pass --out with a writable folder") from None
    return out


def _umask() -> int:
    """The process's umask (read by setting it and putting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _atomic_write(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all, with the mode a plain ``open`` would give it (the umask's,
    not the private 0600 of a temporary file)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows)


def write_run(out: str | Path, results: Sequence[ProblemResult], problems: Sequence[Problem],
              manifest: dict[str, Any]) -> Path:
    """Write the three tables and then the manifest (last, so its presence means complete).

    The manifest gains ``cap_hits``: per role, how many calls stopped at their token cap."""
    out = check_writable(out)
    manifest = {**manifest, "cap_hits": cap_hit_rates(results)}
    (out / "manifest.json").unlink(missing_ok=True)
    _atomic_write(out / "problems.jsonl", _jsonl(problem_rows(results, problems)))
    _atomic_write(out / "calls.jsonl", _jsonl(call_rows(results)))
    _atomic_write(out / "stages.jsonl", _jsonl(stage_rows(results)))
    _atomic_write(out / "manifest.json", json.dumps(manifest, indent=2, default=str) + "\n")
    return out


@dataclasses.dataclass
class Run:
    """A finished run read back from its folder."""

    path: Path
    manifest: dict[str, Any]
    problems: pd.DataFrame
    calls: pd.DataFrame
    stages: pd.DataFrame


def load_run(path: str | Path) -> Run:
    """Read a run folder written by :func:`write_run`: the one door every reader of a run goes
    through. Each file is checked against the recording's schema first (:mod:`lase_nb.schema`); a
    damaged run raises :class:`~lase_nb.schema.RecordingError`, one line naming the file, the line,
    the field and the fix."""
    path = Path(path)
    if not path.is_dir():
        raise DataError(f"no such folder: {path} (a relative path is read from the folder you ran the command in)")
    if not (path / "manifest.json").exists():
        raise DataError(f"{path} is not a finished run (no manifest.json); run `lase-nb run ... --out {path}`")
    manifest = read_manifest(path)
    return Run(path, manifest, **read_tables(path, manifest))
