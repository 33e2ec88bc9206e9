"""Messages: the pure, seeded stream of Kafka records a run publishes.

:func:`generate` turns a :class:`GenerationConfig` into an iterator of
:class:`Message` without touching Kafka, so scenarios, property tests and
benchmarks share exactly what the publisher sends. The same config (seed and
anchor included) yields byte-identical keys and payloads.

Randomness is split into independent seeded streams (row values, per-message
choices, malformation and drift details) so that turning on malformations or
drift leaves the values of every row that stays valid unchanged.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from pyiceberg.schema import Schema

from icefloe.publisher.clock import ClockConfig, EventClock
from icefloe.publisher.drift import DriftConfig, Drifter
from icefloe.publisher.malformations import (
    DEFAULT_DEEP_NESTING_DEPTH,
    DEFAULT_MAX_MESSAGE_BYTES,
    Malformation,
    MalformationContext,
    resolve_kinds,
)
from icefloe.publisher.rows import ReferencePools, ReferenceRows, json_text, reference_schema
from icefloe.publisher.schema_rows import SchemaRows, SchemaRowsConfig

KeyMode = Literal["none", "event_id", "random", "fixed"]

#: Header names attached when :attr:`GenerationConfig.headers` is set.
HEADER_EVENT_ID = "icefloe-event-id"
HEADER_KIND = "icefloe-kind"


class Message(NamedTuple):
    """One Kafka record to publish.

    Attributes:
        seq: Position in the run, from 0.
        key: Kafka key bytes, or ``None``.
        value: Kafka value bytes; ``None`` is a tombstone (a malformation).
        headers: Kafka headers, or ``None``.
        partition: Target partition, or ``-1`` to let the partitioner choose.
        event_id: Unique id of the message (also inside valid payloads).
        kind: Malformation name, or ``None`` for a valid row.
        target: Field path the loader should report for a malformation.
        drift: Names of the drifts applied to a valid row.
    """

    seq: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] | None
    partition: int
    event_id: str
    kind: str | None
    target: str | None
    drift: tuple[str, ...]

    @property
    def status(self) -> str:
        """``"valid"`` or ``"malformed"``."""
        return "valid" if self.kind is None else "malformed"


@dataclass(frozen=True)
class KeySpec:
    """How messages are keyed.

    Attributes:
        mode: ``none`` (null keys), ``event_id``, ``random`` (uniform over
            ``key-0``..``key-{space-1}``) or ``fixed`` (always ``value``).
        space: Key space size for ``random``.
        value: The key for ``fixed``.
    """

    mode: KeyMode = "none"
    space: int = 1000
    value: str = ""

    def __post_init__(self) -> None:
        if self.mode not in ("none", "event_id", "random", "fixed"):
            raise ValueError(f"unknown key mode {self.mode!r}")
        if self.mode == "random" and self.space < 1:
            raise ValueError("random key space must be >= 1")

    @classmethod
    def parse(cls, text: str) -> KeySpec:
        """Parse the CLI form: ``none``, ``event-id``, ``random:N`` or ``fixed:VALUE``.

        Args:
            text: The CLI form.

        Returns:
            The spec.

        Raises:
            ValueError: For any other form.
        """
        head, _, rest = text.partition(":")
        head = head.replace("-", "_")
        if head in ("none", "event_id") and not rest:
            return cls(head)  # type: ignore[arg-type]
        if head == "random":
            try:
                return cls("random", space=int(rest))
            except ValueError as exc:
                raise ValueError(f"expected random:N, got {text!r}") from exc
        if head == "fixed" and rest:
            return cls("fixed", value=rest)
        raise ValueError(f"expected none, event-id, random:N or fixed:VALUE, got {text!r}")


@dataclass(frozen=True)
class GenerationConfig:
    """Everything that decides the content of a run's messages.

    Attributes:
        seed: Seeds every random stream; ``None`` picks one (see :meth:`resolved`).
        pool_seed: Seeds the reference table's value pools instead of ``seed`` (``None``:
            ``seed``). Building them takes about 2 s of Faker calls; the phases of one run
            share them, so a phase starts (and is regenerated for a check) without it.
        clock: Anchor and window of event times.
        schema: Table schema; ``None`` means the reference table (fast path).
        rows: Null/collection knobs for schemas other than the reference.
        key: How messages are keyed.
        partitions: Partitions to spread messages over (seeded, uniform);
            ``None`` leaves it to the producer's partitioner.
        malformed_fraction: Share of messages replaced by malformed ones.
        malformed_kinds: Catalog names to draw from; empty means all that apply.
        max_message_bytes: The loader's payload limit (``oversized`` goes over it).
        deep_nesting_depth: Depth of ``deep_nesting`` payloads.
        drift: Schema drift of valid rows.
        headers: Attach ``icefloe-event-id`` and ``icefloe-kind`` headers.
    """

    seed: int | None = None
    pool_seed: int | None = None
    clock: ClockConfig = field(default_factory=ClockConfig)
    schema: Schema | None = None
    rows: SchemaRowsConfig = field(default_factory=SchemaRowsConfig)
    key: KeySpec = field(default_factory=KeySpec)
    partitions: tuple[int, ...] | None = None
    malformed_fraction: float = 0.0
    malformed_kinds: tuple[str, ...] = ()
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    deep_nesting_depth: int = DEFAULT_DEEP_NESTING_DEPTH
    drift: DriftConfig = field(default_factory=DriftConfig)
    headers: bool = False

    def __post_init__(self) -> None:
        if not 0.0 <= self.malformed_fraction <= 1.0:
            raise ValueError(
                f"malformed_fraction must be within [0, 1], got {self.malformed_fraction}"
            )
        if self.partitions is not None and (
            not self.partitions or any(p < 0 for p in self.partitions)
        ):
            raise ValueError("partitions must be a non-empty tuple of partition numbers >= 0")
        if self.max_message_bytes < 1:
            raise ValueError("max_message_bytes must be >= 1")

    def resolved(self) -> GenerationConfig:
        """Return this config with a concrete seed, drawing one if unset.

        Returns:
            A config whose ``seed`` is an int (recorded in ledgers for replay).
        """
        if self.seed is not None:
            return self
        return dataclasses.replace(self, seed=random.SystemRandom().randrange(2**63))

    def table_schema(self) -> Schema:
        """The schema rows follow: :attr:`schema` or the reference schema."""
        return self.schema if self.schema is not None else reference_schema()

    def describe(self) -> dict[str, Any]:
        """A JSON-ready summary of the config, for ledger headers.

        Returns:
            Plain values only; the schema as Iceberg schema JSON.
        """
        return {
            "seed": self.seed,
            "pool_seed": self.pool_seed,
            "anchor": self.clock.anchor.isoformat(),
            "window_days": self.clock.window_days,
            "schema": "reference" if self.schema is None else self.schema.model_dump(mode="json"),
            "key": {"mode": self.key.mode, "space": self.key.space, "value": self.key.value},
            "partitions": list(self.partitions) if self.partitions is not None else None,
            "malformed_fraction": self.malformed_fraction,
            "malformed_kinds": list(self.malformed_kinds),
            "max_message_bytes": self.max_message_bytes,
            "drift": {
                "fraction": self.drift.fraction,
                "extra_fields": self.drift.extra_fields,
                "missing_fields": self.drift.missing_fields,
                "camel_case": self.drift.camel_case,
                "envelope": self.drift.envelope,
                "extra_field_specs": [
                    f"{s.name}={s.generator}" for s in self.drift.extra_field_specs
                ],
            },
        }


def event_id_prefix(seed: int) -> str:
    """Return the 24-character UUID prefix shared by a seed's event ids.

    Event ids are canonical version-4 UUID strings whose last 12 hex digits are
    the message sequence number: unique within a run by construction, and
    distinct across seeds with overwhelming probability.

    Args:
        seed: The run's seed.

    Returns:
        Text like ``1a2b3c4d-5e6f-4a7b-a8c9-``.
    """
    h = f"{random.Random(f'icefloe-event-id:{seed}').getrandbits(72):018x}"
    return f"{h[0:8]}-{h[8:12]}-4{h[12:15]}-a{h[15:18]}-"


def generate(config: GenerationConfig, count: int | None = None) -> Iterator[Message]:
    """Yield the run's messages, in order, without Kafka.

    Args:
        config: What to generate; an unset seed is drawn (use
            :meth:`GenerationConfig.resolved` first to know it).
        count: Number of messages; ``None`` for an endless stream.

    Returns:
        An iterator of :class:`Message`.

    Raises:
        ValueError: For malformation kinds or extra-field generators that the
            schema or registry cannot serve (raised at once, not on iteration).
        publisher.schema_rows.UnsupportedTypeError: For a schema type with no
            JSON convention.
    """
    config = config.resolved()
    seed = config.seed
    assert seed is not None
    clock = EventClock(config.clock)
    row_rng = random.Random(f"icefloe-rows:{seed}")
    choice_rng = random.Random(f"icefloe-choices:{seed}")
    detail_rng = random.Random(f"icefloe-details:{seed}")
    schema = config.table_schema()
    source: ReferenceRows | SchemaRows
    if config.schema is None:
        pools = ReferencePools.for_seed(seed if config.pool_seed is None else config.pool_seed)
        source = ReferenceRows(pools, clock, row_rng)
    else:
        source = SchemaRows(config.schema, seed, clock, row_rng, config.rows)
    kinds = resolve_kinds(config.malformed_kinds, schema) if config.malformed_fraction else ()
    if config.malformed_fraction and not kinds:
        raise ValueError("no malformation applies to this schema")
    drifter = Drifter(config.drift, schema, seed, clock) if config.drift.active else None
    return _stream(config, source, schema, kinds, drifter, choice_rng, detail_rng, count)


def _stream(
    config: GenerationConfig,
    source: ReferenceRows | SchemaRows,
    schema: Schema,
    kinds: tuple[Malformation, ...],
    drifter: Drifter | None,
    choice_rng: random.Random,
    detail_rng: random.Random,
    count: int | None,
) -> Iterator[Message]:
    assert config.seed is not None
    prefix = event_id_prefix(config.seed)
    seqs = range(count) if count is not None else itertools.count()

    simple = (
        not kinds
        and drifter is None
        and config.partitions is None
        and not config.headers
        and config.key.mode in ("none", "event_id")
    )
    if simple:
        # Hot path: no per-message choices beyond the row itself.
        text = source.text
        keyed = config.key.mode == "event_id"
        for seq in seqs:
            eid = prefix + format(seq, "012x")
            yield Message(
                seq,
                eid.encode() if keyed else None,
                text(eid).encode(),
                None,
                -1,
                eid,
                None,
                None,
                (),
            )
        return

    key = config.key
    fixed_key = key.value.encode("utf-8")
    partitions = config.partitions
    malformed_fraction = config.malformed_fraction
    drift_fraction = config.drift.fraction
    for seq in seqs:
        eid = prefix + format(seq, "012x")
        kind = target = None
        drift: tuple[str, ...] = ()
        if kinds and choice_rng.random() < malformed_fraction:
            entry = kinds[int(choice_rng.random() * len(kinds))]
            ctx = MalformationContext(
                source.row(eid),
                schema,
                detail_rng,
                config.max_message_bytes,
                config.deep_nesting_depth,
            )
            built = entry.build(ctx)
            value, kind, target = built.value, entry.name, built.path
        elif drifter is not None and choice_rng.random() < drift_fraction:
            doc, drift = drifter.apply(source.row(eid), eid, detail_rng)
            value = json_text(doc).encode()
        else:
            value = source.text(eid).encode()
        if key.mode == "none":
            kbytes = None
        elif key.mode == "event_id":
            kbytes = eid.encode()
        elif key.mode == "fixed":
            kbytes = fixed_key
        else:
            kbytes = f"key-{int(choice_rng.random() * key.space)}".encode()
        partition = (
            partitions[int(choice_rng.random() * len(partitions))] if partitions is not None else -1
        )
        headers = (
            ((HEADER_EVENT_ID, eid.encode()), (HEADER_KIND, (kind or "valid").encode()))
            if config.headers
            else None
        )
        yield Message(seq, kbytes, value, headers, partition, eid, kind, target, drift)
