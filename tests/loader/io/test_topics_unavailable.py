"""A loader that cannot reach Kafka says so in one line, after waiting (no broker needed)."""

from __future__ import annotations

import socket
import time

import pytest

from icefloe.loader.config import KafkaConfig
from icefloe.loader.errors import KafkaUnavailable, LoaderError
from icefloe.loader.io.topics import KafkaMetadata


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_no_broker_is_a_clear_loader_error_after_the_wait() -> None:
    bootstrap = f"127.0.0.1:{_closed_port()}"
    kafka = KafkaMetadata(KafkaConfig(bootstrap=bootstrap, topics=("t",)), timeout_s=0.3)
    try:
        began = time.monotonic()
        with pytest.raises(KafkaUnavailable, match=f"Kafka at {bootstrap}") as caught:
            kafka.partitions(wait_s=1.2)
        assert 1.2 <= time.monotonic() - began < 10
        assert isinstance(caught.value, LoaderError)
        with pytest.raises(KafkaUnavailable):
            kafka.partitions()  # asked once
    finally:
        kafka.close()
