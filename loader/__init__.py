"""The icefloe loader: Kafka JSON messages into an Iceberg table, exactly once.

Pure core (no Spark, no Kafka): ``errors`` (the error vocabulary), ``parse``
(JSON into rows of the table's current schema), ``transforms`` (unnest,
projections, case conversion), ``record`` (the per-record pipeline and
dead-letter routing), ``keys`` and ``offsets`` (snapshot-summary bookkeeping
and the ownership lease), ``config`` (TOML, environment and flags).
"""
