"""Reference rows: the reference table's shape, generated fast from Faker pools.

:func:`reference_schema` is the one definition of the reference table's shape: one column per
common Trino type, plus the ``event_id`` every message carries. The Trino DDL the harness
creates tables with (``harness.stack.tables``) and the rows generated here derive from it.

Faker is far too slow to call per message, so a :class:`ReferencePools` draws a
few hundred values per column from Faker once per seed, pre-encodes them as JSON
text, and :class:`ReferenceRows` then builds each row by sampling pool indices
from a seeded :class:`random.Random`. The same draw can be rendered either as
JSON text (hot path) or as a Python dict (when a malformation or schema drift
needs to edit the row); both describe the same row.
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

from icefloe.publisher.clock import MICROS_PER_DAY, MICROS_PER_SECOND, EventClock

#: Locales mixed into string pools so payloads carry multi-byte UTF-8.
FAKER_LOCALES: tuple[str, ...] = ("en_US", "de_DE", "ja_JP", "pt_BR")

#: Pool size per column: a power of two so one ``getrandbits`` call yields
#: several indices by shifting.
POOL_BITS = 10
POOL_SIZE = 1 << POOL_BITS
_MASK = POOL_SIZE - 1
#: BIGINT edges kept in the integer pool so loaders meet them regularly.
LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1
INT_MIN = -(2**31)
INT_MAX = 2**31 - 1

#: The message's unique id: a column of every generated row, first.
EVENT_ID_FIELD = "event_id"


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
        NestedField(1, EVENT_ID_FIELD, StringType(), required=False),
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


#: Column names of the reference rows, in schema order.
REFERENCE_COLUMNS: tuple[str, ...] = tuple(f.name for f in reference_schema().fields)
#: How each column gets its value: the event id, one random bit (booleans), the event clock
#: (timestamps), or a Faker pool of the same name in :class:`ReferencePools` (the rest).
_ROLES: dict[str, str] = {
    f.name: (
        "id"
        if f.name == EVENT_ID_FIELD
        else "bit"
        if isinstance(f.field_type, BooleanType)
        else "clock"
        if isinstance(f.field_type, TimestamptzType)
        else "pool"
    )
    for f in reference_schema().fields
}
#: Pooled columns in the order their indices are drawn (POOL_BITS each, after the bit).
POOLED_COLUMNS: tuple[str, ...] = tuple(n for n, role in _ROLES.items() if role == "pool")
#: How the dict form copies a pooled value, so a caller may edit it: lists and objects afresh.
_COPIES: dict[str, str] = {
    f.name: (
        "list"
        if isinstance(f.field_type, ListType)
        else "dict"
        if isinstance(f.field_type, MapType | StructType)
        else ""
    )
    for f in reference_schema().fields
}
#: The pool indices and the boolean, then 16 bits whose remainder picks the time zone (16 bits
#: keep the modulo bias negligible for any offset count).
_TZ_SHIFT = len(POOLED_COLUMNS) * POOL_BITS + 1
_DRAW_BITS = _TZ_SHIFT + 16


def _pool_shift(index: int) -> int:
    return 1 + index * POOL_BITS


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
        self.text, self._row = self._compile()

    def _draw(self) -> tuple[int, str]:
        rng = self.rng
        bits = rng.getrandbits(_DRAW_BITS)
        instant = self.clock.end_us - int(rng.random() * (self.clock.span_us + 1))
        offsets = len(self.clock.config.offsets_minutes)
        return bits, self.clock.render(instant, (bits >> _TZ_SHIFT) % offsets)

    def _compile(self) -> tuple[Callable[[str], str], Callable[[str], dict[str, Any]]]:
        """Compile the text and dict forms of a row from the schema's columns.

        The functions' source is generated from the columns (names and roles, see ``_ROLES``)
        and compiled once per source, with everything they touch bound to a local: attribute
        and global lookups, and a loop over the columns, are a measurable share of each row.
        So the JSON keys come from the schema alone while a row costs one f-string (text) or
        one dict display (dict).
        """
        texts, values = [], []
        for name, role in _ROLES.items():
            if not name.isidentifier():
                raise ValueError(f"reference column {name!r} is not an identifier")
            if role == "pool":
                i = POOLED_COLUMNS.index(name)
                index = f"(bits >> {_pool_shift(i)}) & m"
                texts.append(f'"{name}":{{t{i}[{index}]}}')
                values.append(f'"{name}": {_COPIES[name]}(v{i}[{index}])')
                continue
            text, value = {
                "id": ('"{event_id}"', "event_id"),
                "bit": ('{"true" if bits & 1 else "false"}', "bool(bits & 1)"),
                "clock": ('"{days[day - day0]}{tod[secs]}.{micros:06d}{off_text}"', "ts"),
            }[role]
            texts.append(f'"{name}":{text}')
            values.append(f'"{name}": {value}')
        source = (
            "def text(event_id):\n"
            "    bits = getrandbits(draw_bits)\n"
            "    off_us, off_text = offsets[(bits >> tz_shift) % n_offsets]\n"
            "    day, rem = divmod(end - int(rand() * span) + off_us, day_us)\n"
            "    secs, micros = divmod(rem, sec_us)\n"
            "    return f'{{" + ",".join(texts) + "}}'\n"
            "def row(event_id):\n"
            "    bits, ts = draw()\n"
            "    return {" + ", ".join(values) + "}\n"
        )
        offsets, day0, days, tod = self.clock.tables()
        pools = [getattr(self.pools, name) for name in POOLED_COLUMNS]
        scope: dict[str, Any] = {
            **{f"t{i}": pool.texts for i, pool in enumerate(pools)},
            **{f"v{i}": pool.values for i, pool in enumerate(pools)},
            "offsets": offsets,
            "n_offsets": len(offsets),
            "day0": day0,
            "days": days,
            "tod": tod,
            "end": self.clock.end_us,
            "span": self.clock.span_us + 1,
            "getrandbits": self.rng.getrandbits,
            "rand": self.rng.random,
            "draw": self._draw,
            "m": _MASK,
            "draw_bits": _DRAW_BITS,
            "tz_shift": _TZ_SHIFT,
            "day_us": MICROS_PER_DAY,
            "sec_us": MICROS_PER_SECOND,
        }
        exec(compile(source, "<reference rows>", "exec"), scope)
        return scope["text"], scope["row"]

    def row(self, event_id: str) -> dict[str, Any]:
        """Draw the next row as a fresh dict (safe to mutate).

        Args:
            event_id: The message's unique event id.

        Returns:
            A dict of JSON-domain values keyed by column name.
        """
        row: dict[str, Any] = self._row(event_id)
        return row
