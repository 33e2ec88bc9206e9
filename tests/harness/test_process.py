"""ManagedProcess on real (tiny) processes: start detached, pause, resume, stop, kill -9."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from harness.stack.process import ManagedProcess
from harness.stack.readiness import PortOpen, ServiceStartTimeout, wait_ready

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
