"""Backends: the embedded local model, OpenAI (and OpenAI-compatible servers), Gemini."""

from __future__ import annotations

from ..errors import ConfigError
from .base import Backend

BACKENDS = ("local", "openai", "gemini")
DEFAULT_MODELS = {"local": "smollm2-135m", "openai": "gpt-4.1-mini", "gemini": "gemini-2.0-flash"}


def make_backend(name: str = "local", model: str | None = None, base_url: str | None = None,
                 concurrency: int = 8, **kwargs) -> Backend:
    """Build a backend by name. ``model`` defaults per backend; ``base_url`` targets a compatible server."""
    if name not in BACKENDS:
        raise ConfigError(f"unknown backend {name!r}; use one of {', '.join(BACKENDS)}")
    if concurrency < 1:
        raise ConfigError(f"concurrency must be >= 1 (got {concurrency})")
    model = model or DEFAULT_MODELS[name]
    if name == "local":
        if base_url:
            raise ConfigError("--base-url applies to API backends; for a local model pass --model PATH")
        from .local import open_local
        return open_local(model, **kwargs)
    if name == "openai":
        from .openai_backend import OpenAIBackend
        return OpenAIBackend(model, base_url=base_url, concurrency=concurrency, **kwargs)
    from .gemini_backend import GeminiBackend
    return GeminiBackend(model, base_url=base_url, concurrency=concurrency, **kwargs)


__all__ = ["Backend", "BACKENDS", "DEFAULT_MODELS", "make_backend"]
