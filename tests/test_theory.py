"""Statistical claims of the theory chapter, each checked with fixed seeds.

Tolerances are stated in standard errors computed from the number of runs: a claim "is zero"
means |mean| < 4 SE, a claim "is positive" means mean > 4 SE. With a true zero mean a 4-SE
band is left by chance with probability about 6e-5, so these tests fail only when the model is
wrong, and each has a companion showing that the same statistic does detect a real effect.
"""

from __future__ import annotations

import numpy as np
import pytest

from lase_nb import plots
from lase_nb.chapters import theory
from lase_nb.errors import ConfigError

Z = 4.0


# -- helpers ----------------------------------------------------------------------------------


def test_majority_credit_splits_ties_fairly():
    answers = np.array([[0, 0, 1], [0, 1, 2], [1, 1, 0], [0, 1, 1]])
    np.testing.assert_allclose(theory.majority_credit(answers, 3), [1.0, 1 / 3, 0.0, 0.0])


def test_simulations_are_pure_functions_of_their_seed():
    a = theory.dirichlet_debate(n_runs=50, n_rounds=3, seed=7)
    b = theory.dirichlet_debate(n_runs=50, n_rounds=3, seed=7)
    c = theory.dirichlet_debate(n_runs=50, n_rounds=3, seed=8)
    np.testing.assert_array_equal(a.belief, b.belief)
    assert not np.array_equal(a.belief, c.belief)
    s1, s2 = theory.gated_star(n_instances=500, seed=3), theory.gated_star(n_instances=500, seed=3)
    np.testing.assert_array_equal(s1.belief, s2.belief)


@pytest.mark.parametrize("call", [
    lambda: theory.dirichlet_debate(initial_accuracy=1.0),
    lambda: theory.dirichlet_debate(n_agents=1),
    lambda: theory.latent_concept_debate(strength=0.5),
    lambda: theory.selective_gain(rho=1.5),
    lambda: theory.selective_gain(gate="sometimes"),
    lambda: theory.star_schedule(3, 2, k_peers=3),
    lambda: theory.inclusions_formula("ring", 4, 2),
])
def test_bad_parameters_raise_config_error(call):
    with pytest.raises(ConfigError):
        call()


# -- 1. neutral regime --------------------------------------------------------------------------


@pytest.mark.parametrize("accuracy", [0.3, 0.6])
def test_symmetric_dirichlet_debate_is_a_martingale(accuracy):
    trace = theory.dirichlet_debate(n_agents=5, n_options=4, n_rounds=8, initial_accuracy=accuracy,
                                    n_runs=3000, seed=11)
    test = theory.increment_test(trace.group_belief)
    assert test.se > 0
    assert abs(test.mean_increment) < Z * test.se, (test.mean_increment, test.se)
    assert (test.per_round["z"].abs() < 4.5).all()  # 8 steps: a slightly wider band per step
    # Expected correctness stays at the initial accuracy, measured on the answers themselves.
    final = trace.correct[:, -1].mean(axis=1)
    assert abs(final.mean() - accuracy) < Z * final.std(ddof=1) / np.sqrt(len(final))


def test_symmetric_debate_changes_spread_not_mean():
    summary = theory.dirichlet_debate(n_rounds=8, initial_accuracy=0.5, n_runs=2000, seed=5).summary()
    assert summary["belief_sd"].iloc[0] == 0.0  # everyone starts from the same prior
    assert summary["belief_sd"].iloc[-1] > summary["belief_sd"].iloc[1] > 0.05
    # ... and voting gets worse as the agents herd: round-0 majority vote beats the last round's.
    se = np.hypot(summary["majority_se"].iloc[0], summary["majority_se"].iloc[-1])
    assert summary["majority"].iloc[0] - summary["majority"].iloc[-1] > Z * se


def test_increment_test_detects_a_drifting_process():
    """The martingale statistic is not blind: seeded concept debate and the gated star drift up."""
    concept = theory.latent_concept_debate(n_runs=1000, seed=2)
    assert theory.increment_test(concept.group_belief).z > Z
    star = theory.gated_star(n_instances=5000, seed=2)
    assert theory.increment_test(star.belief).z > Z


