"""A loader as a subprocess for tests that kill, freeze or thaw it: its own process group, its log
in a file.

``python -m icefloe.loader --config FILE`` starts in a new session, so its process group holds the
Python driver and Spark's JVM: a signal to the group reaches both. Spark's Python daemon and its
workers put themselves in a group of their own: a kill of the group ends them too (the daemon
exits when the JVM is gone), a freeze leaves them waiting on the frozen JVM.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psutil

from icefloe.loader import keys
from tests.loader.conftest import loader_env, wait_until

ROOT = Path(__file__).resolve().parents[2]


class LoaderProcess:
    """A loader subprocess with its log in a file.

    Args:
        config: the loader's TOML file.
        log: where its output goes (appended).
        env: extra environment (fault hooks of ``loader.testing.faultpoints``).
    """

    def __init__(self, config: Path, log: Path, env: Mapping[str, str] | None = None) -> None:
        self.log = log
        self._out = log.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "icefloe.loader", "--config", str(config)],
            cwd=ROOT,
            env={**loader_env(), **(env or {})},
            stdout=self._out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait(self, timeout_s: float) -> int:
        try:
            return self.proc.wait(timeout_s)
        finally:
            self._out.close()

    def kill(self) -> None:
        """SIGKILL the loader's process group (driver, JVM; the Python daemon then exits)."""
        self._signal(signal.SIGKILL)
        self.wait(30)

    def terminate_group(self) -> None:
        """SIGTERM the loader's whole process group (``kill -- -PGID``), JVM included."""
        self._signal(signal.SIGTERM)

    def thaw(self) -> None:
        """SIGCONT the loader's process group after a freeze."""
        self._signal(signal.SIGCONT)

    def frozen(self) -> bool:
        """True when the driver is stopped (SIGSTOP), e.g. by its own pause hook."""
        try:
            return psutil.Process(self.proc.pid).status() == psutil.STATUS_STOPPED
        except psutil.NoSuchProcess:
            return False

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def _signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)


def kill_if_running(*loaders: LoaderProcess) -> None:
    """SIGKILL every loader still running (a test's ``finally``)."""
    for loader in loaders:
        if loader.proc.poll() is None:
            loader.kill()


def load_all_then_stop(stack: Any, table: str, config: Path, log: Path, rows: int) -> None:
    """Start a loader, wait until ``table`` holds ``rows`` rows, then SIGTERM it (exit 0)."""
    loader = LoaderProcess(config, log)
    try:
        wait_until(lambda: counts(stack, table)[0] >= rows, 300, f"all {rows} rows")
        time.sleep(3)  # a duplicate would be written by a batch after the last one
        loader.proc.send_signal(signal.SIGTERM)
        assert loader.wait(120) == 0, loader.tail()
    finally:
        kill_if_running(loader)


def loader_snapshots(iceberg_catalog: Any, table: str) -> list[dict[str, str]]:
    """The summaries of ``table``'s loader snapshots (those carrying offsets), oldest first."""
    _, namespace, name = table.split(".")
    t = iceberg_catalog.load_table((namespace, name))
    return [
        dict(s.summary.additional_properties)
        for s in t.metadata.snapshots
        if s.summary and keys.OFFSETS in s.summary.additional_properties
    ]


def counts(stack: Any, table: str) -> tuple[int, int]:
    """``(count(*), count(DISTINCT event_id))`` of ``table`` through Trino."""
    ((total, distinct),) = stack.query(f"SELECT count(*), count(DISTINCT event_id) FROM {table}")
    return total, distinct
