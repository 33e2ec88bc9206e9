"""Checks: a run's verdicts, judged from its history and ledgers alone, live or afterwards.

``observe`` rebuilds what a run read, ``checkers`` holds the registry (``@checker``) and the
general checks, ``compare`` the two comparisons with the publisher's ledger; ``invariants``
(generated runs, also judged live by the monitor), ``storage`` (its reads gathered once at a
run's end), ``liveness``, ``exits`` and ``catalogfaults`` add their families, ``landed`` and
``schemahistory`` count where faults landed and rebuild the table's schema. A module registers
its checkers when imported (``harness.scenarios.model.parse`` imports them all). The runner
and the live monitor call the checks; nothing here imports the runner.
"""
