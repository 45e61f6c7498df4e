"""The schema of a run on disk, checked where a run is read: a damaged run is one clear error.

A run folder (:mod:`lase_nb.traces`) is data a user copies, edits, syncs and shares. Before a
reader sees it, :func:`read_tables` checks every file against the recording's schema and
:func:`read_manifest` the manifest; anything wrong raises :class:`RecordingError`, one line naming
the file, the line, the field and what to do.

- **Each row** (pydantic models, strict: no string is taken for a number): the fields and their
  types, probabilities in [0, 1] or absent (null, or NaN: unknown), entropies, token counts,
  stages and seconds >= 0.
  A run written by lase-nb (its manifest carries the writer's provenance) must carry every field
  of the current format; tables written by hand only need ``problem_id`` (and ``stage``), and what
  they carry is checked the same way.
- **Each file**: every row carries the same fields, each field holds one kind of value (numbers,
  text, ...) in every row, and no id is repeated (a problem once in ``problems.jsonl``, a
  (problem, stage) once in ``stages.jsonl``).
- **Across files**: every ``problem_id`` of ``calls.jsonl`` and ``stages.jsonl`` is in
  ``problems.jsonl``; each problem has its ``n_calls`` used calls; LASE's leader (role and agent
  ``leader``) has one stage row per call, stages counted from 0 without gaps; the manifest's ``n``
  equals the problems, its ``cap_hits`` the calls of each role and its ``answers`` the answers
  they gave (so another run's manifest is told apart even when the counts agree).

The fix a message names: ``git checkout -- RUN`` for a run git tracks (the committed
recordings), else the command that recorded it, rerun with the same call cache (every call it
made is answered from the cache, so nothing is sent again), else re-recording it.
"""

from __future__ import annotations

import functools
import json
import subprocess
from collections import Counter, defaultdict
from io import StringIO
from pathlib import Path
from typing import Annotated, Any, Iterable, Mapping, Sequence, get_type_hints

import pandas as pd
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model

from .errors import ConfigError, DataError
from .strategies import StrategyConfig

__all__ = ["RecordingError", "TABLES", "ROW_MODELS", "Manifest", "MANIFEST_REQUIRED", "read_manifest", "read_tables",
           "check_run", "older_fields", "check_rows", "restore_hint"]

#: The tables of a run folder, in the order they are read.
TABLES = ("problems", "calls", "stages")

class Bounds:
    """A number's range, ``lo <= x <= hi``, where NaN passes: the writer's "unknown" (a backend
    that returned no log-probabilities leaves p_min and h_max NaN)."""

    def __init__(self, lo: float, hi: float = float("inf")):
        self.lo, self.hi = lo, hi

    def __call__(self, x: float) -> float:
        if x != x or self.lo <= x <= self.hi:
            return x
        raise ValueError(f"should lie in [{self.lo:g}, {self.hi:g}]" if self.hi < float("inf") else
                         f"should be >= {self.lo:g}")


Probability = Annotated[float, AfterValidator(Bounds(0.0, 1.0))]
Nats = Annotated[float, AfterValidator(Bounds(0.0))]
Count = Annotated[int, Field(ge=0)]
Seconds = Annotated[float, Field(ge=0.0)]


class RecordingError(DataError):
    """A run's files do not match the recording's schema: one line naming the file, the line,
    the field and the fix (:func:`restore_hint`). The one error every reader of a run raises for
    a damaged one."""

    def __init__(self, path: str | Path, problem: str, line: int | None = None, field: str | None = None,
                 fix: str | None = None):
        where = str(path) + (f", line {line}" if line else "") + (f", field {field!r}" if field else "")
        text = f"{where}: {problem}; {fix or restore_hint(Path(path).parent)}"
        super().__init__(" ".join(text.split()))  # one line, whatever the parts held
        self.path, self.line, self.field = Path(path), line, field


