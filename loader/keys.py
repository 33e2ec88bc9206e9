"""Keys: the names the loader writes into Iceberg metadata and dead-letter headers,
and the Kafka source and Iceberg write options it always sets.

Snapshot-summary properties (written through Spark's
``snapshot-property.<key>`` write option, see ``snapshot_property_option``)
carry the exactly-once bookkeeping of every snapshot the loader commits;
table properties carry the ownership lease between commits.  Anything else
(compaction, retention, a human's INSERT in Trino) does not write these keys,
which is how the loader tells its own snapshots apart.
"""

from __future__ import annotations

PREFIX = "icefloe."

# --- snapshot summary ------------------------------------------------------

LOADER_ID = "icefloe.loader-id"
"""The id of the loader that committed the snapshot."""

OFFSETS = "icefloe.offsets"
"""JSON ``{"topic": {"0": 42, ...}}``: for every topic-partition the loader has
ever loaded, the NEXT offset to read (last loaded offset + 1), as of this
snapshot.  The map is complete in every snapshot, so the newest one suffices."""

BATCH_ID = "icefloe.batch-id"
"""The Spark micro-batch id that produced the snapshot (decimal)."""

INSTANCE = "icefloe.instance"
"""The token of the loader process that committed the snapshot (new at every start)."""

CLAIM = "icefloe.claim"
"""Set (to the new owner's loader id) on the empty snapshot a loader commits when it takes
the table over; the snapshot moves main, which fences off every batch planned before it."""

WAP_ID = "wap.id"
"""Iceberg's summary key naming the write-audit-publish id of a staged snapshot."""

RECORDS = "icefloe.records"
"""Rows written by the batch (decimal)."""

DEAD_LETTERED = "icefloe.dead-lettered"
"""Records of the batch sent to the dead-letter topic (decimal)."""

MAX_TIMESTAMP_MS = "icefloe.max-kafka-timestamp-ms"
"""The newest Kafka record timestamp (epoch milliseconds) the loader has
committed, carried forward from batch to batch; freshness is now minus this."""

QUERY_ID = "icefloe.query-id"
"""The Spark streaming query id, to correlate with the checkpoint."""

# --- table properties ------------------------------------------------------

TABLE_OWNER = "icefloe.loader.owner"
"""The loader id holding the lease on the table."""

TABLE_INSTANCE = "icefloe.loader.instance"
"""The token of the one process of ``TABLE_OWNER`` that holds the lease."""

TABLE_LEASE_EXPIRES_MS = "icefloe.loader.lease-expires-ms"
"""Until when (epoch milliseconds) ``TABLE_OWNER`` holds the lease."""

TABLE_OFFSETS = "icefloe.loader.offsets"
"""The offsets of the last published batch (``OFFSETS``'s encoding), set in the same catalog
commit that publishes the batch. Snapshot expiry can remove every snapshot that carries
offsets in its summary; it never touches table properties, so a loader starting after an
expiry still knows where the table's data ends."""

WAP_ENABLED = "write.wap.enabled"
"""Iceberg table property that lets a Spark write stage its snapshot instead of committing
it to main (set by the loader when it takes a table over)."""

# --- Spark session configuration -----------------------------------------

SPARK_CHECKPOINT_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"
"""Session setting: the class that writes a streaming query's checkpoint files."""

SPARK_WAP_ID = "spark.wap.id"
"""Session setting: with ``WAP_ENABLED`` on the table, a write stages its snapshot under
this id instead of moving main."""

# --- dead-letter headers ---------------------------------------------------

DLQ_SOURCE_TOPIC = "icefloe.source.topic"
DLQ_SOURCE_PARTITION = "icefloe.source.partition"
DLQ_SOURCE_OFFSET = "icefloe.source.offset"
DLQ_ERROR_KIND = "icefloe.error.kind"
DLQ_ERROR_PATH = "icefloe.error.path"
DLQ_ERROR_EXPECTED = "icefloe.error.expected"
DLQ_ERROR_REASON = "icefloe.error.reason"
DLQ_LOADER_ID = "icefloe.loader-id"
DLQ_TABLE = "icefloe.table"
"""The table the loader was loading when it dead-lettered the record (catalog.schema.table):
a loader that starts tells by it which letters were sent for its table by any loader."""


