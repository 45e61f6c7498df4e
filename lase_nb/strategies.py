"""Strategies: single, majority vote, MAD, MoA, DOWN, LASE, LASE+MV, LASE with a supporter group, each a policy over one call primitive.

A strategy is a generator function ``(problem, cfg) -> Episode``: it yields a list of steps that
are ready at the same time and receives their answers in the same order, then returns a
:class:`ProblemResult`. A step is a :class:`~lase_nb.engine.Call` (answered by its Generation)
or another episode (answered by its result: LASE+MV runs its chains so). It never sees the
backend, so the runner (:mod:`lase_nb.runner`) can stream many problems' calls together.

:data:`SPECS` is the one record of every strategy: its generator, name, label, colour and
marker, one-line description, call and context-inclusion formulas, and whether it needs
log-probabilities. Every table, figure, chapter and the recording script read it; adding a
strategy means writing its generator and its :class:`StrategySpec` here (and its test).
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Generator, Mapping, Sequence, Union

from . import prompts
from .answers import grade, normalize_answer, reply_states, strip_boxed
from .confidence import Confidence, is_uncertain, measure
from .engine import Call
from .errors import ConfigError, LogprobsUnavailable
from .types import Generation, GenParams, Problem

#: A strategy's run on one problem: yields lists of steps (calls, or sub-episodes run side by
#: side), receives their Generations (or results), returns the problem's result.
Episode = Generator[list[Union[Call, "Episode"]], list[Union[Generation, "ProblemResult"]], "ProblemResult"]

#: Role of the answer-extraction step's calls (see :func:`_answer`).
EXTRACT_ROLE = "extract"


@dataclass(frozen=True)
class StrategyConfig:
    """Every knob of every strategy, with the papers' defaults."""

    tau_lp: float = 0.8  # gate: exp(LP_min) below this is uncertain
    tau_h: float = 0.5  # gate: H_max (nats) above this is uncertain
    full_chain: bool = False  # LASE: force every stage (for replay)
    supporter_order: tuple[str, ...] = prompts.SUPPORTERS
    shuffle_supporters: bool = False  # LASE robustness variant: a seeded order per problem
    n_samples: int = 7  # majority vote
    lase_chains: int = 5  # LASE+MV
    n_agents: int = 3  # MAD, DOWN
    rounds: int = 2  # MAD: rounds in all, the first being the independent answers (Du et al.: 3 x 2)
    down_rounds: int = 2  # DOWN: refinement rounds after the first answers ("two-round refinement")
    moa_layers: int = 2
    moa_proposers: int = 3
    down_threshold: float = 0.8  # DOWN: debate when the first response's confidence is <= this
    down_gate: str = "mean-prob"  # DOWN's own score; "answer-span" = LASE's gate (a labelled variant)
    down_final: str = "vote"  # DOWN: "vote" or "judge"
    ensemble_k: int = 3  # lase-ensemble: supporters per escalated stage
    ensemble_rounds: int = 1  # lase-ensemble: reading rounds after the first notes (0 = independent notes)
    ensemble_consensus: str = "vote"  # lase-ensemble: "vote" (verdict lines) or "synthesis" (a moderator call)
    temperature: float = 0.7  # for independent samples (MV, debaters, proposers, LASE+MV chains, the group's supporters)
    max_tokens: int = 512  # leader / solver calls (sized so that < 5% hit it on every recording)
    supporter_max_tokens: int = 384
    extract_max_tokens: int = 24  # the answer-extraction step writes the answer alone
    extract_answers: bool = True  # leader: ask for the answer alone when a response has none
    examples: int = prompts.DEFAULT_EXAMPLES  # worked examples per prompt (0 = the papers' zero-shot)
    top_logprobs: int = 20
    repeat_stop: int = 32  # local model: end a reply that repeats 32 tokens of itself verbatim
    supporter_repeat_digits: bool = True  # local model: also end a supporter's note in a counting loop
    seed: int = 0

    @classmethod
    def from_manifest(cls, config: dict) -> "StrategyConfig":
        """The configuration a run's manifest recorded (``manifest["config"]``; JSON lists back to tuples)."""
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in config.items()})

    def validate(self) -> "StrategyConfig":
        checks = [
            (0.0 <= self.tau_lp <= 1.0, f"tau_lp must be in [0, 1] (a probability), got {self.tau_lp}"),
            (self.tau_h >= 0.0, f"tau_h must be >= 0 nats, got {self.tau_h}"),
            (self.n_samples >= 1, f"n_samples must be >= 1, got {self.n_samples}"),
            (self.lase_chains >= 1, f"lase_chains must be >= 1, got {self.lase_chains}"),
            (self.n_agents >= 2, f"n_agents must be >= 2 for a debate, got {self.n_agents}"),
            (self.rounds >= 1, f"rounds must be >= 1, got {self.rounds}"),
            (self.down_rounds >= 1, f"down_rounds must be >= 1 refinement round, got {self.down_rounds}"),
            (self.moa_layers >= 1 and self.moa_proposers >= 1, "moa_layers and moa_proposers must be >= 1"),
            (0.0 <= self.down_threshold <= 1.0, f"down_threshold must be in [0, 1], got {self.down_threshold}"),
            (self.down_gate in DOWN_GATES,
             f"down_gate must be one of {', '.join(DOWN_GATES)}, got {self.down_gate!r}"),
            (0 <= self.examples <= len(prompts.WORKED_EXAMPLES["number"]),
             f"examples must be 0, 1 or 2 worked examples per prompt, got {self.examples}"),
            (self.top_logprobs >= 1 or math.isinf(self.tau_h),
             f"top_logprobs={self.top_logprobs} leaves API backends no alternatives to estimate the "
             "entropy from, so every H_max would be unknown and every problem would escalate; use "
             "top_logprobs >= 1 (20 is the usual maximum) or turn the entropy gate off with tau_h=inf"),
            (self.top_logprobs >= 0, f"top_logprobs must be >= 0, got {self.top_logprobs}"),
            (self.repeat_stop == 0 or self.repeat_stop >= 8,
             f"repeat_stop must be 0 (off) or >= 8 tokens, got {self.repeat_stop}"),
            (self.down_final in ("vote", "judge"), f"down_final must be 'vote' or 'judge', got {self.down_final!r}"),
            (self.ensemble_k >= 1, f"ensemble_k must be >= 1 supporter per stage, got {self.ensemble_k}"),
            (self.ensemble_rounds >= 0, f"ensemble_rounds must be >= 0 reading rounds, got {self.ensemble_rounds}"),
            (self.ensemble_consensus in CONSENSUS_FORMS,
             f"ensemble_consensus must be one of {', '.join(CONSENSUS_FORMS)}, got {self.ensemble_consensus!r}"),
            (self.temperature >= 0.0, f"temperature must be >= 0, got {self.temperature}"),
            (min(self.max_tokens, self.supporter_max_tokens, self.extract_max_tokens) >= 1,
             "max_tokens, supporter_max_tokens and extract_max_tokens must be >= 1"),
            (sorted(self.supporter_order) == sorted(prompts.SUPPORTERS),
             f"supporter_order must be a permutation of {prompts.SUPPORTERS}"),
        ]
        for ok, msg in checks:
            if not ok:
                raise ConfigError(msg)
        return self

    def params(self, *, sample: int = 0, temperature: float = 0.0, supporter: bool = False) -> GenParams:
        return GenParams(temperature=temperature, sample=sample, top_logprobs=self.top_logprobs,
                         max_tokens=self.supporter_max_tokens if supporter else self.max_tokens,
                         repeat_stop=self.repeat_stop,
                         repeat_digits=supporter and self.supporter_repeat_digits and self.repeat_stop > 0)

    def extract_params(self, sample: int = 0) -> GenParams:
        """The answer-extraction step: greedy, short, prefilled with the answer's opening."""
        return GenParams(temperature=0.0, sample=sample, top_logprobs=self.top_logprobs,
                         max_tokens=self.extract_max_tokens, prefix=prompts.EXTRACT_PREFIX)


