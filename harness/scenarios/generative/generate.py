"""Generated fault schedules: Hypothesis strategies, the generated world, and profiles.

A generated run is a scenario like any other, built as data (:func:`scenario_doc`): one
topic, table and loader (supervised, lease 8 s, at most 1000 records a batch), a trickle of
messages that carry the columns schema faults play with, and one ``schedule`` step whose
timed events Hypothesis draws (:func:`schedules`), lane by lane. The checks are the
invariants of :data:`CHECKS` (``harness.scenarios.checks``). So a failing schedule is written
as a scenario file that runs again with ``icefloe scenario run FILE``
(``harness.scenarios.generative.explore``).

Profiles (:data:`PROFILES`) size the schedules: ``ci`` (one run, at least 40 faults of which
at least 10 loader kills), ``soak`` (chapters of a long run, see
``harness.scenarios.generative.soak``), and ``break`` (small schedules, shrunk on failure, for a
loader with a guard switched off).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from hypothesis import reject
from hypothesis import strategies as st

from icefloe.harness.scenarios.faults.commits import CatalogHttpParams
from icefloe.harness.scenarios.faults.loader import KillLoaderParams, ZombieParams
from icefloe.harness.scenarios.faults.maintenance import (
    ExpireParams,
    OptimizeParams,
    OrphansParams,
    RetentionParams,
)
from icefloe.harness.scenarios.faults.schema import (
    AddColumnParams,
    ColumnParams,
    RenameParams,
    WidenParams,
)
from icefloe.harness.scenarios.faults.services import KillServiceParams, PauseServiceParams
from icefloe.harness.scenarios.faults.topic import AddPartitionsParams
from icefloe.harness.scenarios.faults.traffic import BurstParams, MalformedParams
from icefloe.harness.scenarios.faults.wire import (
    WireBandwidthParams,
    WireLatencyParams,
    WireLimitDataParams,
    WireResetPeerParams,
)
from icefloe.harness.scenarios.schedule import Schedule, ScheduledFault

__all__ = ["PROFILES", "Profile", "lane_counts", "scenario_doc", "schedules"]

# The generated world. Messages carry every column of the pool; the table starts with some of
# them, and schema faults add, widen, rename and drop them while the loader writes. Its loader
# differs from the loader's defaults on purpose: short batches and lease, so that faults land
# among many commits and a frozen loader's successor takes over within a run, and at most
# 1,000 records a batch: its maximum rate (500 msg/s) is what a burst publishes at.
LOADER: dict[str, Any] = {
    "trigger_interval": 2.0,
    "kafka.max_offsets_per_trigger": 1000,
    "lease_ttl": 8.0,
    "restart_on_exit": True,
}
INT_POOL = ("xi0", "xi1", "xi2", "xi3")
FLOAT_POOL = ("xf0", "xf1")
START_COLUMNS = {"xi0": "integer", "xi1": "integer", "xf0": "real"}
WORKLOAD: dict[str, Any] = {
    "window_days": 30.0,
    # A few malformed messages in every run, so the dead-letter invariant always has letters
    # to compare (with none sent and none read it can only say unknown).
    "malformed_fraction": 0.05,
    "extra_fields": [f"{c}=int" for c in INT_POOL] + [f"{c}=float" for c in FLOAT_POOL],
}
PARTITIONS = 2
_TRINO_TYPE = {"integer": "INTEGER", "real": "REAL", "bigint": "BIGINT", "double": "DOUBLE"}
CHECKS = (
    "table_matches_ledger",
    "dead_letters_match_ledger",
    "live_invariants",
    "faults_healed",
    "loader_exits_explained",
    "one_owner",
    "values_match_ledger",
)
CHECK_PARAMS: dict[str, dict[str, Any]] = {
    # A zombie frozen after flushing its batch's dead letters has sent them; its successor
    # (another loader id) sends them again. One copy more from another loader is allowed; a
    # loader sending a letter twice is not.
    "dead_letters_match_ledger": {"max_copies": 2},
}


Card = str | tuple[str, ...]
"""One card of a lane's deck: a kind, or several of which each deal draws one."""


