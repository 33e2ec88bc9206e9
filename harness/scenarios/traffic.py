"""Traffic: the run's publish phases, each a seeded publisher run with a ledger of its own.

A phase publishes generated messages to the run's topic (in the foreground or in a background
thread) and writes its ledger under ``ledgers/<phase>.jsonl``. Its seed comes from the run's
seed and the phase's name, so ``--seed`` replays the same messages. The scenario's
``[workload]`` table is a :class:`Workload`; a ``publish`` step overrides some of its fields.
"""

from __future__ import annotations

import datetime as dt
import random
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icefloe.harness.history import History
from icefloe.harness.scenarios.params import as_dict
from icefloe.publisher.ledger import Ledger, LedgerEntry
from icefloe.publisher.messages import event_id_prefix

__all__ = ["DEFAULT_ANCHOR", "Phase", "Traffic", "Workload", "anchor_moment", "generation"]

DEFAULT_ANCHOR = "2025-01-01T00:00:00+00:00"


@dataclass(frozen=True)
class Workload:
    """What a publish phase sends (the scenario's ``[workload]``, a step's overrides).

    Attributes:
        count: Messages to send (``None``: bounded by ``duration_s``).
        rate: Messages per second (``None``: as fast as possible).
        duration_s: Stop after this long.
        key: Keying (``none``, ``event-id``, ``random:N``).
        partitions: Spread messages over these partitions (``None``: the partitioner).
        malformed_fraction: Share of malformed messages.
        malformed_kinds: Malformation names to draw from (empty: all that apply).
        anchor: Event times end here (ISO time, or ``now``).
        window_days: Event times spread over this many days before the anchor.
        drift_fraction: Share of valid rows that drift (when a drift is set).
        camel_case: camelCase field names.
        envelope: Wrap rows in a CloudEvents-like envelope.
        extra_fields: Extra fields, ``NAME=GENERATOR`` (see ``icefloe publish --help``).
    """

    count: int | None = None
    rate: float | None = None
    duration_s: float | None = None
    key: str = "none"
    partitions: tuple[int, ...] | None = None
    malformed_fraction: float = 0.0
    malformed_kinds: tuple[str, ...] = ()
    anchor: str = DEFAULT_ANCHOR
    window_days: float = 30.0
    drift_fraction: float = 1.0
    camel_case: bool = False
    envelope: bool = False
    extra_fields: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if not 0.0 <= self.malformed_fraction <= 1.0:
            raise ValueError("malformed_fraction must be within [0, 1]")
        if self.rate is not None and self.rate <= 0:
            raise ValueError("rate must be > 0")
        from icefloe.publisher.drift import ExtraFieldSpec
        from icefloe.publisher.messages import KeySpec

        KeySpec.parse(self.key)
        for spec in self.extra_fields:
            ExtraFieldSpec.parse(spec)
        anchor_moment(self.anchor)


def anchor_moment(text: str) -> dt.datetime:
    """The anchor as an aware time (``now`` is the current time)."""
    if text == "now":
        return dt.datetime.now(dt.UTC)
    moment = dt.datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def generation(workload: Workload, seed: int, pool_seed: int | None = None) -> Any:
    """The publisher's generation settings for a workload, a phase seed and the run's value
    pools' seed (``GenerationConfig.pool_seed``)."""
    from icefloe.publisher.clock import ClockConfig
    from icefloe.publisher.drift import DriftConfig, ExtraFieldSpec
    from icefloe.publisher.messages import GenerationConfig, KeySpec

    return GenerationConfig(
        seed=seed,
        pool_seed=pool_seed,
        clock=ClockConfig(anchor=anchor_moment(workload.anchor), window_days=workload.window_days),
        key=KeySpec.parse(workload.key),
        partitions=workload.partitions,
        malformed_fraction=workload.malformed_fraction,
        malformed_kinds=workload.malformed_kinds,
        drift=DriftConfig(
            fraction=workload.drift_fraction,
            camel_case=workload.camel_case,
            envelope=workload.envelope,
            extra_field_specs=tuple(ExtraFieldSpec.parse(s) for s in workload.extra_fields),
        ),
    )


@dataclass
class Phase:
    """One publish phase.

    Attributes:
        name: Unique in the run.
        seed: Its generation seed.
        workload: What it sends.
        ledger_path: Its ledger.
        thread: The background thread, if it runs in one.
        error: Why it failed, if it did.
        done: Finished (its ledger is complete).
        stop: Set to end it before its count (``Traffic.end``).
    """

    name: str
    seed: int
    workload: Workload
    ledger_path: Path
    thread: threading.Thread | None = None
    error: str | None = None
    done: bool = False
    stop: threading.Event = field(default_factory=threading.Event)

    @property
    def prefix(self) -> str:
        """The event-id prefix shared by every message of the phase."""
        return event_id_prefix(self.seed)


