"""Schema rows: JSON rows for any Iceberg schema, so new tables need no new generator.

A :class:`pyiceberg.schema.Schema` (e.g. as loaded from the REST catalog) is
compiled once into a tree of small closures, one per field, each drawing a value
from a seeded :class:`random.Random`. Values follow the JSON conventions shared
with the loader's parser:

======================  ===============================================
Iceberg type            JSON value
======================  ===============================================
boolean                 ``true`` / ``false``
int, long               number within the type's range
float, double           number (floats are exactly representable in 32 bits)
decimal(p, s)           string of the exact value, e.g. ``"-12.30"``
string                  string (Faker-pooled, multi-locale UTF-8)
date                    ``"YYYY-MM-DD"``
time                    ``"HH:MM:SS.ffffff"``
timestamp(_ns)          ``"YYYY-MM-DDTHH:MM:SS.ffffff"``
timestamptz(_ns)        the same with ``Z`` or ``+hh:mm``
uuid                    canonical lower-case string
binary, fixed[L]        base64 string
list                    array
map                     object; non-string keys are rendered as their JSON text
struct                  object, nested to any depth
unknown                 ``null``
======================  ===============================================

A top-level ``event_id`` string (or uuid) column receives the message's event id.
"""

from __future__ import annotations

import base64
import functools
import random
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from faker import Faker
from pyiceberg.schema import Schema
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)

from icefloe.publisher.clock import (
    MICROS_PER_DAY,
    EventClock,
    format_date,
    format_time,
    format_timestamp,
    format_timestamptz,
)
from icefloe.publisher.rows import (
    EVENT_ID_FIELD,
    FAKER_LOCALES,
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    json_text,
)

#: The column that receives each message's event id when a schema has it.

ValueGen = Callable[[random.Random], Any]


class UnsupportedTypeError(TypeError):
    """Raised when a schema holds a type that has no JSON convention (e.g. geometry)."""


