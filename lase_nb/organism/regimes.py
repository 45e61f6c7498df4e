"""The regime of a recording, defined once and used only so (chapters 02-06 and the README).

- **corrective**: gated LASE's gain over the leader alone (stage 0, same problems) clears both
  tests: the exact McNemar test (two-sided, p < ``alpha``) and the paired bootstrap interval
  (above zero). The supporters correct the leader.
- **destructive**: always-interact (every stage run, the last stage's answer) is below the
  leader alone by both tests: debate without a correct seed to amplify makes things worse.
- **neutral**: neither. A gain whose interval excludes zero while McNemar does not (or the
  reverse) is neutral here: a claim needs both tests.

On fewer than :data:`lase_nb.tables.MIN_DECIDABLE` problems the words name no regime ("too few
problems to tell", ``decided`` False), as every verdict of the chapters (:func:`lase_nb.tables.decidable`).

Corrective is checked first: a gate can keep a model corrective whose always-interact is
destructive. The tests are :func:`lase_nb.stats.paired_test`.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..replay import Chains, replay
from ..tables import MIN_DECIDABLE, decidable
from ..errors import DataError
from ..stats import PAIRED_N_BOOT, clears_both, gain_difference, mcnemar, p_text, paired_test, pct, points

__all__ = ["REGIMES", "REGIME_RULE", "UNDECIDED", "OTHER_REGIME", "gain_regime", "regime_table", "describe_regime",
           "describe_gain_regime", "same_problems", "compare_gains", "control_table", "describe_control"]

REGIMES = ("corrective", "neutral", "destructive")
REGIME_RULE = ("corrective: gated LASE beats the leader alone by both tests (exact McNemar p < 0.05 and a paired "
               "bootstrap 95% interval above zero); destructive: always-interact loses to the leader alone by both "
               "tests; neutral: neither")

#: What to run to see the other regime: an API model (or a compatible server) whose supporters can correct.
OTHER_REGIME = (
    "`lase-nb run --strategy lase --full-chain --backend openai --model gpt-4.1-mini --examples 0 "
    "--n 200 --out data/traces/arith-gpt41mini/lase-full` (or `--backend openai --base-url "
    "http://127.0.0.1:8000/v1 --model <name>` for a compatible server such as vLLM or llama.cpp), "
    "the baselines beside it (`--strategy single`, `mv`, `mad`... with `--out data/traces/arith-gpt41mini/<name>`), "
    "then `papermill <chapter>.ipynb out.ipynb -p traces ../data/traces/arith-gpt41mini -p interactive False`")


def gain_regime(chains: Chains, tau_lp: float, tau_h: float, n_boot: int = PAIRED_N_BOOT, seed: int = 0,
                level: float = 0.95, alpha: float = 0.05) -> dict[str, Any]:
    """The regime of a model from its full chains (see the module): gated LASE (replayed at
    tau_lp, tau_h) and always-interact (the last stage) each against the leader alone.

    Keys: regime, decided (enough problems to name it, :func:`lase_nb.tables.decidable`), tau_lp,
    tau_h, n, escalated, acc_solo, acc_lase, gain, gain_lo, gain_hi, p_value, fixed (wrong alone,
    right gated), broken (the reverse), acc_full, full_gain, full_lo, full_hi, full_p, level, alpha.
    """
    if len(chains.problem_ids) == 0:
        raise DataError("no problems in these chains")
    r = replay(chains, tau_lp, tau_h)
    solo = chains.correct[:, 0]
    t = paired_test(r["correct"].to_numpy(bool), solo, n_boot=n_boot, seed=seed, level=level)
    f = paired_test(chains.correct[:, -1], solo, n_boot=n_boot, seed=seed, level=level)
    name = ("corrective" if clears_both(t, alpha, above=True) else
            "destructive" if clears_both(f, alpha, above=False) else "neutral")
    return {"regime": name, "decided": decidable(t["n"]), "tau_lp": float(tau_lp), "tau_h": float(tau_h), "n": t["n"],
            "escalated": int((r["stop_stage"] > 0).sum()), "acc_solo": t["acc_b"], "acc_lase": t["acc_a"],
            "gain": t["diff"], "gain_lo": t["diff_lo"], "gain_hi": t["diff_hi"], "p_value": t["p_value"],
            "fixed": t["b"], "broken": t["c"], "acc_full": f["acc_a"], "full_gain": f["diff"],
            "full_lo": f["diff_lo"], "full_hi": f["diff_hi"], "full_p": f["p_value"], "level": level,
            "alpha": alpha}


#: What the regime column and sentences say on too few problems to name one.
UNDECIDED = "too few problems to tell"


def _interval(r: Mapping[str, Any], key: str = "gain", lo: str = "gain_lo", hi: str = "gain_hi") -> str:
    return f"{points(r[key])} points [{100 * r['level']:.0f}% CI {points(r[lo])}, {points(r[hi])}]"


def regime_table(chains_by_model: Mapping[str, Chains], tau_lp: float, tau_h: float, seed: int = 0) -> pd.DataFrame:
    """:func:`gain_regime` of each model, one row each: the regime, escalated problems, the leader
    alone's, gated LASE's and always-interact's accuracy (%), the gated gain with its 95% CI and
    McNemar p, fixes and breaks."""
    rows = []
    for label, c in chains_by_model.items():
        r = gain_regime(c, tau_lp, tau_h, seed=seed)
        rows.append({"model": label, "regime": r["regime"] if r.get("decided", True) else UNDECIDED, "escalated": f"{r['escalated']} of {r['n']}",
                     "leader alone %": round(100 * r["acc_solo"], 1), "gated LASE %": round(100 * r["acc_lase"], 1),
                     "gain, points [95% CI]": f"{points(r['gain'])} [{points(r['gain_lo'])}, {points(r['gain_hi'])}]",
                     "McNemar p": round(r["p_value"], 3), "fixed": r["fixed"], "broken": r["broken"],
                     "always-interact %": round(100 * r["acc_full"], 1)})
    return pd.DataFrame(rows).set_index("model")


def describe_regime(r: Mapping[str, Any], full: bool = False) -> str:
    """Which regime the recording is in, from :func:`gain_regime`: the full paragraph once (chapter
    03, ``full=True``, with the definitions and what to run to see another regime), one line elsewhere."""
    gain = (f"{_interval(r)}, McNemar {p_text(r['p_value'])}, over the leader alone; escalation fixes "
            f"{r['fixed']} and breaks {r['broken']} answers")
    decided = r.get("decided", True)
    if not full:
        named = f"**{r['regime']}**" if decided else f"{UNDECIDED} ({r['n']} problems)"
        return f"Regime of this recording: {named} (gated LASE {gain}; chapter 03, section 3.4, defines the regimes)."
    rule = f"The regimes, defined once: {REGIME_RULE}. "
    full_line = (f"Always-interact (every stage) scores {pct(r['acc_full'], 1)}, {_interval(r, 'full_gain', 'full_lo', 'full_hi')} "
                 f"against the leader alone (McNemar {p_text(r['full_p'])}). ")
    if not decided:
        lead = (f"**On {r['n']} problems no regime can be told** (at least {MIN_DECIDABLE} are needed): the gate "
                f"escalates {r['escalated']} of {r['n']} problems, and gated LASE scores {gain}. ")
        other = "Record more problems (`lase-nb record --n`) to tell the regime."
    elif r["regime"] == "corrective":
        lead = (f"**In this recording the supporters help**: the gate escalates {r['escalated']} of {r['n']} "
                f"problems, and gated LASE scores {gain}. ")
        other = "To see a negative control (a run where the supporters should not help), run the embedded model."
    else:
        lead = (f"**With this recording the chapters are a negative control**, a run where the supporters do not help "
                f"(regime: {r['regime']}): the gate "
                f"escalates {r['escalated']} of {r['n']} problems, but gated LASE scores {gain}, which does not "
                f"clear both tests. ")
        other = ("To see another regime, read the organisms' recordings (in the table above), or record an API "
                 "model and point the chapter at it.")
    return rule + full_line + lead + other


def describe_gain_regime(label: str, r: Mapping[str, Any]) -> str:
    """One sentence: which regime ``label``'s model is in, with the gain, its CI and McNemar p."""
    reading = {"corrective": "escalation helps by both tests",
               "destructive": "always-interact hurts by both tests",
               "neutral": "no claim clears both tests"}[r["regime"]]
    head = f"**{label}** is in the **{r['regime']}** regime"
    if not r.get("decided", True):
        head, reading = f"**{label}**: {UNDECIDED} on {r['n']} problems", "too few problems to say"
    return (f"{head}: gated LASE (tau_lp = {r['tau_lp']:g}, "
            f"tau_h = {r['tau_h']:g}, {r['escalated']} of {r['n']} problems escalated) scores {pct(r['acc_lase'], 1)} "
            f"against the leader alone's {pct(r['acc_solo'], 1)}, {_interval(r)}, McNemar {p_text(r['p_value'])} "
            f"(fixes {r['fixed']}, breaks {r['broken']}); always-interact scores {pct(r['acc_full'], 1)}: {reading}.")


