"""What a run costs, in tokens or in dollars: a price sheet, cached input, one cost table.

- :class:`Price`, :func:`load_prices`, :func:`price_for`: dollars per million input, cached-input
  and output tokens, per model, from an editable JSON sheet (``data/prices.json`` by default; a
  user passes their own with ``--prices``);
- :func:`cached_input`: the input tokens of each call that a provider bills at the cached rate:
  the provider's own count where it reported one (``cached_tokens``: OpenAI-compatible
  ``usage.prompt_tokens_details.cached_tokens``, Gemini ``cached_content_token_count``), else an
  estimate, the prompt prefix the call shares with an earlier call of the same problem
  (:func:`estimate_shared_prefix`);
- :func:`cost_table`: a calls table (:mod:`lase_nb.traces`) turned into tokens or dollars per
  strategy (or role), with and without the cached-input discount;
- :func:`gated_calls`: the calls gated LASE makes at other thresholds, from a full-chain recording.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from .errors import ConfigError
from .paths import DATA_DIR

__all__ = ["Price", "PRICES_PATH", "load_prices", "price_for", "estimate_shared_prefix", "cached_input",
           "cost_table", "gated_calls", "billed_calls", "dollar_comparison", "describe_dollars", "dollars", "UNITS"]

#: The price sheet shipped with the repository (public list prices, dated: an example to edit).
PRICES_PATH = DATA_DIR / "prices.json"
#: The units :func:`cost_table` reports in.
UNITS = ("tokens", "dollars")

#: Roles whose prompt starts with the single-agent prompt (instruction, worked examples, problem).
_SOLVER_PREFIX_ROLES = frozenset({"leader", "solver", "sample", "debater"})
_EXTRACT_ROLE = "extract"


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens for one model. ``min_cached_prefix``: the shortest shared prefix
    (tokens) the provider caches at all (OpenAI: 1,024); estimated prefixes below it count as uncached."""

    model: str
    input: float
    cached_input: float
    output: float
    min_cached_prefix: int = 0
    source: str = ""
    date: str = ""

    def label(self) -> str:
        """``"gpt-4.1-mini: $0.40 in, $0.10 cached, $1.60 out per 1M tokens (OpenAI list price, 2025-26)"``."""
        where = ", ".join(x for x in (self.source, self.date) if x)
        return (f"{self.model}: {_usd(self.input)} in, {_usd(self.cached_input)} cached, {_usd(self.output)} out "
                f"per 1M tokens" + (f" ({where})" if where else ""))


def _usd(x: float) -> str:
    """``$0.40``, ``$0.025``: two decimals unless the price needs more."""
    return f"${x:.2f}" if round(x, 2) == x else f"${x:.3f}"


def load_prices(path: str | Path | None = None) -> dict[str, Price]:
    """The price sheet at ``path`` (default :data:`PRICES_PATH`): model name -> :class:`Price`.

    The file is JSON: ``{"models": {"NAME": {"input": 0.4, "cached_input": 0.1, "output": 1.6,
    "min_cached_prefix": 1024, "source": "...", "date": "..."}}}``, dollars per million tokens;
    ``cached_input`` defaults to ``input`` (no discount)."""
    p = Path(path).expanduser() if path is not None else PRICES_PATH
    try:
        sheet = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"no price sheet at {p}; pass --prices with a JSON file like {PRICES_PATH}") from None
    except json.JSONDecodeError as e:
        raise ConfigError(f"price sheet {p} is not valid JSON ({e.msg}, line {e.lineno}); fix the file") from None
    models = sheet.get("models") if isinstance(sheet, dict) else None
    if not isinstance(models, dict):
        raise ConfigError(f'price sheet {p} has no "models" table; write {{"models": {{"MODEL": '
                          f'{{"input": ..., "cached_input": ..., "output": ...}}}}}}')
    out = {}
    for name, d in models.items():
        try:
            rate_in, rate_out = float(d["input"]), float(d["output"])
            rate_cached = float(d.get("cached_input", rate_in))
            floor = int(d.get("min_cached_prefix", 0))
        except (KeyError, TypeError, ValueError) as e:
            raise ConfigError(f"price sheet {p}: model {name!r} needs numbers for input and output "
                              f"(dollars per million tokens) ({type(e).__name__}: {e})") from None
        if min(rate_in, rate_out, rate_cached) < 0 or floor < 0:
            raise ConfigError(f"price sheet {p}: model {name!r} has a negative price or prefix; fix the file")
        out[str(name)] = Price(str(name), rate_in, rate_cached, rate_out, floor, str(d.get("source", "")),
                               str(d.get("date", "")))
    return out


