"""One meaning per colour on the seminar path (issue 67, item 5): the house's colours each name one
thing (``plots.MEANINGS``), and every figure the path shows, drawn from the committed recordings as
its chapter draws it, uses no other colour and names each colour's meaning where it labels one."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from lase_nb import plots  # noqa: E402
from lase_nb.book import budget  # noqa: E402

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


@pytest.fixture(autouse=True)
def _own_rc():
    """The house style applied here stays here."""
    with matplotlib.rc_context():
        plots.set_style()
        yield
        plt.close("all")


def test_no_colour_of_the_house_means_two_things():
    from matplotlib.colors import to_rgb

    colours = [(m.name, np.array(to_rgb(c))) for m in plots.MEANINGS for c in m.colors]
    for i, (a, ca) in enumerate(colours):
        assert not plots.is_neutral(tuple(ca)), f"{a}: a grey names nothing"
        for b, cb in colours[i + 1:]:
            if a != b:
                assert np.linalg.norm(ca - cb) > plots.SAME_COLOR, (a, b)
    assert len({m.name for m in plots.MEANINGS}) == len(plots.MEANINGS)


def test_the_leader_alone_wears_one_colour():
    assert plots.style("solo")["color"] == plots.style("single")["color"]
    assert plots.meaning_of(plots.style("solo")["color"]).name == "one model answers alone"


def test_colour_problems_finds_a_foreign_colour_and_a_borrowed_one():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], color=plots.style("mv")["color"], label="majority vote")
    ax.plot([0, 1], [1, 0], color="0.4", label="a reference line")
    ax.legend()
    assert plots.colour_problems(fig) == []
    ax.plot([0, 1], [0.5, 0.5], color="C1", label="start 50%")  # seaborn's orange is LASE's
    ax.bar([0.5], [0.2], color="#7FFF00")  # no colour of the house
    ax.text(0.2, 0.2, "leader alone", color=plots.style("lase")["color"])
    ax.legend()
    problems = plots.colour_problems(fig)
    assert "#7fff00 is no colour of the house (plots.MEANINGS)" in problems
    assert any(p.startswith("'start 50%'") and "LASE" in p for p in problems)
    assert any(p.startswith("'leader alone'") for p in problems)
    assert len(problems) == 3


def test_the_sliders_keep_the_meanings():
    """Chapter 00's token slider and chapter 02's gate slider are drawn by Bokeh, not matplotlib:
    their colours are checked by name."""
    from lase_nb.chapters import quickstart

    from lase_nb.chapters import gate_panel

    assert plots.is_neutral(quickstart.BELOW_COLOR) and plots.is_neutral(quickstart.ABOVE_COLOR)
    assert quickstart.BELOW_COLOR != quickstart.ABOVE_COLOR
    assert plots.is_neutral(plots.OTHER_COLOR) and plots.is_neutral(plots.ANSWER_COLOR)
    assert plots.meaning_of(gate_panel.ESCALATED_COLOR).name.startswith("LASE")  # chapter 02's gate slider
    assert plots.meaning_of(gate_panel.ACCEPTED_COLOR).name == "one model answers alone"


# ---------------------------------------------------------------- the path's figures, as drawn


def _lase():
    """The embedded model's LASE recording (its lase-full folder), as chapters 02, 05 and 06 read it."""
    from lase_nb import runs

    return runs.load_runs(Path("data/traces/arith-smollm2"), ["lase"], require=["lase"])["lase"]


def _martingale():
    from lase_nb.chapters import theory

    return theory.plot_martingale({a: theory.dirichlet_debate(3, 4, 4, a, n_runs=40, seed=0) for a in (0.3, 0.5, 0.7)})


def _star():
    from lase_nb.chapters import theory

    kw = dict(tau=0.6, seed=0)
    return theory.plot_star(theory.gated_star(200, 4, 3, 0.5, gated=True, **kw),
                            theory.gated_star(200, 4, 3, 0.5, gated=False, **kw), 0.6,
                            theory.gated_star(200, 4, 3, 0.2, gated=True, **kw))


