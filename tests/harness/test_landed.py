"""Loader faults counted by the point they landed at, not the point they were armed at
(``harness.scenarios.checks.facts.landed``), from a made-up history (no services)."""

from __future__ import annotations

from icefloe.harness.history import History
from icefloe.harness.scenarios.checks.facts.landed import fault_counts


def _landed(history: History, pid: int, point: str, action: str, **landed: str) -> None:
    where = {"loader_id": "l", "pid": pid}
    history.record("loader", "info", "fault_landed", **where, point=point, action=action, **landed)


def test_a_commit_sent_kill_that_landed_after_the_commit_is_counted_after_a_commit() -> None:
    history = History()
    _landed(history, 1, "commit_sent", "kill", landed="committed")
    _landed(history, 2, "commit_sent", "kill", landed="commit_sent")
    _landed(history, 3, "write", "freeze", landed="publish")
    counts = fault_counts(history)
    assert counts.landed == {
        ("kill", "committed"): 1,
        ("kill", "commit_sent"): 1,
        ("freeze", "publish"): 1,
    }
    assert counts.bands("kill") == {"after a commit": 1, "during the commit request": 1}
    assert counts.bands("freeze") == {"inside a batch": 1}


def test_a_history_without_landed_is_counted_at_its_point() -> None:
    history = History()
    _landed(history, 1, "commit_sent", "kill")
    assert fault_counts(history).bands("kill") == {"during the commit request": 1}
