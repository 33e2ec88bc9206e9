"""Waiting for a backlog: past the timeout while the table still grows, not while it stands,
and not at all once nothing is left that could load the missing rows."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from icefloe.harness.history import History, select
from icefloe.harness.scenarios.engine import Run


class Growing:
    """A run whose table shows ``step`` more ids every call, up to ``total`` (or ``stall_at``)."""

    _wait_for = Run._wait_for
    _visible_now = Run._visible_now
    _await_batch_in_flight = Run._await_batch_in_flight

    def read_position(self, *, final: bool = False) -> None:
        return None

    def __init__(self, total: int, step: int, stall_at: int | None = None) -> None:
        self.ids = [str(i) for i in range(total)]
        self.step, self.stall_at, self.calls = step, stall_at, 0
        self.history = History()
        self.traffic = SimpleNamespace(wait=lambda: None)
        self.loaders = SimpleNamespace(settle_s=lambda: 0.0, in_flight=lambda: False)
        self.gone = False

    def orphaned(self) -> bool:
        return self.gone

    def expected_ids(self) -> set[str]:
        return set(self.ids)

    def visible_ids(self) -> set[str]:
        self.calls += 1
        n = self.calls * self.step
        if self.stall_at is not None:
            n = min(n, self.stall_at)
        return set(self.ids[:n])


def test_a_growing_table_is_waited_for_past_the_timeout_and_a_stalled_one_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import icefloe.harness.scenarios.engine as engine

    clock = [0.0]  # a fake clock: a sleep passes at once

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    monkeypatch.setattr(engine, "time", SimpleNamespace(monotonic=lambda: clock[0], sleep=sleep))
    growing = Growing(total=100, step=10)
    assert Run.await_loaded(growing, timeout_s=3.0, progress_s=2.5) == 0  # type: ignore[arg-type]
    assert Run.await_loaded(Growing(100, 10), timeout_s=3.0) > 0  # type: ignore[arg-type]
    stalled = Growing(total=100, step=10, stall_at=40)
    assert Run.await_loaded(stalled, timeout_s=3.0, progress_s=2.5) == 60  # type: ignore[arg-type]
    (event,) = select(stalled.history, "read", "await_loaded")
    assert event.phase == "fail" and event.data["missing"] == 60


def _fake_clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    import icefloe.harness.scenarios.engine as engine

    clock = [0.0]

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    fake = SimpleNamespace(monotonic=lambda: clock[0], sleep=sleep, time=lambda: clock[0])
    monkeypatch.setattr(engine, "time", fake)
    return clock


def test_the_wait_ends_once_no_loader_is_left_to_load_the_missing_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from icefloe.harness.scenarios.engine import GONE_S

    clock = _fake_clock(monkeypatch)
    gone = Growing(total=100, step=10, stall_at=40)
    gone.gone = True
    assert Run.await_loaded(gone, timeout_s=240.0) == 60  # type: ignore[arg-type]
    assert clock[0] <= GONE_S + 2.0
    (event,) = select(gone.history, "read", "await_loaded")
    assert event.data["ended"] == "no loader left to load them"
    clock[0] = 0.0
    waiting = Growing(total=100, step=10, stall_at=40)  # a loader that lives on: the whole wait
    assert Run.await_loaded(waiting, timeout_s=240.0) == 60  # type: ignore[arg-type]
    assert clock[0] >= 240.0
    (event,) = select(waiting.history, "read", "await_loaded")
    assert "ended" not in event.data


class _Loader:
    def __init__(self, running: bool = False, supervised: bool = False) -> None:
        self.running, self.restart_on_exit = running, supervised

    def is_running(self) -> bool:
        return self.running


def _run(
    current: _Loader,
    *,
    retired: tuple[_Loader, ...] = (),
    bound_s: float = 120.0,
    healed_at: float | None = None,
    active: bool = False,
) -> SimpleNamespace:
    from icefloe.harness.scenarios.loaders import LoaderControl

    history = History()
    if healed_at is not None:
        history.record("fault", "invoke", "kill_loader.inject", lane="loader")
        history.record("fault", "ok", "kill_loader.heal")
    control = SimpleNamespace(current=current, retired=list(retired))
    control.all_gone = lambda: LoaderControl.all_gone(control)  # type: ignore[arg-type]
    return SimpleNamespace(
        active_faults=["a fault"] if active else [], loaders=control, history=history,
        setup_spec=SimpleNamespace(liveness_bound_s=bound_s),
    )  # fmt: skip


def test_nothing_can_load_only_when_no_loader_runs_or_comes_back_and_liveness_is_judged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = _fake_clock(monkeypatch)
    assert Run.orphaned(_run(_Loader()))  # type: ignore[arg-type]
    assert not Run.orphaned(_run(_Loader(running=True)))  # type: ignore[arg-type]
    assert not Run.orphaned(_run(_Loader(supervised=True)))  # type: ignore[arg-type]
    frozen = _Loader(running=True)  # a replaced loader, frozen: thawed, it may still commit
    assert not Run.orphaned(_run(_Loader(), retired=(frozen,)))  # type: ignore[arg-type]
    assert not Run.orphaned(_run(_Loader(), active=True))  # type: ignore[arg-type]
    # A heal's liveness window must not be cut: not before the bound has passed since it.
    healed = _run(_Loader(), healed_at=0.0, bound_s=120.0)
    heal_time = healed.history.events[-1].time
    clock[0] = heal_time + 119.0
    assert not Run.orphaned(healed)  # type: ignore[arg-type]
    clock[0] = heal_time + 120.0
    assert Run.orphaned(healed)  # type: ignore[arg-type]


def test_the_wait_ends_once_every_missing_row_is_behind_the_committed_position(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A loader whose committed position passed the missing rows will never read them: the
    wait ends once they have been behind it for the loader's drain bound, not at its timeout;
    a position before one of them keeps the wait going."""
    from icefloe.harness.scenarios.engine import BEHIND
    from icefloe.publisher.ledger import LedgerEntry

    clock = _fake_clock(monkeypatch)

    def run_with(next_offset: int) -> Growing:
        run = Growing(total=100, step=10, stall_at=40)
        entries = [LedgerEntry(i, "t", 0, i, None, None, str(i), "valid") for i in range(100)]
        run.ledger_entries = lambda: entries  # type: ignore[attr-defined]
        run.read_position = lambda final=False: {"t": {0: next_offset}}  # type: ignore[method-assign]
        run.loaders = SimpleNamespace(
            settle_s=lambda: 0.0,
            in_flight=lambda: False,
            observer=lambda: SimpleNamespace(drain_s=30.0),
        )
        return run

    passed = run_with(100)
    assert Run.await_loaded(passed, timeout_s=240.0) == 60  # type: ignore[arg-type]
    assert 30.0 <= clock[0] <= 40.0
    (event,) = select(passed.history, "read", "await_loaded")
    assert event.data["ended"] == BEHIND
    clock[0] = 0.0
    short = run_with(99)  # the last row still ahead of the position: it may come
    assert Run.await_loaded(short, timeout_s=240.0) == 60  # type: ignore[arg-type]
    assert clock[0] >= 240.0


def test_a_batch_a_restart_runs_again_is_waited_for_within_the_drain_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = _fake_clock(monkeypatch)
    run = Growing(total=10, step=10)
    done_at = [12.0]  # the restarted loader's replayed batch is marked done at 12 s
    run.loaders = SimpleNamespace(
        settle_s=lambda: 4.0,
        in_flight=lambda: clock[0] < done_at[0],
        observer=lambda: SimpleNamespace(drain_s=60.0),
    )
    assert Run.await_loaded(run, timeout_s=30.0) == 0  # type: ignore[arg-type]
    (waited,) = select(run.history, "info", "batch_in_flight")
    assert waited.data["done"] and 7.5 <= waited.data["waited_s"] <= 8.5
    # A batch that never ends is waited for up to the bound, and said so.
    stuck = Growing(total=10, step=10)
    stuck.loaders = SimpleNamespace(
        settle_s=lambda: 0.0, in_flight=lambda: True, observer=lambda: SimpleNamespace(drain_s=5.0)
    )
    Run.await_loaded(stuck, timeout_s=30.0)  # type: ignore[arg-type]
    (waited,) = select(stuck.history, "info", "batch_in_flight")
    assert not waited.data["done"] and waited.data["waited_s"] == 5.0
