"""Cost in tokens and dollars: the price sheet, cached input reported or estimated, the cost table
against hand-computed prices, and the providers' cached-token counts read over the wire."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest

from lase_nb import cli
from lase_nb.backends.gemini_backend import GeminiBackend
from lase_nb.costs import (Price, cached_input, cost_table, describe_dollars, dollar_comparison, dollars, estimate_shared_prefix, gated_calls, load_prices,
                           price_for)
from lase_nb.errors import ConfigError
from lase_nb.traces import load_run
from lase_nb.types import Generation, GenParams
from tests.wire_servers import GeminiWireServer, OpenAIWireServer

MINI = Price("gpt-4.1-mini", 0.40, 0.10, 1.60)  # no minimum prefix: every shared prefix counts


def call(pid: str, role: str, stage: int, agent: str, pt: int, ct: int, used: bool = True, **kw: Any) -> dict:
    return {"problem_id": pid, "strategy": "s", "role": role, "stage": stage, "agent": agent,
            "prompt_tokens": pt, "completion_tokens": ct, "used": used, **kw}


def lase_calls() -> pd.DataFrame:
    """One LASE problem (leader, devil, revision, its extraction step, then a recorded-only stage)."""
    return pd.DataFrame([
        call("p1", "leader", 0, "leader", 100, 50),
        call("p1", "devil", 1, "devil", 150, 30),
        call("p1", "leader", 1, "leader", 180, 40),
        call("p1", "extract", 1, "leader", 240, 5),
        call("p1", "collaborator", 2, "collaborator", 200, 30, used=False),
    ])


def test_shared_prefix_estimate_follows_the_prompts():
    assert estimate_shared_prefix(lase_calls()).tolist() == [0, 0, 100, 180, 0]
    mv = pd.DataFrame([call("q", "sample", 0, f"sample{i}", 100, 20) for i in range(3)]
                      + [call("q", "extract", 0, "sample2", 130, 3)])
    assert estimate_shared_prefix(mv).tolist() == [0, 100, 100, 100]
    moa = pd.DataFrame([call("m", "proposer", 0, f"proposer{i}", 90, 20) for i in range(2)]
                       + [call("m", "proposer", 1, f"proposer{i}", 300, 20) for i in range(2)]
                       + [call("m", "aggregator", 2, "aggregator", 310, 20)])
    assert estimate_shared_prefix(moa).tolist() == [0, 90, 0, 300, 0]
    # another problem starts again from nothing
    two = pd.concat([lase_calls(), lase_calls().assign(problem_id="p2")], ignore_index=True)
    assert estimate_shared_prefix(two).tolist() == [0, 0, 100, 180, 0] * 2


def test_cost_table_against_a_hand_computed_price():
    t = cost_table(lase_calls(), MINI, unit="tokens").iloc[0]
    # used calls: input 100 + 150 + 180 + 240 = 670, cached 100 + 180 = 280, output 50 + 30 + 40 + 5 = 125
    assert (t["calls"], t["input_tokens"], t["cached_input_tokens"], t["output_tokens"]) == (4, 670, 280, 125)
    assert t["cached_share"] == pytest.approx(280 / 670) and t["cached_source"] == "estimated"
    d = cost_table(lase_calls(), MINI, unit="dollars").iloc[0]
    assert d["usd"] == pytest.approx((670 * 0.40 + 125 * 1.60) / 1e6)  # $0.000468
    assert d["usd_cached"] == pytest.approx((390 * 0.40 + 280 * 0.10 + 125 * 1.60) / 1e6)  # $0.000384
    assert d["saving"] == pytest.approx((468 - 384) / 468)
    assert dollars(670, 280, 125, MINI) == pytest.approx(d["usd_cached"])
    assert dollars(670, 280, 125, MINI, discount=False) == pytest.approx(d["usd"])
    # every call, the recorded-only one included; per problem over two problems
    every = cost_table(lase_calls(), unit="tokens", used_only=False).iloc[0]
    assert every["calls"] == 5 and every["input_tokens"] == 870
    two = pd.concat([lase_calls(), lase_calls().assign(problem_id="p2")], ignore_index=True)
    per = cost_table(two, MINI, per_problem=True).iloc[0]
    assert per["problems"] == 2 and per["input_tokens"] == 670 and per["cached_input_tokens"] == 280
    # a provider's minimum prefix: OpenAI caches nothing under 1,024 tokens
    floor = cost_table(lase_calls(), Price("gpt-4.1-mini", 0.40, 0.10, 1.60, 1024), unit="dollars").iloc[0]
    assert floor["usd_cached"] == pytest.approx(floor["usd"]) and floor["saving"] == 0
    by_role = cost_table(lase_calls(), by="role")
    assert by_role.loc["leader", "cached_input_tokens"] == 100 and by_role.loc["extract", "calls"] == 1


def test_reported_cached_tokens_are_used_where_present():
    calls = lase_calls().assign(cached_tokens=[None, None, 64, None, None])
    got = cached_input(calls)
    assert got["cached_input"].tolist() == [0, 0, 64, 180, 0]
    assert got["cached_source"].tolist() == ["estimated", "estimated", "reported", "estimated", "estimated"]
    assert cost_table(calls, MINI).iloc[0]["cached_source"] == "mixed"


def test_gated_calls_keep_the_stages_up_to_the_stop():
    calls = pd.concat([lase_calls(), lase_calls().assign(problem_id="p2")], ignore_index=True)
    kept = gated_calls(calls, {"p1": 0, "p2": 2})
    assert kept.groupby("problem_id").size().to_dict() == {"p1": 1, "p2": 5} and kept["used"].all()
    stops = pd.DataFrame({"problem_id": ["p1", "p2"], "stop_stage": [1, 1]})
    assert len(gated_calls(calls, stops)) == 8
    with pytest.raises(ConfigError, match="no stop stage"):
        gated_calls(calls, {"p1": 0})


def test_price_sheet_shipped_and_user_sheets(tmp_path):
    mini = price_for("gpt-4.1-mini")
    assert (mini.input, mini.cached_input, mini.output) == (0.40, 0.10, 1.60)
    assert mini.label() == "gpt-4.1-mini: $0.40 in, $0.10 cached, $1.60 out per 1M tokens (OpenAI list price, 2025-26)"
    assert price_for("smollm2-135m").output == 0.0
    mine = tmp_path / "prices.json"
    mine.write_text(json.dumps({"models": {"my-model": {"input": 1.0, "output": 2.0}}}))
    p = price_for("my-model", mine)
    assert (p.input, p.cached_input, p.output) == (1.0, 1.0, 2.0)  # no cached rate: no discount
    with pytest.raises(ConfigError, match="no price for model 'gpt-4.1-mini'.*--prices"):
        price_for("gpt-4.1-mini", mine)
    bad = tmp_path / "bad.json"
    bad.write_text('{"models": {"m": {"input": "cheap"}}}')
    with pytest.raises(ConfigError, match="needs numbers for input and output"):
        load_prices(bad)
    bad.write_text("{nope")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_prices(bad)
    with pytest.raises(ConfigError, match="no price sheet"):
        load_prices(tmp_path / "missing.json")
    with pytest.raises(ConfigError, match="needs a price"):
        cost_table(lase_calls(), unit="dollars")


def test_old_cached_generations_still_load():
    old = json.dumps({"text": "x", "tokens": None, "prompt_tokens": 3, "completion_tokens": 1, "finish_reason": "stop",
                      "latency_s": 0.1, "entropy_estimator": "none", "backend": "openai", "model": "m"})
    gen = Generation.from_json(old)
    assert gen.cached_tokens is None
    assert Generation.from_json(Generation(**{**json.loads(old), "cached_tokens": 7}).to_json()).cached_tokens == 7


class CachingOpenAI(OpenAIWireServer):
    """The wire server, reporting half of every prompt as read from a prompt cache."""

    def _route(self, method: str, path: str, body: Any, fault: str | None, n: int) -> tuple[int, Any]:
        status, payload = super()._route(method, path, body, fault, n)
        if status == 200 and "usage" in payload:
            payload["usage"]["prompt_tokens_details"] = {"cached_tokens": payload["usage"]["prompt_tokens"] // 2}
        return status, payload


class CachingGemini(GeminiWireServer):
    """The Gemini wire server, reporting 5 cached content tokens."""

    def _route(self, method: str, path: str, body: Any, fault: str | None, n: int) -> tuple[int, Any]:
        status, payload = super()._route(method, path, body, fault, n)
        if status == 200 and "usageMetadata" in payload:
            payload["usageMetadata"]["cachedContentTokenCount"] = 5
        return status, payload


def test_openai_cached_tokens_reach_the_calls_table(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "mv"
    with CachingOpenAI() as srv:
        rc = cli.main(["run", "--strategy", "mv", "--samples", "2", "--backend", "openai", "--base-url", srv.base_url,
                       "--n", "2", "--out", str(out), "--cache", str(tmp_path / "c.sqlite"), "--quiet"])
    assert rc == 0, capsys.readouterr().err
    calls = load_run(out).calls
    assert (calls["cached_tokens"] == calls["prompt_tokens"] // 2).all()
    t = cost_table(calls, MINI).iloc[0]
    assert t["cached_source"] == "reported" and t["cached_input_tokens"] == (calls["prompt_tokens"] // 2).sum()


def test_gemini_cached_content_tokens_are_read(monkeypatch):
    with CachingGemini() as srv:
        backend = GeminiBackend("gemini-wire", api_key="AIza-test", base_url=srv.base_url)
        gen = backend.generate([{"role": "user", "content": "What is 2 + 2?"}], GenParams(max_tokens=16))
    assert gen.cached_tokens == 5 and gen.prompt_tokens > 0
    with GeminiWireServer() as srv:  # a reply without the field: not reported
        backend = GeminiBackend("gemini-wire", api_key="AIza-test", base_url=srv.base_url)
        assert backend.generate([{"role": "user", "content": "Hi"}], GenParams(max_tokens=8)).cached_tokens is None


def test_dollar_comparison_per_thousand_problems():
    """Chapter 04's table: the hand-computed price above, per 1,000 problems, with the provider's
    1,024-token floor (nothing cached) and with any prefix cached."""
    floor = Price("gpt-4.1-mini", 0.40, 0.10, 1.60, 1024)
    t = dollar_comparison({"lase": lase_calls()}, floor, {"lase": "LASE"}).loc["LASE"]
    assert t["$ / 1,000 problems"] == pytest.approx(round(1000 * 0.000468, 2))
    assert t["saving, any prefix cached"] == f"{(468 - 384) / 468:.0%}"
    table = dollar_comparison({"lase": lase_calls()}, floor, {"lase": "LASE"})
    assert list(table.columns) == ["$ / 1,000 problems", "saving, any prefix cached"]  # issue 51: no all-0% column
    assert "No prompt here shares a prefix of 1,024 tokens" in describe_dollars(table)
    anyp = dollar_comparison({"lase": lase_calls()}, Price("gpt-4.1-mini", 0.40, 0.10, 1.60, 0), {"lase": "LASE"})
    assert anyp.loc["LASE", "saving"] == anyp.loc["LASE", "saving, any prefix cached"] != "0%"
    assert "No prompt" not in describe_dollars(anyp)
