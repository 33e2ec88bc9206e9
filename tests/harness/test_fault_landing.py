"""Where a loader start's faults landed, recorded in the history when the start ends: a real
child process (no loader, no stack) runs the loader's own fault points
(``loader.testing.faultpoints``), armed and traced as ``LoaderProcess.start`` arms them."""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from icefloe.harness.history import History, select
from icefloe.harness.loaders import process as loader_process
from icefloe.harness.loaders.process import LoaderProcess, _Start, armed_fault
from icefloe.harness.scenarios.faults.loader import _fired
from icefloe.loader.testing.faultpoints import (
    KILL_AT_ENV,
    PAUSE_AT_ENV,
    PAUSE_DELAY_MS_ENV,
    TRACE_ENV,
)
from tests.harness.fakes import RestCatalog

# A stand-in for a loader's first batch: it passes the points named in argv, then exits 0.
BATCH = (
    "import sys; from icefloe.loader.testing.faultpoints import FaultPoints; "
    "f = FaultPoints.from_env(); "
    "[f.reached(p, 0) for p in sys.argv[1:]]"
)


# The same, waiting (10 s) after its points for a timed point's signal (exit 0 if none comes).
WAITING_BATCH = BATCH.replace("import sys;", "import sys, time;") + "; time.sleep(10)"


def run_start(
    tmp_path: Path, hooks: dict[str, str], points: list[str], batch: str = BATCH
) -> LoaderProcess:
    loader = LoaderProcess(SimpleNamespace(loader_id="l"), None, tmp_path, History())  # type: ignore[arg-type]
    trace = tmp_path / "trace-1.jsonl"
    env = {**os.environ, **hooks, TRACE_ENV: str(trace)}
    pid = loader.process.start([sys.executable, "-c", batch, *points], env, Path.cwd())
    loader._unsettled[pid] = _Start(1, pid, trace, dict(hooks))
    loader.trace_file = trace
    assert loader.process.wait_exit(30.0)
    loader.close()  # records what the trace says
    return loader


def test_a_kill_that_fired_is_recorded_where_it_landed(tmp_path: Path) -> None:
    loader = run_start(tmp_path, {KILL_AT_ENV: "decoded"}, ["planned", "decoded", "write"])
    assert loader.process.returncode() == -9
    (landed,) = select(loader.history, "loader", "fault_landed")
    assert landed.data["point"] == "decoded" and landed.data["action"] == "kill"
    assert landed.data["armed"] == {"point": "decoded", "action": "kill"}
    assert not select(loader.history, "loader", "fault_not_landed")
    assert [line["point"] for line in loader.last_trace()] == ["decoded"]


def test_a_point_that_never_fired_is_not_landed(tmp_path: Path) -> None:
    loader = run_start(tmp_path, {KILL_AT_ENV: "committed"}, ["planned", "decoded"])
    assert loader.process.returncode() == 0
    assert not select(loader.history, "loader", "fault_landed")
    (missed,) = select(loader.history, "loader", "fault_not_landed")
    assert missed.data["armed"] == {"point": "committed", "action": "kill"}


def test_a_start_armed_with_nothing_records_nothing(tmp_path: Path) -> None:
    loader = run_start(tmp_path, {}, ["planned"])
    assert not select(loader.history, "loader")


def test_the_armed_fault_of_a_start() -> None:
    assert armed_fault({PAUSE_AT_ENV: "write"}) == {"point": "write", "action": "freeze"}
    assert armed_fault({"ICEFLOE_TEST_KILL_AFTER_COMMIT": "1"}) == {
        "point": "committed",
        "action": "kill",
    }
    assert armed_fault({"ICEFLOE_TEST_PAUSE_DELAY_MS": "100"}) is None


class FakeStart:
    """One start of a loader: it reaches the point it was armed for, or (``fires`` False)
    never does."""

    def __init__(self, hooks: dict[str, str], fires: bool) -> None:
        self.hooks = dict(hooks)
        self.fires = fires and KILL_AT_ENV in hooks

    def wait_exit(self, timeout_s: float) -> bool:
        return self.fires

    def last_trace(self) -> list[dict[str, object]]:
        return [{"point": self.hooks[KILL_AT_ENV], "action": "kill"}] if self.fires else []


class FakeLoaders:
    def __init__(self, hooks: dict[str, str], fires: bool = True) -> None:
        self.fires = fires
        self.current = FakeStart(hooks, fires)
        self.armed: dict[str, str] = {}
        self.log: list[str] = []

    @property
    def hooks(self) -> dict[str, str]:
        return self.current.hooks

    def arm(self, hooks: dict[str, str], expect_codes: tuple[int, ...] = ()) -> None:
        self.armed = dict(hooks)
        self.log.append(f"arm {hooks} {expect_codes}")

    def kill(self) -> int:
        self.log.append("kill")
        return 42

    def start(self, *, wait: bool = True) -> float:
        self.current, self.armed = FakeStart(self.armed, self.fires), {}
        self.log.append(f"start {self.current.hooks}")
        return 0.0


def point_kill(loaders: FakeLoaders, point: str) -> dict[str, object]:
    from icefloe.harness.scenarios.faults.loader import KillLoader, KillLoaderParams

    fault = KillLoader(KillLoaderParams(at=point, commit_timeout_s=0.1), random.Random(0))  # type: ignore[arg-type]
    assert fault.unpaced  # it waits for its point, not for a commit
    return dict(fault.inject(SimpleNamespace(loaders=loaders)))


def test_a_point_kill_armed_on_the_start_before_it_waits_for_that_start() -> None:
    loaders = FakeLoaders({KILL_AT_ENV: "write"})
    facts = point_kill(loaders, "write")
    assert facts["landed"] == "write" and facts["self_killed"] and facts["pid"] is None
    assert loaders.log == []  # no restart: the armed start carries it