@dataclass(frozen=True)
class Lane:
    """How a profile fills one lane: event count range, gap range (seconds), and its deck.

    The lane deals its ``kinds`` like cards, in rounds: every card once per round, in an order
    drawn anew each round, so any stretch of a lane holds the deck's proportions to within one
    round (a ten-minute soak as well as an hour), where independent draws would leave a short
    run's mix to chance. A kind named twice is dealt twice a round.
    """

    events: tuple[int, int]
    gap_s: tuple[int, int]
    kinds: tuple[Card, ...]


@dataclass(frozen=True)
class Profile:
    """How big generated schedules are and how they are searched.

    Attributes:
        name: ``ci``, ``soak`` or ``break``.
        lanes: Per lane, how it is filled.
        min_faults: Schedules with fewer faults are not run.
        min_loader_kills: Nor with fewer ``kill_loader`` events.
        min_kinds: Nor with fewer different kinds.
        max_examples: Schedules run per search.
        shrink: Shrink a failing schedule.
        shrink_seconds: Budget for shrinking (each try is a run of minutes).
        monitor_every_s: Live checks.
        await_timeout_s: How long the table may take to catch up after the schedule.
        max_pause_s: Longest service pause.
        services: Services the infra lane may kill or pause.
        varied: Draw the details of events (restart mode, delays, hold times); a profile made
            to be shrunk keeps them fixed, so shrinking spends its runs on what matters.
        zombie_after_commits: Commits a loader armed for a ``zombie`` (at a point drawn from
            planned, write, publish or now) makes before its hook may freeze it. The soak's
            zombies at a named point freeze in the first batch of their start.
        restarts: How a killed loader is restarted (``launch``, ``wait``: drawn from these).
            The ``ci`` profile only launches: a kill that waits for the restart costs 25-35 s
            of its loader lane, and its 8 minutes hold no more than a few.
        zombie_successor: How far a zombie's successor gets before the thaw (``started`` or
            ``took_over``), for zombies frozen ``now`` or at a point of a batch.
    """

    name: str
    lanes: Mapping[str, Lane]
    min_faults: int = 0
    min_loader_kills: int = 0
    min_kinds: int = 1
    max_examples: int = 1
    shrink: bool = False
    shrink_seconds: float = 300.0
    monitor_every_s: float = 10.0
    await_timeout_s: float = 420.0
    max_pause_s: int = 60
    services: tuple[str, ...] = ("kafka", "minio", "catalog", "trino")
    varied: bool = True
    zombie_after_commits: int = 0
    restarts: tuple[Literal["launch", "wait"], ...] = ("launch", "wait")
    zombie_successor: Literal["started", "took_over"] = "started"


# A loader's first commit after a start comes 1-3 minutes later on a busy 2-core machine: the
# kills that wait for a commit and the zombies frozen by a hook are the expensive ones.
_CI_LOADER_KINDS = ("kill_now", "kill_now", "kill_now", "kill_now", "kill_commit", "zombie_now")
# The soak's loader faults land at the loader's own fault points (``loader.testing.faultpoints``):
# each is armed on the start before it (the heal of the previous one), fires in the first batch of
# that start, and waits for no commit. A round of the lane's deck holds one of each place the soak's
# goal names and two kills inside a batch (40, 15, 15 and 15 an hour: inside a batch, during the
# commit request, after a commit, zombies mid-batch); within a batch every point alike. The sixth
# card is a kill at ``take_over`` (the take-over committed, the query not started: the start-up
# kill) or a zombie frozen once its commit request is sent. A round costs about 2.5 minutes on two
# cores (a kill at ``planned`` 8 s from its inject, at ``committed`` 33 s, a zombie 40 s with its
# successor's take-over). Where each fault landed is what the loader's trace says, not what was
# asked.
INSIDE_BATCH = ("planned", "decoded", "dead_lettered", "write", "publish")
"""The points after a batch's plan and before its commit request."""
ZOMBIE_POINTS = (*INSIDE_BATCH, "commit_sent")
"""Where a soak's zombies freeze: mid-batch, before the commit was answered."""
_INSIDE_KILL = tuple(f"kill_at_{point}" for point in INSIDE_BATCH)
_SOAK_LOADER_KINDS: tuple[Card, ...] = (
    _INSIDE_KILL,
    _INSIDE_KILL,
    "kill_at_commit_sent",
    "kill_at_committed",
    tuple(f"zombie_at_{point}" for point in INSIDE_BATCH),
    ("kill_at_take_over", "zombie_at_commit_sent"),
)
_INFRA_KINDS = ("pause_service", "pause_service", "kill_service")
# Faults on the wire (the soak's loader reaches its services through the fault points, see
# SOAK_LOADER): a commit's answer lost or replaced after it applied, refused, held, late; TCP
# latency, resets, throttling and answers cut in the middle on Kafka, MinIO and the catalog.
_WIRE_KINDS = (
    "catalog_http",
    "catalog_http",
    "catalog_http",
    "wire_latency",
    "wire_reset_peer",
    "wire_limit_data",
    "wire_bandwidth",
)
_CATALOG_MODES: tuple[tuple[str, int | None], ...] = (
    ("drop_after_forward", None),
    ("status_after_forward", 500),
    ("status_after_forward", 502),
    ("status_after_forward", 504),
    ("refuse", 503),
    ("deliver_late", None),
    ("black_hole", None),
)
_WIRE_TARGETS = ("kafka", "minio", "catalog")
SOAK_LOADER: dict[str, Any] = {
    "via": ["catalog_proxy", "toxiproxy"],
    # Bounds short enough that a fault of tens of seconds is ridden out by retries and a
    # black hole ends in a retry, not in a wait as long as the fault.
    "catalog.read_timeout": "8s",
    "progress_timeout": "180s",
}
"""The soak's loader behind the fault points, for the wire kinds of its infra lane."""
_MAINTENANCE_KINDS = ("optimize", "expire_snapshots", "remove_orphan_files", "retention_delete")
_TRAFFIC_KINDS = ("burst", "malformed_traffic")

