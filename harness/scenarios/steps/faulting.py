"""Steps that inject faults: one fault, a nemesis (the same fault again and again), table
maintenance, and a whole timed schedule played lane by lane with the live monitor.

A fault's parameters are its kind's dataclass (``harness.scenarios.faults``), checked when
the file is read, like every step's.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from icefloe.harness.scenarios.checks.facts.faults import commits_struck
from icefloe.harness.scenarios.client import metadata_table
from icefloe.harness.scenarios.faults import build_fault, parse_fault
from icefloe.harness.scenarios.faults.maintenance import (
    ExpireParams,
    OptimizeParams,
    RetentionParams,
)
from icefloe.harness.scenarios.params import ParamError, parse_params
from icefloe.harness.scenarios.player import Monitor, SchedulePlayer
from icefloe.harness.scenarios.schedule import Schedule
from icefloe.harness.scenarios.steps import ParseContext, step


@dataclass(frozen=True)
class FaultStep:
    """``fault``: the fault's kind (a fault of the reference's list), its own parameters beside
    it in the same table; ``duration_s``: how long it stays injected before it is healed."""

    kind: str
    params: Any
    duration_s: float = 0.0


def _split_float(fields: dict[str, Any], key: str, default: float, where: str) -> float:
    value = fields.pop(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ParamError(f"{where}.{key}: {value!r} is not a number >= 0")
    return float(value)


def _parse_fault_step(raw: Mapping[str, Any], where: str, ctx: ParseContext) -> FaultStep:
    fields = dict(raw)
    duration = _split_float(fields, "duration_s", 0.0, where)
    kind, params = parse_fault(fields, where)
    return FaultStep(kind, params, duration)


def _play(run: Any, fault: Any, duration_s: float) -> None:
    try:
        run.inject(fault)
        time.sleep(duration_s)
    finally:
        run.heal(fault)


@step("fault", FaultStep, parse=_parse_fault_step)
def fault(run: Any, p: FaultStep) -> None:
    """Inject a fault, hold it for ``duration_s``, heal it."""
    _play(run, build_fault(p.kind, p.params, run.rng), p.duration_s)


@dataclass(frozen=True)
class Nemesis:
    """The same fault ``times`` times, ``interval_s`` (a random range) apart; ``at = "mixed"``
    cycles the moment: a commit's start, anywhere, up to 0.6 s after a commit started.

    ``until_during_commit``: after the ``times`` faults, while fewer than this many of them
    landed inside a commit (the commit they struck never reached main), strike again at a
    commit's start, at most ``times`` more; a commit that does not come ends the extra round.
    A kill timed on a commit can come late on a busy machine (a loader that commits in a few
    milliseconds is often done by then): the run keeps trying instead of ending with a fault
    that never landed where the scenario needs it. Every extra fault is recorded and counted.
    """

    fault: FaultStep
    times: int
    at: str
    interval_s: tuple[float, float]
    until_during_commit: int = 0


def _parse_nemesis(raw: Mapping[str, Any], where: str, ctx: ParseContext) -> Nemesis:
    fields = dict(raw)
    times = fields.pop("times", 5)
    at = fields.pop("at", "now")
    until = fields.pop("until_during_commit", 0)
    interval = fields.pop("interval_s", [2.0, 6.0])
    if not isinstance(times, int) or times < 1:
        raise ParamError(f"{where}.times: {times!r} is not a count >= 1")
    if isinstance(until, bool) or not isinstance(until, int) or until < 0:
        raise ParamError(f"{where}.until_during_commit: {until!r} is not a count >= 0")
    ok = (
        isinstance(interval, list)
        and len(interval) == 2
        and all(isinstance(v, int | float) for v in interval)
    )
    if not ok:
        raise ParamError(f"{where}.interval_s: {interval!r} is not [low, high]")
    if at != "mixed":
        fields["at"] = at
    step_ = _parse_fault_step(fields, where, ctx)
    names = {f.name for f in dataclasses.fields(step_.params)}
    if at == "mixed" and not {"at", "max_delay_s"} <= names:
        raise ParamError(f"{where}: at = 'mixed' needs a fault timed by at and max_delay_s")
    if until and not {"at", "max_delay_s"} <= names:
        raise ParamError(f"{where}: until_during_commit needs a fault timed by at and max_delay_s")
    bounds = (float(interval[0]), float(interval[1]))
    return Nemesis(step_, times, str(at), bounds, until)


@step("nemesis", Nemesis, parse=_parse_nemesis)
def nemesis(run: Any, p: Nemesis) -> None:
    """A fault again and again at random intervals (then at commits, while too few landed in
    one: ``until_during_commit``)."""
    since = len(run.history.events)
    low, high = p.interval_s
    for i in range(p.times):
        time.sleep(run.rng.uniform(low, high))
        params = p.fault.params
        if p.at == "mixed":
            # A cycle of three: the moment a commit starts (inside it), anywhere, and shortly
            # after a commit started (often after it landed, before the Spark checkpoint is
            # written - the window a replay would duplicate).
            params = dataclasses.replace(
                params, at=("commit", "now", "commit")[i % 3], max_delay_s=(0.0, 0.0, 0.6)[i % 3]
            )
        _play(run, build_fault(p.fault.kind, params, run.rng), p.fault.duration_s)
    timed = dataclasses.replace(p.fault.params, at="commit", max_delay_s=0.0)
    for _ in range(p.times if p.until_during_commit else 0):
        fault_ = build_fault(p.fault.kind, timed, run.rng)
        seen = commits_struck(run.history.events[since:], fault_.name)
        if sum(seen) >= p.until_during_commit:
            return
        time.sleep(run.rng.uniform(low, high))
        _play(run, fault_, p.fault.duration_s)
        if len(commits_struck(run.history.events[since:], fault_.name)) == len(seen):
            return  # no commit came within the fault's wait: the loader had nothing to commit


@step("retention_delete", RetentionParams)
def retention_delete(run: Any, p: RetentionParams) -> None:
    """A retention DELETE while the loader writes (see the ``retention_delete`` fault)."""
    _play(run, build_fault("retention_delete", p, run.rng), 0.0)


@step("expire_snapshots", ExpireParams)
def expire_snapshots(run: Any, p: ExpireParams) -> None:
    """``expire_snapshots`` while the loader writes (see the ``expire_snapshots`` fault)."""
    _play(run, build_fault("expire_snapshots", p, run.rng), 0.0)


@step("optimize", OptimizeParams)
def optimize(run: Any, p: OptimizeParams) -> None:
    """Compaction while the loader writes; then the rewrite snapshot against its parent:
    data files and row aggregates as of each (``compaction``)."""
    _play(run, build_fault("optimize", p, run.rng), 0.0)
    snapshots = metadata_table(run.table, "snapshots")
    rows = run.sql(
        "compaction_snapshot",
        f"SELECT snapshot_id, parent_id, summary['total-data-files'] FROM {snapshots} "
        "WHERE operation = 'replace' ORDER BY committed_at DESC LIMIT 1",
        attempts=10,
    )
    if not rows:
        return
    snap, parent, files = rows[0]
    parent_files = run.sql(
        "compaction_parent",
        f"SELECT summary['total-data-files'] FROM {snapshots} WHERE snapshot_id = {parent}",
        attempts=10,
    )[0][0]
    aggregate = (
        "count(*), count(DISTINCT event_id), checksum(event_id), checksum(string), "
        "checksum(integer), checksum(floating)"
    )

    def as_of(snapshot: int) -> list[Any]:
        statement = f"SELECT {aggregate} FROM {{table}} FOR VERSION AS OF {snapshot}"
        return list(run.sql("compaction_rows", statement, attempts=10)[0])

    run.client.record_read(
        "compaction",
        {
            "before": {"snapshot": parent, "files": int(parent_files), "rows": as_of(parent)},
            "after": {"snapshot": snap, "files": int(files), "rows": as_of(snap)},
        },
    )


@dataclass(frozen=True)
class PlaySchedule:
    """``events``: the timed faults; ``start_loader``: start the loader first (armed for the
    first loader event); ``monitor_every_s``: live invariant checks (0: none)."""

    events: Schedule
    start_loader: bool = True
    monitor_every_s: float = 10.0


@dataclass(frozen=True)
class _ScheduleFields:
    start_loader: bool = True
    monitor_every_s: float = 10.0


def _parse_schedule(raw: Mapping[str, Any], where: str, ctx: ParseContext) -> PlaySchedule:
    fields = dict(raw)
    events = fields.pop("events", None)
    if not isinstance(events, list) or not events:
        raise ParamError(f"{where}: events must be a non-empty array of tables")
    rest = parse_params(_ScheduleFields, fields, where)
    return PlaySchedule(Schedule.parse(events, where), rest.start_loader, rest.monitor_every_s)


@step("schedule", PlaySchedule, parse=_parse_schedule)
def schedule(run: Any, p: PlaySchedule) -> None:
    """Play a timed fault schedule, lanes side by side, invariants checked while it runs."""
    player = SchedulePlayer(run, p.events, start_loader=p.start_loader)
    if p.monitor_every_s > 0 and "monitor" not in run.tasks:
        monitor = Monitor(run, p.monitor_every_s, on_failure=player.stop)
        run.tasks["monitor"] = monitor
        monitor.start()
    try:
        player.play()
    finally:
        run.heal_all()  # what a failed heal left in the set, before anything is judged


__all__ = ["FaultStep", "Nemesis", "PlaySchedule"]
