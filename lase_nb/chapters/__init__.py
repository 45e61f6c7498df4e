"""Chapter modules: the logic one chapter's notebook stands on.

A chapter module holds the pure, tested functions (tables, ``describe_*`` sentences, figures)
that one notebook in ``notebooks/`` calls; the notebook itself stays thin. Chapter modules import
the core (``lase_nb.analysis``, ``lase_nb.stats``, ``lase_nb.runs`` ...) and each other; the core
never imports a chapter module (``tests/test_layout.py`` checks both this and that the package
has no import cycle).

==============  ==========================================================================
module          chapter
==============  ==========================================================================
theory          01_theory: the toy simulations (numpy/scipy, seeded)
calibration     02_calibration: reliability, AUROC, ECE, the gate split
pipeline        03_lase_pipeline: one chain stage by stage, then the batch
seeds           03_lase_pipeline (section 3.5): Theorem 3.7's rho, delta and A3 measured
transcripts     03_lase_pipeline and 06_failure_modes: the one transcript renderer
comparison      04_comparison: every strategy on the same problems, the paper beside them
pareto          05_pareto: the accuracy-vs-tokens frontier by replay
sliders         05_pareto (and 02_calibration's gate panel): the threshold sliders
failures        06_failure_modes: confident errors, failures after a critique, escalation
==============  ==========================================================================
"""
