"""``lase-ensemble``: LASE with a supporter group at each escalated stage (the LASE paper's Appendix I).

Over the OpenAI wire server with scripted stand-ins: the calls per stage against the cost
arithmetic, the vote's verdicts and its tie rule, the moderator's synthesis, a note that states
the answer counted as in every recording, a study recorded and read by replay, sweep and report,
a killed recording resumed, and the mechanism the strategy is for (a vote of three supporters
that each raise a false alarm one time in three passes fewer alarms than one supporter). Then
the pure functions that read the organism's stage-1 replay (issue 58, 3(b);
``data/revision/ensemble_stage1.py``) on hand-built cases: the vote over sampled devil notes,
the arm counts, the paired table, the expectation and the lead.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import pytest

from lase_nb import cli, prompts
from lase_nb.backends.openai_backend import OpenAIBackend
from lase_nb.cache import CallCache
from lase_nb.chapters import ensemble as ens
from lase_nb.datasets import arithmetic_problems
from lase_nb.engine import Engine
from lase_nb.errors import ConfigError
from lase_nb.notes import states_answer
from lase_nb.replay import chains_from_stages, load_chains, replay
from lase_nb.organism.stage_one import StageOneCase
from lase_nb.runner import run_problems
from lase_nb.runs import load_runs
from lase_nb.strategies import (EXTRACT_ROLE, SPECS, StrategyConfig, ensemble_stage_calls, recorded, verdict_of,
                                vote_verdicts)
from lase_nb.study import study_runs
from lase_nb.types import Problem
from tests.test_reliability import _env, start_and_kill
from tests.wire_servers import OpenAIWireServer, Reply, fixed, start_subprocess

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = Problem("p1", "Tom has 3 apples and buys 4 more. How many apples does he have?", gold="7")
RIGHT = "Step 1: 3 + 4 = 7.\n\\boxed{7}"
WRONG = "Step 1: 3 + 4 = 8.\n\\boxed{8}"
FAILS = "Step 1 adds wrongly: recompute 3 + 4.\nVerdict: step 1 fails"
HOLDS = "I recomputed step 1 and it agrees.\nVerdict: every step holds"


def engine_for(srv) -> Engine:
    return Engine(OpenAIBackend("wire-model", base_url=srv.base_url, api_key="sk-test", max_retries=0))


def system_of(messages: list[dict[str, str]]) -> str:
    return messages[0]["content"] if messages[0]["role"] == "system" else ""


def is_note(messages: list[dict[str, str]]) -> bool:
    """A supporter's or the moderator's call (every note writer's instruction carries the rule)."""
    return prompts.SUPPORTER_RULES in system_of(messages)


def run_one(responder, cfg: StrategyConfig, problems=(PROBLEM,)):
    with OpenAIWireServer(responder=responder) as srv:
        results = run_problems("lase-ensemble", list(problems), engine_for(srv), cfg, progress=False)
        return results, srv.request_count, list(srv.requests)


def revision_notes(requests) -> list[str]:
    """The note each leader revision read (the reviewer's text in its last message)."""
    out = []
    for r in requests:
        last = r.body["messages"][-1]["content"]
        if "from a reviewer:" in last:
            out.append(last.split("from a reviewer:\n", 1)[1].rsplit("\n\nTake this into account", 1)[0])
    return out


# ---------------------------------------------------------------- the cost arithmetic


@pytest.mark.parametrize("k,r,form", [(1, 0, "vote"), (3, 0, "vote"), (3, 1, "vote"), (2, 2, "vote"),
                                      (3, 1, "synthesis"), (2, 0, "synthesis")])
def test_calls_per_escalated_stage_follow_the_arithmetic(k, r, form):
    """k (r + 1) notes, the consensus (a moderator call under the synthesis, none under the vote) and
    the revision per stage; every stage escalates here (an unsure leader), so the full chain makes
    1 + T (k (r + 1) + m + 1) calls and the reads reach the record's bound."""
    cfg = StrategyConfig(ensemble_k=k, ensemble_rounds=r, ensemble_consensus=form, full_chain=True)
    (res,), made, _ = run_one(fixed(RIGHT, 0.3), cfg)
    per_stage = k * (r + 1) + (form == "synthesis") + 1
    assert ensemble_stage_calls(asdict(cfg)) == per_stage
    calls = [c for c in res.calls + res.recording_calls if c.role != EXTRACT_ROLE]
    for t in (1, 2, 3):
        assert sum(c.stage == t for c in calls) == per_stage
        assert sum(c.role == prompts.MODERATOR and c.stage == t for c in calls) == (form == "synthesis")
    spec = SPECS["lase-ensemble"]
    assert made == len(calls) == spec.calls(asdict(cfg)).bound == 1 + 3 * per_stage
    assert sum(len(c.reads) for c in calls) == spec.inclusions(asdict(cfg)).bound
    assert [s.stage for s in res.stages] == [0, 1, 2, 3] and res.stop_stage == 3


def test_a_sure_leader_answers_alone_and_the_gate_is_lases():
    (res,), made, _ = run_one(fixed(RIGHT, 0.99), StrategyConfig())
    assert made == 1 and res.stop_stage == 0 and res.correct and res.extra["group"] == []
    # unsure at first, sure after one group: the gated run stops after stage 1 (1 + 7 calls)
    (res,), made, _ = run_one(lambda m, p: Reply(RIGHT, 0.99 if "from a reviewer" in m[-1]["content"] else 0.3),
                              StrategyConfig())
    assert made == 1 + 7 and res.stop_stage == 1 and not res.recording_calls


def test_supporters_are_sampled_with_distinct_seeds_and_later_rounds_read_the_others():
    cfg = StrategyConfig(ensemble_k=3, ensemble_rounds=1, full_chain=True)
    (res,), _, requests = run_one(fixed(RIGHT, 0.3), cfg)
    first = [r.body for r in requests if is_note(r.body["messages"]) and len(r.body["messages"]) == 2]
    stage1 = first[:3]
    assert {b["seed"] for b in stage1} == {0, 1, 2} and {b["temperature"] for b in stage1} == {cfg.temperature}
    again = [r.body["messages"] for r in requests if is_note(r.body["messages"]) and len(r.body["messages"]) == 4]
    assert len(again) == 9  # one reading round of 3 supporters at each of 3 stages
    assert all(m[2]["role"] == "assistant" and "Reviewer 2:" in m[3]["content"] and "Reviewer 3:" not in m[3]["content"]
               for m in again)  # its own note as its reply, the 2 others' after it
    devils = [c for c in res.calls + res.recording_calls if c.role == "devil"]
    assert [c.agent for c in devils] == ["devil0", "devil1", "devil2", "devil0-r1", "devil1-r1", "devil2-r1"]
    assert devils[3].reads == ("leader", "devil1", "devil2")
    with pytest.raises(ConfigError, match="ensemble_consensus"):
        StrategyConfig(ensemble_consensus="shout").validate()
    with pytest.raises(ConfigError, match="ensemble_k"):
        StrategyConfig(ensemble_k=0).validate()


# ---------------------------------------------------------------- the vote and its tie rule


@pytest.mark.parametrize("note,verdict", [
    (FAILS, "step 1 fails"), (HOLDS, "every step holds"), ("Step 3 does not hold.", "step 3 fails"),
    ("Steps 2 fails, then: Verdict: every step holds", "every step holds"),  # the last line counts
    ("Looks fine to me.", None), ("", None), (None, None)])
def test_verdict_lines_are_read(note, verdict):
    assert verdict_of(note) == verdict


def test_the_vote_takes_the_majority_and_ties_go_to_holds():
    f, h = "step 2 fails", "every step holds"
    assert vote_verdicts([f, f, h]) == ("fails", 0)
    assert vote_verdicts([h, f, f]) == ("fails", 1)
    assert vote_verdicts([f, h]) == ("holds", 1)  # a tie
    assert vote_verdicts([f, None, h]) == ("holds", 2)  # an unparsed note does not vote: a tie
    assert vote_verdicts([f, None, None]) == ("fails", 0)
    assert vote_verdicts([None, None, None]) == ("holds", None)  # nobody voted: a tie at zero


def scripted_group(verdicts: dict[int, str], attempt: str = WRONG, p: float = 0.3):
    """Supporter j (by the seed its call sent) writes ``verdicts[j]``; a moderator writes a merged
    note; the leader writes ``attempt`` unsure."""
    def responder(messages, params):
        system = system_of(messages)
        if system == prompts.MODERATOR_SYSTEM:
            return Reply("Merged: step 1 looks off, recompute it.", 0.9)
        if is_note(messages):
            return Reply(verdicts.get(int(params.get("seed") or 0), "No opinion."), 0.9)
        return Reply(attempt, p)
    return responder


@pytest.mark.parametrize("said,read,verdict", [
    ({0: FAILS, 1: FAILS, 2: HOLDS}, FAILS, "fails"),
    ({0: FAILS, 1: HOLDS, 2: HOLDS}, HOLDS, "holds"),
    ({0: FAILS, 1: HOLDS}, HOLDS, "holds"),  # 1 to 1, the third gives no verdict: holds
    ({}, prompts.VERDICT_HOLDS, "holds")])  # nobody votes: the verdict alone
def test_the_leader_reads_the_majority_verdict_and_a_note_that_carries_it(said, read, verdict):
    cfg = StrategyConfig(ensemble_k=3, ensemble_rounds=0, full_chain=True)
    (res,), _, requests = run_one(scripted_group(said), cfg)
    assert revision_notes(requests) == [read] * 3
    first = res.extra["group"][0]
    assert first["verdict"] == verdict and first["stage"] == 1 and first["role"] == "devil"
    assert first["verdicts"] == [verdict_of(said.get(j, "")) for j in range(3)]
    revisions = [c for c in res.calls + res.recording_calls if c.role == "leader" and c.stage == 1]
    assert revisions[0].reads == ((f"devil{first['carrier']}",) if first["carrier"] is not None else ("devil-vote",))


def test_the_synthesis_hands_the_leader_the_moderators_note():
    cfg = StrategyConfig(ensemble_k=3, ensemble_rounds=1, ensemble_consensus="synthesis", full_chain=True)
    (res,), _, requests = run_one(scripted_group({0: FAILS, 1: HOLDS, 2: HOLDS}), cfg)
    assert revision_notes(requests) == ["Merged: step 1 looks off, recompute it."] * 3
    mods = [r.body["messages"] for r in requests if system_of(r.body["messages"]) == prompts.MODERATOR_SYSTEM]
    assert len(mods) == 3 and all("Reviewer 3:" in m[1]["content"] for m in mods)
    assert "Verdict" not in system_of([r.body for r in requests if is_note(r.body["messages"])][0]["messages"])
    moderator = [c for c in res.calls + res.recording_calls if c.role == prompts.MODERATOR]
    assert [c.agent for c in moderator] == ["devil-moderator", "collaborator-moderator", "expert-moderator"]
    assert moderator[0].reads == ("leader", "devil0-r1", "devil1-r1", "devil2-r1")


def test_a_boxed_answer_in_a_note_is_removed_and_counted():
    def responder(messages, params):
        if system_of(messages) == prompts.MODERATOR_SYSTEM:
            return Reply("So it is \\boxed{7}.", 0.9)
        return Reply("It is \\boxed{7}.\nVerdict: step 1 fails" if is_note(messages) else WRONG, 0.3)
    (res,), _, requests = run_one(responder, StrategyConfig(ensemble_k=2, ensemble_rounds=0,
                                                            ensemble_consensus="synthesis", full_chain=True))
    assert all("\\boxed" not in n for n in revision_notes(requests))
    notes = [c for c in res.calls + res.recording_calls if c.role in prompts.NOTE_ROLES]
    assert len(notes) == 9 and all(c.leaked == 1 for c in notes) and res.leaks >= 3  # the used stages' notes


# ---------------------------------------------------------------- recorded as every LASE run is


def telling(problems: list[Problem], tell_seed: int = 1):
    """A stand-in whose leader is wrong and unsure on every problem, whose supporter of seed
    ``tell_seed`` states the gold answer ("the total should be G"), the others point; a revision
    stays wrong."""
    golds = {p.question: p.gold for p in problems}

    def responder(messages, params):
        text = "\n".join(m["content"] for m in messages)
        q = max((q for q in golds if q in text), key=len)
        gold = int(golds[q])
        if system_of(messages) == prompts.MODERATOR_SYSTEM:
            return Reply("Recheck the first step.", 0.9)
        if is_note(messages):
            if int(params.get("seed") or 0) == tell_seed:
                return Reply(f"The total should be {gold}.\nVerdict: step 1 fails", 0.9)
            return Reply("Recheck the first step.\nVerdict: step 1 fails", 0.9)
        return Reply(f"Step 1: the total is {gold + 100}.\n\\boxed{{{gold + 100}}}", 0.3)
    return responder


def test_recorded_study_counts_a_note_that_states_the_answer_and_reads_like_lase_full(tmp_path, capsys, monkeypatch):
    """``lase-nb record --strategies lase-ensemble``: every stage recorded (replay and sweep read it as
    they read lase-full), its notes that state the answer counted in the manifest as every recording's
    are, and the study's report has its row."""
    monkeypatch.setenv("LASE_CACHE", str(tmp_path / "default.sqlite"))
    n = 4
    problems = arithmetic_problems(n)
    out = tmp_path / "study"
    assert "lase-ensemble" not in recorded() and "lase-ensemble" in recorded(every=True)
    assert study_runs(["lase_ensemble"]) == ["lase-ensemble"]
    with OpenAIWireServer(telling(problems)) as srv:
        rc = cli.main(["record", "--backend", "openai", "--base-url", srv.base_url, "--n", str(n), "--out", str(out),
                       "--cache", str(tmp_path / "c.sqlite"), "--strategies", "lase-ensemble", "--quiet"])
        stdout = capsys.readouterr().out
        assert rc == 0, stdout
        made = srv.request_count
    run = load_runs(out)["lase-ensemble"]
    m = run.manifest
    assert m["config"]["full_chain"] is True and m["config"]["ensemble_k"] == 3
    per_problem = SPECS["lase-ensemble"].calls(m["config"]).bound
    assert made == per_problem * n == len(run.calls) == 22 * n  # every stage, no extraction step needed
    # the supporter of seed 1 states the answer on every wrong attempt, in its first note and in its
    # reading-round note: counted wherever the gold value is not already in the question
    told = 2 * sum(states_answer(f"The total should be {p.gold}.", p.gold, p.question) for p in problems)
    assert 0 < told < 2 * n  # one problem's answer is in its question: the rule does not count it
    counts = m["notes_stating_answer"]
    assert counts["devil"]["on_wrong"] == {"k": told, "n": 6 * n}
    assert counts["collaborator"]["on_wrong"]["k"] == told and counts["expert"]["on_wrong"]["k"] == told
    chains = load_chains(out / "lase-ensemble")
    assert chains.n_stages == 4 and len(chains.problem_ids) == n
    assert replay(chains, 0.8, 0.5)["stop_stage"].eq(3).all()
    assert run.problems["x_group"].map(len).eq(3).all()
    assert cli.main(["sweep", str(out / "lase-ensemble"), "--out", str(tmp_path / "sweep.csv")]) == 0
    capsys.readouterr()
    assert cli.main(["report", str(out), "--csv", str(tmp_path / "report.csv")]) == 0
    assert "lase-ensemble" in capsys.readouterr().out
    assert chains_from_stages(run.stages).problem_ids.tolist() == sorted(p.id for p in problems)


def cached(path: Path) -> int:
    """Calls in a cache file another process is writing (0 before it exists)."""
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return con.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
        finally:
            con.close()
    except sqlite3.OperationalError:
        return 0


def test_a_killed_recording_resumes_without_repeating_a_finished_call(tmp_path):
    """SIGKILL mid-run, then the same command: the calls that had finished come from the cache."""
    out, cache, n = tmp_path / "out", tmp_path / "calls.sqlite", 3
    cmd = [sys.executable, "-m", "lase_nb", "run", "--strategy", "lase-ensemble", "--full-chain", "--backend",
           "openai", "--n", str(n), "--out", str(out), "--cache", str(cache), "--concurrency", "2",
           "--max-retries", "0", "--quiet", "--base-url"]
    with start_subprocess("openai", tmp_path / "srv", latency_s=0.05, reply="Adding gives \\boxed{4}.") as srv:
        start_and_kill([*cmd, srv.base_url], tmp_path, srv, after=25, timeout_s=300,
                       ready=lambda: cached(cache) >= 12)  # some calls finished, not all
        assert not (out / "manifest.json").exists()
        finished = len(CallCache(cache))
        first = srv.request_count
        second = subprocess.run([*cmd, srv.base_url], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                                timeout=600)  # 66 calls and a cold start: minutes on a loaded machine
        assert second.returncode == 0, second.stderr[-2000:]
        total = srv.request_count
    manifest = json.loads((out / "manifest.json").read_text())
    every = n * SPECS["lase-ensemble"].calls(manifest["config"]).bound
    assert 0 < finished < every and len(CallCache(cache)) == every
    assert manifest["engine"]["cache_hits"] == finished
    assert total - first == every - finished  # the rerun sent only what had not finished
    assert len((out / "stages.jsonl").read_text().splitlines()) == 4 * n


# ---------------------------------------------------------------- the mechanism (a stand-in, not a result)


def alarmist(problems: list[Problem], p_alarm: float = 1 / 3):
    """A stand-in whose leader is always right but unsure, and whose every supporter call raises a
    false alarm ("step 1 fails") with probability ``p_alarm``, independently (a hash of the call's
    messages and seed), otherwise says every step holds."""
    golds = {p.question: p.gold for p in problems}

    def responder(messages, params):
        if is_note(messages):
            key = json.dumps([messages, params.get("seed")], sort_keys=True)
            u = int(hashlib.sha256(key.encode()).hexdigest()[:12], 16) / 16 ** 12
            return Reply(FAILS if u < p_alarm else HOLDS, 0.9)
        text = "\n".join(m["content"] for m in messages)
        gold = golds[max((q for q in golds if q in text), key=len)]
        return Reply(f"Step 1: adding gives {gold}.\n\\boxed{{{gold}}}", 0.3)
    return responder


def test_a_vote_of_three_passes_fewer_false_alarms_than_one_supporter():
    """Each supporter alarms on a right answer one time in three, independently; a single supporter
    passes about a third of its alarms to the leader, a majority of three about 7 in 27 (two or three
    alarms). A mechanism check of the vote on a stand-in, not a measurement of any model."""
    problems = [Problem(f"q{i}", f"Tom has {i + 2} apples and buys {i % 7 + 3} more. How many apples?",
                        gold=str(i + 2 + i % 7 + 3)) for i in range(60)]
    with OpenAIWireServer(responder=alarmist(problems)) as srv:
        eng = engine_for(srv)
        run_problems("lase", problems, eng, StrategyConfig(full_chain=True), progress=False)
        single = revision_notes(srv.requests)
        n_single = srv.request_count
        run_problems("lase-ensemble", problems, eng,
                     StrategyConfig(full_chain=True, ensemble_k=3, ensemble_rounds=0), progress=False)
        group = revision_notes(srv.requests[n_single:])
    assert len(single) == len(group) == 3 * len(problems)
    alarms = lambda notes: sum("fails" in n for n in notes) / len(notes)  # noqa: E731
    assert 0.2 < alarms(single) < 0.45
    assert alarms(group) < alarms(single)
    assert abs(alarms(group) - 7 / 27) < 0.1


# ---------------------------------------------------------------- the appendix's functions (A5), on hand-built runs


def hand_pair():
    """Four problems a-d, four stages each. LASE: first answers right, wrong, right, wrong; a is sure
    alone, the rest are sure after stage 1, where LASE fixes b and breaks c. The group: the same
    first answers; after stage 1 it fixes b and keeps c. Tokens: LASE 100 then +200 a stage, the
    group 100 then +700 a stage."""
    from lase_nb.chapters.ensemble import Pair
    from lase_nb.traces import Run
    import pandas as pd

    def stages(after: list[bool], step: int) -> pd.DataFrame:
        rows = []
        for i, pid in enumerate("abcd"):
            for s in range(4):
                right = [True, False, True, False][i] if s == 0 else after[i]
                sure = s > 0 or i == 0
                rows.append({"problem_id": pid, "stage": s, "p_min": 0.95 if sure else 0.5, "h_max": 0.1,
                             "correct": right, "answer": "1" if right else "2", "prompt_tokens": 100 + step * s,
                             "completion_tokens": 0})
        return pd.DataFrame(rows)

    groups = {"a": ["every step holds", "step 1 fails", "every step holds"],
              "b": ["step 1 fails", "step 1 fails", None], "c": ["step 2 fails", None, "every step holds"],
              "d": [None, None, None]}
    vote = {"a": "holds", "b": "fails", "c": "holds", "d": "holds"}
    problems = pd.DataFrame({"problem_id": list("abcd"),
                             "x_group": [[{"stage": 1, "role": "devil", "verdicts": groups[p], "verdict": vote[p]}]
                                         for p in "abcd"]})
    lase_st, group_st = stages([True, True, False, False], 200), stages([True, True, True, False], 700)
    lase = Run(Path("lase-full"), {}, pd.DataFrame(), pd.DataFrame(), lase_st)
    group = Run(Path(GROUP := "lase-ensemble"), {"backend": "local", "model": "m", "dataset": "arith", "n": 4,
                                                 "wall_s": 12.5, "config": {"ensemble_k": 3, "temperature": 0.7,
                                                                           "ensemble_rounds": 1,
                                                                           "ensemble_consensus": "vote"},
                                                 "notes_stating_answer": {"devil": {"on_wrong": {"k": 1, "n": 6}}}},
                problems, pd.DataFrame(), group_st)
    return Pair(chains_from_stages(lase_st), chains_from_stages(group_st), lase, group)


def test_cost_table_and_sentence_follow_the_record():
    from lase_nb.chapters import ensemble

    t = ensemble.cost_table([(3, 1, "vote"), (3, 1, "synthesis"), (1, 0, "vote")]).set_index("consensus", append=True)
    assert t["calls per escalated stage"].tolist() == [7, 8, 2]
    assert t["x LASE's stage"].tolist() == [3.5, 4.0, 1.0] and t["full chain (calls)"].tolist() == [22, 25, 7]
    assert ensemble.describe_cost() == (
        "With k = 3 supporters and r = 1 reading round under the vote, an escalated stage makes k (r + 1) + 0 + 1 = "
        "3 x 2 + 0 + 1 = 7 calls (6 notes, the revision, and no consensus call: code counts the vote), against "
        "LASE's 2: 3.5x per stage; the full chain of 3 stages makes 22 calls per problem against LASE's 7.")


def test_policy_table_and_the_paired_sentence_on_hand_built_chains():
    from lase_nb.chapters import ensemble

    pair = hand_pair()
    t = ensemble.policy_table(pair).set_index(["supporters", "policy"])
    assert t.loc[("LASE", "gated at (0.8, 0.5)"), "accuracy % [95% CI]"].startswith("50.0 [")
    assert t.loc[("LASE", "gated at (0.8, 0.5)"), "tokens / problem"] == 250  # (100 + 3 x 300) / 4
    assert t.loc[("group", "gated at (0.8, 0.5)"), "accuracy % [95% CI]"].startswith("75.0 [")
    assert t.loc[("group", "gated at (0.8, 0.5)"), "tokens / problem"] == 625  # (100 + 3 x 800) / 4
    assert t.loc[("group", "always interact"), "tokens / problem"] == 2200
    assert t.loc[("LASE", "gated at (0.8, 0.5)"), "escalated %"] == 75.0
    assert t.loc[("LASE", "leader alone"), "escalated %"] == 0.0
    text = ensemble.describe_pair(pair)
    assert text.startswith("On 4 problems both recorded (spent before: exploratory, no claim):")
    assert "- gated at (0.8, 0.5): the group +25.0 points [" in text and "too few problems to say" in text
    assert "2.50x LASE's tokens" in text and "3.14x LASE's tokens" in text
    assert "the same in both recordings" in text
    assert ensemble.describe_recording(pair) == (
        "lase-ensemble: local:m on arith, 4 problems (4 shared with LASE's full chain), k = 3 supporters sampled at "
        "temperature 0.7, r = 1, consensus by vote, every stage recorded; 12.5 s of recording; notes on wrong "
        "attempts that state the answer: 1 of 6.")


def test_verdicts_count_false_alarms_and_pointers_and_the_vote():
    from lase_nb.chapters import ensemble

    t = ensemble.verdict_table(hand_pair().group_run).set_index("attempt")
    assert t.loc["right", ["stages", "notes", "verdicts", "say fails", "consensus fails"]].tolist() == [2, 6, 5, 2, 0]
    assert t.loc["wrong", ["stages", "notes", "verdicts", "say fails", "consensus fails"]].tolist() == [2, 6, 2, 2, 1]
    assert ensemble.describe_verdicts(t.reset_index()) == (
        "on right attempts (false alarms): 2 of 5 supporter verdicts (40%) said a step fails; the consensus said so "
        "at 0 of 2 stages (0%); on wrong attempts (pointers): 2 of 2 supporter verdicts (100%) said a step fails; "
        "the consensus said so at 1 of 2 stages (50%). 5 of 12 notes (42%) gave no verdict line; a note without "
        "one does not vote. At 1 of 4 stages (25%) no note gave one (under the vote the leader then reads the line "
        "\"Verdict: every step holds\" alone).")
    assert t.loc["wrong", "no verdict"] == 1 and t.loc["right", "no verdict"] == 0
    holds_only = t.reset_index().assign(**{"say fails": 0, "consensus fails": 0})
    assert ensemble.describe_verdicts(holds_only).endswith(
        "No supporter verdict said a step fails, so the consensus said every step holds at every stage: the group "
        "dropped no false alarm because it raised none, and passed no pointer.")
    assert ensemble.describe_verdicts(t.iloc[0:0]).startswith("No escalated stage")


def test_fronts_by_replay_on_hand_built_chains(tmp_path, monkeypatch):
    from lase_nb import plots
    from lase_nb.chapters import ensemble

    pair = hand_pair()
    front = ensemble.fronts(pair)
    assert ensemble.describe_fronts(front) == ("LASE: one point, 50.0% at 100 tokens (no threshold pair that "
                                               "escalates is more accurate); "
                                               "group: from 50.0% at 100 tokens to 75.0% at 625 tokens.")
    monkeypatch.setenv("LASE_FIGURES_DIR", str(tmp_path))
    plots.savefig(ensemble.plot_fronts(front, pair), "ensemble_fronts_test")
    plots.savefig(ensemble.draw_group_star(), "ensemble_star_test")
    assert (tmp_path / "ensemble_fronts_test.png").is_file() and (tmp_path / "ensemble_star_test.png").is_file()


def test_load_pair_says_what_is_missing(tmp_path, capsys):
    from lase_nb.chapters import ensemble

    assert ensemble.load_pair(tmp_path, tmp_path) is None
    assert "no finished lase-full run in" in capsys.readouterr().out


# ---------------------------------------------------------------- the organism's stage 1: one devil or a vote (pure)


def chain_problem(pid: str) -> Problem:
    """3 + 3 = 6, 6 x 3 = 18, 18 - 15 = 3, with the chain the organism's labels read."""
    return Problem(pid, "Start with 3; then + 3, * 3, - 15.", "3",
                   meta={"start": 3, "ops": [["+", 3], ["*", 3], ["-", 15]], "level": 3})


CHAIN_RIGHT = "3 + 3 = 6\n6 × 3 = 18\n18 - 15 = \\boxed{3}"
CHAIN_WRONG = "3 + 3 = 7\n7 × 3 = 21\n21 - 15 = \\boxed{6}"  # slips at step 1, carried on
POINT = "Step 1 fails: redo 3 + 3 column by column."
ALARM = "Step 3 fails: redo 18 - 15 column by column."
CLEAR = "Every step holds; the riskiest is step 2, 6 × 3: defend it."


def stage1_case(pid: str, right: bool, note: str) -> StageOneCase:
    return StageOneCase(chain_problem(pid), CHAIN_RIGHT if right else CHAIN_WRONG, "3" if right else "6", right,
                        note, "", right)


#: r1, r2 right first answers; w1, w2 wrong ones: the recorded single note, the three sampled notes.
SINGLE = {"r1": ALARM, "r2": ALARM, "w1": POINT, "w2": CLEAR}
MEMBERS = {"r1": [ALARM, CLEAR, CLEAR],  # the vote drops r1's alarm (2 to 1 for holds)
           "r2": [ALARM, ALARM, CLEAR],  # and keeps r2's
           "w1": [CLEAR, POINT, POINT],  # keeps w1's pointer (carried by the second note)
           "w2": [POINT, POINT, "Looks fine."]}  # and points where the single note did not (one note without a verdict)
BOX = {"right": "3 + 3 = 6\n6 × 3 = 18\n18 - 15 = \\boxed{3}", "wrong": "\\boxed{4}", "kept wrong": "\\boxed{6}"}


def hand_stage1(leaders=("v5", "v6")) -> pd.DataFrame:
    cases = [stage1_case(p, p.startswith("r"), SINGLE[p]) for p in SINGLE]
    voted, votes = ens.vote_cases(cases, [MEMBERS[p] for p in SINGLE])
    single_rev = [BOX["wrong"], BOX["right"], BOX["right"], BOX["kept wrong"]]  # r1 broken, w1 fixed
    vote_rev = [BOX["right"], BOX["wrong"], BOX["right"], BOX["right"]]  # r2 broken, w1 and w2 fixed
    frames = []
    for leader in leaders:
        frames += [ens.stage1_rows(cases, single_rev, notes="single", leader=leader),
                   ens.stage1_rows(voted, vote_rev, notes="vote", leader=leader, votes=votes)]
    return pd.concat(frames, ignore_index=True)


def test_the_vote_over_sampled_devil_notes_is_the_strategys_vote_and_tie_rule():
    cases = [stage1_case(p, p.startswith("r"), SINGLE[p]) for p in SINGLE]
    voted, votes = ens.vote_cases(cases, [MEMBERS[p] for p in SINGLE])
    assert [v["verdict"] for v in votes] == ["holds", "fails", "fails", "fails"]
    assert [v["carrier"] for v in votes] == [1, 0, 1, 0]
    assert [c.note for c in voted] == [CLEAR, ALARM, POINT, POINT]
    assert votes[3]["verdicts"] == ["step 1 fails", "step 1 fails", None]
    assert [c.attempt for c in voted] == [c.attempt for c in cases]  # only the note changes
    # a tie goes to holds; nobody voting hands the leader the verdict line alone
    (tie,), (v,) = ens.vote_cases(cases[:1], [[ALARM, CLEAR, "no verdict here"]])
    assert v["verdict"] == "holds" and tie.note == CLEAR
    (none,), (v,) = ens.vote_cases(cases[:1], [["a", "b", "c"]])
    assert v["carrier"] is None and none.note == prompts.VERDICT_HOLDS
    with pytest.raises(ValueError):
        ens.vote_cases(cases, [MEMBERS["r1"]])  # one member list per case


def test_stage1_arms_count_alarms_pointers_fixes_and_breaks_by_hand():
    rows = hand_stage1()
    assert len(rows) == 16 and set(rows["notes"]) == {"single", "vote"}
    arms = ens.stage1_arms(rows).set_index(["notes", "leader"])
    single, vote = arms.loc[("single", "v5")], arms.loc[("vote", "v5")]
    assert (single["right"], single["false alarms"], single["wrong"], single["flags"], single["pointers"]) == (2, 2, 2, 1, 1)
    assert (vote["false alarms"], vote["flags"], vote["pointers"]) == (1, 2, 2)
    assert (single["fixed"], single["broken"], single["net"]) == (1, 1, 0)
    assert (vote["fixed"], vote["broken"], vote["net"]) == (2, 1, 1)
    assert single["member alarms"] == "2/2" and vote["member alarms"] == "3/6" and vote["member flags"] == "4/5"
    assert int(arms["states answer"].sum()) == 0
    assert arms.loc[("vote", "v6"), "fixed"] == 2


def test_stage1_paired_gives_the_discordant_problems_and_exact_mcnemar():
    paired = ens.stage1_paired(hand_stage1())
    t = paired.set_index(["measure", "leader"])
    # the note's measures once (they do not depend on the leader), the leader's per leader
    assert list(paired["measure"]).count("false alarm") == 1 and list(paired["measure"]).count("fixed") == 2
    alarm = t.loc[("false alarm", "-")]
    assert (alarm["n"], alarm["single"], alarm["vote"], alarm["vote only"], alarm["single only"]) == (2, 2, 1, 0, 1)
    assert alarm["McNemar p"] == 1.0
    pointer = t.loc[("pointer", "-")]
    assert (pointer["single"], pointer["vote"], pointer["vote only"], pointer["single only"]) == (1, 2, 1, 0)
    broken = t.loc[("broken", "v5")]
    assert (broken["n"], broken["vote only"], broken["single only"]) == (2, 1, 1)
    after = t.loc[("right after stage 1", "v6")]
    assert (after["n"], after["single"], after["vote"]) == (4, 2, 3)


def test_the_expectation_and_the_lead_are_judged_from_the_paired_table():
    def table(alarms_single, alarms_vote, pointers_single, pointers_vote, p=0.5):
        return pd.DataFrame([
            {"measure": "false alarm", "first answers": "right", "leader": "-", "n": 40, "single": alarms_single,
             "vote": alarms_vote, "vote only": 0, "single only": alarms_single - alarms_vote, "McNemar p": p},
            {"measure": "pointer", "first answers": "wrong", "leader": "-", "n": 64, "single": pointers_single,
             "vote": pointers_vote, "vote only": 0, "single only": 0, "McNemar p": 1.0},
            {"measure": "flag", "first answers": "wrong", "leader": "-", "n": 64, "single": 52, "vote": 50,
             "vote only": 0, "single only": 2, "McNemar p": 0.5}])

    arms = pd.DataFrame([{"escalated": 104, "leader": "v5"}])
    expected = table(30, 24, 33, 31)
    assert ens.stage1_expectation(expected) == {"alarms": True, "pointers": True, "halved_at_equal_pointers": True,
                                                "any_p_below_0.05": True}
    assert "did not halve" in ens.describe_stage1(arms, expected)
    lead = table(30, 12, 33, 33, p=0.001)
    assert ens.stage1_expectation(lead) == {"alarms": False, "pointers": True, "halved_at_equal_pointers": False,
                                            "any_p_below_0.05": False}
    words = ens.describe_stage1(arms, lead)
    assert "halved the false alarms at equal pointers: a lead for a preregistered test" in words
    assert "exploratory, no claim" in words and "30 of 40 with the single note, 12 with the vote" in words
    assert ens.stage1_expectation(table(0, 0, 0, 0))["alarms"] is None  # no single alarm: no share to judge
    assert ens.describe_stage1(arms.iloc[:0], expected) == "No stage-1 rows to describe."


def test_limit_cases_keeps_both_kinds_of_first_answer_in_order():
    cases = [stage1_case(p, r, CLEAR) for p, r in (("a", False), ("b", False), ("c", True), ("d", False), ("e", True))]
    assert [c.problem.id for c in ens.limit_cases(cases, 2)] == ["a", "c"]
    assert [c.problem.id for c in ens.limit_cases(cases, 3)] == ["a", "b", "c"]
    assert [c.problem.id for c in ens.limit_cases(cases, 99)] == ["a", "b", "c", "d", "e"]
    assert ens.limit_cases(cases, None) == cases


def test_same_revisions_compares_the_single_note_with_a_committed_replay():
    rows = hand_stage1(("v5",))
    ref = rows[rows["notes"] == "single"][["problem_id", "revision", "answer"]].copy()
    ref.loc[ref["problem_id"] == "r1", "revision"] = "another text, \\boxed{4}"
    ref = pd.concat([ref, pd.DataFrame([{"problem_id": "elsewhere", "revision": "", "answer": None}])])
    assert ens.same_revisions(rows, {"v5": ref}) == {"v5": {"compared": 4, "identical": 3, "same_answer": 4}}


def test_stage1_rows_refuse_a_vote_without_its_votes():
    case = stage1_case("r1", True, ALARM)
    with pytest.raises(ValueError, match="votes"):
        ens.stage1_rows([case], [BOX["right"]], notes="vote", leader="v5")
    with pytest.raises(ValueError, match="notes must be"):
        ens.stage1_rows([case], [BOX["right"]], notes="three", leader="v5")
    row = ens.stage1_rows([case], [BOX["right"]], notes="single", leader="v5").iloc[0]
    assert (row["verdict"], bool(row["says_fails"]), row["note_kind"], row["outcome"]) == ("fails", True, "alarm", "kept")


def test_load_stage1_reads_what_the_script_writes_and_refuses_a_short_run(tmp_path) -> None:
    import json

    import pandas as pd

    from lase_nb.chapters import ensemble
    from lase_nb.errors import DataError

    assert ensemble.load_stage1(tmp_path) is None
    rows = pd.DataFrame({"problem_id": ["a", "b"], "notes": ["single", "vote"], "answer": ["07", None],
                         "first_correct": [True, False], "member_verdicts": [["step 1 fails"], ["holds", None]]})
    rows.to_json(tmp_path / f"{ensemble.STAGE1_NAME}.jsonl", orient="records", lines=True)
    (tmp_path / f"{ensemble.STAGE1_NAME}.json").write_text(json.dumps({"k": 3, "limit": None}))
    back, meta = ensemble.load_stage1(tmp_path)
    assert back["answer"].iloc[0] == "07" and pd.isna(back["answer"].iloc[1])  # "07" stays text
    assert back["member_verdicts"].tolist()[1] == ["holds", None]
    assert back["first_correct"].tolist() == [True, False] and meta["k"] == 3
    (tmp_path / f"{ensemble.STAGE1_NAME}.json").write_text(json.dumps({"k": 3, "limit": 2}))
    with pytest.raises(DataError, match="--limit 2"):
        ensemble.load_stage1(tmp_path)


def test_describe_expectation_says_each_item_and_whether_it_held() -> None:
    from lase_nb.chapters import ensemble

    held = {"alarms": False, "pointers": True, "halved_at_equal_pointers": True, "any_p_below_0.05": None}
    text = ensemble.describe_expectation(held)
    assert "false alarms at 60%-95% of the single note's: did not hold" in text
    assert "pointers at 80%-105% of the single note's: held" in text
    assert "no halving of the false alarms at equal pointers (no lead): held" in text
    assert "no paired contrast at p < 0.05: no denominator" in text


def test_the_committed_stage1_replay_reads_back_as_its_summary_says() -> None:
    """A5.5 recomputes the arms and the paired table from the committed rows: the same as the
    script's summary, and every single-note revision identical to the committed replays."""
    from lase_nb.chapters import ensemble

    stage1 = ensemble.load_stage1()
    if stage1 is None:
        pytest.skip("the stage-1 replay is not committed")
    rows, meta = stage1
    assert ensemble.stage1_arms(rows).to_dict(orient="records") == meta["arms"]
    assert ensemble.stage1_paired(rows).to_dict(orient="records") == meta["paired"]
    assert all(v["identical"] == v["compared"] == meta["escalated"] for v in meta["single_vs_committed_replays"].values())