def price_for(model: str, prices: Mapping[str, Price] | str | Path | None = None) -> Price:
    """The price of ``model`` from a sheet (a loaded mapping, or a path; default the shipped sheet).
    A model missing from the sheet is an error that says how to add it."""
    sheet = prices if isinstance(prices, Mapping) else load_prices(prices)
    if model in sheet:
        return sheet[model]
    where = prices if isinstance(prices, (str, Path)) else PRICES_PATH
    raise ConfigError(f"no price for model {model!r} in the price sheet ({', '.join(sheet) or 'empty'}); add "
                      f'"{model}": {{"input": ..., "cached_input": ..., "output": ...}} to a copy of {where} '
                      f"and pass it with --prices")


def dollars(input_tokens: float, cached_tokens: float, output_tokens: float, price: Price,
            discount: bool = True) -> float:
    """Dollars for these token counts; with ``discount`` the cached part of the input is billed at
    the cached rate, without it every input token at the full rate."""
    cached = cached_tokens if discount else 0.0
    return ((input_tokens - cached) * price.input + cached * price.cached_input
            + output_tokens * price.output) / 1e6


def _keys(calls: pd.DataFrame) -> list[str]:
    return [k for k in ("strategy", "problem_id") if k in calls]


def estimate_shared_prefix(calls: pd.DataFrame) -> pd.Series:
    """Per call, the prompt tokens it shares with an earlier call of the same problem (table order):
    an estimate of the input a provider's prompt cache would serve.

    From the prompts' structure (:mod:`lase_nb.prompts`), with no text needed: a leader, solver,
    sample or debater prompt starts with the single-agent prompt, so after the first one of a
    problem each shares that prompt's tokens (the stage-0 call's ``prompt_tokens``); an
    answer-extraction step repeats its call's whole prompt; MoA's proposers of one layer after the
    first share one prompt. Supporters, the aggregator and DOWN's judge open with their own
    instruction and count 0. Calls sent together count as if sent one after the other, so this is an
    upper estimate for them; prefixes shared only across problems (worked examples) are not counted.
    """
    if calls.empty:
        return pd.Series(dtype=float, index=calls.index)
    pt = calls["prompt_tokens"].astype(float).to_numpy()
    roles = calls["role"].astype(str).to_numpy()
    stages = calls["stage"].to_numpy() if "stage" in calls else [0] * len(calls)
    agents = calls["agent"].astype(str).to_numpy() if "agent" in calls else [""] * len(calls)
    est = [0.0] * len(calls)
    keys = _keys(calls)
    positions = (calls.reset_index(drop=True).groupby(keys, sort=False).indices.values() if keys
                 else [range(len(calls))])
    for idx in positions:
        solver_prompt: float | None = None
        seen_solver = False
        last_by_agent: dict[tuple[Any, Any], float] = {}
        proposer_stages: set[Any] = set()
        for i in sorted(idx):
            role, stage, agent = roles[i], stages[i], agents[i]
            if role == _EXTRACT_ROLE:
                est[i] = min(last_by_agent.get((agent, stage), 0.0), pt[i])
                if solver_prompt is not None:
                    seen_solver = True
                continue
            last_by_agent[(agent, stage)] = pt[i]
            if role in _SOLVER_PREFIX_ROLES or (role == "proposer" and stage == 0):
                if solver_prompt is None:
                    solver_prompt = pt[i]
                if seen_solver:
                    est[i] = min(solver_prompt, pt[i])
                seen_solver = True
            elif role == "proposer":
                if stage in proposer_stages:
                    est[i] = pt[i]
                proposer_stages.add(stage)
    return pd.Series(est, index=calls.index, dtype=float)


