"""Gathering: what a run reads from the services for its checks, recorded into its history.

``storage`` reads the table's files and snapshots once at a run's end (Trino's metadata tables,
a HEAD per referenced file); ``observed`` rebuilds what the checkers get from a history and
its ledgers (and regenerates the messages as sent from their seeds). The checks
(``harness.scenarios.checks``) read only what these recorded; nothing there imports this.
"""
