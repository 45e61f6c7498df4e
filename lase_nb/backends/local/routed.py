"""Several local models behind one backend, each call routed to one of them by its role and stage.

The organism v6 is two LoRA adapters on the embedded model: v5 for the leader's first answer and
every supporter, and the revision adapter (trained to read notes, ``data/organism/revision/``) for
every leader revision after a note. Training the revision into v5's own adapter silenced the
devil's advocate (data/revision/README.md), so the two stay apart and a call goes to the one its
role needs (:func:`v6_route`).

How the two share the CPU: **two models, one scheduler each, taking turns.** Each model keeps its
own continuous batch and its own prefix cache (a prompt's KV cache from one adapter is wrong for the
other). :meth:`RoutedBackend.generate_stream` gives the turn to the model with the most waiting
calls and lets it decode, taking in its own new calls as they come, until it has none left; calls for
the other model wait meanwhile. LASE's calls come in waves (every leader, then every devil, then every
revision, ...), so each turn is one wave batched at full width. A mixed-adapter batch (peft's
``adapter_names``) would decode both at once but runs the LoRA products unmerged on every step; the
turns keep each model merged and each row's numbers exactly those of that model alone
(``benchmarks/local_batching.py --model organism-v6`` measures the cost).

The call cache keys a call by the model that answers it (:meth:`RoutedBackend.model_for`), so a v6
leader's first answer is the same cached call as v5's.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from ...errors import ConfigError
from ...types import Generation, GenParams, Message
from ..base import ResultHook
from .files import ORGANISM_MODEL, ORGANISM_V6_MODEL, REVISION_MODEL

#: Roles whose calls at a stage >= 1 are the leader's revision (the extraction step of a revision
#: is the revision's own, so its answer tokens, which the gate reads, come from the same model).
REVISION_ROLES = ("leader", "extract")


def v6_route(role: str, stage: int) -> str:
    """The model a v6 call goes to: the revision adapter for a leader revision (and its extraction
    step) at stage >= 1, v5 for everything else (first answers, supporters, other strategies' calls)."""
    return REVISION_MODEL if role in REVISION_ROLES and stage >= 1 else ORGANISM_MODEL


class RoutedBackend:
    """Local models behind one backend: ``route(role, stage)`` names the model each call goes to.

    ``backends`` maps a model alias to its :class:`~lase_nb.backends.local.LocalBackend`; ``model``
    is the name the combination goes by (``organism-v6``). Calls must carry their role and stage, as
    :class:`~lase_nb.engine.Engine` sends them (``routes_calls``)."""

    name = "local"
    supports_logprobs = True
    #: the engine sends each request's role and stage along (see :meth:`generate_stream`)
    routes_calls = True

    def __init__(self, model: str, backends: Mapping[str, Any], route: Callable[[str, int], str]) -> None:
        if not backends:
            raise ConfigError("a routed backend needs at least one model")
        dtypes = {b.dtype for b in backends.values()}
        if len(dtypes) != 1:
            raise ConfigError(f"the routed models must share one dtype (got {sorted(dtypes)})")
        self.model = model
        self.backends = dict(backends)
        self.route = route
        self.dtype = dtypes.pop()
        first = next(iter(self.backends.values()))
        self.device, self.max_batch = first.device, first.max_batch

    def __repr__(self) -> str:
        return f"RoutedBackend(model={self.model!r}, models={list(self.backends)})"

    def model_for(self, role: str, stage: int) -> str:
        """The alias of the model that answers a call of ``role`` at ``stage`` (the cache key's model)."""
        name = self.route(role, stage)
        if name not in self.backends:
            raise ConfigError(f"{self.model}: role {role!r} at stage {stage} routes to {name!r}, "
                              f"which is not loaded (loaded: {', '.join(self.backends)})")
        return name

    def model_files(self) -> dict[str, Any]:
        """What a manifest says about the weights: each model's folder and adapter (with its sha256),
        and the routing rule; the first model's fields stay at the top, as a single model's do."""
        files = {name: b.model_files() for name, b in self.backends.items()}
        top = dict(next(iter(files.values())))
        top["models"] = files
        top["routing"] = (f"{REVISION_MODEL}: the leader's revisions and their extraction steps (stages >= 1); "
                          f"{ORGANISM_MODEL}: every other call") if self.route is v6_route else "custom"
        return top

    # -- generation ------------------------------------------------------------------------

    def generate(self, messages: Sequence[Message], params: GenParams) -> Generation:
        raise ConfigError(f"{self.model} routes each call by its role: send calls through "
                          "lase_nb.engine.Engine, or call one of its models (.backends[name]) directly")

    def generate_many(self, requests: Sequence[tuple[Sequence[Message], GenParams, str, int]],
                      on_result: ResultHook | None = None) -> list[Generation]:
        """``(messages, params, role, stage)`` requests, each answered by its model, in request order."""
        results: list[Generation | None] = [None] * len(requests)
        pending = [(i, *r) for i, r in enumerate(requests)]
        for r in pending:
            if len(r) != 5:
                raise ConfigError(f"{self.model} needs each request's role and stage: "
                                  "(messages, params, role, stage)")

        def answered(i: int, gen: Generation) -> None:
            results[i] = gen
            if on_result is not None:
                on_result(i, gen)

        self.generate_stream(lambda: [pending.pop() for _ in range(len(pending))], answered)
        return results  # type: ignore[return-value]

    def generate_stream(self, more: Callable[[], Sequence[tuple[Any, Sequence[Message], GenParams, str, int]]],
                        on_result: Callable[[Any, Generation], None]) -> None:
        """:meth:`LocalBackend.generate_stream <lase_nb.backends.local.LocalBackend.generate_stream>`
        over several models: ``more()`` returns ``(tag, messages, params, role, stage)`` requests.

        The model with the most waiting requests decodes, taking its own new requests as they come,
        until it has none; then the turn passes. Returns when no model has a request left."""
        waiting: dict[str, list[tuple[Any, Sequence[Message], GenParams]]] = {n: [] for n in self.backends}

        def pull() -> None:
            for tag, messages, params, role, stage in more():
                waiting[self.model_for(role, stage)].append((tag, messages, params))

        while True:
            pull()
            turn = max(self.backends, key=lambda n: len(waiting[n]))
            if not waiting[turn]:
                return

            def take(name: str = turn) -> list[tuple[Any, Sequence[Message], GenParams]]:
                pull()
                out, waiting[name] = waiting[name], []
                return out

            self.backends[turn].generate_stream(take, on_result)



def open_local(model: str, **kwargs: Any) -> Any:
    """A local backend for ``model``: :class:`LocalBackend` for one model folder or alias, and for
    ``organism-v6`` a :class:`RoutedBackend` over v5 and the revision adapter (``kwargs`` go to each)."""
    from .backend import LocalBackend

    if str(model) != ORGANISM_V6_MODEL:
        return LocalBackend(model, **kwargs)
    return RoutedBackend(ORGANISM_V6_MODEL, {name: LocalBackend(name, **kwargs)
                                            for name in (ORGANISM_MODEL, REVISION_MODEL)}, v6_route)
