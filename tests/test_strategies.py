"""Strategies end to end: scripted behaviour over the OpenAI wire server, and real runs on the embedded model."""

from __future__ import annotations

from dataclasses import asdict, replace

import pytest

from lase_nb.replay import chains_from_stages, replay
from lase_nb.backends.openai_backend import OpenAIBackend
from lase_nb.engine import Engine
from lase_nb.errors import ConfigError, LogprobsUnavailable
from lase_nb.runner import run_problems
from lase_nb.strategies import SPECS, STRATEGIES, StrategyConfig, majority_vote
from lase_nb.traces import stage_rows
from lase_nb.types import Problem
from lase_nb import prompts
from tests.wire_servers import OpenAIWireServer, Reply, fixed

import pandas as pd

PROBLEM = Problem("p1", "What is 2 + 2?", gold="4")


def role_of(messages) -> str:
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    for key, role in (("devil's advocate", "devil"), ("senior expert", "expert"),
                      ("collaborator", "collaborator"), ("judge", "judge"), ("candidate solutions", "aggregator")):
        if key in system:
            return role
    return "revision" if "from a reviewer" in messages[-1]["content"] else "leader"


def scripted(script: dict[str, Reply]):
    seen: list[tuple[str, list]] = []

    def responder(messages, params):
        role = role_of(messages)
        seen.append((role, messages))
        return script.get(role, Reply("I think it is \\boxed{4}.", 0.95))

    responder.seen = seen
    return responder


def engine_for(srv) -> Engine:
    return Engine(OpenAIBackend("wire-model", base_url=srv.base_url, api_key="sk-test", max_retries=0))


def test_lase_stops_when_sure_and_withholds_supporter_answers():
    r = scripted({"leader": Reply("Maybe \\boxed{5}", 0.3),
                  "devil": Reply("The sum is wrong; it should be \\boxed{4}.", 0.9),
                  "revision": Reply("Checking again: \\boxed{4}", 0.99)})
    with OpenAIWireServer(responder=r) as srv:
        (res,) = run_problems("lase", [PROBLEM], engine_for(srv), StrategyConfig(tau_lp=0.8, tau_h=2.0),
                              progress=False)
        assert srv.request_count == 3  # leader, devil's advocate, revision; then the leader was sure
    assert res.answer == "4" and res.correct and res.stop_stage == 1
    assert [s.uncertain for s in res.stages] == [True, False]
    assert res.leaks == 1
    revision_prompt = next(m for role, m in r.seen if role == "revision")
    assert "[answer withheld]" in revision_prompt[-1]["content"]
    assert "\\boxed{4}" not in revision_prompt[-1]["content"]
    assert res.inclusions == 2  # devil read the leader, the leader read the devil


def test_lase_full_chain_records_every_stage_and_spends_only_to_the_stop():
    r = scripted({"leader": Reply("\\boxed{5}", 0.3), "revision": Reply("\\boxed{4}", 0.99)})
    with OpenAIWireServer(responder=r) as srv:
        (res,) = run_problems("lase", [PROBLEM], engine_for(srv),
                              StrategyConfig(tau_lp=0.8, tau_h=2.0, full_chain=True), progress=False)
        assert srv.request_count == 7
    assert [s.stage for s in res.stages] == [0, 1, 2, 3]
    assert res.stop_stage == 1 and len(res.calls) == 3 and len(res.recording_calls) == 4
    assert res.stages[1].prompt_tokens == res.prompt_tokens
    # star with chained notes: 2 + 3 + 4 ordered inclusions over three stages
    assert sum(len(c.reads) for c in res.calls + res.recording_calls) == 9


def test_confident_leader_answers_alone():
    r = scripted({"leader": Reply("\\boxed{4}", 0.999)})
    with OpenAIWireServer(responder=r) as srv:
        (res,) = run_problems("lase", [PROBLEM], engine_for(srv), StrategyConfig(), progress=False)
        assert srv.request_count == 1
    assert res.stop_stage == 0 and res.correct and not res.extra["escalated"]


