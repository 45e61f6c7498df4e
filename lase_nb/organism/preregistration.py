"""The preregistration: what the held-out recordings will be tested for, fixed on calibration
problems before those recordings exist (``data/traces/preregistration.json``, committed first, so
the history shows the order).

It holds the thresholds, the budget pair (the most accurate thresholds costing at most ``budget``
times the leader alone, chosen on the calibration chains), the primary comparison and its two
tests (a gain is claimed only where both clear), the secondary comparisons with Holm's correction,
and Theorem 3.7's predicted lower bound of the gain (:func:`lase_nb.chapters.correct_seeds.predicted_gain`
is chapter code; the numbers it needs are computed here from the same tables). The analysis reads
the file (:func:`load`, :func:`primary_result`); nothing in it is typed twice.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from ..errors import DataError
from ..paths import DATA_DIR
from ..replay import Chains, chains_from_stages, gate_for_budget, replay
from ..stats import clears_both, holm, paired_test

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PATH", "SECONDARY", "SECONDARY_R3", "build", "build_round3", "describe_calibration", "load", "primary_result", "primary_from_gated_run", "secondary_pairs",
           "GAIN_RECORDINGS", "held_out_gains",
           "secondary_results", "secondary_table", "describe_secondary", "chains_of", "AIM", "aim_result",
           "V6_PATH", "v6_prediction", "build_v6", "bootstrap_settings"]

#: Where the committed preregistration lives.
PATH = DATA_DIR / "traces" / "preregistration.json"

#: The secondary comparisons, one family under Holm's correction: (name, system, reference, where).
SECONDARY: list[dict[str, str]] = [
    {"name": "LASE vs MV(7)", "a": "lase", "b": "mv", "on": "problems both ran"},
    {"name": "LASE vs MAD(3x2)", "a": "lase", "b": "mad", "on": "problems both ran"},
    {"name": "LASE vs MoA(2x3)", "a": "lase", "b": "moa", "on": "problems both ran"},
    {"name": "LASE vs DOWN", "a": "lase", "b": "down", "on": "problems both ran"},
    {"name": "LASE+MV(5) vs MV(7)", "a": "lase-mv", "b": "mv", "on": "problems both ran"},
    {"name": "LASE, shuffled order vs LASE", "a": "lase-shuffled", "b": "lase", "on": "problems both ran"},
    {"name": "LASE at the budget pair vs the leader alone", "a": "lase@budget", "b": "single", "on": "lase-full"},
    {"name": "always-interact vs the leader alone", "a": "lase-full", "b": "single", "on": "lase-full"},
    {"name": "organism's gain minus the base model's gain", "a": "organism gain", "b": "base gain",
     "on": "the level-1 problems both models' full chains ran"},
]


def build(chains: Chains, prediction: Mapping[str, Any] | None, *, source: Mapping[str, Any],
          tau_lp: float = 0.8, tau_h: float = 0.5, budget: float = 1.5, alpha: float = 0.05,
          level: float = 0.95, n_boot: int = 5000, held_out: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The preregistration from calibration ``chains`` (full LASE chains of calibration problems)
    and Theorem 3.7's ``prediction`` from the same chains
    (:func:`lase_nb.chapters.correct_seeds.predicted_gain`; None to leave it out). ``source`` names
    the calibration run (path, model, seed, split, n); ``held_out`` the recordings it fixes the
    tests for."""
    pick = gate_for_budget(chains, budget)
    at_default = replay(chains, tau_lp, tau_h)
    out: dict[str, Any] = {
        "what": "fixed on calibration problems before any held-out recording; read by the analysis",
        "date": time.strftime("%Y-%m-%d"),
        "calibration": dict(source),
        "thresholds": {"tau_lp": tau_lp, "tau_h": tau_h,
                       "rule": "the default 0.8 / 0.5 (inferred from the paper: Table 5's 0.80 row matches "
                               "Table 1's 74.2%), on exp(LP_min) and H_max in nats"},
        "calibration_at_thresholds": {
            "n": int(len(chains.problem_ids)), "leader_alone": float(chains.correct[:, 0].mean()),
            "gated_lase": float(at_default["correct"].mean()),
            "escalated": float((at_default["stop_stage"] > 0).mean())},
        "budget_pair": {"ratio": budget, "tau_lp": float(pick["tau_lp"]), "tau_h": float(pick["tau_h"]),
                        "rule": "the most accurate (tau_lp, tau_h) on a 41 x 42 grid whose replayed tokens are "
                                "at most ratio x the leader alone's (ties: fewer tokens, then higher tau_lp)",
                        "calibration_accuracy": float(pick["accuracy"]),
                        "calibration_escalation": float(pick["escalation_rate"])},
        "primary": {"comparison": "gated LASE at the thresholds vs the leader alone (its stage 0), paired, "
                                  "on the held-out problems of lase-large",
                    "tests": {"mcnemar": {"exact": True, "two_sided": True, "alpha": alpha},
                              "bootstrap": {"kind": "paired percentile", "level": level, "n_boot": n_boot,
                                            "seed": 0}},
                    "claim": "a gain is claimed only where both clear: McNemar p < alpha and the interval "
                             "above zero"},
        "secondary": {"comparisons": SECONDARY, "tests": "the same two tests", "correction": "holm",
                      "alpha": alpha},
        "held_out": dict(held_out or {}),
    }
    if prediction is not None:
        out["prediction"] = {
            "theorem": "3.7: gain >= P(U=1) rho delta when A3 holds, each term at its one-sided lower "
                       "confidence bound on the calibration chains (delta on Appendix A.2's definition)",
            **dict(prediction), "met_if": "the held-out gain's point estimate is at least gain_lower_bound"}
    return out


