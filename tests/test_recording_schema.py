"""A run on disk is checked where it is read (lase_nb.schema): the committed recordings pass, and a
damaged copy gives one error, RecordingError, naming the file, the line, the field and the fix.

The fuzz test damages every run file of the committed recordings (truncated at a random byte, a
field deleted, given a value of the wrong kind or out of its range, a line repeated or dropped, an
id changed, the file emptied, another run's manifest or line put in) and reads the copy: the
reader either reads exactly what it read before (harmless damage) or raises RecordingError, never
anything else, and writes nothing. The fast tier reads a small seeded sample through the one
door (``traces.load_run``) and each reader once; the slow tier the whole sweep.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pandas as pd
import pytest

from lase_nb import cli, report, runs, schema, traces
from lase_nb.replay import load_chains, sweep
from lase_nb.schema import RecordingError
from lase_nb.strategies import CallRecord, ProblemResult, StageRecord
from lase_nb.types import Problem

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "data" / "traces"
SMOLLM2 = TRACES / "arith-smollm2"
RUN_FOLDERS = sorted(p.parent for p in TRACES.rglob("manifest.json"))


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write_rows(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


# ---- the committed recordings and the writer -------------------------------------------------------

def test_every_committed_recording_passes_the_schema():
    assert len(RUN_FOLDERS) >= 27
    for folder in RUN_FOLDERS:
        manifest = schema.check_run(folder)  # raises RecordingError if the schema or the data were wrong
        assert manifest["package"] == "lase-nb"


def test_every_field_of_a_committed_manifest_is_typed():
    """A manifest field the schema does not name passes any value (``extra="allow"``): the slow
    fuzz sweep then finds a wrong type read silently. Every field a committed run carries is typed."""
    untyped = {f"{folder.relative_to(TRACES)}: {key}" for folder in RUN_FOLDERS
               for key in json.loads((folder / "manifest.json").read_text())
               if key not in schema.Manifest.model_fields}
    assert not untyped, "type these manifest fields in lase_nb.schema.Manifest"


def test_a_checked_run_reads_as_the_tables_always_read():
    """Validation changes nothing in what a reader gets (the same frames pandas read before)."""
    for folder in (SMOLLM2 / "lase-full", SMOLLM2 / "mv"):
        run = traces.load_run(folder)
        for name in schema.TABLES:
            f = folder / f"{name}.jsonl"
            before = (pd.read_json(f, lines=True, dtype={"answer": str, "gold": str, "text": str})
                      if f.stat().st_size else pd.DataFrame())
            pd.testing.assert_frame_equal(getattr(run, name), before)


def _result() -> tuple[ProblemResult, Problem]:
    def call(role: str, stage: int, used: bool = True) -> CallRecord:
        return CallRecord(role, stage, role, 100, 10, 0.5, False, "stop", ("leader",) if role != "leader" else (),
                          "3 + 4 = 7 \\boxed{7}", answer="7", p_min=0.9, h_max=0.2, mean_prob=0.8)

    stages = [StageRecord(t, None if t == 0 else "devil", "7", True, 0.9, 0.2, False, 100 * (t + 1), 10) for t in (0, 1)]
    problem = Problem("p1", "3 + 4?", gold="7", meta={"level": 1})
    result = ProblemResult("p1", "lase", "7", True, calls=[call("leader", 0), call("devil", 1), call("leader", 1)],
                           stages=stages, stop_stage=1, extra={"escalated": True, "order": ["devil"]})
    return result, problem


def test_the_schema_is_the_format_write_run_writes(tmp_path):
    result, problem = _result()
    result.calls[1].p_min = result.calls[1].h_max = float("nan")  # a backend without log-probabilities: unknown
    out = traces.write_run(tmp_path / "run", [result], [problem],
                           traces.provenance(command="lase-nb run", strategy="lase", backend="openai", model="m",
                                             dataset="arith", n=1, seed=0, config={}))
    for table, model in schema.ROW_MODELS.items():
        written = set(_rows(out / f"{table}.jsonl")[0])
        declared = {k for k in model.model_fields if not k.startswith("x_")}
        assert written - {"x_escalated", "x_order"} == declared, table
    run = traces.load_run(out)
    assert list(run.stages["stage"]) == [0, 1] and run.calls["hit_cap"].tolist() == [False] * 3
    assert run.calls["h_max"].isna().tolist() == [False, True, False]


# ---- each rule, on a copy of a committed run ------------------------------------------------------------

def _error(folder: Path) -> str:
    with pytest.raises(RecordingError) as e:
        traces.load_run(folder)
    text = str(e.value)
    assert "\n" not in text and "git checkout" not in text  # a copy outside git: copy it again, or from the cache
    return text


def test_the_issues_damaged_copies_each_name_file_line_and_field(tmp_path):
    study = _copy(SMOLLM2, tmp_path / "study")
    single = study / "single" / "problems.jsonl"
    original = single.read_bytes()
    single.write_bytes(original[:300])  # a partial copy
    assert _error(study / "single").startswith(f"{single}, line 1: not valid JSON")
    single.write_bytes(original)

    stages = study / "lase-full" / "stages.jsonl"
    rows = _rows(stages)
    for r in rows[:4]:
        r["p_min"] = "high"  # a hand edit
    _write_rows(stages, rows)
    assert _error(study / "lase-full").startswith(f"{stages}, line 1, field 'p_min': \"high\" is not allowed")
    shutil.copy(SMOLLM2 / "lase-full" / "stages.jsonl", stages)

    problems = study / "lase-full" / "problems.jsonl"
    problems.write_text("".join(problems.read_text().splitlines(True)[1:]))  # a problem its stages still have
    assert "problem 'arith-L1-0000' is not in problems.jsonl" in _error(study / "lase-full")
    shutil.copy(SMOLLM2 / "lase-full" / "problems.jsonl", problems)

    (study / "mv" / "calls.jsonl").write_text("")
    assert _error(study / "mv").startswith(f"{study / 'mv' / 'calls.jsonl'}: empty, but problems.jsonl counts calls")


@pytest.mark.parametrize("edit, where", [
    (lambda rows: rows.__setitem__(3, {**rows[3], "h_max": -1.0}), "line 4, field 'h_max': -1.0 is not allowed"),
    (lambda rows: rows.__setitem__(0, {**rows[0], "p_min": 1.5}), "line 1, field 'p_min': 1.5 is not allowed"),
    (lambda rows: rows.append(rows[5]), "line 71, field 'stage': stage"),
    (lambda rows: rows.pop(), "no row for stage"),
    (lambda rows: rows[2].pop("uncertain"), "line 3, field 'uncertain': missing"),
    (lambda rows: rows.__setitem__(0, {**rows[0], "stage": 7}), "stages count from 0 without gaps"),
])
def test_a_broken_rule_is_named(tmp_path, edit: Callable[[list], Any], where: str):
    run = _copy(SMOLLM2 / "lase-shuffled", tmp_path / "lase-shuffled")
    rows = _rows(run / "stages.jsonl")
    edit(rows)
    _write_rows(run / "stages.jsonl", rows)
    assert where in _error(run)


def test_the_manifest_is_checked_against_the_tables(tmp_path):
    run = _copy(SMOLLM2 / "single", tmp_path / "single")
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**manifest, "n": 41}))
    assert "manifest.json, field 'n': says 41 problems, problems.jsonl has 40 rows" in _error(run)
    shutil.copy(SMOLLM2 / "mv" / "manifest.json", run / "manifest.json")  # another run's manifest
    assert "manifest.json, field 'n'" in _error(run) or "cap_hits" in _error(run)
    (run / "manifest.json").write_text(json.dumps({k: v for k, v in manifest.items() if k != "model"}))
    assert "manifest.json, field 'model': missing" in _error(run)
    (run / "manifest.json").write_text(json.dumps({**manifest, "config": {**manifest["config"], "tau_lp": 7}}))
    assert "field 'config': tau_lp must be in [0, 1]" in _error(run)
    (run / "manifest.json").write_text(json.dumps(manifest)[:-40])
    assert "manifest.json, line 1: not valid JSON" in _error(run)


def test_the_fix_restores_a_committed_run_with_git_and_a_copy_from_the_cache(tmp_path):
    assert schema.restore_hint(SMOLLM2 / "single") == f"restore it with `git checkout -- {SMOLLM2 / 'single'}`"
    copy = _copy(SMOLLM2 / "single", tmp_path / "single")
    hint = schema.restore_hint(copy)
    assert hint.startswith("copy it again, or rewrite it from the call cache: rerun `python data/traces/record.py")
    assert hint.endswith(f"with --out {tmp_path} (no call it made is sent again)")


def test_a_hand_written_table_needs_only_its_ids(tmp_path):
    folder = tmp_path / "mv"
    folder.mkdir()
    _write_rows(folder / "problems.jsonl", [{"problem_id": "a", "correct": True, "total_tokens": 5}])
    (folder / "calls.jsonl").write_text("")
    (folder / "stages.jsonl").write_text("")
    (folder / "manifest.json").write_text("{}")
    assert traces.load_run(folder).problems["correct"].tolist() == [True]
    _write_rows(folder / "problems.jsonl", [{"problem_id": "a", "correct": "yes", "total_tokens": 5}])
    with pytest.raises(RecordingError, match=r"line 1, field 'correct': \"yes\" is not allowed"):
        traces.load_run(folder)


# ---- the readers: one line, exit 2, nothing written -------------------------------------------------------

def test_report_and_sweep_say_a_damaged_study_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    study = _copy(SMOLLM2, tmp_path / "study")
    rows = _rows(study / "lase-full" / "stages.jsonl")
    rows[7]["p_min"] = "high"
    _write_rows(study / "lase-full" / "stages.jsonl", rows)
    for argv in (["report", "study", "--csv", "out.csv"], ["sweep", "study/lase-full", "--out", "sweep.csv"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(
            "lase-nb: error: study/lase-full/stages.jsonl, line 8, field 'p_min': \"high\" is not allowed")
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "sweep.csv").exists()


def test_paths_are_said_as_they_are(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    assert cli.main(["report", "no-such-study"]) == 2
    assert capsys.readouterr().err.startswith("lase-nb: error: no such folder: no-such-study")
    assert cli.main(["report", "empty"]) == 2
    assert capsys.readouterr().err.startswith("lase-nb: error: no recordings in empty")
    assert cli.main(["sweep", "no-such-run"]) == 2
    assert capsys.readouterr().err.startswith("lase-nb: error: no such folder: no-such-run")
    assert cli.main(["report", str(SMOLLM2), "--tau-lp", "7"]) == 2
    assert "(got 7)" in capsys.readouterr().err
    assert cli.main(["sweep", str(SMOLLM2 / "lase-full"), "--tau-lp", "0.5", "1.5", "--out", "s.csv"]) == 2
    assert "(got 1.5)" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.csv"))


@pytest.mark.slow
def test_the_preregistered_report_says_a_damaged_recording_in_one_line(tmp_path):
    organism = _copy(TRACES / "arith-organism-point", tmp_path / "point")
    (organism / "single" / "calls.jsonl").write_text("")
    done = subprocess.run([sys.executable, str(TRACES / "report.py"), "--organism", str(organism)],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"report.py: error: {organism / 'single'}")


def test_a_chapters_loader_stops_on_a_damaged_study_it_shows(tmp_path):
    """A damaged study beside the reader's is not skipped as missing: it stops the chapter."""
    study = _copy(SMOLLM2, tmp_path / "study")
    (study / "lase-full" / "calls.jsonl").write_text("")
    shown = runs.chapter_studies(str(SMOLLM2), [str(study)], quiet=True)
    with pytest.raises(RecordingError, match="calls.jsonl: empty"):
        runs.load_studies(shown, ["lase"], require=["lase"])