def test_unextractable_answer_escalates_and_counts_as_wrong():
    r = scripted({"leader": Reply("no idea", 0.99), "revision": Reply("still no idea", 0.99)})
    with OpenAIWireServer(responder=r) as srv:
        (res,) = run_problems("lase", [PROBLEM], engine_for(srv), StrategyConfig(), progress=False)
    assert res.answer is None and not res.correct and res.stop_stage == 3
    assert all(s.uncertain for s in res.stages)


def test_gate_without_logprobs_is_a_clear_error():
    with OpenAIWireServer(faults=["nologprobs"] * 100) as srv:  # a model that returns none
        with pytest.raises(LogprobsUnavailable, match="wire-model"):
            run_problems("lase", [PROBLEM], engine_for(srv), progress=False)


def test_mad_counts_all_to_all_inclusions_and_votes():
    with OpenAIWireServer() as srv:
        (res,) = run_problems("mad", [PROBLEM], engine_for(srv), StrategyConfig(n_agents=4, rounds=3),
                              progress=False)
        assert srv.request_count == 4 * 3  # n agents x rounds, the first round independent
    assert res.inclusions == 2 * 4 * 3  # (T - 1) reading rounds x n (n - 1)
    assert res.answer == "4" and res.correct


def test_mad_default_is_du_et_al_three_agents_two_rounds_six_calls():
    with OpenAIWireServer() as srv:
        (res,) = run_problems("mad", [PROBLEM], engine_for(srv), StrategyConfig(), progress=False)
        assert srv.request_count == 6
    assert len(res.calls) == 6 and [c.stage for c in res.calls] == [0, 0, 0, 1, 1, 1]
    assert res.inclusions == 3 * 2


def test_down_accepts_confident_answer_and_debates_otherwise():
    with OpenAIWireServer(responder=scripted({"leader": Reply("\\boxed{4}", 0.95)})) as srv:
        (res,) = run_problems("down", [PROBLEM], engine_for(srv), StrategyConfig(down_threshold=0.9),
                              progress=False)
        assert srv.request_count == 1 and not res.extra["debated"]
    answers = iter(["\\boxed{5}", "\\boxed{4}", "\\boxed{4}"])

    def responder(messages, params):
        if "confidence" in messages[-1]["content"]:  # debate rounds show peers' confidences
            return Reply("After reading the others: \\boxed{4}", 0.9)
        return Reply(next(answers), 0.5)

    with OpenAIWireServer(responder=responder) as srv:
        (res,) = run_problems("down", [PROBLEM], engine_for(srv), StrategyConfig(down_threshold=0.9),
                              progress=False)
        # the first answers, then DOWN's two refinement rounds, each agent reading the others
        assert srv.request_count == 3 + 3 + 3
        assert any("confidence 0.50" in r.body["messages"][-1]["content"] for r in srv.requests)
    assert res.extra["debated"] and res.answer == "4"
    assert [c.stage for c in res.calls] == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_down_rounds_is_its_own_setting_and_mad_stays_three_by_two():
    with OpenAIWireServer(responder=fixed("\\boxed{4}", 0.5)) as srv:
        run_problems("down", [PROBLEM], engine_for(srv), StrategyConfig(down_threshold=0.9, down_rounds=1),
                     progress=False)
        assert srv.request_count == 3 + 3
    with OpenAIWireServer(responder=fixed("\\boxed{4}", 0.5)) as srv:
        run_problems("mad", [PROBLEM], engine_for(srv), StrategyConfig(down_rounds=3), progress=False)
        assert srv.request_count == 6
    with pytest.raises(ConfigError, match="down_rounds"):
        StrategyConfig(down_rounds=0).validate()


