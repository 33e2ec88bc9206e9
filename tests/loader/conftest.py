"""Loader test fixtures: one Spark session per test session, loader configs, Kafka helpers.

Spark takes 20-40 s to start on a small machine, so in-process integration
tests share one session (``spark``); tests that must kill the loader run it
as a subprocess (``python -m icefloe.loader``) instead.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.loaders.config import stack_loader_config
from icefloe.harness.waiting import poll
from icefloe.loader.config import LoaderConfig
from icefloe.loader.secret import Secret


def make_config(
    stack: Any,
    secret_file: Path,
    table: str,
    topics: Iterable[str],
    checkpoint: Path,
    **settings: Any,
) -> LoaderConfig:
    """A loader configuration for ``table`` fed by ``topics`` on the test stack."""
    settings.setdefault("loader_id", "test-loader")
    settings.setdefault("trigger_interval", 1.0)
    return stack_loader_config(
        stack,
        table,
        list(topics),
        secret=Secret.from_file(secret_file),
        checkpoint_location=str(checkpoint),
        **settings,
    )


@pytest.fixture(scope="session")
def s3_secret_file(stack: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stack's S3 secret key in a 0600 file, as a loader config references it."""
    path = tmp_path_factory.mktemp("secrets") / "s3-secret-key"
    path.touch(mode=0o600)
    path.write_text(stack.credentials.secret_key.reveal())
    return path


@pytest.fixture
def loader_config(
    stack: Any, s3_secret_file: Path, tmp_path: Path
) -> Callable[..., tuple[Path, LoaderConfig]]:
    """A loader configuration and its TOML file: ``make(table, topics, **settings)``."""

    def make(table: str, topics: Iterable[str], **settings: Any) -> tuple[Path, LoaderConfig]:
        path = tmp_path / f"loader-{time.monotonic_ns()}.toml"
        checkpoint = path.with_name(path.stem + "-checkpoint")
        config = make_config(stack, s3_secret_file, table, topics, checkpoint, **settings)
        path.write_text(config.to_toml())
        return path, config

    return make


@pytest.fixture(scope="session")
def spark(
    stack: Any, s3_secret_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """One Spark session with the `lake` catalog, shared by in-process loader tests."""
    from icefloe.loader.run.spark import session

    checkpoint = tmp_path_factory.mktemp("spark") / "checkpoint"
    spark = session(
        make_config(stack, s3_secret_file, "lake.unused.unused", ["unused"], checkpoint)
    )
    yield spark
    spark.stop()


@pytest.fixture
def produce(stack: Any) -> Iterator[Callable[..., None]]:
    """``produce(topic, values, partition=None, key=None)``: send and flush."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": stack.bootstrap_servers, "linger.ms": 5})

    def send(
        topic: str,
        values: Iterable[bytes | None],
        partition: int | None = None,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None:
        for i, value in enumerate(values):
            kwargs: dict[str, Any] = {"headers": headers} if headers else {}
            if partition is not None:
                kwargs["partition"] = partition
            producer.produce(topic, value, f"k{i}".encode(), **kwargs)
        assert producer.flush(30) == 0

    yield send


def reference_values(count: int, seed: int = 1) -> list[tuple[str, bytes]]:
    """``count`` valid reference rows as (event_id, JSON bytes) from the publisher's generator."""
    from icefloe.publisher.messages import GenerationConfig, generate

    out = []
    for message in generate(GenerationConfig(seed=seed), count):
        assert message.value is not None
        out.append((message.event_id, message.value))
    return out


def wait_until(check: Callable[[], bool], timeout_s: float, what: str, step_s: float = 1.0) -> None:
    """Poll ``check`` until true or fail the test after ``timeout_s``."""
    if not poll(check, timeout_s=timeout_s, every_s=step_s):
        pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}")


def loader_env() -> dict[str, str]:
    """The environment for a loader subprocess: no inherited loader settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith("ICEFLOE_LOADER_")}


# py4j (pyspark's bridge to the JVM) leaves the sockets of finished callback
# connections to the garbage collector; the ResourceWarning it triggers is
# about py4j's sockets, not the loader's, so ignore exactly that in tests
# that run Spark in this process.
_PY4J_SOCKETS = (
    "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.filterwarnings(_PY4J_SOCKETS))