#: Round 3's family: the first version's, with the careful single agent (a reference the paper does
#: not have) and without the comparisons of runs trained off their format (none are, in round 3).
SECONDARY_R3: list[dict[str, str]] = SECONDARY[:-1] + [
    {"name": "LASE vs the careful single agent", "a": "lase", "b": "careful", "on": "problems both ran"},
    SECONDARY[-1]]


def build_round3(chains: Chains, prediction: Mapping[str, Any] | None, *, source: Mapping[str, Any],
                 model_files: Mapping[str, Any], held_out: Mapping[str, Any], budget: float = 1.5,
                 default: tuple[float, float] = (0.8, 0.5)) -> dict[str, Any]:
    """The second preregistration (round 3's organism), from calibration ``chains`` only: the
    adapter it is written for (``model_files``, with its sha256); thresholds chosen on the chains
    (the inferred defaults unless they escalate no problem or every problem there, else the budget
    pair); the family of :data:`SECONDARY_R3` less any comparison already degenerate on the
    calibration chains (the budget pair when it escalates nothing or equals the thresholds); every
    recording's seed, offset and count (``held_out``); and the calibration numbers, all of them
    (``calibration_at_thresholds``, read by :func:`describe_calibration`)."""
    if not model_files.get("adapter_sha256"):
        raise DataError("a preregistration names the adapter it is written for: model_files needs adapter_sha256")
    esc = float((replay(chains, *default)["stop_stage"] > 0).mean())
    if 0 < esc < 1:
        tau, rule = default, ("the defaults inferred from the paper (Table 5's 0.80 row matches Table 1's 74.2%), "
                              "kept because they escalate some but not all calibration problems")
    else:  # build() chooses the same budget pair again, for its own record
        pick = gate_for_budget(chains, budget)
        tau, rule = (float(pick["tau_lp"]), float(pick["tau_h"])), (
            f"the budget pair ({budget}x the leader alone's tokens): the defaults escalate {esc:.0%} of the "
            "calibration problems, a gate that decides nothing")
    out = build(chains, prediction, source=source, tau_lp=tau[0], tau_h=tau[1], budget=budget, held_out=held_out)
    out["version"] = 2
    out["model_files"] = dict(model_files)
    out["thresholds"]["rule"] = rule
    gated = replay(chains, *tau)["correct"].to_numpy(bool)
    alone = chains.correct[:, 0]
    out["calibration_at_thresholds"].update(
        fixed=int((gated & ~alone).sum()), broken=int((~gated & alone).sum()),
        always_interact=float(chains.correct[:, -1].mean()))
    bp = out["budget_pair"]
    family, left_out = [], []
    for spec in SECONDARY_R3:
        if spec["a"] == "lase@budget" and (bp["calibration_escalation"] == 0 or
                                           (np.isclose(bp["tau_lp"], tau[0]) and np.isclose(bp["tau_h"], tau[1]))):
            left_out.append({**spec, "why": f"degenerate on calibration: the budget pair escalates "
                                            f"{bp['calibration_escalation']:.0%} of the problems"
                                            + (" at the primary thresholds" if bp["calibration_escalation"] else "")})
            continue
        family.append(spec)
    out["secondary"]["comparisons"] = family
    out["secondary"]["left_out"] = left_out
    return out


