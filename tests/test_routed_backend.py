"""Two models behind one backend (the organism v6): each call reaches the model its role routes to.

The stand-in pair is the embedded model and the organism v5, which answer the same prompt
differently; routed under v6's rule (``organism`` for first answers and supporters,
``organism-revision`` for the leader's revisions), each call's reply must be exactly the reply of
the model it was routed to, alone."""

from __future__ import annotations

import json

import pytest

from lase_nb import prompts
from lase_nb.backends.local import (ORGANISM_DIR, ORGANISM_MODEL, REVISION_DIR, REVISION_MODEL, LocalBackend,
                                    RoutedBackend, open_local, v6_route)
from lase_nb.cache import CallCache, call_key
from lase_nb.datasets import load_dataset
from lase_nb.engine import Call, Engine
from lase_nb.errors import ConfigError
from lase_nb.strategies import EXTRACT_ROLE
from lase_nb.types import GenParams


@pytest.fixture(scope="module")
def pair():
    """v6's routing over two models that differ: 'organism' is the base model, 'organism-revision' v5."""
    return RoutedBackend("pair", {ORGANISM_MODEL: LocalBackend("smollm2-135m", max_batch=4),
                                  REVISION_MODEL: LocalBackend(ORGANISM_MODEL, max_batch=4)}, v6_route)


def _calls() -> list[Call]:
    p = load_dataset("arith", None, 1, 3, split="eval")[0]
    params = GenParams(max_tokens=12, temperature=0.0, top_logprobs=5)
    solve = prompts.solver_messages(p, examples=0)
    revise = prompts.revise_messages(p, "2 + 2 = \\boxed{5}", "devil", "Step 1 does not hold.", examples=0)
    devil = prompts.supporter_messages(p, "devil", "2 + 2 = \\boxed{5}", None, None)
    return [Call("leader", 0, solve, params), Call("devil", 1, devil, params), Call("leader", 1, revise, params),
            Call(EXTRACT_ROLE, 2, revise, params), Call(EXTRACT_ROLE, 0, solve, params),
            Call("collaborator", 2, devil, params), Call("solver", 0, solve, params)]


def test_v6_route_sends_only_the_leaders_revisions_to_the_revision_adapter() -> None:
    assert v6_route("leader", 0) == ORGANISM_MODEL
    assert v6_route(EXTRACT_ROLE, 0) == ORGANISM_MODEL
    for stage in (1, 2, 3):
        assert v6_route("leader", stage) == REVISION_MODEL
        assert v6_route(EXTRACT_ROLE, stage) == REVISION_MODEL
        for role in ("devil", "collaborator", "expert", "debater", "solver", "judge"):
            assert v6_route(role, stage) == ORGANISM_MODEL


@pytest.mark.slow  # two models decode every call: tens of seconds on two cores
def test_each_call_reaches_the_model_its_role_routes_to(pair, tmp_path) -> None:
    calls = _calls()
    routed = Engine(pair, CallCache(tmp_path / "c.sqlite")).run(calls)
    alone = {name: [b.generate(c.messages, c.params).text for c in calls] for name, b in pair.backends.items()}
    # the two models answer these prompts differently, so a wrong route would show
    assert sum(a != b for a, b in zip(alone[ORGANISM_MODEL], alone[REVISION_MODEL])) >= 3
    for c, gen in zip(calls, routed):
        assert gen.text == alone[v6_route(c.role, c.stage)][calls.index(c)], (c.role, c.stage)


@pytest.mark.slow  # two models decode every call: tens of seconds on two cores
def test_the_cache_key_names_the_model_that_answers(pair, tmp_path) -> None:
    engine = Engine(pair, CallCache(tmp_path / "c.sqlite"))
    for c in _calls():
        assert engine.key(c.messages, c.params, c) == call_key("local", v6_route(c.role, c.stage), c.messages, c.params)
    # a rerun is answered from the cache, every call
    engine.run(_calls())
    again = Engine(pair, CallCache(tmp_path / "c.sqlite"))
    again.run(_calls())
    assert again.stats.model_calls == 0 and again.stats.cache_hits == len(_calls())


@pytest.mark.slow  # two models decode every call: tens of seconds on two cores
def test_a_routed_backend_refuses_calls_without_their_role(pair) -> None:
    c = _calls()[0]
    with pytest.raises(ConfigError, match="routes each call by its role"):
        pair.generate(c.messages, c.params)
    with pytest.raises(ConfigError, match="role and stage"):
        pair.generate_many([(c.messages, c.params)])
    gens = pair.generate_many([(c.messages, c.params, "leader", 1)])
    assert gens[0].text == pair.backends[REVISION_MODEL].generate(c.messages, c.params).text


def test_organism_v6_is_not_one_folder() -> None:
    with pytest.raises(ConfigError, match="two models routed by role"):
        LocalBackend("organism-v6")


@pytest.mark.skipif(not (REVISION_DIR / "adapter_model.safetensors").is_file(), reason="no revision adapter")
def test_organism_v6_names_both_adapters_with_their_sha256() -> None:
    v6 = open_local("organism-v6", max_batch=2)
    files = v6.model_files()
    shas = {name: json.loads((d / "manifest.json").read_text())["adapter_sha256"]
            for name, d in ((ORGANISM_MODEL, ORGANISM_DIR), (REVISION_MODEL, REVISION_DIR))}
    assert {name: m["adapter_sha256"] for name, m in files["models"].items()} == shas
    assert files["adapter_sha256"] == shas[ORGANISM_MODEL]
    assert "revision" in files["routing"]