def same_problems(a: Chains, b: Chains) -> tuple[Chains, Chains]:
    """Both models' chains restricted to the problems both ran, in ``a``'s order (the controlled
    comparison); a clear error when they share none."""
    ids_b = {str(p): i for i, p in enumerate(b.problem_ids)}
    keep = [(i, ids_b[str(p)]) for i, p in enumerate(a.problem_ids) if str(p) in ids_b]
    if not keep:
        raise DataError("the two recordings share no problem: record both on the same set (same split, seed, levels)")
    ia, ib = (np.array(x) for x in zip(*keep))
    return a.subset(ia), b.subset(ib)


def compare_gains(a: Chains, b: Chains, tau_lp: float, tau_h: float, n_boot: int = 5000,
                  seed: int = 0, level: float = 0.95) -> dict[str, Any]:
    """Two models on the same problems (:func:`same_problems`): each one's gated gain over its own
    leader (:func:`gain_regime`), the difference of the gains with its tests
    (:func:`lase_nb.stats.gain_difference`), and the escalation rates with the exact McNemar test of
    escalated-or-not on the same problems. Keys: n, regime_a, regime_b, difference, escalated_a,
    escalated_b, escalation_p. The default bootstrap (5,000 resamples, seed 0, 95%) is the one both
    committed controls' preregistrations fix, so every chapter that prints a control prints the
    preregistered intervals."""
    a, b = same_problems(a, b)
    boot = {"n_boot": n_boot, "seed": seed, "level": level}
    ra, rb = gain_regime(a, tau_lp, tau_h, **boot), gain_regime(b, tau_lp, tau_h, **boot)
    la, lb = replay(a, tau_lp, tau_h), replay(b, tau_lp, tau_h)
    diff = gain_difference(la["correct"].to_numpy(bool), a.correct[:, 0], lb["correct"].to_numpy(bool),
                           b.correct[:, 0], **boot)
    ea, eb = la["stop_stage"].to_numpy() > 0, lb["stop_stage"].to_numpy() > 0
    return {"n": len(a.problem_ids), "regime_a": ra, "regime_b": rb, "difference": diff,
            "escalated_a": float(ea.mean()), "escalated_b": float(eb.mean()), "escalation_p": mcnemar(ea, eb)[2]}


