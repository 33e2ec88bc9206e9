"""The icefloe loader: Kafka JSON messages into an Iceberg table, exactly once.

Pure core (no Spark, no Kafka): ``errors`` (the error vocabulary), ``parse``
(JSON into rows of the table's current schema), ``transforms`` (unnest,
projections, case conversion), ``record`` (the per-record pipeline and
dead-letter routing), ``keys`` and ``offsets`` (snapshot-summary bookkeeping
and the ownership lease), ``config`` (the settings as one typed model, loaded
from TOML, environment and flags through ``settings``; ``secret``).

The loader imports nothing of the project but itself: whatever it needs to
start (Kafka, the catalog, Spark's jars and Java home) reaches it through its
configuration or spark-submit.
"""
