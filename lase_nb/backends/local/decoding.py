"""Generation, token by token: a request's decoding state (:class:`Row`), choosing each next
token from the logits with its exact statistics, incremental detokenisation, stop strings,
verbatim- and counting-loop stops, and the finished :class:`~lase_nb.types.Generation`.

:class:`TokenDecoding` is a mixin of :class:`~lase_nb.backends.local.backend.LocalBackend`; it
needs the backend's tokenizer ``_tok``, its end-of-turn ids ``_eos_ids``, a ``_piece_cache``
dict and ``name`` / ``model`` for the result.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any, Sequence

from ...types import ENTROPY_EXACT, ENTROPY_NONE, Generation, GenParams, Message, TokenLogprob


@dataclasses.dataclass
class Row:
    """One request inside a batch: its inputs and the state of its decoding."""

    index: int
    prompt_ids: list[int]
    params: GenParams
    cuts: list[int] = dataclasses.field(default_factory=list)  # message ends inside the prompt
    generator: Any = None
    ids: list[int] = dataclasses.field(default_factory=list)  # generated ids, EOS excluded
    pieces: list[str] = dataclasses.field(default_factory=list)
    offsets: list[int] = dataclasses.field(default_factory=list)
    logprobs: list[float] = dataclasses.field(default_factory=list)
    entropies: list[float] = dataclasses.field(default_factory=list)
    tops: list[tuple[tuple[str, float], ...]] = dataclasses.field(default_factory=list)
    text: str = ""
    produced: int = 0
    cut: bool = False  # a stop string (or a verbatim loop) ended the row
    windows: set = dataclasses.field(default_factory=set)  # the reply's repeat_stop-grams so far
    masked: set = dataclasses.field(default_factory=set)  # its 2*repeat_stop-grams, digits masked (repeat_digits)
    finish: str | None = None
    latency_s: float = 0.0
    t0: float = 0.0  # when its prefill started
    chosen: list[int] = dataclasses.field(default_factory=list)  # every token chosen, EOS and cut ones too
    tail_start: int = 0  # where the last chunk of its prefill (not stored) begins



class TokenDecoding:
    """Next-token choice and bookkeeping of rows (a mixin of ``LocalBackend``)."""

    _tok: Any
    _eos_ids: set[int]
    _piece_cache: dict[int, str]
    name: str
    model: str

    def _step(self, active: list[Row], logits: Any) -> list[int]:
        """Choose each row's next token, record its statistics; return the chosen ids."""
        import torch

        logits = logits.float().cpu()
        logp = torch.log_softmax(logits, dim=-1)
        want_stats = any(r.params.logprobs for r in active)
        if want_stats:
            entropy = torch.special.entr(logp.exp()).sum(-1)  # -sum p log p, with 0 log 0 = 0
            k = min(max(r.params.top_logprobs for r in active), logp.shape[-1])
            top_lp, top_id = torch.topk(logp, k, dim=-1) if k > 0 else (None, None)
        chosen: list[int] = []
        for j, r in enumerate(active):
            p = r.params
            if p.temperature <= 0:
                tok = int(torch.argmax(logits[j]))
            else:
                tok = sample(logits[j], p.temperature, p.top_p, r.generator)
            chosen.append(tok)
            r.chosen.append(tok)
            r.produced += 1
            if tok in self._eos_ids:
                r.finish = "stop"
                continue
            if p.logprobs:
                r.logprobs.append(float(logp[j, tok]))
                r.entropies.append(float(entropy[j]))
                kj = min(p.top_logprobs, logp.shape[-1])
                r.tops.append(tuple(
                    (self._piece(int(i)), float(v))
                    for i, v in zip(top_id[j, :kj].tolist(), top_lp[j, :kj].tolist())
                ) if kj > 0 else ())
            self._append_token(r, tok)
            if r.finish is None and r.produced >= p.max_tokens:
                r.finish = "length"
        return chosen

    def _append_token(self, r: Row, tok: int) -> None:
        """Add a token's text piece (incremental detokenisation) and apply stop strings."""
        r.ids.append(tok)
        full = self._tok.decode(r.ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        if full.endswith("\ufffd") or not full.startswith(r.text):
            piece = ""  # mid-character (or a non-prefix-stable decode): wait for more bytes
        else:
            piece = full[len(r.text):]
        before = len(r.text)
        r.offsets.append(before)
        r.pieces.append(piece)
        r.text += piece
        if self._loops(r):
            return
        stops = [s for s in r.params.stop if s]
        if not stops or not piece:
            return
        hits = [i for s in stops
                if (i := r.text.find(s, max(0, before - len(s) + 1))) >= 0]
        if hits:
            self._cut(r, min(hits))
            r.cut = True
            r.finish = "stop"

    def _loops(self, r: Row) -> bool:
        """End the row if its last ``repeat_stop`` tokens repeat an earlier stretch verbatim or,
        with ``repeat_digits``, its last ``2 * repeat_stop`` tokens do with every digit masked."""
        n = r.params.repeat_stop
        if n <= 0 or len(r.ids) < n:
            return False
        start = None
        window = tuple(r.ids[-n:])
        if window in r.windows:
            start = len(r.ids) - n
        else:
            r.windows.add(window)
        if start is None and r.params.repeat_digits and len(r.ids) >= 2 * n:
            digits = self._digit_ids()
            masked = tuple(-1 if i in digits else i for i in r.ids[-2 * n:])
            if masked in r.masked:
                start = len(r.ids) - 2 * n
            else:
                r.masked.add(masked)
        if start is None:
            return False
        self._cut(r, r.offsets[start])
        r.cut = True
        r.finish = "repeat"
        return True

    def _digit_ids(self) -> frozenset[int]:
        """The vocabulary's ids whose text is digits only (a space before them allowed)."""
        if getattr(self, "_digits", None) is None:
            vocab = self._tok.convert_ids_to_tokens(list(range(len(self._tok))))
            text = [self._tok.convert_tokens_to_string([t]) if t is not None else "" for t in vocab]
            self._digits = frozenset(i for i, t in enumerate(text) if t.strip().isdecimal())
        return self._digits

    def _flush(self, r: Row) -> None:
        """At the end, give bytes still pending (an unfinished character) to the last token."""
        if not r.pieces or r.cut:
            return
        full = self._tok.decode(r.ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        if len(full) > len(r.text) and full.startswith(r.text):
            rest = full[len(r.text):]
            r.pieces[-1] += rest
            r.text += rest

    @staticmethod
    def _cut(r: Row, at: int) -> None:
        """Truncate text and tokens where a stop string starts."""
        r.text = r.text[:at]
        n = 0
        while n < len(r.pieces) and r.offsets[n] < at:
            n += 1
        # tokens [0, n) start before the cut; the last of them may straddle it
        del r.pieces[n:], r.offsets[n:], r.ids[n:]
        del r.logprobs[n:], r.entropies[n:], r.tops[n:]
        if n:
            r.pieces[n - 1] = r.pieces[n - 1][: at - r.offsets[n - 1]]

    def _piece(self, tok: int) -> str:
        """The text of one token id on its own (for top-k alternatives)."""
        s = self._piece_cache.get(tok)
        if s is None:
            s = self._tok.decode([tok], skip_special_tokens=False, clean_up_tokenization_spaces=False)
            self._piece_cache[tok] = s
        return s

    def _to_generation(self, r: Row) -> Generation:
        tokens: list[TokenLogprob] | None = None
        shift = len(r.params.prefix)  # a prefilled prefix starts the text; offsets follow it
        if r.params.logprobs:
            tokens = [
                TokenLogprob(piece, lp, off + shift, top, h)
                for piece, lp, off, top, h in zip(r.pieces, r.logprobs, r.offsets, r.tops, r.entropies)
            ]
        return Generation(
            text=r.params.prefix + r.text,
            tokens=tokens,
            prompt_tokens=len(r.prompt_ids),
            completion_tokens=r.produced,
            finish_reason=r.finish or "length",
            latency_s=r.latency_s,
            entropy_estimator=ENTROPY_EXACT if r.params.logprobs else ENTROPY_NONE,
            backend=self.name,
            model=self.model,
        )


def seed(messages: Sequence[Message], params: GenParams) -> int:
    """A 63-bit seed from the messages, temperature, top-p and sample index.

    ``max_tokens``, ``stop`` and the logprob options are left out on purpose: they do not change
    the distribution, so a longer ``max_tokens`` extends the same sample instead of drawing anew.
    """
    blob = json.dumps({"messages": [dict(m) for m in messages], "temperature": params.temperature,
                       "top_p": params.top_p, "sample": params.sample},
                      sort_keys=True, ensure_ascii=False)
    return int.from_bytes(hashlib.sha256(blob.encode("utf-8")).digest()[:8], "big") >> 1


def sample(logits: Any, temperature: float, top_p: float, generator: Any) -> int:
    """Draw one token from softmax(logits / temperature), restricted to the top-p nucleus."""
    import torch

    probs = torch.softmax(logits.double() / temperature, dim=-1)
    if top_p < 1.0:
        sorted_p, order = torch.sort(probs, descending=True)
        cum = torch.cumsum(sorted_p, dim=-1)
        keep = (cum - sorted_p) < top_p  # the smallest prefix whose mass reaches top_p
        keep[0] = True
        probs = torch.zeros_like(probs).scatter_(0, order[keep], sorted_p[keep])
    return int(torch.multinomial(probs, 1, generator=generator))