#: Local models trained to answer zero-shot (no worked examples), by alias.
ZERO_SHOT_MODELS = ("organism", "organism-v6", "organism-revision")


def default_examples(backend: str, model: str | None = None) -> int:
    """Worked examples per prompt: 2 for the embedded local model (it needs them to box its
    answers), 0 for the organism (trained zero-shot) and for API backends (the papers' agents
    are zero-shot)."""
    return prompts.DEFAULT_EXAMPLES if backend == "local" and model not in ZERO_SHOT_MODELS else 0


#: DOWN's gates: its own whole-response mean token probability, or LASE's answer-span p_min.
DOWN_GATES = ("mean-prob", "answer-span")
#: How the supporter group of ``lase-ensemble`` forms its one note: a vote over verdict lines, or a moderator's synthesis.
CONSENSUS_FORMS = ("vote", "synthesis")


@dataclass
class CallRecord:
    """Accounting for one call: who, when, what it cost, and what the leader answered."""

    role: str
    stage: int
    agent: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    cached: bool
    finish_reason: str
    reads: tuple[str, ...]
    text: str
    answer: str | None = None
    p_min: float | None = None
    h_max: float | None = None
    leaked: int = 0  # boxed answers removed from a supporter's message
    mean_prob: float | None = None  # DOWN's score: mean token probability of the whole response
    cached_tokens: int | None = None  # prompt tokens the provider billed as cached input (None: not reported)

    @property
    def hit_cap(self) -> bool:
        """Whether the call stopped at its ``max_tokens`` cap (finish reason ``length``)."""
        return self.finish_reason == "length"


@dataclass
class StageRecord:
    """LASE: the leader's state after stage ``stage`` (0 = solo answer)."""

    stage: int
    supporter: str | None
    answer: str | None
    correct: bool
    p_min: float | None
    h_max: float | None
    uncertain: bool
    prompt_tokens: int  # cumulative, all calls up to and including this stage
    completion_tokens: int
    answer_strict: str | None = None  # the answer in the leader's own response (no extraction step)
    correct_strict: bool = False
    extracted: bool = False  # the answer came from the extraction step
    gate_call: str = "leader"  # the call whose answer tokens the gate read: "leader" or "extract"


@dataclass
class ProblemResult:
    problem_id: str
    strategy: str
    answer: str | None
    correct: bool
    calls: list[CallRecord] = field(default_factory=list)
    stages: list[StageRecord] = field(default_factory=list)
    stop_stage: int | None = None
    recording_calls: list[CallRecord] = field(default_factory=list)  # full-chain calls past the stop
    extra: dict[str, Any] = field(default_factory=dict)
    answer_strict: str | None = None  # strict grading: the extraction step's answers not counted
    correct_strict: bool = False

    def __post_init__(self) -> None:
        if not any(c.role == EXTRACT_ROLE for c in self.calls):  # nothing was extracted: the same
            self.answer_strict, self.correct_strict = self.answer, self.correct

    @property
    def parsed(self) -> bool:
        return self.answer is not None

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.calls)

    @property
    def completion_tokens(self) -> int:
        return sum(c.completion_tokens for c in self.calls)

    @property
    def inclusions(self) -> int:
        return sum(len(c.reads) for c in self.calls)

    @property
    def leaks(self) -> int:
        return sum(c.leaked for c in self.calls)


# ---------------------------------------------------------------- helpers


#: The confidence of a response with no answer (unknown: the gate treats it as unsure).
NO_ANSWER = Confidence(None, None, None, 0, "none")


def _confidence(gen: Generation, kind: str, stated: bool = False) -> Confidence:
    """Answer confidence; a reply without log-probabilities has its answer and no confidence (a
    gate takes it as unsure; :func:`lase_nb.runner.run_problems` stops a gated run whose model
    returns none at all). ``stated``: also read "The answer is N" (the extraction step's reply)."""
    try:
        return measure(gen, kind, stated=stated)
    except LogprobsUnavailable:
        from .answers import extract_answer
        ex = extract_answer(gen.text, kind, stated=stated)
        return Confidence(ex.text if ex else None, None, None, 0, "none")


def mean_token_prob(gen: Generation) -> float | None:
    """DOWN's confidence: the mean token probability over the whole response, (1/|r|) sum_i P(t_i)."""
    if not gen.tokens:
        return None
    return sum(math.exp(t.logprob) for t in gen.tokens) / len(gen.tokens)


def _record(call: Call, gen: Generation, conf: Confidence | None = None, leaked: int = 0) -> CallRecord:
    return CallRecord(
        role=call.role, stage=call.stage, agent=call.agent, prompt_tokens=gen.prompt_tokens,
        completion_tokens=gen.completion_tokens, latency_s=gen.latency_s, cached=gen.cached,
        finish_reason=gen.finish_reason, reads=call.reads, text=gen.text,
        answer=conf.answer if conf else None,
        p_min=None if conf is None or conf.lp_min is None else math.exp(conf.lp_min),
        h_max=conf.h_max if conf else None, leaked=leaked, mean_prob=mean_token_prob(gen),
        cached_tokens=gen.cached_tokens)


def majority_vote(answers: list[str | None], kind: str, scores: list[float | None] | None = None) -> str | None:
    """Mode of the parsed answers (equivalent answers grouped by ``normalize_answer``).

    Ties go to the group with the highest mean confidence score, then to the first seen.
    Unparsed answers do not vote; if none parsed, the result is None.
    """
    scores = scores or [None] * len(answers)
    groups: dict[str, list[int]] = {}
    for i, a in enumerate(answers):
        if a is not None:
            groups.setdefault(normalize_answer(a, kind), []).append(i)
    if not groups:
        return None

    def rank(item: tuple[str, list[int]]):
        _, idx = item
        vals = [scores[i] for i in idx if scores[i] is not None]
        mean_conf = sum(vals) / len(vals) if vals else -1.0
        return (len(idx), mean_conf, -idx[0])

    best = max(groups.items(), key=rank)[1]
    return answers[best[0]]


