"""Decoding: one JSON message into one row of the table's current schema, or a reject.

``parse.py`` (the strict parser, pure), ``record.py`` (one record: parse, transforms when
configured, dead-letter routing), ``batch.py`` (Kafka records as Arrow into rows and rejects,
in the executors), ``frames.py`` (one micro-batch as Spark DataFrames, decoded and summarized).
"""
