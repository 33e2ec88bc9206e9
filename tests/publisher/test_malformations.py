"""Malformations: each catalog entry is rejected by the loader for the reason it claims."""

from __future__ import annotations

import random

import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import BooleanType, NestedField, StringType

from icefloe.loader.decode.parse import DEFAULT_MAX_BYTES, parse_row
from icefloe.loader.errors import MalformedRecord
from icefloe.publisher.clock import ClockConfig, EventClock
from icefloe.publisher.malformations import (
    MALFORMATIONS,
    MalformationContext,
    resolve_kinds,
)
from icefloe.publisher.messages import GenerationConfig, generate
from icefloe.publisher.rows import ReferencePools, ReferenceRows, reference_schema
from icefloe.publisher.schema_rows import SchemaRows
from tests.publisher.schemas import all_types_schema

LOADER_KINDS = {
    "invalid_json",
    "invalid_utf8",
    "empty_payload",
    "not_an_object",
    "type_mismatch",
    "out_of_range",
    "too_deep",
    "too_large",
}

REFERENCE_TARGETS = {
    "bool_as_string": "bool",
    "float_for_bigint": "integer",
    "object_for_string": "string",
    "bad_timestamp": "timestamp",
    "bigint_out_of_range": "integer",
    "array_element_type": "integers[2]",
    "map_value_type": 'string_map["color"]',
    "nested_value_type": "nested.value",
}


def test_catalog_covers_every_loader_kind_and_requested_case() -> None:
    assert {m.loader_kind for m in MALFORMATIONS.values()} == LOADER_KINDS
    requested = {
        "invalid_json", "truncated_json", "array_root", "scalar_root", "null_root",
        "empty_payload", "invalid_utf8", "bool_as_string", "float_for_bigint",
        "object_for_string", "bad_timestamp", "bigint_out_of_range", "array_element_type",
        "map_value_type", "deep_nesting", "oversized",
    }  # fmt: skip
    assert requested <= set(MALFORMATIONS)
    for name, entry in MALFORMATIONS.items():
        assert entry.name == name and entry.reason and entry.target


def build(
    name: str, schema: Schema | None = None, seed: int = 1, **kw: int
) -> tuple[bytes | None, str]:
    clock = EventClock(ClockConfig())
    rng = random.Random(seed)
    if schema is None:
        schema = reference_schema()
        # One pool for all seeds: building pools is the slow part.
        row = ReferenceRows(ReferencePools.for_seed(1), clock, rng).row("eid-1")
    else:
        row = SchemaRows(schema, seed, clock, rng).row("eid-1")
    built = MALFORMATIONS[name].build(MalformationContext(row, schema, random.Random(seed), **kw))
    return built.value, built.path


def assert_rejected(name: str, value: bytes | None, path: str, schema: Schema, **kw: int) -> None:
    with pytest.raises(MalformedRecord) as info:
        parse_row(value, schema, **kw)
    assert info.value.kind == MALFORMATIONS[name].loader_kind, info.value
    assert info.value.path == path, info.value


@pytest.mark.parametrize("name", sorted(MALFORMATIONS))
def test_reference_malformation_is_rejected_for_its_reason(name: str) -> None:
    for seed in range(5):
        value, path = build(name, seed=seed)
        assert path == REFERENCE_TARGETS.get(name, "$")
        assert_rejected(name, value, path, reference_schema())


@pytest.mark.parametrize("name", sorted(MALFORMATIONS))
def test_all_types_malformation_is_rejected_for_its_reason(name: str) -> None:
    schema = all_types_schema()
    for seed in range(3):
        value, path = build(name, schema, seed=seed)
        assert_rejected(name, value, path, schema)


def test_generated_malformed_messages_match_their_ledger_claims() -> None:
    schema = reference_schema()
    seen = set()
    for m in generate(GenerationConfig(seed=4, malformed_fraction=1.0), 1500):
        assert m.status == "malformed" and m.kind is not None and m.target is not None
        assert_rejected(m.kind, m.value, m.target, schema)
        seen.add(m.kind)
    assert seen == set(MALFORMATIONS)


def test_oversized_is_one_byte_over_a_configured_limit() -> None:
    value, _ = build("oversized")
    assert value is not None and len(value) == DEFAULT_MAX_BYTES + 1
    small, path = build("oversized", max_message_bytes=4096)
    assert small is not None and len(small) == 4097
    assert_rejected("oversized", small, path, reference_schema(), max_bytes=4096)
    # Under the limit it is an ordinary valid row.
    parse_row(small, reference_schema(), max_bytes=4097)


def test_truncation_never_splits_a_character() -> None:
    for seed in range(200):
        value, _ = build("truncated_json", seed=seed)
        assert value is not None
        value.decode("utf-8")


def test_event_id_survives_column_malformations() -> None:
    for name in REFERENCE_TARGETS:
        value, _ = build(name)
        assert value is not None and b'"event_id":"eid-1"' in value


def test_resolve_kinds() -> None:
    assert resolve_kinds((), reference_schema()) == tuple(MALFORMATIONS.values())
    assert [m.name for m in resolve_kinds(("tombstone", "oversized"), reference_schema())] == [
        "tombstone",
        "oversized",
    ]
    with pytest.raises(ValueError, match="unknown malformation"):
        resolve_kinds(("nope",), reference_schema())
    tiny = Schema(NestedField(1, "flag", BooleanType()), NestedField(2, "name", StringType()))
    names = {m.name for m in resolve_kinds((), tiny)}
    assert "bool_as_string" in names and "nested_value_type" not in names
    with pytest.raises(ValueError, match="no target column"):
        resolve_kinds(("bigint_out_of_range",), tiny)
    for name in names:
        value, path = build(name, tiny)
        assert_rejected(name, value, path, tiny)
