"""Schema rows: any Iceberg schema yields rows the loader's strict parser accepts."""

from __future__ import annotations

import base64
import json
import random
import uuid
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyiceberg.schema import Schema
from pyiceberg.types import (
    DecimalType,
    FixedType,
    GeometryType,
    NestedField,
    StringType,
    StructType,
    UUIDType,
)

from icefloe.loader.decode.parse import parse_row
from icefloe.publisher.clock import ClockConfig, EventClock
from icefloe.publisher.schema_rows import (
    SchemaRows,
    SchemaRowsConfig,
    UnsupportedTypeError,
    decimal_text,
)
from tests.publisher.schemas import all_types_schema


def source(schema: Schema, config: SchemaRowsConfig | None = None, seed: int = 3) -> SchemaRows:
    return SchemaRows(schema, seed, EventClock(ClockConfig()), random.Random(seed), config)


@pytest.mark.parametrize("null_fraction", [0.0, 0.3, 1.0])
def test_all_types_rows_parse(null_fraction: float) -> None:
    schema = all_types_schema()
    rows = source(schema, SchemaRowsConfig(null_fraction=null_fraction))
    for i in range(300):
        text = rows.text(f"e{i}")
        parsed = parse_row(text.encode(), schema, case_insensitive=False)
        assert parsed["event_id"] == f"e{i}"
        # Required fields are never null, whatever the null fraction.
        assert parsed["flag"] is not None


def test_values_follow_the_json_conventions() -> None:
    schema = all_types_schema()
    rows = source(schema)
    docs = [rows.row(str(i)) for i in range(300)]
    for doc in docs:
        assert tuple(doc) == tuple(f.name for f in schema.fields)
        assert Decimal(doc["price"]).as_tuple().exponent == -2
        assert uuid.UUID(doc["ident"]).version == 4 and doc["ident"] == doc["ident"].lower()
        assert len(base64.b64decode(doc["hash"], validate=True)) == 16
        base64.b64decode(doc["blob"], validate=True)
        assert -(2**31) <= doc["small"] < 2**31
    zoned = [d["zoned_ts"] for d in docs]
    assert any(z.endswith("Z") for z in zoned) and any(z[-6] in "+-" for z in zoned)
    assert any(d["small"] in (-(2**31), 2**31 - 1) for d in docs)


def test_rows_are_reproducible() -> None:
    schema = all_types_schema()
    a = [source(schema, seed=5).text(str(i)) for i in range(3)]
    b = [source(schema, seed=5).text(str(i)) for i in range(3)]
    assert a == b


def test_deeply_nested_structs() -> None:
    depth = 30
    ids = iter(range(1, 10_000))
    kind: object = StringType()
    for level in range(depth):
        kind = StructType(NestedField(next(ids), f"level_{level}", kind, required=True))  # type: ignore[arg-type]
    schema = Schema(NestedField(next(ids), "root", kind, required=True))  # type: ignore[arg-type]
    doc = source(schema).row("x")
    node = doc["root"]
    for level in reversed(range(depth)):
        node = node[f"level_{level}"]
    assert isinstance(node, str)
    parse_row(json.dumps(doc).encode(), schema, max_depth=depth + 2)


def test_event_id_column_of_uuid_type_gets_the_event_id() -> None:
    schema = Schema(NestedField(1, "event_id", UUIDType(), required=True))
    eid = str(uuid.uuid4())
    assert source(schema).row(eid) == {"event_id": eid}


def test_schema_without_event_id_gets_none() -> None:
    schema = Schema(NestedField(1, "name", StringType(), required=True))
    assert set(source(schema).row("x")) == {"name"}


def test_unsupported_type_is_named() -> None:
    schema = Schema(NestedField(1, "shape", GeometryType(), required=False))
    with pytest.raises(UnsupportedTypeError, match="geometry"):
        source(schema)


@given(st.integers(min_value=-(10**38) + 1, max_value=10**38 - 1), st.integers(0, 38))
def test_decimal_text_is_exact(unscaled: int, scale: int) -> None:
    text = decimal_text(unscaled, scale)
    assert "e" not in text.lower()
    parts = Decimal(unscaled).as_tuple()
    assert Decimal(text) == Decimal((parts.sign, parts.digits, -scale))


@given(st.integers(1, 38), st.data())
def test_decimals_fit_their_type(precision: int, data: st.DataObject) -> None:
    scale = data.draw(st.integers(0, precision))
    schema = Schema(NestedField(1, "d", DecimalType(precision, scale), required=True))
    rows = source(schema)
    for _ in range(20):
        parse_row(rows.text("x").encode(), schema)


def test_fixed_of_any_length() -> None:
    schema = Schema(NestedField(1, "f", FixedType(3), required=True))
    assert len(base64.b64decode(source(schema).row("x")["f"])) == 3
