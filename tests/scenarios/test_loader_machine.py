"""Property-based faults: a Hypothesis state machine publishes, kills, restarts and alters.

Rules publish a batch, inject a loader kill (kill -9) and heal it (start the loader again) and
add a column through Trino, all through the engine's public API (``harness.scenarios.engine``).
After every step the live invariants of generated runs hold (no id twice, none that was not
published, nothing valid dead-lettered). Teardown heals, waits for the table to catch up and
runs the final checks over the recorded history and ledgers.

Sizes follow HYPOTHESIS_PROFILE: ``ci``/``dev`` run one short sequence (a loader start costs
tens of seconds), ``soak`` runs many long ones. A failure prints Hypothesis's reproduction
blob (``print_blob``) and the run's seed and history folder. The generated fault schedules
(``tests/scenarios/test_generated.py``) are the broader property test.
"""

from __future__ import annotations

import dataclasses
import os
import random
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

from icefloe.harness.scenarios.engine import Run, RunSetup
from icefloe.harness.scenarios.faults import Fault, build_fault
from icefloe.harness.scenarios.faults.loader import KillLoaderParams
from icefloe.harness.scenarios.loaders import LoaderOptions
from icefloe.harness.scenarios.model import Scenario, parse
from icefloe.harness.scenarios.player import Monitor
from icefloe.harness.scenarios.runner import judge
from icefloe.harness.scenarios.traffic import Workload

_SIZES = {"soak": (10, 15)}
_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
EXAMPLES, STEPS = _SIZES.get(_PROFILE, (1, 5))
# One example costs minutes of real loader time: outside `soak`, no shrinking (the blob and the
# history reproduce a failure) and no replay of examples saved by earlier runs.
PHASES = tuple(Phase) if _PROFILE == "soak" else (Phase.explicit, Phase.generate)

# The final checks, as a scenario file would name them.
_CHECKS: Scenario = parse(
    {
        "steps": [{"do": "start_loader"}],
        "checks": [{"check": c} for c in ("table_matches_ledger", "live_invariants")],
    },
    name="loader_machine",
)

pytestmark = pytest.mark.scenario


class LoaderMachine(RuleBasedStateMachine):
    """One topic, one table, one loader; Hypothesis picks the order of trouble."""

    stack: Any = None

    def __init__(self) -> None:
        super().__init__()
        seed = random.SystemRandom().randrange(2**31)
        setup = RunSetup(
            "loader_machine", LoaderOptions.read({"trigger_interval": 2.0}, "machine"), Workload()
        )
        self.run = Run(setup, self.stack, Path("reports") / "runs" / f"machine-{seed}", seed)
        self.run.setup()
        self.run.start_loader()
        self.monitor = Monitor(self.run)
        self.down: Fault | None = None
        self.columns = 0
        print(f"state machine: seed {seed}, history {self.run.run_dir}")

    # Every sequence starts with data in flight, so the kills and ALTERs that follow hit a
    # loader that is loading (a short ci run is Hypothesis's first, simplest sequence).
    @initialize(count=st.integers(min_value=100, max_value=300))
    def first_publish(self, count: int) -> None:
        self.publish(count)

    @rule(count=st.integers(min_value=20, max_value=300))
    def publish(self, count: int) -> None:
        workload = dataclasses.replace(self.run.workload, count=count)
        self.run.publish(self.run.traffic.next_name("p"), workload)

    @precondition(lambda self: self.down is None)
    @rule()
    def kill_loader(self) -> None:
        self.down = build_fault("kill_loader", KillLoaderParams(), self.run.rng)
        self.run.inject(self.down)

    @precondition(lambda self: self.down is not None)
    @rule()
    def restart_loader(self) -> None:
        assert self.down is not None
        self.run.heal(self.down)
        self.down = None

    @precondition(lambda self: self.columns < 3)
    @rule()
    def alter(self) -> None:
        self.columns += 1
        self.run.sql("alter", f"ALTER TABLE {{table}} ADD COLUMN c{self.columns} BIGINT")

    @invariant()
    def never_duplicated_nor_invented(self) -> None:
        anomalies = self.monitor.check_now()
        assert not anomalies, f"{anomalies} (history {self.run.run_dir})"

    def teardown(self) -> None:
        try:
            self.run.heal_all()
            assert self.run.await_loaded(240) == 0, f"not all loaded ({self.run.run_dir})"
            self.monitor.check_now()
            self.run.stop_loader()
            self.run.read_back()
            results = judge(_CHECKS, self.run.history, self.run.run_dir)
            # `valid` only: `unknown` (nothing delivered) would prove nothing.
            for result in results:
                assert result.verdict == "valid", f"{result.check}: {result.summary}"
        finally:
            self.run.teardown()


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