@pytest.mark.parametrize("strategy", ["single", "mv", "mad", "moa", "down", "lase"])
def test_every_strategy_grades_with_the_same_extraction_rule(strategy):
    """A response without a box gets the extraction step in every strategy; strict grading
    (the responses alone) is kept beside it."""
    def responder(messages, params):
        if messages[-1]["content"] == prompts.EXTRACT_REQUEST:
            return Reply("\\boxed{4}", 0.6)
        return Reply("two plus two makes 4", 0.5)

    with OpenAIWireServer(responder=responder) as srv:
        (res,) = run_problems(strategy, [PROBLEM], engine_for(srv),
                              StrategyConfig(down_threshold=0.9, n_samples=3), progress=False)
    assert res.answer == "4" and res.correct
    assert res.answer_strict is None and not res.correct_strict
    assert any(c.role == "extract" for c in res.calls)


def test_down_has_no_consensus_stop():
    with OpenAIWireServer(responder=fixed("\\boxed{4}", 0.5)) as srv:
        (res,) = run_problems("down", [PROBLEM], engine_for(srv), StrategyConfig(down_threshold=0.9),
                              progress=False)
        assert srv.request_count == 9  # all three agree after round 1, and both refinements still run
    assert res.extra["debated"]


def _span_vs_response(index: int, token: str) -> float:
    """Answer-span tokens (the digit) are sure; the reasoning tokens before them are not."""
    return 0.99 if token.strip() == "4" else 0.3


def test_down_gates_on_the_whole_response_not_the_answer_span():
    text = "I add the two numbers and get \\boxed{4}"
    with OpenAIWireServer(responder=fixed(text, _span_vs_response)) as srv:
        (res,) = run_problems("down", [PROBLEM], engine_for(srv), StrategyConfig(down_threshold=0.8),
                              progress=False)
        assert srv.request_count == 9  # mean token probability ~0.4 <= 0.8: DOWN debates
    first = res.calls[0]
    assert first.p_min > 0.9 and first.mean_prob < 0.5
    assert res.extra["debated"] and res.strategy == "down"
    with OpenAIWireServer(responder=fixed(text, _span_vs_response)) as srv:
        (res,) = run_problems("down", [PROBLEM], engine_for(srv),
                              StrategyConfig(down_threshold=0.8, down_gate="answer-span"), progress=False)
        assert srv.request_count == 1  # LASE's answer-span gate (a labelled variant) accepts
    assert res.strategy == "down-answer-span" and not res.extra["debated"]


def test_extraction_step_fires_only_on_unextractable_leader_responses():
    def responder(messages, params):
        if messages[-1]["content"] == prompts.EXTRACT_REQUEST:
            return Reply("\\boxed{4}", 0.6)
        return Reply("two plus two makes 4" if role_of(messages) == "leader" else "\\boxed{4}", 0.99)

    with OpenAIWireServer(responder=responder) as srv:
        (res,) = run_problems("single", [PROBLEM], engine_for(srv), StrategyConfig(), progress=False)
        assert srv.request_count == 2
    solver, extract = res.calls
    assert extract.role == "extract" and extract.completion_tokens > 0
    assert res.completion_tokens == solver.completion_tokens + extract.completion_tokens
    assert res.answer == "4" and res.correct and res.answer_strict is None and not res.correct_strict
    with OpenAIWireServer(responder=responder) as srv:  # LASE gates on the extracted answer's tokens
        (res,) = run_problems("lase", [PROBLEM], engine_for(srv), StrategyConfig(full_chain=True), progress=False)
    s0 = res.stages[0]
    assert s0.extracted and s0.answer == "4" and s0.p_min == pytest.approx(0.6, abs=1e-6) and s0.uncertain
    assert sum(c.role == "extract" for c in [*res.calls, *res.recording_calls]) == 1  # revisions boxed theirs
    with OpenAIWireServer(responder=fixed("\\boxed{4}", 0.99)) as srv:  # nothing to extract: no step
        (res,) = run_problems("single", [PROBLEM], engine_for(srv), StrategyConfig(), progress=False)
        assert srv.request_count == 1
    with OpenAIWireServer(responder=responder) as srv:  # switched off: strict, one call
        (res,) = run_problems("single", [PROBLEM], engine_for(srv), StrategyConfig(extract_answers=False),
                              progress=False)
        assert srv.request_count == 1 and res.answer is None