def _reliability():
    from lase_nb import confidence
    from lase_nb.chapters import calibration

    return calibration.plot_reliability(confidence.confidence_frame(_lase(), stage=0), 0.8, 0.5)


def _frontier():
    from lase_nb import runs
    from lase_nb.chapters import pareto
    from lase_nb.replay import chains_from_stages, fixed_policies, operating_point, oracle_frontier, sweep

    folder = Path("data/traces/arith-smollm2")
    chains = chains_from_stages(_lase().stages)
    tl, th = pareto.threshold_axes(chains, 9)
    baseline_runs = runs.load_runs(folder, ["mv", "mad"])
    shared = runs.common_ids(baseline_runs, chains.problem_ids)
    cc = chains.subset(np.isin(chains.problem_ids.astype(str), shared))
    common = {"grid": sweep(cc, tl, th), "policies": fixed_policies(cc), "default": operating_point(cc, 0.8, 0.5),
              "oracle": oracle_frontier(cc), "baselines": pareto.baseline_points(baseline_runs, shared)}
    return pareto.plot_frontier(sweep(chains, tl, th), fixed_policies(chains), oracle_frontier(chains),
                                operating_point(chains, 0.8, 0.5), common)


def _confident_errors():
    from lase_nb import confidence
    from lase_nb.chapters import failures

    return failures.plot_confident_errors(confidence.confidence_frame(_lase(), stage=0), 0.8, 0.5)


def _note_vs_leader():
    from lase_nb.chapters import failures
    from lase_nb.organism import ceiling, revision
    from lase_nb.runs import problems_from_manifest
    from lase_nb.traces import load_run

    run = load_run(revision.V6_STUDY.parent / "arith-organism-point" / "lase-full")
    cfg = run.manifest["config"]
    grid = revision.note_leader_grid(revision.decomposition_sources(run, problems_from_manifest(run.manifest),
                                                                     ceiling.load_rows(), cfg["tau_lp"], cfg["tau_h"]))
    return failures.plot_note_vs_leader(grid)


def _cost():
    from lase_nb.organism import controls, preregistration

    made_of = controls.load_controls()
    return controls.plot_cost(controls.cost_table(made_of.run, made_of.table, made_of.mv), preregistration.AIM)


def _claims():
    from lase_nb import runs, strategies
    from lase_nb.chapters import claims
    from lase_nb.tables import strategy_tables

    models = runs.load_models({"SmolLM2-135M": "data/traces/arith-smollm2"}, strategies.compared(), require=["lase"])
    table = claims.claims_by_model({m: strategy_tables(r, 0.8, 0.5) for m, r in models.items()},
                                   {m: r["lase"] for m, r in models.items()})
    return claims.plot_claims(table)


#: Each figure the seminar path saves (``plots.savefig(fig, NAME)`` in a cell tagged ``seminar``),
#: drawn here by its chapter's function from the committed recordings.
PATH_FIGURES = {"theory_martingale": _martingale, "theory_star": _star, "calibration_reliability": _reliability,
                "pareto_frontier": _frontier, "failure_confident_errors": _confident_errors,
                "failure_note_vs_leader": _note_vs_leader, "v6_cost": _cost, "claims_forest": _claims}


def _path_figure_names() -> set[str]:
    import nbformat

    names = set()
    for nb in sorted(NOTEBOOKS.glob("*.ipynb")):
        for cell in nbformat.read(nb, as_version=4).cells:
            if cell.cell_type == "code" and budget.SEMINAR in cell.metadata.get("tags", []):
                names |= set(re.findall(r"plots\.savefig\(\w+, \"(\w+)\"", cell.source))
    return names


def test_every_figure_on_the_path_is_checked_here():
    """A figure put on the path later fails here until it is drawn below."""
    assert _path_figure_names() == set(PATH_FIGURES)


@pytest.mark.parametrize("name", sorted(PATH_FIGURES))
def test_every_path_figure_keeps_one_meaning_per_colour(name: str):
    fig = PATH_FIGURES[name]()
    assert plots.colour_problems(fig) == []
