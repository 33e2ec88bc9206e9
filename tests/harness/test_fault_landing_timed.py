"""A timed fault point's kill recorded where it landed: a real child process (no loader, no
stack) arms a kill at ``commit_sent``, passes ``committed`` before the timer runs out and is
killed by it; the history says it landed after the commit (``harness.loaders.process``), and
so does the fault that waited for it (``harness.scenarios.faults.loader``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace

from harness.history import History, select
from harness.loaders.process import LoaderProcess, _Start
from harness.scenarios.faults.loader import _fired
from loader.testing.faultpoints import KILL_AT_ENV, PAUSE_DELAY_MS_ENV, TRACE_ENV

# A stand-in for a loader's first batch: it passes the points named in argv, then waits to be
# killed by the timer (exit 0 if it never is).
BATCH = (
    "import sys, time; from loader.testing.faultpoints import FaultPoints; "
    "f = FaultPoints.from_env(); [f.reached(p, 0) for p in sys.argv[1:]]; time.sleep(10)"
)


def run_start(tmp_path: Path, hooks: dict[str, str], points: list[str]) -> LoaderProcess:
    loader = LoaderProcess(SimpleNamespace(loader_id="l"), None, tmp_path, History())  # type: ignore[arg-type]
    trace = tmp_path / "trace-1.jsonl"
    env = {**os.environ, **hooks, TRACE_ENV: str(trace)}
    pid = loader.process.start([sys.executable, "-c", BATCH, *points], env, Path.cwd())
    loader._unsettled[pid] = _Start(1, pid, trace, dict(hooks))
    loader.trace_file = trace
    assert loader.process.wait_exit(30.0)
    loader.close()  # records what the trace says
    return loader


def test_a_commit_sent_kill_after_the_commit_is_recorded_as_landed_after_it(
    tmp_path: Path,
) -> None:
    hooks = {KILL_AT_ENV: "commit_sent", PAUSE_DELAY_MS_ENV: "300"}
    loader = run_start(tmp_path, hooks, ["planned", "commit_sent", "committed"])
    assert loader.process.returncode() == -9
    (landed,) = select(loader.history, "loader", "fault_landed")
    assert (landed.data["point"], landed.data["landed"]) == ("commit_sent", "committed")
    assert landed.data["armed"] == {"point": "commit_sent", "action": "kill"}
    assert _fired(loader, "kill") == "committed"
