"""Runner: plays a scenario file's timeline on a :class:`~harness.scenarios.engine.Run`, then
checks it from the history.

The run's seed drives every random choice (publish seeds per phase, fault timing), so
``--seed`` replays a run's decisions. Each run saves its scenario (``scenario.json``) beside
its history and ledgers, so :func:`judge` gives the same verdicts later from the files alone
(``icefloe scenario check RUN_DIR``).

With a break (``--break NAME``) the run applies the break's loader overrides, runs the
break-only steps and mutation, and succeeds when the expected check turns invalid with the
expected anomaly: the check is shown to catch the broken property.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from icefloe.harness.history import Event, History
from icefloe.harness.scenarios import mutations
from icefloe.harness.scenarios.checks import storage
from icefloe.harness.scenarios.checks.facts.reads import ledger_entries
from icefloe.harness.scenarios.checks.liveness import DEFAULT_BOUND_S
from icefloe.harness.scenarios.checks.verdict import (
    INVALID,
    UNKNOWN,
    CheckResult,
    run_check,
    summarize,
)
from icefloe.harness.scenarios.engine import Run, RunSetup
from icefloe.harness.scenarios.gather.observed import (
    REFERENCE_VALUE_COLUMNS,
    observed,
    value_columns,
)
from icefloe.harness.scenarios.gather.storage import read_storage
from icefloe.harness.scenarios.model import Scenario, parse
from icefloe.harness.scenarios.steps import STEPS
from icefloe.harness.scenarios.world import Names
from icefloe.harness.stack.tables import quote

__all__ = [
    "RunOptions",
    "RunResult",
    "demonstrated",
    "judge",
    "read_for_checks",
    "record_checks",
    "run_scenario",
    "saved_run",
]


def read_for_checks(run: Any, checks: Sequence[Any]) -> None:
    """The final reads some checks need beyond ``Run.read_back``: storage, columns, values.

    Args:
        run: the run (a ``harness.scenarios.engine.Run``), its table caught up.
        checks: the checks to judge (each with ``check`` and ``params``).
    """
    storage_checks = [c.check for c in checks if c.check in storage.CHECKS]
    if storage_checks:
        read_storage(run.client, run.table, storage_checks)
    columns = run.client.columns(run.table)
    for check in checks:
        if check.check == "column_values":
            col = check.params["column"]
            rows = run.sql(
                f"column:{col}",
                f"SELECT event_id, {quote(col)} FROM {{table}}",
                attempts=30,
                record_rows=False,
            )
            run.client.record_read(f"column:{col}", {str(i): v for i, v in rows})
        elif check.check in ("values", "values_match_ledger"):
            read, named = (
                ("rows", check.params.get("columns") or REFERENCE_VALUE_COLUMNS)
                if check.check == "values"
                else ("row_values", check.params.get("columns") or value_columns(columns))
            )
            cols = [c for c in named if c in columns]
            statement = f"SELECT event_id, {', '.join(quote(c) for c in cols)} FROM {{table}}"
            rows = run.sql(read, statement, attempts=30, record_rows=False)
            values = {str(r[0]): dict(zip(cols, r[1:], strict=True)) for r in rows}
            run.client.record_read(read, values)


@dataclass
class RunOptions:
    """How to run a scenario.

    Attributes:
        seed: The run's seed; ``None`` draws one (it is printed and recorded).
        break_name: Run the named break instead of the plain scenario.
        reports_dir: Where the run's folder (history, ledgers, loader log) goes.
        keep: Keep topics and the table afterwards (for inspection).
        listener: Called with every history event (live progress).
        loader: The kind of loader under test (``harness.loaders.kinds``; None: icefloe's).
    """

    seed: int | None = None
    break_name: str | None = None
    reports_dir: Path = Path("reports")
    keep: bool = False
    listener: Callable[[Event], None] | None = None
    loader: Any = None


@dataclass
class RunResult:
    """What a run found.

    Attributes:
        scenario: The scenario run.
        seed: Its seed (replay with ``--seed``).
        break_name: The break, if one was run.
        checks: Each check's verdict.
        verdict: ``valid``, ``invalid`` or ``unknown`` over all checks.
        elapsed_s: Wall-clock seconds, setup to teardown.
        step_times: (step label, seconds) in timeline order.
        run_dir: The run's folder (history.jsonl, ledgers, loader log).
        names: Topic, dead-letter topic and table used.
        error: Why the run itself failed (a step raised), if it did.
        history: The recorded history.
    """

    scenario: Scenario
    seed: int
    break_name: str | None
    checks: list[CheckResult]
    verdict: str
    elapsed_s: float
    step_times: list[tuple[str, float]]
    run_dir: Path
    names: dict[str, str]
    error: str | None = None
    history: History | None = None

    @property
    def passed(self) -> bool:
        """Plain run: every check valid. Break run: the expected anomaly was reported."""
        if self.error is not None:
            return False
        if self.break_name is None:
            return self.verdict == "valid"
        return self.break_demonstrated

    @property
    def break_demonstrated(self) -> bool:
        return self.break_name is not None and demonstrated(
            self.scenario, self.break_name, self.checks
        )


def demonstrated(scenario: Scenario, break_name: str, checks: list[CheckResult]) -> bool:
    """Whether ``checks`` (a run under ``break_name``, live or judged again) show the break: its
    expected check invalid with its expected anomaly, or unknown where the break expects a
    premise to say the run proved nothing."""
    brk = scenario.breaks[break_name]
    for r in checks:
        if r.check != brk.expect_check:
            continue
        if brk.expect_verdict == UNKNOWN and r.verdict == UNKNOWN:
            return True
        if r.verdict == INVALID and brk.expect_anomaly in r.anomalies:
            return True
    return False


def judge(
    scenario: Scenario, history: History, run_dir: Path, break_name: str | None = None
) -> list[CheckResult]:
    """The scenario's checks over a run's history and ledgers (no service is asked).

    Args:
        scenario: What was run.
        history: Its history.
        run_dir: Its folder (the ledgers).
        break_name: The break it ran under (its mutation applies).

    Returns:
        One result per check.
    """
    ledger = ledger_entries(run_dir)
    found = observed(history, run_dir, ledger, [(c.check, c.params) for c in scenario.checks])
    brk = scenario.breaks.get(break_name) if break_name else None
    if brk is not None and brk.mutate:
        found, history = mutations.apply(brk.mutate, found, history, ledger)
    return [run_check(c.check, history, ledger, found, c.params) for c in scenario.checks]


def record_checks(history: History, checks: list[CheckResult], **extra: Any) -> None:
    """Record each check's verdict in the history (``check`` events, ok or fail)."""
    for result in checks:
        history.record(
            "check",
            "ok" if result.ok else "fail",
            result.check,
            verdict=result.verdict,
            summary=result.summary,
            **extra,
        )


def saved_run(run_dir: Path) -> tuple[Scenario, History, str | None, int]:
    """A finished run read back from its folder: scenario, history, break and seed."""
    saved = json.loads((run_dir / "scenario.json").read_text(encoding="utf-8"))
    scenario = parse(saved["doc"], profile=saved["profile"], name=saved["name"])
    history = History.read(run_dir / "history.jsonl")
    return scenario, history, saved.get("break"), int(saved["seed"])


class _ScenarioRun:
    """One run of one scenario: set up, play the steps, read back, check, tear down."""

    def __init__(self, scenario: Scenario, stack: Any, options: RunOptions) -> None:
        self.scenario = scenario
        self.options = options
        self.brk = options.break_name
        self.seed = (
            options.seed if options.seed is not None else random.SystemRandom().randrange(2**31)
        )
        setup = RunSetup(
            scenario.name,
            scenario.with_break(self.brk),
            scenario.workload,
            scenario.topic_partitions,
            scenario.dead_letter,
            scenario.extra_columns,
            liveness_bound_s=max(
                (float(c.params.get("bound_s", DEFAULT_BOUND_S))
                 for c in scenario.checks if c.check == "liveness"),
                default=0.0,
            ),
        )  # fmt: skip
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        label = scenario.name + (f"-break-{self.brk}" if self.brk else "")
        names = Names.fresh(scenario.name, scenario.dead_letter)
        self.run_dir = options.reports_dir / "runs" / f"{stamp}-{label}-{names.suffix}"
        self.run = Run(
            setup, stack, self.run_dir, self.seed, options.listener, names=names,
            loader=options.loader,
        )  # fmt: skip
        self.step_times: list[tuple[str, float]] = []

    def _save(self) -> None:
        doc = {
            "name": self.scenario.name,
            "profile": self.scenario.profile,
            "break": self.brk,
            "seed": self.seed,
            "path": None if self.scenario.path is None else str(self.scenario.path),
            "doc": self.scenario.doc,
        }
        (self.run_dir / "scenario.json").write_text(json.dumps(doc, indent=1, default=str))

    def _read_back(self) -> None:
        run = self.run
        monitor = run.tasks.pop("monitor", None)
        if monitor is not None:
            monitor.check_now()  # a last live round once the table has caught up
            monitor.stop()
        run.read_back()
        read_for_checks(run, self.scenario.checks)

    def execute(self) -> RunResult:
        began = time.monotonic()
        run, scenario = self.run, self.scenario
        error: str | None = None
        checks: list[CheckResult] = []
        run.history.record(
            "info",
            "info",
            "run",
            scenario=scenario.name,
            profile=scenario.profile,
            seed=self.seed,
            break_name=self.brk,
            **run.names.as_dict(),
        )
        self._save()
        try:
            run.setup()
            for step in settle_at_the_end([s for s in scenario.steps if s.runs_in(self.brk)]):
                self._step(step)
            self._read_back()
            if self.brk and scenario.breaks[self.brk].mutate:
                run.history.record(
                    "info", "info", "mutate", mutation=scenario.breaks[self.brk].mutate
                )
            checks = judge(scenario, run.history, self.run_dir, self.brk)
            record_checks(run.history, checks)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            run.history.record("info", "fail", "run", error=error)
        finally:
            run.teardown(keep=self.options.keep)
        return RunResult(
            scenario,
            self.seed,
            self.brk,
            checks,
            summarize(checks) if checks else "unknown",
            time.monotonic() - began,
            self.step_times,
            self.run_dir,
            run.names.as_dict(),
            error,
            run.history,
        )

    def _step(self, step: Any) -> None:
        began = time.monotonic()
        self.run.history.record("step", "invoke", step.do, **dict(step.raw))
        STEPS[step.do].run(self.run, step.params)
        took = time.monotonic() - began
        self.step_times.append((step.label, took))
        self.run.history.record("step", "ok", step.do, seconds=round(took, 2))


def settle_at_the_end(steps: list[Any]) -> list[Any]:
    """The timeline with the end of a run's waits for rows at its last one: no default settle
    on a wait another follows, and the drain on the last one.

    A settle is the pause after every row is visible in which a late commit (a duplicate) can
    still land before the checks read the table. The checks read it once, at the end, so only
    the last wait needs one: a late commit of an earlier phase is still in the table then. The
    drain (``Run.drain``) gives rows still missing at the last wait the loader's own time to
    arrive before the checks tell lost from pending. A settle or a drain the scenario gives
    (``settle_s``, ``drain``) is kept wherever it is.
    """
    waits = [i for i, step in enumerate(steps) if step.do == "await_loaded"]
    timeline = list(steps)
    for i in waits[:-1]:
        params = steps[i].params
        changes = {}
        if params.settle_s is None:
            changes["settle_s"] = 0.0
        if params.drain is None:
            changes["drain"] = False
        if changes:
            timeline[i] = dataclasses.replace(
                steps[i], params=dataclasses.replace(params, **changes)
            )
    if waits and steps[waits[-1]].params.drain is None:
        last = steps[waits[-1]]
        timeline[waits[-1]] = dataclasses.replace(
            last, params=dataclasses.replace(last.params, drain=True)
        )
    return timeline


def run_scenario(scenario: Scenario, stack: Any, options: RunOptions | None = None) -> RunResult:
    """Run one scenario on a running stack.

    Args:
        scenario: What to run.
        stack: A running stack.
        options: Seed, break, reports folder.

    Returns:
        The result; a step that raises is reported in ``error`` (the checks are not run then).
    """
    return _ScenarioRun(scenario, stack, options or RunOptions()).execute()