def cached_input(calls: pd.DataFrame, min_prefix: int = 0) -> pd.DataFrame:
    """``calls`` with ``cached_input`` (tokens billed at the cached rate) and ``cached_source``
    (``"reported"`` where the provider counted them, ``"estimated"`` elsewhere). An estimated prefix
    shorter than ``min_prefix`` tokens counts 0 (the provider would not cache it)."""
    out = calls.copy()
    est = estimate_shared_prefix(calls)
    if min_prefix:
        est = est.where(est >= min_prefix, 0.0)
    reported = (pd.to_numeric(calls["cached_tokens"], errors="coerce") if "cached_tokens" in calls
                else pd.Series(math.nan, index=calls.index))
    out["cached_input"] = reported.where(reported.notna(), est).astype(float)
    out["cached_source"] = ["reported" if ok else "estimated" for ok in reported.notna()]
    return out


def cost_table(calls: pd.DataFrame, price: Price | None = None, *, unit: str = "tokens",
               by: str | Sequence[str] = "strategy", used_only: bool = True,
               per_problem: bool = False, min_prefix: int | None = None) -> pd.DataFrame:
    """A run's calls table as cost, one row per ``by`` group (``"strategy"``, ``"role"``, ...).

    ``unit="tokens"``: problems, calls, input_tokens, cached_input_tokens (:func:`cached_input`),
    output_tokens, total_tokens, cached_share and cached_source (reported, estimated or mixed).
    ``unit="dollars"`` (needs ``price``): problems, calls, usd (every input token at the full rate),
    usd_cached (the cached input at the cached rate) and saving (the share the discount saves).
    ``used_only``: only the calls the strategy used (a full-chain recording's calls past the stop
    are left out). ``per_problem``: token and dollar columns divided by the group's problems.
    ``min_prefix``: the shortest estimated prefix counted as cached (default the price's
    ``min_cached_prefix``, 0 without a price; pass 0 to see what a cache of any prefix would save).
    """
    if unit not in UNITS:
        raise ConfigError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")
    if unit == "dollars" and price is None:
        raise ConfigError("a cost in dollars needs a price: pass price=price_for(model) (see data/prices.json)")
    by = [by] if isinstance(by, str) else list(by)
    missing = [c for c in (*by, "prompt_tokens", "completion_tokens", "role") if c not in calls]
    if missing:
        raise ConfigError(f"the calls table has no column {', '.join(missing)}; pass a run's calls table "
                          f"(lase_nb.traces.load_run(...).calls)")
    rows = calls
    if used_only and "used" in rows:
        rows = rows[rows["used"].astype(bool)]
    if min_prefix is None:
        min_prefix = price.min_cached_prefix if price is not None else 0
    rows = cached_input(rows, min_prefix)
    pid = rows["problem_id"] if "problem_id" in rows else pd.Series(0, index=rows.index)
    g = rows.assign(_pid=pid).groupby(by, sort=False)
    t = pd.DataFrame({
        "problems": g["_pid"].nunique(), "calls": g.size(),
        "input_tokens": g["prompt_tokens"].sum().astype(float),
        "cached_input_tokens": g["cached_input"].sum().astype(float),
        "output_tokens": g["completion_tokens"].sum().astype(float)})
    sources = g["cached_source"].agg(lambda s: s.iloc[0] if s.nunique() == 1 else "mixed")
    cols = ["input_tokens", "cached_input_tokens", "output_tokens"]
    if per_problem:
        t[cols] = t[cols].div(t["problems"], axis=0)
    if unit == "tokens":
        t["total_tokens"] = t["input_tokens"] + t["output_tokens"]
        t["cached_share"] = (t["cached_input_tokens"] / t["input_tokens"]).where(t["input_tokens"] > 0, 0.0)
        t["cached_source"] = sources
        return t
    assert price is not None
    full = (t["input_tokens"] * price.input + t["output_tokens"] * price.output) / 1e6
    disc = ((t["input_tokens"] - t["cached_input_tokens"]) * price.input
            + t["cached_input_tokens"] * price.cached_input + t["output_tokens"] * price.output) / 1e6
    return pd.DataFrame({"problems": t["problems"], "calls": t["calls"], "usd": full, "usd_cached": disc,
                         "saving": ((full - disc) / full).where(full > 0, 0.0), "cached_source": sources})


