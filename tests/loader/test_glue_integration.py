"""The loader on a Glue catalog (ministack's, ``harness.stack.glue``): exactly-once across a
kill -9 right after a commit, and the fence against a loader frozen past its lease.

Tables are made and counted through Trino's ``glue`` catalog, their snapshots read with
pyiceberg's Glue catalog; the loaders run as ``python -m icefloe.loader`` with ``[catalog] type =
"glue"``, signing their Glue requests with the AWS default chain (their environment, which
they inherit from this process).
"""

from __future__ import annotations

import dataclasses
import json
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.loaders.config import stack_loader_config
from icefloe.harness.pytest_plugin import unique_name
from icefloe.harness.stack import keys as stack_keys
from icefloe.harness.stack.glue import client_environment
from icefloe.harness.stack.tables import EVENT_ID_COLUMN, create_table_sql
from icefloe.loader import catalogs, keys
from icefloe.loader.config import LoaderConfig
from icefloe.loader.errors import EXIT_NOT_OWNER
from icefloe.loader.secret import Secret
from icefloe.loader.testing.faultpoints import KILL_AFTER_COMMIT_ENV
from tests.loader.conftest import reference_values, wait_until
from tests.loader.processes import LoaderProcess, counts, kill_if_running
from tests.loader.test_fencing_integration import _freeze_a_then_take_over, _unpublished_of

pytestmark = pytest.mark.integration


@pytest.fixture
def glue_table(stack: Any, glue_service: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A reference table (with ``event_id``) made through Trino's ``glue`` catalog, in a
    fresh schema: ``glue.<schema>.events``."""
    for name, value in client_environment(stack.credentials).items():
        monkeypatch.setenv(name, value)  # this process's Glue client and the loaders'
    schema = f"{stack_keys.TRINO_GLUE_CATALOG}.{unique_name('g')}"
    table = f"{schema}.events"
    stack.query(f"CREATE SCHEMA {schema}")
    stack.query(create_table_sql(table, EVENT_ID_COLUMN))
    yield table
    stack.query(f"DROP TABLE IF EXISTS {table}")
    stack.query(f"DROP SCHEMA IF EXISTS {schema}")


@pytest.fixture
def glue_loader_config(
    stack: Any, glue_service: Any, s3_secret_file: Path, tmp_path: Path
) -> Callable[..., tuple[Path, LoaderConfig]]:
    """``loader_config`` on the Glue catalog: ``make(table, topics, **settings)``."""

    def make(table: str, topics: list[str], **settings: Any) -> tuple[Path, LoaderConfig]:
        path = tmp_path / f"loader-{time.monotonic_ns()}.toml"
        settings.setdefault("loader_id", "glue-loader")
        settings.setdefault("trigger_interval", 1.0)
        base = stack_loader_config(
            stack,
            table,
            topics,
            secret=Secret.from_file(s3_secret_file),
            checkpoint_location=str(path.with_name(path.stem + "-checkpoint")),
            **settings,
        )
        glue = dataclasses.replace(
            base.catalog,
            type="glue",
            uri=None,
            glue_endpoint=glue_service.endpoint,
            warehouse=f"s3://{stack_keys.WAREHOUSE_BUCKET}/{stack_keys.TRINO_GLUE_CATALOG}",
        )
        config = dataclasses.replace(base, catalog=glue)
        path.write_text(config.to_toml())
        return path, config

    return make


@pytest.fixture
def glue_catalog(glue_loader_config: Callable[..., tuple[Path, LoaderConfig]]) -> Any:
    """pyiceberg's Glue catalog, as the loader builds it."""
    _, config = glue_loader_config("glue.unused.unused", ["unused"])
    return catalogs.client(stack_keys.TRINO_GLUE_CATALOG, config.catalog)


def loader_offsets(catalog: Any, table: str) -> list[Any]:
    """The offsets of every loader snapshot of ``table``, oldest first."""
    _, namespace, name = table.split(".")
    t = catalog.load_table((namespace, name))
    return [
        json.loads(s.summary.additional_properties[keys.OFFSETS])
        for s in t.metadata.snapshots
        if s.summary and keys.OFFSETS in s.summary.additional_properties
    ]


def test_a_loader_on_glue_killed_after_a_commit_loads_every_row_once(
    stack: Any,
    glue_table: str,
    glue_loader_config: Any,
    glue_catalog: Any,
    topic_factory: Any,
    produce: Any,
    tmp_path: Path,
) -> None:
    topic = topic_factory(partitions=2)
    rows = [v for _, v in reference_values(1200, seed=11)]
    produce(topic, rows[:600], partition=0)
    produce(topic, rows[600:], partition=1)
    path, _ = glue_loader_config(
        glue_table, [topic], kafka={"max_offsets_per_trigger": 300, "first_slice_records": 0}
    )
    log = tmp_path / "loader.log"

    # 1. Dies right after its first commit, before Spark's checkpoint records the batch.
    first = LoaderProcess(path, log, {KILL_AFTER_COMMIT_ENV: "1"})
    try:
        assert first.wait(240) == -signal.SIGKILL, first.tail()
    finally:
        kill_if_running(first)
    committed = counts(stack, glue_table)[0]
    assert 0 < committed < 1200, first.tail()
    assert len(loader_offsets(glue_catalog, glue_table)) == 1

    # 2. Restarted: resumes from the offsets in the table, loads the rest, stops on SIGTERM.
    second = LoaderProcess(path, log)
    try:
        wait_until(lambda: counts(stack, glue_table)[0] >= 1200, 240, "every row on Glue")
        second.proc.send_signal(signal.SIGTERM)
        assert second.wait(120) == 0, second.tail()
    finally:
        kill_if_running(second)
    assert counts(stack, glue_table) == (1200, 1200), second.tail()
    assert loader_offsets(glue_catalog, glue_table)[-1] == {topic: {"0": 600, "1": 600}}


def test_a_loader_on_glue_frozen_before_its_publish_is_fenced_by_the_successor(
    stack: Any,
    glue_table: str,
    glue_loader_config: Any,
    glue_catalog: Any,
    topic_factory: Any,
    produce: Any,
    tmp_path: Path,
) -> None:
    """As ``test_fencing_integration`` at the ``publish`` point: A staged its batch in Glue and
    froze; B took the table; A, thawed, must be refused and step down."""
    topic = topic_factory(partitions=2)
    rows = [v for _, v in reference_values(8000, seed=13)]
    produce(topic, rows[:4000], partition=0)
    produce(topic, rows[4000:], partition=1)
    a, b = _freeze_a_then_take_over(
        stack, glue_catalog, glue_table, topic, glue_loader_config, tmp_path, "publish"
    )
    try:
        wait_until(lambda: counts(stack, glue_table)[0] >= 8000, 240, "B to load the backlog")
        a.thaw()
        assert a.wait(180) == EXIT_NOT_OWNER, a.tail()
        assert "Fenced" in a.tail(60) and "loader-b" in a.tail(60), a.tail(60)
        assert _unpublished_of(glue_catalog, glue_table, "loader-a"), a.tail(60)
        time.sleep(3)  # a duplicate would come from a batch after the last one
        assert b.proc.poll() is None, "the successor must keep loading: " + b.tail()
        assert counts(stack, glue_table) == (8000, 8000)
        b.proc.send_signal(signal.SIGTERM)
        assert b.wait(90) == 0, b.tail()
    finally:
        kill_if_running(a, b)