class Traffic:
    """The run's publish phases.

    Args:
        bootstrap_servers: Kafka.
        topic: Where to publish.
        run_dir: The run's folder (ledgers go in ``ledgers/``).
        history: Where publishes are recorded.
        seed: The run's seed.
    """

    def __init__(
        self, bootstrap_servers: str, topic: str, run_dir: Path, history: History, seed: int
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.run_dir = run_dir
        self.history = history
        self.seed = seed
        self.phases: dict[str, Phase] = {}
        self._lock = threading.Lock()

    def next_name(self, stem: str = "phase") -> str:
        """A phase name not used yet (``stem``, then ``stem-2``...)."""
        with self._lock:
            n = len(self.phases)
            name = stem if stem not in self.phases else f"{stem}-{n}"
            while name in self.phases:
                n += 1
                name = f"{stem}-{n}"
            return name

    def publish(self, name: str, workload: Workload, *, background: bool = False) -> Phase:
        """Publish one phase (in a background thread when asked).

        Args:
            name: The phase's name (unique in the run).
            workload: What to send.
            background: Return at once; the phase runs in its own thread.

        Returns:
            The phase (``done`` once its ledger is complete).

        Raises:
            ValueError: For a name already used.
        """
        from icefloe.publisher.producer import Publisher, PublisherConfig

        seed = random.Random(f"{self.seed}:{name}").randrange(2**62)
        phase = Phase(name, seed, workload, self.run_dir / "ledgers" / f"{name}.jsonl")
        with self._lock:
            if name in self.phases:
                raise ValueError(f"publish phase {name!r} used twice")
            self.phases[name] = phase
        config = PublisherConfig(
            generation=generation(workload, seed, self.seed),
            ledger_dir=self.run_dir / "ledgers",
            progress=False,
            # New partitions must be seen within seconds, not librdkafka's 5 minutes.
            producer_overrides={"topic.metadata.refresh.interval.ms": 1000},
        )
        publisher = Publisher(self.bootstrap_servers, self.topic, config)

        def work() -> None:
            self.history.record(
                "publish",
                "invoke",
                "publish",
                phase=name,
                seed=seed,
                pool_seed=self.seed,
                workload=as_dict(workload),
                ledger=f"ledgers/{name}.jsonl",
            )
            try:
                result = publisher.publish(
                    workload.count,
                    rate=workload.rate,
                    duration=workload.duration_s,
                    ledger_path=phase.ledger_path,
                    stop=phase.stop,
                )
                self.history.record(
                    "publish",
                    "ok",
                    "publish",
                    phase=name,
                    sent=result.sent,
                    valid=result.valid,
                    malformed=result.malformed,
                    failed=result.failed,
                    seconds=round(result.elapsed, 2),
                    resends=result.resends,
                )
            except Exception as exc:
                phase.error = f"{type(exc).__name__}: {exc}"
                self.history.record("publish", "fail", "publish", phase=name, error=phase.error)
            finally:
                phase.done = True

        if background:
            phase.thread = threading.Thread(target=work, name=f"publish-{name}", daemon=True)
            phase.thread.start()
        else:
            work()
        return phase

    def end(self, name: str | None = None) -> list[str]:
        """End background phases (all, or the one named) that still publish, and wait for
        their ledgers; return the names of those it ended."""
        ended = []
        for phase in list(self.phases.values()):
            if phase.thread is None or (name is not None and phase.name != name):
                continue
            if not phase.done:
                phase.stop.set()
                ended.append(phase.name)
            phase.thread.join()
        return ended

    def wait(self, name: str | None = None, timeout_s: float | None = None) -> None:
        """Wait for background phases (all, or the one named) to finish."""
        for phase in list(self.phases.values()):
            if phase.thread is not None and (name is None or phase.name == name):
                phase.thread.join(timeout_s)

    def entries(self, *, finished_only: bool = False) -> list[LedgerEntry]:
        """Every ledger entry of the run's phases (of finished ones only, when asked)."""
        out: list[LedgerEntry] = []
        for phase in list(self.phases.values()):
            if finished_only and not phase.done:
                continue
            if phase.ledger_path.exists():
                out.extend(Ledger.read(phase.ledger_path).entries)
        return out