PROFILES: dict[str, Profile] = {
    "ci": Profile(
        "ci",
        {
            "loader": Lane((11, 13), (4, 12), _CI_LOADER_KINDS),
            "infra": Lane((4, 6), (10, 24), _INFRA_KINDS),
            "maintenance": Lane((5, 7), (8, 20), _MAINTENANCE_KINDS),
            "schema": Lane((6, 8), (6, 15), ("schema",)),
            "topic": Lane((1, 1), (20, 80), ("add_partitions",)),
            "traffic": Lane((14, 18), (3, 7), _TRAFFIC_KINDS),
        },
        min_faults=40,
        min_loader_kills=10,
        min_kinds=12,
        max_pause_s=15,
        services=("kafka", "minio", "catalog"),
        await_timeout_s=300.0,
        restarts=("launch",),
        zombie_successor="took_over",
    ),
    "soak": Profile(
        "soak",
        {
            "loader": Lane((30, 36), (2, 14), _SOAK_LOADER_KINDS),
            "infra": Lane((20, 26), (10, 40), (*_INFRA_KINDS, "pause_service", *_WIRE_KINDS)),
            "maintenance": Lane((40, 48), (4, 18), _MAINTENANCE_KINDS),
            "schema": Lane((55, 65), (3, 12), ("schema",)),
            "topic": Lane((0, 1), (60, 600), ("add_partitions",)),
            "traffic": Lane((110, 130), (1, 7), _TRAFFIC_KINDS),
        },
        min_faults=200,
        min_loader_kills=10,
        min_kinds=15,
        max_examples=1000,
        await_timeout_s=900.0,
    ),
    "break": Profile(
        "break",
        {
            "loader": Lane(
                (1, 3), (15, 15), ("kill_now", "kill_commit", "kill_after_commit", "zombie")
            ),
            "infra": Lane((0, 1), (10, 10), _INFRA_KINDS),
            "maintenance": Lane((0, 1), (10, 10), _MAINTENANCE_KINDS),
            "schema": Lane((0, 1), (10, 10), ("schema",)),
            "traffic": Lane((0, 2), (5, 5), _TRAFFIC_KINDS),
        },
        max_examples=12,
        varied=False,
        monitor_every_s=5.0,
        shrink=True,
        shrink_seconds=900.0,
        max_pause_s=10,
        services=("kafka", "minio", "catalog"),
        await_timeout_s=300.0,
    ),
}


def _event(kind: str, params: Any, duration: float = 0.0) -> tuple[str, Any, float]:
    return (kind, params, duration)


