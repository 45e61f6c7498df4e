"""The one protocol every backend implements."""

from __future__ import annotations

from typing import Callable, Optional, Protocol, Sequence, runtime_checkable

from ..types import Generation, GenParams, Message


#: Called with (request index, Generation) as each call of a batch finishes.
ResultHook = Callable[[int, Generation], None]


@runtime_checkable
class Backend(Protocol):
    """``generate(messages, params) -> Generation``; ``generate_many`` sends calls that are ready together.

    ``name`` is the backend kind ("local", "openai", "gemini"), ``model`` the model id,
    ``supports_logprobs`` whether it can return token log-probabilities at all.
    """

    name: str
    model: str
    supports_logprobs: bool

    def generate(self, messages: Sequence[Message], params: GenParams) -> Generation: ...

    def generate_many(
        self, requests: Sequence[tuple[Sequence[Message], GenParams]],
        on_result: Optional[ResultHook] = None,
    ) -> list[Generation]:
        """All results in request order; ``on_result(i, gen)`` fires as soon as request ``i`` is done,
        so a durable cache keeps every finished call even if a later one fails."""
        ...


def public_url(url: str | None) -> str | None:
    """A base URL without user-info, query or fragment (where credentials could hide), for logs and manifests."""
    if not url:
        return url
    from urllib.parse import urlsplit, urlunsplit
    u = urlsplit(url)
    host = (u.hostname or "") + (f":{u.port}" if u.port else "")
    return urlunsplit((u.scheme, host, u.path, "", ""))