def snapshot_property_option(key: str) -> str:
    """The Spark Iceberg write option that stores ``key`` in the snapshot summary.

    Args:
        key: a summary key, e.g. ``OFFSETS``.

    Returns:
        ``"snapshot-property." + key``.
    """
    return "snapshot-property." + key


# --- Kafka consumer ------------------------------------------------------------

KAFKA_CONSUMER_TUNING = {
    "kafka.max.poll.records": "10000",
    "kafka.max.partition.fetch.bytes": str(10 << 20),
    "kafka.fetch.min.bytes": str(64 << 10),
    "kafka.fetch.max.wait.ms": "50",
}
"""Options for Spark's Kafka source that fetch a micro-batch in fewer, larger polls.

Measured on a 2-partition topic of 50,000 reference rows (batch reads, count only):
0.8-1.1 s with the client's defaults (500 records a poll, fetches answered at the
first byte), 0.33-0.38 s with these. A fetch that cannot fill 64 KiB waits at most
50 ms, which bounds what they add to a small batch's latency.
"""


# --- Iceberg's Spark writer -----------------------------------------------------

APPEND_OPTIONS = {"distribution-mode": "none", "fanout-enabled": "false"}
"""How a batch is handed to Iceberg's Spark writer: no shuffle, and each task's rows sorted by
the table's partition (Iceberg's local sort, asked for when fan-out is off) so that it keeps
one file open at a time. Rows arrive in Kafka order; with fan-out a task kept a file open per
partition and interleaved its rows, and each Parquet column's encoder state of 31 open files
stayed out of the CPU's caches. On 2 cores, 1,000,000 reference rows over 30 days in batches
of 500,000: 10.5-11.4 s per batch sorted against 12.8-14.4 s with fan-out, over one day
8.1-9.2 s against 8.9-10.1 s, freshness unchanged (``docs/benchmarks.md``)."""


# --- client timeouts -------------------------------------------------------------

REST_CONNECTION_TIMEOUT_MS = "rest.client.connection-timeout-ms"
"""Iceberg's Java REST client: how long opening a connection may take."""

REST_SOCKET_TIMEOUT_MS = "rest.client.socket-timeout-ms"
"""Iceberg's Java REST client: how long a read may wait for bytes."""

REST_METRICS_REPORTING = "rest-metrics-reporting-enabled"
"""Iceberg's Java REST catalog: send each commit's and scan's metrics report to the catalog
(``POST .../metrics``), synchronously, after the commit. Off in the loader: nothing reads them,
and the request sat between every batch's staged commit and its publish."""

S3_APACHE_CONNECTION_TIMEOUT_MS = "http-client.apache.connection-timeout-ms"
S3_APACHE_SOCKET_TIMEOUT_MS = "http-client.apache.socket-timeout-ms"
S3_URLCONNECTION_CONNECTION_TIMEOUT_MS = "http-client.urlconnection.connection-timeout-ms"
S3_URLCONNECTION_SOCKET_TIMEOUT_MS = "http-client.urlconnection.socket-timeout-ms"
"""S3FileIO's HTTP clients (Apache's or the JDK's URL connection): the same two timeouts."""

PYICEBERG_S3_CONNECT_TIMEOUT = "s3.connect-timeout"
PYICEBERG_S3_REQUEST_TIMEOUT = "s3.request-timeout"
"""pyiceberg's S3 file system (pyarrow), in seconds: how the driver reads table metadata."""

TABLE_MAX_TIMESTAMP_MS = "icefloe.loader.max-kafka-timestamp-ms"
"""Table property: ``MAX_TIMESTAMP_MS`` as of the last published batch, set by the commit that
publishes it. A batch written in one pass (``loader.ext.fastpath.onepass``) learns its newest
timestamp only once its snapshot is staged, too late for the snapshot's summary."""

TABLE_DEAD_LETTER_OFFSETS = "icefloe.loader.dead-letter-offsets"
"""Table property, JSON ``{"dlq-topic": {"0": 17}}``: for each partition of the dead-letter
topic, the offset after the newest letter the loader had sent when it last published. A new
process reads the topic from there to learn which letters were sent for records that no commit
covers yet (``loader.io.deadletter``), so it does not send them again."""
