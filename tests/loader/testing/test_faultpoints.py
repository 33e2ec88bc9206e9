"""The test kit's hooks (``loader.testing.faultpoints``): the trace of the point a fault was
armed at and the point the process had reached when its signal went (no signal is sent: the
hooks are given a function that records it), the parts of the protocol a break switches off,
and when the loader brings these hooks in at all (``loader.run.job.hooks_from_env``)."""

from __future__ import annotations

import signal
import threading
import typing
from pathlib import Path

import pytest

from icefloe.loader.commit.hooks import Hooks, Point
from icefloe.loader.run.job import TEST_ENV_PREFIX, hooks_from_env
from icefloe.loader.testing.faultpoints import (
    DISABLE_ENV,
    KILL_AT_ENV,
    POINTS,
    SWITCHES,
    FaultPoints,
    read_trace,
    where_landed,
)

# Long enough that the calls a test makes right after arming a timed point come first.
DELAY_MS = 100


class Signals:
    """Stands in for signalling the process group: records each signal."""

    def __init__(self) -> None:
        self.sent: list[int] = []
        self.event = threading.Event()

    def __call__(self, sig: int) -> None:
        self.sent.append(sig)
        self.event.set()


def hooks(
    tmp_path: Path, signals: Signals, kill_at: str | None = None, pause_at: str | None = None
) -> FaultPoints:
    return FaultPoints(
        kill_at=kill_at,
        pause_at=pause_at,
        pause_delay_ms=DELAY_MS,
        trace=str(tmp_path / "trace.jsonl"),
        send=signals,
    )


def fired(tmp_path: Path, signals: Signals) -> dict[str, object]:
    assert signals.event.wait(10), "the timer never signalled"
    (line,) = read_trace(tmp_path / "trace.jsonl")
    return line


def test_a_commit_sent_kill_whose_commit_landed_first_is_traced_after_the_commit(
    tmp_path: Path,
) -> None:
    signals = Signals()
    faults = hooks(tmp_path, signals, kill_at="commit_sent")
    faults.reached("commit_sent", 0)
    assert signals.sent == []  # timed: the signal comes later
    faults.committed(1)  # the commit lands before the timer runs out
    line = fired(tmp_path, signals)
    assert (line["point"], line["landed"], line["action"]) == ("commit_sent", "committed", "kill")
    assert signals.sent == [signal.SIGKILL]


def test_a_commit_sent_kill_that_did_not_move_on_is_traced_during_the_commit_request(
    tmp_path: Path,
) -> None:
    signals = Signals()
    faults = hooks(tmp_path, signals, kill_at="commit_sent")
    faults.reached("planned", 0)
    faults.reached("commit_sent", 0)
    line = fired(tmp_path, signals)
    assert (line["point"], line["landed"], line["action"]) == ("commit_sent", "commit_sent", "kill")
    assert signals.sent == [signal.SIGKILL]


def test_a_write_freeze_whose_batch_reached_publish_is_traced_at_publish(tmp_path: Path) -> None:
    signals = Signals()
    faults = hooks(tmp_path, signals, pause_at="write")
    faults.reached("write", 0)
    faults.reached("decoded", 0)
    faults.reached("publish", 0)
    line = fired(tmp_path, signals)
    assert (line["point"], line["landed"], line["action"]) == ("write", "publish", "freeze")
    assert signals.sent == [signal.SIGSTOP]


def test_an_untimed_point_is_traced_where_it_was_armed_before_it_returns(tmp_path: Path) -> None:
    signals = Signals()
    faults = hooks(tmp_path, signals, kill_at="decoded")
    faults.reached("planned", 0)
    faults.reached("decoded", 0)
    assert signals.sent == [signal.SIGKILL]
    (line,) = read_trace(tmp_path / "trace.jsonl")
    assert (line["point"], line["landed"]) == ("decoded", "decoded")
    faults.reached("decoded", 0)  # at most one fault per process
    assert signals.sent == [signal.SIGKILL]


def test_a_trace_without_landed_landed_at_its_point() -> None:
    assert where_landed({"point": "commit_sent", "action": "kill"}) == "commit_sent"
    assert where_landed({"point": "commit_sent", "landed": "committed"}) == "committed"
    assert where_landed({}) is None


def test_a_loader_without_test_variables_has_hooks_that_do_nothing() -> None:
    hooks = hooks_from_env({"ICEFLOE_LOADER_TABLE": "lake.s.t", "PATH": "/bin"})
    assert type(hooks) is Hooks
    assert (hooks.exactly_once, hooks.fencing, hooks.resolve_lost_commits) == (True, True, True)
    hooks.reached("planned", 0)  # nothing happens
    hooks.committed(1)


def test_any_test_variable_brings_the_test_kits_hooks_in() -> None:
    hooks = hooks_from_env({KILL_AT_ENV: "publish"})
    assert isinstance(hooks, FaultPoints) and hooks.kill_at == "publish"
    assert all(name.startswith(TEST_ENV_PREFIX) for name in (KILL_AT_ENV, DISABLE_ENV))
    assert typing.get_args(Point) == POINTS
    assert all(isinstance(getattr(Hooks, part), bool) for part in SWITCHES)


def test_a_break_switches_the_parts_it_names_off() -> None:
    hooks = FaultPoints.from_env({DISABLE_ENV: " fencing , resolve_lost_commits "})
    assert (hooks.exactly_once, hooks.fencing, hooks.resolve_lost_commits) == (True, False, False)
    assert FaultPoints.from_env({DISABLE_ENV: ""}).fencing
    with pytest.raises(ValueError, match=r"unknown \['guard'\]"):
        FaultPoints.from_env({DISABLE_ENV: "guard"})
