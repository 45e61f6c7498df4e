"""``python -m lase_nb.backends.local [MODEL]``: convert the default model (or ``MODEL``) once."""

import sys
import time

from .files import DEFAULT_MODEL, prepare

t = time.perf_counter()
where = prepare(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_MODEL)
print(f"model ready at {where} ({time.perf_counter() - t:.1f} s)")
