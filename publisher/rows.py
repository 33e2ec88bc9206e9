"""Reference rows: the reference table's shape, generated fast from Faker pools.

The reference table has one column per common Trino type (see
:func:`reference_schema`). Faker is far too slow to call per message, so a
:class:`ReferencePools` draws a few hundred values per column from Faker once
per seed, pre-encodes them as JSON text, and :class:`ReferenceRows` then builds
each row by sampling pool indices from a seeded :class:`random.Random`. The same
draw can be rendered either as JSON text (hot path) or as a Python dict (when a
malformation or schema drift needs to edit the row); both describe the same row.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from faker import Faker
from pyiceberg.schema import Schema
from pyiceberg.types import (
    BooleanType,
    DoubleType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
)

from publisher.clock import MICROS_PER_DAY, MICROS_PER_SECOND, EventClock

#: Locales mixed into string pools so payloads carry multi-byte UTF-8.
FAKER_LOCALES: tuple[str, ...] = ("en_US", "de_DE", "ja_JP", "pt_BR")

#: Pool size per column: a power of two so one ``getrandbits`` call yields
#: several indices by shifting.
POOL_BITS = 10
POOL_SIZE = 1 << POOL_BITS
_MASK = POOL_SIZE - 1
#: 9 pool indices and the boolean, then 16 bits whose remainder picks the time
#: zone (16 bits keep the modulo bias negligible for any offset count).
_TZ_SHIFT = 9 * POOL_BITS + 1
_DRAW_BITS = _TZ_SHIFT + 16

#: BIGINT edges kept in the integer pool so loaders meet them regularly.
LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1
INT_MIN = -(2**31)
INT_MAX = 2**31 - 1

REFERENCE_COLUMNS: tuple[str, ...] = (
    "event_id",
    "bool",
    "floating",
    "integer",
    "string",
    "bools",
    "floatings",
    "integers",
    "strings",
    "string_map",
    "nested",
    "timestamp",
)


def reference_schema() -> Schema:
    """Return the reference table's Iceberg schema, with the ``event_id`` column.

    Returns:
        A schema whose Trino view is ``event_id VARCHAR, bool BOOLEAN, floating
        DOUBLE, integer BIGINT, string VARCHAR, bools ARRAY(BOOLEAN), floatings
        ARRAY(DOUBLE), integers ARRAY(BIGINT), strings ARRAY(VARCHAR), string_map
        MAP(VARCHAR, VARCHAR), nested ROW(key VARCHAR, value BIGINT), timestamp
        TIMESTAMP(6) WITH TIME ZONE``.
    """
    return Schema(
        NestedField(1, "event_id", StringType(), required=False),
        NestedField(2, "bool", BooleanType(), required=False),
        NestedField(3, "floating", DoubleType(), required=False),
        NestedField(4, "integer", LongType(), required=False),
        NestedField(5, "string", StringType(), required=False),
        NestedField(
            6, "bools", ListType(13, BooleanType(), element_required=False), required=False
        ),
        NestedField(
            7, "floatings", ListType(14, DoubleType(), element_required=False), required=False
        ),
        NestedField(
            8, "integers", ListType(15, LongType(), element_required=False), required=False
        ),
        NestedField(
            9, "strings", ListType(16, StringType(), element_required=False), required=False
        ),
        NestedField(
            10,
            "string_map",
            MapType(17, StringType(), 18, StringType(), value_required=False),
            required=False,
        ),
        NestedField(
            11,
            "nested",
            StructType(
                NestedField(19, "key", StringType(), required=False),
                NestedField(20, "value", LongType(), required=False),
            ),
            required=False,
        ),
        NestedField(12, "timestamp", TimestamptzType(), required=False),
    )


def json_text(value: Any) -> str:
    """Encode a JSON-domain value compactly, keeping non-ASCII text as is.

    Args:
        value: str, int, float, bool, None, list or dict of those.

    Returns:
        Compact JSON text.

    Raises:
        ValueError: For NaN or infinities, which JSON cannot carry.
    """
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


@dataclass(frozen=True)
class _Pool:
    """One column's sampled values and their pre-encoded JSON text."""

    values: tuple[Any, ...]
    texts: tuple[str, ...]

    @classmethod
    def of(cls, values: list[Any]) -> _Pool:
        return cls(tuple(values), tuple(json_text(v) for v in values))


