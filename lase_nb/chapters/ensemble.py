"""Appendix A5 (notebooks/A5_ensemble, appendix to chapter 06): LASE with a supporter group, the paper's Appendix I.

The strategy is ``lase-ensemble`` (:func:`lase_nb.strategies.lase_ensemble`): LASE's gate and star,
with ``k`` supporters of a stage's role, ``r`` reading rounds and one consensus note (a vote over
verdict lines, or a moderator's synthesis) where LASE's one note goes. This module holds what the
appendix prints and draws:

- :func:`cost_table` / :func:`describe_cost`: the cost arithmetic from the strategy's record;
- :func:`draw_group_star`: the star with a group at one stage;
- :func:`load_pair`: LASE's full chain and the group's full chain, on the problems both recorded;
- :func:`policy_table` / :func:`describe_pair`: accuracy with intervals, tokens and escalation of the
  leader alone, gated and always-interact, for each; the paired difference in words;
- :func:`verdict_table` / :func:`describe_verdicts`: what the group's supporters and its vote said
  on right attempts (false alarms) and on wrong ones (pointers);
- :func:`fronts` / :func:`plot_fronts`: both accuracy-vs-tokens fronts by replay;
- :func:`vote_cases`, :func:`stage1_rows`, :func:`stage1_arms`, :func:`stage1_paired`,
  :func:`describe_stage1`: the organism's stage 1 on its spent escalated problems, the recorded
  devil's note against a vote of sampled devils, read by v5's and v6's revision (issue 58, 3(b);
  ``data/revision/ensemble_stage1.py`` makes the rows, :data:`STAGE1_EXPECTATION` was said first).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .. import plots
from ..errors import DataError
from ..paths import DATA_DIR
from ..prompts import VERDICT_HOLDS
from ..replay import Chains, chains_from_stages, grid_metrics, outcomes_at, pareto_front, replay
from ..runs import load_runs, resolve_data_path
from ..tables import gain_words
from ..stats import p_text, paired_test, pct, wilson_interval
from ..strategies import SPECS, StrategyConfig, ensemble_stage_calls
from ..traces import Run

__all__ = ["GROUP_RUN", "COMMITTED_GROUP", "RECORD_COMMAND", "cost_table", "describe_cost", "draw_group_star", "Pair", "load_pair",
           "describe_recording",
           "policy_table", "describe_pair", "verdict_table", "describe_verdicts", "fronts", "plot_fronts",
           "describe_fronts", "STAGE1_NAME", "STAGE1_NOTES", "STAGE1_LEADERS", "STAGE1_EXPECTATION",
           "STAGE1_MEASURES", "limit_cases", "vote_cases", "stage1_rows", "stage1_arms", "stage1_paired",
           "stage1_expectation", "same_revisions", "describe_stage1"]

#: The group's run folder name (the strategy's name).
GROUP_RUN = "lase-ensemble"
#: The committed recording of the group on the embedded model (the problems of ``arith-smollm2``'s lase-full).
COMMITTED_GROUP = "arith-smollm2-ensemble"
#: The command that records :data:`COMMITTED_GROUP` (the problems of ``arith-smollm2``'s lase-full, its settings).
RECORD_COMMAND = (f"python data/traces/record.py --n-full 80 --strategies {GROUP_RUN} "
                  f"--out data/traces/{COMMITTED_GROUP} --max-batch 24 --window 48")
#: LASE's calls per escalated stage: one supporter's note and the leader's revision.
LASE_STAGE_CALLS = 2


def _config(k: int, r: int, consensus: str) -> dict[str, Any]:
    return asdict(StrategyConfig(ensemble_k=k, ensemble_rounds=r, ensemble_consensus=consensus, full_chain=True))


def cost_table(settings: Sequence[tuple[int, int, str]] = ((1, 0, "vote"), (3, 0, "vote"), (3, 1, "vote"),
                                                           (3, 1, "synthesis"), (5, 2, "vote"))) -> pd.DataFrame:
    """Per group setting (k supporters, r reading rounds, consensus form): calls per escalated stage
    against LASE's 2, and the full chain's calls per problem, from the strategy's record."""
    rows = []
    for k, r, form in settings:
        c = _config(k, r, form)
        stage = ensemble_stage_calls(c)
        rows.append({"k x (r + 1) notes": f"{k} x {r + 1}", "consensus": form, "calls per escalated stage": stage,
                     "x LASE's stage": round(stage / LASE_STAGE_CALLS, 2),
                     "full chain (calls)": int(SPECS[GROUP_RUN].calls(c).bound)})
    return pd.DataFrame(rows)


