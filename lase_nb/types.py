"""The data that flows between backends, the cache and the strategies."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

Message = dict[str, str]  # {"role": "system"|"user"|"assistant", "content": "..."}

#: How the per-token entropy was obtained.
ENTROPY_EXACT = "exact"  # full-vocabulary distribution (local models)
ENTROPY_TOPK_RESIDUAL = "topk+residual"  # top-k probs plus one bucket for the missing mass
ENTROPY_NONE = "none"  # no logprobs at all


@dataclass(frozen=True)
class GenParams:
    """Sampling parameters of one call. ``sample`` indexes independent samples of the same call.

    ``repeat_stop`` (local backend; 0 = off) ends a reply whose last ``repeat_stop`` tokens repeat
    an earlier stretch of it verbatim, i.e. a degenerate loop: the text is cut where the repeat
    starts and the finish reason is ``"repeat"``. Small models fall into such loops and would
    otherwise run to their token cap. ``repeat_digits`` (with ``repeat_stop``) also ends a reply
    whose last ``2 * repeat_stop`` tokens repeat an earlier stretch when every digit counts as
    the same token: a counting loop ("the answer is 1.", "the answer is 2.", ...), which never
    repeats verbatim. ``prefix`` is text a backend that can prefill writes at the start of the assistant's reply
    and continues from (the local model); the Generation's text then starts with it (its tokens
    were not generated, so they carry no logprobs). API backends send the messages without it.
    """

    temperature: float = 0.0
    max_tokens: int = 256
    top_p: float = 1.0
    logprobs: bool = True
    top_logprobs: int = 20
    sample: int = 0
    stop: tuple[str, ...] = ()
    prefix: str = ""
    repeat_stop: int = 0
    repeat_digits: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["stop"] = list(self.stop)
        for name, off in (("prefix", ""), ("repeat_stop", 0), ("repeat_digits", False)):
            if d[name] == off:  # keeps cache keys of calls without these options as they were
                del d[name]
        return d


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token: text, log-probability, top alternatives, entropy (nats) and char offset."""

    token: str
    logprob: float
    offset: int
    top: tuple[tuple[str, float], ...] = ()
    entropy: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"t": self.token, "lp": self.logprob, "o": self.offset,
                "top": [list(x) for x in self.top], "h": self.entropy}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TokenLogprob":
        return cls(d["t"], d["lp"], d["o"], tuple((a, b) for a, b in d.get("top", [])), d.get("h"))


@dataclass
class Generation:
    """What one model call returned."""

    text: str
    tokens: list[TokenLogprob] | None
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    latency_s: float
    entropy_estimator: str
    backend: str = ""
    model: str = ""
    cached: bool = field(default=False, compare=False)
    #: Prompt tokens the provider billed as cached input (OpenAI-compatible
    #: ``usage.prompt_tokens_details.cached_tokens``, Gemini ``cached_content_token_count``);
    #: None where the backend does not report it (the local model; generations cached before it existed).
    cached_tokens: int | None = None

    @property
    def has_logprobs(self) -> bool:
        return bool(self.tokens)

    def to_json(self) -> str:
        d = asdict(self)
        d.pop("cached")
        d["tokens"] = None if self.tokens is None else [t.to_dict() for t in self.tokens]
        return json.dumps(d, ensure_ascii=False)

    @classmethod
    def from_json(cls, s: str) -> "Generation":
        d = json.loads(s)
        toks = d.pop("tokens")
        d["tokens"] = None if toks is None else [TokenLogprob.from_dict(t) for t in toks]
        return cls(**d)


#: Problem kinds, which decide how answers are extracted and graded.
KIND_MATH = "math"  # free-form math answer in \boxed{}; graded with math-verify
KIND_NUMBER = "number"  # a number in \boxed{}; graded with numeric tolerance
KIND_CHOICE = "choice"  # an option letter (A, B, ...) in \boxed{}; graded by letter match


@dataclass(frozen=True)
class Problem:
    """One question with its gold answer. For ``choice`` problems ``gold`` is the letter."""

    id: str
    question: str
    gold: str
    kind: str = KIND_NUMBER
    choices: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def prompt_text(self) -> str:
        """The question as shown to a model (options listed for multiple choice)."""
        if not self.choices:
            return self.question
        letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
        opts = "\n".join(f"({letters[i]}) {c}" for i, c in enumerate(self.choices))
        return f"{self.question}\n\n{opts}"
