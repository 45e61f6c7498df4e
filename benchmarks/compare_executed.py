"""Compare two runs of the executed chapters: the same outputs, cell by cell, and the same figures.

    python benchmarks/compare_executed.py BEFORE_NOTEBOOKS AFTER_NOTEBOOKS [--figures BEFORE_FIGS AFTER_FIGS]
        [--root OLD_ROOT NEW_ROOT ...]

For a change that should not change behaviour (issue 66 moved modules between folders): each
executed chapter (``lase-nb notebooks --out``) is read as JSON; the outputs of its code cells, in
order, are compared after the paths are normalised (each ``--root`` pair, and the two folders given,
are replaced by placeholders) and the run's noise is dropped (execution counts, timings, papermill's
metadata). Images are compared as their bytes. Prints one line per chapter (identical, or the first
cells that differ and how) and per figure folder; exits 1 when anything differs.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

# a tqdm bar or a duration printed by a cell is noise, not an output
NOISE = [re.compile(r"\d+(\.\d+)?\s*(s|ms|it/s|s/it)\b"), re.compile(r"0x[0-9a-f]{6,}"),
         # a Bokeh panel names its document and root by random UUIDs
         re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")]


def _normalise(text: str, roots: list[tuple[str, str]]) -> str:
    for i, (a, b) in enumerate(roots):
        text = text.replace(a, f"<ROOT{i}>").replace(b, f"<ROOT{i}>")
    for pattern in NOISE:
        text = pattern.sub("<N>", text)
    return text


def cell_outputs(path: Path, roots: list[tuple[str, str]]) -> list[list[str]]:
    """Each code cell's outputs as normalised strings (images as they are)."""
    nb = json.loads(path.read_text())
    cells = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code" or "injected-parameters" in cell.get("metadata", {}).get("tags", []):
            continue
        outs: list[str] = []
        for o in cell.get("outputs", []):
            if o["output_type"] == "stream":  # how a print is cut into stream messages is timing, not output
                text = "".join(o["text"])
                if outs and outs[-1].startswith(f"{o['name']}: "):
                    outs[-1] += _normalise(text, roots)
                else:
                    outs.append(f"{o['name']}: " + _normalise(text, roots))
            elif o["output_type"] in ("display_data", "execute_result"):
                for mime, data in sorted(o["data"].items()):
                    data = "".join(data) if isinstance(data, list) else data
                    outs.append(f"{mime}: " + (data if mime.startswith("image/") else _normalise(data, roots)))
            elif o["output_type"] == "error":
                outs.append(f"error: {o['ename']}: {_normalise(o['evalue'], roots)}")
        cells.append(outs)
    return cells


def compare_notebooks(before: Path, after: Path, roots: list[tuple[str, str]]) -> bool:
    same = True
    names = sorted(p.name for p in before.glob("*.ipynb"))
    missing = sorted({p.name for p in after.glob("*.ipynb")} ^ set(names))
    if missing:
        print(f"chapters in one run only: {missing}")
        same = False
    for name in names:
        if not (after / name).exists():
            continue
        a, b = cell_outputs(before / name, roots), cell_outputs(after / name, roots)
        if len(a) != len(b):
            print(f"{name}: {len(a)} code cells before, {len(b)} after")
            same = False
            continue
        diff = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        if diff:
            same = False
            print(f"{name}: {len(diff)} of {len(a)} code cells differ (cells {diff[:8]})")
            for i in diff[:3]:
                for x, y in zip(a[i] + [""] * len(b[i]), b[i] + [""] * len(a[i])):
                    if x != y:
                        at = next((k for k, (c, d) in enumerate(zip(x, y)) if c != d), min(len(x), len(y)))
                        print(f"  cell {i}, from character {at}:\n    before: {x[max(0, at - 80):at + 220]!r}\n"
                              f"    after:  {y[max(0, at - 80):at + 220]!r}")
                        break
        else:
            print(f"{name}: identical ({len(a)} code cells, {sum(map(len, a))} outputs)")
    return same


def compare_folders(before: Path, after: Path) -> bool:
    a = {p.relative_to(before): p for p in before.rglob("*") if p.is_file()}
    b = {p.relative_to(after): p for p in after.rglob("*") if p.is_file()}
    only = sorted(str(p) for p in set(a) ^ set(b))
    differ = sorted(str(p) for p in set(a) & set(b) if a[p].read_bytes() != b[p].read_bytes())
    print(f"figures {before} vs {after}: {len(set(a) & set(b))} in both, {len(differ)} differ"
          + (f" ({differ[:10]})" if differ else "") + (f"; in one only: {only[:10]}" if only else ""))
    return not only and not differ


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--figures", nargs=2, type=Path, action="append", default=[],
                    help="two figure folders to compare byte for byte (repeatable)")
    ap.add_argument("--root", nargs=2, action="append", default=[], help="two paths that mean the same place")
    args = ap.parse_args(argv)
    roots = [tuple(r) for r in args.root] + [(str(args.before), str(args.after))]
    roots += [(str(a), str(b)) for a, b in args.figures]
    same = compare_notebooks(args.before, args.after, roots)
    for a, b in args.figures:
        same = compare_folders(a, b) and same
    print("SAME" if same else "DIFFERENT")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