class _Row(BaseModel):
    """A row of a run's table: strict types, extra fields allowed (``x_*`` extras, newer fields)."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)


class ProblemRow(_Row):
    """One graded answer per problem (:func:`lase_nb.traces.problem_rows`)."""

    problem_id: str
    strategy: str
    answer: str | None
    gold: str
    correct: bool
    parsed: bool
    answer_strict: str | None
    correct_strict: bool
    prompt_tokens: Count
    completion_tokens: Count
    total_tokens: Count
    n_calls: Count
    stop_stage: Count | None
    inclusions: Count
    leaks: Count
    cap_hits: Count
    level: int | str | None
    # a strategy's extras (``ProblemResult.extra``), where it writes them
    x_escalated: bool | Count | None = None
    x_order: list[str] | None = None
    x_debated: bool | None = None
    x_score: Probability | None = None
    x_first_answer: str | None = None
    x_chain_answers: list[str | None] | None = None


class CallRow(_Row):
    """One model call (:func:`lase_nb.traces.call_rows`)."""

    problem_id: str
    strategy: str
    used: bool
    role: str
    stage: Count
    agent: str
    prompt_tokens: Count
    completion_tokens: Count
    latency_s: Seconds
    cached: bool
    finish_reason: str
    reads: list[str]
    text: str
    answer: str | None
    p_min: Probability | None
    h_max: Nats | None
    leaked: Count
    mean_prob: Probability | None
    hit_cap: bool
    cached_tokens: Count | None = None


class StageRow(_Row):
    """LASE's leader after one stage (:func:`lase_nb.traces.stage_rows`)."""

    problem_id: str
    strategy: str
    stage: Count
    supporter: str | None
    answer: str | None
    correct: bool
    p_min: Probability | None
    h_max: Nats | None
    uncertain: bool
    prompt_tokens: Count
    completion_tokens: Count
    answer_strict: str | None
    correct_strict: bool
    extracted: bool
    gate_call: str


ROW_MODELS: dict[str, type[_Row]] = {"problems": ProblemRow, "calls": CallRow, "stages": StageRow}

#: Fields a row written by an earlier version may lack (the current writer always writes them).
_NEWER = {"calls": {"cached_tokens"}}
#: What a hand-written table must carry.
_HAND_REQUIRED = {"problems": {"problem_id"}, "calls": {"problem_id"}, "stages": {"problem_id", "stage"}}


def _optional(model: type[_Row], name: str) -> type[_Row]:
    """``model`` with every field optional (absent is fine; present is checked the same way)."""
    fields = {k: (Annotated[(f.annotation, *f.metadata)] if f.metadata else f.annotation, None)
              for k, f in model.model_fields.items()}
    return create_model(name, __base__=_Row, **fields)


_ADAPTERS = {(table, full): TypeAdapter(list[model if full else _optional(model, f"Hand{model.__name__}")])
             for table, model in ROW_MODELS.items() for full in (True, False)}


def _required(table: str, full: bool) -> set[str]:
    if not full:
        return _HAND_REQUIRED[table]
    model = ROW_MODELS[table]
    return {k for k, f in model.model_fields.items() if f.is_required()} - _NEWER.get(table, set())


# ---- the manifest --------------------------------------------------------------------------------

def _config_model() -> type[BaseModel]:
    """A run's ``config``: each field of :class:`lase_nb.strategies.StrategyConfig` with its type
    (JSON lists for tuples), every one optional (older recordings lack newer knobs)."""
    hints = get_type_hints(StrategyConfig)
    fields: dict[str, Any] = {}
    for name, hint in hints.items():
        if getattr(hint, "__origin__", None) is tuple:
            hint = list[hint.__args__[0]]
        fields[name] = (hint, None)
    return create_model("RunConfig", __config__=ConfigDict(strict=True, extra="allow"), **fields)


RunConfig = _config_model()


class CapHits(BaseModel):
    """Per role: calls made, those stopped at their token cap, their share, loop stops."""

    model_config = ConfigDict(strict=True, extra="allow")
    calls: Count
    cap_hits: Count
    rate: Probability
    loop_stops: Count | None = None


class AnswerCounts(BaseModel):
    """Per role, the answers its calls gave (``study.answer_distribution``): how many, the most
    common with their counts, the top one's share."""

    model_config = ConfigDict(strict=True, extra="allow")
    n: Count
    top: list[Annotated[list[str | Count], Field(min_length=2, max_length=2)]]
    top_share: Probability