def _choice(profile: Profile, values: Sequence[Any]) -> st.SearchStrategy[Any]:
    """One of ``values``; the first only, when the profile keeps details fixed."""
    return st.sampled_from(list(values)) if profile.varied else st.just(values[0])


# How long a fault at a point waits for its armed start to reach the point (a start and its
# first batch: 30-85 s on a busy 2-core machine); after it, the fault is killed from outside and
# counted as not landed.
POINT_TIMEOUT_S = 180.0


def _loader_event(name: str, profile: Profile) -> st.SearchStrategy[tuple[str, Any, float]]:
    restart = _choice(profile, list(profile.restarts))
    if name.startswith("kill_at_"):
        kill = KillLoaderParams(
            at=name.removeprefix("kill_at_"),  # type: ignore[arg-type]
            commit_timeout_s=POINT_TIMEOUT_S,
            restart="launch",  # the next fault is armed on this start: it waits for it anyway
        )
        return st.just(_event("kill_loader", kill))
    if name.startswith("zombie_at_"):
        zombie_params = st.builds(
            ZombieParams,
            freeze=st.just(name.removeprefix("zombie_at_")),
            run_s=_choice(profile, [4.0, 2.0, 6.0]),
            after_commits=st.just(0),
            freeze_timeout_s=st.just(POINT_TIMEOUT_S),
            step_down_s=st.just(120.0),
            restart=st.just("launch"),
            # Fenced once the successor has taken the table over; its start need not be awaited.
            successor=st.just("took_over"),
        )
        return zombie_params.map(lambda p: _event("zombie_loader", p))
    if name == "kill_now":
        params = st.builds(KillLoaderParams, at=st.just("now"), restart=restart)
        return params.map(lambda p: _event("kill_loader", p))
    if name == "kill_start":
        params = st.builds(
            KillLoaderParams,
            at=st.just("start"),
            max_delay_s=st.just(16.0),
            restart=st.just("launch"),
        )
        return params.map(lambda p: _event("kill_loader", p))
    if name == "kill_commit":
        params = st.builds(
            KillLoaderParams,
            at=st.just("commit"),
            commit_timeout_s=st.just(60.0),
            max_delay_s=_choice(profile, [0.0, 0.3, 1.0]),
            restart=restart,
        )
        return params.map(lambda p: _event("kill_loader", p))
    if name == "kill_after_commit":
        params = st.builds(
            KillLoaderParams,
            at=st.just("after_commit"),
            commit_timeout_s=st.just(300.0),
            restart=restart,
        )
        return params.map(lambda p: _event("kill_loader", p))
    points = {"zombie_now": ["now"], "zombie_start": ["start"]}.get(
        name, ["planned", "write", "publish", "now"]
    )
    zombie = st.builds(
        ZombieParams,
        freeze=st.sampled_from(points),
        run_s=_choice(profile, [4.0, 2.0, 6.0]),
        after_commits=st.just(0 if name != "zombie" else profile.zombie_after_commits),
        freeze_timeout_s=st.just(240.0),
        step_down_s=st.just(120.0),
        # Frozen during a start-up, a zombie needs only the successor's take-over to be fenced.
        successor=st.just("took_over" if name == "zombie_start" else profile.zombie_successor),
    )
    return zombie.map(lambda p: _event("zombie_loader", p))


def _ints(profile: Profile, low: int, high: int, fixed: int) -> st.SearchStrategy[int]:
    """An integer in [low, high]; ``fixed`` when the profile keeps details fixed."""
    return st.integers(low, high) if profile.varied else st.just(fixed)


