"""Chapter 03 (notebooks/03_lase_pipeline): the LASE pipeline, one chain and the batch.

Everything here reads the tidy tables of :mod:`lase_nb.traces` (one row per problem, per call,
per LASE stage) or :class:`lase_nb.replay.Chains`, and returns tables or figures:

- the four roles and their instructions (from :mod:`lase_nb.prompts`);
- the stage-by-stage confidence of one LASE chain, and where LASE stops at given thresholds;
- batch views: stop-stage distribution, per-stage confidence, outcome flips, supporter leaks;
- context inclusions counted from the calls' ``reads`` against the topology formulas;
- the regime of a recording: :func:`gain_regime` (the paired gain of gated LASE over the leader
  alone with its bootstrap CI: corrective, neutral or harmful), in words by :func:`describe_regime`
  (the full paragraph in chapter 03, one line elsewhere) and :func:`describe_gain_regime` (one
  sentence per model, for comparing models).

Transcripts are drawn by :mod:`lase_nb.chapters.transcripts`, runs loaded by :mod:`lase_nb.runs`.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .. import prompts
from ..replay import Chains, stop_stages
from ..confidence import uncertain_mask
from ..errors import DataError
from ..stats import pct
from ..strategies import SPECS, reading_rounds
from ..answers import answer_or_none
from ..notes import count_answer_notes
from ..transcripts import ROLE_TITLES, SUPPORTERS

__all__ = [
    "WALK_KINDS", "walkthrough_change", "prompt_table", "role_calls",
    "describe_walk", "describe_batch",
    "reading_rounds",
    "role_table", "stage_table", "pick_walkthrough", "pick_unboxed", "stop_distribution", "stage_confidence",
    "outcome_flips", "leak_table", "fixes_by_rule", "telling_vs_pointing", "inclusion_counts", "inclusion_bounds", "inclusion_summary",
    "plot_stage_walk", "plot_batch", "plot_inclusions",
]

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
    out.insert(2, "answer", pd.Series([answer_or_none(a) for a in st["answer"]], dtype=object))  # None, not NaN
    return out

#: What a walk-through shows, best first (see :func:`walkthrough_change`).
WALK_KINDS = ("wrong -> right", "right -> wrong", "changed answer", "escalated, no change", "not escalated")


def walkthrough_change(chains: Chains, problem_id: str, tau_lp: float, tau_h: float) -> dict[str, Any]:
    """What a supporter's note did to one problem's answer, within the stages LASE runs.

    A *change* is a reached revision (stage t >= 1) whose boxed answer differs from the answer
    before the note (a right answer that the revision no longer boxes counts as right -> wrong). ``kind`` is the best change found, in the order of :data:`WALK_KINDS`
    (a wrong answer turned right, a right one turned wrong, any other change), else
    "escalated, no change" or "not escalated"; ``stage`` is where it happened (None if nowhere),
    ``stop`` where LASE stops.
    """
    i = int(np.flatnonzero(chains.problem_ids.astype(str) == str(problem_id))[0])
    stop = int(stop_stages(chains, tau_lp, tau_h)[i])
    best: tuple[int, int | None] = (4 if stop == 0 else 3, None)
    for t in range(1, stop + 1):
        before, after = answer_or_none(chains.answers[i, t - 1]), answer_or_none(chains.answers[i, t])
        was, now = bool(chains.correct[i, t - 1]), bool(chains.correct[i, t])
        if after == before or (after is None and not was):  # losing a right answer's box counts as a change
            continue
        k = 0 if (not was and now) else 1 if (was and not now) else 2
        if k < best[0]:
            best = (k, t)
    return {"problem_id": str(problem_id), "kind": WALK_KINDS[best[0]], "stage": best[1], "stop": stop}


def pick_walkthrough(chains: Chains, tau_lp: float, tau_h: float) -> str:
    """The problem to walk through stage by stage, chosen by rule, not by hand.

    A problem where a supporter's note leads the leader to change its answer, within the stages
    LASE runs at these thresholds: preferably from wrong to right, else from right to wrong, else
    any change of the boxed answer; failing that any escalated problem, then the first problem.
    Ties go to the first problem in the recording's order (:func:`walkthrough_change`).
    """
    ids = chains.problem_ids.astype(str)
    ranks = [WALK_KINDS.index(walkthrough_change(chains, pid, tau_lp, tau_h)["kind"]) for pid in ids]
    return str(ids[int(np.argmin(ranks))]) if len(ids) else ""

def pick_unboxed(chains: Chains, tau_lp: float, tau_h: float) -> str | None:
    """The typical escalated chain: the escalated problem whose revisions box an answer of their
    own least often (an answer from the extraction step, or none, is not the revision's own box),
    the first such problem on ties; None when nothing escalates. Its count of unboxed revisions is
    :func:`unboxed_revisions`."""
    stop = stop_stages(chains, tau_lp, tau_h)
    esc = np.flatnonzero(stop > 0)
    if not len(esc):
        return None
    unboxed = unboxed_revisions(chains)[esc]
    return str(chains.problem_ids[esc[np.argmax(unboxed)]])


def gate_reads(chains: Chains) -> pd.DataFrame:
    """Per stage of the full chain, which call's answer tokens the gate read: the leader's own
    reply (it boxed an answer) or the answer-extraction step (it did not)."""
    n = len(chains.problem_ids)
    names = ["leader alone", *prompts.SUPPORTERS][: chains.n_stages]
    ext = chains.extracted.sum(axis=0)
    return pd.DataFrame({"stage": range(chains.n_stages), "after": names,
                         "problems": n, "read_reply": n - ext, "read_extraction": ext})


def unboxed_revisions(chains: Chains) -> np.ndarray:
    """Per problem, how many of the full chain's revisions carry no boxed answer of their own
    (their answer came from the extraction step, or there is none)."""
    own = ~chains.extracted[:, 1:] & ~np.isnan(chains.p_min[:, 1:])
    return (~own).sum(axis=1)

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
                    "avg_tokens": chains.total_tokens[rows[m], t].mean() if m.any() else np.nan})
    return pd.DataFrame(out)

def stage_confidence(chains: Chains, tau_lp: float, tau_h: float) -> pd.DataFrame:
    """Per stage of the full chain (every problem): boxed share, accuracy, confidence, U rate, changes.

    ``reached`` is the share of problems LASE at these thresholds actually runs to this stage;
    ``changed`` the share whose boxed answer differs from the previous stage's. ``boxed`` counts
    answers the extraction step supplied, ``boxed_own`` only those the leader boxed itself.
    """
    stop = stop_stages(chains, tau_lp, tau_h)
    unc = uncertain_mask(chains.p_min, chains.h_max, tau_lp, tau_h)
    boxed = ~np.isnan(chains.p_min)
    extracted = chains.extracted if chains.extracted is not None else np.zeros_like(boxed)
    own = boxed & ~extracted.astype(bool)  # the leader boxed it itself (strict)
    out = []
    for t in range(chains.n_stages):
        prev = [answer_or_none(a) for a in chains.answers[:, t - 1]] if t else None
        cur = [answer_or_none(a) for a in chains.answers[:, t]]
        out.append({"stage": t, "reached": float((stop >= t).mean()), "boxed": float(boxed[:, t].mean()),
                    "boxed_own": float(own[:, t].mean()),
                    "accuracy": float(chains.correct[:, t].mean()),
                    "median_p_min": float(np.nanmedian(chains.p_min[:, t])) if boxed[:, t].any() else np.nan,
                    "median_h_max": float(np.nanmedian(chains.h_max[:, t])) if boxed[:, t].any() else np.nan,
                    "uncertain": float(unc[:, t].mean()),
                    "changed": np.nan if prev is None else float(np.mean([a != b for a, b in zip(cur, prev)])),
                    "avg_tokens": float(chains.total_tokens[:, t].mean())})
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

def leak_table(calls: pd.DataFrame, stops: Mapping[str, int] | None = None,
               problems: Mapping[str, Any] | None = None, stages: pd.DataFrame | None = None) -> pd.DataFrame:
    """Supporter calls per strategy and role: how many wrote ``\\boxed{}`` and how many boxes were
    removed, and, given ``problems`` (id -> Problem) and the run's ``stages``, how many notes state
    the final answer (only a note on a wrong attempt can: ``states_answer`` of ``notes_on_wrong``) and
    how many notes on a right attempt hand the leader another final value (``other_value_on_right``
    of ``notes_on_right``; :func:`lase_nb.notes.count_answer_notes`). The pipeline never filters a
    note for the second rule.

    With ``stops`` (problem id -> stop stage) only calls LASE makes at those thresholds count;
    otherwise all recorded supporter calls do (a leak is a property of the transcript).
    """
    rule = ["notes_on_wrong", "states_answer", "notes_on_right", "other_value_on_right"] if problems is not None else []
    if problems is not None and stages is None:
        raise DataError("counting notes that state the answer needs the run's stages (which attempts were right)")
    sup = calls[calls["role"].isin(SUPPORTERS)]
    if stops is not None:
        sup = sup[sup["stage"] <= sup["problem_id"].map(stops).fillna(-1)]
    if sup.empty:
        return pd.DataFrame(columns=["strategy", "role", "calls", "calls_with_leak", "boxes_removed", "leak_rate"] + rule)
    g = sup.groupby(["strategy", "role"], sort=False)
    out = pd.DataFrame({"calls": g.size(), "calls_with_leak": g["leaked"].apply(lambda s: int((s > 0).sum())),
                        "boxes_removed": g["leaked"].sum()}).reset_index()
    out["leak_rate"] = out["calls_with_leak"] / out["calls"]
    if problems is not None:
        lead = calls[calls["role"] == "leader"]
        rows = []
        for strategy, notes in sup.groupby("strategy", sort=False):
            st = stages[stages["strategy"] == strategy] if "strategy" in stages else stages
            counts = count_answer_notes(pd.concat([lead[lead["strategy"] == strategy], notes]), st, problems)
            rows += [{"strategy": strategy, "role": role, "notes_on_wrong": d["on_wrong"]["n"],
                      "states_answer": d["on_wrong"]["k"], "notes_on_right": d["other_on_right"]["n"],
                      "other_value_on_right": d["other_on_right"]["k"]} for role, d in counts.items()]
        out = out.merge(pd.DataFrame(rows, columns=["strategy", "role"] + rule), on=["strategy", "role"], how="left")
        out[rule] = out[rule].fillna(0).astype(int)
    order = {r: i for i, r in enumerate(prompts.SUPPORTERS)}
    return out.sort_values(["strategy", "role"], key=lambda s: s.map(order) if s.name == "role" else s,
                           kind="stable").reset_index(drop=True)


def fixes_by_rule(run: Any, problems: Mapping[str, Any], tau_lp: float, tau_h: float) -> dict[str, Any]:
    """What gated LASE fixes at (tau_lp, tau_h) on a full-chain run, split by the paper's rule: a fix
    (the leader alone wrong, LASE's answer right) *told* when a note the leader read up to its stop
    states the answer (:func:`lase_nb.notes.states_answer`), else *pointed*; breaks (right, then
    wrong) beside them; and the share of notes on wrong attempts that state the answer. Keys: n,
    escalated, fixed, fixed_told, fixed_pointed, broken, notes_on_wrong, stating_on_wrong."""
    from ..replay import chains_from_stages
    from .correct_seeds import seed_table  # its ``told`` column is the one scan of the notes read

    rows = seed_table(chains_from_stages(run.stages), run.calls, problems, tau_lp, tau_h)
    fixed = ~rows["solo_right"] & rows["lase_right"]
    told = int((fixed & rows["told"]).sum())
    counts = count_answer_notes(run.calls, run.stages, problems)
    return {"n": len(rows), "escalated": int(rows["escalated"].sum()), "fixed": int(fixed.sum()), "fixed_told": told,
            "fixed_pointed": int(fixed.sum()) - told, "broken": int((rows["solo_right"] & ~rows["lase_right"]).sum()),
            "notes_on_wrong": sum(d["on_wrong"]["n"] for d in counts.values()),
            "stating_on_wrong": sum(d["on_wrong"]["k"] for d in counts.values())}


def telling_vs_pointing(runs: Mapping[str, Any], problems: Mapping[str, Mapping[str, Any]], tau_lp: float,
                        tau_h: float) -> pd.DataFrame:
    """:func:`fixes_by_rule` for each labelled run (e.g. the telling organism v4 and the pointing one),
    one row each, with the share of notes on wrong attempts that state the answer."""
    rows = [{"model": label, **fixes_by_rule(run, problems[label], tau_lp, tau_h)} for label, run in runs.items()]
    out = pd.DataFrame(rows).set_index("model")
    out["stating_share"] = out["stating_on_wrong"] / out["notes_on_wrong"].where(out["notes_on_wrong"] > 0)
    return out


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
    """The topology formula for a strategy's inclusions per problem, from its run config (the
    strategy's record, :data:`lase_nb.strategies.SPECS`).

    T is the number of reading rounds (:func:`reading_rounds`). Returns ``formula`` (text),
    ``bound`` (number), ``exact`` (every problem must hit it) and, for
    LASE, ``star_bound`` = 2kT with k = 1 peer per stage and T = 3 stages (relays excluded).
    """
    spec = SPECS.get(strategy)
    if spec is None:
        return {"formula": "?", "bound": np.nan, "exact": False, "star_bound": np.nan}
    f = spec.inclusions(dict(config or {}))
    return {"formula": f.text, "bound": f.bound, "exact": f.exact, "star_bound": f.star}

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
# figures
# ---------------------------------------------------------------------------------------------


def _stage_labels(table: pd.DataFrame) -> list[str]:
    return [f"{t}\n{'leader' if s == '(leader alone)' else ROLE_TITLES.get(s, s).replace(' ', chr(10), 1)}"
            for t, s in zip(table["stage"], table["supporter"])]

#: The colours of a right and a wrong answer in :func:`plot_stage_walk` (bluish green, vermillion), named in its legend.
RIGHT_WRONG = {True: "#009E73", False: "#D55E00"}


def plot_stage_walk(table: pd.DataFrame, tau_lp: float, tau_h: float, title: str = ""):
    """Two panels for one chain: exp(LP_min) and H_max per stage, the thresholds, and LASE's stop."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), sharex=True)
    x = np.arange(len(table))
    stop = int(np.flatnonzero(table["lase"].to_numpy() == "stops here")[0])
    colors = [RIGHT_WRONG[bool(c)] for c in table["correct"]]
    for ax, col, tau, name, ylim in ((axes[0], "p_min", tau_lp, "exp(LP_min)  (higher = surer)", (0, 1.05)),
                                     (axes[1], "h_max", tau_h, "H_max, nats  (lower = surer)", None)):
        y = table[col].to_numpy(float)
        have = ~np.isnan(y)
        ax.axvspan(stop + 0.5, len(table) - 0.5, color="0.85", alpha=0.6, lw=0)
        ax.plot(x[have], y[have], color="0.5", lw=1, zorder=1)
        ax.scatter(x[have], y[have], c=[c for c, h in zip(colors, have) if h], s=110, zorder=3, edgecolor="k")
        top = 1.0 if ylim else max(1.0, float(np.nanmax(y)) if have.any() else 1.0)
        for xi in x[~have]:
            ax.text(xi, 0.62 * top, "no\nboxed\nanswer", ha="center", va="center", fontsize=10, color="#D55E00",
                    bbox=dict(boxstyle="round", fc="white", ec="#D55E00"), zorder=4)
        ax.axhline(tau, ls="--", color="C0")
        ax.text(0.99, tau, f"threshold {tau:g}", transform=ax.get_yaxis_transform(), ha="right", va="bottom",
                color="C0", fontsize=10)
        if stop < len(table) - 1:  # between the last stage run and the first one skipped, clear of the labels
            ax.axvline(stop + 0.5, color="k", lw=2, alpha=0.6)
        ticks = list(_stage_labels(table))
        ticks[stop] += "\n[LASE stops]"  # under the axis, clear of the points and their labels
        ax.set(ylabel=name, xticks=x, xticklabels=ticks, ylim=ylim or (0, top * 1.15),
               xlim=(-0.5, len(table) - 0.5))
        for xi, a in zip(x, table["answer"]):
            if a is not None:
                ax.annotate(f"{a}", (xi, (table[col].iloc[xi])), textcoords="offset points", xytext=(0, 10),
                            ha="center", fontsize=11)
    axes[0].set_title("answer-token probability")
    axes[1].set_title("answer-token entropy")
    fig.suptitle(title or "One LASE chain", fontsize=13)
    handles = [plt.Line2D([], [], ls="", marker="o", ms=11, mfc=RIGHT_WRONG[ok], mec="k", label=what)
               for ok, what in ((True, "right answer"), (False, "wrong answer"))]
    if stop < len(table) - 1:
        handles.append(plt.Rectangle((0, 0), 1, 1, fc="0.85", alpha=0.6, label="not run by LASE"))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=10, frameon=False)  # under both panels
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig

def plot_batch(dist: pd.DataFrame, per_stage: pd.DataFrame):
    """Left: problems by stop stage. Right: accuracy and boxed share at each stage of the full chain."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 5.0))
    labels = [f"{t}\n{s}" for t, s in zip(dist["stop_stage"], dist["last_supporter"])]
    axes[0].bar(labels, dist["problems"], color="C0")
    for i, (n, a) in enumerate(zip(dist["problems"], dist["accuracy"])):
        if n:
            axes[0].text(i, n, f"{n}\nacc {100 * a:.0f}%", ha="center", va="bottom", fontsize=10)
    axes[0].set(ylabel="problems", title="Where LASE stops", ylim=(0, max(1, dist["problems"].max()) * 1.3))
    x = per_stage["stage"]
    axes[1].plot(x, per_stage["accuracy"], "o-", label="accuracy (every problem)")
    axes[1].plot(x, per_stage["boxed_own"], "s--", label="answer boxed by the leader itself")
    if (per_stage["boxed"] > per_stage["boxed_own"]).any():
        axes[1].plot(x, per_stage["boxed"], "D:", color="0.4", label="answer with the extraction step")
    axes[1].plot(x, per_stage["uncertain"], "^:", label="share uncertain (U = 1)")
    axes[1].set(xlabel="stage of the full chain", ylabel="share of problems", ylim=(0, 1.05), xticks=x,
                title="The full chain, stage by stage")
    # below the panels: inside, the legend covered the curves wherever it went
    fig.legend(*axes[1].get_legend_handles_labels(), loc="lower center", ncol=2, fontsize=10, frameon=False)
    fig.tight_layout(rect=(0, 0.13, 1, 1))
    return fig

def plot_inclusions(summary: pd.DataFrame, labels: Mapping[str, str] | None = None):
    """Mean and max inclusions counted per problem, against each topology's formula bound; the
    formula is written on its line (``T n(n-1) = 1*3*2 = 6``), and a note under the axis says how a
    strategy's label (MAD(3x2): agents x rounds) maps onto the formula's factors."""
    import matplotlib.pyplot as plt

    labels = labels or {}
    fig, ax = plt.subplots(figsize=(min(10.0, max(7.5, 1.8 * len(summary) + 4)), 5.0))
    x = np.arange(len(summary))
    ax.bar(x - 0.2, summary["mean_counted"], 0.4, color="C0", label="counted, mean per problem")
    ax.bar(x + 0.2, summary["max_counted"], 0.4, color="C1", label="counted, max over problems")
    ax.hlines(summary["bound"], x - 0.45, x + 0.45, color="k", lw=3, zorder=3, label="formula / bound")
    star = summary["star_bound_2kT"].to_numpy(float)
    have = ~np.isnan(star)
    if have.any():
        ax.hlines(star[have], x[have] - 0.45, x[have] + 0.45, color="k", lw=2, ls="--", zorder=3,
                  label="star bound 2kT (leader-peer only)")
    top = 1.45 * max(1.0, float(np.nanmax(summary[["bound", "max_counted"]].to_numpy(float))))
    for xi, (formula, bound) in enumerate(zip(summary["formula"], summary["bound"])):
        if np.isfinite(bound):
            text = str(formula) if str(formula).rstrip().endswith(f"{bound:g}") else f"{formula} = {bound:g}"
            ax.annotate(text, (xi, bound), xytext=(0, 5), textcoords="offset points", ha="center", va="bottom",
                        fontsize=10, bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="0.7", alpha=0.9), zorder=4)
    ax.set(xticks=x, xticklabels=[labels.get(s, s) for s in summary["strategy"]], xlim=(-0.6, len(x) - 0.4),
           ylim=(0, top), ylabel="context inclusions per problem", title="Who reads whom, counted from the transcripts")
    ax.legend(fontsize=10, loc="upper left", ncol=2)
    notes = []
    if "mad" in set(summary["strategy"]):
        notes.append("MAD(n x r): n agents, r rounds; round 1 reads no one, so T = r - 1 (each agent reads n - 1)")
    if {"lase", "lase-full"} & set(summary["strategy"]):
        notes.append("LASE: k = 1 peer per stage, T stages; relays are notes a supporter reads from an earlier one")
    fig.tight_layout()
    if notes:
        fig.text(0.01, 0.0, "\n".join(notes), ha="left", va="top", fontsize=9.5, color="0.25", wrap=True)
    return fig


# ---------------------------------------------------------------------------------------------
# prompts beside the paper's intents; cap hits and the extraction step
# ---------------------------------------------------------------------------------------------


def prompt_table() -> pd.DataFrame:
    """Each role's instruction as the code sends it, beside the paper's intent, with the differences named.

    Rows: the four roles, the supporters under a shuffled order, the answer-extraction step, the
    supporters' sampling and the worked examples. Columns: part, paper's intent, ours (from :mod:`lase_nb.prompts`), difference.
    """
    ex = prompts.WORKED_EXAMPLES["number"][: prompts.DEFAULT_EXAMPLES]
    rows = [
        ("leader", "solves the problem step by step and gives the final answer; revises after each note",
         prompts.SOLVER_SYSTEM + "\n\nrevision request: " + prompts.REVISE_REQUEST,
         "same intent; the answer must sit in \\boxed{} so that the gate can find its tokens"),
        ("devil's advocate", "attacks the attempt, demands a justification of each step, never simply approves",
         prompts.SUPPORTER_SYSTEM["devil"], "same intent; it may not write the answer (a boxed one is withheld)"),
        ("collaborator", "sees the attempt and the critique; offers hints and checks",
         prompts.SUPPORTER_SYSTEM["collaborator"], "same inputs and intent; hints only, no answer"),
        ("senior expert", "sees the attempt, the critique and the hints; names the missing key idea",
         prompts.SUPPORTER_SYSTEM["expert"], "same inputs and intent; explains, does not solve"),
        ("any supporter, shuffled order", "the paper reorders the supporters (its robustness check)",
         prompts.supporter_system("expert"),
         "ours says exactly what this call shows (here an expert called first sees no critique or hints)"),
        ("answer extraction (ours only)", "no such step: an answer is read from the response",
         prompts.EXTRACT_REQUEST + f"\n(local model: the reply starts with {prompts.EXTRACT_PREFIX!r})",
         "asked only when a leader's response has no extractable answer; its tokens are counted and gated "
         "on; strict grading leaves it out"),
        ("supporters' sampling", "varied sampling temperatures across the supporters (Section 4.5)",
         "greedy (temperature 0) for every supporter call",
         "ours are greedy, so a recorded chain replays exactly and a rerun through the call cache makes no "
         "call; the paper's varied temperatures would add diversity to the notes (and noise to the replay)"),
        ("worked examples", "none: the paper's agents are zero-shot",
         " | ".join(f"{u} -> {a.splitlines()[-1]}" for u, a in ex),
         f"{prompts.DEFAULT_EXAMPLES} worked examples by default, because the 135M model only boxes its "
         f"answers when shown how; `--examples 0` gives the paper's zero-shot prompts (the default for APIs)"),
    ]
    return pd.DataFrame(rows, columns=["part", "paper's intent", "ours (as sent)", "difference"])


def role_calls(calls: pd.DataFrame) -> pd.DataFrame:
    """Per strategy and role, all recorded calls: count, cap hits and their rate (:func:`lase_nb.replay.cap_hits`),
    with the answer-extraction step's calls as their own role (``extract``)."""
    from ..replay import cap_hits

    return cap_hits(calls)


# ---------------------------------------------------------------------------------------------
# the chapter's other sentences
# ---------------------------------------------------------------------------------------------


def _ans(a: Any) -> str:
    a = answer_or_none(a)
    return "no boxed answer" if a is None else f"answer {a}"


def fix_walk(run: Any, chains: Chains, problems: Mapping[str, Any], pid: str, tau_lp: float, tau_h: float,
             kind: str = "number", max_chars: int = 300) -> tuple[pd.DataFrame, str, str]:
    """One problem's walk on a recorded full chain: its stage table (:func:`stage_table`), the walk in
    words (:func:`describe_walk`) and the transcript up to LASE's stop (markdown)."""
    from ..transcripts import render_transcript, transcript_entries

    walk = stage_table(run.stages, pid, tau_lp, tau_h)
    words = describe_walk(walk, walkthrough_change(chains, pid, tau_lp, tau_h))
    stop = int(np.flatnonzero(walk["lase"].to_numpy() == "stops here")[0])
    entries = transcript_entries(run.calls, pid, stop_stage=stop, tau_lp=tau_lp, tau_h=tau_h,
                                 gold=problems[pid].gold, kind=kind)
    return walk, words, render_transcript([e for e in entries if e["stage"] <= stop], max_chars=max_chars)


def describe_walk(walk: pd.DataFrame, change: Mapping[str, Any]) -> str:
    """The walk-through problem in words, from :func:`stage_table` and :func:`walkthrough_change`."""
    stop = int(np.flatnonzero(walk["lase"].to_numpy() == "stops here")[0])
    s0, sl = walk.iloc[0], walk.iloc[stop]

    def conf(r):
        return ("no answer tokens to measure" if not np.isfinite(r["p_min"])
                else f"exp(LP_min) = {r['p_min']:.2f}, H_max = {r['h_max']:.2f} nats")

    why = {"wrong -> right": "a supporter's note led the leader from a wrong answer to the right one",
           "right -> wrong": "no note turned a wrong answer right at these thresholds, but one talked the leader "
                             "out of a right answer",
           "changed answer": "no note changed right and wrong, but one made the leader change its answer",
           "escalated, no change": "no note made the leader change its answer at these thresholds; this is the "
                                   "first escalated problem",
           "not escalated": "nothing escalates at these thresholds; this is the first problem"}[change["kind"]]
    out = (f"**Why this problem.** The rule picked it because {why}"
           + (f" (stage {change['stage']}, {walk['supporter'].iloc[change['stage']]})" if change["stage"] else "")
           + f". **What it shows.** The leader alone gave {_ans(s0['answer'])} "
           f"({'right' if s0['correct'] else 'wrong'}), {conf(s0)}: ")
    out += ("**unsure** (U = 1), so LASE called the devil's advocate. " if walk["uncertain"].iloc[0]
            else "**confident** (U = 0), so LASE stopped at once. ")
    if stop:
        out += (f"LASE stops at stage {stop} ({walk['supporter'].iloc[stop]}) with {_ans(sl['answer'])} "
                f"({'right' if sl['correct'] else 'wrong'}), having spent {int(sl['total_tokens'])} tokens "
                f"(prompt + completion) against {int(s0['total_tokens'])} for the leader alone.")
        left = list(walk["supporter"].iloc[stop + 1:])
        out += (f" The gate found the leader sure after stage {stop} ({conf(sl)}), so LASE stopped early: "
                f"{_names(left)} {'was' if len(left) == 1 else 'were'} never called." if left else
                " The gate never found the leader sure before the last stage: LASE ran every stage"
                + (", and the leader was still unsure after it." if walk["uncertain"].iloc[stop] else "."))
    return out


def _names(items: Sequence[str]) -> str:
    """``"a"``, ``"a and b"``, ``"a, b and c"``."""
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def describe_batch(chains: Chains, tau_lp: float, tau_h: float) -> str:
    """LASE on the whole batch at (tau_lp, tau_h): escalation, accuracy (both gradings), tokens, flips."""
    from ..replay import outcomes_at

    stop = stop_stages(chains, tau_lp, tau_h)
    n, last = len(stop), chains.n_stages - 1
    solo, lase, full = outcomes_at(chains, 0), outcomes_at(chains, stop), outcomes_at(chains, last)
    flips = outcome_flips(chains, tau_lp, tau_h).set_index("outcome")["problems"]

    def acc(t):
        return f"{pct(t['correct'].mean(), 1)} (strict {pct(t['correct_strict'].mean(), 1)})"

    st = solo["total_tokens"].mean()
    return (f"**What it shows.** At (tau_lp, tau_h) = ({tau_lp:g}, {tau_h:g}) LASE escalates "
            f"**{pct((stop > 0).mean())}** of the {n} problems. Accuracy with the extraction step "
            f"(strict grading in brackets): leader alone {acc(solo)}, LASE {acc(lase)}, every stage always "
            f"{acc(full)}. Tokens per problem (prompt + completion): {st:.0f} alone, "
            f"{lase['total_tokens'].mean():.0f} for LASE ({lase['total_tokens'].mean() / st:.1f}x), "
            f"{full['total_tokens'].mean():.0f} always interacting. The revisions rescued "
            f"**{flips['wrong -> right (rescued)']}** problems and talked the leader out of a right answer on "
            f"**{flips['right -> wrong (talked out of it)']}**.")


