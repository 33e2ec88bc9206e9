"""Malformations: a named catalog of broken messages and the loader error each must cause.

Every entry of :data:`MALFORMATIONS` pairs a builder, which turns a valid row
into a broken payload, with what the loader's strict parser is expected to
report: the ``MalformedRecord.kind`` (``invalid_json``, ``invalid_utf8``,
``empty_payload``, ``not_an_object``, ``type_mismatch``, ``out_of_range``,
``too_deep``, ``too_large``) and the field path (``$`` for the root,
``nested.value``, ``integers[2]``, ``string_map["k"]``). Builders find their
target column in whatever schema is in use, so the catalog works for any table;
an entry whose target type the schema lacks is simply not applicable.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyiceberg.schema import Schema
from pyiceberg.types import (
    BooleanType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
)

from icefloe.publisher.rows import EVENT_ID_FIELD, json_text

#: Default upper bound the loader enforces on a payload, in bytes (1 MiB).
DEFAULT_MAX_MESSAGE_BYTES = 1 << 20

#: Default nesting depth of ``deep_nesting`` payloads: well past common parser
#: limits (Python's recursion limit, Jackson's 1000) yet only ~10 KB of text.
DEFAULT_DEEP_NESTING_DEPTH = 5000

_MARK = "@@icefloe-mark@@"
#: A Latin-1 'e-acute' and two bytes that never occur in UTF-8.
_INVALID_UTF8 = b"caf\xe9 \xff\xfe"


@dataclass(frozen=True)
class MalformationContext:
    """What a builder may use.

    Attributes:
        row: A freshly drawn valid row (the builder may mutate it).
        schema: The table schema the row follows.
        rng: The seeded source for any further choices.
        max_message_bytes: The loader's payload size limit.
        deep_nesting_depth: Depth of ``deep_nesting`` payloads.
    """

    row: dict[str, Any]
    schema: Schema
    rng: random.Random
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    deep_nesting_depth: int = DEFAULT_DEEP_NESTING_DEPTH


@dataclass(frozen=True)
class Malformed:
    """A built malformed payload.

    Attributes:
        value: The Kafka value; ``None`` is a tombstone.
        path: Where the loader should locate the fault.
    """

    value: bytes | None
    path: str


Builder = Callable[[MalformationContext], Malformed]
Applies = Callable[[Schema], bool]


def _always(_schema: Schema) -> bool:
    return True


@dataclass(frozen=True)
class Malformation:
    """One catalog entry.

    Attributes:
        name: Registry key, recorded as the message's ``kind`` in the ledger.
        loader_kind: The ``MalformedRecord.kind`` the loader must raise.
        target: Human description of the targeted field (``$`` for the payload).
        reason: Why the loader must reject the payload.
        build: Turns a valid row into the malformed payload.
        applies: Whether a schema has what ``build`` needs.
    """

    name: str
    loader_kind: str
    target: str
    reason: str
    build: Builder
    applies: Applies = _always


def _encode(row: Any) -> bytes:
    return json_text(row).encode("utf-8")


def _first_field(schema: Schema, accept: Callable[[NestedField], bool]) -> NestedField | None:
    # The event id stays intact so malformed messages remain traceable.
    return next((f for f in schema.fields if f.name != EVENT_ID_FIELD and accept(f)), None)


def _of_type(*types: type[IcebergType]) -> Callable[[NestedField], bool]:
    return lambda f: isinstance(f.field_type, types)


_INTEGRAL = (IntegerType, LongType)
_TIMESTAMPS = (TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType)


def wrong_value_for(kind: IcebergType) -> Any:
    """Return a JSON value of the wrong kind for ``kind``.

    Args:
        kind: The Iceberg type a value is expected to have.

    Returns:
        A value no strict parser may accept for that type.
    """
    if isinstance(kind, BooleanType):
        return "yes"
    if isinstance(kind, StringType):
        return 42
    if isinstance(kind, StructType | ListType | MapType):
        return "not a container"
    if isinstance(kind, (*_INTEGRAL, FloatType, DoubleType)):
        return "three"
    return {"unexpected": "object"}


def _column_builder(
    accept: Callable[[NestedField], bool], value: Callable[[NestedField], Any]
) -> tuple[Builder, Applies]:
    def build(ctx: MalformationContext) -> Malformed:
        field = _first_field(ctx.schema, accept)
        if field is None:
            raise LookupError("schema has no column this malformation targets")
        ctx.row[field.name] = value(field)
        return Malformed(_encode(ctx.row), field.name)

    return build, lambda schema: _first_field(schema, accept) is not None


def _invalid_json(ctx: MalformationContext) -> Malformed:
    text = json_text(ctx.row)
    return Malformed((text[:-1] + ",}").encode("utf-8"), "$")


def _truncated_json(ctx: MalformationContext) -> Malformed:
    # Cut on a character boundary so the fault is syntax, never UTF-8.
    text = json_text(ctx.row)
    cut = ctx.rng.randint(1, len(text) - 1)
    return Malformed(text[:cut].encode("utf-8"), "$")


def _nan_literal(ctx: MalformationContext) -> Malformed:
    field = _first_field(ctx.schema, _of_type(DoubleType, FloatType))
    name = field.name if field is not None else "nan_value"
    ctx.row[name] = _MARK
    return Malformed(_encode(ctx.row).replace(f'"{_MARK}"'.encode(), b"NaN"), "$")


def _duplicate_key(ctx: MalformationContext) -> Malformed:
    text = json_text(ctx.row)
    name, value = next(iter(ctx.row.items()))
    dup = f",{json_text(name)}:{json_text(value)}}}"
    return Malformed((text[:-1] + dup).encode("utf-8"), "$")


def _invalid_utf8(ctx: MalformationContext) -> Malformed:
    field = _first_field(ctx.schema, _of_type(StringType))
    ctx.row[field.name if field is not None else "note"] = _MARK
    return Malformed(_encode(ctx.row).replace(_MARK.encode(), _INVALID_UTF8), "$")


def _array_root(ctx: MalformationContext) -> Malformed:
    return Malformed(_encode([ctx.row]), "$")


def _scalar_root(ctx: MalformationContext) -> Malformed:
    return Malformed(_encode(ctx.rng.choice((42, 3.5, "row", True))), "$")


def _deep_nesting(ctx: MalformationContext) -> Malformed:
    depth = ctx.deep_nesting_depth
    inner = json_text(ctx.row)[1:-1]
    deep = "[" * depth + "]" * depth
    rest = f",{inner}" if inner else ""
    return Malformed(f'{{"deep":{deep}{rest}}}'.encode(), "$")


def _oversized(ctx: MalformationContext) -> Malformed:
    field = _first_field(ctx.schema, _of_type(StringType))
    name = field.name if field is not None else "padding"
    ctx.row[name] = ""
    base = len(_encode(ctx.row))
    # Repetitive ASCII: one byte per character, and lz4 squeezes it so the
    # compressed batch stays under the broker's default size limit.
    need = max(ctx.max_message_bytes + 1 - base, 0)
    ctx.row[name] = ("lorem ipsum " * (need // 12 + 1))[:need]
    return Malformed(_encode(ctx.row), "$")


def _element_target(field: NestedField) -> bool:
    kind = field.field_type
    return isinstance(kind, ListType) and isinstance(kind.element_type, PrimitiveType)


def _array_element_type(ctx: MalformationContext) -> Malformed:
    field = _first_field(ctx.schema, _element_target)
    assert field is not None and isinstance(field.field_type, ListType)
    # Prefer a numeric list: a string among numbers is wrong under any reading.
    numeric = _first_field(
        ctx.schema,
        lambda f: _element_target(f) and isinstance(f.field_type.element_type, _INTEGRAL),  # type: ignore[attr-defined]
    )
    field = numeric or field
    element = field.field_type.element_type  # type: ignore[attr-defined]
    good = 1 if isinstance(element, _INTEGRAL) else None
    ctx.row[field.name] = [good, good, wrong_value_for(element)]
    return Malformed(_encode(ctx.row), f"{field.name}[2]")


def _map_target(field: NestedField) -> bool:
    kind = field.field_type
    return (
        isinstance(kind, MapType)
        and isinstance(kind.key_type, StringType)
        and isinstance(kind.value_type, PrimitiveType)
    )


def _map_value_type(ctx: MalformationContext) -> Malformed:
    field = _first_field(ctx.schema, _map_target)
    assert field is not None and isinstance(field.field_type, MapType)
    key = "color"
    ctx.row[field.name] = {key: wrong_value_for(field.field_type.value_type)}
    return Malformed(_encode(ctx.row), f"{field.name}[{json.dumps(key)}]")


def _struct_target(field: NestedField) -> bool:
    kind = field.field_type
    return isinstance(kind, StructType) and any(
        isinstance(child.field_type, PrimitiveType) for child in kind.fields
    )


def _nested_value_type(ctx: MalformationContext) -> Malformed:
    field = _first_field(ctx.schema, _struct_target)
    assert field is not None and isinstance(field.field_type, StructType)
    children = field.field_type.fields
    # Prefer a numeric child (``nested.value`` in the reference table).
    child = next(
        (c for c in children if isinstance(c.field_type, _INTEGRAL)),
        next(c for c in children if isinstance(c.field_type, PrimitiveType)),
    )
    value = ctx.row.get(field.name)
    struct = dict(value) if isinstance(value, dict) else {}
    struct[child.name] = wrong_value_for(child.field_type)
    ctx.row[field.name] = struct
    return Malformed(_encode(ctx.row), f"{field.name}.{child.name}")


def _registry(*entries: Malformation) -> dict[str, Malformation]:
    return {entry.name: entry for entry in entries}


_bool_as_string = _column_builder(_of_type(BooleanType), lambda f: "yes")
_float_for_bigint = _column_builder(_of_type(*_INTEGRAL), lambda f: 1.5)
_object_for_string = _column_builder(_of_type(StringType), lambda f: {"unexpected": "object"})
_bad_timestamp = _column_builder(_of_type(*_TIMESTAMPS), lambda f: "yesterday at noon")
_bigint_out_of_range = _column_builder(
    _of_type(*_INTEGRAL),
    lambda f: 2**63 if isinstance(f.field_type, LongType) else 2**31,
)

#: The catalog: name -> entry. Names are stable; scenarios and ledgers use them.
POLICY: dict[str, str] = {
    "duplicate_key": "valid JSON (RFC 8259: names SHOULD be unique); icefloe's loader refuses"
    " it, a parser that keeps the last value loads it",
    "oversized": "a valid row one byte over icefloe's own 1 MiB limit (max_record_bytes); another"
    " loader's limit is its own",
}
"""Malformations that are icefloe's policy rather than what every loader owes: a loader is held
to them only when it declares that it refuses them (``[observe] refuses``); for any other
loader the checks report what it did with them (loaded or dead-lettered), never an anomaly."""

MALFORMATIONS: dict[str, Malformation] = _registry(
    Malformation(
        "invalid_json", "invalid_json", "$", "trailing comma: not JSON syntax", _invalid_json
    ),
    Malformation("truncated_json", "invalid_json", "$", "payload cut short", _truncated_json),
    Malformation("nan_literal", "invalid_json", "$", "NaN is not a JSON literal", _nan_literal),
    Malformation("duplicate_key", "invalid_json", "$", "the same object key twice", _duplicate_key),
    Malformation(
        "invalid_utf8", "invalid_utf8", "$", "bytes that are not UTF-8 in a string", _invalid_utf8
    ),
    Malformation(
        "empty_payload", "empty_payload", "$", "zero-byte value", lambda c: Malformed(b"", "$")
    ),
    Malformation(
        "whitespace_payload",
        "empty_payload",
        "$",
        "whitespace-only value",
        lambda c: Malformed(b" \n\t ", "$"),
    ),
    Malformation(
        "tombstone", "empty_payload", "$", "null Kafka value", lambda c: Malformed(None, "$")
    ),
    Malformation("array_root", "not_an_object", "$", "root is an array", _array_root),
    Malformation("scalar_root", "not_an_object", "$", "root is a scalar", _scalar_root),
    Malformation(
        "null_root", "not_an_object", "$", "root is null", lambda c: Malformed(b"null", "$")
    ),
    Malformation(
        "bool_as_string",
        "type_mismatch",
        "first boolean column",
        '"yes" for a boolean',
        *_bool_as_string,
    ),
    Malformation(
        "float_for_bigint",
        "type_mismatch",
        "first int/long column",
        "1.5 for an integral column",
        *_float_for_bigint,
    ),
    Malformation(
        "object_for_string",
        "type_mismatch",
        "first string column",
        "an object for a string",
        *_object_for_string,
    ),
    Malformation(
        "bad_timestamp",
        "type_mismatch",
        "first timestamp column",
        "unparseable timestamp text",
        *_bad_timestamp,
    ),
    Malformation(
        "bigint_out_of_range",
        "out_of_range",
        "first int/long column",
        "one past the type's maximum",
        *_bigint_out_of_range,
    ),
    Malformation(
        "array_element_type",
        "type_mismatch",
        "third element of the first list of primitives",
        "a wrong-typed element inside an array",
        _array_element_type,
        lambda s: _first_field(s, _element_target) is not None,
    ),
    Malformation(
        "map_value_type",
        "type_mismatch",
        "a value of the first string-keyed map",
        "a wrong-typed value inside a map",
        _map_value_type,
        lambda s: _first_field(s, _map_target) is not None,
    ),
    Malformation(
        "nested_value_type",
        "type_mismatch",
        "a field of the first struct column",
        "a wrong-typed field inside a struct",
        _nested_value_type,
        lambda s: _first_field(s, _struct_target) is not None,
    ),
    Malformation("deep_nesting", "too_deep", "$", "arrays nested thousands deep", _deep_nesting),
    Malformation("oversized", "too_large", "$", "payload one byte over the limit", _oversized),
)


def resolve_kinds(names: tuple[str, ...] | None, schema: Schema) -> tuple[Malformation, ...]:
    """Pick the malformations to draw from.

    Args:
        names: Requested registry names; ``None`` or empty means every entry that
            applies to ``schema``.
        schema: The table schema in use.

    Returns:
        The entries, in registry order when unrequested, else in request order.

    Raises:
        ValueError: For an unknown name, or a requested entry the schema cannot host.
    """
    if not names:
        return tuple(m for m in MALFORMATIONS.values() if m.applies(schema))
    chosen = []
    for name in names:
        entry = MALFORMATIONS.get(name)
        if entry is None:
            known = ", ".join(MALFORMATIONS)
            raise ValueError(f"unknown malformation {name!r}; known: {known}")
        if not entry.applies(schema):
            raise ValueError(f"malformation {name!r} has no target column in this schema")
        chosen.append(entry)
    return tuple(chosen)
