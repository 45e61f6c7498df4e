"""Chapter modules: the logic one chapter's notebook stands on.

A chapter module holds the pure, tested functions (tables, ``describe_*`` sentences, figures)
that one notebook in ``notebooks/`` calls; the notebook itself stays thin. A chapter module
imports the core (``lase_nb.replay``, ``lase_nb.stats``, ``lase_nb.organism.regimes``,
``lase_nb.transcripts`` ...) and the modules of its own chapter only; the core never imports a
chapter module, and a notebook imports the core and its own chapter's modules (``tests/test_layout.py``
checks all three, and that the package has no import cycle).

==============  ==========================================================================
module          chapter
==============  ==========================================================================
quickstart      00_quickstart: the gate playground (one reply's tokens, a slider, no kernel)
theory          01_theory and A4_theory_more: the toy simulations (numpy/scipy, seeded)
calibration     02_calibration: reliability, AUROC, ECE
gate_panel      02_calibration: the gate's sliders over one set of answers
pipeline        03_lase_pipeline: one chain stage by stage, then the batch
correct_seeds   A1_bound (and 03's walk-through): correct seeds in the notes, Theorem 3.7's terms
comparison      04_comparison: every strategy on the same problems, the paper beside them
pareto          05_pareto: the accuracy-vs-tokens frontier by replay
sliders         05_pareto: the threshold sliders
failures        06_failure_modes: confident errors, failures after a critique, escalation
claims          07_claims: the paper's claims, ours on each model, verdicts by test
ensemble        A5_ensemble (appendix to 06): LASE with a supporter group, the paper's Appendix I
==============  ==========================================================================
"""

#: Each chapter module's notebook (tests/test_layout.py reads this).
CHAPTER_OF = {"quickstart": "00", "theory": "01", "calibration": "02", "gate_panel": "02", "pipeline": "03",
              "correct_seeds": "03", "comparison": "04", "pareto": "05", "sliders": "05", "failures": "06", "claims": "07",
              "ensemble": "06"}
