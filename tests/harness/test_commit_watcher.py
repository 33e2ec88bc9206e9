"""The commit watcher sees a snapshot's manifest list appear in the table's metadata folder."""

from __future__ import annotations

import threading
from pathlib import Path

from icefloe.harness.scenarios.faults.timing import CommitWatcher


def test_it_returns_the_snapshot_whose_manifest_list_appears(tmp_path: Path) -> None:
    (tmp_path / "snap-11-1-a.avro").write_bytes(b"")
    watcher = CommitWatcher(tmp_path)
    later = threading.Timer(0.2, lambda: (tmp_path / "snap-42-1-b.avro").write_bytes(b""))
    later.start()
    assert watcher.wait_for_commit(5.0) == 42  # the one there before is not new


def test_it_returns_none_when_no_commit_comes(tmp_path: Path) -> None:
    (tmp_path / "snap-11-1-a.avro").write_bytes(b"")
    assert CommitWatcher(tmp_path).wait_for_commit(0.1) is None
    assert CommitWatcher(tmp_path / "missing").wait_for_commit(0.05) is None