def _finish(problem: Problem, name: str, answer: str | None, calls: list[CallRecord],
            answer_strict: str | None = None, **kw) -> ProblemResult:
    """A result graded both ways: ``answer`` (extraction steps counted) and ``answer_strict``."""
    return ProblemResult(problem.id, name, answer, grade(answer, problem.gold, problem.kind), calls,
                         answer_strict=answer_strict,
                         correct_strict=grade(answer_strict, problem.gold, problem.kind), **kw)


# ---------------------------------------------------------------- strategies


def _answers(problem: Problem, cfg: StrategyConfig, calls: list[Call], gens: list[Generation]
             ) -> Generator[list[Call], list[Generation], tuple[list[Confidence], list[Confidence], list[CallRecord]]]:
    """The graded answers of calls made together, with the answer-extraction step for each
    response that has none (those steps are sent together, after the responses' records).

    Returns ``(graded, strict, records)``: ``graded[i]`` is measured on the extraction step's
    answer tokens when the step ran for call ``i`` (it gates LASE), ``strict[i]`` on the response
    alone (strict grading). The step only recovers a value the response wrote
    (:func:`~lase_nb.answers.reply_states`); one it wrote nowhere counts as no answer. This is the
    one grading rule of every strategy: each answer that is graded or voted on goes through it. Each step is its own call, counted and recorded.
    """
    strict = [_confidence(g, problem.kind) for g in gens]
    recs = [_record(c, g, k) for c, g, k in zip(calls, gens, strict)]
    graded = list(strict)
    need = [i for i, k in enumerate(strict) if k.answer is None] if cfg.extract_answers else []
    if need:
        xcalls = [Call(EXTRACT_ROLE, calls[i].stage, prompts.extract_messages(calls[i].messages, gens[i].text),
                       cfg.extract_params(calls[i].params.sample), agent=calls[i].agent) for i in need]
        xgens = yield xcalls
        for i, xcall, xgen in zip(need, xcalls, xgens):
            found = _confidence(xgen, problem.kind, stated=True)
            if found.answer is not None and not reply_states(gens[i].text, found.answer, problem.kind):
                found = NO_ANSWER  # the step wrote a value the reply never reached: not the reply's answer
            graded[i] = found
            recs.append(_record(xcall, xgen, found))
    return graded, strict, recs


def _answer(problem: Problem, cfg: StrategyConfig, call: Call, gen: Generation
            ) -> Generator[list[Call], list[Generation], tuple[Confidence, Confidence, list[CallRecord]]]:
    """:func:`_answers` for one call: ``(graded, strict, records)``."""
    (graded,), (strict,), recs = yield from _answers(problem, cfg, [call], [gen])
    return graded, strict, recs


def _answer_prob(conf: Confidence) -> float | None:
    """A confidence's answer-span ``exp(LP_min)`` (the vote's tie-break), None if unknown."""
    return None if conf.lp_min is None else math.exp(conf.lp_min)


def _vote(problem: Problem, graded: list[Confidence], strict: list[Confidence],
          scores: list[float | None] | None = None) -> tuple[str | None, str | None]:
    """Majority votes over the graded answers and over the strict ones (ties by ``scores``,
    default the answers' own answer-span confidence)."""
    return (majority_vote([k.answer for k in graded], problem.kind, scores or [_answer_prob(k) for k in graded]),
            majority_vote([k.answer for k in strict], problem.kind, scores or [_answer_prob(k) for k in strict]))


def single(problem: Problem, cfg: StrategyConfig) -> Episode:
    """The leader's first answer, greedy (with the answer-extraction step when it has none)."""
    call = Call("solver", 0, prompts.solver_messages(problem, examples=cfg.examples), cfg.params())
    (gen,) = yield [call]
    conf, strict, recs = yield from _answer(problem, cfg, call, gen)
    return _finish(problem, "single", conf.answer, recs, answer_strict=strict.answer)


def _samples(problem: Problem, cfg: StrategyConfig, n: int, role: str,
             prefix: str | None = None, start: int = 0) -> list[Call]:
    """``n`` independent sampled answers to the solver prompt (sample indices ``start..``)."""
    return [Call(role, 0, prompts.solver_messages(problem, examples=cfg.examples),
                 cfg.params(sample=i, temperature=cfg.temperature), agent=f"{prefix or role}{i}")
            for i in range(start, start + n)]


def majority(problem: Problem, cfg: StrategyConfig) -> Episode:
    """Self-consistency: ``n_samples`` independent samples, then a majority vote."""
    calls = _samples(problem, cfg, cfg.n_samples, "sample")
    gens = yield calls
    graded, strict, recs = yield from _answers(problem, cfg, calls, gens)
    answer, answer_strict = _vote(problem, graded, strict)
    return _finish(problem, "mv", answer, recs, answer_strict)


def _debate_round(problem: Problem, cfg: StrategyConfig, texts: list[str], stage: int,
                  confidences: list[float | None] | None = None) -> list[Call]:
    """Every agent reads all other agents' latest responses (all-to-all)."""
    n = len(texts)
    calls = []
    for i in range(n):
        others = [j for j in range(n) if j != i]
        msgs = prompts.peers_messages(problem, texts[i], [texts[j] for j in others],
                                      None if confidences is None else [confidences[j] for j in others],
                                      examples=cfg.examples)
        calls.append(Call("debater", stage, msgs, cfg.params(sample=i, temperature=cfg.temperature),
                          agent=f"agent{i}", reads=tuple(f"agent{j}" for j in others)))
    return calls


def mad(problem: Problem, cfg: StrategyConfig) -> Episode:
    """Multi-agent debate (Du et al.): ``n_agents`` x ``rounds`` calls, majority vote over the last round.

    Round 1 is the agents' independent answers; each later round every agent reads the others'
    latest responses and answers again. The defaults (3 agents, 2 rounds = 6 calls) are Du et
    al.'s reference code as the LASE paper ran it.
    """
    calls = _samples(problem, cfg, cfg.n_agents, "debater", prefix="agent")
    gens = yield calls
    recs: list[CallRecord] = []
    for t in range(1, cfg.rounds):
        recs += [_record(c, g, _confidence(g, problem.kind)) for c, g in zip(calls, gens)]
        calls = _debate_round(problem, cfg, [g.text for g in gens], t)
        gens = yield calls
    graded, strict, last = yield from _answers(problem, cfg, calls, gens)
    answer, answer_strict = _vote(problem, graded, strict)
    return _finish(problem, "mad", answer, recs + last, answer_strict)


