"""The icefloe loader: Kafka JSON messages into an Iceberg table, exactly once.

The core, ``commit/``, is the whole exactly-once protocol: a batch planned from the table's
committed offsets, its rows and dead letters routed, staged, published with the fence, a lost
commit answer read back, the table taken over with the lease. Around it, by role: ``decode/``
(JSON into rows of the table's current schema), ``io/`` (dead letters, Kafka metadata, the
catalog client, retries, metrics), ``run/`` (Spark and the job's life), the settings
(``config``, ``settings``, ``secret``) and the names and errors every part shares (``keys``,
``errors``). Opt-in, imported only when configured: ``ext/`` (transforms, the fast path,
the first slice, the class-data archive) and ``testing/`` (the test kit's fault hooks).

The loader imports nothing of the project but itself: whatever it needs to
start (Kafka, the catalog, Spark's jars and Java home) reaches it through its
configuration or spark-submit.
"""
