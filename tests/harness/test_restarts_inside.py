"""A loader that recovers from a failure inside its own process (a Flink job's restart) leaves
no exit behind: the lines its kind declares for it (``Observer.restart_pattern``) are read from
its log at the end of a run and recorded as the failures they are."""

from __future__ import annotations

from dataclasses import dataclass

from icefloe.harness.history import History, select
from icefloe.harness.observer import Observer
from icefloe.harness.scenarios.loaders import LoaderControl

LOG = """flink: job submitted (fresh)
10:00:01 INFO ExecutionGraph - Job j (ab12) switched from state RUNNING to RESTARTING.
10:00:02 INFO ExecutionGraph - Job j (ab12) switched from state RESTARTING to RUNNING.
10:00:09 INFO ExecutionGraph - Job j (ab12) switched from state RUNNING to RESTARTING.
"""


@dataclass
class _Loader:
    loader_id: str
    text: str

    def log_since(self, offset: int) -> str:
        return self.text[offset:]


def _control(observer: Observer, *loaders: _Loader) -> LoaderControl:
    control = LoaderControl.__new__(LoaderControl)  # only what the end of a run reads
    control.history = History()
    control._observer = observer
    control.retired = list(loaders[:-1])
    control.current = loaders[-1]
    return control


def test_each_restart_line_of_each_loader_is_recorded() -> None:
    observer = Observer(kind="flink", restart_pattern=r"switched from state \w+ to RESTARTING")
    control = _control(observer, _Loader("first", LOG), _Loader("second", "quiet\n"))
    control.record_log_facts()
    restarts = select(control.history, "loader", "restarted")
    assert [e.data["loader_id"] for e in restarts] == ["first", "first"]
    assert "RUNNING to RESTARTING" in restarts[0].data["line"]


def test_without_a_pattern_nothing_is_recorded() -> None:
    control = _control(Observer(kind="spark-sink"), _Loader("only", LOG))
    control.record_log_facts()
    assert not control.history.events
