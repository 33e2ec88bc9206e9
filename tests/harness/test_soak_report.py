"""The soak's tally and console summary, from a made-up history (no services)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from harness.scenarios.history import History
from harness.scenarios.soak import SoakResult, _tally
from harness.scenarios.soakreport import summary


def _kill(history: History, **data: object) -> None:
    history.record("fault", "invoke", "kill_loader.inject", kind="kill_loader", lane="loader")
    history.record("fault", "ok", "kill_loader.inject", **data)
    history.record("fault", "invoke", "kill_loader.heal")
    history.record("fault", "ok", "kill_loader.heal")


def test_loader_kills_are_counted_by_where_they_landed() -> None:
    history = History()
    _kill(history, at="start", pid=1, uptime_s=3.1, had_started=False)
    _kill(history, at="start", pid=2, uptime_s=19.0, had_started=True)
    _kill(history, at="start", pid=3, uptime_s=2.0, had_started=False)
    _kill(history, at="after_commit", self_killed=True, pid=None)
    _kill(history, at="now", pid=4, committing_snapshot=None)
    history.record("fault", "ok", "zombie_loader.inject", freeze="start", had_started=False)
    history.record("fault", "ok", "zombie_loader.inject", freeze="write", freeze_fallback="now")
    result = SoakResult(Path("run"), 1.0)
    _tally(result, SimpleNamespace(history=history))  # type: ignore[arg-type]
    assert result.faults["kill_loader"] == 5
    assert result.kills_at == {"start": 2, "start, running": 1, "after_commit": 1, "now": 1}
    assert result.zombies_at == {"start": 1, "now": 1}
    line = next(x for x in summary(result) if x.startswith("loader kills by"))
    assert "landed: 1 after_commit, 1 now, 2 start, 1 start, running;" in line
    assert line.endswith("froze: 1 now, 1 start")
