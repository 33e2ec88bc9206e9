"""The fast path accepts only what the strict parser accepts, with the same row."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pyiceberg import types as it
from pyiceberg.schema import Schema

from loader.errors import MalformedRecord
from loader.fastpath import FastDecoder, fast_decoder
from loader.parse import DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, parse_row
from loader.transforms import Transform
from publisher.rows import reference_schema
from tests.loader.strategies import (
    Document,
    Raw,
    documents,
    dumps,
    fast_root_specs,
    mutated,
    plant,
)
from tests.loader.test_parse_properties import _same

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _fast(schema: Schema) -> FastDecoder:
    decoder = fast_decoder(
        schema, has_transform=False, max_bytes=DEFAULT_MAX_BYTES, max_depth=DEFAULT_MAX_DEPTH
    )
    assert decoder is not None
    return decoder


def _complete(value: Any, t: it.IcebergType) -> Any:
    """The fast row with absent struct fields filled in as ``None``, as the strict parser gives."""
    if value is None:
        return None
    if isinstance(t, it.StructType):
        return {f.name: _complete(value.get(f.name), f.field_type) for f in t.fields}
    if isinstance(t, it.ListType):
        return [_complete(v, t.element_type) for v in value]
    if isinstance(t, it.MapType):
        return {k: _complete(v, t.value_type) for k, v in value.items()}
    return value


def _row(schema: Schema, fast_row: dict[str, Any]) -> dict[str, Any]:
    return _complete(fast_row, schema.as_struct())  # type: ignore[no-any-return]


@SETTINGS
@given(documents(fast_root_specs, plain=True))
def test_plain_documents_take_the_fast_path_with_the_strict_row(doc: Document) -> None:
    row = _fast(doc.schema).decode(doc.payload)
    assert row is not None, doc.payload
    _same(_row(doc.schema, row), parse_row(doc.payload, doc.schema))


@SETTINGS
@given(documents(fast_root_specs))
def test_whatever_the_fast_path_accepts_the_strict_parser_accepts_alike(doc: Document) -> None:
    row = _fast(doc.schema).decode(doc.payload)
    if row is not None:
        _same(_row(doc.schema, row), parse_row(doc.payload, doc.schema))


@SETTINGS
@given(documents(fast_root_specs, plain=True), st.data())
def test_a_planted_bad_value_leaves_the_fast_path(doc: Document, data: st.DataObject) -> None:
    assume(doc.sites)
    payload, _kind, _site = mutated(doc, data)
    with pytest.raises(MalformedRecord):
        parse_row(payload, doc.schema)
    assert _fast(doc.schema).decode(payload) is None


def _objects(
    tree: Any, tokens: tuple[str | int, ...] = ()
) -> list[tuple[tuple[str | int, ...], dict[str, Any]]]:
    found: list[tuple[tuple[str | int, ...], dict[str, Any]]] = []
    if isinstance(tree, dict):
        if tree:
            found.append((tokens, tree))
        for key, child in tree.items():
            found += _objects(child, (*tokens, key))
    elif isinstance(tree, list):
        for index, child in enumerate(tree):
            found += _objects(child, (*tokens, index))
    return found


@SETTINGS
@given(documents(fast_root_specs, plain=True), st.data())
def test_a_duplicate_key_leaves_the_fast_path(doc: Document, data: st.DataObject) -> None:
    objects = _objects(doc.json_tree)
    assume(objects)
    tokens, obj = data.draw(st.sampled_from(objects))
    key = data.draw(st.sampled_from(sorted(obj)))
    again = data.draw(st.sampled_from([obj[key], None, 1, "x"]))
    members = [f"{json.dumps(k)}:{dumps(v)}" for k, v in obj.items()]
    members.insert(data.draw(st.integers(0, len(members))), f"{json.dumps(key)}:{dumps(again)}")
    payload = dumps(plant(doc.json_tree, tokens, Raw("{" + ",".join(members) + "}"))).encode()
    with pytest.raises(MalformedRecord, match="duplicate key"):
        parse_row(payload, doc.schema)
    assert _fast(doc.schema).decode(payload) is None


REFERENCE_ROW = {
    "event_id": "e-1",
    "bool": True,
    "floating": 1.5,
    "integer": 7,
    "string": "a:b",
    "bools": [True, None],
    "floatings": [0.5],
    "integers": [1, 2],
    "strings": ["x"],
    "string_map": {"k:1": "v:2"},
    "nested": {"key": "k", "value": 3},
    "timestamp": "2022-07-26T00:41:48.046773-07:00",
}


def _reference(**changes: Any) -> bytes:
    return json.dumps({**REFERENCE_ROW, **changes}, ensure_ascii=False).encode()


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        (_reference(timestamp="2022-07-26T00:41:48.0467731-07:00"), "seven fraction digits"),
        (_reference(timestamp="2022-07-26 00:41:48Z"), "space for T"),
        (_reference(timestamp="2022-07-26t00:41:48z"), "lower-case t and z"),
        (_reference(timestamp="2022-07-26T00:41:48+0700"), "offset without colon"),
        (_reference(timestamp="2022-07-26T00:41:48"), "no zone"),
        (_reference(timestamp="2022-02-30T00:00:00Z"), "no such day"),
        (_reference(extra=1), "extra key"),
        (_reference(Integer=1), "key matching only case-insensitively"),
        (_reference(integer=2.0), "float for bigint"),
        (_reference(bool="yes"), "string for boolean"),
        (_reference(string={"a": 1}), "object for string"),
        (_reference(integers=[1, "2"]), "string in a bigint array"),
        (_reference(string_map={"k": 1}), "number as a map value"),
        (_reference(string="a\\u003ab"), "escaped colon"),
        (b'{"integer": 1, "integer": 2}', "duplicate key"),
        (b'{"string_map": {"a": "x", "a": "y"}}', "duplicate map key"),
        (b'{"nested": {"key": "a", "key": "b"}}', "duplicate nested key"),
        (b'{"integer": 1}x', "trailing bytes"),
        (b"[]", "array root"),
        (b"", "empty"),
        (b"\xff", "invalid UTF-8"),
        (b'{"string": "\\ud800"}', "lone surrogate"),
    ],
)
def test_reference_records_the_fast_path_leaves_to_the_strict_parser(
    payload: bytes, why: str
) -> None:
    assert _fast(reference_schema()).decode(payload) is None, why


def test_a_reference_row_takes_the_fast_path() -> None:
    schema = reference_schema()
    row = _fast(schema).decode(_reference())
    assert row is not None
    _same(_row(schema, row), parse_row(_reference(), schema))


def test_every_publisher_message_is_decided_alike() -> None:
    import datetime as dt

    from publisher.clock import ClockConfig
    from publisher.messages import GenerationConfig, generate

    schema = reference_schema()
    fast = _fast(schema)
    clock = ClockConfig(anchor=dt.datetime(2026, 1, 1, tzinfo=dt.UTC), window_days=30)
    config = GenerationConfig(seed=5, clock=clock, malformed_fraction=0.3)
    taken = 0
    for message in generate(config, 2000):
        value = message.value
        row = None if value is None else fast.decode(value)
        if message.kind is not None:
            assert row is None, message.kind
            continue
        assert row is not None, value
        _same(_row(schema, row), parse_row(value, schema))
        taken += 1
    assert taken > 1000


@pytest.mark.parametrize(
    "column",
    [
        it.FloatType(),
        it.DecimalType(10, 2),
        it.TimeType(),
        it.UUIDType(),
        it.BinaryType(),
        it.FixedType(4),
        it.StructType(it.NestedField(3, "at", it.TimestamptzType(), required=False)),
        it.ListType(3, it.DateType(), element_required=False),
    ],
)
def test_schemas_the_fast_path_does_not_read(column: it.IcebergType) -> None:
    schema = Schema(
        it.NestedField(1, "id", it.LongType(), required=False),
        it.NestedField(2, "c", column, required=False),
    )
    assert (
        fast_decoder(schema, has_transform=False, max_bytes=1000, max_depth=DEFAULT_MAX_DEPTH)
        is None
    )


def test_a_transform_turns_the_fast_path_off() -> None:
    schema = reference_schema()
    assert not Transform(unnest="/data").is_identity
    assert fast_decoder(schema, has_transform=True, max_bytes=1000, max_depth=64) is None


def test_records_over_the_size_limit_leave_the_fast_path() -> None:
    schema = reference_schema()
    small = fast_decoder(schema, has_transform=False, max_bytes=50, max_depth=64)
    assert small is not None
    assert small.decode(_reference()) is None