def test_a_chapter_shows_a_user_error_as_one_line():
    from IPython.core.interactiveshell import InteractiveShell

    from lase_nb.errors import DataError, LaseError, show_in_one_line

    shell = InteractiveShell.instance()
    try:
        show_in_one_line()
        shown: list[list[str]] = []
        shell._showtraceback = lambda etype, value, stb: shown.append(stb)  # what the kernel would send
        result = shell.run_cell("from lase_nb.errors import DataError\nraise DataError('x.jsonl, line 2: bad; fix it')")
        assert isinstance(result.error_in_exec, DataError)  # the cell fails: papermill stops there
        assert shown == [["DataError: x.jsonl, line 2: bad; fix it"]]
        assert shell.custom_exceptions == (LaseError,)
    finally:
        shell.set_custom_exc((), None)
        InteractiveShell.clear_instance()


# ---- the fuzz test ---------------------------------------------------------------------------------------

def _kind_changed(value: Any) -> Any:
    """A value of another JSON kind than ``value``."""
    if isinstance(value, bool):
        return "yes"
    if isinstance(value, (int, float)):
        return "high"
    if isinstance(value, str):
        return 7
    return "high"  # a list or an object


def _out_of_range(model: type, field: str) -> list[float]:
    """Numbers outside ``field``'s range in ``model`` (none when it has no range)."""
    info = model.model_fields.get(field)
    if info is None:
        return []
    metadata = list(info.metadata)
    for arg in getattr(info.annotation, "__args__", ()):
        metadata += list(getattr(arg, "__metadata__", ()))
    for m in metadata:
        if isinstance(getattr(m, "func", None), schema.Bounds):  # a probability or an entropy
            return [m.func.lo - 1] + ([m.func.hi + 0.5] if m.func.hi < float("inf") else [])
        for bound in getattr(m, "metadata", [m]):
            if getattr(bound, "ge", None) is not None:
                return [bound.ge - 1]
    return []