def test_cap_hits_are_counted_per_role():
    from lase_nb.traces import cap_hit_rates, call_rows, problem_rows
    with OpenAIWireServer(responder=fixed("one two three four five six seven eight nine ten \\boxed{4}")) as srv:
        (res,) = run_problems("single", [PROBLEM], engine_for(srv), StrategyConfig(max_tokens=3), progress=False)
    assert res.calls[0].finish_reason == "length" and res.calls[0].hit_cap
    rates = cap_hit_rates([res])
    assert rates["solver"] == {"calls": 1, "cap_hits": 1, "rate": 1.0, "loop_stops": 0}
    assert problem_rows([res], [PROBLEM])[0]["cap_hits"] >= 1
    assert call_rows([res])[0]["hit_cap"] is True


def test_majority_vote_groups_equivalents_and_breaks_ties_deterministically():
    assert majority_vote(["1/2", "0.5", "3", "\\frac{1}{2}"], "number") in {"1/2", "0.5", "\\frac{1}{2}"}
    assert majority_vote(["3", "5"], "number", [0.2, 0.9]) == "5"  # tie: higher confidence
    assert majority_vote(["3", "5"], "number") == "3"  # tie, no scores: first seen
    assert majority_vote([None, None], "number") is None
    assert majority_vote([None, "7"], "number") == "7"


def test_bad_config_is_named():
    with pytest.raises(ConfigError, match="tau_lp"):
        StrategyConfig(tau_lp=1.5).validate()
    with pytest.raises(ConfigError, match="n_samples"):
        StrategyConfig(n_samples=0).validate()
    with pytest.raises(ConfigError, match="top_logprobs=0"):
        StrategyConfig(top_logprobs=0).validate()
    StrategyConfig(top_logprobs=0, tau_h=float("inf")).validate()  # entropy gate off: allowed
    with pytest.raises(ConfigError, match="down_gate"):
        StrategyConfig(down_gate="vibes").validate()
    with pytest.raises(ConfigError, match="examples"):
        StrategyConfig(examples=5).validate()
    with pytest.raises(ConfigError, match="unknown strategy"):
        run_problems("vote-harder", [PROBLEM], None, progress=False)


# ---------------------------------------------------------------- the registry: one record per strategy


@pytest.mark.parametrize("p", [0.3, 0.99])
@pytest.mark.parametrize("name", list(SPECS))
def test_calls_and_inclusions_follow_the_formulas_in_the_record(name, p):
    """Each record states its calls and context inclusions per problem. When every answer is
    unsure (p = 0.3: every gate escalates) a run reaches each bound (but a shuffled order relays
    fewer notes when a supporter that relays comes first); when every answer is sure it stays
    within it; an exact formula holds either way."""
    spec = SPECS[name]
    cfg = StrategyConfig(tau_lp=0.8, tau_h=2.0, lase_chains=3)
    run, rcfg = spec.recording(cfg) if spec.variant_of else (name, cfg)
    with OpenAIWireServer(responder=fixed("So it is \\boxed{4}.", p)) as srv:
        (res,) = run_problems(run, [PROBLEM], engine_for(srv), rcfg, progress=False)
        made = srv.request_count
    reads = sum(len(c.reads) for c in res.calls + res.recording_calls)
    for got, formula, tight in ((made, spec.calls(asdict(rcfg)), True),
                                (reads, spec.inclusions(asdict(rcfg)), name != "lase-shuffled")):
        assert got == formula.bound if formula.exact or (p < 0.5 and tight) else got <= formula.bound, (formula, got)