def describe_cost(config: Mapping[str, Any] | None = None) -> str:
    """The arithmetic for one configuration (default: the strategy's defaults), in words."""
    c = dict(config) if config is not None else _config(3, 1, "vote")
    k, r, form = int(c["ensemble_k"]), int(c["ensemble_rounds"]), c["ensemble_consensus"]
    m = int(form == "synthesis")
    stage = ensemble_stage_calls(c)
    full = SPECS[GROUP_RUN].calls(c).bound
    return (f"With k = {k} supporters and r = {r} reading round{'s' if r != 1 else ''} under the {form}, an escalated "
            f"stage makes k (r + 1) + {m} + 1 = {k} x {r + 1} + {m} + 1 = {stage} calls ({k * (r + 1)} notes, "
            f"{'one moderator call and the revision' if m else 'the revision, and no consensus call: code counts the vote'}), "
            f"against LASE's {LASE_STAGE_CALLS}: {stage / LASE_STAGE_CALLS:.1f}x per stage; the full chain of 3 stages "
            f"makes {full:.0f} calls per problem against LASE's 7.")


def draw_group_star(k: int = 3, rounds: int = 1, consensus: str = "vote"):
    """The star of LASE with a group at the first stage: the leader in the centre, the devil's stage
    as ``k`` supporters (reading each other when ``rounds`` > 0) whose consensus note reaches the
    leader; the later stages as LASE's single supporters."""
    import matplotlib.pyplot as plt

    width, xlim = 7.5, (-5.0, 3.5)
    fig, ax = plt.subplots(figsize=(width, 4.4))
    ax.set_xlim(*xlim)
    ax.set_ylim(-2.4, 2.4)
    ax.set_aspect("equal")
    ax.axis("off")
    pt = 72 * width / (xlim[1] - xlim[0])  # points per data unit (the axes fill about the figure's width)
    color = plots.style(GROUP_RUN)["color"]

    def node(xy, text, fc, r):
        ax.add_patch(plt.Circle(xy, r, fc=fc, ec="black", lw=1.0, zorder=3))
        ax.text(*xy, text, ha="center", va="center", fontsize=9, zorder=4)
        return np.asarray(xy, float), r

    def arrow(a, b, color="0.3", lw=1.2, style="-|>", rad=0.0):
        (xa, ra), (xb, rb) = a, b
        ax.annotate("", xy=xb, xytext=xa, zorder=2,
                    arrowprops=dict(arrowstyle=style, lw=lw, color=color, shrinkA=ra * pt * 0.85,
                                    shrinkB=rb * pt * 0.85, connectionstyle=f"arc3,rad={rad}"))

    lead = node((0.0, 0.0), "leader", plots.style("lase")["color"], 0.5)
    cons = node((-1.6, 0.0), "vote" if consensus == "vote" else "moder-\nator", "#DDEEDD", 0.36)
    angles = np.linspace(np.pi / 2, 3 * np.pi / 2, k) if k > 1 else np.array([np.pi])
    members = [node((-3.3 + 1.15 * np.cos(a), 1.15 * np.sin(a)), f"devil\n{i + 1}", "#FFFFFF", 0.36)
               for i, a in enumerate(angles)]
    if rounds > 0:
        for i in range(len(members)):
            for j in range(i + 1, len(members)):
                arrow(members[i], members[j], color=color, lw=1.0, style="<|-|>", rad=0.2)
    for m in members:
        arrow(m, cons, color=color)
    arrow(cons, lead, color="black", lw=1.8)
    for xy, name in (((2.3, 1.35), "collab-\norator"), ((2.3, -1.35), "expert")):
        other = node(xy, name, "#FFFFFF", 0.42)
        arrow(lead, other, color="0.5", rad=0.15)
        arrow(other, lead, color="0.5", rad=0.15)
    ax.text(-3.3, -2.05, f"stage 1: {k} supporters read the attempt,\n{rounds} reading round{'s' if rounds != 1 else ''}"
            f" among them, one {consensus} note", ha="center", va="center", fontsize=8.5)
    ax.text(2.3, -2.2, "stages 2-3: one supporter each", ha="center", va="center", fontsize=8.5)
    ax.set_title("LASE with a supporter group at one stage (the paper's Appendix I)", fontsize=11)
    fig.tight_layout()
    return fig


@dataclass
class Pair:
    """LASE's full chain and the group's, cut to the problems both recorded (same order)."""

    lase: Chains
    group: Chains
    lase_run: Run
    group_run: Run

    @property
    def n(self) -> int:
        return len(self.lase.problem_ids)


def _cut(chains: Chains, ids: np.ndarray) -> Chains:
    where = {p: i for i, p in enumerate(chains.problem_ids.astype(str))}
    return chains.subset(np.array([where[p] for p in ids], dtype=int))