def gated_calls(calls: pd.DataFrame, stops: pd.DataFrame | Mapping[str, int]) -> pd.DataFrame:
    """The calls of a full-chain LASE recording that gated LASE would make when each problem stops
    at ``stops`` (``problem_id -> stop stage``, or :func:`lase_nb.replay.replay`'s table): every
    call of a stage up to the stop, marked used. Feed the result to :func:`cost_table`."""
    if isinstance(stops, pd.DataFrame):
        stops = dict(zip(stops["problem_id"].astype(str), stops["stop_stage"].astype(int)))
    stop = calls["problem_id"].astype(str).map(stops)
    if stop.isna().any():
        raise ConfigError(f"no stop stage for problems {sorted(set(calls['problem_id'][stop.isna()].astype(str)))[:3]}; "
                          "pass the replay table of the same recording")
    return calls[calls["stage"] <= stop].assign(used=True)


def billed_calls(runs: Mapping[str, Any], lase_now: pd.DataFrame | None = None) -> dict[str, pd.DataFrame]:
    """Each compared strategy's calls as an API bills them, by strategy: a recorded run's own calls;
    gated LASE's, those its gate makes when each problem stops where ``lase_now`` (its replay,
    :func:`lase_nb.replay.replay`) says (:func:`gated_calls`); ``lase-full``, every call of the full
    chain; the single agent, when no run of its own was recorded, the full chain's stage 0 (the
    leader alone, as :func:`lase_nb.tables.strategy_tables` takes it). ``runs``: runs by strategy
    (``lase`` = the full chain, as :func:`lase_nb.runs.load_runs` names it)."""
    billed = {s: r.calls for s, r in runs.items() if s not in ("lase", "lase-full")}
    full = runs.get("lase", runs.get("lase-full"))
    if full is not None:
        if lase_now is not None:
            billed["lase"] = gated_calls(full.calls, lase_now)
        billed["lase-full"] = full.calls.assign(used=True)
        if "single" not in runs:
            billed["single"] = gated_calls(full.calls, {str(p): 0 for p in full.calls["problem_id"].unique()})
    return billed


def dollar_comparison(calls: Mapping[str, pd.DataFrame], price: Price,
                      labels: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Per strategy (``calls``: its calls table by name), dollars per 1,000 problems at ``price``:
    every input token at the full rate, cached input at the cached rate (the provider's minimum
    cached prefix applied), the share that saves, and the share a cache of any prefix would save."""
    out = []
    for name, table in calls.items():
        rows = table.assign(strategy=name)
        at = cost_table(rows, price, unit="dollars", per_problem=True).iloc[0]
        anyp = cost_table(rows, price, unit="dollars", per_problem=True, min_prefix=0).iloc[0]
        out.append({"method": (labels or {}).get(name, name),
                    "$ / 1,000 problems": round(1000 * at["usd"], 2),
                    "with cached input": round(1000 * at["usd_cached"], 2),
                    "saving": f"{at['saving']:.0%}",
                    "saving, any prefix cached": f"{anyp['saving']:.0%}",
                    "_saved": float(at["saving"])})
    t = pd.DataFrame(out).set_index("method")
    nothing = bool((t.pop("_saved") == 0).all())
    if nothing:  # no prompt reaches the provider's cache floor: the two columns would repeat the first and 0%
        t = t.drop(columns=["with cached input", "saving"])
    t.attrs.update(price=price, nothing_cached=nothing)
    return t


def describe_dollars(table: pd.DataFrame) -> str:
    """A sentence for :func:`dollar_comparison`'s table: the price it used, and when the provider's
    minimum cached prefix keeps every prompt uncached, that the cached-input columns were left out."""
    price: Price = table.attrs["price"]
    head = f"At {price.label()}."
    if table.attrs.get("nothing_cached"):
        return (head + f" No prompt here shares a prefix of {price.min_cached_prefix:,} tokens or more with an earlier "
                "call, the shortest the provider caches, so cached input saves nothing on any strategy and its "
                "columns are left out; the last column is what a cache of any prefix would save.")
    return head