def test_every_record_is_complete_and_everything_reads_it():
    from lase_nb import plots, runs
    from lase_nb.chapters import comparison, pipeline

    assert comparison.STRATEGY_ORDER == tuple(SPECS)
    assert set(STRATEGIES) == {n for n, s in SPECS.items() if s.runnable}
    assert runs.RUN_DIRS == {"lase": "lase-full"}
    for name, spec in SPECS.items():
        assert spec.run is not None and spec.describe({}) and spec.label({}) == plots.label(name)
        assert plots.style(name) == {"color": spec.color, "marker": spec.marker, "label": spec.legend,
                                     "short": spec.short}
        assert pipeline.inclusion_bounds(name)["bound"] == spec.inclusions({}).bound
        assert spec.topology in ("none", "all-to-all", "layers", "star")
    assert len({(s.color, s.marker) for s in SPECS.values()}) == len(SPECS)


def test_a_variant_records_as_its_base_strategy():
    cfg = StrategyConfig()
    assert SPECS["lase-full"].recording(cfg) == ("lase", replace(cfg, full_chain=True))
    assert SPECS["lase"].recording(cfg) == ("lase", replace(cfg, full_chain=True))  # replayed from lase-full
    assert SPECS["mv"].recording(cfg) == ("mv", cfg)


# ---------------------------------------------------------------- the embedded model

from lase_nb.datasets import arithmetic_problems  # noqa: E402

# short replies: these tests check what each strategy calls and records, not how well it answers
SMALL = StrategyConfig(n_samples=3, lase_chains=2, n_agents=2, rounds=1, moa_layers=1, moa_proposers=2,
                       max_tokens=40, supporter_max_tokens=24)


@pytest.fixture(scope="module")
def local_engine():
    from lase_nb.backends import make_backend
    return make_backend("local")


@pytest.mark.slow
@pytest.mark.parametrize("name", list(STRATEGIES))
def test_every_strategy_runs_on_the_embedded_model(name, local_engine):
    problems = arithmetic_problems(2, seed=1)
    results = run_problems(name, problems, Engine(local_engine), SMALL, progress=False)
    assert [r.problem_id for r in results] == [p.id for p in problems]
    for r in results:
        assert r.calls and r.completion_tokens > 0 and r.prompt_tokens > 0
        assert isinstance(r.correct, bool)


@pytest.mark.slow
def test_replay_equals_live_run(local_engine, tmp_path):
    """Replaying a full-chain recording at a threshold pair gives what a live run at that pair
    gives. The live runs read the recording's calls from a replay-only cache: any call the
    recording did not make raises CacheMiss, so each live run sends exactly the recording's
    calls up to its stop, and its stop, answer and tokens must equal the replay's."""
    from lase_nb.cache import CallCache

    problems = arithmetic_problems(4, seed=3)
    recorded = CallCache(tmp_path / "calls.sqlite")
    full = run_problems("lase", problems, Engine(local_engine, recorded), replace(SMALL, full_chain=True),
                        progress=False)
    chains = chains_from_stages(pd.DataFrame(stage_rows(full)))
    p0 = sorted(chains.p_min[:, 0][~pd.isna(chains.p_min[:, 0])])
    settings = [(1.0, 10.0), (0.0, 100.0)]  # every stage runs; none does
    if p0:  # a pair that splits the problems: some stop at once, some escalate
        k = len(p0) // 2
        settings.append(((float(p0[k - 1]) + float(p0[k])) / 2 if k else float(p0[0]), 10.0))
    stops = set()
    for tau_lp, tau_h in settings:
        engine = Engine(local_engine, CallCache(tmp_path / "calls.sqlite", mode="replay"))
        live = run_problems("lase", problems, engine, replace(SMALL, tau_lp=tau_lp, tau_h=tau_h), progress=False)
        assert engine.stats.cache_hits > 0
        rep = replay(chains, tau_lp, tau_h).set_index("problem_id")
        for r in live:
            row = rep.loc[r.problem_id]
            assert r.stop_stage == row.stop_stage
            assert r.answer == row.answer or (r.answer is None and pd.isna(row.answer))
            assert r.correct == row.correct
            assert r.prompt_tokens == row.prompt_tokens and r.completion_tokens == row.completion_tokens
            stops.add(r.stop_stage)
    assert len(stops) > 1  # the settings stopped problems at different stages