# -- 2. corrective regime -----------------------------------------------------------------------


def test_correct_seed_raises_next_round_and_its_absence_does_not():
    # The special case where a bare answer is no evidence at all (bare_strength=1).
    trace = theory.latent_concept_debate(initial_accuracy=0.35, ground_prob=0.3, n_runs=3000, seed=4, bare_strength=1.0)
    eff = theory.seed_effect(trace).set_index("condition")
    with_seed, without = eff.loc["correct seed in pool"], eff.loc["no correct seed"]
    assert with_seed["runs"] > 100 and without["runs"] > 100
    assert with_seed["mean_increment"] > Z * with_seed["se"]
    assert abs(without["mean_increment"]) <= Z * without["se"] + 1e-12


def test_misleading_seeds_make_the_unseeded_pool_drift_down():
    trace = theory.latent_concept_debate(ground_prob=0.3, false_ground_prob=0.1, n_runs=3000, seed=4)
    without = theory.seed_effect(trace).set_index("condition").loc["no correct seed"]
    assert without["mean_increment"] < -Z * without["se"]


@pytest.mark.parametrize("ground_prob, improves", [(0.3, True), (0.0, False)])
def test_debate_beats_initial_majority_vote_only_with_seeds(ground_prob, improves):
    trace = theory.latent_concept_debate(initial_accuracy=0.35, ground_prob=ground_prob, n_runs=3000, seed=9,
                                         bare_strength=1.0)  # bare answers carry no evidence here
    d = trace.majority[:, -1] - trace.majority[:, 0]  # paired per run
    se = d.std(ddof=1) / np.sqrt(len(d))
    if improves:
        assert d.mean() > Z * se
    else:
        assert abs(d.mean()) < Z * se


def test_bare_answers_are_evidence_so_unseeded_pools_move_with_their_plurality():
    """With bare answers weighing something, "no seed, no drift" is not built in: an unseeded pool
    follows its plurality (up from 50%, down from 20% with K = 4), and a seed still adds more."""
    up = theory.latent_concept_debate(initial_accuracy=0.5, ground_prob=0.0, n_runs=3000, seed=4)
    down = theory.latent_concept_debate(initial_accuracy=0.2, ground_prob=0.0, n_runs=3000, seed=4)
    for trace, sign in ((up, 1), (down, -1)):
        test = theory.increment_test(trace.group_belief)
        assert sign * test.mean_increment > Z * test.se
    seeded = theory.latent_concept_debate(initial_accuracy=0.35, ground_prob=0.3, n_runs=3000, seed=4)
    eff = theory.seed_effect(seeded).set_index("condition")
    w, wo = eff.loc["correct seed in pool"], eff.loc["no correct seed"]
    assert w["mean_increment"] - wo["mean_increment"] > Z * np.hypot(w["se"], wo["se"])


def test_dirichlet_update_written_out_by_hand():
    rng = np.random.default_rng(0)
    alpha = rng.uniform(0.5, 3, size=(3, 4))
    answers = np.array([2, 0, 2])
    reads = np.array([[1, 1, 1], [0, 1, 1], [1, 0, 0]], bool)
    expected = alpha.copy()
    for i in range(3):
        for j in range(3):
            if reads[i, j]:
                expected[i, answers[j]] += 1
    np.testing.assert_allclose(theory.dirichlet_update(alpha, answers, reads), expected)


# -- 3. gated leader star -----------------------------------------------------------------------


def test_gated_star_drift_is_positive_and_only_on_uncertain_instances():
    drift = theory.star_drift(theory.gated_star(n_instances=20000, tau=0.6, seed=6))
    unc, sure = drift[drift["uncertain"]], drift[~drift["uncertain"]]
    assert (unc["drift"] > Z * unc["drift_se"]).all()
    assert (sure["drift"] == 0).all() and (sure["consulted"] == 0).all()
    # The symmetry condition fails in opposite directions on the two groups.
    assert (unc["gap"] > Z * unc["gap_se"]).all()
    assert (sure["gap"] < -Z * sure["gap_se"]).all()


