"""The fast path: records that decode exactly, checked by compiled code instead of Python.

``RowParser`` walks every decoded value in Python, which caps decoding at about
20,000 rows/s per core.  Most records in a healthy stream are plain: every key is
a column of the table, spelled exactly, every value has the column's JSON shape.
For those, ``FastDecoder`` lets msgspec decode the bytes straight into typed
structs built from the Iceberg schema, so type, range and shape checks run in C.

The fast path only ever *accepts*; it never rejects.  A record it does not accept
goes to the strict parser, which decides (and explains) as before.  It accepts a
record only when the strict parser would accept it with the same row:

* Unknown keys are forbidden in the fast structs, so extra fields and keys that
  match a column only case-insensitively fall back (the strict parser resolves
  them, or rejects ambiguous ones).
* msgspec keeps the last of duplicate keys where the strict parser rejects the
  record.  Every object member has exactly one structural colon, and a colon in
  a string survives decoding and re-encoding, so a record whose re-encoding has
  fewer colons than its bytes lost a member to a duplicate and falls back.  A
  colon written as the escape ``\\u003a`` would upset the count, so records
  holding that escape fall back too.
* Types whose JSON form msgspec reads differently from the strict parser
  (float, decimal, time, uuid, binary, fixed) make the schema ineligible; date,
  timestamp and timestamptz are decoded as strings and converted by the strict
  parser's own converters, so only top-level columns of those types are eligible.
* Transforms (unnest, projections, case conversion) make the decoder ineligible.

``tests/loader/test_fastpath.py`` checks, with Hypothesis, that whatever the fast
path accepts the strict parser accepts with an equal row.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
from pyiceberg import types as it

from loader import parse

if TYPE_CHECKING:
    from pyiceberg.schema import Schema

__all__ = ["FastDecoder", "Ineligible", "fast_decoder"]


class Ineligible(Exception):
    """The schema or options need the strict parser for every record."""


_SCALARS: dict[type[it.IcebergType], Any] = {
    it.BooleanType: bool,
    it.IntegerType: Annotated[int, msgspec.Meta(ge=parse.INT_MIN, le=parse.INT_MAX)],
    it.LongType: Annotated[int, msgspec.Meta(ge=parse.LONG_MIN, le=parse.LONG_MAX)],
    it.DoubleType: float,
    it.StringType: str,
}

# The strict parser's timestamptz grammar with every field range that regular expressions can
# check; `fromisoformat` does the rest (days of the month) and C-speed conversion.
_TSTZ = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,6})?"
    r"(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])",
    re.ASCII,
)


def _timestamptz(text: str) -> datetime:
    if not _TSTZ.fullmatch(text):
        raise _Fallback
    try:
        return datetime.fromisoformat(text).astimezone(UTC)
    except (ValueError, OverflowError):
        raise _Fallback from None


class _Fallback(Exception):
    """This record is for the strict parser."""


# Top-level columns decoded as text and converted here or by the strict parser's converters.
_TEXT_CONVERTED: dict[type[it.IcebergType], Callable[[Any], Any]] = {
    it.TimestamptzType: _timestamptz,
    it.TimestampType: parse._timestamp,
    it.DateType: parse._date,
}


def _optional(t: Any, required: bool) -> Any:
    return t if required else t | None


def _type(t: it.IcebergType, where: str, depth: int, max_depth: int) -> Any:
    if depth + 1 >= max_depth:  # a container here is nested depth + 2 deep in the JSON
        raise Ineligible(f"{where}: nested deeper than max_depth")
    if isinstance(t, it.StructType):
        return _struct(t.fields, where, depth, max_depth)
    if isinstance(t, it.ListType):
        element = _type(t.element_type, where + "[]", depth + 1, max_depth)
        return list[_optional(element, t.element_required)]  # type: ignore[misc]
    if isinstance(t, it.MapType):
        if not isinstance(t.key_type, it.StringType):
            raise Ineligible(f"{where}: map keys are not strings")
        value = _type(t.value_type, where + "[]", depth + 1, max_depth)
        return dict[str, _optional(value, t.value_required)]  # type: ignore[misc]
    scalar = _SCALARS.get(type(t))
    if scalar is None:
        raise Ineligible(f"{where}: {t} is read by the strict parser only")
    return scalar


def _struct(
    fields: tuple[it.NestedField, ...],
    where: str,
    depth: int,
    max_depth: int,
    text: frozenset[str] = frozenset(),
) -> type[msgspec.Struct]:
    members: list[tuple[str, Any, Any] | tuple[str, Any]] = []
    for f in fields:
        path = f"{where}.{f.name}" if where else f.name
        t = str if f.name in text else _type(f.field_type, path, depth + 1, max_depth)
        if f.required:
            members.append((f.name, t))
        else:
            members.append((f.name, t | None | msgspec.UnsetType, msgspec.UNSET))
    return msgspec.defstruct(
        "Row_" + (where.replace(".", "_") or "root"),
        members,
        kw_only=True,
        forbid_unknown_fields=True,
    )


class FastDecoder:
    """Decodes plain records of one schema version; see the module docstring.

    Args:
        schema: the table's current Iceberg schema.
        max_bytes: the strict parser's size limit (larger records fall back).
        max_depth: the strict parser's depth limit.

    Raises:
        Ineligible: the schema has a column the fast path does not read.
    """

    def __init__(self, schema: Schema, *, max_bytes: int, max_depth: int) -> None:
        self.max_bytes = max_bytes
        self.converted: tuple[tuple[str, Callable[[Any], Any]], ...] = tuple(
            (f.name, _TEXT_CONVERTED[type(f.field_type)])
            for f in schema.fields
            if type(f.field_type) in _TEXT_CONVERTED
        )
        text = frozenset(name for name, _ in self.converted)
        row_type = _struct(schema.fields, "", 0, max_depth, text)
        self._decoder = msgspec.json.Decoder(row_type)
        self._encoder = msgspec.json.Encoder()

    def decode(self, value: bytes) -> dict[str, Any] | None:
        """The row for ``value``, or ``None`` when the strict parser must decide.

        The row maps column names to Python values as ``RowParser`` gives them,
        except that a column (or struct field) absent from the record is absent
        from the dict rather than ``None``.
        """
        if len(value) > self.max_bytes or b"\\u003" in value:
            return None
        try:
            obj = self._decoder.decode(value)
        except (msgspec.DecodeError, ValueError):  # ValueError: invalid UTF-8 in a string
            return None
        if self._encoder.encode(obj).count(b":") != value.count(b":"):
            return None  # a duplicate key was dropped
        row: dict[str, Any] = msgspec.to_builtins(obj)
        try:
            for name, convert in self.converted:
                text = row.get(name)
                if text is not None:
                    row[name] = convert(text)
        except (parse._Bad, _Fallback):
            return None
        return row


def fast_decoder(
    schema: Schema, *, has_transform: bool, max_bytes: int, max_depth: int
) -> FastDecoder | None:
    """A ``FastDecoder`` for ``schema``, or ``None`` when only the strict parser applies."""
    if has_transform:
        return None
    try:
        return FastDecoder(schema, max_bytes=max_bytes, max_depth=max_depth)
    except Ineligible:
        return None
