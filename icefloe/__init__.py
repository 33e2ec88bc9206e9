"""icefloe: a test kit for Kafka -> Iceberg loaders, and a loader that keeps exactly once.

The kit installs as this one package so that its names cannot collide with a user's own:
``icefloe.loader`` (the product: the PySpark job, which needs nothing else of the kit),
``icefloe.publisher`` (the synthetic producer and its ledger) and ``icefloe.harness`` (the stack,
the faults, the scenarios and their checks, the CLI). In a checkout the three live in the
top-level folders ``loader/``, ``publisher/`` and ``harness/``.
"""
