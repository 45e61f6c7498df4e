"""The one transcript renderer (lase_nb.transcripts) on small hand-built calls."""

from __future__ import annotations


import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from lase_nb import transcripts  # noqa: E402
from lase_nb.errors import DataError  # noqa: E402
from tests.tables import _call, lase_calls  # noqa: E402


def test_transcript_marks_leaks_stop_and_verdicts():
    calls = lase_calls(stop=3)
    entries = transcripts.transcript_entries(calls, "p1", stop_stage=1, tau_lp=0.8, tau_h=0.5, gold="8")
    assert [(e["stage"], e["role"]) for e in entries] == [
        (0, "leader"), (1, "devil"), (1, "leader"), (2, "collaborator"), (2, "leader"), (3, "expert"), (3, "leader")]
    assert [e["used"] for e in entries] == [True, True, True, False, False, False, False]
    assert entries[0]["correct"] is False and entries[2]["correct"] is True
    assert entries[0]["uncertain"] is True and entries[4]["uncertain"] is False
    md = transcripts.render_transcript(entries, fmt="markdown")
    assert md.count("⟦LEAK") == 1 and "⟦LEAK \\boxed{8}⟧" in md  # the collaborator's box, not the leader's
    assert md.count("recorded for replay only") == 4
    assert md.index("Stage 0 · leader") < md.index("Stage 1 · devil's advocate") < md.index("Stage 1 · leader (revision)")
    assert "U = 1: unsure, ask the next supporter" in md and "U = 0: confident, stop" in md
    unsure_last = transcripts.transcript_entries(calls.assign(p_min=0.1), "p1", tau_lp=0.8, tau_h=0.5)
    assert "no supporter is left: stop" in transcripts.render_transcript(unsure_last[-1:])
    assert "no supporter is left" not in transcripts.render_transcript(unsure_last[:-1])
    html = transcripts.render_transcript(entries, fmt="html")
    assert "&lt;carefully&gt;" in html and "<carefully>" not in html
    assert html.count("<mark") == 1


def test_transcript_clips_and_rejects_unknown_format():
    calls = pd.DataFrame([_call("p", 0, "leader", text="x" * 50, answer=None)])
    entries = transcripts.transcript_entries(calls, "p")
    assert "[40 more characters]" in transcripts.render_transcript(entries, max_chars=10)
    assert "answer: none boxed" in transcripts.render_transcript(entries)
    with pytest.raises(ValueError):
        transcripts.render_transcript(entries, fmt="latex")
    with pytest.raises(DataError):
        transcripts.transcript_entries(calls, "missing")


def test_a_box_the_pipeline_did_not_take_is_explained_not_called_missing():
    calls = pd.DataFrame([_call("p", 0, "leader", text="two and two", answer=None),
                          _call("p", 0, "extract", text="Final answer: \\boxed{4}", answer=None)])
    md = transcripts.render_transcript(transcripts.transcript_entries(calls, "p"))
    assert "the extraction step boxed 4, a value the reply never states" in md
    assert md.count("answer: none boxed") == 1  # the leader's reply, which has no box