ROW_DAMAGES = ("truncate", "delete_field", "wrong_type", "out_of_range", "duplicate_line", "delete_line",
               "change_id", "empty", "foreign_line")
MANIFEST_DAMAGES = ("truncate", "delete_field", "wrong_type", "out_of_range", "empty", "foreign_manifest")


def damage(path: Path, kind: str, rng: random.Random) -> bool:
    """Damage one run file in place; False when ``kind`` does not apply to it (an empty file)."""
    raw = path.read_bytes()
    if kind == "empty":
        path.write_bytes(b"")
        return bool(raw)
    if kind == "truncate":
        if not raw:
            return False
        path.write_bytes(raw[:rng.randrange(len(raw))])
        return True
    if path.name == "manifest.json":
        return _damage_manifest(path, kind, rng)
    table = path.stem
    lines = raw.decode().splitlines(True)
    if kind == "foreign_line":  # a row of the same table from another run
        donors = [f for f in (p / path.name for p in RUN_FOLDERS) if f.stat().st_size and f != path]
        donor = rng.choice(donors).read_text().splitlines(True)
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(donor))
        path.write_text("".join(lines))
        return True
    if not lines:
        return False
    i = rng.randrange(len(lines))
    row = json.loads(lines[i])
    if kind == "duplicate_line":
        lines.insert(rng.randrange(len(lines) + 1), lines[i])
    elif kind == "delete_line":
        del lines[i]
    elif kind == "change_id":
        row["problem_id"] = "no-such-problem"
        lines[i] = json.dumps(row) + "\n"
    elif kind == "delete_field":
        del row[rng.choice(sorted(row))]
        lines[i] = json.dumps(row) + "\n"
    elif kind == "wrong_type":
        field = rng.choice(sorted(k for k, v in row.items() if v is not None))
        row[field] = _kind_changed(row[field])
        lines[i] = json.dumps(row) + "\n"
    elif kind == "out_of_range":
        model = schema.ROW_MODELS[table]
        fields = sorted(k for k, v in row.items() if v is not None and _out_of_range(model, k))
        if not fields:
            return False
        field = rng.choice(fields)
        row[field] = rng.choice(_out_of_range(model, field))
        lines[i] = json.dumps(row) + "\n"
    path.write_text("".join(lines))
    return True