def test_ungated_star_is_neutral_overall_and_gating_helps():
    kwargs = dict(n_instances=20000, tau=0.6, seed=6)
    ungated, gated = theory.gated_star(gated=False, **kwargs), theory.gated_star(gated=True, **kwargs)
    test = theory.increment_test(ungated.belief)
    assert abs(test.mean_increment) < Z * test.se
    # The ungated leader's confident instances drift down: reading peers there hurts.
    sure = theory.star_drift(ungated).query("not uncertain")
    assert (sure["drift"] < -Z * sure["drift_se"]).all()
    gain = gated.belief[:, -1] - gated.belief[:, 0]
    assert gain.mean() > Z * gain.std(ddof=1) / np.sqrt(len(gain))
    assert (gated.inclusions() <= 2 * gated.consulted.shape[1]).all()


def test_gated_star_drifts_down_when_a_wrong_option_is_the_peers_plurality():
    """The gate selects the uncertain instances, but the leader moves towards its peers: below
    1/K the peers' plurality is wrong and the gated leader loses accuracy (Proposition 3.2 needs
    the right option to lead among peers)."""
    assert not theory.plurality_is_correct(0.2, 4) and theory.plurality_is_correct(0.3, 4)
    low = theory.gated_star(n_instances=20000, initial_accuracy=0.2, tau=0.6, seed=0)
    d = low.belief[:, -1] - low.belief[:, 0]
    assert d.mean() < -Z * d.std(ddof=1) / np.sqrt(len(d))


def test_star_topology_alone_is_neutral_at_every_starting_accuracy():
    for a in (0.2, 0.5, 0.7):
        test = theory.increment_test(theory.gated_star(n_instances=20000, initial_accuracy=a, gated=False,
                                                       seed=3).belief)
        assert abs(test.mean_increment) < Z * test.se, (a, test.z)


# -- 4. selective gain and cost -----------------------------------------------------------------


@pytest.mark.parametrize("setting", [
    dict(gate_rate=0.2, rho=0.5, delta=0.3),
    dict(gate_rate=0.4, rho=0.7, delta=0.2),
    dict(gate_rate=0.3, rho=0.3, delta=0.3, noseed_shift=0.05),
])
def test_selective_gain_bound_holds_under_its_assumptions(setting):
    r = theory.selective_gain(n_problems=40000, seed=12, **setting)
    assert r.tau + r.delta <= 1  # A2 then holds exactly for every gated problem
    assert r.gain >= r.bound - Z * r.gain_se, r.as_dict()
    assert abs(r.rho_hat - r.rho) < Z * np.sqrt(r.rho * (1 - r.rho) / (r.p_uncertain * 40000))
    # Cost identity: measured tokens per problem match C_L + P(U=1) C_peer, below always-interact.
    assert abs(r.cost - r.cost_formula) < Z * r.cost_se
    assert r.cost < r.cost_always


def test_selective_gain_bound_fails_when_a3_is_violated():
    r = theory.selective_gain(n_problems=40000, gate_rate=0.3, rho=0.5, delta=0.3, noseed_shift=-0.15, seed=12)
    assert r.gain < r.bound - Z * r.gain_se


def test_confidence_gate_beats_random_gate_at_equal_cost():
    table = theory.pareto_table([0.3, 0.5], n_problems=60000, seed=1)
    for q in (0.3, 0.5):
        rows = table[table["gate_rate"] == q].set_index("policy")
        lase, rand = rows.loc["LASE (confidence gate)"], rows.loc["random gate"]
        se = np.hypot(lase["accuracy_se"], rand["accuracy_se"])
        assert lase["accuracy"] - rand["accuracy"] > Z * se
        assert abs(lase["cost"] - rand["cost"]) < Z * np.hypot(lase["cost_se"], rand["cost_se"])
    solo = table.set_index("policy").loc["solo"]
    always = table.set_index("policy").loc["always interact"]
    assert solo["cost"] < table["cost"].min() + 1e-9 and always["accuracy"] >= table["accuracy"].max()