def describe_calibration(prereg: Mapping[str, Any]) -> str:
    """What the calibration chains showed, all of it: the leader alone, gated LASE at the
    preregistered thresholds (its escalations, fixes and breaks), every stage forced, the budget
    pair and the predicted bound."""
    c, th, bp = prereg["calibration_at_thresholds"], prereg["thresholds"], prereg["budget_pair"]
    src = prereg["calibration"]
    text = (f"On {c['n']} calibration problems (seed {src.get('seed')}, never recorded) the leader alone was right "
            f"on {100 * c['leader_alone']:.1f}%; gated LASE at {th['tau_lp']:g} / {th['tau_h']:g} escalated "
            f"{100 * c['escalated']:.0f}% and was right on {100 * c['gated_lase']:.1f}%")
    if "fixed" in c:
        text += f" ({c['fixed']} fixed, {c['broken']} broken)"
    if "always_interact" in c:
        text += f"; every stage forced, {100 * c['always_interact']:.1f}%"
    text += (f". The budget pair ({bp['ratio']:g}x the leader's tokens) is {bp['tau_lp']:.2f} / {bp['tau_h']:.2f}, "
             f"right on {100 * bp['calibration_accuracy']:.1f}% with {100 * bp['calibration_escalation']:.0f}% "
             "escalated.")
    pred = prereg.get("prediction")
    if pred is not None:
        text += (f" Theorem 3.7's terms at their lower bounds (P(U=1) {pred['p_u1_lcb']:.2f}, rho {pred['rho_lcb']:.2f}, "
                 f"delta {pred['delta_lcb']:+.2f}) predict a gain of at least {100 * pred['gain_lower_bound']:+.1f} points.")
    return text


