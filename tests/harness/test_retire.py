"""``LoaderProcess.retire`` on a real child process (no loader, no stack): how a thawed
zombie ends: its own exit, a kill once it holds the table again, or a kill at the timeout."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from icefloe.harness.history import History, select
from icefloe.harness.loaders import process as loader_process
from icefloe.harness.loaders.process import LoaderProcess

# A stand-in for a thawed zombie: it steps down (exit 3) after ``delay`` seconds.
STEP_DOWN = "import sys, time; time.sleep(float(sys.argv[1])); sys.exit(3)"


def frozen_child(tmp_path: Path, delay_s: float) -> LoaderProcess:
    loader = LoaderProcess(SimpleNamespace(loader_id="z"), None, tmp_path, History())
    argv = [sys.executable, "-c", STEP_DOWN, str(delay_s)]
    loader.process.start(argv, dict(os.environ), tmp_path)
    loader.process.pause()
    return loader


def test_a_zombie_that_steps_down_returns_its_exit_code(tmp_path: Path) -> None:
    loader = frozen_child(tmp_path, 0.5)
    assert loader.retire(30.0, holds_table=lambda: False) == 3


def test_a_zombie_that_holds_the_table_again_is_killed_at_once(
    tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setattr(loader_process, "RETIRE_LEASE_POLL_S", 0.2)
    loader = frozen_child(tmp_path, 60.0)
    asked: list[float] = []

    def holds_table() -> bool:
        asked.append(time.monotonic())
        return len(asked) >= 2

    began = time.monotonic()
    assert loader.retire(30.0, holds_table) is None
    assert time.monotonic() - began < 10  # not the 30 s timeout
    assert not loader.is_running() and len(asked) == 2
    assert len(select(loader.history.events, "loader", name="holds_table")) == 1


def test_without_the_question_a_zombie_that_never_exits_is_killed_at_the_timeout(
    tmp_path: Path,
) -> None:
    loader = frozen_child(tmp_path, 60.0)
    began = time.monotonic()
    assert loader.retire(1.5) is None
    assert 1.4 < time.monotonic() - began < 10 and not loader.is_running()