class Manifest(BaseModel):
    """``manifest.json``: provenance, the configuration and the counts a reader checks the tables
    against. Every field is typed; the ones :data:`MANIFEST_REQUIRED` names are required of a run
    written by lase-nb (one that carries the writer's provenance)."""

    model_config = ConfigDict(strict=True, extra="allow")
    package: str | None = None
    version: str | None = None
    date: str | None = None
    python: str | None = None
    platform: str | None = None
    versions: dict[str, str | None] | None = None
    command: str | None = None
    strategy: str | None = None
    run_name: str | None = None
    label: str | None = None
    backend: str | None = None
    model: str | None = None
    base_url: str | None = None
    device: str | None = None
    max_batch: Count | None = None
    dtype: str | None = None
    dataset: str | None = None
    data_path: str | None = None
    n: Count | None = None
    offset: Count | None = None
    problem_set: str | None = None
    levels: list[int] | None = None
    split: str | None = None
    seed: int | None = None
    model_files: dict[str, Any] | None = None
    config: RunConfig | None = None  # type: ignore[valid-type]
    cache: dict[str, Any] | None = None
    engine: dict[str, Count] | None = None
    wall_s: Seconds | None = None
    answers: dict[str, AnswerCounts] | None = None
    cap_hits: dict[str, CapHits] | None = None
    notes_stating_answer: dict[str, Any] | None = None
    down_threshold: dict[str, Any] | None = None
    gate: dict[str, Any] | None = None
    organism_variant: dict[str, Any] | None = None
    preregistration: str | None = None  # the preregistration file a fresh recording read
    preregistration_commit: str | None = None  # the commit that holds it
    # a control arm of organism v6's gain (data/traces/controls.py, lase_nb.organism.controls)
    arm: str | None = None  # what the arm is
    controls_preregistration: str | None = None  # the controls' preregistration and its commit
    controls_preregistration_commit: str | None = None
    recording: str | None = None  # the recording whose escalated problems the arm reads
    limit: Count | None = None  # a smoke run's --limit (None for the committed arms)
    subset_of: Count | None = None  # the size of the problem list the arm's problems come from
    problem_ids: list[str] | None = None  # and their ids, in order
    identical_to_recorded: dict[str, Count] | None = None  # the replayed arm: identical revisions (k of n)
    derangement: dict[str, str] | None = None  # the other-note arm: whose note each problem read


#: What every run written by lase-nb's ``write_run`` carries in its manifest.
MANIFEST_REQUIRED = ("package", "version", "date", "command", "strategy", "backend", "model", "dataset", "n",
                     "seed", "config", "cap_hits")


#: Fields only lase-nb's writer puts in a manifest (``traces.provenance`` and ``write_run``).
_PROVENANCE = ("package", "version", "python", "platform", "versions", "cap_hits")


def _by_lase_nb(manifest: Mapping[str, Any]) -> bool:
    """Written by lase-nb (every field of the current format required), not by hand: the
    manifest carries any of the writer's own fields (one deleted still leaves the others)."""
    return any(k in manifest for k in _PROVENANCE)


def read_manifest(path: str | Path) -> dict[str, Any]:
    """A run's ``manifest.json`` (the file, or the run folder holding it), checked: valid JSON,
    an object, every field of its type and range, the fields a lase-nb run always has present,
    and its ``config`` within :meth:`~lase_nb.strategies.StrategyConfig.validate`'s ranges."""
    path = Path(path)
    if path.is_dir() or path.name != "manifest.json":
        path = path / "manifest.json"
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise RecordingError(path, "missing: the run is unfinished or was not copied whole") from None
    except UnicodeDecodeError as e:
        raise RecordingError(path, f"not UTF-8 text (byte {e.start}): the file was cut or damaged") from None
    except OSError as e:
        raise RecordingError(path, f"cannot be read ({e.strerror})") from None
    if not text.strip():
        raise RecordingError(path, "empty: the file was cut or emptied")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise RecordingError(path, f"not valid JSON ({e.msg}: column {e.colno}): the file was cut or edited",
                             line=e.lineno) from None
    if not isinstance(data, dict):
        raise RecordingError(path, f"holds a JSON {type(data).__name__}, not an object")
    try:
        Manifest.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        raise RecordingError(path, _what(err), field=_dotted(err["loc"])) from None
    if _by_lase_nb(data):
        if data.get("package", "lase-nb") != "lase-nb":
            raise RecordingError(path, f"{json.dumps(data['package'])[:40]} is not lase-nb's", field="package")
        missing = [k for k in MANIFEST_REQUIRED if k not in data]
        if missing:
            raise RecordingError(path, "missing; every run lase-nb writes has it", field=missing[0])
        config = {k: v for k, v in data["config"].items() if k in StrategyConfig.__dataclass_fields__}
        try:
            StrategyConfig.from_manifest(config).validate()
        except ConfigError as e:
            raise RecordingError(path, str(e), field="config") from None
    return data


