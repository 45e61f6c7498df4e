"""Execute the notebook collection with papermill (``make notebooks``, ``lase-nb notebooks``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Sequence

from .errors import ConfigError

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPO / "notebooks"


def list_notebooks(names: Sequence[str] | None = None) -> list[Path]:
    """The collection's notebooks in chapter order, optionally filtered by name or prefix."""
    books = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    if not names:
        return books
    chosen = [b for b in books if any(b.stem == n or b.stem.startswith(n) for n in names)]
    if not chosen:
        raise ConfigError(f"no notebook matches {list(names)}; available: {', '.join(b.stem for b in books)}")
    return chosen


def run_notebooks(names: Sequence[str] | None = None, params: dict[str, Any] | None = None,
                  out: Path = REPO / "build" / "notebooks", timeout: int = 1800) -> dict[str, float]:
    """Run each notebook with papermill into ``out``; pass each only the parameters it declares."""
    import papermill as pm

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    params = dict(params or {})
    times = {}
    for nb in list_notebooks(names):
        declared = pm.inspect_notebook(str(nb))
        mine = {k: v for k, v in params.items() if k in declared}
        t0 = time.perf_counter()
        print(f"[notebooks] {nb.name} {mine or ''}", flush=True)
        pm.execute_notebook(str(nb), str(out / nb.name), parameters=mine, cwd=str(NOTEBOOKS),
                            kernel_name="python3", progress_bar=False, execution_timeout=timeout)
        times[nb.stem] = time.perf_counter() - t0
        print(f"[notebooks] {nb.name} done in {times[nb.stem]:.1f} s", flush=True)
    return times