def load(path: str | Path = PATH) -> dict[str, Any]:
    """The committed preregistration; a clear error when there is none."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"no preregistration at {p}; write it from calibration chains with "
                        "`python data/traces/preregister.py` before recording held-out problems")
    return json.loads(p.read_text())


def bootstrap_settings(prereg: Mapping[str, Any]) -> dict[str, Any]:
    """The paired bootstrap a preregistration fixes, as keyword arguments (n_boot, seed, level) of
    :func:`lase_nb.stats.paired_test` and :func:`lase_nb.organism.regimes.compare_gains`."""
    boot = prereg["primary"]["tests"]["bootstrap"]
    return {"n_boot": boot["n_boot"], "seed": boot["seed"], "level": boot["level"]}


def _test(a: np.ndarray, b: np.ndarray, prereg: Mapping[str, Any]) -> dict[str, Any]:
    alpha = prereg["primary"]["tests"]["mcnemar"]["alpha"]
    t = paired_test(a, b, **bootstrap_settings(prereg))
    t["claimed"] = clears_both(t, alpha)
    return t


def _with_prediction(result: dict[str, Any], prereg: Mapping[str, Any]) -> dict[str, Any]:
    """``result`` with Theorem 3.7's preregistered lower bound and whether the gain meets it (when
    the preregistration has a prediction)."""
    pred = prereg.get("prediction")
    if pred is not None and "gain_lower_bound" in pred:
        result["predicted_lower_bound"] = pred["gain_lower_bound"]
        result["prediction_met"] = bool(result["diff"] >= pred["gain_lower_bound"])
        # a term's lower bound at or below zero: the product was clipped to 0, the theorem promises nothing
        result["vacuous_terms"] = {k[:-4]: float(pred[k]) for k in ("p_u1_lcb", "rho_lcb", "delta_lcb")
                                   if k in pred and not float(pred[k]) > 0}
    elif pred is not None and "range" in pred:  # v6: a predicted effect with a range
        lo, hi = pred["range"]
        result["predicted_range"] = [lo, hi]
        result["prediction_met"] = bool(lo <= result["diff"] <= hi)
    return result


def primary_result(prereg: Mapping[str, Any], chains: Chains) -> dict[str, Any]:
    """The primary comparison on held-out full chains, at the preregistered thresholds and tests:
    gated LASE vs its own stage 0. ``claimed`` is True only when both tests clear."""
    th = prereg["thresholds"]
    lase = replay(chains, th["tau_lp"], th["tau_h"])["correct"].to_numpy(bool)
    out = _test(lase, chains.correct[:, 0], prereg)
    return _with_prediction(out, prereg)


def primary_from_gated_run(prereg: Mapping[str, Any], run: Any) -> dict[str, Any]:
    """The primary comparison on a gated LASE run recorded at the preregistered thresholds
    (``lase-large``): its answers vs its own stage 0 (the leader alone), paired by problem. Refuses a
    run recorded at other thresholds."""
    final, alone = _gated_and_alone(prereg, run)
    out = _test(final.to_numpy(bool), alone.to_numpy(bool), prereg)
    out["escalated"] = int((run.problems.set_index("problem_id").loc[final.index, "stop_stage"] > 0).sum())
    return _with_prediction(out, prereg)


def _gated_and_alone(prereg: Mapping[str, Any], run: Any) -> tuple[Any, Any]:
    """A gated run's final and stage-0 correctness, by problem id on the problems both have;
    refuses a full-chain run and one recorded at other thresholds than the preregistered ones."""
    th, cfg = prereg["thresholds"], run.manifest.get("config", {})
    if cfg.get("full_chain"):
        raise DataError(f"{run.path}: a full-chain run; use primary_result(prereg, chains_of(run))")
    if not (np.isclose(cfg.get("tau_lp", np.nan), th["tau_lp"]) and np.isclose(cfg.get("tau_h", np.nan), th["tau_h"])):
        raise DataError(f"{run.path} ran at tau_lp={cfg.get('tau_lp')}, tau_h={cfg.get('tau_h')}; the preregistered "
                        f"thresholds are {th['tau_lp']} / {th['tau_h']}")
    alone = run.stages[run.stages["stage"] == 0].set_index("problem_id")["correct"]
    final = run.problems.set_index("problem_id")["correct"]
    ids = final.index.intersection(alone.index)
    return final.loc[ids], alone.loc[ids]


def told_answer_sensitivity(prereg: Mapping[str, Any], run: Any, problems: Mapping[str, Any]) -> dict[str, Any]:
    """The primary comparison (:func:`primary_from_gated_run`) again without the problems on which a
    supporter's note on a wrong attempt states the gold answer (:func:`lase_nb.notes.problems_told_the_answer`):
    whether the gain stands without notes that break the rule. Not preregistered; a sensitivity
    analysis beside the primary test. ``problems``: the run's problems by id."""
    from ..notes import problems_told_the_answer

    final, alone = _gated_and_alone(prereg, run)
    told = problems_told_the_answer(run.calls, run.stages, problems)
    keep = ~final.index.isin(list(told))
    out = _test(final[keep].to_numpy(bool), alone[keep].to_numpy(bool), prereg)
    out["removed"] = len(told)
    out["removed_fixed"] = int(sum(bool(final.get(pid)) and not bool(alone.get(pid)) for pid in told))
    return out


def describe_told_answer_sensitivity(result: Mapping[str, Any]) -> str:
    """Markdown: :func:`told_answer_sensitivity` in one sentence."""
    k = result["removed"]
    return (f"*Sensitivity, not preregistered:* on {k} problem{'' if k == 1 else 's'} a supporter's note on a wrong attempt "
            f"states the gold answer, which the rule forbids ({result['removed_fixed']} of them end fixed); without "
            f"them, {result['n']} problems: {100 * result['diff']:+.1f} points [{100 * result['diff_lo']:+.1f}, "
            f"{100 * result['diff_hi']:+.1f}], {result['b']} fixed and {result['c']} broken, exact McNemar "
            f"p = {result['p_value']:.3g}: the gain {'stands by both tests' if result['claimed'] else 'no longer clears both tests'} "
            f"without the notes that break the rule.")


#: The recordings on which the organism's gain of gated LASE over the leader alone can be read, the
#: preregistered one first (:func:`held_out_gains`): key -> what the number is.
GAIN_RECORDINGS = {
    "lase-large": "the preregistered primary test: the gated run on further held-out problems against its own stage 0",
    "lase-full": "the full chains replayed at the thresholds against their own stage 0, on the secondary family's problems",
    "single": "gated LASE replayed from the full chains against the separately recorded single-agent run, on the "
              "problems both ran (chapter 04's table)",
}