def moa(problem: Problem, cfg: StrategyConfig) -> Episode:
    """Mixture-of-Agents: layers of proposers (later layers read the previous layer), one aggregator."""
    recs: list[CallRecord] = []
    texts: list[str] = []
    for layer in range(cfg.moa_layers):
        if layer == 0:
            calls = _samples(problem, cfg, cfg.moa_proposers, "proposer")
        else:
            prev = [f"proposer{i}" for i in range(len(texts))]
            calls = [Call("proposer", layer, prompts.aggregate_messages(problem, texts, examples=cfg.examples),
                          cfg.params(sample=i, temperature=cfg.temperature), agent=f"proposer{i}",
                          reads=tuple(prev)) for i in range(cfg.moa_proposers)]
        gens = yield calls
        recs += [_record(c, g, _confidence(g, problem.kind)) for c, g in zip(calls, gens)]
        texts = [g.text for g in gens]
    agg = Call("aggregator", cfg.moa_layers, prompts.aggregate_messages(problem, texts, examples=cfg.examples),
               cfg.params(), agent="aggregator", reads=tuple(f"proposer{i}" for i in range(len(texts))))
    (gen,) = yield [agg]
    conf, strict, last = yield from _answer(problem, cfg, agg, gen)
    return _finish(problem, "moa", conf.answer, recs + last, strict.answer)


def down_score(rec: CallRecord, gate: str) -> float | None:
    """The confidence DOWN gates on and shows to peers: its own whole-response mean token
    probability (``"mean-prob"``), or, as a labelled variant, LASE's answer-span ``p_min``."""
    return rec.mean_prob if gate == "mean-prob" else rec.p_min


def down(problem: Problem, cfg: StrategyConfig) -> Episode:
    """DOWN (Eo et al.): accept the first response when its confidence is above ``down_threshold``.

    Otherwise ``n_agents`` agents debate for ``rounds`` rounds in all (the first agent's response
    is round 1's first answer), each reading the others' responses with their confidence scores,
    and the last round is settled by majority vote or a judge. There is no early stop on
    consensus. The score is DOWN's own, the mean token probability over the whole first response
    (``down_gate="mean-prob"``); ``"answer-span"`` swaps in LASE's gate for comparison.
    """
    name = "down" if cfg.down_gate == "mean-prob" else f"down-{cfg.down_gate}"
    first = Call("debater", 0, prompts.solver_messages(problem, examples=cfg.examples), cfg.params(), agent="agent0")
    (g0,) = yield [first]
    (c0,), (s0,), recs = yield from _answers(problem, cfg, [first], [g0])
    score = down_score(recs[0], cfg.down_gate)
    if score is not None and score > cfg.down_threshold:
        return _finish(problem, name, c0.answer, recs, s0.answer, stop_stage=0,
                       extra={"debated": False, "score": score, "first_answer": c0.answer})
    others = _samples(problem, cfg, cfg.n_agents - 1, "debater", prefix="agent", start=1)
    gens = [g0, *(yield others)]
    latest = recs[:1] + [_record(c, g, _confidence(g, problem.kind))
                         for c, g in zip(others, gens[1:])]
    recs += latest[1:]
    for t in range(1, cfg.down_rounds + 1):
        calls = _debate_round(problem, cfg, [g.text for g in gens], t,
                              [down_score(r, cfg.down_gate) for r in latest])
        gens = yield calls
        if t < cfg.down_rounds:
            latest = [_record(c, g, _confidence(g, problem.kind)) for c, g in zip(calls, gens)]
            recs += latest
    graded, strict, last = yield from _answers(problem, cfg, calls, gens)
    recs += last
    latest = last[:len(calls)]
    if cfg.down_final == "judge":
        judge = Call("judge", cfg.down_rounds + 1,
                     prompts.aggregate_messages(problem, [g.text for g in gens], prompts.JUDGE_SYSTEM,
                                                examples=cfg.examples),
                     cfg.params(), agent="judge", reads=tuple(r.agent for r in latest))
        (gj,) = yield [judge]
        cj, sj, jrecs = yield from _answer(problem, cfg, judge, gj)
        recs += jrecs
        answer, answer_strict = cj.answer, sj.answer
    else:
        answer, answer_strict = _vote(problem, graded, strict, [down_score(r, cfg.down_gate) for r in latest])
    return _finish(problem, name, answer, recs, answer_strict,
                   extra={"debated": True, "score": score, "first_answer": c0.answer})


def _supporter_order(problem: Problem, cfg: StrategyConfig) -> tuple[str, ...]:
    if not cfg.shuffle_supporters:
        return cfg.supporter_order
    order = list(cfg.supporter_order)
    random.Random(f"{cfg.seed}:{problem.id}").shuffle(order)
    return tuple(order)


@dataclass
class Note:
    """What one escalated stage hands the leader: the ``text`` it reads where LASE's single note
    goes, the agent that wrote it (``writer``, what the revision reads), the calls that made it,
    and for a group what its supporters said (``group``: verdicts, the consensus, its carrier)."""

    text: str
    writer: str
    records: list[CallRecord]
    group: dict[str, Any] | None = None


#: A stage's note maker: ``(problem, cfg, stage, role, attempt, critique, hints, sample)`` -> a
#: generator of calls returning the :class:`Note` (LASE's one supporter, or the ensemble's group).
NoteMaker = Callable[..., Generator[list[Call], list[Generation], Note]]


def _relays(critique: str | None, hints: str | None) -> tuple[str, ...]:
    """The earlier stages' notes a supporter reads (the paper's order relays the critique and the hints)."""
    return (*(["devil"] if critique is not None else []), *(["collaborator"] if hints is not None else []))


def _supporter_note(problem: Problem, cfg: StrategyConfig, t: int, role: str, attempt: str,
                    critique: str | None, hints: str | None, sample: int) -> Generator[list[Call], list[Generation], Note]:
    """LASE's one supporter of stage ``t``: one greedy note, its boxed answers removed (and counted)."""
    scall = Call(role, t, prompts.supporter_messages(problem, role, attempt, critique, hints),
                 cfg.params(sample=sample, supporter=True), agent=role, reads=("leader", *_relays(critique, hints)))
    (sgen,) = yield [scall]
    note, leaked = strip_boxed(sgen.text)
    return Note(note, role, [_record(scall, sgen, leaked=leaked)])


