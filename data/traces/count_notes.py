"""Write into each recorded run's manifest how many supporter notes state the final answer
(``notes_stating_answer``, :func:`lase_nb.notes.count_answer_notes`), from its own calls: derived
data, no model call. ``record.py`` writes the same field for new recordings.

    python data/traces/count_notes.py data/traces/*/*/manifest.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from lase_nb.notes import count_answer_notes  # noqa: E402
from lase_nb.runs import problems_from_manifest  # noqa: E402
from lase_nb.traces import load_run  # noqa: E402


def main(argv: list[str]) -> int:
    for manifest in map(Path, argv):
        run = load_run(manifest.parent)
        problems = problems_from_manifest(run.manifest)
        if not problems:
            print(f"{manifest}: its problems cannot be rebuilt here; skipped")
            continue
        doc = json.loads(manifest.read_text())
        doc["notes_stating_answer"] = count_answer_notes(run.calls, run.stages, problems)
        manifest.write_text(json.dumps(doc, indent=2) + "\n")
        print(manifest, json.dumps(doc["notes_stating_answer"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