def _damage_manifest(path: Path, kind: str, rng: random.Random) -> bool:
    m = json.loads(path.read_text())
    if kind == "foreign_manifest":
        donor = rng.choice([p for p in RUN_FOLDERS if p / "manifest.json" != path])
        path.write_bytes((donor / "manifest.json").read_bytes())
        return True
    if kind == "delete_field":  # a field every run lase-nb writes has (an optional one may be absent)
        del m[rng.choice(schema.MANIFEST_REQUIRED)]
    elif kind == "wrong_type":
        field = rng.choice(sorted(k for k, v in m.items() if v is not None))
        m[field] = _kind_changed(m[field])
    elif kind == "out_of_range":
        field = rng.choice(["n", "max_batch", "wall_s", "config.tau_lp", "config.tau_h", "cap_hits"])
        if field.startswith("config."):
            m["config"][field[7:]] = -1
        elif field == "cap_hits":
            role = rng.choice(sorted(m["cap_hits"]))
            m["cap_hits"][role][rng.choice(["calls", "cap_hits", "rate"])] = -1
        else:
            m[field] = -1
    path.write_text(json.dumps(m, indent=2))
    return True


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*"))}


def _same_run(a: traces.Run, b: traces.Run) -> bool:
    if a.manifest != b.manifest:
        return False
    for name in schema.TABLES:
        try:
            pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name))
        except AssertionError:
            return False
    return True


