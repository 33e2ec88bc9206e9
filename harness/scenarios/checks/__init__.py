"""Checks: a run's verdicts, judged from its history and ledgers alone, live or afterwards.

Layers, each importing only those below it (``tests/harness/test_checks_layout.py`` holds them
to it):

1. ``facts/``: what the history says (the ledger, what was read back, the loader's commits and
   committed position, fault windows and heals, where faults landed, the table's schema and
   files). Facts judge nothing.
2. ``compare``: the two comparisons with the publisher's ledger (the table's rows, the dead
   letters), which ``harness.verify`` shares.
3. ``verdict``: the vocabulary (``valid``, ``invalid``, ``unknown``, ``not_applicable``,
   anomalies) and the registry (``@checker`` with each checker's declared parameters,
   ``check_params``, ``run_check``).
4. ``missing``: a missing row or dead letter lost or pending, from the committed position.
5. The checkers, a module per family, none importing another: ``rows`` (exactly once,
   retention, new partitions, the table against the ledger), ``letters``, ``values``,
   ``process`` (the loader's process: steady, halted, exits explained, one owner),
   ``premises`` (the run's own premises: faults exercised, healed, landed; snapshots
   expired), ``liveness``, ``freshness``, ``storage``, ``live`` (the live rules of a
   generated run).

Importing this package registers every checker. What the checks read is gathered from the
services by ``harness.scenarios.gather`` and the runner; nothing here asks a service or
imports the runner, the engine or the stack.
"""

from icefloe.harness.scenarios.checks import (  # noqa: F401  (each registers its checkers)
    freshness,
    letters,
    live,
    liveness,
    premises,
    process,
    rows,
    storage,
    values,
)
