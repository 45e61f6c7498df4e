"""The chapters' exercise solutions (notebooks/solutions/) run, and their own checks hold."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lase_nb.book.execution import NOTEBOOKS

SOLUTIONS = sorted((NOTEBOOKS / "solutions").glob("[0-9][0-9]_solutions.py"))


def test_every_chapter_with_exercises_has_solutions():
    chapters = {p.name[:2] for p in NOTEBOOKS.glob("[0-9][0-9]_*.py") if "## Exercises" in p.read_text()}
    assert chapters, "no chapter has an Exercises section"
    assert chapters <= {p.name[:2] for p in SOLUTIONS}


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_solution_runs_and_checks_itself(path: Path, tmp_path: Path):
    env = {**os.environ, "MPLBACKEND": "Agg", "LASE_FIGURES_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip(), f"{path.name} printed no answer"


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_each_exercise_in_the_chapter_has_its_solution(path: Path):
    chapter = next(NOTEBOOKS.glob(f"{path.name[:2]}_*.py")).read_text()
    solved = {line.split("**")[1].split()[1].rstrip(".") for line in path.read_text().splitlines()
              if line.startswith("# **Exercise ")}
    asked = {line.split("**")[1].split()[1].rstrip(".") for line in chapter.splitlines()
             if line.startswith("# **Exercise ")}
    assert asked == solved, f"asked {sorted(asked)}, solved {sorted(solved)}"


#: Solutions whose answers are read from a study (``$LASE_SOLUTION_TRACES``): each must answer
#: differently on another study, or its exercise is degenerate on the data (issue 43: 05.2 was).
VARYING = ("02", "05", "06")


@pytest.mark.slow
@pytest.mark.parametrize("chapter", VARYING)
def test_solution_answer_varies_with_its_study(chapter: str, tmp_path: Path):
    path = NOTEBOOKS / "solutions" / f"{chapter}_solutions.py"
    outs = []
    for traces in ("data/traces/arith-smollm2", "data/traces/arith-organism-point"):
        env = {**os.environ, "MPLBACKEND": "Agg", "LASE_FIGURES_DIR": str(tmp_path), "LASE_SOLUTION_TRACES": traces}
        done = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        outs.append(done.stdout)
    assert outs[0] != outs[1], f"{path.name}: the same answer on two studies"