def control_table(c: Mapping[str, Any], label_a: str, label_b: str) -> pd.DataFrame:
    """:func:`compare_gains` as a table, one column per model: the leader alone, gated LASE,
    always-interact (%), the gain with its 95% CI and McNemar p, fixes and breaks, escalation and
    the regime; the rows a reader compares across the two models on the same problems."""
    cols = {}
    for label, r, esc in ((label_a, c["regime_a"], c["escalated_a"]), (label_b, c["regime_b"], c["escalated_b"])):
        cols[label] = {"leader alone %": round(100 * r["acc_solo"], 1), "gated LASE %": round(100 * r["acc_lase"], 1),
                       "gain, points [95% CI]": f"{points(r['gain'])} [{points(r['gain_lo'])}, {points(r['gain_hi'])}]",
                       "McNemar p": round(r["p_value"], 3), "fixed / broken": f"{r['fixed']} / {r['broken']}",
                       "escalated %": round(100 * esc, 1), "always-interact %": round(100 * r["acc_full"], 1),
                       "regime": r["regime"]}
    return pd.DataFrame(cols)


def describe_control(c: Mapping[str, Any], label_a: str, label_b: str) -> str:
    """The controlled comparison of :func:`compare_gains` in words: the difference of the two gains
    with its sign test and interval, and the escalation rates with their McNemar test, each said to
    differ only where the test says so (p < 0.05)."""
    d = c["difference"]
    ra, rb = c["regime_a"], c["regime_b"]
    gains = "differ" if d["p_value"] < 0.05 and not d["diff_lo"] <= 0 <= d["diff_hi"] else "do not differ detectably"
    esc = "differs" if c["escalation_p"] < 0.05 else "does not differ detectably"

    def favour(k: int, label: str) -> str:
        return f"{k} problem{'' if k == 1 else 's'} favour{'s' if k == 1 else ''} {label}"

    return (f"On the same {c['n']} problems, {label_a}'s gated gain is {points(ra['gain'])} points and {label_b}'s "
            f"{points(rb['gain'])}: the gains {gains} (difference {points(d['diff'])} points, 95% CI "
            f"[{points(d['diff_lo'])}, {points(d['diff_hi'])}], sign test {p_text(d['p_value'])}; "
            f"{favour(d['up'], label_a)}, {favour(d['down'], label_b)}). The gate escalates "
            f"{pct(c['escalated_a'], 1)} of {label_a}'s first answers and {pct(c['escalated_b'], 1)} of {label_b}'s: "
            f"escalation {esc} (exact McNemar {p_text(c['escalation_p'])}). Regimes: {label_a} {ra['regime']}, "
            f"{label_b} {rb['regime']}.")
