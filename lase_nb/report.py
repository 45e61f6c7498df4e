"""A study's table to paste (``lase-nb report``; ``lase-nb record`` prints it at the end).

One row per strategy of chapter 04's comparison table (:func:`lase_nb.tables.main_comparison` over
:func:`lase_nb.tables.strategy_tables`, LASE replayed from its full chain at the thresholds given):
the problems every strategy answered, accuracy with its 95% Wilson interval, the paired
difference from the single agent with both tests (a paired bootstrap interval,
:func:`lase_nb.stats.paired_test`, and the table's exact McNemar test), model calls and tokens
per problem, and dollars per 1,000 problems at a price sheet's row with and without cached input
(:func:`lase_nb.costs.cost_table` over :func:`lase_nb.costs.billed_calls`, chapter 04's bill).
Nothing here computes a number of its own: every column comes from those functions.

- :func:`study_report`: the numbers (a DataFrame; :func:`to_csv` writes them, whole numbers as such);
- :func:`report_display`: the same table for reading; :func:`side_by_side`: several studies' accuracy and
  tokens per problem in one table;
- :func:`format_reports`: what the command prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .costs import Price, billed_calls, cost_table
from .tables import main_comparison, strategy_tables
from .stats import paired_test

__all__ = ["REPORT_COLUMNS", "study_report", "study_reports", "report_display", "side_by_side", "format_reports",
           "to_csv", "load_study", "runs_listing"]

#: The report's columns, in order (accuracies and differences are fractions; dollars per 1,000 problems).
REPORT_COLUMNS = ("study", "strategy", "n", "accuracy", "acc_lo", "acc_hi", "diff_vs_single", "diff_lo", "diff_hi",
                  "wins_vs_single", "losses_vs_single", "mcnemar_p", "calls_per_problem", "tokens_per_problem",
                  "usd_per_1000", "usd_cached_per_1000")


def load_study(folder: str | Path) -> dict[str, Any]:
    """A study's runs by strategy (``lase`` = its full chain), as chapter 04 loads them, each
    checked against the recording's schema (:mod:`lase_nb.schema`). A clear error for a folder
    that does not exist ("no such folder"), one that holds no finished run ("no recordings in")
    and a damaged run (:class:`~lase_nb.schema.RecordingError`)."""
    from .errors import DataError
    from .runs import left_out_runs, load_runs, resolve_data_path
    from .strategies import compared

    where = resolve_data_path(folder)
    if not where.is_dir():
        raise DataError(f"no such folder: {folder} (a relative path is read from the folder you ran the command "
                        f"in); pass a study folder written by `lase-nb record --out FOLDER`")
    runs = load_runs(where, compared(), quiet=True)
    if not runs:
        unfinished = ", ".join(left_out_runs(where))
        raise DataError(f"no recordings in {folder}: no run folder with a manifest.json"
                        + (f" ({unfinished}: unfinished, rerun the command that recorded them)" if unfinished else "")
                        + "; pass a study folder written by `lase-nb record --out FOLDER` (one run folder per strategy)")
    return runs


def runs_listing(folder: str | Path, runs: Mapping[str, Any]) -> str:
    """The run folders of a study the report read (one line), then one line for each it left out,
    with why (unfinished: :data:`lase_nb.runs.UNFINISHED`; a folder of no compared strategy), or
    ``left out: none``."""
    from .runs import RUN_DIRS, left_out_runs, resolve_data_path
    from .strategies import compared

    where = resolve_data_path(folder)
    read = list(dict.fromkeys(run.path.name for run in runs.values()))
    out = dict(left_out_runs(where))
    known = {RUN_DIRS.get(n, n) for n in compared()}
    for p in sorted(where.iterdir()):
        if p.is_dir() and p.name not in read and p.name not in out:
            out[p.name] = ("a run of no strategy the report compares" if p.name not in known else
                           "not readable as a run")
    lines = [f"runs read: {', '.join(read)}"] + [f"left out {d}: {why}" for d, why in out.items()]
    return "\n".join(lines + ([] if out else ["left out: none"]))


def study_reports(folders: Sequence[str | Path], price: str | None = None, prices: str | Path | None = None,
                  tau_lp: float = 0.8, tau_h: float = 0.5) -> tuple[list[pd.DataFrame], list[str]]:
    """The report of each study folder and the line that heads it (label, model, data set,
    thresholds, price). ``price``: the price sheet's row to bill at (default each study's own model,
    when the sheet has it); ``prices``: the sheet (default ``data/prices.json``)."""
    from .costs import load_prices, price_for
    from .runs import study_label

    sheet = load_prices(prices)
    reports, heads, seen = [], [], set()
    for folder in folders:
        runs = load_study(folder)
        m = next(iter(runs.values())).manifest
        model = str(m.get("model") or "")
        at = price_for(price, sheet) if price else sheet.get(model)
        label = study_label(folder)
        if label in seen:
            label = f"{label} ({folder})"
        seen.add(label)
        reports.append(study_report(runs, at, tau_lp, tau_h, study=label))
        bill = (f"dollars at {at.label()}" if at is not None else
                f"no dollars: {model or 'its model'} is not in the price sheet (pass --price MODEL, or --prices with "
                f"a sheet that has it)")
        heads.append(f"study {label!r} ({folder}): {m.get('backend')}:{model} on {m.get('dataset')}; LASE at "
                     f"tau_lp {tau_lp:g}, tau_h {tau_h:g}; {bill}\n{runs_listing(folder, runs)}")
    return reports, heads


def study_report(runs: Mapping[str, Any], price: Price | None = None, tau_lp: float = 0.8, tau_h: float = 0.5,
                 study: str = "", n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """The report of one study's ``runs`` (:func:`load_study`), one row per strategy, columns
    :data:`REPORT_COLUMNS`. Calls, tokens and dollars are per problem over the problems of the
    table (tokens: prompt + completion); without ``price`` the dollar columns are NaN. The single
    agent's own row has no difference and no test. A strategy recorded on far fewer problems than the
    others is left out, as in chapter 04 (:func:`lase_nb.tables.split_by_coverage`); ``attrs["left_out"]``
    names it with its problems."""
    if "lase" in runs or "lase-full" in runs:
        tables = strategy_tables(runs, tau_lp, tau_h)
    else:  # a study without LASE's full chain: its recorded runs as they are
        tables = {s: r.problems for s, r in runs.items()}
    table = main_comparison(tables)
    left_out = {s: int(t["problem_id"].nunique()) for s, t in tables.items() if s not in table.index}
    ids = sorted(set.intersection(*(set(tables[s]["problem_id"].astype(str)) for s in table.index)))
    correct = {s: tables[s].set_index(tables[s]["problem_id"].astype(str)).loc[ids, "correct"].to_numpy(bool)
               for s in table.index}
    billed = billed_calls(runs, tables.get("lase"))
    rows = []
    for s, t in table.iterrows():
        row: dict[str, Any] = {"study": study, "strategy": s, "n": int(t["n"]), "accuracy": t["accuracy"],
                               "acc_lo": t["acc_lo"], "acc_hi": t["acc_hi"]}
        if "single" in correct and s != "single":
            test = paired_test(correct[s], correct["single"], n_boot=n_boot, seed=seed)
            row.update(diff_vs_single=test["diff"], diff_lo=test["diff_lo"], diff_hi=test["diff_hi"],
                       wins_vs_single=t["wins_vs_single"], losses_vs_single=t["losses_vs_single"],
                       mcnemar_p=t["p_vs_single"])
        calls = billed.get(s)
        if calls is not None:
            calls = calls[calls["problem_id"].astype(str).isin(ids)].assign(strategy=s)
            row["calls_per_problem"] = int(cost_table(calls).iloc[0]["calls"]) / len(ids)
            if price is not None:
                usd = cost_table(calls, price, unit="dollars").iloc[0]
                row.update(usd_per_1000=1000 * usd["usd"] / len(ids), usd_cached_per_1000=1000 * usd["usd_cached"] / len(ids))
        row["tokens_per_problem"] = t["avg_tokens"]
        rows.append(row)
    out = pd.DataFrame(rows).reindex(columns=list(REPORT_COLUMNS))
    out.attrs["left_out"] = left_out  # recorded on far fewer problems than the others (chapter 04's own small table)
    return out


def _whole(x: float, digits: int) -> str:
    """A number for reading: a whole number as an integer, else ``digits`` decimals; "" when unknown."""
    if x is None or not np.isfinite(float(x)):
        return ""
    return f"{int(round(float(x)))}" if float(x).is_integer() else f"{float(x):.{digits}f}"


def report_display(report: pd.DataFrame, labels: Mapping[str, str] | None = None) -> pd.DataFrame:
    """:func:`study_report` for reading: percents with intervals, the difference in points with its
    bootstrap interval, ``+wins/-losses`` and McNemar's p, calls per problem, whole tokens, dollars."""
    def pts(d: float, lo: float, hi: float) -> str:
        return "" if pd.isna(d) else f"{100 * d:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]"

    out = pd.DataFrame({
        "strategy": [(labels or {}).get(s, s) for s in report["strategy"]],
        "n": report["n"].astype(int),
        "accuracy % [95% CI]": [f"{100 * a:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"
                                for a, lo, hi in zip(report["accuracy"], report["acc_lo"], report["acc_hi"])],
        "vs single, points [95% bootstrap CI]": [pts(d, lo, hi) for d, lo, hi in
                                                 zip(report["diff_vs_single"], report["diff_lo"], report["diff_hi"])],
        "+wins/-losses": ["" if pd.isna(w) else f"+{int(w)}/-{int(l)}"
                          for w, l in zip(report["wins_vs_single"], report["losses_vs_single"])],
        "McNemar p": report["mcnemar_p"].map(lambda p: "" if pd.isna(p) else f"{p:.3f}"),
        "calls / problem": report["calls_per_problem"].map(lambda v: _whole(v, 2)),
        "tokens / problem": report["tokens_per_problem"].map(lambda v: _whole(round(v), 0) if pd.notna(v) else ""),
    })
    if report["usd_per_1000"].notna().any():
        out["$ / 1,000 problems"] = report["usd_per_1000"].map(lambda v: "" if pd.isna(v) else f"{v:.4f}")
        out["$ / 1,000, cached input"] = report["usd_cached_per_1000"].map(lambda v: "" if pd.isna(v) else f"{v:.4f}")
    return out