# ---- the tables ----------------------------------------------------------------------------------

def _read(path: Path) -> tuple[str, list[tuple[int, Any]]]:
    """A JSONL file's text and ``(line number, parsed object)`` for each line; an error at the
    first line that is not one JSON object."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise RecordingError(path, "missing: the run folder was not copied whole") from None
    except OSError as e:
        raise RecordingError(path, f"cannot be read ({e.strerror})") from None
    chunks = raw.split(b"\n")
    rows = []
    for i, chunk in enumerate(chunks, start=1):
        if not chunk.strip():
            if i < len(chunks):  # only the end of the last line may be empty
                raise RecordingError(path, "an empty line inside the table: the file was edited", line=i)
            continue
        try:
            obj = json.loads(chunk.decode("utf-8"))
        except UnicodeDecodeError:
            raise RecordingError(path, "not UTF-8 text (cut inside a character?)", line=i) from None
        except json.JSONDecodeError as e:
            raise RecordingError(path, f"not valid JSON ({e.msg}: column {e.colno}): the file was cut or edited",
                                 line=i) from None
        if not isinstance(obj, dict):
            raise RecordingError(path, f"a JSON {type(obj).__name__}, not an object (one row per line)", line=i)
        rows.append((i, obj))
    return raw.decode("utf-8"), rows


#: The kind of each JSON value's Python type (numbers are one kind; null has none).
_KINDS = {bool: "true/false", int: "a number", float: "a number", str: "text", list: "a list", dict: "an object"}


def _kind(value: Any) -> str | None:
    """A JSON value's kind (:data:`_KINDS`); None for null."""
    return None if value is None else _KINDS.get(type(value), type(value).__name__)


def _what(err: Mapping[str, Any]) -> str:
    """A pydantic error in our words: what the value is and what it should be."""
    value = err.get("input")
    shown = json.dumps(value)[:40] if not isinstance(value, (dict, BaseModel)) else "an object"
    if err["type"] == "missing":
        return "missing"
    msg = err["msg"].removeprefix("Value error, ")
    return f"{shown} is not allowed: {msg[0].lower()}{msg[1:]}"


def _dotted(loc: Sequence[Any]) -> str:
    return ".".join(str(x) for x in loc if not isinstance(x, int)) or "?"


def older_fields(table: str, rows: Iterable[Mapping[str, Any]] | pd.DataFrame) -> list[str]:
    """The current format's fields that every row of a non-empty ``table`` lacks: a run recorded by
    an older version of lase-nb (``table.field`` names)."""
    have: set[str] = set(rows.columns) if isinstance(rows, pd.DataFrame) else set().union(*map(set, rows))
    if not have:
        return []
    return [f"{table}.{k}" for k in ROW_MODELS[table].model_fields if k in _required(table, True) and k not in have]


def check_rows(path: Path, table: str, numbered: Sequence[tuple[int, Mapping[str, Any]]], full: bool) -> None:
    """One table's rows against its model (:data:`ROW_MODELS`): types and ranges, required fields
    (all of the current format when ``full``), the same fields and one kind of value per field in
    every row."""
    rows = [r for _, r in numbered]
    try:
        _ADAPTERS[(table, full)].validate_python(rows)
    except ValidationError as e:
        err = min(e.errors(), key=lambda x: x["loc"][0])
        index = err["loc"][0]
        field = str(err["loc"][1]) if len(err["loc"]) > 1 else None  # the row's field (not a union's member)
        raise RecordingError(path, _what(err), line=numbered[index][0], field=field) from None
    keys = Counter(frozenset(r) for r in rows)
    if len(keys) > 1:
        usual = keys.most_common(1)[0][0]
        line, row = next((i, r) for i, r in numbered if frozenset(r) != usual)
        gone, extra = sorted(usual - set(row)), sorted(set(row) - usual)
        if gone:
            raise RecordingError(path, "missing here; the other rows carry it", line=line, field=gone[0])
        raise RecordingError(path, "only this row carries it", line=line, field=extra[0])
    gone = sorted(_HAND_REQUIRED[table] - set(rows[0])) if rows else []  # what a hand-written table needs
    if gone:
        raise RecordingError(path, "missing", line=numbered[0][0], field=gone[0])
    for k in rows[0] if rows else ():
        if len({_KINDS.get(type(r[k])) for r in rows if r[k] is not None}) > 1:
            usual = Counter(_kind(r[k]) for r in rows if r[k] is not None).most_common(1)[0][0]
            line, row = next((i, r) for i, r in numbered if _kind(r[k]) not in (None, usual))
            raise RecordingError(path, f"{json.dumps(row[k])[:40]} is {_kind(row[k])}, where the other rows hold "
                                       f"{usual}", line=line, field=k)


