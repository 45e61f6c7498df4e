"""Chapter 03 (notebooks/03_lase_pipeline): the LASE pipeline, one chain and the batch.

Everything here reads the tidy tables of :mod:`lase_nb.traces` (one row per problem, per call,
per LASE stage) or :class:`lase_nb.analysis.Chains`, and returns tables or figures:

- the four roles and their instructions (from :mod:`lase_nb.prompts`);
- the stage-by-stage confidence of one LASE chain, and where LASE stops at given thresholds;
- batch views: stop-stage distribution, per-stage confidence, outcome flips, supporter leaks;
- context inclusions counted from the calls' ``reads`` against the topology formulas.

Transcripts are drawn by :mod:`lase_nb.transcripts`, runs loaded by :mod:`lase_nb.runs`.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from . import prompts
from .analysis import Chains, stop_stages
from .confidence import uncertain_mask
from .errors import DataError
from .transcripts import ROLE_TITLES, SUPPORTERS, answer_or_none

__all__ = [
    "role_table", "stage_table", "pick_walkthrough", "pick_unboxed", "stop_distribution", "stage_confidence",
    "outcome_flips", "leak_table", "inclusion_counts", "inclusion_bounds", "inclusion_summary",
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

def pick_walkthrough(chains: Chains, tau_lp: float, tau_h: float) -> str:
    """The problem best suited to a stage-by-stage walk-through, chosen by rule, not by hand.

    Among problems LASE escalates at these thresholds, prefer (in order) a rescue (solo wrong,
    LASE right), then the most distinct boxed answers along the reached stages, then the
    deepest stop. Falls back to the first problem when nothing escalates.
    """
    stop = stop_stages(chains, tau_lp, tau_h)
    best, best_key = 0, None
    for i, s in enumerate(stop):
        reached = [a for a in chains.answers[i, : s + 1] if answer_or_none(a) is not None]
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
                    "avg_tokens": chains.total_tokens[rows[m], t].mean() if m.any() else np.nan})
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
        prev = [answer_or_none(a) for a in chains.answers[:, t - 1]] if t else None
        cur = [answer_or_none(a) for a in chains.answers[:, t]]
        out.append({"stage": t, "reached": float((stop >= t).mean()), "boxed": float(boxed[:, t].mean()),
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