def side_by_side(reports: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Several studies' reports in one table: per strategy, each study's accuracy with its interval and
    its tokens per problem (strategies in the first-seen order; "" where a study lacks one)."""
    shown = [report_display(r).assign(study=r["study"].to_numpy()) for r in reports]
    long = pd.concat(shown, ignore_index=True)
    acc = long.pivot(index="strategy", columns="study", values="accuracy % [95% CI]")
    tok = long.pivot(index="strategy", columns="study", values="tokens / problem")
    studies = list(dict.fromkeys(long["study"]))
    order = list(dict.fromkeys(long["strategy"]))
    cols = {}
    for st in studies:
        cols[f"{st}: accuracy %"] = acc[st]
        cols[f"{st}: tokens / problem"] = tok[st]
    return pd.DataFrame(cols).reindex(order).fillna("")


def format_reports(reports: Sequence[pd.DataFrame], headers: Sequence[str]) -> str:
    """What ``lase-nb report`` prints: each study's table under its header, then (for several) the
    studies side by side."""
    parts = []
    for report, head in zip(reports, headers):
        parts += [head, report_display(report).to_string(index=False)]
        short = report.attrs.get("left_out") or {}
        if short:
            parts.append("not in the table, recorded on far fewer problems than the others: "
                         + ", ".join(f"{s} ({n} problem{'' if n == 1 else 's'})" for s, n in short.items()))
        parts.append("")
    if len(reports) > 1:
        parts += ["the studies side by side:", side_by_side(reports).to_string(), ""]
    return "\n".join(parts).rstrip("\n")


def to_csv(reports: Sequence[pd.DataFrame], path: str | Path) -> Path:
    """The reports as one CSV (one row per study and strategy, :data:`REPORT_COLUMNS`); whole
    numbers are written as integers (``16421``, not ``16421.0``), the rest at full precision."""
    table = pd.concat(list(reports), ignore_index=True)
    for col in table.columns:
        if table[col].dtype.kind == "f":
            table[col] = pd.Series([int(v) if np.isfinite(v) and float(v).is_integer() else v for v in table[col]],
                                   index=table.index, dtype=object)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out, index=False)
    return out
