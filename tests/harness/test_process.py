"""ManagedProcess on real (tiny) processes: start detached, pause, resume, stop, kill -9."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import psutil
import pytest

from icefloe.harness.stack import process as process_module
from icefloe.harness.stack.process import ManagedProcess
from icefloe.harness.stack.readiness import PortOpen, ServiceStartTimeout, wait_ready

_SLEEPER = [sys.executable, "-c", "import time; print('sleeper up', flush=True); time.sleep(600)"]


@pytest.fixture
def sleeper(tmp_path: Path):  # type: ignore[no-untyped-def]
    proc = ManagedProcess("sleeper", tmp_path)
    proc.start(_SLEEPER, dict(os.environ), cwd=tmp_path)
    yield proc
    proc.kill()


def test_start_tracks_pid_and_logs(sleeper: ManagedProcess) -> None:
    assert sleeper.is_running()
    assert sleeper.pid is not None
    assert sleeper.rss_bytes() > 0
    wait_ready("sleeper", _LogSays("sleeper up", sleeper), sleeper, timeout=10)


def test_pause_and_resume(sleeper: ManagedProcess) -> None:
    sleeper.pause()
    assert sleeper.is_paused()
    sleeper.resume()
    assert not sleeper.is_paused()
    assert sleeper.is_running()


def test_stop_is_graceful_then_forced(sleeper: ManagedProcess) -> None:
    sleeper.pause()  # a paused process must still stop
    sleeper.stop(timeout=5)
    assert not sleeper.is_running()


# A leader that stops on SIGTERM and has a child that notes a SIGTERM of its own.
_CHILD = (
    "import pathlib, signal, sys, time\n"
    "mark = pathlib.Path(sys.argv[1])\n"
    "signal.signal(signal.SIGTERM, lambda *_: (mark.write_text('term'), sys.exit(0)))\n"
    "mark.write_text('up')\n"
    "time.sleep(600)\n"
)
_LEADER = (
    "import signal, subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2]])\n"
    "signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\n"
    "print('child', child.pid, flush=True)\n"
    "time.sleep(600)\n"
)


def _family(tmp_path: Path) -> tuple[ManagedProcess, Path]:
    proc = ManagedProcess("family", tmp_path)
    mark = tmp_path / "child.mark"
    proc.start([sys.executable, "-c", _LEADER, _CHILD, str(mark)], dict(os.environ), tmp_path)
    deadline = time.monotonic() + 10
    while not (mark.exists() and mark.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mark.read_text() == "up"
    return proc, mark


def _child_pid(proc: ManagedProcess) -> int:
    line = next(x for x in proc.log_file.read_text().splitlines() if x.startswith("child "))
    return int(line.split()[1])


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_stop_leader_only_spares_the_children_the_signal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process_module, "LEFTOVER_WAIT_S", 0.5)
    proc, mark = _family(tmp_path)
    child = _child_pid(proc)
    proc.stop(timeout=5, leader_only=True)
    assert not proc.is_running()
    assert mark.read_text() == "up"  # the child never saw a SIGTERM ...
    deadline = time.monotonic() + 5
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(child)  # ... and did not outlive its leader


def test_stop_signals_the_whole_group_by_default(tmp_path: Path) -> None:
    proc, mark = _family(tmp_path)
    proc.stop(timeout=5)
    deadline = time.monotonic() + 5
    while mark.read_text() != "term" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mark.read_text() == "term"


def test_kill_nine(sleeper: ManagedProcess) -> None:
    sleeper.kill()
    assert not sleeper.is_running()


def test_a_recycled_pid_is_not_the_service(tmp_path: Path) -> None:
    proc = ManagedProcess("ghost", tmp_path)
    proc.pid_file.write_text(f'{{"pid": {os.getpid()}, "created": 1.0}}')
    assert not proc.is_running()


def test_timeout_carries_the_log_tail(sleeper: ManagedProcess) -> None:
    with pytest.raises(ServiceStartTimeout, match="sleeper up"):
        wait_ready("sleeper", PortOpen("127.0.0.1", 1), sleeper, timeout=1, interval=0.1)


def test_early_exit_is_reported(tmp_path: Path) -> None:
    proc = ManagedProcess("crasher", tmp_path)
    proc.start([sys.executable, "-c", "raise SystemExit('boom: bad config')"], {}, cwd=tmp_path)
    with pytest.raises(ServiceStartTimeout, match="boom: bad config"):
        wait_ready("crasher", PortOpen("127.0.0.1", 1), proc, timeout=30, interval=0.1)


class _LogSays:
    def __init__(self, text: str, proc: ManagedProcess) -> None:
        self.text, self.proc = text, proc

    def ready(self) -> bool:
        return self.text in self.proc.log_tail()

    def describe(self) -> str:
        return f"log says {self.text!r}"
