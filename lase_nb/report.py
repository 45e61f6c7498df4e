"""Chapter logic for the pipeline (03) and comparison (04) notebooks.

Everything here reads the tidy tables of :mod:`lase_nb.traces` (one row per problem, per call,
per LASE stage) or :class:`lase_nb.analysis.Chains`, and returns tables or figures:

- transcripts: one problem's calls rendered readably (Markdown or HTML), with role, stage,
  confidence, answer and the supporters' removed ``\\boxed{}`` answers marked;
- the stage-by-stage confidence of one LASE chain, and where LASE stops at given thresholds;
- batch views: stop-stage distribution, per-stage confidence, supporter leaks;
- context inclusions counted from the calls' ``reads`` against the topology formulas;
- the comparison table of all strategies on their common problems, with bootstrap intervals,
  both token counts, multipliers and McNemar tests, and the paper's Table 1 beside it;
- a compute-matched view: majority vote over the first k recorded samples vs LASE thresholds.

Accuracies are fractions in [0, 1] (as in :mod:`lase_nb.stats`); the display helpers turn them
into percents, the paper's unit. Paper numbers come only from :mod:`lase_nb.reference`.
"""

from __future__ import annotations

import html
import math
import re
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from . import prompts, reference
from .analysis import Chains, stop_stages
from .answers import WITHHELD, find_boxed_spans, grade
from .confidence import uncertain_mask
from .errors import DataError
from .stats import bootstrap_ci, budget_matched, paired_test
from .strategies import majority_vote
from .traces import Run, call_rows, load_run, problem_rows, stage_rows

__all__ = [
    "STRATEGY_ORDER", "RUN_DIRS", "ROLE_TITLES", "label", "load_runs", "run_from_results", "problems_for_run",
    "role_table", "transcript_entries", "render_transcript", "stage_table", "pick_walkthrough", "pick_unboxed",
    "stop_distribution", "stage_confidence", "outcome_flips", "leak_table", "chain_outcomes",
    "inclusion_counts", "inclusion_bounds", "inclusion_summary", "escalation_rate", "comparison_table",
    "paper_reference", "comparison_display", "mv_subsample", "mv_curve", "mv_sample_rows", "lase_grid",
    "compute_matched", "seed_table", "claims_table", "split_by_coverage", "plot_stage_walk", "plot_batch", "plot_inclusions",
    "plot_accuracy_vs_tokens",
]

#: The comparison chapter's strategies, in display order ("lase" is replayed from ``lase-full``).
STRATEGY_ORDER = ("single", "mv", "mad", "moa", "down", "lase", "lase-full", "lase-mv", "lase-shuffled")
#: Run folder of each strategy under a traces folder.
RUN_DIRS = {"lase": "lase-full", **{s: s for s in STRATEGY_ORDER if s not in ("lase", "lase-full")}}
ROLE_TITLES = {"leader": "leader", "devil": "devil's advocate", "collaborator": "collaborator",
               "expert": "senior expert", "solver": "solver", "sample": "sample", "debater": "debater",
               "proposer": "proposer", "aggregator": "aggregator", "judge": "judge"}
SUPPORTERS = frozenset(prompts.SUPPORTERS)


def label(strategy: str, config: Mapping[str, Any] | None = None) -> str:
    """A readable name with the sizes that matter: ``MV(7)``, ``MAD(3x2)``, ``LASE+MV(5)``..."""
    c = dict(config or {})
    n, t = c.get("n_agents", 3), c.get("rounds", 2)
    return {
        "single": "single agent", "mv": f"MV({c.get('n_samples', 7)})", "mad": f"MAD({n}x{t})",
        "moa": f"MoA({c.get('moa_layers', 2)}x{c.get('moa_proposers', 3)})", "down": "DOWN",
        "lase": "LASE", "lase-full": "LASE, every stage", "lase-mv": f"LASE+MV({c.get('lase_chains', 5)})",
        "lase-shuffled": "LASE, shuffled order",
    }.get(strategy, strategy)


# ---------------------------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------------------------


def load_runs(folder: str | Path, strategies: Iterable[str] = tuple(RUN_DIRS)) -> tuple[dict[str, Run], list[str]]:
    """The finished runs under ``folder`` by strategy (``lase`` = the ``lase-full`` folder) and the missing names."""
    folder = Path(folder)
    runs, missing = {}, []
    for s in strategies:
        path = folder / RUN_DIRS.get(s, s)
        if (path / "manifest.json").exists():
            runs[s] = load_run(path)
        else:
            missing.append(s)
    return runs, missing


def run_from_results(results: Sequence, problems: Sequence, manifest: Mapping[str, Any] | None = None) -> Run:
    """The same tables :func:`lase_nb.traces.load_run` gives, built in memory from live results."""
    frames = {name: pd.DataFrame(rows(results)) for name, rows in
              (("calls", call_rows), ("stages", stage_rows))}
    return Run(Path("<live>"), dict(manifest or {}), pd.DataFrame(problem_rows(results, problems)),
               frames["calls"], frames["stages"])


def problems_for_run(manifest: Mapping[str, Any], data_path: str | None = None) -> dict[str, Any]:
    """The run's problems by id, regenerated from its manifest (data set, n, seed); {} if impossible."""
    from .datasets import load_dataset
    from .errors import LaseError
    try:
        probs = load_dataset(manifest.get("dataset", "arith"), data_path or manifest.get("data_path"),
                             manifest.get("n"), manifest.get("seed", 0))
    except (LaseError, OSError):
        return {}
    return {p.id: p for p in probs}


def role_table() -> pd.DataFrame:
    """The four LASE roles: what each sees and the instruction it gets (from :mod:`lase_nb.prompts`)."""
    sees = {"leader": "the problem (after worked examples); when revising, its last attempt and one note",
            "devil": "the problem and the leader's current attempt",
            "collaborator": "the problem, the current attempt and the critique",
            "expert": "the problem, the current attempt, the critique and the hints"}
    rows = [{"role": ROLE_TITLES["leader"], "sees": sees["leader"], "instruction": prompts.SOLVER_SYSTEM,
             "may write \\boxed{}": "yes"}]
    rows += [{"role": ROLE_TITLES[r], "sees": sees[r], "instruction": prompts.SUPPORTER_SYSTEM[r],
              "may write \\boxed{}": "no (removed and counted)"} for r in prompts.SUPPORTERS]
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# transcripts
# ---------------------------------------------------------------------------------------------