def test_corollary_39_cheaper_than_always_and_gain_at_least_the_bound():
    check = theory.corollary_39([0.1, 0.2, 0.3], rho=0.5, delta=0.3, n_problems=40000, seed=1)
    assert check["a2_holds"].all()
    assert check["cheaper"].all() and check["gain_holds"].all()
    # The corollary does not say LASE beats always-interact on accuracy, and here it does not.
    assert (check["acc_always"] > check["acc_lase"]).all()


def test_corollary_39_gain_falls_short_only_where_a2_fails():
    check = theory.corollary_39([0.3, 0.9], rho=0.5, delta=0.3, n_problems=40000, seed=1)
    ok, high = check.iloc[0], check.iloc[1]
    assert ok["a2_holds"] and ok["gain_holds"]
    assert not high["a2_holds"] and not high["gain_holds"]  # tau + delta > 1: no room to rise by delta


def test_bound_description_names_its_tolerance_and_counts_violations():
    import pandas as pd
    grid = pd.DataFrame({"regime": ["a", "a", "a"], "gain": [0.05, 0.029, 0.0], "bound": [0.03, 0.03, 0.03],
                         "gain_se": [0.001, 0.001, 0.001]})
    text = theory.describe_bound(grid)
    assert "1 of 3 settings on or above the bound, 1 below it by less than 4 standard errors" in text
    assert "1 clearly below" in text
    assert "2 below in all is as many as chance puts below a tight bound (binomial test against one half, p = 1)" in text
    many = pd.DataFrame({"regime": ["b"] * 20, "gain": [0.0] * 20, "bound": [0.03] * 20, "gain_se": [0.001] * 20})
    assert "20 below in all is more than chance puts below a tight bound" in theory.describe_bound(many)


def test_describe_corollary_counts_the_rows():
    import pandas as pd
    table = pd.DataFrame({"gate_rate": [0.1, 0.5, 0.9], "cheaper": [True, True, False],
                          "gain_holds": [True, True, False], "a2_holds": [True, False, False],
                          "gain": [0.02, 0.04, 0.05], "bound": [0.01, 0.05, 0.10],
                          "acc_lase": [0.7, 0.8, 0.9], "acc_always": [0.85, 0.85, 0.85]})
    text = theory.describe_corollary(table)
    assert "Of 3 gate rates: LASE is cheaper than always interacting at 2" in text
    assert "keeps the bound (within the table's standard errors) at 2, falls clearly short at 1 (gate rates 0.9)" in text
    assert "lies below the bound at all at 2; A2 holds (tau + delta <= 1) at 1" in text
    assert "more accurate policy at 2 of 3" in text


# -- 5. topology cost ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 5, 10, 33])
@pytest.mark.parametrize("rounds", [1, 3, 7])
def test_inclusion_counts_equal_the_formulas(n, rounds):
    a2a = theory.transcript(theory.all_to_all_schedule(n, rounds))
    assert len(a2a) == theory.inclusions_formula("all_to_all", n, rounds) == rounds * n * (n - 1)
    assert (a2a["reader"] != a2a["author"]).all()
    for k in (1, 2):
        if k > n - 1:
            continue
        star = theory.star_schedule(n, rounds, k)
        assert theory.count_inclusions(star) == len(theory.transcript(star)) == 2 * k * rounds
        assert theory.inclusions_formula("star", n, rounds, k) == 2 * k * rounds


def test_star_cost_does_not_grow_with_agents_and_gating_only_lowers_it():
    table = theory.topology_costs([4, 16, 64], n_rounds=3, k_peers=1, gate_rate=0.3, n_draws=50, seed=0)
    star = table[table["topology"] == "leader star"]
    assert star["counted"].nunique() == 1
    gated = table[table["topology"] == "gated star"]
    assert (gated["counted_max"] <= gated["formula"]).all() and (gated["counted"] < gated["formula"]).all()
    a2a = table[table["topology"] == "all-to-all"]
    assert (a2a["counted"] == a2a["formula"]).all()


