"""The chapter budget: what each executed chapter presents, against the core path's budget.

Reads executed chapters (default ``build/notebooks``, written by ``make notebooks``) and prints per
chapter the cells the book shows open, the words of their markdown, the words printed as prose,
the tables shown (with the widest one's columns), the figures shown, an estimate of the minutes a
lecturer needs to present the whole chapter and its seminar path, the cells tagged ``seminar``
(the outside lecturer's clock, ``lase_nb.book.budget.presenting_minutes``: prose and printed results at
120 words a minute, command lines and code skipped; 3 minutes a multi-panel figure, 2 a
single-panel one, 2.5 a slider panel, 1-3 a table by its size, 2 a predict-then-run pause, 1.5 a
transcript exchange, 1.5 for each term the path uses before it defines it), and whether the
chapter meets the budget: at most 40 cells, 1,500 words of markdown, 5 tables of at most 6 columns
and 5 figures per core chapter, 11,000 words of markdown over the core chapters, and a seminar
path that fits 90 minutes with 9 of discussion. Then the seminar path's minutes section by
section, and the terms it uses before defining them (``lase_nb.book.budget.undefined_terms``). The
README's chapter minutes are this script's ``seminar`` column. The appendix is listed for
information; its pages are read, not presented.

    python benchmarks/chapter_budget.py                    # build/notebooks
    python benchmarks/chapter_budget.py /tmp/run --check   # exit 1 when a core chapter is over
    python benchmarks/chapter_budget.py --markdown         # the table as markdown (for the README)
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from lase_nb.book.budget import (BUDGET, CORE_MINUTES, DISCUSSION_MINUTES, budget_table, path_minutes, section_budgets,
                            seminar_minutes, undefined_terms)
from lase_nb.book.execution import APPENDIX_GLOB, CHAPTER_GLOB, REPO

COLUMNS = ("chapter", "cells", "words", "printed words", "tables", "max columns", "figures", "minutes", "seminar")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("executed", nargs="?", default=str(REPO / "build" / "notebooks"),
                    help="folder of executed chapters (default: build/notebooks)")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when a core chapter, the core words or the seminar path is over")
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    for field in ("cells", "words", "tables", "columns", "figures", "core_words"):
        ap.add_argument(f"--{field.replace('_', '-')}", type=int, default=getattr(BUDGET, field),
                        help=f"budget: {field.replace('_', ' ')} (default {getattr(BUDGET, field):,})")
    ap.add_argument("--minutes", type=int, default=CORE_MINUTES,
                    help=f"budget: the seminar's minutes, its path and {DISCUSSION_MINUTES} of discussion "
                         f"(default {CORE_MINUTES})")
    args = ap.parse_args(argv)
    budget = replace(BUDGET, **{f: getattr(args, f) for f in ("cells", "words", "tables", "columns", "figures",
                                                                "core_words")})
    folder = Path(args.executed)
    core, appendix = sorted(folder.glob(CHAPTER_GLOB)), sorted(folder.glob(APPENDIX_GLOB))
    if not core and not appendix:
        print(f"no executed chapters in {folder}; run `make notebooks` first")
        return 1 if args.check else 0
    rows = budget_table(core, budget)
    extra = budget_table(appendix, budget)
    total = {c: sum(r[c] for r in rows) for c in COLUMNS[1:] if c != "max columns"}
    head = [*COLUMNS, "meets budget"]
    if args.markdown:
        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
        for r in rows + extra:
            meets = ("yes" if r["meets budget"] else f"no: {r['over']}") if r in rows else "(appendix)"
            print("| " + " | ".join(str(r[c]) for c in COLUMNS) + f" | {meets} |")
        print(f"| core total | " + " | ".join(str(total.get(c, "")) for c in COLUMNS[1:]) + " | |")
    else:
        widths = [max(len(c), 16 if c == "chapter" else 5) for c in COLUMNS]
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(COLUMNS, widths)))
              + "  meets budget")
        for r in rows + extra:
            meets = ("yes" if r["meets budget"] else f"no: {r['over']}") if r in rows else "(appendix)"
            print("  ".join(str(r[c]).rjust(w) if i else str(r[c]).ljust(w)
                            for i, (c, w) in enumerate(zip(COLUMNS, widths))) + "  " + meets)
        print("  ".join(str(total.get(c, "")).rjust(w) if i else "core total".ljust(w)
                        for i, (c, w) in enumerate(zip(COLUMNS, widths))))
    sections = section_budgets(core)
    print("\nthe seminar path by section (minutes by the lecturer's clock; terms used before the path defines them):")
    for b in sections:
        print(f"  {b.chapter:<24} {b.minutes:5.1f}" + (f"  undefined: {', '.join(b.undefined)}" if b.undefined else ""))
    undefined = undefined_terms(core)
    print(f"undefined terms on the path: {len(undefined)}"
          + "".join(f"\n  {u.term} (first used in {u.section})" for u in undefined))
    total["seminar"] = path_minutes(seminar_minutes(core))  # the one number the pages print
    seminar = total["seminar"] + DISCUSSION_MINUTES
    over_minutes = seminar > args.minutes
    over_total = total["words"] > budget.core_words or over_minutes
    print(f"core chapters: {total['words']:,} words of markdown (budget {budget.core_words:,}"
          f"{', over' if total['words'] > budget.core_words else ''}), about {total['minutes']} minutes presented "
          f"whole; the seminar path {total['seminar']} minutes + {DISCUSSION_MINUTES} of discussion = {seminar} "
          f"(budget {args.minutes}{', over' if over_minutes else ''}); "
          f"{sum(r['meets budget'] for r in rows)} of {len(rows)} chapters meet the budget")
    print(f"RESULT core_words={total['words']} core_minutes={total['minutes']} seminar_minutes={seminar} "
          f"chapters_within={sum(r['meets budget'] for r in rows)}/{len(rows)} undefined_terms={len(undefined)}")
    if args.check and (over_total or not all(r["meets budget"] for r in rows)):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