def _check_across(folder: Path, manifest: Mapping[str, Any],
                  tables: Mapping[str, Sequence[tuple[int, Mapping[str, Any]]]]) -> None:
    """The files against each other and against the manifest (ids, counts, stages)."""
    p_path, c_path, s_path = (folder / f"{t}.jsonl" for t in TABLES)
    m_path = folder / "manifest.json"
    problems, calls, stages = (tables[t] for t in TABLES)
    first: dict[str, int] = {}
    for line, r in problems:
        pid = r["problem_id"]
        if pid in first:
            raise RecordingError(p_path, f"problem {pid!r} again (first on line {first[pid]}): one row per problem",
                                 line=line, field="problem_id")
        first[pid] = line
    for path, rows in ((c_path, calls), (s_path, stages)):
        for line, r in rows:
            if r["problem_id"] not in first:
                raise RecordingError(path, f"problem {r['problem_id']!r} is not in problems.jsonl", line=line,
                                     field="problem_id")
    n = manifest.get("n")
    if n is not None and n != len(problems):
        raise RecordingError(m_path, f"says {n} problems, problems.jsonl has {len(problems)} rows", field="n")
    if calls and problems and "n_calls" in problems[0][1] and "used" in calls[0][1]:
        used = Counter(r["problem_id"] for _, r in calls if r["used"])
        for line, r in problems:
            if used[r["problem_id"]] != r["n_calls"]:
                raise RecordingError(p_path, f"problem {r['problem_id']!r} made {r['n_calls']} calls, calls.jsonl "
                                             f"has {used[r['problem_id']]} of them", line=line, field="n_calls")
    elif problems and not calls and any(r.get("n_calls") for _, r in problems):
        raise RecordingError(c_path, "empty, but problems.jsonl counts calls (n_calls)")
    cap = manifest.get("cap_hits")
    if cap is not None and (calls or cap):
        made = Counter(r.get("role") for _, r in calls)
        stopped = Counter(r.get("role") for _, r in calls if r.get("hit_cap"))
        for role in sorted(set(made) | set(cap), key=str):
            want = cap.get(role, {}).get("calls", 0)
            if made[role] != want:
                raise RecordingError(m_path, f"counts {want} calls of role {role!r}, calls.jsonl has {made[role]}",
                                     field=f"cap_hits.{role}.calls")
            if calls and "hit_cap" in calls[0][1] and stopped[role] != cap.get(role, {}).get("cap_hits", 0):
                raise RecordingError(m_path, f"counts {cap[role]['cap_hits']} capped calls of role {role!r}, "
                                             f"calls.jsonl has {stopped[role]}", field=f"cap_hits.{role}.cap_hits")
    answers = manifest.get("answers")
    if answers and calls and "answer" in calls[0][1] and "role" in calls[0][1]:
        given: dict[str, Counter] = defaultdict(Counter)
        for _, r in calls:
            if r["answer"] is not None:
                given[r["role"]][r["answer"]] += 1
        for role, counted in answers.items():
            got = given.get(role, Counter())
            wrong = [(a, k) for a, k in counted["top"] if got[a] != k]
            if counted["n"] != sum(got.values()) or wrong:
                told = (f"{counted['n']} answers" if counted["n"] != sum(got.values())
                        else f"answer {wrong[0][0]!r} {wrong[0][1]} times")
                raise RecordingError(m_path, f"counts {told} of role {role!r}, calls.jsonl "
                                             f"{sum(got.values()) if not wrong else got[wrong[0][0]]}: the manifest "
                                             "of another run?", field=f"answers.{role}")
    seen: dict[tuple[str, int], int] = {}
    by_problem: dict[str, list[int]] = defaultdict(list)
    for line, r in stages:
        key = (r["problem_id"], r["stage"])
        if key in seen:
            raise RecordingError(s_path, f"stage {key[1]} of problem {key[0]!r} again (first on line {seen[key]})",
                                 line=line, field="stage")
        seen[key] = line
        by_problem[key[0]].append(key[1])
    for pid, got in by_problem.items():
        if sorted(got) != list(range(len(got))):
            raise RecordingError(s_path, f"problem {pid!r} has stages {sorted(got)}: stages count from 0 without gaps",
                                 line=seen[(pid, max(got))], field="stage")
    # LASE's leader (role and agent "leader") writes one stage row per call, and stage rows come
    # from nothing else (lase-mv's chains are "chainJ.leader" and keep no stages)
    if calls and "role" in calls[0][1] and "agent" in calls[0][1] and "stage" in calls[0][1]:
        led = {(r["problem_id"], r["stage"]): line for line, r in calls
               if r["role"] == "leader" and r["agent"] == "leader"}
        for key, line in led.items():
            if key not in seen:
                raise RecordingError(s_path, f"no row for stage {key[1]} of problem {key[0]!r} (its leader call is "
                                             f"on line {line} of calls.jsonl)")
        for key, line in seen.items():
            if key not in led:
                raise RecordingError(s_path, f"stage {key[1]} of problem {key[0]!r} has no leader call in calls.jsonl",
                                     line=line, field="stage")


