"""Fixtures the test modules share."""

from __future__ import annotations

from pathlib import Path

import pytest

from lase_nb.runs import load_models
from tests.tables import NAN, stages_frame


@pytest.fixture
def chain_stages():
    # p1: unsure, sure at stage 2 (wrong -> right: a rescue); p2: sure at once, right;
    # p3: never boxes after stage 0 (stops at the last stage, wrong); p4: unsure, right -> wrong at stage 1.
    rows = [
        ("p1", 0, "7", False, 0.5, 1.0, 100, 10), ("p1", 1, "8", True, 0.6, 0.1, 300, 30),
        ("p1", 2, "8", True, 0.95, 0.1, 600, 50), ("p1", 3, "8", True, 0.99, 0.0, 900, 70),
        ("p2", 0, "5", True, 0.99, 0.05, 100, 10), ("p2", 1, "5", True, 0.99, 0.05, 300, 30),
        ("p2", 2, "5", True, 0.99, 0.05, 600, 50), ("p2", 3, "5", True, 0.99, 0.05, 900, 70),
        ("p3", 0, "1", False, 0.3, 2.0, 100, 10), ("p3", 1, None, False, NAN, NAN, 300, 30),
        ("p3", 2, None, False, NAN, NAN, 600, 50), ("p3", 3, None, False, NAN, NAN, 900, 70),
        ("p4", 0, "4", True, 0.7, 0.2, 100, 10), ("p4", 1, "6", False, 0.9, 0.2, 300, 30),
        ("p4", 2, "6", False, 0.9, 0.2, 600, 50), ("p4", 3, "6", False, 0.9, 0.2, 900, 70),
    ]
    return stages_frame(rows)


TRACES = Path(__file__).resolve().parents[1] / "data" / "traces" / "arith-smollm2"


@pytest.fixture(scope="module")
def two():
    if not (TRACES / "lase-full" / "manifest.json").exists():
        pytest.skip("no committed recording")
    return load_models({"base": TRACES, "again": TRACES}, ["single", "mv", "mad", "lase"], require=["lase"])
