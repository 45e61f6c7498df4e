"""One spelling rule for the names a user types: strategies, data sets and backends.

Hyphens and underscores are the same letter here (``lase_mv`` = ``lase-mv``, ``mmlu-pro`` =
``mmlu_pro``) and case does not matter; the package prints every name with hyphens
(:func:`display`). :func:`resolve` turns what was typed into the registry's own key.
"""

from __future__ import annotations

from typing import Iterable

from .errors import ConfigError

__all__ = ["display", "resolve"]


def _key(name: str) -> str:
    return str(name).strip().lower().replace("_", "-")


def display(name: str) -> str:
    """The printed spelling of a name: hyphens, not underscores."""
    return str(name).replace("_", "-")


def resolve(name: str, known: Iterable[str], what: str) -> str:
    """The key of ``known`` that ``name`` spells (either separator, any case).

    Raises :class:`~lase_nb.errors.ConfigError` listing the valid names (hyphenated) if none matches.
    """
    known = list(known)
    hits = [k for k in known if _key(k) == _key(name)]
    if not hits:
        raise ConfigError(f"unknown {what} {name!r}; use one of {', '.join(display(k) for k in known)}")
    return hits[0]