def _answer(x: Any) -> str | None:
    """A table cell as an answer string, None for missing (NaN/None)."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) or x is pd.NA else str(x)


def _num(x: Any) -> float | None:
    return None if x is None or pd.isna(x) else float(x)


def transcript_entries(calls: pd.DataFrame, problem_id: str, *, stop_stage: int | None = None,
                       tau_lp: float | None = None, tau_h: float | None = None,
                       gold: str | None = None, kind: str = "number") -> list[dict[str, Any]]:
    """One dict per call of ``problem_id`` in stage order: what :func:`render_transcript` draws.

    ``stop_stage`` marks calls after it as recorded-only (LASE at these thresholds would not
    have made them); without it the calls' ``used`` column decides. With thresholds, each leader
    answer carries its uncertainty event U.
    """
    rows = calls[calls["problem_id"] == problem_id]
    if rows.empty:
        raise DataError(f"no calls for problem {problem_id!r}")
    rows = rows.sort_values("stage", kind="stable")
    last_stage = int(rows["stage"].max())
    out = []
    for _, r in rows.iterrows():
        answer, p, h = _answer(r.get("answer")), _num(r.get("p_min")), _num(r.get("h_max"))
        is_answerer = r["role"] not in SUPPORTERS
        e = {"stage": int(r["stage"]), "role": r["role"], "title": ROLE_TITLES.get(r["role"], r["role"]),
             "agent": r.get("agent", r["role"]), "reads": list(r.get("reads") or []), "text": r.get("text") or "",
             "completion_tokens": int(r["completion_tokens"]), "prompt_tokens": int(r["prompt_tokens"]),
             "truncated": r.get("finish_reason") == "length", "leaked": int(r.get("leaked", 0) or 0),
             "answer": answer if is_answerer else None, "p_min": p, "h_max": h,
             "correct": None, "uncertain": None, "last": int(r["stage"]) == last_stage,
             "used": bool(r["stage"] <= stop_stage) if stop_stage is not None else bool(r.get("used", True))}
        if is_answerer and gold is not None:
            e["correct"] = grade(answer, gold, kind)
        if is_answerer and tau_lp is not None and tau_h is not None:
            e["uncertain"] = bool(uncertain_mask(np.array([np.nan if p is None else p]),
                                                 np.array([np.nan if h is None else h]), tau_lp, tau_h)[0])
        out.append(e)
    return out


def _clip(text: str, max_chars: int | None) -> str:
    text = text.strip()
    if max_chars is None or len(text) <= max_chars:
        return text
    return text[:max_chars].rstrip() + f" … [{len(text) - max_chars} more characters]"


def _mark_leaks(text: str, fmt: str, supporter: bool = True) -> str:
    """Escape for ``fmt`` and, in a supporter's text, highlight every boxed answer it wrote."""
    spans = find_boxed_spans(text) if supporter else []
    pieces, pos = [], 0
    for s, e in spans:
        pieces.append((text[pos:s], False))
        pieces.append((text[s:e], True))
        pos = e
    pieces.append((text[pos:], False))
    if fmt == "html":
        return "".join(f'<mark title="removed: the leader saw {html.escape(WITHHELD)}">{html.escape(t)}</mark>'
                       if leak else html.escape(t) for t, leak in pieces)
    return "".join(f"⟦LEAK {t}⟧" if leak else t for t, leak in pieces)


def _summary_line(e: Mapping[str, Any]) -> str:
    bits = [f"reads: {', '.join(e['reads'])}" if e["reads"] else "reads: nobody",
            f"{e['completion_tokens']} completion tokens" + (" (hit the limit)" if e["truncated"] else "")]
    if e["role"] not in SUPPORTERS:
        if e["answer"] is None:
            bits.append("answer: none boxed")
        else:
            verdict = "" if e["correct"] is None else (" (right)" if e["correct"] else " (wrong)")
            bits.append(f"answer: {e['answer']}{verdict}")
        if e["p_min"] is not None:
            bits.append(f"exp(LP_min) = {e['p_min']:.3f}, H_max = {e['h_max']:.3f} nats")
        if e["uncertain"] is not None:
            if not e["uncertain"]:
                bits.append("U = 0: confident, stop")
            else:
                bits.append("U = 1: unsure, but no supporter is left: stop" if e.get("last")
                            else "U = 1: unsure, ask the next supporter")
    elif e["leaked"]:
        bits.append(f"LEAK: wrote \\boxed{{}} {e['leaked']}x, replaced by '{WITHHELD}' before the leader saw it")
    return " · ".join(bits)


def render_transcript(entries: Sequence[Mapping[str, Any]], fmt: str = "markdown",
                      max_chars: int | None = 700) -> str:
    """A readable transcript (``fmt`` = "markdown" or "html") of :func:`transcript_entries`.

    Each call gets a header (stage, role, what it read, answer, confidence, U, leaks) and its
    text verbatim (clipped to ``max_chars``); supporters' boxed answers are highlighted, and
    calls past the stop are marked as recorded for replay only.
    """
    if fmt not in ("markdown", "html"):
        raise ValueError(f"fmt must be 'markdown' or 'html', got {fmt!r}")
    parts = []
    for e in entries:
        head = f"Stage {e['stage']} · {e['title']}"
        if e["role"] == "leader" and e["stage"] > 0:
            head += " (revision)"
        note = "" if e["used"] else " — recorded for replay only: LASE stopped before this call"
        body = _mark_leaks(_clip(e["text"], max_chars), fmt, supporter=e["role"] in SUPPORTERS)
        line = _summary_line(e)
        if fmt == "html":
            style = "" if e["used"] else ' style="opacity:0.55"'
            parts.append(f"<div{style}><p><b>{html.escape(head)}</b><i>{html.escape(note)}</i><br>"
                         f"<small>{html.escape(line)}</small></p>"
                         f'<pre style="white-space:pre-wrap">{body}</pre></div>')
        else:
            parts.append(f"**{head}**{'*' + note + '*' if note else ''}  \n{line}\n\n```text\n{body}\n```\n")
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------------
# one LASE chain, and the batch
# ---------------------------------------------------------------------------------------------


def stage_table(stages: pd.DataFrame, problem_id: str, tau_lp: float, tau_h: float) -> pd.DataFrame:
    """One problem's full chain, stage by stage, with U at (tau_lp, tau_h) and where LASE stops.

    Columns: stage, supporter, answer, correct, p_min, h_max, uncertain, completion_tokens and
    total_tokens (cumulative), lase ("continues", "stops here" or "not reached").
    """
    st = stages[stages["problem_id"] == problem_id].sort_values("stage")
    if st.empty:
        raise DataError(f"no stages for problem {problem_id!r}")
    unc = uncertain_mask(st["p_min"].to_numpy(float), st["h_max"].to_numpy(float), tau_lp, tau_h)
    certain = np.flatnonzero(~unc)
    stop = int(certain[0]) if len(certain) else len(st) - 1
    pos = np.arange(len(st))
    out = pd.DataFrame({
        "stage": st["stage"].to_numpy(), "supporter": st["supporter"].fillna("(leader alone)").to_numpy(),
        "correct": st["correct"].astype(bool).to_numpy(),
        "p_min": st["p_min"].to_numpy(float), "h_max": st["h_max"].to_numpy(float), "uncertain": unc,
        "completion_tokens": st["completion_tokens"].to_numpy(),
        "total_tokens": (st["prompt_tokens"] + st["completion_tokens"]).to_numpy(),
        "lase": np.where(pos < stop, "continues", np.where(pos == stop, "stops here", "not reached")),
    })
    out.insert(2, "answer", pd.Series([_answer(a) for a in st["answer"]], dtype=object))  # None, not NaN
    return out


