"""Every break of the scenarios, judged by today's checkers on a recorded run (no service).

A recording (``recorded/``, ``recorded_runs.py``) is what a live run wrote: its history, with
every read of the table and the dead letters and the values that came back, and its ledgers.
Judged again here with the scenario file's checks as they are now, a loader break's run must
still show its anomaly, a plain run must still pass, and every mutation break judged on either
(``break_forms.py``) must show what the mutation broke. A checker changed so that it no longer
sees a duplicate, a lost row, a wrong value or a fault that never landed fails here in seconds;
the live forms run with ``pytest -m slow tests/scenarios/test_breaks_ci.py`` (the offset guard
and the fence in every CI run).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from icefloe.harness.scenarios.checks.verdict import summarize
from icefloe.harness.scenarios.runner import demonstrated, judge, saved_run
from tests.scenarios import recorded_runs
from tests.scenarios.break_forms import (
    BREAKS,
    JUDGED_AGAIN,
    PLAIN,
    PLAIN_RUNS,
    cheap,
    judged_again,
    missing_also,
)

CASES = sorted(BREAKS) + [(name, PLAIN) for name in PLAIN_RUNS]


def test_every_recorded_run_is_there_with_the_vars_it_is_judged_with() -> None:
    for name, brk in CASES:
        about = recorded_runs.about(name, brk)
        assert (about["scenario"], about["break"]) == (name, brk)
        assert about["vars"] == BREAKS.get((name, brk), {}), (
            f"{name} {brk}: recorded with other vars"
        )
    assert set(JUDGED_AGAIN) <= set(CASES)


@pytest.mark.parametrize(("name", "brk"), CASES, ids=[f"{n}-{b}" for n, b in CASES])
def test_the_recorded_run_is_judged_as_it_was_by_todays_checkers(
    name: str, brk: str, tmp_path: Path
) -> None:
    run_dir = recorded_runs.unpack(name, brk, tmp_path)
    recorded, history, recorded_break, _ = saved_run(run_dir)
    assert (recorded.name, recorded_break or PLAIN) == (name, brk)
    scenario = cheap(name, brk)  # the scenario file's checks as they are now
    own = None if brk == PLAIN else brk
    checks = judge(scenario, history, run_dir, own)
    summary = "\n".join(f"{c.verdict:<8} {c.check}: {c.summary}" for c in checks)
    if own is None:
        assert summarize(checks) == "valid", f"the recorded plain run no longer passes\n{summary}"
    else:
        assert demonstrated(scenario, own, checks), (
            f"{scenario.breaks[own].expected} not reported\n{summary}"
        )
        also = missing_also(name, own, checks)
        assert not also, "\n".join(also) + f"\n{summary}"
    missed = [
        m
        for b in JUDGED_AGAIN.get((name, brk), ())
        if (m := judged_again(scenario, b, checks, judge(scenario, history, run_dir, b)))
    ]
    assert not missed, "\n".join(missed)
