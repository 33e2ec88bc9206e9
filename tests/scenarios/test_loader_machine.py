"""Property-based faults: a Hypothesis state machine publishes, kills, restarts and alters.

Rules publish a batch, kill the loader with SIGKILL, start it again and add a column through
Trino; after every step the table may lag behind but must never hold a duplicate or an id
that was not published. Teardown heals (starts the loader if it is down), waits for the table
to catch up and runs the ``exactly_once`` checker over the recorded history and ledgers.

Sizes follow HYPOTHESIS_PROFILE: ``ci``/``dev`` run one short sequence (a loader start costs
tens of seconds), ``soak`` runs many long ones. A failure prints Hypothesis's reproduction
blob (``print_blob``) and the run's seed and history folder.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from harness.scenarios.checkers import run_check
from harness.scenarios.faults import LoaderKill
from harness.scenarios.model import Step, parse
from harness.scenarios.runner import RunOptions, ScenarioRun

_SIZES = {"soak": (10, 15)}
_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
EXAMPLES, STEPS = _SIZES.get(_PROFILE, (1, 5))
# One example costs minutes of real loader time: outside `soak`, no shrinking (the blob and the
# history reproduce a failure) and no replay of examples saved by earlier runs.
PHASES = tuple(Phase) if _PROFILE == "soak" else (Phase.explicit, Phase.generate)

_SCENARIO = parse(
    {
        "title": "state machine",
        "description": "publish / kill / restart / alter, chosen by Hypothesis",
        "loader": {"trigger_interval_s": 2.0},
        "steps": [{"do": "start_loader"}],
        "checks": [{"check": "exactly_once"}],
    },
    name="loader_machine",
)

pytestmark = pytest.mark.scenario


class LoaderMachine(RuleBasedStateMachine):
    """One topic, one table, one loader; Hypothesis picks the order of trouble."""

    stack: Any = None

    def __init__(self) -> None:
        super().__init__()
        self.run = ScenarioRun(_SCENARIO, self.stack, RunOptions(reports_dir=Path("reports")))
        self.run._setup()
        self.run.loader.start()
        self.published: set[str] = set()
        self.columns = 0
        print(f"state machine: seed {self.run.seed}, history {self.run.run_dir}")

    # Every sequence starts with data in flight, so the kills and ALTERs that follow hit a
    # loader that is loading (a short ci run is Hypothesis's first, simplest sequence).
    @initialize(count=st.integers(min_value=100, max_value=300))
    def first_publish(self, count: int) -> None:
        self.publish(count)

    @rule(count=st.integers(min_value=20, max_value=300))
    def publish(self, count: int) -> None:
        self.run._do_publish(Step("publish", {"phase": f"p{len(self.run.phases)}", "count": count}))
        self.published |= {e.event_id for e in self.run.ledger_entries() if e.delivered}

    @precondition(lambda self: self.run.loader.is_running())
    @rule()
    def kill_loader(self) -> None:
        LoaderKill().inject(self.run)

    @precondition(lambda self: not self.run.loader.is_running())
    @rule()
    def restart_loader(self) -> None:
        self.run.loader.start()

    @precondition(lambda self: self.columns < 3)
    @rule()
    def alter(self) -> None:
        self.columns += 1
        self.run._do_sql(
            Step(
                "sql",
                {
                    "name": "alter",
                    "statement": f"ALTER TABLE {{table}} ADD COLUMN c{self.columns} BIGINT",
                },
            )
        )

    @invariant()
    def never_duplicated_nor_invented(self) -> None:
        rows = self.run._sql_retrying(
            f"SELECT event_id, count(*) FROM {self.run.table} GROUP BY event_id"
        )
        duplicated = [eid for eid, n in rows if n > 1]
        invented = [eid for eid, _ in rows if eid not in self.published]
        assert not duplicated, f"duplicated: {duplicated[:5]} (history {self.run.run_dir})"
        assert not invented, f"never published: {invented[:5]} (history {self.run.run_dir})"

    def teardown(self) -> None:
        try:
            if not self.run.loader.is_running():
                self.run.loader.start()
            self.run._do_await_loaded(Step("await_loaded", {"timeout_s": 240}))
            self.run.loader.stop()
            observed = self.run._collect()
            result = run_check(
                "exactly_once", self.run.history, self.run.ledger_entries(), observed
            )
            # `valid` only: `unknown` (nothing delivered) would prove nothing.
            assert result.verdict == "valid", f"{result.summary}: {result.to_json()['anomalies']}"
        finally:
            self.run._teardown()


def test_loader_state_machine(stack: Any) -> None:
    LoaderMachine.stack = stack
    run_state_machine_as_test(
        LoaderMachine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            print_blob=True,
            phases=PHASES,
            database=None if _PROFILE != "soak" else settings.default.database,
            suppress_health_check=list(HealthCheck),
        ),
    )