def check_run(folder: str | Path) -> dict[str, Any]:
    """Check a run folder against the schema without building its tables; returns its manifest."""
    manifest = read_manifest(folder)
    _checked(Path(folder), manifest)
    return manifest


def read_tables(folder: str | Path, manifest: Mapping[str, Any] | None = None) -> dict[str, pd.DataFrame]:
    """A run folder's three tables, checked against the schema and against each other and the
    manifest (:func:`read_manifest`'s, read here when not given); each as a DataFrame, read as the
    package always read them (answers, gold and text stay strings: "7" must not become 7.0)."""
    folder = Path(folder)
    read = _checked(folder, read_manifest(folder) if manifest is None else manifest)
    return {t: pd.read_json(StringIO(text), lines=True, dtype={"answer": str, "gold": str, "text": str})
            if rows else pd.DataFrame() for t, (text, rows) in read.items()}


def _checked(folder: Path, manifest: Mapping[str, Any]) -> dict[str, tuple[str, list[tuple[int, Any]]]]:
    """Each table's text and numbered rows, every check passed."""
    full = _by_lase_nb(manifest)
    read = {t: _read(folder / f"{t}.jsonl") for t in TABLES}
    numbered = {t: rows for t, (_, rows) in read.items()}
    if full:
        older = [f for t in TABLES for f in older_fields(t, [r for _, r in numbered[t]])]
        if older:
            raise RecordingError(folder, f"recorded by an older version of lase-nb (no {', '.join(older)})",
                                 fix="re-record it with `python data/traces/record.py`, `lase-nb record` or `lase-nb run`")
    for t in TABLES:
        check_rows(folder / f"{t}.jsonl", t, numbered[t], full)
    _check_across(folder, manifest, numbered)
    return read


# ---- the fix -------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=64)
def _tracked(folder: Path) -> bool:
    """Whether git tracks ``folder`` (the committed recordings): ``git checkout`` restores it."""
    try:
        done = subprocess.run(["git", "-C", str(folder), "ls-files", "--error-unmatch", "."], capture_output=True,
                              timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def restore_hint(folder: str | Path) -> str:
    """What to do about a damaged run in ``folder``: ``git checkout -- FOLDER`` when git tracks it
    (the committed recordings); else copy it again, or rerun the command its manifest (or its
    study's ``study.json``) names, which rewrites the run from the call cache without sending a
    call it already made; else re-record it."""
    folder = Path(folder)
    if folder.is_dir() and _tracked(folder.resolve()):
        return f"restore it with `git checkout -- {folder}`"
    command, study = None, False
    for meta in (folder / "manifest.json", folder.parent / "study.json"):
        try:
            data = json.loads(meta.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("command"), str):
            command, study = data["command"], "run_name" in data or meta.name == "study.json"
            break
    out = folder.parent if study else folder
    if command:
        to = "" if str(out) in command else f" with --out {out}"
        return (f"copy it again, or rewrite it from the call cache: rerun `{command}`{to} (no call it made is "
                f"sent again)")
    return f"copy it again, or re-record it (`lase-nb record --out {folder.parent}`, `lase-nb run ... --out {folder}`)"
