"""The nemesis step's extra strikes at commits (``until_during_commit``), with a fake run."""

from __future__ import annotations

import random
from typing import Any

import pytest

from icefloe.harness.history import History, select
from icefloe.harness.scenarios.faults.loader import KillLoaderParams
from icefloe.harness.scenarios.model import ScenarioError, parse
from icefloe.harness.scenarios.steps.faulting import FaultStep, Nemesis, nemesis


class ScriptedRun:
    """Each fault timed on a commit sees one (or none, once ``commits`` runs out) and strikes
    inside it as ``inside`` says, in order; the heal records it as the kill's heal does."""

    def __init__(self, inside: list[bool], commits: int = 100) -> None:
        self.history = History()
        self.rng = random.Random(3)
        self.inside = list(inside)
        self.commits = commits
        self.aimed: list[str] = []

    def inject(self, fault: Any) -> None:
        self.aimed.append(fault.params.at)
        self.history.record("fault", "ok", f"{fault.name}.inject", at=fault.params.at)

    def heal(self, fault: Any) -> None:
        if fault.params.at == "commit" and self.commits > 0:
            self.commits -= 1
            struck = self.inside.pop(0) if self.inside else False
            self.history.record(
                "fault", "info", f"{fault.name}.commit", landed=not struck, during_commit=struck
            )
        self.history.record("fault", "ok", f"{fault.name}.heal")


def _nemesis(times: int, until: int) -> Nemesis:
    return Nemesis(FaultStep("kill_loader", KillLoaderParams()), times, "mixed", (0.0, 0.0), until)


def _struck(run: ScriptedRun) -> int:
    events = select(run.history, "fault", name="kill_loader.commit", phase="info")
    return sum(1 for e in events if e.data["during_commit"])


def test_no_kill_inside_a_commit_brings_commit_kills_until_one_lands() -> None:
    # The cycle aims kills 1, 3 and 4 at commits; none of them strikes inside one.
    run = ScriptedRun(inside=[False, False, False, False, True])
    nemesis(run, _nemesis(times=5, until=1))
    assert run.aimed == ["commit", "now", "commit", "commit", "now", "commit", "commit"]
    assert _struck(run) == 1


def test_enough_kills_inside_commits_bring_no_extra_one() -> None:
    run = ScriptedRun(inside=[True, False, False])
    nemesis(run, _nemesis(times=5, until=1))
    assert len(run.aimed) == 5


def test_without_the_setting_the_nemesis_strikes_times_only() -> None:
    run = ScriptedRun(inside=[False] * 10)
    nemesis(run, _nemesis(times=5, until=0))
    assert len(run.aimed) == 5 and _struck(run) == 0


def test_the_extra_round_stops_at_times_more_and_counts_only_what_landed() -> None:
    run = ScriptedRun(inside=[False] * 20)
    nemesis(run, _nemesis(times=3, until=1))
    assert len(run.aimed) == 6 and _struck(run) == 0


def test_a_commit_that_does_not_come_ends_the_extra_round() -> None:
    # Two commits come (kills 1 and 3 of the cycle); the first extra kill waits in vain.
    run = ScriptedRun(inside=[False, False], commits=2)
    nemesis(run, _nemesis(times=3, until=1))
    assert len(run.aimed) == 4


def test_until_during_commit_is_checked_when_the_file_is_read() -> None:
    step = {"do": "nemesis", "fault": "kill_loader", "until_during_commit": -1}
    with pytest.raises(ScenarioError, match="until_during_commit"):
        parse({"steps": [step], "checks": [{"check": "exactly_once"}]})
    step["until_during_commit"] = 1
    (parsed,) = parse({"steps": [step], "checks": [{"check": "exactly_once"}]}).steps
    assert parsed.params.until_during_commit == 1
