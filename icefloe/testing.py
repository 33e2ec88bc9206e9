"""icefloe's public API for your own tests: run a scenario against your loader, judge it, draw
fault schedules. Everything else in the kit is internal and may change between commits.

With the kit installed, pytest loads its plugin by itself, which gives your tests the running
stack and fresh names (the fixtures ``stack``, ``topic_factory``, ``table_factory``,
``schema_factory``, ``trino``, ``iceberg_catalog``, ``kafka_admin``, ``toxiproxy``). A test that
uses the stack is marked ``scenario`` or ``integration``::

    import pytest
    from icefloe import testing

    pytestmark = pytest.mark.scenario

    def test_my_loader_survives_kill9(stack):
        result = testing.run_scenario(
            "scenarios/restart_under_load.toml", stack, loader="loader.toml"
        )
        testing.assert_passed(result, judged=("exactly_once",))

Fault schedules are Hypothesis strategies (:func:`fault_schedules`); each example is a run of
minutes, so a property test of your own asks for few examples and no deadline::

    from hypothesis import given, settings

    @settings(max_examples=1, deadline=None, database=None)
    @given(testing.fault_schedules("break"))
    def test_any_schedule(stack, schedule):
        scenario = testing.schedule_scenario(schedule, "break")
        testing.assert_passed(testing.run_scenario(scenario, stack, loader="loader.toml"))

docs/testing-your-loader.md walks through a repository that uses it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from icefloe.harness.loaders.capabilities import why_not
from icefloe.harness.loaders.command import PREFIX as COMMAND_PREFIX
from icefloe.harness.loaders.kinds import resolve
from icefloe.harness.scenarios import model
from icefloe.harness.scenarios.generative.generate import PROFILES, Schedule, scenario_doc
from icefloe.harness.scenarios.generative.generate import schedules as _schedules
from icefloe.harness.scenarios.model import Scenario, ScenarioError
from icefloe.harness.scenarios.reports import report
from icefloe.harness.scenarios.runner import RunOptions, RunResult
from icefloe.harness.scenarios.runner import run_scenario as _run

__all__ = [
    "NotApplicable",
    "RunResult",
    "Scenario",
    "ScenarioError",
    "assert_passed",
    "fault_schedules",
    "load_scenario",
    "run_scenario",
    "scenario_files",
    "schedule_scenario",
]


class NotApplicable(AssertionError):
    """The scenario asks what the loader (or the stack's catalog) lacks: nothing was tested.

    An ``AssertionError``, so a test fails rather than passing on nothing; catch it (or call
    ``pytest.skip``) where a scenario is known not to apply.
    """


def load_scenario(
    scenario: str | Path,
    *,
    profile: str = "ci",
    variables: Mapping[str, Any] | None = None,
) -> Scenario:
    """A scenario by its file (any path ending in ``.toml``) or its name (yours in
    ``./scenarios`` first, then the built-in ones).

    Args:
        scenario: ``scenarios/mine.toml``, ``01_exactly_once_kill9`` or ``exactly_once_kill9``.
        profile: ``ci`` or ``full`` (the built-in scenarios' sizes).
        variables: Overrides of its ``[vars]`` (a smaller run of the same steps).

    Raises:
        ScenarioError: no such scenario, or the file is not a valid one (its line and the known
            keys are named).
    """
    return model.find_in(str(scenario), profile=profile, variables=variables)


def _loader(loader: str | Path | None) -> Any:
    if loader is None:
        return None
    text = str(loader)
    if text.endswith(".toml") and not text.startswith(COMMAND_PREFIX):
        text = COMMAND_PREFIX + str(Path(text).resolve())
    return resolve(text)


def run_scenario(
    scenario: str | Path | Scenario,
    stack: Any,
    loader: str | Path | None = None,
    *,
    reports: Path = Path("reports"),
    variables: Mapping[str, Any] | None = None,
    seed: int | None = None,
    break_name: str | None = None,
) -> RunResult:
    """Run one scenario on the running stack against a loader, and write its report.

    Args:
        scenario: A scenario file, a built-in name, or a :class:`Scenario`.
        stack: The ``stack`` fixture.
        loader: Your loader's description (``loader.toml``, or ``command:loader.toml``), a
            kind the kit knows by name (``icefloe``, ``kafka-connect``...), or None for icefloe's.
        reports: Where the run's folder and its Markdown report go.
        variables: Overrides of the scenario's ``[vars]`` (ignored for a :class:`Scenario`).
        seed: Replay a run's decisions (the report names its seed).
        break_name: Run one of the scenario's breaks instead.

    Raises:
        NotApplicable: the scenario needs what the loader or the catalog lacks.
    """
    chosen = (
        scenario if isinstance(scenario, Scenario) else load_scenario(scenario, variables=variables)
    )
    kind = _loader(loader)
    missing = why_not(chosen, kind, stack.catalog)
    if missing:
        raise NotApplicable(f"{chosen.name} does not apply: {'; '.join(missing)}")
    options = RunOptions(seed=seed, break_name=break_name, reports_dir=reports, loader=kind)
    result = _run(chosen, stack, options)
    report.write_markdown(result)
    return result


def assert_passed(result: RunResult, judged: Iterable[str] = ()) -> None:
    """Fail unless the run passed, and unless each check named in ``judged`` came out
    ``valid`` (a check that compared nothing says ``unknown``: no proof).

    The message holds the run's summary, its seed and its report's folder.
    """
    details = "\n".join(report.summary_lines([result]))
    where = f"\nreport: {result.run_dir}"
    assert result.passed, f"{details}{where}"
    verdicts = {c.check: c.verdict for c in result.checks}
    wanted = {check: verdicts.get(check, "not run") for check in judged}
    unproven = {check: verdict for check, verdict in wanted.items() if verdict != "valid"}
    assert not unproven, f"not proven: {unproven}\n{details}{where}"


def scenario_files(folder: str | Path = "scenarios") -> list[Path]:
    """The scenario files of a folder of yours, by name (for ``pytest.mark.parametrize``)."""
    return sorted(Path(folder).glob("*.toml"))


def fault_schedules(profile: str = "ci") -> st.SearchStrategy[Schedule]:
    """Fault schedules as ``icefloe scenario generate`` draws them: loader kills and freezes,
    service faults, maintenance, schema changes and topic growth, timed in lanes.

    Args:
        profile: ``ci`` (at least 40 faults, one long run), ``break`` (small, kept fixed in
            their details so a failure shrinks quickly) or ``soak``.
    """
    return _schedules(PROFILES[profile])


def schedule_scenario(schedule: Schedule, profile: str = "ci", name: str = "generated") -> Scenario:
    """The scenario a drawn schedule is played as: a trickle of messages, the schedule with live
    checks, then every invariant once the faults are healed."""
    chosen = PROFILES[profile]
    return model.parse(scenario_doc(schedule, chosen, name=name), name=name)
