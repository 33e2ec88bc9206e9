"""Waiting for a backlog: past the timeout while the table still grows, not while it stands."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from harness.history import History, select
from harness.scenarios.engine import Run


class Growing:
    """A run whose table shows ``step`` more ids every call, up to ``total`` (or ``stall_at``)."""

    def __init__(self, total: int, step: int, stall_at: int | None = None) -> None:
        self.ids = [str(i) for i in range(total)]
        self.step, self.stall_at, self.calls = step, stall_at, 0
        self.history = History()
        self.traffic = SimpleNamespace(wait=lambda: None)
        self.loaders = SimpleNamespace(settle_s=lambda: 0.0)

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
    import harness.scenarios.engine as engine

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