def pick_walkthrough(chains: Chains, tau_lp: float, tau_h: float) -> str:
    """The problem best suited to a stage-by-stage walk-through, chosen by rule, not by hand.

    Among problems LASE escalates at these thresholds, prefer (in order) a rescue (solo wrong,
    LASE right), then the most distinct boxed answers along the reached stages, then the
    deepest stop. Falls back to the first problem when nothing escalates.
    """
    stop = stop_stages(chains, tau_lp, tau_h)
    best, best_key = 0, None
    for i, s in enumerate(stop):
        reached = [a for a in chains.answers[i, : s + 1] if _answer(a) is not None]
        key = (s > 0, bool(chains.correct[i, s] and not chains.correct[i, 0]), len(set(reached)), int(s))
        if best_key is None or key > best_key:
            best, best_key = i, key
    return str(chains.problem_ids[best])


def pick_unboxed(chains: Chains, tau_lp: float, tau_h: float) -> str | None:
    """The first problem LASE escalates whose revisions never box an answer (None if there is none)."""
    stop = stop_stages(chains, tau_lp, tau_h)
    unboxed = np.isnan(chains.p_min[:, 1:]).all(axis=1)
    hits = np.flatnonzero((stop > 0) & unboxed)
    return str(chains.problem_ids[hits[0]]) if len(hits) else None


def stop_distribution(chains: Chains, tau_lp: float, tau_h: float) -> pd.DataFrame:
    """Problems per stop stage at (tau_lp, tau_h): count, share, accuracy, average tokens (both kinds)."""
    stop = stop_stages(chains, tau_lp, tau_h)
    rows = np.arange(len(stop))
    names = ["leader alone", *prompts.SUPPORTERS][: chains.n_stages]
    out = []
    for t in range(chains.n_stages):
        m = stop == t
        out.append({"stop_stage": t, "last_supporter": names[t] if t < len(names) else str(t),
                    "problems": int(m.sum()), "share": m.mean() if len(m) else np.nan,
                    "accuracy": chains.correct[rows[m], t].mean() if m.any() else np.nan,
                    "avg_completion_tokens": chains.completion_tokens[rows[m], t].mean() if m.any() else np.nan,
                    "avg_total_tokens": chains.total_tokens[rows[m], t].mean() if m.any() else np.nan})
    return pd.DataFrame(out)


def stage_confidence(chains: Chains, tau_lp: float, tau_h: float) -> pd.DataFrame:
    """Per stage of the full chain (every problem): boxed share, accuracy, confidence, U rate, changes.

    ``reached`` is the share of problems LASE at these thresholds actually runs to this stage;
    ``changed`` the share whose boxed answer differs from the previous stage's.
    """
    stop = stop_stages(chains, tau_lp, tau_h)
    unc = uncertain_mask(chains.p_min, chains.h_max, tau_lp, tau_h)
    boxed = ~np.isnan(chains.p_min)
    out = []
    for t in range(chains.n_stages):
        prev = [_answer(a) for a in chains.answers[:, t - 1]] if t else None
        cur = [_answer(a) for a in chains.answers[:, t]]
        out.append({"stage": t, "reached": float((stop >= t).mean()), "boxed": float(boxed[:, t].mean()),
                    "accuracy": float(chains.correct[:, t].mean()),
                    "median_p_min": float(np.nanmedian(chains.p_min[:, t])) if boxed[:, t].any() else np.nan,
                    "median_h_max": float(np.nanmedian(chains.h_max[:, t])) if boxed[:, t].any() else np.nan,
                    "uncertain": float(unc[:, t].mean()),
                    "changed": np.nan if prev is None else float(np.mean([a != b for a, b in zip(cur, prev)])),
                    "avg_total_tokens": float(chains.total_tokens[:, t].mean())})
    return pd.DataFrame(out)


def outcome_flips(chains: Chains, tau_lp: float, tau_h: float) -> pd.DataFrame:
    """Solo answer vs LASE's answer at (tau_lp, tau_h): how many stayed right/wrong or flipped."""
    stop = stop_stages(chains, tau_lp, tau_h)
    solo, final = chains.correct[:, 0], chains.correct[np.arange(len(stop)), stop]
    esc = stop > 0
    return pd.DataFrame([
        {"outcome": "right -> right", "problems": int((solo & final).sum()), "escalated": int((solo & final & esc).sum())},
        {"outcome": "wrong -> right (rescued)", "problems": int((~solo & final).sum()), "escalated": int((~solo & final).sum())},
        {"outcome": "right -> wrong (talked out of it)", "problems": int((solo & ~final).sum()),
         "escalated": int((solo & ~final).sum())},
        {"outcome": "wrong -> wrong", "problems": int((~solo & ~final).sum()), "escalated": int((~solo & ~final & esc).sum())},
    ])


def leak_table(calls: pd.DataFrame, stops: Mapping[str, int] | None = None) -> pd.DataFrame:
    """Supporter calls per strategy and role: how many wrote ``\\boxed{}`` and how many boxes were removed.

    With ``stops`` (problem id -> stop stage) only calls LASE makes at those thresholds count;
    otherwise all recorded supporter calls do (a leak is a property of the transcript).
    """
    sup = calls[calls["role"].isin(SUPPORTERS)]
    if stops is not None:
        sup = sup[sup["stage"] <= sup["problem_id"].map(stops).fillna(-1)]
    if sup.empty:
        return pd.DataFrame(columns=["strategy", "role", "calls", "calls_with_leak", "boxes_removed", "leak_rate"])
    g = sup.groupby(["strategy", "role"], sort=False)
    out = pd.DataFrame({"calls": g.size(), "calls_with_leak": g["leaked"].apply(lambda s: int((s > 0).sum())),
                        "boxes_removed": g["leaked"].sum()}).reset_index()
    out["leak_rate"] = out["calls_with_leak"] / out["calls"]
    order = {r: i for i, r in enumerate(prompts.SUPPORTERS)}
    return out.sort_values(["strategy", "role"], key=lambda s: s.map(order) if s.name == "role" else s,
                           kind="stable").reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# context inclusions: counted from transcripts vs the topology formulas
# ---------------------------------------------------------------------------------------------


def inclusion_counts(calls: pd.DataFrame, stops: Mapping[str, int] | None = None) -> pd.DataFrame:
    """Per (strategy, problem): calls made and cross-agent context inclusions counted from ``reads``.

    ``star`` counts inclusions between the leader and a supporter (either direction), ``relay``
    those where a supporter reads another supporter's note (LASE relays the critique and hints),
    ``counted`` all of them. Only calls the strategy made count: ``stops`` (problem id -> stop
    stage) selects them for a replayed LASE, else the ``used`` column does.
    """
    c = calls
    if stops is not None:
        c = c[c["stage"] <= c["problem_id"].map(stops).fillna(-1)]
    elif "used" in c:
        c = c[c["used"].astype(bool)]
    rows = []
    for (strategy, pid), g in c.groupby(["strategy", "problem_id"], sort=False):
        star = relay = other = 0
        for role, reads in zip(g["role"], g["reads"]):
            for src in reads or []:
                if role == "leader" or (role in SUPPORTERS and src == "leader"):
                    star += 1
                elif role in SUPPORTERS and src in SUPPORTERS:
                    relay += 1
                else:
                    other += 1
        rows.append({"strategy": strategy, "problem_id": pid, "calls": len(g), "counted": star + relay + other,
                     "star": star, "relay": relay})
    return pd.DataFrame(rows, columns=["strategy", "problem_id", "calls", "counted", "star", "relay"])