def test_lase_mv_runs_chains_together_and_votes():
    answers = {0: "\\boxed{4}", 1: "\\boxed{5}", 2: "\\boxed{4}"}

    def responder(messages, params):
        if role_of(messages) == "leader":  # chain j is sample j: confident, answers differ by chain
            return Reply(answers[params["seed"] or 0], 0.99)
        return Reply("\\boxed{4}", 0.99)

    with OpenAIWireServer(responder=responder) as srv:
        (res,) = run_problems("lase-mv", [PROBLEM], engine_for(srv), StrategyConfig(lase_chains=3),
                              progress=False)
        assert srv.request_count == 3  # one confident leader call per chain, sent as one batch
    assert res.extra["chain_answers"] == ["4", "5", "4"] and res.answer == "4" and res.correct
    assert {c.agent for c in res.calls} == {"chain0.leader", "chain1.leader", "chain2.leader"}


def test_extraction_cannot_invent_a_value_the_reply_never_wrote():
    """The step recovers the reply's answer; a number the reply never wrote (a worked example's,
    a favourite one) is no answer: the call is kept and counted, its value is not graded."""
    def responder(messages, params):
        if messages[-1]["content"] == prompts.EXTRACT_REQUEST:
            return Reply("\\boxed{20}", 0.9)
        return Reply("I am not sure how to add these.", 0.5)

    with OpenAIWireServer(responder=responder) as srv:
        (res,) = run_problems("single", [PROBLEM], engine_for(srv), StrategyConfig(), progress=False)
        assert srv.request_count == 2
    solver, extract = res.calls
    assert extract.role == "extract" and "20" in extract.text and extract.answer is None
    assert res.answer is None and not res.correct


@pytest.mark.parametrize("text, answer, kind, expected", [
    ("so the total is 1,200 apples", "1200", "number", True),
    ("it costs $20.00 in all", "20", "number", True),
    ("I get 120 in the end", "20", "number", False),
    ("no numbers here", "7", "number", False),
    (None, "7", "number", False),
    ("whatever", "\\frac{1}{2}", "math", True),   # not checked for math and choice answers
    ("whatever", "B", "choice", True),
])
def test_reply_states(text, answer, kind, expected):
    from lase_nb.answers import reply_states
    assert reply_states(text, answer, kind) is expected


def test_only_supporters_stop_at_counting_loops():
    cfg = StrategyConfig()
    assert cfg.params(supporter=True).repeat_digits and not cfg.params().repeat_digits
    assert not replace(cfg, supporter_repeat_digits=False).params(supporter=True).repeat_digits
    assert not replace(cfg, repeat_stop=0).params(supporter=True).repeat_digits  # no loop stop at all
    assert cfg.params().to_dict() == replace(cfg, supporter_repeat_digits=False).params().to_dict()


def test_the_progress_bar_moves_with_each_call_before_any_problem_finishes(capsys):
    """A batched run's problems finish together at the end; the bar counts calls meanwhile."""
    import re

    from lase_nb.datasets import load_dataset

    n = 3
    with OpenAIWireServer(latency_s=0.2) as srv:
        run_problems("lase", load_dataset("arith", n=n), engine_for(srv), StrategyConfig(full_chain=True),
                     progress=True)
    shown = re.findall(r"(\d+)/(\d+) \[[^\]]*calls=(\d+), written=(\d+)", capsys.readouterr().err)
    waiting = [int(c) for done, _, c, _ in shown if int(done) == 0]
    assert len(set(waiting)) >= 3 and max(waiting) > 0, shown  # calls counted while 0 problems are done
    assert shown[-1][:3] == (str(n), str(n), str(n * (1 + 2 * len(prompts.SUPPORTERS))))