@dataclass(frozen=True)
class ReferencePools:
    """Faker-drawn value pools for every reference column, fixed by a seed."""

    floating: _Pool
    integer: _Pool
    string: _Pool
    bools: _Pool
    floatings: _Pool
    integers: _Pool
    strings: _Pool
    string_map: _Pool
    nested: _Pool
    words: tuple[str, ...]

    @classmethod
    @functools.lru_cache(maxsize=16)
    def for_seed(cls, seed: int) -> ReferencePools:
        """Build (or reuse) the pools for ``seed``.

        Args:
            seed: Seeds both Faker and the pool-shaping ``random.Random``.

        Returns:
            The pools; identical for identical seeds and Faker versions.
        """
        fake = Faker(list(FAKER_LOCALES))
        fake.seed_instance(seed)
        rng = random.Random(f"icefloe-pools:{seed}")
        en = fake["en_US"]

        def floats() -> float:
            return float(fake.pyfloat(left_digits=6, right_digits=6))

        def longs() -> int:
            # Mostly moderate magnitudes with the occasional full-range value.
            if rng.random() < 0.1:
                return rng.randint(LONG_MIN, LONG_MAX)
            return int(fake.pyint(min_value=-1_000_000_000, max_value=1_000_000_000))

        def text() -> str:
            return str(rng.choice((fake.word, fake.name, fake.city, fake.sentence))())

        words = tuple(dict.fromkeys(en.word() for _ in range(POOL_SIZE)))
        integer_values = [LONG_MIN, LONG_MAX, 0, -1] + [longs() for _ in range(POOL_SIZE - 4)]

        def small(gen: Any) -> list[Any]:
            return [gen() for _ in range(rng.randint(0, 5))]

        def string_map() -> dict[str, str]:
            keys = rng.sample(words, rng.randint(0, 4))
            return {k: text() for k in keys}

        return cls(
            floating=_Pool.of([floats() for _ in range(POOL_SIZE)]),
            integer=_Pool.of(integer_values),
            string=_Pool.of([text() for _ in range(POOL_SIZE)]),
            bools=_Pool.of([small(lambda: rng.random() < 0.5) for _ in range(POOL_SIZE)]),
            floatings=_Pool.of([small(floats) for _ in range(POOL_SIZE)]),
            integers=_Pool.of([small(longs) for _ in range(POOL_SIZE)]),
            strings=_Pool.of([small(text) for _ in range(POOL_SIZE)]),
            string_map=_Pool.of([string_map() for _ in range(POOL_SIZE)]),
            nested=_Pool.of(
                [{"key": rng.choice(words), "value": longs()} for _ in range(POOL_SIZE)]
            ),
            words=words,
        )


class ReferenceRows:
    """Seeded source of reference rows.

    Each row consumes exactly two draws from ``rng`` (one ``getrandbits`` for
    every pool index, the boolean and the time zone; one ``random`` for the
    instant), whether it is rendered as text or as a dict, so choosing a
    representation never shifts later rows.

    Args:
        pools: Value pools (see :meth:`ReferencePools.for_seed`).
        clock: Supplies the ``timestamp`` column.
        rng: The seeded source that picks pool entries.
    """

    def __init__(self, pools: ReferencePools, clock: EventClock, rng: random.Random) -> None:
        self.pools = pools
        self.clock = clock
        self.rng = rng
        self.schema = reference_schema()
        self.text = self._compile_text()

    def _draw(self) -> tuple[int, str]:
        rng = self.rng
        bits = rng.getrandbits(_DRAW_BITS)
        instant = self.clock.end_us - int(rng.random() * (self.clock.span_us + 1))
        offsets = len(self.clock.config.offsets_minutes)
        return bits, self.clock.render(instant, (bits >> _TZ_SHIFT) % offsets)

    def _compile_text(self) -> Callable[[str], str]:
        # Everything the hot path touches is bound to a local of the closure:
        # attribute and global lookups are a measurable share of each row.
        p = self.pools
        fl, it, st, bs = p.floating.texts, p.integer.texts, p.string.texts, p.bools.texts
        fls, its, sts = p.floatings.texts, p.integers.texts, p.strings.texts
        sm, ne = p.string_map.texts, p.nested.texts
        offsets, day0, days, tod = self.clock.tables()
        n_offsets = len(offsets)
        end, span = self.clock.end_us, self.clock.span_us + 1
        getrandbits, rand = self.rng.getrandbits, self.rng.random
        m, draw_bits, tz_shift = _MASK, _DRAW_BITS, _TZ_SHIFT
        day_us, sec_us = MICROS_PER_DAY, MICROS_PER_SECOND

        def text(event_id: str) -> str:
            """Draw the next row and render it as compact JSON text.

            Args:
                event_id: The message's unique event id (already JSON-safe ASCII).

            Returns:
                The row as a JSON object text.
            """
            bits = getrandbits(draw_bits)
            off_us, off_text = offsets[(bits >> tz_shift) % n_offsets]
            day, rem = divmod(end - int(rand() * span) + off_us, day_us)
            secs, micros = divmod(rem, sec_us)
            return (
                f'{{"event_id":"{event_id}","bool":{"true" if bits & 1 else "false"}'
                f',"floating":{fl[(bits >> 1) & m]},"integer":{it[(bits >> 11) & m]}'
                f',"string":{st[(bits >> 21) & m]},"bools":{bs[(bits >> 31) & m]}'
                f',"floatings":{fls[(bits >> 41) & m]},"integers":{its[(bits >> 51) & m]}'
                f',"strings":{sts[(bits >> 61) & m]},"string_map":{sm[(bits >> 71) & m]}'
                f',"nested":{ne[(bits >> 81) & m]}'
                f',"timestamp":"{days[day - day0]}{tod[secs]}.{micros:06d}{off_text}"}}'
            )

        return text

    def row(self, event_id: str) -> dict[str, Any]:
        """Draw the next row as a fresh dict (safe to mutate).

        Args:
            event_id: The message's unique event id.

        Returns:
            A dict of JSON-domain values keyed by column name.
        """
        bits, ts = self._draw()
        p = self.pools
        return {
            "event_id": event_id,
            "bool": bool(bits & 1),
            "floating": p.floating.values[(bits >> 1) & _MASK],
            "integer": p.integer.values[(bits >> 11) & _MASK],
            "string": p.string.values[(bits >> 21) & _MASK],
            "bools": list(p.bools.values[(bits >> 31) & _MASK]),
            "floatings": list(p.floatings.values[(bits >> 41) & _MASK]),
            "integers": list(p.integers.values[(bits >> 51) & _MASK]),
            "strings": list(p.strings.values[(bits >> 61) & _MASK]),
            "string_map": dict(p.string_map.values[(bits >> 71) & _MASK]),
            "nested": dict(p.nested.values[(bits >> 81) & _MASK]),
            "timestamp": ts,
        }