def test_topology_counts_the_largest_case():
    t = theory.topology_costs([4, 256], n_rounds=10, n_draws=20, seed=0).set_index(["topology", "n_agents"])
    assert t.loc[("all-to-all", 256), "counted"] == 652_800 and t.loc[("leader star", 256), "counted"] == 20


def test_theory_figures_draw(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g = theory.gated_star(n_instances=2000, seed=0)
    u = theory.gated_star(n_instances=2000, gated=False, seed=0)
    lo = theory.gated_star(n_instances=2000, initial_accuracy=0.2, seed=0)
    for fig in (theory.plot_architectures(), theory.plot_star(g, u, 0.6, lo)):
        fig.savefig(tmp_path / "x.png")
        plt.close(fig)
    fig = theory.plot_topology({3: theory.topology_costs([4, 8], n_draws=5)})
    assert len(fig.axes[0].get_legend().get_texts()) == 3  # one entry per topology
    plt.close(fig)


def test_topology_figure_gives_each_number_of_rounds_its_own_panel():
    """With T = 3 and T = 10 on one panel the gated star of T = 10 (mean 2kT q = 6) sat on the leader
    star of T = 3 (2kT = 6) and their labels collided: one panel per T keeps every line apart."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tables = {t: theory.topology_costs([4, 16, 64], n_rounds=t, gate_rate=0.3, n_draws=50, seed=0) for t in (3, 10)}
    fig = theory.plot_topology(tables)
    assert [a.get_title() for a in fig.axes] == ["T = 3 rounds", "T = 10 rounds"]
    for ax in fig.axes:
        levels = [set(np.round(line.get_ydata(), 6)) for line in ax.lines if len(line.get_ydata())]
        star = {2 * int(ax.get_title().split()[2])}
        assert sum(lv == star for lv in levels) == 2  # the star's markers and its formula, and nothing else at 2kT
    plt.close(fig)


def test_dirichlet_debate_reads_the_all_to_all_schedule():
    """The reading matrix the debate uses is the one the topology count is taken from."""
    sched = theory.all_to_all_schedule(6, 4)
    assert all(np.array_equal(s, theory.all_to_all(6, include_self=True)) for s in sched)


# -- plotting helper ----------------------------------------------------------------------------


def test_savefig_writes_png_to_the_env_folder(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setenv(plots.FIGURES_ENV, str(tmp_path / "figs"))
    fig, ax = plt.subplots()
    plots.band(ax, [0, 1, 2], [1, 2, 3], [0, 1, 2], [2, 3, 4], label="x")
    path = plots.savefig(fig, "demo")
    plt.close(fig)
    assert path == tmp_path / "figs" / "demo.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_place_label_skips_a_place_that_covers_a_line():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.set(xlim=(0, 10), ylim=(0, 10))
    ax.errorbar([5], [5], yerr=[[4], [4]], fmt="o")  # a bar from 1 to 9 at x = 5
    right = ((5, 5), (10, 0), "left", "center")
    over = ((5, 7), (0, 0), "center", "center")  # centred on the bar
    ann = plots.place_label(ax, "name", [over, right])
    assert (ann.xy, ann.xyann, ann.get_ha()) == ((5, 5), (10, 0), "left")
    assert not any(plots.touches(a, ann.get_window_extent()) for a in [*ax.lines, *ax.collections])
    outside = ((10, 5), (5, 0), "left", "center")  # past the right edge
    assert plots.place_label(ax, "other", [outside, right]).xy == (5, 5)
    plt.close(fig)


def test_token_bars_label_tokens_and_colour_answer_tokens_as_named(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.colors as mcolors
    import matplotlib.pyplot as plt

    fig = plots.token_bars(["The", " answer", " is", " \\boxed{", "15", "}"], [0.9, 0.8, 0.95, 0.99, 0.6, 0.99], {4})
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()][4] == "15"
    bars = ax.patches[:6]
    assert mcolors.to_hex(bars[4].get_facecolor()) == plots.ANSWER_COLOR.lower()
    assert mcolors.to_hex(bars[0].get_facecolor()) == plots.OTHER_COLOR.lower()
    assert plots.ANSWER_COLOR_NAME in ax.get_title()
    assert ax.get_xticklabels()[4].get_fontweight() == "bold" and ax.get_xticklabels()[0].get_fontweight() == "normal"
    # The named colour is what a reader would call it, and not the slider's orange for "below the
    # threshold" (issue 67: one meaning per colour on the seminar path).
    from lase_nb.chapters.quickstart import BELOW_COLOR

    assert plots.ANSWER_COLOR_NAME == "black" and mcolors.to_rgb(plots.ANSWER_COLOR) == (0, 0, 0)
    assert mcolors.to_hex(plots.ANSWER_COLOR) != mcolors.to_hex(BELOW_COLOR)
    assert ax.get_legend() is None and fig.legends  # issue 51: the legend sits under the axes, off the bars
    fig.canvas.draw()
    leg, box = fig.legends[0].get_window_extent(), ax.get_window_extent()
    assert leg.y1 <= box.y0
    plt.close(fig)


def test_bound_grid_gives_each_setting_its_own_seed_and_keeps_its_labels():
    settings = [dict(gate_rate=0.3, rho=0.5, delta=0.3, regime="tight")] * 3
    a = theory.bound_grid(settings, seed=3, n_problems=2000)
    b = theory.bound_grid(settings, seed=3, n_problems=2000)
    assert a["seed"].nunique() == 3 and a["seed"].tolist() == theory.setting_seeds(3, 3)  # independent, reproducible
    assert a["gain"].nunique() == 3 and a.equals(b)  # the same setting, three independent samples
    assert (a["regime"] == "tight").all()
    one = theory.selective_gain(gate_rate=0.3, rho=0.5, delta=0.3, n_problems=2000, seed=a["seed"].iloc[1])
    assert a["gain"].iloc[1] == one.gain


def test_a_tight_bound_is_missed_by_chance_about_half_the_time_and_the_text_says_so():
    """A3 with equality: the expected gain is the bound, so independent settings fall below it about
    half the time and rarely by more than two standard errors (issue 37, chapter 01 section 1.4)."""
    from scipy import stats as st

    settings = [dict(gate_rate=q, rho=r, delta=0.1, regime="A3 holds") for q in (0.1, 0.2, 0.3) for r in (0.3, 0.6, 0.9)] * 4
    grid = theory.bound_grid(settings, seed=0, n_problems=4000)
    below = int((grid["gain"] < grid["bound"]).sum())
    assert st.binomtest(below, len(grid), 0.5).pvalue > 0.001, below
    assert int((grid["gain"] < grid["bound"] - 4 * grid["gain_se"]).sum()) == 0
    text = theory.describe_bound(grid)
    assert "where the bound is tight (A3 holds with equality) the measured gain falls below it in about half" in text
    assert "more than 2 standard errors below in 2.3% of them" in text
    assert "With 36 settings a tight bound has, by chance alone, about 18 measured gains below it and 0.8 more" in text


def test_star_figures_legend_sits_off_every_curve():
    """Issue 37: in the house style the third panel's legend lay over the gated star's line and its
    error bars near stage 2."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lase_nb.plots import set_style, touches

    g = theory.gated_star(n_instances=4000, tau=0.6, seed=0)
    u = theory.gated_star(n_instances=4000, tau=0.6, gated=False, seed=0)
    lo = theory.gated_star(n_instances=4000, initial_accuracy=0.2, tau=0.6, seed=0)
    with matplotlib.rc_context():
        set_style()  # the chapters' fonts: the legend is as large as on the page
        fig = theory.plot_star(g, u, 0.6, lo)
        fig.canvas.draw()
        ax = fig.axes[2]
        box = ax.get_legend().get_window_extent()
        assert not [a for a in ax.lines + ax.collections if touches(a, box)]
        plt.close(fig)
