"""One way to set up a live chapter run (lase_nb.live), used by every notebook that calls a model."""

from __future__ import annotations

import ast
from pathlib import Path

from lase_nb import prompts
from lase_nb.live import live_config

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def test_the_organism_gets_zero_shot_prompts_the_embedded_model_worked_examples():
    assert live_config("local", "organism").examples == 0
    assert live_config("local").examples == prompts.DEFAULT_EXAMPLES
    assert live_config("local", "smollm2-135m").examples == prompts.DEFAULT_EXAMPLES
    assert live_config("openai", "gpt-4.1-mini").examples == 0


def test_a_chapter_can_give_an_api_model_worked_examples():
    """A small model behind an API boxes its answers only with worked examples (issue 38)."""
    assert live_config("openai", "smollm2", examples=2).examples == 2
    assert live_config("local", examples=0).examples == 0
    for nb in ("02_calibration", "03_lase_pipeline", "04_comparison", "A3_live"):
        src = (NOTEBOOKS / f"{nb}.py").read_text()
        assert "\nexamples = None" in src and "examples=examples" in src, nb


def test_caps_thresholds_and_fields_pass_through():
    cfg = live_config("local", tau_lp=0.9, tau_h=0.3, seed=4, max_tokens=64, full_chain=True)
    assert (cfg.tau_lp, cfg.tau_h, cfg.seed, cfg.full_chain) == (0.9, 0.3, 4, True)
    assert cfg.max_tokens == 64 and cfg.supporter_max_tokens == 64
    assert live_config("local", max_tokens=1000).supporter_max_tokens == live_config("local").supporter_max_tokens


def test_no_notebook_builds_its_own_config_or_engine():
    """The bug this helper fixed: notebooks called default_examples(backend) without the model."""
    for nb in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py")):
        names = {n.id for n in ast.walk(ast.parse(nb.read_text())) if isinstance(n, ast.Name)}
        assert not names & {"StrategyConfig", "make_backend", "CallCache"}, nb.name
        calls = [n for n in ast.walk(ast.parse(nb.read_text())) if isinstance(n, ast.Call)
                 and getattr(n.func, "id", None) == "default_examples"]
        assert all(len(c.args) + len(c.keywords) >= 2 for c in calls), nb.name  # backend and model


def test_live_engine_passes_concurrency_and_timeout_to_an_api_backend(tmp_path, monkeypatch):
    from lase_nb.live import live_engine

    monkeypatch.setenv("LASE_CACHE", str(tmp_path / "c.sqlite"))
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    engine = live_engine("openai", "m", "http://127.0.0.1:9/v1", concurrency=1, timeout=300)
    assert (engine.backend.concurrency, engine.backend.timeout) == (1, 300)
    default = live_engine("openai", "m", "http://127.0.0.1:9/v1")
    assert (default.backend.concurrency, default.backend.timeout) != (1, 300)


def test_live_runs_runs_each_strategy_as_recorded_on_the_same_problems(tmp_path, monkeypatch, capsys):
    """Chapters 03 and 04's live block (issue 56): one helper runs the strategies on the same
    problems, LASE as its full chain (replayable), every call cached; a second run calls no model."""
    from lase_nb.live import live_runs
    from tests.wire_servers import OpenAIWireServer, fixed

    monkeypatch.setenv("LASE_CACHE", str(tmp_path / "c.sqlite"))
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "sk-test")
    with OpenAIWireServer(responder=fixed("So it is \\boxed{7}.", 0.5)) as srv:
        kwargs = dict(backend="openai", model="wire-model", base_url=srv.base_url, n_problems=3, seed=1)
        runs, problems = live_runs(["single", "lase"], **kwargs)
        first = capsys.readouterr().out
        again, _ = live_runs(["single", "lase"], **kwargs)
    assert set(runs) == {"single", "lase"} and len(problems) == 3
    assert {p for r in runs.values() for p in r.problems["problem_id"]} == set(problems)
    assert runs["lase"].manifest["config"]["full_chain"] is True and runs["lase"].stages["stage"].max() == 3
    assert runs["single"].manifest["n"] == 3 and runs["single"].manifest["model"] == "wire-model"
    assert not first.startswith("live: 0 model calls") and capsys.readouterr().out.startswith("live: 0 model calls")