def load_pair(lase_folder: str | Path, group_folder: str | Path) -> Pair | None:
    """LASE's full chain (``lase_folder``'s ``lase-full``) and the group's (``group_folder``'s
    ``lase-ensemble``) on their common problems; None, with one printed line, when either is missing."""
    lase = load_runs(lase_folder, ["lase"]).get("lase")
    group = load_runs(group_folder, [GROUP_RUN]).get(GROUP_RUN)
    if lase is None or group is None:
        missing = "lase-full" if lase is None else GROUP_RUN
        where = resolve_data_path(lase_folder if lase is None else group_folder)
        how = RECORD_COMMAND if Path(where).name == COMMITTED_GROUP else f"lase-nb record --strategies {missing} ..."
        print(f"no finished {missing} run in {where}: the measured sections are skipped (record it with `{how}`)")
        return None
    a, b = chains_from_stages(lase.stages), chains_from_stages(group.stages)
    ids = np.array(sorted(set(a.problem_ids.astype(str)) & set(b.problem_ids.astype(str))), dtype=object)
    if not len(ids):
        raise DataError(f"the LASE run and the {GROUP_RUN} run share no problem; record both on the same problems")
    return Pair(_cut(a, ids), _cut(b, ids), lase, group)


def describe_recording(pair: Pair) -> str:
    """What the group's recording is: model, problems, the group's settings, the wall time, and the
    notes that broke the supporters' rule (from its manifest)."""
    m = pair.group_run.manifest
    c = m.get("config") or {}
    broke = sum(int(d.get("on_wrong", {}).get("k", 0)) for d in (m.get("notes_stating_answer") or {}).values())
    notes = sum(int(d.get("on_wrong", {}).get("n", 0)) for d in (m.get("notes_stating_answer") or {}).values())
    return (f"{GROUP_RUN}: {m.get('backend')}:{m.get('model')} on {m.get('dataset')}, {m.get('n')} problems "
            f"({pair.n} shared with LASE's full chain), k = {c.get('ensemble_k')} supporters sampled at temperature "
            f"{c.get('temperature')}, r = {c.get('ensemble_rounds')}, consensus by {c.get('ensemble_consensus')}, "
            f"every stage recorded; {m.get('wall_s')} s of recording; notes on wrong attempts that state the answer: "
            f"{broke} of {notes}.")


def _policies(chains: Chains, tau_lp: float, tau_h: float) -> dict[str, pd.DataFrame]:
    return {"leader alone": outcomes_at(chains, 0), f"gated at ({tau_lp:g}, {tau_h:g})": replay(chains, tau_lp, tau_h),
            "always interact": outcomes_at(chains, chains.n_stages - 1)}


def policy_table(pair: Pair, tau_lp: float = 0.8, tau_h: float = 0.5) -> pd.DataFrame:
    """For LASE and the group: the leader alone, gated at (tau_lp, tau_h) and always-interact, each
    with accuracy and its 95% Wilson interval, tokens per problem (prompt + completion) and the share
    of problems escalated."""
    rows = []
    for who, chains in (("LASE", pair.lase), ("group", pair.group)):
        for policy, t in _policies(chains, tau_lp, tau_h).items():
            k, n = int(t["correct"].sum()), len(t)
            lo, hi = wilson_interval(k, n)
            rows.append({"supporters": who, "policy": policy,
                         "accuracy % [95% CI]": f"{100 * k / n:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]",
                         "tokens / problem": int(round(t["total_tokens"].mean())),
                         "escalated %": round(100 * float((t["stop_stage"] > 0).mean()), 1)})
    return pd.DataFrame(rows)


def describe_pair(pair: Pair, tau_lp: float = 0.8, tau_h: float = 0.5, seed: int = 0) -> str:
    """The group against LASE's one supporter, paired on the same problems, gated and always-interact,
    with the token ratio; exploratory (the problems were spent on chapter 05), so no claim."""
    out = [f"On {pair.n} problems both recorded (spent before: exploratory, no claim):"]
    for policy in (f"gated at ({tau_lp:g}, {tau_h:g})", "always interact"):
        a = _policies(pair.group, tau_lp, tau_h)[policy]
        b = _policies(pair.lase, tau_lp, tau_h)[policy]
        test = paired_test(a["correct"].to_numpy(bool), b["correct"].to_numpy(bool), seed=seed)
        discordant = int(test["b"] + test["c"])
        ratio = a["total_tokens"].mean() / b["total_tokens"].mean()
        words = gain_words(test["diff"], test["diff_lo"], test["diff_hi"], test["p_value"], pair.n, discordant,
                           what="LASE with one supporter")
        out.append(f"- {policy}: the group {words}; {ratio:.2f}x LASE's tokens.")
    same = bool((pair.lase.answers[:, 0] == pair.group.answers[:, 0]).all())
    out.append("- The leader's first answers are " + ("the same in both recordings (one gate, one stage 0)." if same else
               "not all the same in both recordings (the comparison mixes leader and supporter changes)."))
    return "\n".join(out)