def lase(problem: Problem, cfg: StrategyConfig, *, sample: int = 0,
         temperature: float = 0.0, name: str = "lase", note_maker: NoteMaker | None = None) -> Episode:
    """LASE: the leader answers; while it is uncertain, one supporter at a time, then it revises.

    With ``cfg.full_chain`` every stage runs whatever the gate says, and ``stages`` records the
    leader's state after each one, so :func:`lase_nb.replay.replay` can apply any thresholds.
    A leader response without an extractable answer gets the answer-extraction step
    (``cfg.extract_answers``), and the gate reads that answer's tokens (``gate_call``).
    ``temperature`` samples the leader (LASE+MV's independent chains); supporters always decode
    greedily, so a sampled chain differs by its leader, and its critics do not ramble to their cap.
    ``note_maker`` writes each stage's note (default one supporter; :func:`lase_ensemble` a group).
    """
    params = cfg.params(sample=sample, temperature=temperature)
    make_note = note_maker or _supporter_note
    call = Call("leader", 0, prompts.solver_messages(problem, examples=cfg.examples), params)
    (gen,) = yield [call]
    conf, strict, recs = yield from _answer(problem, cfg, call, gen)
    attempt = gen.text
    notes: dict[str, str] = {}
    groups: list[dict[str, Any]] = []

    def stage_record(t: int, supporter: str | None) -> StageRecord:
        r = recs[-1]
        return StageRecord(t, supporter, r.answer, grade(r.answer, problem.gold, problem.kind),
                           r.p_min, r.h_max, is_uncertain(conf, cfg.tau_lp, cfg.tau_h),
                           sum(c.prompt_tokens for c in recs), sum(c.completion_tokens for c in recs),
                           answer_strict=strict.answer,
                           correct_strict=grade(strict.answer, problem.gold, problem.kind),
                           extracted=r.role == EXTRACT_ROLE, gate_call=r.role)

    stages = [stage_record(0, None)]
    stop = 0 if not stages[0].uncertain else None
    for t, role in enumerate(_supporter_order(problem, cfg), start=1):
        if stop is not None and not cfg.full_chain:
            break
        critique = notes.get("devil") if role in ("collaborator", "expert") else None
        hints = notes.get("collaborator") if role == "expert" else None
        note = yield from make_note(problem, cfg, t, role, attempt, critique, hints, sample)
        recs += note.records
        notes[role] = note.text
        if note.group is not None:
            groups.append(note.group)
        lcall = Call("leader", t, prompts.revise_messages(problem, attempt, role, note.text, examples=cfg.examples),
                     params, reads=(note.writer,))
        (gen,) = yield [lcall]
        conf, strict, new = yield from _answer(problem, cfg, lcall, gen)
        recs += new
        attempt = gen.text
        stages.append(stage_record(t, role))
        if stop is None and not stages[-1].uncertain:
            stop = t
    if stop is None:
        stop = len(stages) - 1
    final = stages[stop]
    return ProblemResult(problem.id, name, final.answer, final.correct,
                         [c for c in recs if c.stage <= stop], stages=stages, stop_stage=stop,
                         recording_calls=[c for c in recs if c.stage > stop],
                         extra={"escalated": stop > 0, "order": list(_supporter_order(problem, cfg)),
                                **({"group": groups} if note_maker is not None else {})},
                         answer_strict=final.answer_strict, correct_strict=final.correct_strict)


def revise_once(problem: Problem, cfg: StrategyConfig, attempt: str, note: str | None, *,
                role: str = "devil", name: str = "revise-once") -> Episode:
    """One leader revision of a given ``attempt`` after a given supporter's ``note`` (``None``: the
    same request with no note, :data:`lase_nb.prompts.REVISE_ALONE_REQUEST`), made exactly as gated
    LASE makes its stage-1 revision (same prompt, greedy, caps and answer-extraction step). A control
    of what the note adds; run it through :func:`lase_nb.runner.run_problems` with a policy. The call's
    role is the leader's (a routed organism sends it to the revision adapter) and its agent ``reviser``:
    one revision outside a LASE chain, so the run keeps no stage rows."""
    call = Call("leader", 1, prompts.revise_messages(problem, attempt, role, note, examples=cfg.examples),
                cfg.params(), agent="reviser", reads=(role,) if note is not None else ())
    (gen,) = yield [call]
    conf, strict, recs = yield from _answer(problem, cfg, call, gen)
    return _finish(problem, name, conf.answer, recs, answer_strict=strict.answer)


#: A verdict line of the vote (:data:`lase_nb.prompts.VERDICT_REQUEST`), read loosely:
#: "step 2 fails", "Step 2 does not hold", "every step holds" (the last one in a note counts).
_VERDICT = re.compile(r"\bsteps?\s*(\d+)\s*(?:fails|does\s+not\s+hold)|\b(every|each|all)\s+steps?\s+holds?\b",
                      re.IGNORECASE)


def verdict_of(note: str | None) -> str | None:
    """A note's verdict: ``"step N fails"``, ``"every step holds"``, or None when it gives neither
    (the last verdict line in the note counts; a note without one does not vote)."""
    found = list(_VERDICT.finditer(note or ""))
    if not found:
        return None
    m = found[-1]
    return f"step {int(m.group(1))} fails" if m.group(1) else "every step holds"


def vote_verdicts(verdicts: list[str | None]) -> tuple[str, int | None]:
    """The vote of a supporter group: ``("fails", i)`` when more notes say a step fails than say
    every step holds, else ``("holds", i)`` (ties, none voting included, go to "holds"); ``i`` is
    the first note that carries that verdict (None when none does: no note voted)."""
    fails = [i for i, v in enumerate(verdicts) if v is not None and v.endswith("fails")]
    holds = [i for i, v in enumerate(verdicts) if v is not None and not v.endswith("fails")]
    if len(fails) > len(holds):
        return "fails", fails[0]
    return "holds", holds[0] if holds else None


def vote_notes(notes: Sequence[str]) -> tuple[list[str | None], str, int | None, str]:
    """The vote over a group's notes, as :func:`_group_note` forms it: each note's verdict
    (:func:`verdict_of`), the majority verdict and its carrier (:func:`vote_verdicts`, ties to
    "holds"), and the text the leader reads: the carrier's note, or the verdict line
    :data:`lase_nb.prompts.VERDICT_HOLDS` when no note voted."""
    verdicts = [verdict_of(n) for n in notes]
    verdict, carrier = vote_verdicts(verdicts)
    return verdicts, verdict, carrier, prompts.VERDICT_HOLDS if carrier is None else notes[carrier]