def _wire_event(name: str, profile: Profile) -> st.SearchStrategy[tuple[str, Any, float]]:
    """A fault on the wire: one catalog HTTP rule, or one Toxiproxy toxic on one target."""
    if name == "catalog_http":

        def catalog(t: tuple[tuple[str, int | None], int, int]) -> tuple[str, Any, float]:
            (mode, status), times, seconds = t
            if mode == "black_hole":  # every request held for a while, past the read timeout
                params = CatalogHttpParams(mode="black_hole", on="any", times=None)
                return _event("catalog_http", params, float(seconds))
            params = CatalogHttpParams(
                mode=mode,  # type: ignore[arg-type]
                on="commit",
                times=times,
                status=status,
                late_s=3.0,
                wait_s=30.0,
            )
            return _event("catalog_http", params, 0.0)

        return st.tuples(
            _choice(profile, _CATALOG_MODES), _ints(profile, 1, 3, 1), _ints(profile, 5, 40, 20)
        ).map(catalog)
    targets = _choice(profile, _WIRE_TARGETS)
    seconds = _ints(profile, 2, 20, 5)

    def toxic(t: tuple[str, int]) -> tuple[str, Any, float]:
        target, held = t
        params: Any = {
            "wire_latency": lambda: WireLatencyParams(target, latency_ms=800, jitter_ms=200),  # type: ignore[arg-type]
            "wire_reset_peer": lambda: WireResetPeerParams(target, toxicity=0.5),  # type: ignore[arg-type]
            "wire_limit_data": lambda: WireLimitDataParams(target, bytes=2048, toxicity=0.5),  # type: ignore[arg-type]
            "wire_bandwidth": lambda: WireBandwidthParams(target, rate_kb_s=256),  # type: ignore[arg-type]
        }[name]()
        return _event(name, params, float(held))

    return st.tuples(targets, seconds).map(toxic)


def _infra_event(name: str, profile: Profile) -> st.SearchStrategy[tuple[str, Any, float]]:
    if name in _WIRE_KINDS:
        return _wire_event(name, profile)
    services = st.sampled_from(list(profile.services))
    if name == "pause_service":
        seconds = _ints(profile, 1, profile.max_pause_s, 5)
        return st.tuples(services, seconds).map(
            lambda t: _event("pause_service", PauseServiceParams(t[0]), float(t[1]))  # type: ignore[arg-type]
        )
    at = _choice(profile, ["now", "commit"])
    return st.tuples(services, at, _ints(profile, 0, 15, 5)).map(
        lambda t: _event(
            "kill_service",
            KillServiceParams(t[0], at=t[1], commit_timeout_s=60.0),  # type: ignore[arg-type]
            float(t[2]),
        )
    )


def _maintenance_event(name: str, profile: Profile) -> st.SearchStrategy[tuple[str, Any, float]]:
    if name == "optimize":
        return st.just(_event("optimize", OptimizeParams()))
    if name == "expire_snapshots":
        return _choice(profile, [0.0, 60.0]).map(
            lambda r: _event("expire_snapshots", ExpireParams(retention_s=r, timeout_s=30.0))
        )
    if name == "remove_orphan_files":
        return st.just(_event("remove_orphan_files", OrphansParams(retention_s=300.0)))
    return _ints(profile, 5, 25, 10).map(
        lambda d: _event("retention_delete", RetentionParams(older_than_days=float(d)))
    )


def _traffic_event(name: str, profile: Profile) -> st.SearchStrategy[tuple[str, Any, float]]:
    if name == "burst":
        fraction = _choice(profile, [0.0, 0.05, 0.1])
        return st.tuples(_ints(profile, 2, 15, 10), fraction).map(
            lambda t: _event("burst", BurstParams(seconds=t[0] / 10, malformed_fraction=t[1]))
        )
    parts = (_ints(profile, 0, 50, 20), _ints(profile, 20, 100, 50), _ints(profile, 1, 5, 3))
    return st.tuples(*parts).map(
        lambda t: _event(
            "malformed_traffic",
            MalformedParams(fraction=t[0] / 100, rate=float(t[1]), seconds=float(t[2])),
        )
    )


def _kind_strategy(lane: str, name: str, profile: Profile) -> st.SearchStrategy[Any]:
    if lane == "loader":
        return _loader_event(name, profile)
    if lane == "infra":
        return _infra_event(name, profile)
    if lane == "maintenance":
        return _maintenance_event(name, profile)
    if lane == "traffic":
        return _traffic_event(name, profile)
    return st.just(_event("add_partitions", AddPartitionsParams(add=1)))