def verdict_table(group_run: Run) -> pd.DataFrame:
    """Per stage of the group's run: on the attempts that stage read, right or wrong, how many
    supporter notes gave a verdict, how many of those said a step fails, at how many stages no note
    gave one (``no verdict``: the vote then hands the leader its verdict line alone), and how often the
    consensus said so (false alarms on right attempts, pointers on wrong ones). The consensus is
    the vote's verdict; under the synthesis, the verdict line of the moderator's note, if any."""
    probs, stages = group_run.problems, group_run.stages
    if "x_group" not in probs:
        raise DataError(f"no group record in this run (x_group); is it a {GROUP_RUN} run?")
    right = {(str(p), int(s)): bool(c) for p, s, c in zip(stages["problem_id"], stages["stage"], stages["correct"])}
    rows = []
    for pid, groups in zip(probs["problem_id"].astype(str), probs["x_group"]):
        for g in groups or []:
            was_right = right.get((pid, int(g["stage"]) - 1))
            if was_right is None:
                continue
            said = [v for v in g["verdicts"] if v is not None]
            rows.append({"stage": int(g["stage"]), "role": g["role"], "attempt": "right" if was_right else "wrong",
                         "notes": len(g["verdicts"]), "verdicts": len(said),
                         "say fails": sum(v.endswith("fails") for v in said), "no verdict": int(not said),
                         "consensus fails": int(str(g.get("verdict") or "").endswith("fails"))})
    if not rows:
        return pd.DataFrame(columns=["stage", "role", "attempt", "stages", "notes", "verdicts", "say fails",
                                     "no verdict", "consensus fails"])
    t = pd.DataFrame(rows)
    out = t.groupby(["stage", "role", "attempt"], sort=True).agg(
        stages=("notes", "size"), notes=("notes", "sum"), verdicts=("verdicts", "sum"),
        **{"say fails": ("say fails", "sum"), "no verdict": ("no verdict", "sum"),
           "consensus fails": ("consensus fails", "sum")}).reset_index()
    return out


def describe_verdicts(table: pd.DataFrame) -> str:
    """The vote's mechanism on real notes: of the supporters' verdicts on right attempts, the share
    that said a step fails (one supporter's false-alarm rate), against the share of stages whose
    consensus said so; the same on wrong attempts (pointers); and how many notes gave no verdict."""
    if table.empty:
        return "No escalated stage was recorded: nothing to say about the group's verdicts."
    parts = []
    for attempt, what in (("right", "false alarms"), ("wrong", "pointers")):
        t = table[table["attempt"] == attempt]
        if t.empty:
            parts.append(f"no {attempt} attempt reached a group")
            continue
        v, f, s, c = (int(t[col].sum()) for col in ("verdicts", "say fails", "stages", "consensus fails"))
        single = f"{f} of {v} supporter verdicts ({pct(f / v)})" if v else "no supporter verdict"
        parts.append(f"on {attempt} attempts ({what}): {single} said a step fails; the consensus said so at {c} of "
                     f"{s} stages ({pct(c / s)})")
    notes, said = int(table["notes"].sum()), int(table["verdicts"].sum())
    stages, mute = int(table["stages"].sum()), int(table["no verdict"].sum())
    out = ("; ".join(parts) + f". {notes - said} of {notes} notes ({pct((notes - said) / notes)}) gave no verdict "
           f"line; a note without one does not vote. At {mute} of {stages} stages ({pct(mute / stages)}) no note "
           f"gave one (under the vote the leader then reads the line \"{VERDICT_HOLDS}\" alone).")
    if said and not int(table["say fails"].sum()):
        out += (" No supporter verdict said a step fails, so the consensus said every step holds at every stage: "
                "the group dropped no false alarm because it raised none, and passed no pointer.")
    return out


_GRID_LP = np.linspace(0.0, 1.0, 51)
_GRID_H = (0.0, 0.25, 0.5, 1.0, 2.0, np.inf)


def _grid(chains: Chains, tau_lp: Sequence[float] | None, tau_h: Sequence[float] | None) -> pd.DataFrame:
    """Every threshold pair of the grid replayed: tau_lp, tau_h, accuracy, avg_tokens."""
    tl = np.asarray(tau_lp if tau_lp is not None else _GRID_LP, float)
    th = np.asarray(tau_h if tau_h is not None else _GRID_H, float)
    m = grid_metrics(chains, tl, th)
    a, b = np.meshgrid(tl, th, indexing="ij")
    return pd.DataFrame({"tau_lp": a.ravel(), "tau_h": b.ravel(), "accuracy": m["accuracy"].ravel(),
                         "avg_tokens": m["avg_tokens"].ravel()})


