"""Breaks of the storage-level and liveness checks on the real stack: each check is valid on an
untouched table and names its anomaly once the table (or its writer) is broken on purpose.

- ``no_file_added_twice``: pyiceberg fast-appends a data file the table already holds (what
  apache/iceberg#16282 reports of a sink after a coordinator switch);
- ``files_exist``: a data file the current snapshot references is deleted from MinIO;
- ``staged_snapshots_bounded``: snapshots are staged under a ``wap.id`` and never published;
- ``liveness``: a writer frozen (SIGSTOP) right after a fault healed neither commits nor exits.

Each test builds a small table of its own (Trino DDL and inserts, pyiceberg for what Trino
cannot do), gathers through the same recording client and :func:`read_storage` a scenario run
uses, and judges with the registered checkers. A few seconds each.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from icefloe.harness.history import History, select
from icefloe.harness.observer import ICEFLOE
from icefloe.harness.pytest_plugin import backend_of, unique_name
from icefloe.harness.scenarios.checks.facts.reads import Observed
from icefloe.harness.scenarios.checks.verdict import INVALID, UNKNOWN, VALID, run_check
from icefloe.harness.scenarios.client import RecordingClient
from icefloe.harness.scenarios.gather.storage import entries_from_manifests, read_storage
from icefloe.harness.stack.keys import TRINO_CATALOG as LAKE
from icefloe.loader import keys
from icefloe.publisher.ledger import LedgerEntry

pytestmark = pytest.mark.integration


@pytest.fixture
def small_table(stack: Any, schema_factory: Callable[..., str]) -> Callable[[int], str]:
    """A two-column table with one data file per insert: ``lake.schema.table``."""

    def make(inserts: int = 2) -> str:
        table = f"{LAKE}.{schema_factory()}.{unique_name('st')}"
        stack.query(f"CREATE TABLE {table} (id BIGINT, v VARCHAR)")
        for i in range(inserts):
            stack.query(f"INSERT INTO {table} VALUES ({i}, 'row {i}')")
        return table

    return make


def judge(stack: Any, table: str, check: str, params: dict[str, Any] | None = None) -> Any:
    """Gather what ``check`` needs into a fresh history and judge it."""
    history = History()
    read_storage(RecordingClient(stack, history), table, [check])
    return run_check(check, history, [], Observed(), params), history


def iceberg(stack: Any, table: str) -> Any:
    return stack.pyiceberg_catalog().load_table(table.split(".", 1)[1])


def test_no_file_added_twice_catches_a_data_file_committed_again(
    stack: Any, small_table: Callable[[int], str]
) -> None:
    table = small_table(2)
    result, history = judge(stack, table, "no_file_added_twice")
    assert result.verdict == VALID, result
    assert result.stats["added_entries"] == 2
    # Trino's $all_entries and pyiceberg's manifests agree on what was added, and by whom.
    trino_entries = select(history, "read", "storage_entries", "ok")[-1].data["values"]
    assert trino_entries == entries_from_manifests(iceberg(stack, table))

    tbl = iceberg(stack, table)
    again = next(iter(tbl.scan().plan_files())).file
    with tbl.transaction() as tx, tx.update_snapshot().fast_append() as append:
        append.append_data_file(again)
    assert stack.query(f"SELECT count(*) FROM {table}")[0][0] == 3  # a row now reads twice

    result, _ = judge(stack, table, "no_file_added_twice")
    assert result.verdict == INVALID, result
    assert result.anomalies["added_twice"].count == 1
    assert again.file_path in result.anomalies["added_twice"].examples[0]
    assert result.anomalies["listed_twice"].count == 1


def test_files_exist_catches_a_data_file_deleted_from_storage(
    stack: Any, small_table: Callable[[int], str]
) -> None:
    table = small_table(2)
    result, _ = judge(stack, table, "files_exist")
    assert result.verdict == VALID, result
    assert result.stats["data"] == 2 and result.stats["manifest_list"] == 1

    path = next(iter(iceberg(stack, table).scan().plan_files())).file.file_path
    stack.minio.filesystem().delete_file(path.split("://", 1)[1])

    result, _ = judge(stack, table, "files_exist")
    assert result.verdict == INVALID, result
    assert result.anomalies["missing_file"].examples == [f"data {path}"]


def _stage(tbl: Any, wap_id: str, rows: int = 1) -> int:
    """Write a snapshot under ``wap_id`` that no branch keeps (what a write-audit-publish
    write leaves until it is published); return its id."""
    import pyarrow as pa

    branch = f"stage-{wap_id}"
    data = pa.table({"id": pa.array(range(rows), pa.int64()), "v": [wap_id] * rows})
    tbl.append(data, snapshot_properties={keys.WAP_ID: wap_id}, branch=branch)
    snapshot = int(tbl.refs()[branch].snapshot_id)
    tbl.manage_snapshots().remove_branch(branch).commit()
    return snapshot


def test_staged_snapshots_bounded_catches_snapshots_never_published(
    stack: Any, small_table: Callable[[int], str]
) -> None:
    table = small_table(1)
    tbl = iceberg(stack, table)
    assert judge(stack, table, "staged_snapshots_bounded")[0].verdict == UNKNOWN  # no WAP yet
    published = _stage(tbl, "published-1")
    tbl.manage_snapshots().set_current_snapshot(published).commit()
    result, _ = judge(stack, table, "staged_snapshots_bounded", {"max_staged": 2})
    assert result.verdict == VALID, result
    assert result.stats["staged"] == 1 and result.stats["unpublished"] == 0

    orphans = [_stage(tbl, f"orphan-{i}") for i in range(3)]
    result, _ = judge(stack, table, "staged_snapshots_bounded", {"max_staged": 2})
    assert result.verdict == INVALID, result
    anomaly = result.anomalies["staged_piled_up"]
    assert anomaly.count == 1 and anomaly.examples[0].startswith(f"{orphans[0]} (wap.id orphan-0")
    assert result.stats["unpublished"] == 3


# -- liveness: a writer frozen after a heal ----------------------------------------------------

_WRITER = textwrap.dedent(
    """
    import sys, time
    import pyarrow as pa
    from icefloe.harness.stack.backends import make_stack
    from icefloe.harness.stack.config import load
    table, backend, key, loader_id = sys.argv[1:5]
    tbl = make_stack(load(), backend).pyiceberg_catalog().load_table(table)
    i = 0
    while True:
        data = pa.table({"id": pa.array([i], pa.int64()), "v": ["stand-in"]})
        tbl.append(data, snapshot_properties={key: loader_id})
        i += 1
        time.sleep(0.3)
    """
)


@pytest.fixture
def writer(
    stack: Any, small_table: Callable[[int], str], pytestconfig: pytest.Config
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A stand-in loader: a process appending a one-row snapshot, stamped with a loader id,
    about three times a second to its own table."""
    table = small_table(0)
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _WRITER,
            table.split(".", 1)[1],
            backend_of(pytestconfig),
            keys.LOADER_ID,
            "w",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        yield table, process
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGCONT)
            process.kill()
        process.wait(timeout=10)
        if process.stderr is not None:
            process.stderr.close()


