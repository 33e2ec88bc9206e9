"""Reports: what a scenario run did and found, for people and for CI.

``report`` writes a run's Markdown report, a set of runs' JUnit XML and the console summary;
``timeline`` draws a run's picture (``timeline.png``) from its history and ledgers.
"""
