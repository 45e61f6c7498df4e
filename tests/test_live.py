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