def _group_note(problem: Problem, cfg: StrategyConfig, t: int, role: str, attempt: str,
                critique: str | None, hints: str | None, sample: int) -> Generator[list[Call], list[Generation], Note]:
    """A group of ``ensemble_k`` supporters of stage ``t``'s role: first notes sampled at
    ``cfg.temperature`` with distinct seeds, ``ensemble_rounds`` rounds in which each reads the
    others' previous notes and writes its own again, then one note by ``ensemble_consensus``: the
    vote (the majority verdict and the first note that carries it; the verdict line alone when no
    note voted) or a moderator's synthesis (greedy, under the supporters' rule)."""
    k, vote = cfg.ensemble_k, cfg.ensemble_consensus == "vote"
    relays = _relays(critique, hints)
    records: list[CallRecord] = []
    notes: list[str] = []
    agents: list[str] = []
    for rnd in range(cfg.ensemble_rounds + 1):
        names = [f"{role}{j}" + (f"-r{rnd}" if rnd else "") for j in range(k)]
        calls = [Call(role, t, prompts.group_messages(problem, role, attempt, critique, hints, verdict=vote,
                                                      own=notes[j] if rnd else None,
                                                      others=[n for i, n in enumerate(notes) if i != j]),
                      cfg.params(sample=sample * k + j, temperature=cfg.temperature, supporter=True),
                      agent=names[j], reads=("leader", *relays, *(a for i, a in enumerate(agents) if i != j)))
                 for j in range(k)]
        gens = yield calls
        notes, agents = [], names
        for c, g in zip(calls, gens):
            note, leaked = strip_boxed(g.text)
            records.append(_record(c, g, leaked=leaked))
            notes.append(note)
    if vote:
        verdicts, verdict, carrier, text = vote_notes(notes)
        group: dict[str, Any] = {"stage": t, "role": role, "verdicts": verdicts, "verdict": verdict, "carrier": carrier}
        # no note voted: the leader reads the verdict line the tie rule gives
        return Note(text, f"{role}-vote" if carrier is None else agents[carrier], records, group)
    group = {"stage": t, "role": role, "verdicts": [verdict_of(n) for n in notes]}
    mcall = Call(prompts.MODERATOR, t, prompts.moderator_messages(problem, role, attempt, notes),
                 cfg.params(sample=sample, supporter=True), agent=f"{role}-moderator", reads=("leader", *agents))
    (mgen,) = yield [mcall]
    note, leaked = strip_boxed(mgen.text)
    records.append(_record(mcall, mgen, leaked=leaked))
    group.update(verdict=verdict_of(note), carrier=None)
    return Note(note, mcall.agent, records, group)


def lase_ensemble(problem: Problem, cfg: StrategyConfig) -> Episode:
    """LASE with a supporter group at each escalated stage (the LASE paper's Appendix I).

    The gate and the star are LASE's: the leader answers, and while it is unsure the stages run in
    order. At each stage ``k = ensemble_k`` supporters of that stage's role write notes (sampled at
    ``temperature`` with distinct seeds), then ``r = ensemble_rounds`` reading rounds in which each
    reads the others' previous notes (``r = 0``: independent notes); one consensus note goes where
    LASE's single note goes, and the leader revises. Calls per escalated stage:
    ``k (r + 1)`` notes, plus the consensus (one moderator call under ``"synthesis"``, none under
    ``"vote"``), plus the revision: ``k (r + 1) + 1`` with the vote, ``k (r + 1) + 2`` with the
    synthesis (3 x 2 + 1 = 7 and 8 at the defaults, against LASE's 2). Recorded as LASE's full chain
    is (every stage, for replay) by ``lase-nb record --strategies lase-ensemble``.
    """
    return (yield from lase(problem, cfg, name="lase-ensemble", note_maker=_group_note))


def lase_shuffled(problem: Problem, cfg: StrategyConfig) -> Episode:
    """LASE with a seeded random supporter order per problem (robustness check)."""
    return (yield from lase(problem, replace(cfg, shuffle_supporters=True), name="lase-shuffled"))


def lase_mv(problem: Problem, cfg: StrategyConfig) -> Episode:
    """LASE+MV: ``lase_chains`` independent LASE chains (sampled leaders), majority vote over outputs."""
    chains = [lase(problem, replace(cfg, full_chain=False), sample=j, temperature=cfg.temperature,
                   name="lase") for j in range(cfg.lase_chains)]
    results = yield chains  # the chains run side by side, each at its own pace
    recs = []
    for j, r in enumerate(results):
        for c in r.calls:  # recording_calls is empty: chains run without full_chain
            c.agent = f"chain{j}.{c.agent}"
            recs.append(c)
    answer = majority_vote([r.answer for r in results], problem.kind,
                           [r.stages[r.stop_stage].p_min for r in results])
    strict = majority_vote([r.answer_strict for r in results], problem.kind,
                           [r.stages[r.stop_stage].p_min for r in results])
    return _finish(problem, "lase-mv", answer, recs, answer_strict=strict,
                   extra={"chain_answers": [r.answer for r in results],
                          "escalated": sum(bool(r.extra["escalated"]) for r in results)})


# ---------------------------------------------------------------- the registry: one record per strategy

_DEFAULTS = StrategyConfig()


def _get(config: Mapping[str, Any], key: str) -> Any:
    """A setting of a run's config, the current default where an older recording lacks it."""
    return config.get(key, getattr(_DEFAULTS, key))


def reading_rounds(config: Mapping[str, Any] | None) -> int:
    """MAD's rounds in which agents read each other, from a run's config: ``rounds`` counts them
    all, the first being the independent answers (Du et al.'s 3 x 2 = 6 calls), so agents read
    each other in ``rounds - 1`` of them."""
    return max(int(_get(dict(config or {}), "rounds")) - 1, 0)


def _down_rounds(c: Mapping[str, Any]) -> int:
    """DOWN's refinement rounds."""
    return int(_get(c, "down_rounds"))


@dataclass(frozen=True)
class Formula:
    """A count per problem from a run's config: ``text`` (how it is written), ``bound`` (its
    value), ``exact`` (every problem reaches it; otherwise it is an upper bound) and, for LASE's
    inclusions, ``star`` = 2kT, the star's own part (relays excluded; NaN elsewhere)."""

    text: str
    bound: float
    exact: bool = True
    star: float = math.nan


def _moa_calls(c: Mapping[str, Any]) -> Formula:
    """MoA: L layers of p proposers, then one aggregator."""
    layers, p = int(_get(c, "moa_layers")), int(_get(c, "moa_proposers"))
    return Formula(f"L p + 1 = {layers}*{p} + 1", layers * p + 1)


def _moa_inclusions(c: Mapping[str, Any]) -> Formula:
    """MoA: each proposer of layers 2..L reads the p answers of the layer before; the aggregator reads p."""
    layers, p = int(_get(c, "moa_layers")), int(_get(c, "moa_proposers"))
    return Formula(f"(L-1) p^2 + p = {layers - 1}*{p}^2+{p}", (layers - 1) * p ** 2 + p)


def _star_inclusions(c: Mapping[str, Any], chains: int = 1) -> Formula:
    """LASE's inclusions: 2kT (k = 1 peer per stage, T stages) plus the relayed notes, per chain."""
    stages = len(c.get("supporter_order", prompts.SUPPORTERS))
    star, relay = 2 * stages, stages * (stages - 1) // 2
    text = (f"<= 2kT + relays = 2*1*{stages} + {relay}" if chains == 1
            else f"<= N (2kT + relays) = {chains}*({star}+{relay})")
    return Formula(text, chains * (star + relay), False, chains * star)