def _await_commits(client: RecordingClient, table: str, process: Any, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read().decode()[-2000:]
        if any(c["summary"].get(keys.LOADER_ID) for c in client.commits(table)):
            return
        time.sleep(0.5)
    raise AssertionError(f"the stand-in writer made no commit in {timeout_s} s")


def _pause(history: History, process: Any, name: str, frozen_s: float = 1.0) -> None:
    """A fault on the writer, injected and healed as the engine records one."""
    history.record("fault", "invoke", f"{name}.inject", kind="freeze", lane="loader")
    os.kill(process.pid, signal.SIGSTOP)
    history.record("fault", "ok", f"{name}.inject")
    time.sleep(frozen_s)
    history.record("fault", "invoke", f"{name}.heal")
    os.kill(process.pid, signal.SIGCONT)
    history.record("fault", "ok", f"{name}.heal")


def test_liveness_catches_a_writer_frozen_after_a_heal(stack: Any, writer: tuple[str, Any]) -> None:
    table, process = writer
    bound_s = 3.0
    history = History()
    client = RecordingClient(stack, history)
    # The stand-in commits about three times a second: its observer says so, and the bound
    # stays the 3 s given (a declared 2 s cadence would stretch it to six cadences).
    stand_in = dataclasses.replace(ICEFLOE, cadence_s=0.3)
    history.record("info", "info", "observer", loader_id="w", observer=stand_in.to_json())
    history.record("loader", "invoke", "start", loader_id="w")
    _await_commits(client, table, process, timeout_s=60)
    # Messages wait for the writer all along: a backlog it stands for (it must commit).
    backlog = [
        LedgerEntry(i, "t", 0, i, int((time.time() + i) * 1000), None, f"id-{i}", "valid")
        for i in range(30)
    ]

    _pause(history, process, "freeze_writer")
    time.sleep(bound_s + 0.5)
    client.commits(table)
    result = run_check("liveness", history, backlog, Observed(), {"bound_s": bound_s})
    assert result.verdict == VALID, result
    assert result.stats["resumed"] == 1

    _pause(history, process, "freeze_writer_again")
    os.kill(process.pid, signal.SIGSTOP)  # the break: frozen right after the heal, unrecorded
    time.sleep(bound_s + 0.5)
    client.commits(table)
    history.record("info", "info", "end")
    result = run_check("liveness", history, backlog, Observed(), {"bound_s": bound_s})
    assert result.verdict == INVALID, result
    assert result.anomalies["stalled"].count == 1
    assert "freeze_writer_again healed" in result.anomalies["stalled"].examples[0]
    assert result.stats["resumed"] == 1