def _schema_ops(columns: Mapping[str, str], renamed: int) -> list[tuple[str, Any]]:
    """The schema changes that apply to ``columns`` (name to Trino type), in a fixed order."""
    ops: list[tuple[str, Any]] = []
    for name in (*INT_POOL, *FLOAT_POOL):
        if name not in columns:
            kind = "INTEGER" if name in INT_POOL else "REAL"
            ops.append(("add_column", AddColumnParams(name, kind)))  # type: ignore[arg-type]
    for name, kind in columns.items():
        if kind in ("integer", "real"):
            ops.append(
                ("widen_column", WidenParams(name, "BIGINT" if kind == "integer" else "DOUBLE"))
            )
    for name in columns:
        if "_r" not in name:
            ops.append(("rename_column", RenameParams(name, f"{name}_r{renamed}")))
        ops.append(("drop_column", ColumnParams(name)))
    return ops


@st.composite
def _schema_lane(draw: Any, lane: Lane) -> list[tuple[float, tuple[str, Any, float]]]:
    columns = dict(START_COLUMNS)
    renamed = 0
    out = []
    for _ in range(draw(st.integers(*lane.events))):
        gap = draw(st.integers(*lane.gap_s))
        kind, params = draw(st.sampled_from(_schema_ops(columns, renamed)))
        if kind == "add_column":
            columns[params.column] = params.type.lower()
        elif kind == "widen_column":
            columns[params.column] = params.to.lower()
        elif kind == "rename_column":
            columns[params.to] = columns.pop(params.column)
            renamed += 1
        else:
            columns.pop(params.column)
        out.append((float(gap), _event(kind, params)))
    return out


def _lane(lane_name: str, lane: Lane, profile: Profile) -> st.SearchStrategy[Any]:
    if lane_name == "schema":
        return _schema_lane(lane)
    return _dealt(lane_name, lane, profile)


def _kinds_of(card: Card) -> tuple[str, ...]:
    return (card,) if isinstance(card, str) else card


@st.composite
def _dealt(
    draw: Any, lane_name: str, lane: Lane, profile: Profile
) -> list[tuple[float, tuple[str, Any, float]]]:
    """A lane's events: its cards dealt in rounds, each round in an order of its own.

    The order, and the kind a card of several kinds gives, come from a ``Random`` drawn once
    per schedule (its seed is part of the schedule's data, so a seed replays it), not from a
    Hypothesis choice per card: those lean towards the first of several options, so a card's
    first kind (a kill at ``planned``, the cheapest point) would come far more often than the
    others. Schedules meant to be independent are each drawn by a search of their own
    (``draw_schedule``): the examples of one search repeat each other's choices.
    """
    count = draw(st.integers(*lane.events))
    deal = draw(st.integers(0, 2**32 - 1))
    if deal == 0 and profile.varied:
        # Hypothesis's first example makes every choice its simplest: the lanes at their
        # smallest, every gap its shortest, and this deal. A varied profile never runs it.
        reject()
    rng = random.Random(deal)
    events: list[tuple[float, tuple[str, Any, float]]] = []
    while len(events) < count:
        order = list(lane.kinds)
        rng.shuffle(order)
        for card in order[: count - len(events)]:
            kind = rng.choice(_kinds_of(card))
            gap = float(draw(st.integers(*lane.gap_s)))
            events.append((gap, draw(_kind_strategy(lane_name, kind, profile))))
    return events


def _assemble(lanes: Sequence[list[tuple[float, tuple[str, Any, float]]]]) -> Schedule:
    faults = []
    for events in lanes:
        at = 0.0
        for gap, (kind, params, duration) in events:
            at += gap
            faults.append(ScheduledFault(at, kind, params, duration))
    return Schedule(tuple(sorted(faults, key=lambda f: f.at_s)))


def lane_counts(schedule: Schedule) -> dict[str, int]:
    """Faults per kind, with loader kills and zombies named apart."""
    return dict(schedule.counts())


def without_lanes(profile: Profile, lanes: Sequence[str]) -> Profile:
    """``profile`` with ``lanes`` left out: nothing is drawn for them (a soak of maintenance and
    schema faults with no loader fault: ``loader``, ``infra``).

    Its minimums shrink to what the lanes kept can reach: the faults in proportion to the lanes'
    smallest counts, the loader kills to none without the loader lane, and the kinds to one
    (a kind's name in a lane is not the kind a schedule counts: ``kill_at_write`` is a
    ``kill_loader``).

    Raises:
        ValueError: a lane the profile does not have, or none left.
    """
    unknown = sorted(set(lanes) - set(profile.lanes))
    if unknown:
        raise ValueError(f"no lane {unknown} in profile {profile.name}: {sorted(profile.lanes)}")
    kept = {name: lane for name, lane in profile.lanes.items() if name not in lanes}
    if not kept:
        raise ValueError(f"every lane of profile {profile.name} left out")
    if len(kept) == len(profile.lanes):
        return profile
    share = sum(lane.events[0] for lane in kept.values()) / sum(
        lane.events[0] for lane in profile.lanes.values()
    )
    return dataclasses.replace(
        profile,
        lanes=kept,
        min_faults=int(profile.min_faults * share),
        min_loader_kills=profile.min_loader_kills if "loader" in kept else 0,
        min_kinds=1,
    )


