"""When a fault strikes: now, or the moment a commit starts; and whether that commit landed.

:class:`CommitWatcher` watches the table's metadata folder in MinIO's data directory: a new
manifest list (``snap-<id>-...avro``) means a writer has written its data and is about to
commit the snapshot (the loader stages each batch's snapshot before publishing it, so a kill
between staging and publishing counts as inside the commit). A fault injected then lands
*during* a commit; afterwards it asks the catalog whether that snapshot ever became part of
main's lineage and records ``during_commit`` (it did not: the fault interrupted the commit).
"""

from __future__ import annotations

import random
import re
import time
from pathlib import Path
from typing import Any

from icefloe.harness.waiting import poll

__all__ = ["CommitWatcher", "landed", "wait_for_commit"]

_SNAP = re.compile(r"^snap-(-?\d+)-")


class CommitWatcher:
    """Notices manifest lists appearing in a table's metadata folder (commits in flight).

    Args:
        metadata_dir: ``<minio data>/<bucket>/<table path>/metadata``.
    """

    def __init__(self, metadata_dir: Path) -> None:
        self.metadata_dir = metadata_dir

    def _snapshots(self) -> set[int]:
        try:
            names = [p.name for p in self.metadata_dir.iterdir()]
        except FileNotFoundError:
            return set()
        return {int(m.group(1)) for n in names if (m := _SNAP.match(n))}

    def wait_for_commit(self, timeout_s: float, poll_s: float = 0.005) -> int | None:
        """Block until a new manifest list appears; return its snapshot id (None on timeout)."""
        known = self._snapshots()
        new = poll(lambda: self._snapshots() - known, timeout_s=timeout_s, every_s=poll_s)
        return max(new) if new else None


def wait_for_commit(
    run: Any, at: str, timeout_s: float, max_delay_s: float, rng: random.Random
) -> int | None:
    """Wait for the moment ``at`` names (``now``: return at once; ``commit``: the next commit,
    plus a random delay up to ``max_delay_s``); return the snapshot being committed, if seen."""
    if at != "commit":
        return None
    watcher = run.commit_watcher()
    if watcher is None:
        return None
    snapshot: int | None = watcher.wait_for_commit(timeout_s)
    if snapshot is not None and max_delay_s:
        time.sleep(rng.uniform(0, max_delay_s))
    return snapshot


def landed(run: Any, name: str, snapshot: int | None) -> bool | None:
    """Record whether the commit a fault interrupted landed in main (None: unknown)."""
    if snapshot is None:
        return None
    lineage = run.client.lineage(run.names.table)
    result = None if lineage is None else snapshot in lineage
    run.history.record(
        "fault",
        "info",
        f"{name}.commit",
        snapshot=snapshot,
        landed=result,
        during_commit=result is False,
    )
    return result