def fuzz(cases: list[tuple[Path, str, str, int]], tmp_path: Path) -> dict[str, int]:
    """Damage each (run folder, file, kind, seed) in a copy and read the run through the door:
    the same run as before, or RecordingError; nothing written. Counts the outcomes."""
    outcomes = {"refused": 0, "harmless": 0, "not applicable": 0}
    copies: dict[Path, tuple[Path, traces.Run]] = {}
    for folder, name, kind, seed in cases:
        if folder not in copies:
            copy = _copy(folder, tmp_path / f"run{len(copies)}")
            copies[folder] = (copy, traces.load_run(copy))
        copy, before = copies[folder]
        target = copy / name
        if not damage(target, kind, random.Random(seed)):
            outcomes["not applicable"] += 1
            continue
        files = _snapshot(copy)
        try:
            after = traces.load_run(copy)
        except RecordingError as e:
            assert "\n" not in str(e)
            outcomes["refused"] += 1
        else:
            assert _same_run(after, before), f"{folder.relative_to(TRACES)}/{name}: {kind} (seed {seed}) read silently"
            outcomes["harmless"] += 1
        assert _snapshot(copy) == files, "a reader wrote into the run folder"
        shutil.copy(folder / name, target)
    return outcomes


def _cases(folders: list[Path], per_file: int, seed: int) -> list[tuple[Path, str, str, int]]:
    rng = random.Random(seed)
    out = []
    for folder in folders:
        for name in ("manifest.json", *(f"{t}.jsonl" for t in schema.TABLES)):
            kinds = MANIFEST_DAMAGES if name == "manifest.json" else ROW_DAMAGES
            out += [(folder, name, kinds[(len(out) + i) % len(kinds)], rng.randrange(2 ** 32)) for i in range(per_file)]
    return out


def test_fuzz_a_seeded_sample(tmp_path):
    """Fast tier: every kind of damage on every file of two small runs (one with stages)."""
    t0, cpu = time.perf_counter(), time.process_time()
    outcomes = fuzz(_cases([SMOLLM2 / "single", SMOLLM2 / "lase-shuffled"], per_file=6, seed=57), tmp_path)
    assert outcomes["refused"] >= 35, outcomes
    print(f"fuzz sample: {outcomes} in {time.perf_counter() - t0:.1f} s ({time.process_time() - cpu:.1f} s of CPU)")


#: Damages per file in the slow tier's fuzz: each kind of damage about six times per file (every
#: damage re-reads the whole run, so 200 made this the slow tier's longest part, 6.5 minutes).
FUZZ_PER_FILE = 60


@pytest.mark.slow
@pytest.mark.parametrize("folder", RUN_FOLDERS, ids=lambda p: str(p.relative_to(TRACES)))
def test_fuzz_every_committed_run_file(folder: Path, tmp_path):
    """Slow tier: :data:`FUZZ_PER_FILE` seeded damages on every file of every committed run (each
    kind of damage in turn, several times over); at least two in every file's worth are refused."""
    outcomes = fuzz(_cases([folder], per_file=FUZZ_PER_FILE, seed=5700 + RUN_FOLDERS.index(folder)), tmp_path)
    assert outcomes["refused"] >= 2 * FUZZ_PER_FILE, outcomes


@pytest.mark.slow
def test_every_reader_refuses_or_reads_as_before(tmp_path, monkeypatch):
    """Slow tier: the readers themselves (report, sweep, the chapters' loader) on damaged copies
    of the SmolLM2 study: the same output as on the undamaged study, or RecordingError."""
    monkeypatch.chdir(tmp_path)
    study = _copy(SMOLLM2, tmp_path / "study")
    readers: dict[str, Callable[[], Any]] = {
        "report": lambda: report.study_reports([study])[0][0].to_csv(),
        "sweep": lambda: sweep(load_chains(study / "lase-full"), [0.5, 0.8], [0.5]).to_csv(),
        "chapters": lambda: {label: {name: (run.manifest, *(getattr(run, t).to_json() for t in schema.TABLES))
                                     for name, run in loaded.items()}
                             for label, loaded in runs.load_studies(runs.chapter_studies(str(study), None, quiet=True),
                                                                    ["lase", "single", "mv"]).items()},
    }
    before = {name: read() for name, read in readers.items()}
    rng = random.Random(570)
    for i in range(60):
        run = rng.choice(["lase-full", "single", "mv"])
        name = rng.choice(["manifest.json", "problems.jsonl", "calls.jsonl", "stages.jsonl"])
        kinds = MANIFEST_DAMAGES if name == "manifest.json" else ROW_DAMAGES
        if not damage(study / run / name, kinds[i % len(kinds)], rng):
            continue
        for reader, read in readers.items():
            try:
                assert read() == before[reader], f"{reader} read {run}/{name} ({kinds[i % len(kinds)]}) silently"
            except RecordingError:
                pass
        shutil.copy(SMOLLM2 / run / name, study / run / name)
