"""Where the repository is: the one constant every module that reads the committed data uses.

The package is installed editable from the repository (``pip install -e .``), so the committed
data (``data/``), the figures and the notebooks lie beside it.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["REPO_ROOT", "DATA_DIR"]

#: The repository this package was installed from (editable install); data paths fall back to it.
REPO_ROOT: Path = Path(__file__).resolve().parents[1]
#: The committed data: recordings, the organism's adapters, the ceiling and revision results, prices.
DATA_DIR: Path = REPO_ROOT / "data"
