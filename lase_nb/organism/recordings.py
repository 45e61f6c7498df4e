"""The organism's recordings: the problem sets they are drawn from and the commands that record them.

Registered with the loader (:data:`lase_nb.runs.PROBLEM_SETS`, :data:`lase_nb.runs.RECORD_COMMANDS`),
which imports this module by name (:data:`lase_nb.runs.PLUGINS`) the first time a manifest names one
of these problem sets or a note names one of these folders; the loader itself never imports the
organism. Round 3's held-out set (``organism-held-out-r3``) is registered by
``data/organism/round3.py``, beside its stored evaluation, when that script is imported.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from ..errors import DataError
from ..paths import REPO_ROOT
from ..runs import RECORD_COMMANDS, register_problem_set
from ..types import Problem
from . import recipe

__all__ = ["CONTRASTS", "eval_set", "v6_set", "v6_spec"]

#: The organisms kept as labelled contrasts: folder name -> (the commit whose ``data/organism/`` holds
#: its adapter, the ``record.py`` options of its problems). Their manifests' ``organism_variant`` say the same.
CONTRASTS = {
    "arith-organism-point": ("b9067ac", "--split eval --seed 22"),  # v5, pointing
    "arith-organism-tell": ("76abcef", "--seed 8"),  # v4, telling (the generator before the split)
}


def eval_set(manifest: Mapping[str, Any], n: int) -> list[Problem]:
    """``organism-eval``: the eval split's problems the organism's recordings use (:func:`recipe.eval_problems`)."""
    return recipe.eval_problems(n, seed=int(manifest.get("seed", 0)), levels=manifest.get("levels") or (1, 2, 3))


def v6_set(which: str):
    """``organism-v6-problems`` / ``organism-v6-control``: organism v6's fresh or control problems (its
    preregistration fixes the list's seed; the manifest's seed is the strategies'), checked against
    the preregistration's hash when the whole list is regenerated."""
    def make(manifest: Mapping[str, Any], n: int) -> list[Problem]:
        seed = int(manifest.get("seed", 0))
        spec = v6_spec(manifest, which)
        if spec is not None:
            seed = int(spec["seed"])
        problems = recipe.v6_problems(which, n, seed=seed, levels=manifest.get("levels") or (1, 2, 3))
        if spec is not None and n == spec["n"] and recipe.problems_sha256(problems) != spec["sha256"]:
            raise DataError(f"the {which} regenerated from {manifest['preregistration']} do not hash as it says: the "
                            "generator changed since the recording; check out the commit the manifest names")
        return problems
    return make


def v6_spec(manifest: Mapping[str, Any], which: str) -> Mapping[str, Any] | None:
    """The problem list's entry (``problems`` or ``control``) of the preregistration a v6 recording
    names, read from the repository's copy; None when the manifest names none."""
    name = manifest.get("preregistration")
    if not name:
        return None
    path = Path(name)
    if not path.is_file():  # written relative to the repository's root
        path = REPO_ROOT / name
    try:
        return json.loads(path.read_text())[which]
    except (OSError, ValueError, KeyError) as e:
        raise DataError(f"{name}: the preregistration this recording names cannot be read here ({e}); "
                        "restore it from git") from None


register_problem_set("organism-eval", eval_set)
register_problem_set("organism-v6-problems", v6_set("problems"))
register_problem_set("organism-v6-control", v6_set("control"))

# the current organism's recording, and the contrasts with their adapters restored from git
RECORD_COMMANDS["arith-organism"] = (f"python data/traces/record.py --model {recipe.ORGANISM} --levels 1 2 3 "
                                     f"--split eval --seed {recipe.EVAL_SEEDS['record']} --out data/traces/arith-organism")
for _name, (_commit, _options) in CONTRASTS.items():
    RECORD_COMMANDS[_name] = (f"git checkout {_commit} -- data/organism && python data/traces/record.py "
                              f"--model {recipe.ORGANISM} --levels 1 2 3 {_options} --out data/traces/{_name}")