def inclusion_bounds(strategy: str, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The topology formula for a strategy's inclusions per problem, from its run config.

    Returns ``formula`` (text), ``bound`` (number), ``exact`` (every problem must hit it) and, for
    LASE, ``star_bound`` = 2kT with k = 1 peer per stage and T = 3 stages (relays excluded).
    """
    c = dict(config or {})
    n, t = int(c.get("n_agents", 3)), int(c.get("rounds", 2))
    stages = len(c.get("supporter_order", prompts.SUPPORTERS))
    star, relay = 2 * stages, stages * (stages - 1) // 2
    if strategy in ("single", "mv"):
        return {"formula": "0 (no agent reads another)", "bound": 0, "exact": True, "star_bound": np.nan}
    if strategy == "mad":
        return {"formula": f"T n(n-1) = {t}*{n}*{n - 1}", "bound": t * n * (n - 1), "exact": True, "star_bound": np.nan}
    if strategy == "down":
        return {"formula": f"<= T n(n-1) = {t}*{n}*{n - 1} (0 if it accepts the first answer)",
                "bound": t * n * (n - 1), "exact": False, "star_bound": np.nan}
    if strategy == "moa":
        layers, p = int(c.get("moa_layers", 2)), int(c.get("moa_proposers", 3))
        return {"formula": f"(L-1) p^2 + p = {layers - 1}*{p}^2+{p}", "bound": (layers - 1) * p * p + p,
                "exact": True, "star_bound": np.nan}
    if strategy in ("lase", "lase-full", "lase-shuffled"):
        return {"formula": f"<= 2kT + relays = 2*1*{stages} + {relay}", "bound": star + relay, "exact": False,
                "star_bound": star}
    if strategy == "lase-mv":
        m = int(c.get("lase_chains", 5))
        return {"formula": f"<= N (2kT + relays) = {m}*({star}+{relay})", "bound": m * (star + relay),
                "exact": False, "star_bound": m * star}
    return {"formula": "?", "bound": np.nan, "exact": False, "star_bound": np.nan}


def inclusion_summary(counts: pd.DataFrame, configs: Mapping[str, Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """Per strategy: mean and max inclusions counted vs the formula, and whether every problem obeys it."""
    configs = configs or {}
    rows = []
    for s, g in counts.groupby("strategy", sort=False):
        b = inclusion_bounds(s, configs.get(s))
        ok = (g["counted"] == b["bound"]) if b["exact"] else (g["counted"] <= b["bound"])
        star_ok = bool((g["star"] <= b["star_bound"]).all()) if not pd.isna(b["star_bound"]) else np.nan
        lase = not pd.isna(b["star_bound"])
        rows.append({"strategy": s, "problems": len(g), "mean_counted": g["counted"].mean(),
                     "max_counted": int(g["counted"].max()), "formula": b["formula"], "bound": b["bound"],
                     "obeys_formula": bool(ok.all()), "mean_star": g["star"].mean() if lase else np.nan,
                     "max_star": g["star"].max() if lase else np.nan, "star_bound_2kT": b["star_bound"],
                     "star_within_2kT": star_ok, "mean_relay": g["relay"].mean() if lase else np.nan})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# the comparison table
# ---------------------------------------------------------------------------------------------


def chain_outcomes(chains: Chains, stop: np.ndarray | int) -> pd.DataFrame:
    """A problems table (as :func:`lase_nb.analysis.replay` writes) for chains stopped at ``stop``.

    ``stop`` is one stage per problem, or one stage for all (e.g. the last: always interact).
    """
    idx = np.arange(len(chains.problem_ids))
    s = np.broadcast_to(np.asarray(stop, dtype=int), idx.shape)
    return pd.DataFrame({
        "problem_id": chains.problem_ids, "stop_stage": s, "answer": chains.answers[idx, s],
        "correct": chains.correct[idx, s], "prompt_tokens": chains.prompt_tokens[idx, s],
        "completion_tokens": chains.completion_tokens[idx, s], "total_tokens": chains.total_tokens[idx, s]})


def escalation_rate(problems: pd.DataFrame) -> float:
    """Share of problems (or of LASE+MV chains) that went past the first answer; NaN if not gated."""
    if "stop_stage" in problems and problems["stop_stage"].notna().all() and len(problems):
        return float((problems["stop_stage"] > 0).mean())
    if "x_debated" in problems and problems["x_debated"].notna().all():
        return float(problems["x_debated"].astype(bool).mean())
    if "x_escalated" in problems and "x_chain_answers" in problems:
        chains = problems["x_chain_answers"].map(len).sum()
        return float(problems["x_escalated"].sum() / chains) if chains else np.nan
    return np.nan


def comparison_table(runs: Mapping[str, pd.DataFrame], baseline: str = "single", vote: str = "mv",
                     seed: int = 0, n_boot: int = 2000) -> pd.DataFrame:
    """Every strategy on the problems ALL of them answered, in the given order.

    ``runs`` maps a strategy to its problems table (problem_id, correct, prompt_tokens,
    completion_tokens, total_tokens; stop_stage/x_debated for the escalation rate). Columns:
    n, accuracy with a percentile bootstrap interval (acc_lo, acc_hi), average and total tokens
    as completion only and as prompt + completion, token multipliers vs ``baseline`` (both
    kinds), escalation rate, and exact McNemar tests vs ``baseline`` and vs ``vote`` (with the
    discordant counts: wins = this right and the other wrong, losses = the reverse).
    """
    if not runs:
        raise DataError("no runs to compare")
    common = set.intersection(*(set(df["problem_id"]) for df in runs.values()))
    if not common:
        raise DataError("the runs share no problem ids; record them on the same data set, n and seed")
    ids = sorted(common)
    aligned = {s: df.drop_duplicates("problem_id").set_index("problem_id").loc[ids] for s, df in runs.items()}
    rows = {}
    for s, df in aligned.items():
        ok = df["correct"].astype(bool).to_numpy()
        est, lo, hi = bootstrap_ci(ok.astype(float), n_boot=n_boot, seed=seed)
        row = {"n": len(ids), "accuracy": est, "acc_lo": lo, "acc_hi": hi,
               "avg_completion_tokens": df["completion_tokens"].mean(), "avg_total_tokens": df["total_tokens"].mean(),
               "total_completion_tokens": int(df["completion_tokens"].sum()), "total_tokens": int(df["total_tokens"].sum()),
               "escalation_rate": escalation_rate(df.reset_index())}
        for ref, tag in ((baseline, "single"), (vote, "mv")):
            if ref in aligned and ref != s:
                t = paired_test(ok, aligned[ref]["correct"].astype(bool).to_numpy(), n_boot=200, seed=seed)
                row.update({f"wins_vs_{tag}": t["b"], f"losses_vs_{tag}": t["c"], f"p_vs_{tag}": t["p_value"]})
            else:
                row.update({f"wins_vs_{tag}": np.nan, f"losses_vs_{tag}": np.nan, f"p_vs_{tag}": np.nan})
        rows[s] = row
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "strategy"
    for kind in ("completion", "total"):
        col = f"avg_{kind}_tokens"
        out[f"multiplier_{kind}"] = out[col] / out.loc[baseline, col] if baseline in out.index else np.nan
    return out


def paper_reference(model: str = "GPT-4.1-mini", dataset: str = "GSM-Symbolic") -> pd.DataFrame:
    """The paper's numbers beside our strategies: Table 1's row for (model, dataset) and the side results.

    Index: strategy. Columns: ``paper accuracy %``, ``paper avg tokens``, ``paper multiplier``
    (this Table 1 row), ``paper multiplier, all datasets`` and ``paper, other settings`` (text
    built from the reference tables for MoA, LASE+MV, shuffled order and DOWN).
    """
    t1 = reference.TABLE1
    row = t1[(t1["model"] == model) & (t1["dataset"] == dataset)].set_index("method")
    if row.empty:
        pairs = sorted(set(zip(t1["model"], t1["dataset"])))
        raise ValueError(f"Table 1 has no row for ({model!r}, {dataset!r}); choose one of {pairs}")
    mult = reference.TOKEN_MULTIPLIERS.set_index("method")["token_multiplier"]
    out = pd.DataFrame(index=pd.Index(STRATEGY_ORDER, name="strategy"),
                       columns=["paper accuracy %", "paper avg tokens", "paper multiplier",
                                "paper multiplier, all datasets", "paper, other settings"], dtype=object)
    for m in reference.METHODS:
        out.loc[m, "paper accuracy %"] = float(row.loc[m, "accuracy"])
        out.loc[m, "paper avg tokens"] = int(row.loc[m, "avg_tokens"])
        out.loc[m, "paper multiplier"] = round(float(row.loc[m, "avg_tokens"] / row.loc["single", "avg_tokens"]), 2)
        out.loc[m, "paper multiplier, all datasets"] = float(mult[m])
    moa = reference.MOA_VS_LASE.set_index("method")
    lmv = reference.LASE_MV.set_index("method")
    sh = reference.SHUFFLED_SUMMARY
    out.loc["moa", "paper, other settings"] = (
        f"{reference.MOA_VS_LASE.attrs['model']}, {reference.MOA_VS_LASE.attrs['dataset']}: MoA "
        f"{moa.loc['moa', 'accuracy']:.1f}% at {moa.loc['moa', 'total_tokens'] / 1e6:.1f}M tokens vs LASE "
        f"{moa.loc['lase', 'accuracy']:.1f}% at {moa.loc['lase', 'total_tokens'] / 1e6:.1f}M")
    out.loc["lase-mv", "paper, other settings"] = (
        f"{reference.LASE_MV.attrs['model']}, {reference.LASE_MV.attrs['dataset']}: LASE+MV "
        f"{lmv.loc['lase+mv', 'accuracy']:.1f}% at {lmv.loc['lase+mv', 'avg_tokens']} tokens vs MV(7) "
        f"{lmv.loc['mv', 'accuracy']:.1f}% at {lmv.loc['mv', 'avg_tokens']}")
    out.loc["lase-shuffled", "paper, other settings"] = (
        f"3 shuffled runs: {sh['mean']:.1f}% +- {sh['sd']:.2f} vs {sh['original']:.1f}% in the original order")
    out.loc["down", "paper, other settings"] = reference.DOWN_CLAIM
    out.loc["lase-full", "paper, other settings"] = "not reported (our always-interact policy)"
    out.attrs["source"] = reference.SOURCE
    out.attrs["row"] = f"{model}, {dataset}"
    return out


def comparison_display(table: pd.DataFrame, paper: pd.DataFrame | None = None,
                       configs: Mapping[str, Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """The comparison table for reading: percents with intervals, rounded tokens, labelled paper columns."""
    configs = configs or {}
    fmt_p = lambda p: "" if pd.isna(p) else f"{p:.3f}"  # noqa: E731
    fmt_wl = lambda w, l: "" if pd.isna(w) else f"+{int(w)}/-{int(l)}"  # noqa: E731
    out = pd.DataFrame({
        "method": [label(s, configs.get(s)) for s in table.index],
        "accuracy % [95% CI]": [f"{100 * a:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"
                                for a, lo, hi in zip(table["accuracy"], table["acc_lo"], table["acc_hi"])],
        "avg tokens (completion)": table["avg_completion_tokens"].round(0).astype(int),
        "avg tokens (prompt+completion)": table["avg_total_tokens"].round(0).astype(int),
        "total tokens (prompt+completion)": table["total_tokens"].astype(int),
        "x single (completion)": table["multiplier_completion"].round(2),
        "x single (prompt+completion)": table["multiplier_total"].round(2),
        "escalated %": table["escalation_rate"].map(lambda v: "" if pd.isna(v) else f"{100 * v:.0f}"),
        "vs single: +wins/-losses": [fmt_wl(w, l) for w, l in zip(table["wins_vs_single"], table["losses_vs_single"])],
        "McNemar p vs single": table["p_vs_single"].map(fmt_p),
        "McNemar p vs MV": table["p_vs_mv"].map(fmt_p),
    }, index=table.index)
    if paper is not None:
        p = paper.reindex(table.index)
        for c in ("paper accuracy %", "paper avg tokens", "paper multiplier", "paper multiplier, all datasets"):
            out[c] = p[c].map(lambda v: "" if pd.isna(v) else v)
    return out


# ---------------------------------------------------------------------------------------------
# compute-matched view
# ---------------------------------------------------------------------------------------------


def _sample_index(agent: str) -> int:
    m = re.search(r"(\d+)$", str(agent))
    return int(m.group(1)) if m else 0


def mv_subsample(calls: pd.DataFrame, problems: pd.DataFrame, kind: str = "number",
                 ks: Sequence[int] | None = None) -> pd.DataFrame:
    """Majority vote over the FIRST k recorded samples of each problem, for every k (no model call).

    ``calls`` are the MV run's calls (one per sample, agent ``sample<i>``), ``problems`` its
    problem table (for the gold answers). Votes use the same rule as the live strategy (ties by
    mean confidence, then first seen), so k = all samples reproduces the recorded MV answers.
    Returns one row per (problem, k): answer, correct, completion_tokens, total_tokens.
    """
    gold = problems.drop_duplicates("problem_id").set_index("problem_id")["gold"].astype(str)
    rows = []
    for pid, g in calls.groupby("problem_id", sort=False):
        g = g.assign(_i=g["agent"].map(_sample_index)).sort_values("_i")
        answers = [_answer(a) for a in g["answer"]]
        scores = [_num(p) for p in g["p_min"]]
        comp, tot = g["completion_tokens"].to_numpy(), (g["prompt_tokens"] + g["completion_tokens"]).to_numpy()
        for k in ks or range(1, len(g) + 1):
            if k > len(g):
                continue
            ans = majority_vote(answers[:k], kind, scores[:k])
            rows.append({"problem_id": pid, "k": k, "answer": ans, "correct": grade(ans, gold[pid], kind),
                         "completion_tokens": int(comp[:k].sum()), "total_tokens": int(tot[:k].sum())})
    return pd.DataFrame(rows)


def mv_curve(per_problem: pd.DataFrame, ids: Iterable[str] | None = None) -> pd.DataFrame:
    """Accuracy and average tokens of MV with k samples (on ``ids`` if given)."""
    d = per_problem if ids is None else per_problem[per_problem["problem_id"].isin(set(ids))]
    g = d.groupby("k")
    return pd.DataFrame({"n": g.size(), "accuracy": g["correct"].mean(),
                         "avg_completion_tokens": g["completion_tokens"].mean(),
                         "avg_total_tokens": g["total_tokens"].mean()}).reset_index()


def lase_grid(chains: Chains, tau_lp: Sequence[float], tau_h: Sequence[float]) -> pd.DataFrame:
    """LASE replayed on a threshold grid: accuracy, escalation and average tokens of both kinds."""
    rows = []
    idx = np.arange(len(chains.problem_ids))
    for a in tau_lp:
        for b in tau_h:
            s = stop_stages(chains, a, b)
            rows.append({"tau_lp": float(a), "tau_h": float(b), "accuracy": float(chains.correct[idx, s].mean()),
                         "escalation_rate": float((s > 0).mean()),
                         "avg_completion_tokens": float(chains.completion_tokens[idx, s].mean()),
                         "avg_total_tokens": float(chains.total_tokens[idx, s].mean())})
    return pd.DataFrame(rows)


def compute_matched(mv: pd.DataFrame, grid: pd.DataFrame, tokens: str = "avg_total_tokens") -> pd.DataFrame:
    """For each MV(k) budget, the best LASE threshold pair that spends no more (per problem, ``tokens``).

    The LASE pick is chosen on the same problems it is scored on, so its accuracy is an
    optimistic estimate; NaN where no threshold fits the budget.
    """
    out = []
    for _, r in mv.iterrows():
        row = {"k": int(r["k"]), "mv_accuracy": r["accuracy"], "budget": r[tokens]}
        try:
            best = budget_matched(grid, r[tokens], cost=tokens)
            row.update({"lase_accuracy": best["accuracy"], "lase_tokens": best[tokens], "tau_lp": best["tau_lp"],
                        "tau_h": best["tau_h"], "lase_escalation": best["escalation_rate"]})
        except ValueError:
            row.update({"lase_accuracy": np.nan, "lase_tokens": np.nan, "tau_lp": np.nan, "tau_h": np.nan,
                        "lase_escalation": np.nan})
        out.append(row)
    return pd.DataFrame(out)


def seed_table(chains: Chains, stop: np.ndarray, mv_samples: pd.DataFrame | None = None) -> pd.DataFrame:
    """Was there a correct seed to amplify? Counts over problems the leader got wrong alone and LASE escalated.

    Rows: how many such problems; how many reach a right boxed answer at SOME stage of the full
    chain; how many LASE (stopping at ``stop``) gets right; and, given ``mv_samples`` (one row per
    recorded independent sample: problem_id, correct; see :func:`mv_sample_rows`), how many have a
    right answer among those samples, i.e. the model can produce it at all.
    """
    wrong_esc = (~chains.correct[:, 0]) & (np.asarray(stop) > 0)
    ids = chains.problem_ids[wrong_esc]
    rows = [{"question": "escalated problems the leader got wrong alone", "problems": int(wrong_esc.sum())},
            {"question": "... with a right boxed answer at some stage of the full chain",
             "problems": int(chains.correct[wrong_esc].any(axis=1).sum())},
            {"question": "... of which LASE output a right answer", "problems":
             int(chains.correct[np.flatnonzero(wrong_esc), np.asarray(stop)[wrong_esc]].sum())}]
    if mv_samples is not None and len(mv_samples):
        any_right = mv_samples.groupby("problem_id")["correct"].any()
        have = [i for i in ids if i in any_right.index]
        rows.append({"question": f"... recorded by the MV run too ({len(have)} problems): "
                                 "a right answer among its samples", "problems": int(any_right.loc[have].sum())})
    return pd.DataFrame(rows)


def mv_sample_rows(calls: pd.DataFrame, problems: pd.DataFrame, kind: str = "number") -> pd.DataFrame:
    """One row per recorded MV sample: problem_id, sample index, answer, correct."""
    gold = problems.drop_duplicates("problem_id").set_index("problem_id")["gold"].astype(str)
    return pd.DataFrame({"problem_id": calls["problem_id"].to_numpy(),
                         "sample": calls["agent"].map(_sample_index).to_numpy(),
                         "answer": [_answer(a) for a in calls["answer"]],
                         "correct": [grade(_answer(a), gold[p], kind) for a, p in zip(calls["answer"], calls["problem_id"])]})


def claims_table(table: pd.DataFrame, paper: pd.DataFrame, about: Iterable[str] | None = None) -> pd.DataFrame:
    """The paper's claims, its numbers, ours, and whether the direction holds in this run.

    ``table`` is :func:`comparison_table`'s output, ``paper`` :func:`paper_reference`'s. Accuracy
    differences are in percentage points; a claim "holds here" when our difference has the
    paper's sign (the McNemar p-value says whether ours could be chance). ``about`` keeps only
    the claims about those strategies (column ``about``); ``n`` is the number of paired problems.
    """
    acc = lambda s: 100 * table.loc[s, "accuracy"]  # noqa: E731
    pacc = lambda s: float(paper.loc[s, "paper accuracy %"])  # noqa: E731
    have = set(table.index)
    rows = []

    def add(subject, claim, paper_val, ours, holds, p=np.nan):
        rows.append({"claim": claim, "paper": paper_val, "this run": ours, "holds here": holds, "McNemar p": p,
                     "about": subject, "n": int(table["n"].iloc[0])})

    if {"lase", "single"} <= have:
        d, pd_ = acc("lase") - acc("single"), pacc("lase") - pacc("single")
        add("lase", "LASE is more accurate than the single agent", f"{pd_:+.1f} pp", f"{d:+.1f} pp", bool(d > 0),
            table.loc["lase", "p_vs_single"])
    if {"lase", "mv"} <= have:
        d, pd_ = acc("lase") - acc("mv"), pacc("lase") - pacc("mv")
        add("lase", "LASE matches or beats MV(7)", f"{pd_:+.1f} pp", f"{d:+.1f} pp", bool(d >= 0),
            table.loc["lase", "p_vs_mv"])
    if {"lase", "mv", "single"} <= have:
        m = reference.TOKEN_MULTIPLIERS.set_index("method")["token_multiplier"]
        add("lase", "LASE costs less than half of MV(7) (x single-agent tokens)",
            f"LASE {m['lase']:.1f}x, MV {m['mv']:.1f}x",
            f"LASE {table.loc['lase', 'multiplier_total']:.1f}x, MV {table.loc['mv', 'multiplier_total']:.1f}x",
            bool(table.loc["lase", "multiplier_total"] < 0.5 * table.loc["mv", "multiplier_total"]))
    if {"mad", "mv"} <= have:
        d, pd_ = acc("mad") - acc("mv"), pacc("mad") - pacc("mv")
        m = reference.TOKEN_MULTIPLIERS.set_index("method")["token_multiplier"]
        add("mad", "MAD costs the most of single/MV/MAD/LASE and is no better than MV",
            f"{pd_:+.1f} pp at {m['mad']:.1f}x", f"{d:+.1f} pp at {table.loc['mad', 'multiplier_total']:.1f}x",
            bool(d <= 0 and table.loc["mad", "multiplier_total"]
                 >= table.loc[[x for x in reference.METHODS if x in have], "multiplier_total"].max() - 1e-9),
            table.loc["mad", "p_vs_mv"])
    if {"lase-mv", "mv"} <= have:
        lmv = reference.LASE_MV.set_index("method")["accuracy"]
        d = acc("lase-mv") - acc("mv")
        ltok = reference.LASE_MV.set_index("method")["avg_tokens"]
        add("lase-mv", "LASE+MV beats MV(7) at similar tokens",
            f"{lmv['lase+mv'] - lmv['mv']:+.1f} pp, {ltok['lase+mv'] / ltok['mv']:.2f}x MV's tokens",
            f"{d:+.1f} pp, {table.loc['lase-mv', 'avg_total_tokens'] / table.loc['mv', 'avg_total_tokens']:.2f}x MV's tokens",
            bool(d > 0), table.loc["lase-mv", "p_vs_mv"])
    if {"moa", "lase"} <= have:
        moa = reference.MOA_VS_LASE.set_index("method")
        d = acc("lase") - acc("moa")
        ratio = table.loc["moa", "total_tokens"] / table.loc["lase", "total_tokens"]
        add("moa", "LASE beats MoA with fewer tokens",
            f"{moa.loc['lase', 'accuracy'] - moa.loc['moa', 'accuracy']:+.1f} pp, MoA "
            f"{moa.loc['moa', 'total_tokens'] / moa.loc['lase', 'total_tokens']:.1f}x the tokens",
            f"{d:+.1f} pp, MoA {ratio:.1f}x the tokens", bool(d >= 0 and ratio > 1))
    if {"lase-shuffled", "lase"} <= have:
        sh = reference.SHUFFLED_SUMMARY
        d = acc("lase-shuffled") - acc("lase")
        add("lase-shuffled", "Shuffling the supporters' order changes accuracy little (here: by < 5 pp)",
            f"{sh['mean'] - sh['original']:+.1f} pp", f"{d:+.1f} pp", bool(abs(d) <= 5.0))
    out = pd.DataFrame(rows, columns=["claim", "paper", "this run", "holds here", "McNemar p", "about", "n"])
    return out if about is None else out[out["about"].isin(set(about))].reset_index(drop=True)


def split_by_coverage(tables: Mapping[str, pd.DataFrame], ratio: float = 0.8) -> tuple[list[str], list[str]]:
    """Strategies with about as many problems as the typical run (``main``) and those recorded on far fewer.

    A strategy is short when its problem count is below ``ratio`` times the median count; comparing
    everything on the common ids would otherwise shrink the whole table to the shortest run.
    """
    counts = {s: int(t["problem_id"].nunique()) for s, t in tables.items()}
    cut = ratio * float(np.median(list(counts.values())))
    return [s for s in tables if counts[s] >= cut], [s for s in tables if counts[s] < cut]


# ---------------------------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------------------------


def _stage_labels(table: pd.DataFrame) -> list[str]:
    return [f"{t}\n{'leader' if s == '(leader alone)' else ROLE_TITLES.get(s, s).replace(' ', chr(10), 1)}"
            for t, s in zip(table["stage"], table["supporter"])]


def plot_stage_walk(table: pd.DataFrame, tau_lp: float, tau_h: float, title: str = ""):
    """Two panels for one chain: exp(LP_min) and H_max per stage, the thresholds, and LASE's stop."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), sharex=True)
    x = np.arange(len(table))
    stop = int(np.flatnonzero(table["lase"].to_numpy() == "stops here")[0])
    colors = ["#009E73" if c else "#D55E00" for c in table["correct"]]
    for ax, col, tau, name, ylim in ((axes[0], "p_min", tau_lp, "exp(LP_min)  (higher = surer)", (0, 1.05)),
                                     (axes[1], "h_max", tau_h, "H_max, nats  (lower = surer)", None)):
        y = table[col].to_numpy(float)
        have = ~np.isnan(y)
        ax.axvspan(stop + 0.5, len(table) - 0.5, color="0.85", alpha=0.6, lw=0,
                   label="not run by LASE" if stop < len(table) - 1 else None)
        ax.plot(x[have], y[have], color="0.5", lw=1, zorder=1)
        ax.scatter(x[have], y[have], c=[c for c, h in zip(colors, have) if h], s=110, zorder=3, edgecolor="k")
        top = 1.0 if ylim else max(1.0, float(np.nanmax(y)) if have.any() else 1.0)
        for xi in x[~have]:
            ax.text(xi, 0.62 * top, "no\nboxed\nanswer", ha="center", va="center", fontsize=10, color="#D55E00",
                    bbox=dict(boxstyle="round", fc="white", ec="#D55E00"), zorder=4)
        ax.axhline(tau, ls="--", color="C0", label=f"threshold {tau:g}")
        ax.axvline(stop, color="k", lw=2, alpha=0.6)
        last = stop == len(table) - 1
        ax.text(stop, (ylim or (0, top * 1.1))[1], "LASE stops " if last else " LASE stops", va="top",
                ha="right" if last else "left", fontsize=11)
        ax.set(ylabel=name, xticks=x, xticklabels=_stage_labels(table), ylim=ylim or (0, top * 1.15),
               xlim=(-0.5, len(table) - 0.5))
        for xi, a in zip(x, table["answer"]):
            if a is not None:
                ax.annotate(f"{a}", (xi, (table[col].iloc[xi])), textcoords="offset points", xytext=(0, 10),
                            ha="center", fontsize=11)
        ax.legend(loc="lower left" if col == "p_min" else "upper left", fontsize=10)
    axes[0].set_title("answer-token probability")
    axes[1].set_title("answer-token entropy")
    fig.suptitle(title or "One LASE chain; green = right, red = wrong", fontsize=13)
    fig.tight_layout()
    return fig


def plot_batch(dist: pd.DataFrame, per_stage: pd.DataFrame):
    """Left: problems by stop stage. Right: accuracy and boxed share at each stage of the full chain."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    labels = [f"{t}\n{s}" for t, s in zip(dist["stop_stage"], dist["last_supporter"])]
    axes[0].bar(labels, dist["problems"], color="C0")
    for i, (n, a) in enumerate(zip(dist["problems"], dist["accuracy"])):
        if n:
            axes[0].text(i, n, f"{n}\nacc {100 * a:.0f}%", ha="center", va="bottom", fontsize=10)
    axes[0].set(ylabel="problems", title="Where LASE stops", ylim=(0, max(1, dist["problems"].max()) * 1.3))
    x = per_stage["stage"]
    axes[1].plot(x, per_stage["accuracy"], "o-", label="accuracy (every problem)")
    axes[1].plot(x, per_stage["boxed"], "s--", label="share with a boxed answer")
    axes[1].plot(x, per_stage["uncertain"], "^:", label="share uncertain (U = 1)")
    axes[1].set(xlabel="stage of the full chain", ylabel="share of problems", ylim=(0, 1.05), xticks=x,
                title="The full chain, stage by stage")
    axes[1].legend(fontsize=10)
    fig.tight_layout()
    return fig


def plot_inclusions(summary: pd.DataFrame, labels: Mapping[str, str] | None = None):
    """Mean and max inclusions counted per problem, against each topology's formula bound."""
    import matplotlib.pyplot as plt

    labels = labels or {}
    fig, ax = plt.subplots(figsize=(max(8.0, 1.6 * len(summary) + 4), 4.5))
    x = np.arange(len(summary))
    ax.bar(x - 0.2, summary["mean_counted"], 0.4, color="C0", label="counted, mean per problem")
    ax.bar(x + 0.2, summary["max_counted"], 0.4, color="C1", label="counted, max over problems")
    ax.hlines(summary["bound"], x - 0.45, x + 0.45, color="k", lw=3, zorder=3, label="formula / bound")
    star = summary["star_bound_2kT"].to_numpy(float)
    have = ~np.isnan(star)
    if have.any():
        ax.hlines(star[have], x[have] - 0.45, x[have] + 0.45, color="k", lw=2, ls="--", zorder=3,
                  label="star bound 2kT (leader-peer only)")
    ax.set(xticks=x, xticklabels=[labels.get(s, s) for s in summary["strategy"]], xlim=(-0.6, len(x) - 0.4),
           ylim=(0, 1.45 * max(1.0, float(np.nanmax(summary[["bound", "max_counted"]].to_numpy(float))))),
           ylabel="context inclusions per problem", title="Who reads whom, counted from the transcripts")
    ax.legend(fontsize=10, loc="upper left", ncol=2)
    fig.tight_layout()
    return fig


_MARKERS = {"single": "o", "mv": "s", "mad": "D", "moa": "^", "down": "v", "lase": "*", "lase-full": "X",
            "lase-mv": "P", "lase-shuffled": "h"}


def _style(strategy: str) -> dict[str, Any]:
    """One colour and marker per strategy, the same in every figure."""
    i = STRATEGY_ORDER.index(strategy) if strategy in STRATEGY_ORDER else len(STRATEGY_ORDER)
    return {"color": f"C{i % 10}", "marker": _MARKERS.get(strategy, "o"), "ms": 15 if strategy == "lase" else 10}


def _plain_log_axis(ax) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def plot_accuracy_vs_tokens(table: pd.DataFrame, paper: pd.DataFrame | None = None, mv: pd.DataFrame | None = None,
                            grid: pd.DataFrame | None = None, labels: Mapping[str, str] | None = None):
    """Accuracy % (with 95% intervals) against average tokens per problem, ours and (right) the paper's.

    ``mv`` (MV with the first k samples) and ``grid`` (LASE replayed at other thresholds) add
    the compute-matched curves.
    """
    import matplotlib.pyplot as plt

    labels = labels or {}
    panels = 2 if paper is not None else 1
    fig, axes = plt.subplots(1, panels, figsize=(8 * panels if panels > 1 else 11, 5.5), squeeze=False)
    ax = axes[0, 0]
    if mv is not None and len(mv):
        ax.plot(mv["avg_total_tokens"], 100 * mv["accuracy"], "-", color="C1", alpha=0.5, lw=2,
                label="MV over the first k samples")
        for _, r in mv[(mv["k"] % 2 == 1) | (mv["k"] == mv["k"].max())].iterrows():
            ax.annotate(f"k={int(r['k'])}", (r["avg_total_tokens"], 100 * r["accuracy"]), textcoords="offset points",
                        xytext=(0, -16), ha="center", fontsize=10, color="C1")
    if grid is not None and len(grid):
        ax.plot(grid["avg_total_tokens"], 100 * grid["accuracy"], "o", color="C5", alpha=0.25, ms=6,
                label="LASE at other thresholds")
    for s, r in table.iterrows():
        y, lo, hi = 100 * r["accuracy"], 100 * r["acc_lo"], 100 * r["acc_hi"]
        st = _style(s)
        ax.errorbar(r["avg_total_tokens"], y, yerr=[[y - lo], [hi - y]], fmt=st["marker"], ms=st["ms"], capsize=4,
                    color=st["color"], mec="k", label=labels.get(s, s), alpha=0.9)
    _plain_log_axis(ax)
    xs = [table["avg_total_tokens"].to_numpy(float)]
    ys = [100 * table["acc_hi"].to_numpy(float)]
    for extra in (mv, grid):
        if extra is not None and len(extra):
            xs.append(extra["avg_total_tokens"].to_numpy(float))
            ys.append(100 * extra["accuracy"].to_numpy(float))
    xs, top = np.concatenate(xs), float(np.nanmax(np.concatenate(ys)))
    ax.set(xlabel="average tokens per problem (prompt + completion, log scale)", ylabel="accuracy %",
           title="This run (bars: 95% bootstrap intervals)", ylim=(-2, min(103.0, max(20.0, 1.25 * top + 5))),
           xlim=(np.nanmin(xs) / 1.3, np.nanmax(xs) * 1.3))
    ax.legend(fontsize=10, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if paper is not None:
        ax2 = axes[0, 1]
        p = paper.dropna(subset=["paper accuracy %"])
        for s, r in p.iterrows():
            st = _style(s)
            ax2.plot(float(r["paper avg tokens"]), float(r["paper accuracy %"]), st["marker"], ms=st["ms"],
                     color=st["color"], mec="k", label=labels.get(s, s))
        _plain_log_axis(ax2)
        ax2.set(xlabel="average tokens per problem (paper, log scale)", ylabel="accuracy % (paper)",
                title=f"Paper, Table 1: {paper.attrs.get('row', '')}")
        ax2.legend(fontsize=10)
    fig.tight_layout()
    return fig
