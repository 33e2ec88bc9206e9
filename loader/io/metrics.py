"""Metrics: what the loader exports to Prometheus, on 127.0.0.1 only.

One ``LoaderMetrics`` per job, on its own registry (so tests can run several
jobs in one process): rows written, records dead-lettered by reason (the
error kind), batch and commit durations, consumer lag per partition (Kafka
high watermark minus committed offset) and freshness (now minus the newest
committed record's Kafka timestamp).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["LoaderMetrics"]

_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0)


class LoaderMetrics:
    """The loader's Prometheus metrics.

    Args:
        table: the table identifier, a constant label.
    """

    def __init__(self, table: str) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry()
        labels = {"table": table}
        self.rows_written = Counter(
            "icefloe_loader_rows_written",
            "Rows appended to the table.",
            registry=self.registry,
        )
        self.dead_lettered = Counter(
            "icefloe_loader_dead_lettered",
            "Records sent to the dead-letter topic, by error kind.",
            ["reason"],
            registry=self.registry,
        )
        self.batch_seconds = Histogram(
            "icefloe_loader_batch_duration_seconds",
            "Micro-batch duration: read, decode, dead-letter, commit.",
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.commit_seconds = Histogram(
            "icefloe_loader_commit_duration_seconds",
            "Duration of the Iceberg append commit.",
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.retries = Counter(
            "icefloe_loader_retries",
            "Calls tried again because a service did not answer, by service "
            "(catalog, storage, kafka).",
            ["service"],
            registry=self.registry,
        )
        self.unknown_outcomes = Counter(
            "icefloe_loader_unknown_commit_outcomes",
            "Commits whose answer was lost, by commit (publish, take-over) and by what reading "
            "the table showed (landed true or false).",
            ["commit", "landed"],
            registry=self.registry,
        )
        self.lag = Gauge(
            "icefloe_loader_consumer_lag",
            "Kafka high watermark minus the committed next offset.",
            ["topic", "partition"],
            registry=self.registry,
        )
        self.freshness = Gauge(
            "icefloe_loader_freshness_seconds",
            "Now minus the newest committed record's Kafka timestamp.",
            registry=self.registry,
        )
        self.info = Gauge(
            "icefloe_loader_info",
            "Constant 1, labelled with the table.",
            list(labels),
            registry=self.registry,
        )
        self.info.labels(**labels).set(1)
        self._server: Any = None

    def serve(self, port: int) -> int:
        """Start the HTTP endpoint on 127.0.0.1.

        Args:
            port: the port; 0 disables the endpoint.

        Returns:
            The port served, or 0 when disabled.
        """
        if port == 0:
            return 0
        from prometheus_client import start_http_server

        self._server, _thread = start_http_server(port, addr="127.0.0.1", registry=self.registry)
        return port

    def stop(self) -> None:
        """Stop the HTTP endpoint, if started."""
        if self._server is not None:
            self._server.shutdown()
            self._server = None

    def set_lag(self, lag: Mapping[tuple[str, int], int]) -> None:
        """Record consumer lag per (topic, partition)."""
        for (topic, partition), value in lag.items():
            self.lag.labels(topic=topic, partition=str(partition)).set(value)
