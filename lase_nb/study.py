"""Record a study: one run folder per strategy, in the layout every chapter reads.

A *study* is a folder of run folders (``lase-full``, ``single``, ``mv``, ``mad``, ``moa``, ``down``,
``lase-mv``, ``lase-shuffled``; :func:`lase_nb.strategies.recorded`) plus ``study.json`` (label,
backend, model, data set, n, dtype, runs). ``lase-nb record`` and ``data/traces/record.py`` both
write one through :func:`record_study`:

- :func:`plan_runs` / :class:`RunPlan`: what each run folder records (strategy, config, problems,
  DOWN's calibration problems);
- :func:`plan_table`: before anything is sent, the calls per run from the strategies' call
  formulas (``SPECS``), and tokens and dollars estimated from recorded rates
  (:func:`rates_from_runs`, e.g. the committed recordings) or from a pilot (:func:`pilot_rates`, the
  study's first problems, whose calls the study then reuses from the cache);
- :func:`record_study`: every run through the call cache (an interrupted study resumes without
  repeating a finished call), one progress bar in model calls whose rate and ETA leave out the
  calls answered from the cache, each run written with its manifest (:func:`lase_nb.traces.write_run`).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import pandas as pd
from tqdm.auto import tqdm

from . import traces
from .costs import Price, cost_table
from .engine import Engine
from .errors import ConfigError
from .paths import DATA_DIR
from .strategies import SPECS, ProblemResult, StrategyConfig, recorded
from .types import Generation, Problem

__all__ = ["RunPlan", "Rate", "Rates", "plan_runs", "study_runs", "down_calibration_problems", "calibrate_down",
           "planned_calls", "rates_from_runs", "rates_from_folder", "pilot_rates", "plan_table", "format_plan",
           "record_study", "answer_distribution", "STUDY_FILE", "DEFAULT_RATES", "estimate_note", "calibration_note",
           "capped_note", "duration", "pilot_timing", "whole_numbers"]

#: The study's own description, beside its run folders.
STUDY_FILE = "study.json"
#: Recorded rates used for the estimate when no pilot is asked for: the embedded model's recording.
DEFAULT_RATES = DATA_DIR / "traces" / "arith-smollm2"


@dataclass
class RunPlan:
    """One run folder of a study: ``name`` (the folder), the runnable ``strategy`` and ``config``
    that record it, its ``problems``, extra manifest fields, and DOWN's ``calibration`` problems
    (its threshold is chosen on them first; empty: the config's threshold is kept)."""

    name: str
    strategy: str
    config: StrategyConfig
    problems: list[Problem]
    manifest: dict[str, Any] = field(default_factory=dict)
    calibration: list[Problem] = field(default_factory=list)

    @property
    def spec_name(self) -> str:
        """The strategy record whose call formula counts this run's calls."""
        return self.name if self.name in SPECS else self.strategy


def study_runs(names: Iterable[str]) -> list[str]:
    """Typed strategy names (either spelling) as the run folders that record them: ``lase`` is
    recorded as ``lase-full`` (the chapters replay it); unknown names are an error listing the valid ones."""
    from .names import display, resolve

    valid = {n: n for n in recorded(every=True)}
    valid.update({n: s.replayed_from for n, s in SPECS.items() if s.replayed_from})
    out: list[str] = []
    for typed in names:
        name = valid[resolve(typed, valid, "strategy")]
        if name not in out:
            out.append(name)
    if "lase-full" in out:  # the run every chapter needs goes first
        out.remove("lase-full")
        out.insert(0, "lase-full")
    if not out:
        raise ConfigError(f"no strategies to record; pass --strategies with some of {', '.join(map(display, recorded(every=True)))}")
    return out


def plan_runs(names: Sequence[str], base: StrategyConfig, problems: Sequence[Problem], *,
              baseline_problems: Sequence[Problem] | None = None,
              calibration: Sequence[Problem] = ()) -> list[RunPlan]:
    """A plan per run folder in ``names`` (:func:`lase_nb.strategies.recorded` names): its strategy
    and config from its record (``SPECS[name].recording``), the full-chain run on ``problems``, the
    others on ``baseline_problems`` (default the same), DOWN with its ``calibration`` problems."""
    plans = []
    for name in names:
        if name not in SPECS or SPECS[name].run is None:
            raise ConfigError(f"cannot record {name!r}; use some of {', '.join(recorded(every=True))}")
        strategy, cfg = SPECS[name].recording(base)
        probs = problems if cfg.full_chain or baseline_problems is None else baseline_problems
        plans.append(RunPlan(name, strategy, cfg, list(probs),
                             calibration=list(calibration) if strategy == "down" else []))
    return plans


def down_calibration_problems(dataset: str, data_path: str | None, n: int, seed: int,
                              evaluated: Sequence[Problem], levels: Sequence[int] | None = None,
                              split: str | None = None, fields: dict[str, str] | None = None) -> list[Problem]:
    """``n`` problems on which DOWN's threshold is chosen: drawn with ``seed + 1000`` and none of
    them among the ``evaluated`` questions (fewer when the data set runs out)."""
    from .datasets import load_dataset

    if n <= 0:
        return []
    seen = {p.question for p in evaluated}
    pool = load_dataset(dataset, data_path, 3 * n, seed + 1000, levels=levels, split=split, fields=fields)
    return [p for p in pool if p.question not in seen][:n]


def calibrate_down(cfg: StrategyConfig, engine: Engine, calibration: Sequence[Problem], seed: int,
                   window: int = 32) -> tuple[StrategyConfig, dict[str, Any]]:
    """DOWN's threshold by :data:`lase_nb.replay.DOWN_THRESHOLD_RULE` on ``calibration`` problems
    (each debated, so every threshold can be scored); returns the config and the manifest field."""
    from .answers import grade
    from .replay import DOWN_THRESHOLD_RULE, choose_down_threshold, down_threshold_table
    from .runner import run_problems

    always = run_problems("down", calibration, engine, replace(cfg, down_threshold=1.0), window=window,
                          progress=False)
    first = [grade(r.extra["first_answer"], p.gold, p.kind) for r, p in zip(always, calibration)]
    scores = [r.extra["score"] for r in always]
    debated = [r.correct for r in always]
    theta = choose_down_threshold(scores, first, debated)
    table = down_threshold_table(scores, first, debated)
    tqdm.write(f"down: theta {theta:.3f} chosen on {len(calibration)} calibration problems")
    return replace(cfg, down_threshold=theta), {"down_threshold": {
        "theta": theta, "rule": DOWN_THRESHOLD_RULE, "calibration_seed": seed + 1000,
        "calibration_n": len(calibration), "calibration_ids": [p.id for p in calibration],
        "table": table.round(4).to_dict(orient="records")}}


# ---------------------------------------------------------------------------------- the plan


def _calibration_calls(cfg: StrategyConfig) -> int:
    """Calls DOWN makes on one calibration problem: it always debates there."""
    return cfg.n_agents * (cfg.down_rounds + 1) + (cfg.down_final == "judge")


def planned_calls(plan: RunPlan) -> dict[str, Any]:
    """The run's calls from its call formula: ``per_problem`` (the formula's text), ``bound`` (per
    problem), ``calls`` (all problems), ``exact`` (every problem makes them; else an upper bound) and
    ``calibration_calls`` (DOWN's calibration, exact). Answer-extraction steps are not counted."""
    f = SPECS[plan.spec_name].calls(asdict(plan.config))
    return {"per_problem": f.text, "bound": f.bound, "calls": int(round(f.bound * len(plan.problems))),
            "exact": f.exact, "calibration_calls": len(plan.calibration) * _calibration_calls(plan.config)}


@dataclass(frozen=True)
class Rate:
    """One run's recorded rates: calls per problem (extraction steps included) against its
    formula's ``bound``, and input, cached input and output tokens per call."""

    calls: float
    bound: float
    input: float
    cached: float
    output: float


@dataclass
class Rates:
    """Recorded rates by run folder name, and where they come from (said in the plan): ``model``
    and ``dataset`` whose calls they are (None: the study's own, a pilot), and with a pilot the
    ``seconds_per_call`` it took and how that was measured (``timing``)."""

    by_run: dict[str, Rate]
    source: str
    model: str | None = None
    dataset: str | None = None
    seconds_per_call: float | None = None
    timing: str = ""

    def for_plan(self, plan: RunPlan) -> tuple[float, Rate | None]:
        """(expected calls per problem, per-call rate) for a plan: the recorded calls per problem
        scaled by the ratio of the two formulas' bounds; a run the rates lack takes its bound and
        the mean per-call rate of the others."""
        bound = planned_calls(plan)["bound"]
        rate = self.by_run.get(plan.name) or self.by_run.get(plan.strategy)
        if rate is not None:
            return (rate.calls * bound / rate.bound if rate.bound else bound), rate
        if not self.by_run:
            return bound, None
        calls = sum(r.calls for r in self.by_run.values())
        mean = Rate(bound, bound, *(sum(getattr(r, k) * r.calls for r in self.by_run.values()) / calls
                                    for k in ("input", "cached", "output")))
        return bound, mean


def rates_from_runs(runs: Mapping[str, traces.Run], source: str, min_prefix: int = 0) -> Rates:
    """Per run (by folder name), its calls per problem and tokens per call, from finished runs
    (every call, the full chain's included); cached input as :func:`lase_nb.costs.cost_table` counts it."""
    out = {}
    for name, run in runs.items():
        if run.calls.empty or run.problems.empty:
            continue
        t = cost_table(run.calls.assign(_all="all"), by="_all", used_only=False, min_prefix=min_prefix).iloc[0]
        spec = SPECS.get(name) or SPECS.get(str(run.manifest.get("strategy")))
        bound = spec.calls(run.manifest.get("config") or {}).bound if spec else 0.0
        n_calls = float(t["calls"])
        out[name] = Rate(n_calls / len(run.problems), bound, t["input_tokens"] / n_calls,
                         t["cached_input_tokens"] / n_calls, t["output_tokens"] / n_calls)
    return Rates(out, source)


_RATES: dict[tuple[str, int, float], Rates] = {}


def rates_from_folder(folder: str | Path, min_prefix: int = 0) -> Rates:
    """:func:`rates_from_runs` of a recorded study (its finished run folders), named by its model and
    data set (kept in memory while its manifests are unchanged)."""
    from .runs import resolve_data_path

    where = resolve_data_path(folder)
    stamp = max((p.stat().st_mtime for p in Path(where).glob("*/manifest.json")), default=0.0)
    key = (str(Path(where).resolve()), min_prefix, stamp)
    if key not in _RATES:
        _RATES[key] = _rates_from_folder(folder, min_prefix)
    return _RATES[key]


def _rates_from_folder(folder: str | Path, min_prefix: int) -> Rates:
    from .runs import load_runs

    runs = load_runs(folder)
    if not runs:
        raise ConfigError(f"no finished runs in {folder} to take token rates from; pass --rates with a "
                          f"recorded study, or --pilot K to measure them on your model")
    m = next(iter(runs.values())).manifest
    examples = (m.get("config") or {}).get("examples")
    what = f"{m.get('model', 'unknown model')} on {m.get('dataset', 'unknown data')}"
    if examples:
        what += f" with {examples} worked example{'s' if examples != 1 else ''}"
    rates = rates_from_runs(runs, f"recorded rates of {what} ({folder})", min_prefix)
    return replace(rates, model=m.get("model"), dataset=m.get("dataset"))


def pilot_rates(engine: Engine, plans: Sequence[RunPlan], k: int, window: int = 32,
                min_prefix: int = 0) -> Rates:
    """Rates measured on the first ``k`` problems of each run (DOWN at its config's threshold,
    without calibration). The calls go through the engine's cache, so the study reuses them."""
    from .runner import run_problems
    from .runs import run_from_results

    if k < 1:
        raise ConfigError(f"--pilot must be a positive number of problems (got {k})")
    runs = {}
    made_before, t0 = engine.stats.model_calls, time.perf_counter()
    latencies: list[float] = []
    for plan in plans:
        probs = plan.problems[:k]
        results = run_problems(plan.strategy, probs, engine, plan.config, window=window, progress=False)
        latencies += [c.latency_s for r in results for c in list(r.calls) + list(r.recording_calls)]
        runs[plan.name] = run_from_results(results, probs, {"strategy": plan.strategy,
                                                            "config": asdict(plan.config)})
    rates = rates_from_runs(runs, f"a pilot on the first {k} problem{'s' if k != 1 else ''} of each run "
                                  f"({engine.backend.model}; reused from the cache)", min_prefix)
    return replace(rates, **pilot_timing(engine.stats.model_calls - made_before, time.perf_counter() - t0, latencies))


def pilot_timing(made: int, wall_s: float, latencies: Sequence[float]) -> dict[str, Any]:
    """Seconds per call from a pilot: its wall time over the model calls it made, or, when every
    call came from the cache, the calls' recorded latency (each as if sent alone: an upper bound
    where calls ran at once). Empty when neither is known."""
    if made > 0:
        return {"seconds_per_call": wall_s / made,
                "timing": f"the pilot's {made} model call{'s' if made != 1 else ''} in {wall_s:.0f} s"}
    if latencies and sum(latencies) > 0:
        return {"seconds_per_call": sum(latencies) / len(latencies),
                "timing": f"at most: the recorded time of the pilot's {len(latencies)} calls in the cache, "
                          f"one at a time"}
    return {}


def plan_table(plans: Sequence[RunPlan], rates: Rates | None = None, price: Price | None = None) -> pd.DataFrame:
    """One row per run (and one per DOWN calibration): problems, the call formula, calls (exact or
    an upper bound), the expected calls, and with ``rates`` the estimated input, cached input and
    output tokens; with ``price`` their dollars without and with the cached-input discount."""
    rows = []
    for plan in plans:
        c = planned_calls(plan)
        expected, rate = rates.for_plan(plan) if rates is not None else (c["bound"], None)
        row = {"run": plan.name, "problems": len(plan.problems), "per_problem": c["per_problem"],
               "calls": c["calls"], "exact": c["exact"], "expected_calls": expected * len(plan.problems)}
        rows.append((row, rate))
        if plan.calibration:
            cal = {"run": f"{plan.name} (calibration)", "problems": len(plan.calibration),
                   "per_problem": f"n (R + 1) = {_calibration_calls(plan.config)}, always debated",
                   "calls": c["calibration_calls"], "exact": True, "expected_calls": float(c["calibration_calls"])}
            rows.append((cal, rate))
    out = []
    for row, rate in rows:
        if rate is not None:
            n = row["expected_calls"]
            row.update(input_tokens=n * rate.input, cached_input_tokens=n * rate.cached,
                       output_tokens=n * rate.output)
            if price is not None:
                row["usd"] = (row["input_tokens"] * price.input + row["output_tokens"] * price.output) / 1e6
                row["usd_cached"] = ((row["input_tokens"] - row["cached_input_tokens"]) * price.input
                                     + row["cached_input_tokens"] * price.cached_input
                                     + row["output_tokens"] * price.output) / 1e6
        out.append(row)
    return pd.DataFrame(out)


def format_plan(table: pd.DataFrame, rates: Rates | None = None, price: Price | None = None,
                header: str = "", model: str | None = None, dataset: str | None = None) -> str:
    """The plan as printed before a study: the table, its totals and where each estimate comes
    from (with :func:`estimate_note` for the study's ``model`` and ``dataset``), the expected wall
    time where the rates carry seconds per call, and :func:`calibration_note`."""
    show = pd.DataFrame({"run": table["run"], "problems": table["problems"], "calls per problem": table["per_problem"],
                         "calls": [f"{c}" if e else f"<= {c}" for c, e in zip(table["calls"], table["exact"])]})
    if "input_tokens" in table:
        show["expected calls"] = table["expected_calls"].round().astype(int)
        show["input tokens"] = table["input_tokens"].round().astype("Int64")
        show["output tokens"] = table["output_tokens"].round().astype("Int64")
    if "usd" in table:
        show["$"] = table["usd"].map(lambda v: f"{v:.4f}")
        show["$ cached"] = table["usd_cached"].map(lambda v: f"{v:.4f}")
    total = int(table["calls"].sum())
    lines = [header] if header else []
    lines += [show.to_string(index=False), "",
              f"calls: {'' if table['exact'].all() else 'at most '}{total} "
              f"(answer-extraction steps not counted: at most one more per graded reply without \\boxed{{}})"]
    if "input_tokens" in table:
        note = estimate_note(rates, model, dataset)
        lines.append(f"tokens, expected: {table['input_tokens'].sum():,.0f} input ({table['cached_input_tokens'].sum():,.0f} "
                     f"of them cached input, estimated), {table['output_tokens'].sum():,.0f} output; from "
                     f"{rates.source if rates else 'recorded rates'}" + (f"; {note}" if note else ""))
    else:
        lines.append("tokens: no estimate (no recorded rates; --pilot K measures them on your model)")
    if "usd" in table and price is not None:
        lines.append(f"dollars, expected: ${table['usd'].sum():.4f}, ${table['usd_cached'].sum():.4f} with the "
                     f"cached-input discount, at {price.label()}")
    if rates is not None and rates.seconds_per_call:
        calls = float(table["expected_calls"].sum())
        lines.append(f"time, expected: {duration(calls * rates.seconds_per_call)} ({calls:,.0f} calls at "
                     f"{rates.seconds_per_call:.2g} s a call; {rates.timing})")
    note = calibration_note(table)
    if note:
        lines.append(note)
    return "\n".join(lines)


def estimate_note(rates: Rates | None, model: str | None, dataset: str | None) -> str | None:
    """The next step when the token estimate is another model's or data set's (the committed
    recording's, say): ``--pilot`` measures the study's own. None when they match or are unknown."""
    if rates is None or (rates.model is None and rates.dataset is None):
        return None
    other = [f"{mine} is not {theirs}" for mine, theirs in ((model, rates.model), (dataset, rates.dataset))
             if mine and theirs and mine != theirs]
    if not other:
        return None
    return (f"{' and '.join(other)}, so these rates may be far off: run with --pilot 2 first to measure "
            f"your model's (the study then reuses the pilot's calls)")


#: DOWN's calibration is named in the plan when it takes at least this share of the calls.
CALIBRATION_SHARE = 1 / 3


def calibration_note(table: pd.DataFrame, share: float = CALIBRATION_SHARE) -> str | None:
    """When DOWN's threshold calibration is a large part of a small study (at least ``share`` of
    the planned calls), say so and name ``--n-down-calibration``."""
    cal = table[table["run"].str.endswith("(calibration)")]
    total = int(table["calls"].sum())
    if cal.empty or not total or cal["calls"].sum() < share * total:
        return None
    calls, problems = int(cal["calls"].sum()), int(cal["problems"].sum())
    return (f"DOWN's threshold calibration ({problems} problems, each debated) is {calls} of the {total} calls "
            f"({calls / total:.0%}): --n-down-calibration N chooses it on fewer problems (0: no calibration, "
            f"DOWN keeps its configured threshold)")


def duration(seconds: float) -> str:
    """``"45 s"``, ``"7 min"``, ``"2 h 5 min"``: a wall time as a reader says it."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 120 else f"{minutes // 60} h {minutes % 60} min"


def capped_note(asked: int, got: int, dataset: str, data_path: str | None = None) -> str | None:
    """``--n`` larger than the data set: how many problems the study records instead."""
    if got >= asked:
        return None
    where = f"{dataset} ({data_path})" if data_path else dataset
    return f"--n {asked}: {where} has {got} problem{'s' if got != 1 else ''} here, so the study records {got}"


def whole_numbers(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with counts printed as integers: token columns rounded (cached input may be
    estimated) and every other float column whose values are all whole, as integers."""
    out = table.copy()
    for col in out.columns:
        values = out[col]
        if not pd.api.types.is_float_dtype(values):
            continue
        if "tokens" in str(col) or (values.dropna() == values.dropna().round()).all():
            out[col] = values.round().astype("Int64")
    return out


# ---------------------------------------------------------------------------------- recording


def answer_distribution(results: Sequence[ProblemResult]) -> dict[str, Any]:
    """Per role (the extraction step apart), how many answers and the most common ones: a value
    that dominates (an example's answer copied) shows here first."""
    by_role: dict[str, Counter] = {}
    for r in results:
        for c in list(r.calls) + list(r.recording_calls):
            if c.answer is not None:
                by_role.setdefault(c.role, Counter())[c.answer] += 1
    return {role: {"n": sum(cnt.values()), "top": cnt.most_common(5),
                   "top_share": round(cnt.most_common(1)[0][1] / sum(cnt.values()), 4)}
            for role, cnt in by_role.items()}


@dataclass
class _WatchedEngine(Engine):
    """The study's engine: the same backend, cache and counters, and a hook on every answered call."""

    on_answer: Callable[[Generation], None] | None = None

    def stream(self, more, on_result) -> None:  # type: ignore[no-untyped-def]
        def answered(tag: Any, gen: Generation) -> None:
            if self.on_answer is not None:
                self.on_answer(gen)
            on_result(tag, gen)

        super().stream(more, answered)


class _Bar:
    """One progress bar over the study's model calls. Its total is the expected calls not yet
    answered plus those made: a call answered from the cache leaves the total (it costs no time),
    and a finished problem trades its expected calls for those it made, so tqdm's rate (model
    calls per second, averaged since the start) and ETA hold from the first problems on."""

    def __init__(self, expected: float, enabled: bool) -> None:
        self.bar = tqdm(total=max(int(round(expected)), 1), unit="call", disable=not enabled, smoothing=0,
                        dynamic_ncols=True)
        self.expected = float(expected)
        self.hits = self.made = 0
        self.shown = time.monotonic()

    def answer(self, gen: Generation) -> None:
        if gen.cached:
            self.hits += 1
        else:
            self.made += 1
        self._show(step=0 if gen.cached else 1)

    def finished(self, expected_calls: float, made_calls: int) -> None:
        self.expected += made_calls - expected_calls
        self._show()

    def _show(self, step: int = 0) -> None:
        if self.bar.disable:
            return
        self.bar.total = max(int(round(self.expected)) - self.hits, self.made, 1)
        self.bar.set_postfix({"from cache": self.hits}, refresh=False)
        if step:
            self.bar.update(step)  # redraws at tqdm's own pace
        elif time.monotonic() - self.shown >= self.bar.mininterval:
            self.shown = time.monotonic()
            self.bar.refresh()

    def close(self) -> None:
        self.bar.close()


def record_study(engine: Engine, plans: Sequence[RunPlan], out: str | Path, fields: Mapping[str, Any], *,
                 rates: Rates | None = None, window: int = 32, progress: bool = True,
                 show_answers: bool = False, label: str | None = None) -> dict[str, list[ProblemResult]]:
    """Record every planned run under ``out`` (one folder each, :func:`lase_nb.traces.write_run`) and
    write ``study.json``. ``fields`` go into every manifest before the run's own (``command``,
    ``backend``, ``model``, ``dataset``, ``seed``, ...; ``split`` is written last as the recordings
    always had it). Calls go through ``engine``'s cache: a rerun after an interruption makes no
    finished call again. Returns each run's results by folder name."""
    from .notes import count_answer_notes
    from .runner import run_problems

    out = traces.check_writable(out)
    watched = _WatchedEngine(engine.backend, engine.cache, engine.stats)
    per_problem = {}
    expected_total = 0.0
    for plan in plans:
        c = planned_calls(plan)
        calls_pp = rates.for_plan(plan)[0] if rates is not None else c["bound"]
        per_problem[plan.name] = calls_pp
        expected_total += calls_pp * len(plan.problems) + c["calibration_calls"]
    bar = _Bar(expected_total, progress)
    watched.on_answer = bar.answer
    head = {k: v for k, v in fields.items() if k not in ("split",)}
    done: dict[str, list[ProblemResult]] = {}
    try:
        for plan in plans:
            bar.bar.set_description(plan.name, refresh=False)
            t0 = time.perf_counter()
            cfg, extra = plan.config, {}
            if plan.calibration:
                cfg, extra = calibrate_down(cfg, watched, plan.calibration, int(fields.get("seed", 0) or 0), window)
            expected = per_problem[plan.name]

            def finished(res: ProblemResult, expected: float = expected) -> None:
                bar.finished(expected, len(res.calls) + len(res.recording_calls))

            results = run_problems(plan.strategy, plan.problems, watched, cfg, window=window, progress=False,
                                   on_result=finished)
            wall = time.perf_counter() - t0
            answers = answer_distribution(results)
            before = {k: head[k] for k in head if k not in _AFTER_N}
            after = {k: head[k] for k in head if k in _AFTER_N}
            manifest = traces.provenance(
                **{k: before[k] for k in before if k == "command"}, strategy=plan.strategy, run_name=plan.name,
                **{k: v for k, v in before.items() if k != "command"}, n=len(plan.problems), **after,
                config=asdict(cfg), engine=asdict(engine.stats), wall_s=round(wall, 1), answers=answers,
                notes_stating_answer=count_answer_notes(traces.call_rows(results), traces.stage_rows(results),
                                                        plan.problems),
                **{**plan.manifest, **extra})
            if fields.get("split"):
                manifest["split"] = fields["split"]
            traces.write_run(Path(out) / plan.name, results, plan.problems, manifest)
            done[plan.name] = results
            acc = sum(r.correct for r in results) / len(results) if results else float("nan")
            tqdm.write(f"{plan.name}: {len(plan.problems)} problems in {wall:.0f} s, accuracy {acc:.3f}")
            if show_answers:
                for role, d in answers.items():
                    tqdm.write(f"  {role:>13}: {d['n']} answers, most common {d['top'][:3]} "
                               f"(top share {d['top_share']:.0%})")
    finally:
        bar.close()
    _write_study(Path(out), plans, fields, label)
    return done


def _study_meta(out: str | Path) -> dict[str, Any]:
    """What an earlier command wrote into the study's ``study.json`` ({} when nothing readable)."""
    try:
        meta = json.loads((Path(out) / STUDY_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def recorded_label(out: str | Path) -> str | None:
    """The label an earlier command wrote into the study's ``study.json`` (None when none)."""
    label = _study_meta(out).get("label")
    return str(label) if label else None


#: Manifest fields written after ``n`` (the order the recordings have).
_AFTER_N = ("levels", "model_files", "seed", "data_path", "data_fields", "label")


def _write_study(out: Path, plans: Sequence[RunPlan], fields: Mapping[str, Any], label: str | None) -> None:
    """``study.json``: what the study is (label, backend, model, dtype, data set, n, runs). A study
    recorded in several commands keeps what an earlier one wrote: its label (unless this one names
    one) and its runs beside this command's."""
    keep = ("backend", "model", "base_url", "dtype", "dataset", "data_path", "data_fields", "levels", "split", "seed",
            "command")
    before = _study_meta(out)
    runs = {**(before.get("runs") if isinstance(before.get("runs"), dict) else {}),
            **{p.name: {"strategy": p.strategy, "n": len(p.problems)} for p in plans}}
    study = {"label": label or before.get("label") or str(fields.get("model", out.name)),
             **{k: fields[k] for k in keep if fields.get(k) is not None},
             "n": max([len(p.problems) for p in plans] + [r.get("n", 0) for r in runs.values() if isinstance(r, dict)],
                      default=0),
             "runs": runs}
    traces._atomic_write(out / STUDY_FILE, json.dumps(study, indent=2, default=str) + "\n")