def schedules(profile: Profile) -> st.SearchStrategy[Schedule]:
    """Schedules of ``profile``'s size: fewer faults, kills or kinds than it asks are filtered
    out, and a varied profile (``ci``, ``soak``) never runs Hypothesis's simplest schedule."""
    parts = [_lane(name, lane, profile) for name, lane in profile.lanes.items()]

    def enough(s: Schedule) -> bool:
        counts = s.counts()
        kills = counts.get("kill_loader", 0)
        return (
            len(s.faults) >= profile.min_faults
            and kills >= profile.min_loader_kills
            and len(counts) >= profile.min_kinds
            and bool(s.faults)
        )

    return st.tuples(*parts).map(_assemble).filter(enough)


def draw_schedule(profile: Profile, seed: int) -> Schedule:
    """One schedule of ``profile``, drawn by a search of its own seeded with ``seed``.

    Each call is independent of the others (the examples of one search are not: Hypothesis
    makes later ones from earlier ones' choices), and the same seed draws the same schedule.
    """
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    drawn: list[Schedule] = []

    @hypothesis_seed(seed)
    @settings(
        max_examples=1,
        phases=[Phase.generate],
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(schedules(profile))
    def draw(schedule: Schedule) -> None:
        drawn.append(schedule)

    draw()
    return drawn[-1]


@dataclass(frozen=True)
class WorldOptions:
    """Settings of a generated world beyond the defaults.

    Attributes:
        loader: ``[loader]`` overrides (a break: ``disable = ["exactly_once"]``, ``disable =
            ["fencing"]``).
        trickle_rate: Messages per second in the background.
    """

    loader: Mapping[str, Any] = field(default_factory=dict)
    trickle_rate: float = 5.0


def scenario_doc(
    schedule: Schedule, profile: Profile, world: WorldOptions | None = None, *, name: str
) -> dict[str, Any]:
    """The scenario a generated schedule is played as (and written as when it fails).

    Args:
        schedule: The timed faults.
        profile: Its profile (live check interval, catch-up timeout).
        world: Loader overrides and the trickle.
        name: The scenario's name.

    Returns:
        The decoded form of a scenario file (``harness.scenarios.model.parse`` reads it).
    """
    world = world or WorldOptions()
    counts = ", ".join(f"{n} {k}" for k, n in sorted(schedule.counts().items()))
    return {
        "title": f"Generated fault schedule ({profile.name}): {len(schedule.faults)} faults",
        "description": (
            f"A schedule drawn by Hypothesis ({profile.name} profile): {counts}. Lanes play side "
            "by side against one topic, table and loader while a trickle of messages flows; the "
            "invariants are checked live and after everything is healed."
        ),
        "topic": {"partitions": PARTITIONS, "dead_letter": True},
        "table": {"extra_columns": [[c, _TRINO_TYPE[t]] for c, t in START_COLUMNS.items()]},
        "loader": {**LOADER, **dict(world.loader)},
        "workload": dict(WORKLOAD),
        "steps": [
            {"do": "trickle", "action": "start", "rate": world.trickle_rate},
            {
                "do": "schedule",
                "monitor_every_s": profile.monitor_every_s,
                "events": schedule.to_docs(),
            },
            {"do": "trickle", "action": "stop"},
            {"do": "start_loader", "only_if_stopped": True},
            {"do": "await_loaded", "timeout_s": profile.await_timeout_s, "skip_if_failed": True},
            {"do": "stop_loader"},
        ],
        "checks": [{"check": c, **CHECK_PARAMS.get(c, {})} for c in CHECKS],
    }
