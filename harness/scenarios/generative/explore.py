"""Searching fault schedules with Hypothesis; a failure is shrunk and written as a scenario file.

:func:`explore` runs a profile's search (``harness.scenarios.generative.generate``): Hypothesis
draws a schedule, it is played as a scenario on a fresh world (``run_scenario``), and a run whose
checks fail fails the example. Hypothesis then shrinks the schedule, replaying smaller ones
(each a real run); the smallest failing one is written as a scenario TOML file, which
``icefloe scenario run FILE`` runs again. Shrinking a run of minutes takes long, so it has a
budget (the profile's ``shrink_seconds``): what is written is the smallest failure found.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icefloe.harness.history import Event
from icefloe.harness.scenarios.generative.generate import (
    Profile,
    WorldOptions,
    scenario_doc,
    schedules,
)
from icefloe.harness.scenarios.generative.tomlout import dumps
from icefloe.harness.scenarios.model import parse
from icefloe.harness.scenarios.reports import report
from icefloe.harness.scenarios.runner import RunOptions, RunResult, run_scenario
from icefloe.harness.scenarios.schedule import Schedule

__all__ = ["Exploration", "explore", "write_found"]


@dataclass
class Exploration:
    """What a search did.

    Attributes:
        profile: The profile searched.
        runs: Every run, in order (generation, then shrinking).
        smallest: The smallest failing run, if any failed.
        smallest_schedule: Its schedule.
        written: The scenario file it was written to.
        hypothesis_error: What Hypothesis reported at the end, if anything but the failure.
    """

    profile: Profile
    runs: list[RunResult] = field(default_factory=list)
    smallest: RunResult | None = None
    smallest_schedule: Schedule | None = None
    written: Path | None = None
    hypothesis_error: str | None = None

    @property
    def failed(self) -> bool:
        return self.smallest is not None


@contextlib.contextmanager
def _shrink_budget(seconds: float) -> Iterator[None]:
    # Hypothesis stops shrinking after five minutes, a handful of our runs: give it the
    # profile's budget (its engine documents the constant as the knob for this).
    from hypothesis.internal.conjecture import engine

    before = engine.MAX_SHRINKING_SECONDS
    engine.MAX_SHRINKING_SECONDS = int(seconds)
    try:
        yield
    finally:
        engine.MAX_SHRINKING_SECONDS = before


def _anomalies(result: RunResult) -> dict[str, int]:
    out: dict[str, int] = {}
    for check in result.checks:
        for name, a in check.anomalies.items():
            out[name] = out.get(name, 0) + a.count
    return out


def _fail(message: str) -> None:
    # One place raises every failure: Hypothesis tells failures apart by where they were
    # raised, and a replayed failure raised elsewhere would count as another (flaky) bug.
    raise AssertionError(message)


def write_found(result: RunResult, schedule: Schedule, path: Path, note: str = "") -> Path:
    """Write a failing generated run as a scenario file that plays it again.

    Args:
        result: The failing run.
        schedule: Its schedule.
        path: Where to write.
        note: A line for the file's header (how it was found).

    Returns:
        The path.
    """
    doc = dict(result.scenario.doc)
    doc["found"] = {
        "seed": result.seed,
        "faults": len(schedule.faults),
        "anomalies": _anomalies(result),
        "failed_checks": [c.check for c in result.checks if c.verdict == "invalid"],
        "error": result.error or "",
        "run": str(result.run_dir),
    }
    header = (
        f"{note}\nReplay: icefloe scenario run {path} --seed {result.seed}\n"
        f"Schedule:\n" + "\n".join(f"  {e.describe()}" for e in schedule.faults)
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(doc, header), encoding="utf-8")
    return path


def explore(
    stack: Any,
    profile: Profile,
    *,
    world: WorldOptions | None = None,
    reports_dir: Path = Path("reports"),
    found_path: Path | None = None,
    seed: int | None = None,
    listener: Callable[[Event], None] | None = None,
    on_run: Callable[[RunResult, Schedule], None] | None = None,
) -> Exploration:
    """Search ``profile``'s schedules on fresh worlds; shrink and write the first failure.

    Args:
        stack: A running stack.
        profile: What to search (``ci`` or ``break``).
        world: Loader overrides (a break) and the trickle.
        reports_dir: Where runs go.
        found_path: Where the smallest failing schedule is written (default
            ``reports/found/<profile>-<stamp>.toml``).
        seed: Hypothesis's seed (a search is replayed by it); drawn if None.
        listener: Every history event of every run (progress).
        on_run: Called after each run.

    Returns:
        What happened.
    """
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis.errors import Flaky

    world = world or WorldOptions()
    found = Exploration(profile)
    failures: dict[int, str] = {}
    phases = [Phase.generate, Phase.shrink] if profile.shrink else [Phase.generate]

    @settings(
        max_examples=profile.max_examples,
        phases=phases,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=True,
    )
    @given(schedules(profile))
    def one(schedule: Schedule) -> None:
        docs = json.dumps(schedule.to_docs(), sort_keys=True, default=str)
        run_seed = zlib.crc32(docs.encode())  # the same schedule replays the same choices
        if run_seed in failures:
            # Hypothesis runs the smallest failing example once more to report it: that run
            # was made already (a run takes minutes), its outcome stands.
            _fail(failures[run_seed])
        doc = scenario_doc(schedule, profile, world, name=f"generated_{profile.name}")
        scenario = parse(doc, name=f"generated_{profile.name}")
        options = RunOptions(seed=run_seed, reports_dir=reports_dir, listener=listener)
        result = run_scenario(scenario, stack, options)
        report.write_markdown(result)
        found.runs.append(result)
        if on_run is not None:
            on_run(result, schedule)
        if not stack.healthy():
            stack.up()  # a run that failed half-way must not take the next one down
        if result.passed:
            return
        smallest = found.smallest_schedule
        if smallest is None or len(schedule.faults) <= len(smallest.faults):
            found.smallest, found.smallest_schedule = result, schedule
        lines = "\n".join(report.summary_lines([result]))
        failures[run_seed] = f"{len(schedule.faults)} faults: {lines}"
        _fail(failures[run_seed])

    if seed is not None:
        one = hypothesis_seed(seed)(one)
    with _shrink_budget(profile.shrink_seconds):
        try:
            one()
        except AssertionError:
            pass
        except Flaky as exc:
            found.hypothesis_error = f"{type(exc).__name__}: {str(exc)[:300]}"
    if found.smallest is not None and found.smallest_schedule is not None:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        path = found_path or reports_dir / "found" / f"{profile.name}-{stamp}.toml"
        loader = ", ".join(f"{k} = {v}" for k, v in dict(world.loader).items()) or "defaults"
        note = (
            f"Found by a generated search (profile {profile.name}, loader {loader}) in "
            f"{len(found.runs)} runs; the smallest failing schedule, "
            f"{len(found.smallest_schedule.faults)} faults."
        )
        found.written = write_found(found.smallest, found.smallest_schedule, path, note)
    return found