def test_a_point_kill_on_an_unarmed_loader_restarts_it_armed() -> None:
    loaders = FakeLoaders({})
    facts = point_kill(loaders, "commit_sent")
    assert facts["landed"] == "commit_sent"
    assert loaders.log == [
        "kill",
        "arm {'ICEFLOE_TEST_KILL_AT': 'commit_sent'} (-9,)",
        "start {'ICEFLOE_TEST_KILL_AT': 'commit_sent'}",
    ]


def test_a_point_that_is_never_reached_is_killed_from_outside_and_not_landed() -> None:
    loaders = FakeLoaders({KILL_AT_ENV: "committed"}, fires=False)
    facts = point_kill(loaders, "committed")
    assert facts["landed"] is None and not facts["self_killed"] and facts["pid"] == 42


def test_an_exit_the_watcher_did_not_see_is_recorded_by_the_next_start(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """A start that follows an exit at once (a heal restarting a loader that killed itself at
    a point) records that exit and where its fault landed, even when the watcher never
    looked in between (here it never looks: it is not started)."""
    config = SimpleNamespace(
        to_toml=lambda: "not = [valid\n",  # the loader refuses it and exits at once
        loader_id="l",
        trigger_interval=1.0,
        dead_letter_topic=None,
        catalog=SimpleNamespace(type="rest"),
    )
    monkeypatch.setattr(loader_process, "placed", lambda config, checkpoint: config)
    monkeypatch.setattr(LoaderProcess, "_ensure_watcher", lambda self: None)
    stack = SimpleNamespace(
        credentials=SimpleNamespace(secret_key=SimpleNamespace(reveal=str)),
        catalog=RestCatalog("http://127.0.0.1:8181"),
    )
    loader = LoaderProcess(config, stack, tmp_path, History())  # type: ignore[arg-type]
    loader.start(wait=False, hooks={KILL_AT_ENV: "planned"})
    first = loader.process.started_pid
    assert loader.process.wait_exit(60.0)
    loader.start(wait=False)
    assert loader.process.wait_exit(60.0)
    (exit_,) = select(loader.history, "loader", "exit")
    assert exit_.data["pid"] == first and exit_.data["code"] != 0 and not exit_.data["expected"]
    assert "ConfigError: invalid TOML" in exit_.data["message"]  # its log tail, kept
    (missed,) = select(loader.history, "loader", "fault_not_landed")
    assert missed.data["pid"] == first and missed.data["start"] == 1
    loader.close()  # the second start's exit: recorded when it is settled, never twice
    assert len(select(loader.history, "loader", "fault_not_landed")) == 1


def test_a_break_switches_parts_of_the_protocol_off_in_every_start(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """A break's ``disable`` reaches each start of the loader as a test hook (not a setting),
    unlike the fault points, which arm the first starts only; the loader reads it back as its
    hooks' switches."""
    from icefloe.harness.loaders.base import TestHooks
    from icefloe.loader.run.job import hooks_from_env
    from icefloe.loader.testing.faultpoints import DISABLE_ENV

    config = SimpleNamespace(
        to_toml=lambda: "not = [valid\n", loader_id="l", trigger_interval=1.0,
        dead_letter_topic=None,
        catalog=SimpleNamespace(type="rest"),
    )  # fmt: skip
    monkeypatch.setattr(loader_process, "placed", lambda config, checkpoint: config)
    monkeypatch.setattr(LoaderProcess, "_ensure_watcher", lambda self: None)
    stack = SimpleNamespace(
        credentials=SimpleNamespace(secret_key=SimpleNamespace(reveal=str)),
        catalog=RestCatalog("http://127.0.0.1:8181"),
    )
    hooks = TestHooks(pause_at="planned", disable=("exactly_once", "fencing"))
    loader = LoaderProcess(config, stack, tmp_path, History(), hooks=hooks)  # type: ignore[arg-type]
    seen = []
    for _ in range(2):
        loader.start(wait=False)
        assert loader.process.wait_exit(60.0)
        seen.append(dict(loader.hooks))
    loader.close()
    assert [h.get(DISABLE_ENV) for h in seen] == ["exactly_once,fencing"] * 2
    assert [PAUSE_AT_ENV in h for h in seen] == [True, False]  # a fault point: the first only
    switches = hooks_from_env(seen[1])
    assert (switches.exactly_once, switches.fencing, switches.resolve_lost_commits) == (
        False, False, True
    )  # fmt: skip
    starts = select(loader.history, "loader", "start", "invoke")
    assert [e.data["disable"] for e in starts] == [["exactly_once", "fencing"]] * 2


# A timed point's kill, recorded where it landed: armed at commit_sent, the process passes
# committed before the timer runs out; the history says it landed after the commit, and so
# does the fault that waited for it (harness.scenarios.faults.loader).
def test_a_commit_sent_kill_after_the_commit_is_recorded_as_landed_after_it(
    tmp_path: Path,
) -> None:
    hooks = {KILL_AT_ENV: "commit_sent", PAUSE_DELAY_MS_ENV: "300"}
    loader = run_start(tmp_path, hooks, ["planned", "commit_sent", "committed"], WAITING_BATCH)
    assert loader.process.returncode() == -9
    (landed,) = select(loader.history, "loader", "fault_landed")
    assert (landed.data["point"], landed.data["landed"]) == ("commit_sent", "committed")
    assert landed.data["armed"] == {"point": "commit_sent", "action": "kill"}
    assert _fired(loader, "kill") == "committed"
