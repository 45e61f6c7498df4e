"""The first stage of gated LASE, recorded: one escalated problem's first attempt, devil's note and revision.

The unit both the revision study (:mod:`lase_nb.organism.revision`) and v6's controls
(:mod:`lase_nb.organism.controls`) replay: a full-chain recording, cut at the gate's first escalation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import pandas as pd

from ..answers import strip_boxed
from ..confidence import uncertain_mask
from ..types import Problem

__all__ = ["StageOneCase", "stage_one_cases"]


@dataclass(frozen=True)
class StageOneCase:
    """One escalated problem at gated LASE's first stage: the recorded first attempt and the
    recorded devil's note, as the pipeline passed it to the leader."""

    problem: Problem
    attempt: str
    first_answer: str | None
    first_correct: bool
    note: str
    recorded_revision: str
    recorded_correct: bool


def stage_one_cases(run: Any, problems: Mapping[str, Problem], tau_lp: float, tau_h: float
                    ) -> list[StageOneCase]:
    """The problems of a full-chain LASE recording that the gate ``(tau_lp, tau_h)`` escalates at
    stage 0, each with its recorded first attempt, devil's note and stage-1 revision."""
    stages, calls = run.stages, run.calls
    s0 = stages[stages["stage"] == 0].set_index("problem_id")
    s1 = stages[stages["stage"] == 1].set_index("problem_id")

    def text(pid: str, role: str, stage: int) -> str:
        rows = calls[(calls["problem_id"] == pid) & (calls["role"] == role) & (calls["stage"] == stage)]
        if len(rows) != 1:
            raise ValueError(f"{pid}: expected one {role} call at stage {stage}, found {len(rows)}")
        return str(rows["text"].iloc[0])

    unsure = uncertain_mask(s0["p_min"].astype(float).to_numpy(), s0["h_max"].astype(float).to_numpy(), tau_lp, tau_h)
    out = []
    for (pid, row), u in zip(s0.iterrows(), unsure):
        if not u or pid not in problems or pid not in s1.index:
            continue
        answer = None if pd.isna(row["answer"]) else str(row["answer"])
        note, _ = strip_boxed(text(pid, "devil", 1))
        out.append(StageOneCase(problems[pid], text(pid, "leader", 0), answer, bool(row["correct"]), note,
                                text(pid, "leader", 1), bool(s1.at[pid, "correct"])))
    return out