def _lase_calls(c: Mapping[str, Any], chains: int = 1, exact: bool = False) -> Formula:
    """LASE's calls: the leader, then a supporter and a revision per stage that runs."""
    t = len(c.get("supporter_order", prompts.SUPPORTERS))
    text = f"1 + 2T = 1 + 2*{t}" if chains == 1 else f"N (1 + 2T) = {chains}*(1 + 2*{t})"
    return Formula(text if exact else f"<= {text}", chains * (1 + 2 * t), exact)


def _group_sizes(c: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """lase-ensemble's sizes from a run's config: stages T, supporters k, reading rounds r, and the
    consensus calls per stage m (1 for the synthesis, 0 for the vote)."""
    t = len(c.get("supporter_order", prompts.SUPPORTERS))
    return (t, int(_get(c, "ensemble_k")), int(_get(c, "ensemble_rounds")),
            int(_get(c, "ensemble_consensus") == "synthesis"))


def ensemble_stage_calls(c: Mapping[str, Any]) -> int:
    """Calls per escalated stage of lase-ensemble: k (r + 1) notes, the consensus call (synthesis
    only) and the leader's revision (LASE's stage: 2)."""
    _, k, r, m = _group_sizes(c)
    return k * (r + 1) + m + 1


def _ensemble_calls(c: Mapping[str, Any]) -> Formula:
    """lase-ensemble: the leader, then k (r + 1) notes, the consensus call and a revision per stage that runs."""
    t, k, r, m = _group_sizes(c)
    text = f"1 + T (k(r+1) + {m} + 1) = 1 + {t}*({k}*{r + 1} + {m} + 1)"
    full = bool(_get(c, "full_chain"))
    return Formula(text if full else f"<= {text}", 1 + t * ensemble_stage_calls(c), full)


def _ensemble_inclusions(c: Mapping[str, Any]) -> Formula:
    """lase-ensemble: at stage t, each first note reads the attempt and the t - 1 relayed notes; each
    note of a reading round also the k - 1 others; the moderator the attempt and the k notes; the
    revision the consensus note."""
    t, k, r, m = _group_sizes(c)
    relayed = t * (t + 1) // 2  # sum over stages of (1 + relays)
    bound = k * relayed + r * k * (relayed + t * (k - 1)) + t * m * (k + 1) + t
    text = f"<= k S + r k (S + T(k-1)) + T m (k+1) + T, S = T(T+1)/2 = {relayed}"
    return Formula(f"{text}: {bound}", bound, False)


def _describe_ensemble(c: Mapping[str, Any]) -> str:
    t, k, r, m = _group_sizes(c)
    form = "a moderator's synthesis of" if m else "a vote over the verdict lines of"
    return (f"LASE with a group of {k} supporters per escalated stage (the paper's Appendix I): first notes sampled at "
            f"temperature {_get(c, 'temperature')}, {r} reading round{'s' if r != 1 else ''}, then {form} their notes "
            f"goes where LASE's one note goes; {ensemble_stage_calls(c)} calls per escalated stage against LASE's 2")


def _mad_calls(c: Mapping[str, Any]) -> Formula:
    n, t = int(_get(c, "n_agents")), reading_rounds(c) + 1
    return Formula(f"{n} x {t}", n * t)


def _all_to_all(c: Mapping[str, Any], t: int) -> Formula:
    n = int(_get(c, "n_agents"))
    return Formula(f"T n(n-1) = {t}*{n}*{n - 1}", t * n * (n - 1))


def _down_inclusions(c: Mapping[str, Any]) -> Formula:
    """DOWN's debate reads all-to-all in each refinement round; a judge reads the last round."""
    n, r, judge = int(_get(c, "n_agents")), _down_rounds(c), _get(c, "down_final") == "judge"
    return Formula(f"<= T n(n-1){' + n' if judge else ''} = {r}*{n}*{n - 1}{f' + {n}' if judge else ''} "
                   f"(0 if it accepts the first answer)", r * n * (n - 1) + judge * n, False)


def _down_calls(c: Mapping[str, Any]) -> Formula:
    n, r, judge = int(_get(c, "n_agents")), _down_rounds(c), _get(c, "down_final") == "judge"
    return Formula(f"1, or n (R + 1){' + 1' if judge else ''} = {n}*({r}+1){' + 1' if judge else ''} "
                   f"when it debates", n * (r + 1) + judge, False)


def _describe_mad(c: Mapping[str, Any]) -> str:
    n, t, calls = int(_get(c, "n_agents")), reading_rounds(c) + 1, _mad_calls(c)
    return (f"multi-agent debate as Du et al. define it: {n} agents answer independently, then each reads "
            f"the other {n - 1} answers and answers again, {t} rounds in all: {calls.text} = {calls.bound} calls")


def _describe_down(c: Mapping[str, Any]) -> str:
    n, dr = int(_get(c, "n_agents")), _down_rounds(c)
    return (f"DOWN: one first answer, scored by its own confidence, the mean token probability over the "
            f"whole response; only when that is at most {_get(c, 'down_threshold'):.3g} do {n} agents "
            f"debate: their first answers, then {dr} refinement round{'s' if dr != 1 else ''} reading the "
            f"others with their scores, final answer by {_get(c, 'down_final')}. "
            f"LASE instead reads only the answer's tokens (lowest probability and highest entropy) and "
            f"calls one supporter at a time")


def _no_reads(c: Mapping[str, Any]) -> Formula:
    return Formula("0 (no agent reads another)", 0)


@dataclass(frozen=True)
class StrategySpec:
    """Everything the package knows about one strategy.

    ``run`` is its generator; a *variant* (``variant_of``) runs another strategy's generator
    with ``settings`` over the config (``lase-full``: LASE through every stage, recorded for
    replay; a strategy's own ``settings`` apply when it is recorded), and a *replayed* strategy (``replayed_from``) is read off that variant's recording
    at any thresholds (``lase``). ``label``, ``describe``, ``calls`` and ``inclusions`` take a
    run's config (a dict, as in a manifest; missing keys take today's defaults). ``calls``
    counts model calls per problem, answer-extraction steps apart.
    """

    name: str
    label: Callable[[Mapping[str, Any]], str]  # readable name with the sizes that matter: "MV(7)"
    legend: str  # the long name in legends
    short: str  # the name drawn beside a point
    color: str
    marker: str
    describe: Callable[[Mapping[str, Any]], str]  # what it does, in one line
    calls: Callable[[Mapping[str, Any]], Formula]
    inclusions: Callable[[Mapping[str, Any]], Formula]
    topology: str  # who reads whom: "none", "all-to-all", "layers" or "star"
    run: Callable[[Problem, StrategyConfig], Episode] | None = None
    gated: bool = False  # gates on answer confidence: needs log-probabilities
    variant_of: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    replayed_from: str | None = None
    optional: bool = False  # recorded only when named (``record --strategies NAME``), not in a default study

    @property
    def runnable(self) -> bool:
        """Whether ``lase-nb run --strategy NAME`` runs it (a variant runs as its base strategy)."""
        return self.run is not None and self.variant_of is None

    @property
    def keeps_run_thresholds(self) -> bool:
        """A gated strategy whose recording stopped at the thresholds it ran with (not replayed)."""
        return self.gated and self.runnable and self.replayed_from is None

    def recording(self, cfg: StrategyConfig) -> tuple[str, StrategyConfig]:
        """The strategy and config that record this one's run: a replayed strategy is recorded
        as the variant it is replayed from, a variant as its base strategy with its settings."""
        if self.replayed_from is not None:
            return SPECS[self.replayed_from].recording(cfg)
        if self.variant_of is not None:
            return self.variant_of, replace(cfg, **self.settings)
        return self.name, replace(cfg, **self.settings) if self.settings else cfg


#: Every strategy, in display order (tables, figures, chapter 04).
SPECS: dict[str, StrategySpec] = {s.name: s for s in [
    StrategySpec(
        name="single", label=lambda c: "single agent", legend="single agent", short="single",
        color="#0072B2", marker="o", describe=lambda c: "one answer from the leader's prompt",
        calls=lambda c: Formula("1", 1), inclusions=_no_reads, topology="none", run=single),
    StrategySpec(
        name="mv", label=lambda c: f"MV({_get(c, 'n_samples')})", legend="majority vote", short="majority vote",
        color="#009E73", marker="^",
        describe=lambda c: f"{_get(c, 'n_samples')} independent samples at temperature {_get(c, 'temperature')}, "
                           f"majority vote",
        calls=lambda c: Formula(f"N = {_get(c, 'n_samples')}", int(_get(c, "n_samples"))),
        inclusions=_no_reads, topology="none", run=majority),
    StrategySpec(
        name="mad", label=lambda c: f"MAD({int(_get(c, 'n_agents'))}x{reading_rounds(c) + 1})",
        legend="MAD (3 agents x 2 rounds)", short="MAD", color="#CC79A7", marker="v", describe=_describe_mad,
        calls=_mad_calls, inclusions=lambda c: _all_to_all(c, reading_rounds(c)), topology="all-to-all", run=mad),
    StrategySpec(
        name="moa", label=lambda c: f"MoA({_get(c, 'moa_layers')}x{_get(c, 'moa_proposers')})",
        legend="mixture of agents", short="MoA", color="#8C510A", marker="P",
        describe=lambda c: f"mixture of agents: {_get(c, 'moa_proposers')} proposers per layer, "
                           f"{_get(c, 'moa_layers')} layers, then an aggregator",
        calls=_moa_calls, inclusions=_moa_inclusions, topology="layers", run=moa),
    StrategySpec(
        name="down", label=lambda c: "DOWN", legend="DOWN", short="DOWN", color="#999999", marker="X",
        describe=_describe_down, calls=_down_calls, inclusions=_down_inclusions, topology="all-to-all",
        run=down, gated=True),
    StrategySpec(
        name="lase", label=lambda c: "LASE", legend="LASE", short="LASE", color="#E69F00", marker="*",
        describe=lambda c: f"LASE at (tau_lp, tau_h) = ({_get(c, 'tau_lp')}, {_get(c, 'tau_h')}), replayed from "
                           f"the full-chain recording",
        calls=_lase_calls, inclusions=_star_inclusions, topology="star", run=lase, gated=True,
        replayed_from="lase-full"),
    StrategySpec(
        name="lase-full", label=lambda c: "LASE, every stage", legend="always interact (full chain)",
        short="always interact", color="#D55E00", marker="D",
        describe=lambda c: "LASE forced through every stage (always interact)",
        calls=lambda c: _lase_calls(c, exact=True), inclusions=_star_inclusions, topology="star", run=lase,
        gated=True, variant_of="lase", settings={"full_chain": True}),
    StrategySpec(
        name="lase-mv", label=lambda c: f"LASE+MV({_get(c, 'lase_chains')})", legend="LASE + MV", short="LASE+MV",
        color="#F0E442", marker="h",
        describe=lambda c: f"{_get(c, 'lase_chains')} LASE chains, majority vote over their answers",
        calls=lambda c: _lase_calls(c, int(_get(c, "lase_chains"))),
        inclusions=lambda c: _star_inclusions(c, int(_get(c, "lase_chains"))), topology="star", run=lase_mv,
        gated=True),
    StrategySpec(
        name="lase-shuffled", label=lambda c: "LASE, shuffled order", legend="LASE, shuffled order",
        short="LASE shuffled", color="#882255", marker="p",
        describe=lambda c: "LASE with the supporters in a random order per problem",
        calls=_lase_calls, inclusions=_star_inclusions, topology="star", run=lase_shuffled, gated=True),
    StrategySpec(
        name="lase-ensemble",
        label=lambda c: (f"LASE+group({_group_sizes(c)[1]}x{_group_sizes(c)[2] + 1}, "
                         f"{_get(c, 'ensemble_consensus')})"),
        legend="LASE, supporter group", short="LASE group", color="#117733", marker="s",
        describe=_describe_ensemble, calls=_ensemble_calls, inclusions=_ensemble_inclusions, topology="star",
        run=lase_ensemble, gated=True, settings={"full_chain": True}, optional=True),
]}

#: The strategies ``run`` accepts, by name (variants run as their base strategy).
STRATEGIES: dict[str, Callable[[Problem, StrategyConfig], Episode]] = {
    n: s.run for n, s in SPECS.items() if s.runnable}  # type: ignore[misc]
#: The strategies that gate on confidence, so need a backend with log-probabilities.
GATED = {n for n, s in SPECS.items() if s.gated and s.runnable}


def compared() -> list[str]:
    """The strategies a comparison runs or loads, in display order (a variant is shown through
    the strategy replayed from it, e.g. ``lase-full`` through ``lase``)."""
    return [n for n, s in SPECS.items() if s.runnable]


def recorded(every: bool = False) -> list[str]:
    """The run folders a full recording writes, in display order (``lase-full``, not ``lase``);
    ``every``: also those recorded only when named (``optional``: ``lase-ensemble``)."""
    return [n for n, s in SPECS.items() if s.run is not None and s.replayed_from is None and (every or not s.optional)]


def get_strategy(name: str) -> Callable[[Problem, StrategyConfig], Episode]:
    """Look up a strategy by name, with an error that lists the valid names."""
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ConfigError(f"unknown strategy {name!r}; use one of {', '.join(STRATEGIES)}") from None
