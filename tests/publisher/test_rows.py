"""Reference rows: the reference shape, parseable by the loader, text and dict agree."""

from __future__ import annotations

import datetime as dt
import json
import random
import re

from icefloe.loader.decode.parse import parse_row
from icefloe.publisher.clock import ClockConfig, EventClock
from icefloe.publisher.rows import (
    REFERENCE_COLUMNS,
    ReferencePools,
    ReferenceRows,
    reference_schema,
)

TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}[+-]\d{2}:\d{2}$")


def rows(seed: int = 7, rng_seed: int = 1) -> ReferenceRows:
    return ReferenceRows(
        ReferencePools.for_seed(seed), EventClock(ClockConfig()), random.Random(rng_seed)
    )


def test_schema_columns_are_the_reference_columns() -> None:
    schema = reference_schema()
    assert tuple(f.name for f in schema.fields) == REFERENCE_COLUMNS
    assert str(schema.find_type("timestamp")) == "timestamptz"
    assert (
        str(schema.find_type("nested"))
        == "struct<19: key: optional string, 20: value: optional long>"
    )


def test_text_rows_have_reference_shape_and_parse() -> None:
    source = rows()
    schema = reference_schema()
    for i in range(500):
        text = source.text(f"id-{i}")
        doc = json.loads(text)
        assert tuple(doc) == REFERENCE_COLUMNS
        assert doc["event_id"] == f"id-{i}"
        assert isinstance(doc["bool"], bool)
        assert isinstance(doc["floating"], float)
        assert isinstance(doc["integer"], int) and -(2**63) <= doc["integer"] < 2**63
        assert isinstance(doc["string"], str)
        assert all(isinstance(v, bool) for v in doc["bools"])
        assert all(isinstance(v, int) and not isinstance(v, bool) for v in doc["integers"])
        assert all(isinstance(v, str) for v in doc["strings"])
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in doc["string_map"].items())
        assert set(doc["nested"]) == {"key", "value"}
        assert TIMESTAMP.match(doc["timestamp"]), doc["timestamp"]
        row = parse_row(text.encode(), schema, case_insensitive=False)
        assert row["event_id"] == f"id-{i}"
        assert row["timestamp"] == dt.datetime.fromisoformat(doc["timestamp"])


def test_text_and_dict_forms_describe_the_same_rows() -> None:
    as_text, as_dict = rows(rng_seed=9), rows(rng_seed=9)
    for i in range(200):
        assert json.loads(as_text.text(str(i))) == as_dict.row(str(i))


def test_dicts_are_fresh_copies() -> None:
    source = rows()
    first = source.row("a")
    first["strings"].append("mutated")
    first["nested"]["key"] = "mutated"
    again = rows().row("a")
    assert "mutated" not in again["strings"]
    assert again["nested"]["key"] != "mutated"


def test_pools_are_reproducible_per_seed() -> None:
    ReferencePools.for_seed.cache_clear()
    a = ReferencePools.for_seed(11)
    ReferencePools.for_seed.cache_clear()
    b = ReferencePools.for_seed(11)
    assert a == b
    assert a != ReferencePools.for_seed(12)


def test_pools_hold_multibyte_text_and_bigint_edges() -> None:
    pools = ReferencePools.for_seed(7)
    assert any(not s.isascii() for s in pools.string.values)
    assert {-(2**63), 2**63 - 1} <= set(pools.integer.values)