@dataclass(frozen=True)
class SchemaRowsConfig:
    """Shape knobs for generated rows.

    Attributes:
        null_fraction: Probability that an optional field, list element or map value
            is ``null``. Required fields are never null.
        max_collection_length: Upper bound on list and map sizes (inclusive).
        edge_fraction: Probability that a numeric value is a range edge (min, max,
            0, -1) instead of an ordinary draw.
    """

    null_fraction: float = 0.0
    max_collection_length: int = 4
    edge_fraction: float = 0.05

    def __post_init__(self) -> None:
        for name in ("null_fraction", "edge_fraction"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be within [0, 1], got {value}")
        if self.max_collection_length < 0:
            raise ValueError("max_collection_length must be >= 0")


@functools.lru_cache(maxsize=16)
def string_pool(seed: int, size: int = 1024) -> tuple[str, ...]:
    """Return Faker strings for ``seed``: words, names, places and sentences.

    Args:
        seed: Seeds Faker.
        size: Number of strings.

    Returns:
        A tuple of strings, identical for identical seeds.
    """
    fake = Faker(list(FAKER_LOCALES))
    fake.seed_instance(seed)
    makers = (fake.word, fake.name, fake.city, fake.sentence, fake.color_name)
    return tuple(str(makers[i % len(makers)]()) for i in range(size))


def decimal_text(unscaled: int, scale: int) -> str:
    """Render ``unscaled * 10**-scale`` exactly, without exponent notation.

    Args:
        unscaled: The unscaled integer value.
        scale: Digits after the point (>= 0).

    Returns:
        Text such as ``"-0.05"`` or ``"1234"``.
    """
    sign = "-" if unscaled < 0 else ""
    digits = str(abs(unscaled))
    if scale <= 0:
        return sign + digits
    digits = digits.rjust(scale + 1, "0")
    return f"{sign}{digits[:-scale]}.{digits[-scale:]}"


def _float32(value: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


class ValueCompiler:
    def __init__(self, seed: int, clock: EventClock, config: SchemaRowsConfig) -> None:
        self.strings = string_pool(seed)
        self.clock = clock
        self.config = config

    def integral(self, lo: int, hi: int) -> ValueGen:
        edges = (lo, hi, 0, -1)
        edge_fraction = self.config.edge_fraction

        def gen(rng: random.Random) -> int:
            roll = rng.random()
            if roll < edge_fraction:
                return edges[int(rng.random() * 4)]
            if roll < 0.5:
                return rng.randint(-1000, 1000)
            return rng.randint(lo, hi)

        return gen

    def primitive(self, kind: IcebergType) -> ValueGen:
        clock = self.clock
        strings = self.strings
        if isinstance(kind, BooleanType):
            return lambda rng: rng.random() < 0.5
        if isinstance(kind, IntegerType):
            return self.integral(INT_MIN, INT_MAX)
        if isinstance(kind, LongType):
            return self.integral(LONG_MIN, LONG_MAX)
        if isinstance(kind, FloatType):
            return lambda rng: _float32(rng.uniform(-1e6, 1e6))
        if isinstance(kind, DoubleType):
            return lambda rng: rng.uniform(-1e9, 1e9)
        if isinstance(kind, DecimalType):
            bound = 10**kind.precision - 1
            scale = kind.scale
            return lambda rng: decimal_text(rng.randint(-bound, bound), scale)
        if isinstance(kind, StringType):
            return lambda rng: strings[int(rng.random() * len(strings))]
        if isinstance(kind, DateType):
            return lambda rng: format_date(clock.instant(rng) // MICROS_PER_DAY)
        if isinstance(kind, TimeType):
            return lambda rng: format_time(int(rng.random() * MICROS_PER_DAY))
        if isinstance(kind, TimestampType | TimestampNanoType):
            return lambda rng: format_timestamp(clock.instant(rng))
        if isinstance(kind, TimestamptzType | TimestamptzNanoType):
            offsets = clock.config.offsets_minutes

            def timestamptz(rng: random.Random) -> str:
                offset = offsets[int(rng.random() * len(offsets))]
                zulu = rng.random() < 0.5
                return format_timestamptz(clock.instant(rng), offset, zulu=zulu)

            return timestamptz
        if isinstance(kind, UUIDType):
            return lambda rng: str(uuid.UUID(int=rng.getrandbits(128), version=4))
        if isinstance(kind, FixedType):
            length = len(kind)
            return lambda rng: base64.b64encode(rng.randbytes(length)).decode("ascii")
        if isinstance(kind, BinaryType):
            return lambda rng: base64.b64encode(rng.randbytes(rng.randint(0, 32))).decode("ascii")
        if isinstance(kind, UnknownType):
            return lambda rng: None
        raise UnsupportedTypeError(f"no JSON generator for Iceberg type {kind}")

    def maybe_null(self, gen: ValueGen, required: bool) -> ValueGen:
        fraction = self.config.null_fraction
        if required or fraction <= 0.0:
            return gen
        return lambda rng: None if rng.random() < fraction else gen(rng)

    def field_type(self, kind: IcebergType) -> ValueGen:
        max_len = self.config.max_collection_length
        if isinstance(kind, StructType):
            return self.struct(kind.fields)
        if isinstance(kind, ListType):
            element = self.maybe_null(self.field_type(kind.element_type), kind.element_required)
            return lambda rng: [element(rng) for _ in range(rng.randint(0, max_len))]
        if isinstance(kind, MapType):
            key = self.field_type(kind.key_type)
            value = self.maybe_null(self.field_type(kind.value_type), kind.value_required)
            as_key: Callable[[Any], str] = (
                str if isinstance(kind.key_type, StringType) else (lambda k: json_text(k))
            )

            def map_gen(rng: random.Random) -> dict[str, Any]:
                out: dict[str, Any] = {}
                for _ in range(rng.randint(0, max_len)):
                    out[as_key(key(rng))] = value(rng)
                return out

            return map_gen
        return self.primitive(kind)

    def struct(self, fields: tuple[NestedField, ...]) -> ValueGen:
        compiled = [
            (f.name, self.maybe_null(self.field_type(f.field_type), f.required)) for f in fields
        ]

        def struct_gen(rng: random.Random) -> dict[str, Any]:
            return {name: gen(rng) for name, gen in compiled}

        return struct_gen


class SchemaRows:
    """Seeded source of rows for an arbitrary Iceberg schema.

    Args:
        schema: The table schema.
        seed: Seeds the Faker string pool.
        clock: Supplies dates and timestamps inside the configured window.
        rng: The seeded source that draws every value.
        config: Null, collection-size and edge-value knobs.

    Raises:
        UnsupportedTypeError: If the schema holds a type with no JSON convention.
    """

    def __init__(
        self,
        schema: Schema,
        seed: int,
        clock: EventClock,
        rng: random.Random,
        config: SchemaRowsConfig | None = None,
    ) -> None:
        self.schema = schema
        self.rng = rng
        compiler = ValueCompiler(seed, clock, config or SchemaRowsConfig())
        fields = schema.fields
        self._has_event_id = any(
            f.name == EVENT_ID_FIELD and isinstance(f.field_type, StringType | UUIDType)
            for f in fields
        )
        others = tuple(f for f in fields if f.name != EVENT_ID_FIELD or not self._has_event_id)
        self._others = compiler.struct(others)
        self._order = [f.name for f in fields]

    def row(self, event_id: str) -> dict[str, Any]:
        """Draw the next row as a fresh dict in schema column order.

        Args:
            event_id: Placed in the ``event_id`` column when the schema has one.

        Returns:
            A dict of JSON-domain values.
        """
        values = self._others(self.rng)
        if not self._has_event_id:
            return values
        values[EVENT_ID_FIELD] = event_id
        return {name: values[name] for name in self._order}

    def text(self, event_id: str) -> str:
        """Draw the next row and render it as compact JSON text.

        Args:
            event_id: Placed in the ``event_id`` column when the schema has one.

        Returns:
            The row as JSON object text.
        """
        return json_text(self.row(event_id))