def fronts(pair: Pair, tau_lp: Sequence[float] | None = None, tau_h: Sequence[float] | None = None) -> pd.DataFrame:
    """Both accuracy-vs-tokens fronts by replay over a threshold grid (the points no other point of
    the same recording beats), one row per front point: who, tau_lp, tau_h, accuracy, avg_tokens."""
    rows = []
    for who, chains in (("LASE", pair.lase), ("group", pair.group)):
        g = _grid(chains, tau_lp, tau_h)
        f = g.iloc[pareto_front(g["avg_tokens"].to_numpy(), g["accuracy"].to_numpy())]
        rows.append(f.assign(supporters=who)[["supporters", "tau_lp", "tau_h", "accuracy", "avg_tokens"]])
    return pd.concat(rows, ignore_index=True)


def plot_fronts(front: pd.DataFrame, pair: Pair, tau_lp: float = 0.8, tau_h: float = 0.5):
    """The two fronts (markers on their points, so a front of one point shows), every other threshold
    pair of the grid faintly behind them, and each recording's point at (tau_lp, tau_h) marked."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    for (who, strategy, chains), hollow in zip((("LASE", "lase", pair.lase), ("group", GROUP_RUN, pair.group)),
                                               (False, True)):
        st = plots.style(strategy)
        g = _grid(chains, None, None)
        ax.scatter(g["avg_tokens"], 100 * g["accuracy"], s=9, color=st["color"], alpha=0.25, lw=0,
                   label=f"{st['short']}: every threshold pair")
        f = front[front["supporters"] == who].sort_values("avg_tokens")
        ax.step(f["avg_tokens"], 100 * f["accuracy"], where="post", color=st["color"], lw=1.8, marker="o",
                ms=10 if hollow else 5, mfc="none" if hollow else st["color"], mew=1.6,
                label=f"{st['label']}: front by replay ({len(f)} point{'s' if len(f) != 1 else ''})")
        r = replay(chains, tau_lp, tau_h)
        ax.plot(r["total_tokens"].mean(), 100 * r["correct"].mean(), marker=st["marker"], color=st["color"], ms=11,
                ls="none", mec="black", label=f"{st['short']} at ({tau_lp:g}, {tau_h:g})")
    ax.set_xscale("log")
    ax.set_xlabel("tokens per problem (prompt + completion, log scale)")
    ax.set_ylabel("accuracy (%)")
    ax.set_title(f"Fronts by replay on the same {pair.n} problems")
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def describe_fronts(front: pd.DataFrame) -> str:
    """Each front's reach (the most accurate point and its tokens) and cheapest point, in words; a
    front of one point says that no threshold pair beats its cheapest point."""
    out = []
    for who in ("LASE", "group"):
        f = front[front["supporters"] == who]
        if f.empty:
            continue
        top = f.loc[f["accuracy"].idxmax()]
        low = f.loc[f["avg_tokens"].idxmin()]
        if len(f) == 1:
            out.append(f"{who}: one point, {100 * low['accuracy']:.1f}% at {low['avg_tokens']:.0f} tokens (no threshold "
                       "pair that escalates is more accurate)")
        else:
            out.append(f"{who}: from {100 * low['accuracy']:.1f}% at {low['avg_tokens']:.0f} tokens to "
                       f"{100 * top['accuracy']:.1f}% at {top['avg_tokens']:.0f} tokens")
    return "; ".join(out) + "."


# ---------------------------------------------------------------- the organism's stage 1, one devil or a vote of three
#
# Issue 58, 3(b): on the 104 problems v5's default gate (0.8 / 0.5) escalates in
# ``arith-organism-point/lase-full``, stage 1 replayed as issue 48 replayed it
# (:func:`lase_nb.organism.stage_one.stage_one_cases`): the recorded first answer, then either the recorded
# devil's note ("single") or the vote of k devils sampled from v5 ("vote", the strategy's own
# :func:`lase_nb.strategies.vote_notes`), each read by v5's revision and by v6's (the revision
# adapter). ``data/revision/ensemble_stage1.py`` runs it; these functions read its rows.

#: The replay's file stem in ``data/revision/`` (rows ``.jsonl``, summary ``.json``).
STAGE1_NAME = "ensemble-stage1"
#: The note each arm's leader reads, and the leaders (label: model alias of its revision call).
STAGE1_NOTES = ("single", "vote")
STAGE1_LEADERS = {"v5": "organism", "v6": "organism-revision"}

#: What we expect, written before any vote was sampled (issue 58: say it beforehand). On the 104
#: escalated problems the recorded single note raises a false alarm on 30 of the 40 right first
#: answers, says a step fails on 52 of the 64 wrong ones and names the first failing step on 33;
#: v5's revision fixes 8 and breaks 5 after it, v6's fixes 23 and breaks 4. The three devils are
#: one model on one prompt, so most of their slips are shared: the vote should drop some false
#: alarms, not half of them, and lose a few pointers where two sampled notes outvote a right one.
#: Fewer alarms should save v5 a break or two and cost it a fix; v6 redoes the chain after any
#: note, so its counts should move less. No contrast is expected to reach p < 0.05 on 104
#: problems, and none would be a claim: the problems are spent.
STAGE1_EXPECTATION = {
    "alarms": (0.6, 0.95),  # the vote's false alarms as a share of the single note's
    "pointers": (0.8, 1.05),  # the vote's pointers as a share of the single note's
    "halved_at_equal_pointers": False,  # the lead of issue 58 (alarms halved, pointers kept): not expected
    "any_p_below_0.05": False,
}


#: Where ``data/revision/ensemble_stage1.py`` writes the replay (``STAGE1_NAME`` + ``.jsonl`` / ``.json``).
STAGE1_DIR = DATA_DIR / "revision"


def load_stage1(folder: str | Path | None = None) -> tuple[pd.DataFrame, dict[str, Any]] | None:
    """The stage-1 replay's rows and summary as ``ensemble_stage1.py`` wrote them (values as written,
    no type guessing: an answer ``"07"`` stays text), or None when it has not been run there. A short run (``--limit``) is refused:
    its rows are a smoke test, not the measurement."""
    import json

    folder = Path(folder) if folder is not None else STAGE1_DIR
    rows_path, meta_path = folder / f"{STAGE1_NAME}.jsonl", folder / f"{STAGE1_NAME}.json"
    if not (rows_path.is_file() and meta_path.is_file()):
        return None
    meta = json.loads(meta_path.read_text())
    if meta.get("limit") is not None:
        raise DataError(f"{meta_path}: a short run (--limit {meta['limit']}); run ensemble_stage1.py without --limit")
    return pd.DataFrame([json.loads(line) for line in rows_path.read_text().splitlines() if line.strip()]), meta


def limit_cases(cases: Sequence[Any], n: int | None) -> list[Any]:
    """At most ``n`` stage-1 cases for a short run: the first ``ceil(n / 2)`` with a wrong first
    answer and the first ``floor(n / 2)`` with a right one (so a short run sees both), in their
    order; all of them when ``n`` is None."""
    if n is None:
        return list(cases)
    wrong = [c for c in cases if not c.first_correct][:(n + 1) // 2]
    right = [c for c in cases if c.first_correct][:n // 2]
    keep = {id(c) for c in wrong + right}
    return [c for c in cases if id(c) in keep]


def vote_cases(cases: Sequence[Any], members: Sequence[Sequence[str]]) -> tuple[list[Any], list[dict[str, Any]]]:
    """Each case with the note its leader reads under the vote (:func:`lase_nb.strategies.vote_notes`
    over that case's sampled notes ``members``), and the vote's record per case: the members'
    verdicts, the majority verdict and its carrier (None when no note voted)."""
    from dataclasses import replace

    from ..strategies import vote_notes

    out, votes = [], []
    for c, notes in zip(cases, members, strict=True):
        verdicts, verdict, carrier, text = vote_notes(list(notes))
        out.append(replace(c, note=text))
        votes.append({"verdicts": verdicts, "verdict": verdict, "carrier": carrier, "members": list(notes)})
    return out, votes


def stage1_rows(cases: Sequence[Any], revisions: Sequence[str], *, notes: str, leader: str,
                votes: Sequence[Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """One arm's rows (:func:`lase_nb.organism.revision.score`, one per escalated problem) with what the note
    said: ``verdict`` (``"fails"`` / ``"holds"`` / None: the single note's own verdict line, or the
    vote's), ``says_fails``, the members' verdicts and notes (the vote), and whether the note the
    leader read states the answer (``states_answer``, the paper's rule as :func:`lase_nb.organism.ceiling.obeys_rule`)."""
    from ..organism.ceiling import obeys_rule
    from ..organism.revision import score
    from ..strategies import verdict_of

    if notes not in STAGE1_NOTES:
        raise ValueError(f"notes must be one of {STAGE1_NOTES}, got {notes!r}")
    if (votes is None) != (notes == "single"):
        raise ValueError("the vote's rows need its votes (vote_cases); the single note's take none")
    rows = score(cases, revisions, f"{notes} note / {leader}")
    rows.insert(1, "notes", notes)
    rows.insert(2, "leader", leader)
    if votes is None:
        said = [verdict_of(c.note) for c in cases]
        rows["verdict"] = [None if v is None else v.split()[-1] for v in said]
        rows["member_verdicts"] = [[v] for v in said]
        rows["carrier"] = None
        rows["members"] = None
    else:
        rows["verdict"] = [v["verdict"] for v in votes]
        rows["member_verdicts"] = [list(v["verdicts"]) for v in votes]
        rows["carrier"] = [v["carrier"] for v in votes]
        rows["members"] = [list(v["members"]) for v in votes]
    rows["says_fails"] = rows["verdict"].eq("fails")
    rows["states_answer"] = [not obeys_rule(c.note, c.problem, c.attempt) for c in cases]
    return rows


def _member_fails(verdicts: Any) -> tuple[int, int]:
    said = [v for v in (verdicts or []) if v is not None]
    return sum(str(v).endswith("fails") for v in said), len(said)


def stage1_arms(rows: pd.DataFrame) -> pd.DataFrame:
    """Per arm (note x leader): false alarms (the note's verdict says a step fails) on the right first
    answers, flags (the same) and pointers (the note names the first failing step, ``note_kind``
    ``pointed``) on the wrong ones, the single devils' own verdicts that said a step fails on right
    and on wrong first answers (one devil's rate beside the vote's), fixes and breaks
    (:func:`lase_nb.organism.revision.tally`), net problems, and notes read that state the answer."""
    from ..organism.revision import tally

    out = []
    for (notes, leader), g in rows.groupby(["notes", "leader"], sort=False):
        right, wrong = g[g["first_correct"].astype(bool)], g[~g["first_correct"].astype(bool)]
        fixed, n_wrong, broken, n_right = tally(g)
        mr = [_member_fails(v) for v in right["member_verdicts"]]
        mw = [_member_fails(v) for v in wrong["member_verdicts"]]
        out.append({"notes": notes, "leader": leader, "escalated": len(g), "right": n_right,
                    "false alarms": int(right["says_fails"].sum()), "wrong": n_wrong,
                    "flags": int(wrong["says_fails"].sum()), "pointers": int(wrong["note_kind"].eq("pointed").sum()),
                    "member alarms": f"{sum(a for a, _ in mr)}/{sum(b for _, b in mr)}",
                    "member flags": f"{sum(a for a, _ in mw)}/{sum(b for _, b in mw)}",
                    "fixed": fixed, "broken": broken, "net": fixed - broken,
                    "states answer": int(g["states_answer"].sum())})
    return pd.DataFrame(out)


#: The paired contrasts of the vote against the single note: (measure, which first answers, column).
STAGE1_MEASURES = (("false alarm", "right", "says_fails"), ("flag", "wrong", "says_fails"),
                   ("pointer", "wrong", "pointed"), ("fixed", "wrong", "fixed"), ("broken", "right", "broken"),
                   ("right after stage 1", "all", "correct"))


def _measure(g: pd.DataFrame, column: str) -> np.ndarray:
    if column == "pointed":
        return g["note_kind"].eq("pointed").to_numpy(bool)
    if column in ("fixed", "broken"):
        return g["outcome"].eq(column).to_numpy(bool)
    return g[column].astype(bool).to_numpy()


def stage1_paired(rows: pd.DataFrame) -> pd.DataFrame:
    """The vote against the single note, paired on the same problems, per leader and measure
    (:data:`STAGE1_MEASURES`): how many of the ``n`` first answers of that kind each arm counts, the
    problems only the vote counts and only the single note counts, and the exact McNemar p
    (:func:`lase_nb.stats.mcnemar`). The note's own measures (alarms, flags, pointers) do not depend on
    the leader and are given once (leader ``-``)."""
    from ..stats import mcnemar

    out = []
    leaders = list(dict.fromkeys(rows["leader"]))
    for measure, which, column in STAGE1_MEASURES:
        for leader in (leaders[:1] if column in ("says_fails", "pointed") else leaders):
            arms = {}
            for notes in STAGE1_NOTES:
                g = rows[(rows["notes"] == notes) & (rows["leader"] == leader)].set_index("problem_id")
                arms[notes] = g
            if any(g.empty for g in arms.values()):
                continue
            ids = [p for p in arms["single"].index if p in arms["vote"].index]
            first = arms["single"].loc[ids, "first_correct"].astype(bool).to_numpy()
            keep = first if which == "right" else ~first if which == "wrong" else np.ones(len(ids), bool)
            ids = [p for p, k in zip(ids, keep) if k]
            a = _measure(arms["vote"].loc[ids], column) if ids else np.zeros(0, bool)
            b = _measure(arms["single"].loc[ids], column) if ids else np.zeros(0, bool)
            vote_only, single_only, p = mcnemar(a, b)
            out.append({"measure": measure, "first answers": which,
                        "leader": "-" if column in ("says_fails", "pointed") else leader, "n": len(ids),
                        "single": int(b.sum()), "vote": int(a.sum()), "vote only": vote_only,
                        "single only": single_only, "McNemar p": round(p, 3)})
    return pd.DataFrame(out)


def stage1_expectation(paired: pd.DataFrame, expectation: Mapping[str, Any] = STAGE1_EXPECTATION
                       ) -> dict[str, bool | None]:
    """Whether each item of the expectation held on the paired table (None where its denominator is
    zero): the vote's alarms and pointers as shares of the single note's within the stated ranges,
    the lead (alarms at most half, pointers at least as many), and whether any contrast reached p < 0.05."""
    t = paired.set_index("measure")

    def share(measure: str) -> float | None:
        if measure not in t.index or not t.at[measure, "single"]:
            return None
        return float(t.at[measure, "vote"]) / float(t.at[measure, "single"])

    out: dict[str, bool | None] = {}
    for key, measure in (("alarms", "false alarm"), ("pointers", "pointer")):
        s = share(measure)
        lo, hi = expectation[key]
        out[key] = None if s is None else bool(lo <= s <= hi)
    a, p = share("false alarm"), share("pointer")
    lead = None if a is None or p is None else bool(a <= 0.5 and p >= 1.0)
    out["halved_at_equal_pointers"] = None if lead is None else lead == expectation["halved_at_equal_pointers"]
    low = bool((paired["McNemar p"] < 0.05).any()) if len(paired) else False
    out["any_p_below_0.05"] = low == expectation["any_p_below_0.05"]
    return out


def describe_expectation(held: Mapping[str, bool | None], expectation: Mapping[str, Any] = STAGE1_EXPECTATION) -> str:
    """:func:`stage1_expectation`'s verdicts as sentences: what was said beforehand, item by item,
    and whether it held."""
    said = {"alarms": "the vote's false alarms at {:.0%}-{:.0%} of the single note's".format(*expectation["alarms"]),
            "pointers": "its pointers at {:.0%}-{:.0%} of the single note's".format(*expectation["pointers"]),
            "halved_at_equal_pointers": ("the false alarms halved at equal pointers (the lead)"
                                         if expectation["halved_at_equal_pointers"] else
                                         "no halving of the false alarms at equal pointers (no lead)"),
            "any_p_below_0.05": ("some paired contrast at p < 0.05" if expectation["any_p_below_0.05"] else
                                 "no paired contrast at p < 0.05")}
    parts = [f"{said[k]}: {'held' if v else 'did not hold' if v is not None else 'no denominator'}"
             for k, v in held.items() if k in said]
    return "Said beforehand: " + "; ".join(parts) + "."


def same_revisions(rows: pd.DataFrame, committed: Mapping[str, pd.DataFrame]) -> dict[str, dict[str, int]]:
    """The single note's revisions against a committed replay of the same calls, per leader
    (``{"v5": v5-replay rows, "v6": pilot rows}``): how many are identical, character for character,
    and how many give the same answer, of those compared."""
    out = {}
    for leader, ref in committed.items():
        mine = rows[(rows["notes"] == "single") & (rows["leader"] == leader)].set_index("problem_id")
        ref = ref.set_index("problem_id")
        ids = [p for p in mine.index if p in ref.index]
        out[leader] = {"compared": len(ids),
                       "identical": int(sum(str(mine.at[p, "revision"]) == str(ref.at[p, "revision"]) for p in ids)),
                       "same_answer": int(sum(str(mine.at[p, "answer"]) == str(ref.at[p, "answer"]) for p in ids))}
    return out


def describe_stage1(arms: pd.DataFrame, paired: pd.DataFrame, k: int = 3) -> str:
    """The replay in words: the vote's false alarms and pointers against the single note's, each
    leader's fixes and breaks after each, the paired tests, and whether the vote halved the false
    alarms at equal pointers (then a lead for a preregistered test, never a claim: spent problems)."""
    if arms.empty or paired.empty:
        return "No stage-1 rows to describe."
    t = paired.set_index(["measure", "leader"])

    def pair(measure: str, leader: str = "-") -> str:
        if (measure, leader) not in t.index:
            return f"no {measure} to compare"
        r = t.loc[(measure, leader)]
        return (f"{r['single']} of {r['n']} with the single note, {r['vote']} with the vote "
                f"({r['vote only']} only the vote, {r['single only']} only the single note; exact McNemar {p_text(r['McNemar p'])})")

    out = [f"Stage 1 on {int(arms['escalated'].iloc[0])} escalated spent problems (exploratory, no claim): "
           f"the recorded devil's note against a vote of {k} sampled devils.",
           f"False alarms on right first answers: {pair('false alarm')}.",
           f"Pointers (the first failing step named) on wrong first answers: {pair('pointer')}; "
           f"flags (a step said to fail): {pair('flag')}."]
    for leader in dict.fromkeys(arms["leader"]):
        out.append(f"{leader}'s revision fixes {pair('fixed', leader)}; breaks {pair('broken', leader)}.")
    alarms, pointers = t.loc[("false alarm", "-")], t.loc[("pointer", "-")]
    if alarms["single"] and 2 * alarms["vote"] <= alarms["single"] and pointers["vote"] >= pointers["single"]:
        out.append("The vote halved the false alarms at equal pointers: a lead for a preregistered test on fresh "
                   "problems, not a result.")
    else:
        out.append("The vote did not halve the false alarms at equal pointers: no lead for a preregistered test "
                   "from this replay.")
    return " ".join(out)
