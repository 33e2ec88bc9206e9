"""Every break of the scenarios, judged by today's checkers on a recorded run of it (no service).

A recording (``recorded/``, ``recorded_runs.py``) is what a live run of the break wrote: its
history, with every read of the table and the dead letters and the values that came back, and
its ledgers. Judged again here with the scenario file's checks as they are now, each must still
show its anomaly, and so must the mutation breaks judged on it (``break_forms.py``). A checker
changed so that it no longer sees a duplicate, a lost row or a wrong value fails here in
seconds; the live forms run with ``pytest -m slow tests/scenarios/test_breaks_ci.py`` (the
offset guard and the fence in every CI run).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from icefloe.harness.scenarios.runner import demonstrated, judge, saved_run
from tests.scenarios import recorded_runs
from tests.scenarios.break_forms import BREAKS, JUDGED_AGAIN, cheap, judged_again, missing_also

CASES = sorted(BREAKS)


def test_every_loader_break_has_a_recording() -> None:
    for name, brk in CASES:
        about = recorded_runs.about(name, brk)
        assert (about["scenario"], about["break"]) == (name, brk)
        assert about["vars"] == BREAKS[(name, brk)], f"{name} {brk}: recorded with other vars"


@pytest.mark.parametrize(("name", "brk"), CASES, ids=[f"{n}-{b}" for n, b in CASES])
def test_the_recorded_break_is_caught_by_todays_checkers(
    name: str, brk: str, tmp_path: Path
) -> None:
    run_dir = recorded_runs.unpack(name, brk, tmp_path)
    recorded, history, recorded_break, _ = saved_run(run_dir)
    assert (recorded.name, recorded_break) == (name, brk)
    scenario = cheap(name, brk)  # the scenario file's checks as they are now
    checks = judge(scenario, history, run_dir, brk)
    expected = scenario.breaks[brk]
    summary = "\n".join(f"{c.verdict:<8} {c.check}: {c.summary}" for c in checks)
    assert demonstrated(scenario, brk, checks), (
        f"{expected.expect_check} did not report {expected.expect_anomaly}\n{summary}"
    )
    also = missing_also(name, brk, checks)
    assert not also, "\n".join(also) + f"\n{summary}"
    missed = [
        m
        for b in JUDGED_AGAIN.get((name, brk), ())
        if (m := judged_again(scenario, b, checks, judge(scenario, history, run_dir, b)))
    ]
    assert not missed, "\n".join(missed)
