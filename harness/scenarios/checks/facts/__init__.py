"""Facts: what a run's history and ledgers say, read the same way by every check.

Each module reads one sort of fact from the recorded history (and the publisher's ledger) and
nothing else: ``ledger`` (which messages were sent where), ``reads`` (what the run read back:
rows per id, dead letters, named reads), ``commits`` (the snapshots the loader committed),
``positions`` (its committed position over the run), ``faults`` (fault windows, heals, the
loader's lifecycle), ``landed`` (where faults landed), ``schema`` (the table's schema over
time), ``storage`` (the table's files and snapshots), ``numbers``. No module here judges: the
verdicts above (``harness.scenarios.checks``) import these, never the other way round.
"""