def held_out_gains(prereg: Mapping[str, Any], runs: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The organism's gain of gated LASE (at the preregistered thresholds) over the leader alone on
    every recording of ``runs`` that measures it (:data:`GAIN_RECORDINGS`), each a paired test with
    ``n``, ``where`` and the preregistered claim rule. Only ``"lase-large"`` is the preregistered
    primary test, and only it carries the verdict on Theorem 3.7's prediction; the others are the
    same contrast on other problems. ``runs``: :func:`lase_nb.runs.load_runs` of the study's folder
    (``lase`` or ``lase-full`` as the full chain)."""
    from ..tables import paired_correct, strategy_tables

    out: dict[str, dict[str, Any]] = {}
    if "lase-large" in runs:
        out["lase-large"] = primary_from_gated_run(prereg, runs["lase-large"])
    full = next((runs[k] for k in ("lase", "lase-full") if k in runs), None)
    if full is not None:
        out["lase-full"] = primary_result(prereg, chains_of(full))
        out["lase-full"].pop("prediction_met", None)
        if "single" in runs:
            th = prereg["thresholds"]
            pair = paired_correct(strategy_tables({"lase": full, "single": runs["single"]}, th["tau_lp"], th["tau_h"]),
                                  "lase", "single")
            if pair is not None:
                out["single"] = _test(*pair, prereg)
    for key, r in out.items():
        r["where"] = GAIN_RECORDINGS[key]
    return out


def secondary_pairs(prereg: Mapping[str, Any], runs: Mapping[str, Any],
                    control: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The inputs of the secondary family (:func:`secondary_results`) from one model's recorded runs
    (``runs``: :func:`lase_nb.runs.load_runs` of its folder, the full chain as ``lase`` or
    ``lase-full``), as the preregistration's comparisons name them: two strategies on the problems both ran; LASE at
    the budget pair and always-interact against the leader alone on the full chains; and, given
    ``control`` (:func:`lase_nb.organism.regimes.compare_gains` of the model under test and the other model
    on the same problems, computed once by the caller), the difference of their gains. A comparison
    whose runs are missing is left out."""
    from ..tables import paired_correct, strategy_tables

    th, bp = prereg["thresholds"], prereg["budget_pair"]
    full = next((runs[k] for k in ("lase", "lase-full") if k in runs), None)
    if full is None:
        raise DataError(f"the secondary family needs the full-chain LASE run ('lase' or 'lase-full'); have {list(runs)}")
    chains = chains_of(full)
    tables = strategy_tables(runs, th["tau_lp"], th["tau_h"])
    alone = chains.correct[:, 0]
    pairs: dict[str, Any] = {}
    for spec in prereg["secondary"]["comparisons"]:
        a, b, name = spec["a"], spec["b"], spec["name"]
        if spec["on"] == "problems both ran":
            pair = paired_correct(tables, a, b)
            if pair is not None:
                pairs[name] = pair
        elif a == "lase@budget":
            pairs[name] = (replay(chains, bp["tau_lp"], bp["tau_h"])["correct"].to_numpy(bool), alone)
        elif a == "lase-full":
            pairs[name] = (chains.correct[:, -1], alone)
        elif a == "organism gain" and control is not None:
            pairs[name] = control["difference"]
    return pairs


def secondary_table(rows: list[dict]) -> "pd.DataFrame":
    """:func:`secondary_results` as a table: one row per comparison with the two accuracies in % (for
    the difference of gains, the two gains in points), the difference and its 95% interval in
    points, the raw and the Holm-adjusted p, and whether a claim is made."""
    import pandas as pd

    def pct(x: float) -> float:
        return round(100 * float(x), 1)

    out = []
    for r in rows:
        first, second = (r["acc_a"], r["acc_b"]) if "acc_a" in r else (r["gain_a"], r["gain_b"])
        out.append({"comparison": r["name"], "first": pct(first), "second": pct(second),
                    "difference, points [95% CI]": f"{100 * r['diff']:+.1f} [{100 * r['diff_lo']:+.1f}, {100 * r['diff_hi']:+.1f}]",
                    "n": r["n"], "p": r["p_value"], "Holm p": r["p_holm"], "claimed": r["claimed"]})
    return pd.DataFrame(out).set_index("comparison")


def secondary_results(prereg: Mapping[str, Any], pairs: Mapping[str, Any]) -> list[dict]:
    """The secondary comparisons present in ``pairs``, each with the two tests and Holm's adjusted
    p-value over the family that ran; ``claimed`` uses the adjusted p. A value is either the two
    paired correctness arrays (tested here with :func:`lase_nb.stats.paired_test`) or a test already
    run (a dict with diff, diff_lo, diff_hi and p_value, e.g. :func:`lase_nb.stats.gain_difference`
    for the difference of two models' gains)."""
    rows = []
    for spec in prereg["secondary"]["comparisons"]:
        if spec["name"] in pairs:
            v = pairs[spec["name"]]
            test = dict(v) if isinstance(v, Mapping) else _test(np.asarray(v[0], bool), np.asarray(v[1], bool), prereg)
            rows.append({"name": spec["name"], **test})
    adj = holm([r["p_value"] for r in rows])
    alpha = prereg["secondary"]["alpha"]
    for r, p in zip(rows, adj):
        r["p_holm"] = float(p)
        r["claimed"] = clears_both({**r, "p_value": p}, alpha)
    return rows


def describe_secondary(rows: list[dict]) -> str:
    """Which comparisons of the family (:func:`secondary_results`) are claimed after Holm's
    adjustment, and which would have looked significant unadjusted."""
    if not rows:
        return "No comparison of the preregistered family has its runs recorded."
    claimed = [r["name"] for r in rows if r["claimed"]]
    lost = [r["name"] for r in rows if not r["claimed"] and r["p_value"] < 0.05 and
            (r["diff_lo"] > 0 or r["diff_hi"] < 0)]
    head = (f"Of the {len(rows)} preregistered comparisons, {len(claimed)} "
            f"{'is' if len(claimed) == 1 else 'are'} claimed after Holm's adjustment"
            + (f": {', '.join(claimed)}." if claimed else "."))
    tail = (f" Unadjusted, {', '.join(lost)} would also have cleared both tests; the family's correction "
            "withdraws that claim." if lost else
            " No other comparison clears both tests even before the adjustment: the rest are not "
            "distinguishable from chance on these problems, which is not the same as equal.")
    return head + tail


#: The controlled experiment's aim (``data/traces/report.py``): gated LASE at most ``points`` below
#: MV(7) or above it, at most ``token_ratio`` times MV(7)'s tokens per problem, on the problems both ran.
AIM = {"points": 0.01, "token_ratio": 0.7}


def aim_result(lase: "pd.DataFrame", mv: "pd.DataFrame") -> dict[str, Any]:
    """The aim (:data:`AIM`) on two strategies' problem tables (``problem_id``, ``correct``,
    ``total_tokens``): their accuracies and token ratio on the problems both ran, and ``met``."""
    a, b = (t.set_index(t["problem_id"].astype(str)) for t in (lase, mv))
    ids = a.index.intersection(b.index)
    if ids.empty:
        raise DataError("LASE and MV(7) share no problem: the aim compares them on the problems both ran")
    acc_lase, acc_mv = float(a.loc[ids, "correct"].mean()), float(b.loc[ids, "correct"].mean())
    ratio = float(a.loc[ids, "total_tokens"].mean() / b.loc[ids, "total_tokens"].mean())
    return {"n": len(ids), "acc_lase": acc_lase, "acc_mv": acc_mv, "token_ratio": ratio,
            "met": bool(acc_lase >= acc_mv - AIM["points"] and ratio <= AIM["token_ratio"])}


def chains_of(run: Any) -> Chains:
    """Full chains of a recorded full-chain LASE run."""
    if run.stages.empty:
        raise DataError(f"{run.path}: no stages; the preregistration needs a full-chain LASE run")
    return chains_from_stages(run.stages)


def describe_primary(result: Mapping[str, Any], prereg: Mapping[str, Any]) -> str:
    """Markdown: the preregistered primary test (:func:`lase_nb.organism.preregistration.primary_from_gated_run`)
    with both tests, the claim rule's verdict and Theorem 3.7's preregistered prediction."""
    th = prereg["thresholds"]
    text = (f"**The preregistered primary test** (fixed {prereg['date']}, before the recording): gated LASE at "
            f"{th['tau_lp']:g} / {th['tau_h']:g} against the leader alone on {result['n']} held-out problems "
            f"({result.get('escalated', '?')} escalated): {100 * result['acc_a']:.1f}% vs {100 * result['acc_b']:.1f}%, "
            f"{100 * result['diff']:+.1f} points [{100 * result['diff_lo']:+.1f}, {100 * result['diff_hi']:+.1f}], "
            f"{result['b']} fixed and {result['c']} broken, exact McNemar p = {result['p_value']:.3g}. "
            f"A gain is claimed only where both tests clear: **{'claimed' if result['claimed'] else 'not claimed'}**.")
    if "predicted_range" in result:
        lo, hi = result["predicted_range"]
        side = ("met" if result["prediction_met"] else
                "missed: the point estimate lies above its range" if result["diff"] > hi else
                "missed: the point estimate lies below its range")
        text += f" The preregistered prediction, {100 * lo:+.1f} to {100 * hi:+.1f} points, is {side}."
    if result.get("vacuous_terms"):
        terms = ", ".join(f"{k} >= {v:+.2f}" for k, v in result["vacuous_terms"].items())
        text += (f" Theorem 3.7's preregistered lower bound is vacuous: a term's lower confidence bound is not "
                 f"positive ({terms}), so the product was clipped to {100 * result['predicted_lower_bound']:+.1f} "
                 f"points and the theorem predicts no gain; there is nothing for the gain to meet or miss.")
    elif "predicted_lower_bound" in result:
        text += (f" Theorem 3.7's preregistered lower bound, {100 * result['predicted_lower_bound']:+.1f} points, is "
                 f"{'met' if result['prediction_met'] else 'missed'} by the point estimate.")
    return text


def describe_held_out_gains(gains: Mapping[str, Mapping[str, Any]], prereg: Mapping[str, Any]) -> str:
    """Markdown: one number and one verdict for the organism's preregistered gain, and the other
    recordings' numbers beside it with their ``n`` (``gains``:
    :func:`lase_nb.organism.preregistration.held_out_gains`). The verdict, and whether Theorem 3.7's
    prediction is met, are read from the preregistered primary test alone; the others say whether
    their interval contains its estimate (the same contrast, measured on other problems)."""
    if "lase-large" not in gains:
        return ("The preregistered primary test needs the gated held-out run `lase-large`, which this study lacks; "
                "the gains below are not that test. " + _others(gains, None))
    head = describe_primary(gains["lase-large"], prereg)
    return head + " " + _others({k: v for k, v in gains.items() if k != "lase-large"}, gains["lase-large"])


def _others(gains: Mapping[str, Mapping[str, Any]], primary: Mapping[str, Any] | None) -> str:
    if not gains:
        return ""
    parts = []
    for g in gains.values():
        text = (f"{100 * g['diff']:+.1f} points [{100 * g['diff_lo']:+.1f}, {100 * g['diff_hi']:+.1f}] on {g['n']} "
                f"problems, {g['where']}")
        if primary is not None:
            inside = g["diff_lo"] <= primary["diff"] <= g["diff_hi"]
            text += f"; its interval {'contains' if inside else 'excludes'} the primary estimate"
        parts.append(text + ".")
    return ("Other numbers for the same contrast, not the preregistered test and carrying no verdict: "
            + " ".join(parts))


# ---------------------------------------------------------------- organism v6 (v5 + a revision adapter)

#: Where v6's preregistration is committed, alone, before any fresh recording.
V6_PATH = DATA_DIR / "traces" / "arith-organism-v6" / "preregistration.json"

#: What the audit of the revision lead (data/revision/README.md) removes from the pilot's stage-1 gain
#: on the spent problems: the fixes of problems whose chain a pilot training example computes, and
#: the fix after a note that states the gold number (+9.5 -> +7.0 points).
V6_INFLATION = 0.025
#: The audit's expectation for the whole chain on fresh problems, in points (before step 2).
V6_AUDIT_RANGE = (0.03, 0.06)


def v6_prediction(spent: Mapping[str, Any], inflation: float = V6_INFLATION,
                  audit: tuple[float, float] = V6_AUDIT_RANGE) -> dict[str, Any]:
    """The predicted whole-chain gain on fresh problems, from the whole chain on the spent problems
    (``spent``: :func:`lase_nb.organism.revision.whole_chain_test` of v6 there) and the audit's reasons: the
    spent estimate less :data:`V6_INFLATION` (what overlapping chains and a note that states the answer
    added there), and a range from the lower of that and the audit's low end to the higher of that and
    the audit's high end. Rule fixed in code before step 2 ran."""
    effect = float(spent["diff"]) - inflation
    lo, hi = min(effect, audit[0]), max(effect, audit[1])
    return {"effect": round(effect, 4), "range": [round(lo, 4), round(hi, 4)],
            "rule": f"the whole chain's gain on the 200 spent problems ({100 * spent['diff']:+.1f} points) less "
                    f"{100 * inflation:.1f} points (the audit: overlapping chains and a note that states the answer "
                    f"inflated the pilot's stage-1 gain by that much), widened to the audit's "
                    f"{100 * audit[0]:+.0f} to {100 * audit[1]:+.0f}",
            "met_if": "the primary gain's point estimate lies in the range"}


def build_v6(*, model_files: Mapping[str, Any], problems: Mapping[str, Any], control: Mapping[str, Any],
             spent: Mapping[str, Mapping[str, Any]], prediction: Mapping[str, Any], power: float,
             tau_lp: float = 0.8, tau_h: float = 0.5, alpha: float = 0.05, n_boot: int = 5000) -> dict[str, Any]:
    """v6's preregistration: the two adapters (``model_files``, each with its sha256), the thresholds,
    the fresh problems and the control's (``problems`` / ``control``: seed, levels, n, what was
    excluded, the list's sha256), step 2's numbers on the spent problems (``spent``: v5's and v6's
    :func:`~lase_nb.organism.revision.whole_chain_test`), the primary endpoint judged once by both tests, the
    predicted effect (:func:`v6_prediction`) with the test's power there, the secondary endpoints, and
    what is said when the gain is not claimed."""
    models = model_files.get("models") or {}
    if len(models) < 2 or not all(m.get("adapter_sha256") for m in models.values()):
        raise DataError("v6's preregistration names both adapters with their sha256 (model_files['models'])")
    keep = ("n", "acc_a", "acc_b", "diff", "diff_lo", "diff_hi", "b", "c", "p_value", "escalated", "token_ratio")
    return {
        "what": "organism v6, fixed before any fresh recording; read by the analysis (chapters 06 and 07)",
        "version": 3,
        "date": time.strftime("%Y-%m-%d"),
        "candidate": "v6 = v5 for the leader's first answer and every supporter (devil, collaborator, expert); the "
                     "revision pilot for every leader revision after a note (stages 1-3) and its extraction step. "
                     "Same prompts (revise_messages, no worked examples), greedy, the recording's caps. No tuning on "
                     "any fresh problem.",
        "model_files": dict(model_files),
        "thresholds": {"tau_lp": tau_lp, "tau_h": tau_h,
                       "rule": "the default 0.8 / 0.5 (inferred from the paper: Table 5's 0.80 row matches Table 1's "
                               "74.2%), on exp(LP_min) and H_max in nats; the gate after a revision reads the "
                               "revision's own answer tokens"},
        "problems": dict(problems),
        "control": dict(control),
        "spent": {"what": "step 2: the whole chain on the 200 problems of arith-organism-point/lase-full (already "
                          "used, so not evidence)", **{k: {f: v[f] for f in keep if f in v} for k, v in spent.items()}},
        "primary": {"comparison": "gated LASE (v6, whole chain) vs the leader alone (its stage 0), paired, on the "
                                  "fresh problems of lase-large; judged once",
                    "tests": {"mcnemar": {"exact": True, "two_sided": True, "alpha": alpha},
                              "bootstrap": {"kind": "paired percentile", "level": 0.95, "n_boot": n_boot, "seed": 0}},
                    "claim": "a gain is claimed only where both clear: McNemar p < alpha and the interval above zero"},
        "prediction": {**dict(prediction), "power": round(float(power), 3)},
        "secondary": {
            "endpoints": [
                "stage 1: escalated wrong first answers fixed and escalated right ones broken (counts and rates)",
                "tokens: gated LASE's mean tokens (prompt + completion) over the leader alone's",
                "the paper's headline against MV(7) on the same problems (mv): the aim, LASE within "
                f"{100 * AIM['points']:g} point of MV(7) at <= {AIM['token_ratio']:g}x its tokens (preregistration.AIM)",
                "notes stating the final answer, per role (lase_nb.notes)",
                "the control: each model's gain (gated LASE vs alone) on the control's level-1 problems"],
            "tests": "the same two tests, reported, no claim beyond the primary"},
        "if_not_claimed": "the chapters say that v6's leader that reads notes did not show a gain on fresh problems "
                          "by the preregistered rule, print the estimate and interval whatever the sign, and keep v5 "
                          "as the organism the headline figure and chapter 05 show",
    }
