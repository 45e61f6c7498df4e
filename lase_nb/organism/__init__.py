"""The model organism and its experiments: the layer above the method, below the chapters.

The method (``lase_nb``'s flat modules) never imports this package; chapters, scripts and tests
do (``tests/test_layout.py`` holds the direction).

==================  ==========================================================================
module              what it holds
==================  ==========================================================================
recipe              what the shipped organism (v5) was taught and the data recipe that teaches it
recordings          the problem sets its recordings are drawn from and the commands that record them
                    (registered with :mod:`lase_nb.runs`, which imports this module by name)
ceiling             the leader's revision under a perfect note: is a supporter worth training?
revision            the revision adapter (v6): its pilot, stage-one cases, the decomposition
preregistration     the tests fixed before the held-out data, read by the analysis
regimes             the regimes defined once (corrective by both tests, destructive, neutral)
controls            v6's controls: the arms, the primary and its secondary family, the costs
==================  ==========================================================================

Round 3 (the careful method, tried and not shipped) is ``data/organism/round3.py``, beside its
stored evaluation.
"""
