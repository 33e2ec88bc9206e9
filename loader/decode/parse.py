"""Parsing: one JSON message into one row of an Iceberg table's current schema.

The schema is compiled once into a tree of converters (``RowParser``); the
Spark job compiles it again whenever the table schema changes, so a column
added or dropped in Trino takes effect within one micro-batch.

Decisions (shared with the publisher's JSON conventions):

* **No silent coercion.**  Each Iceberg type accepts exactly one JSON shape:
  boolean <- ``true``/``false``; int/long <- JSON integers only (``2.0``,
  ``1e3`` and ``"2"`` are rejected); float/double <- any JSON number
  (rounded to the nearest representable value; overflow is rejected);
  decimal(p, s) <- a JSON number or a string holding a JSON number, whose
  exact value must fit p and s without rounding (``1.50`` fits scale 1);
  string <- JSON strings only; date ``YYYY-MM-DD``; time
  ``HH:MM:SS[.f{1,6}]``; timestamp ``YYYY-MM-DDTHH:MM:SS[.f{1,6}]`` with no
  zone; timestamptz the same with ``Z`` or ``±hh:mm`` (required); more than 6
  fraction digits is rejected, never truncated; uuid the 8-4-4-4-12 hex form in
  either case; binary and fixed(n) standard base64 with padding (fixed must
  decode to exactly n bytes); list <- JSON array; map (string keys only) and
  struct <- JSON object.
* **Python values**: bool, int, float, ``Decimal`` quantized to the column
  scale, str, ``date``, ``time``, naive ``datetime`` for timestamp,
  ``datetime`` with ``tzinfo=UTC`` for timestamptz (offsets are normalized to
  UTC), **uuid as its canonical lower-case ``str``** (Spark's Iceberg type for
  uuid is string), ``bytes`` for binary/fixed, list, dict for map, dict for
  struct.
* **Nulls**: a missing key and JSON ``null`` both give ``None``; for a required
  field, list element or map value that is a ``missing_required`` error.
* **Extra keys** are ignored.
* **Names** match case-insensitively by default.  An exact match always wins;
  a JSON key that exactly matches one field is never used for another.  If
  several remaining keys match one field case-insensitively (``Id`` and
  ``ID`` for ``id``) the record is rejected as ``ambiguous_field``: picking
  one would drop data silently.
* **Duplicate keys** in one JSON object are rejected as ``invalid_json``, as
  are the non-standard ``NaN``/``Infinity`` literals.
* **Paths**: ``$`` is the root, then ``nested.value``, ``integers[2]``,
  ``string_map["k"]``, using the schema's field names.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from pyiceberg import types as it

from icefloe.loader.errors import Kind, MalformedRecord, SchemaMismatch

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.schema import Schema
    from pyspark.sql import types as st

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DEPTH",
    "RowParser",
    "arrow_schema",
    "json_type_name",
    "load_json",
    "parse_row",
    "row_parser",
    "spark_schema",
]

DEFAULT_MAX_BYTES = 1 << 20
DEFAULT_MAX_DEPTH = 64

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1

# ---------------------------------------------------------------------------
# JSON decoding
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Unrepresentable:
    """A JSON number Python refuses to build (a 5000-digit int, ``1e99999999999999999999``).

    Kept as a placeholder rather than failing the whole decode, so the error
    names the field's path, and an ignored field holding it does no harm.
    """

    literal: str


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _parse_int(literal: str) -> int | _Unrepresentable:
    try:
        return int(literal)
    except ValueError:  # beyond sys.get_int_max_str_digits()
        return _Unrepresentable(literal[:32] + "...")


def _parse_float(literal: str) -> Decimal | _Unrepresentable:
    # Decimal keeps 1.5, 2.0 and 1e3 distinguishable from integers and exact.
    try:
        return Decimal(literal)
    except InvalidOperation:
        return _Unrepresentable(literal[:32] + ("..." if len(literal) > 32 else ""))


def _reject_constant(name: str) -> None:
    raise ValueError(f"non-standard JSON literal {name}")


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


_DECODER = json.JSONDecoder(
    object_pairs_hook=_object_without_duplicates,
    parse_float=_parse_float,
    parse_int=_parse_int,
    parse_constant=_reject_constant,
)


def _too_deep(doc: object, max_depth: int) -> bool:
    stack: list[tuple[dict[str, Any] | list[Any], int]] = []
    if isinstance(doc, dict | list):
        stack.append((doc, 1))
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            return True
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
    return False


def load_json(
    value: bytes | bytearray | memoryview | None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> object:
    """Decode a Kafka record value as strict UTF-8 JSON.

    Numbers with a fraction or exponent become ``Decimal``, integers ``int``.
    Any JSON value is returned; the caller decides whether the root must be
    an object.

    Args:
        value: the record value; ``None`` is a tombstone.
        max_bytes: larger payloads are rejected before decoding.
        max_depth: objects/arrays nested deeper are rejected (the root is 1).

    Returns:
        The decoded document.

    Raises:
        MalformedRecord: ``empty_payload``, ``too_large``, ``invalid_utf8``,
            ``invalid_json`` or ``too_deep``, all at path ``$``.
    """
    if value is None:
        raise MalformedRecord(Kind.EMPTY_PAYLOAD, "$", "JSON object", "null payload (tombstone)")
    if isinstance(value, memoryview):
        value = value.tobytes()
    if len(value) > max_bytes:
        raise MalformedRecord(
            Kind.TOO_LARGE, "$", f"at most {max_bytes} bytes", f"payload has {len(value)} bytes"
        )
    if not value or value.isspace():
        raise MalformedRecord(Kind.EMPTY_PAYLOAD, "$", "JSON object", "empty payload")
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedRecord(
            Kind.INVALID_UTF8, "$", "UTF-8 text", f"invalid byte at offset {exc.start}"
        ) from None
    try:
        doc = _DECODER.decode(text)
    except _DuplicateKey as exc:
        raise MalformedRecord(
            Kind.INVALID_JSON, "$", "JSON object with unique keys", f"duplicate key {exc.key!r}"
        ) from None
    except RecursionError:
        raise MalformedRecord(
            Kind.TOO_DEEP, "$", f"nesting depth at most {max_depth}", "nested too deeply to decode"
        ) from None
    except ValueError as exc:  # JSONDecodeError is a ValueError, as is _reject_constant's
        raise MalformedRecord(Kind.INVALID_JSON, "$", "JSON", str(exc)) from None
    # Counting brackets bounds the depth from above: most payloads skip the walk.
    if value.count(b"{") + value.count(b"[") > max_depth and _too_deep(doc, max_depth):
        raise MalformedRecord(
            Kind.TOO_DEEP, "$", f"nesting depth at most {max_depth}", "document nested too deeply"
        )
    return doc


# ---------------------------------------------------------------------------
# Converters
# ---------------------------------------------------------------------------


class _Bad(Exception):
    """Internal failure raised by a converter; containers add path segments on the way out."""

    def __init__(self, kind: Kind, expected: str, reason: str) -> None:
        self.kind = kind
        self.expected = expected
        self.reason = reason
        self.segments: list[str] = []  # innermost first


Converter = Callable[[Any], Any]


def json_type_name(value: object) -> str:
    """The JSON kind of a decoded value (``object``, ``array``, ``number``...), for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, Decimal | _Unrepresentable):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _mismatch(expected: str, value: object, hint: str = "") -> _Bad:
    reason = f"got JSON {json_type_name(value)}"
    if isinstance(value, int | Decimal) and not isinstance(value, bool):
        reason += f" {str(value)[:40]}"
    return _Bad(Kind.TYPE_MISMATCH, expected, reason + (f"; {hint}" if hint else ""))


def _check_text(value: str, expected: str) -> str:
    # JSON "\ud800" escapes decode to lone surrogates that no writer can encode.
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _Bad(Kind.INVALID_UTF8, expected, "string holds a lone surrogate") from None
    return value


def _boolean(value: Any) -> bool:
    if type(value) is bool:
        return value
    raise _mismatch("boolean", value)


def _integer(name: str, low: int, high: int) -> Converter:
    def convert(value: Any) -> int:
        if type(value) is int:
            if low <= value <= high:
                return value
            raise _Bad(Kind.OUT_OF_RANGE, name, f"{value} is outside [{low}, {high}]")
        if isinstance(value, _Unrepresentable):
            raise _Bad(Kind.OUT_OF_RANGE, name, f"number {value.literal} is too large")
        if isinstance(value, Decimal):
            raise _mismatch(name, value, "only JSON integers (no fraction or exponent) fit")
        raise _mismatch(name, value)

    return convert


def _to_float(value: Any, name: str) -> float:
    if isinstance(value, _Unrepresentable):
        raise _Bad(Kind.OUT_OF_RANGE, name, f"number {value.literal} overflows {name}")
    if type(value) is not int and not isinstance(value, Decimal):
        raise _mismatch(name, value)
    try:
        result = float(value)
    except OverflowError:  # int too large for a double
        result = math.inf
    if math.isinf(result):
        raise _Bad(Kind.OUT_OF_RANGE, name, f"{str(value)[:40]} overflows {name}")
    return result


def _double(value: Any) -> float:
    return _to_float(value, "double")


_F32 = struct.Struct("<f")


def _float(value: Any) -> float:
    result = _to_float(value, "float")
    try:
        # Round to float32 now so the value in the row is the value stored.
        return float(_F32.unpack(_F32.pack(result))[0])
    except OverflowError:
        raise _Bad(Kind.OUT_OF_RANGE, "float", f"{str(value)[:40]} overflows float") from None


_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", re.ASCII)


def _decimal(precision: int, scale: int) -> Converter:
    name = f"decimal({precision}, {scale})"
    quantum = Decimal((0, (1,), -scale))

    def convert(value: Any) -> Decimal:
        if type(value) is int:
            number = Decimal(value)
        elif isinstance(value, Decimal):
            number = value
        elif isinstance(value, str):
            # Decimal() alone would also take " 1", "1_000", "NaN" and "+1".
            if not _JSON_NUMBER.fullmatch(value):
                raise _mismatch(name, value, "a decimal string must be a JSON number literal")
            try:
                number = Decimal(value)
            except InvalidOperation:
                raise _Bad(Kind.OUT_OF_RANGE, name, "exponent out of range") from None
        elif isinstance(value, _Unrepresentable):
            raise _Bad(Kind.OUT_OF_RANGE, name, f"number {value.literal} does not fit")
        else:
            raise _mismatch(name, value)
        _sign, digits, exponent = number.as_tuple()
        assert isinstance(exponent, int)  # JSON literals are always finite
        if exponent < -scale:
            dropped = digits[exponent + scale :] if -exponent - scale < len(digits) else digits
            if any(dropped):
                raise _Bad(
                    Kind.OUT_OF_RANGE, name, f"more than {scale} digits after the decimal point"
                )
        if number and number.adjusted() >= precision - scale:
            raise _Bad(
                Kind.OUT_OF_RANGE,
                name,
                f"more than {precision - scale} digits before the decimal point",
            )
        # Checked above that this rescaling is exact; the context only needs room.
        return number.quantize(quantum, context=_wide_context(precision))

    return convert


_CONTEXTS: dict[int, Any] = {}


def _wide_context(precision: int) -> Any:
    from decimal import Context

    ctx = _CONTEXTS.get(precision)
    if ctx is None:
        ctx = _CONTEXTS[precision] = Context(prec=precision + 2, Emax=10**9, Emin=-(10**9))
    return ctx


def _string(value: Any) -> str:
    if type(value) is str:
        return _check_text(value, "string")
    raise _mismatch("string", value)


_DATE = r"([0-9]{4})-([0-9]{2})-([0-9]{2})"
_TIME = r"([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?"
_DATE_RE = re.compile(_DATE, re.ASCII)
_TIME_RE = re.compile(_TIME, re.ASCII)
_TS_RE = re.compile(_DATE + "T" + _TIME, re.ASCII)
_TSTZ_RE = re.compile(_DATE + "T" + _TIME + r"(Z|[+-][0-9]{2}:[0-9]{2})", re.ASCII)
_TS_ANY_ZONE = re.compile(_DATE + "T" + _TIME + r"(?:Z|z|[+-][0-9]{2}(?::?[0-9]{2})?)", re.ASCII)

_DATE_FORMAT = "date (YYYY-MM-DD)"
_TIME_FORMAT = "time (HH:MM:SS[.ffffff])"
_TS_FORMAT = "timestamp (YYYY-MM-DDTHH:MM:SS[.ffffff], no zone)"
_TSTZ_FORMAT = "timestamptz (YYYY-MM-DDTHH:MM:SS[.ffffff] with Z or ±hh:mm)"


def _micros(fraction: str | None, expected: str) -> int:
    if fraction is None:
        return 0
    if len(fraction) > 6:
        raise _Bad(Kind.TYPE_MISMATCH, expected, "more than 6 fractional digits (microseconds)")
    return int(fraction.ljust(6, "0"))


def _text_of(value: Any, expected: str) -> str:
    if type(value) is not str:
        raise _mismatch(expected, value)
    return value


def _date(value: Any) -> date:
    m = _DATE_RE.fullmatch(_text_of(value, _DATE_FORMAT))
    if not m:
        raise _Bad(Kind.TYPE_MISMATCH, _DATE_FORMAT, "string is not in this format")
    try:
        return date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError as exc:
        raise _Bad(Kind.TYPE_MISMATCH, _DATE_FORMAT, f"not a valid date: {exc}") from None


def _time(value: Any) -> time:
    m = _TIME_RE.fullmatch(_text_of(value, _TIME_FORMAT))
    if not m:
        raise _Bad(Kind.TYPE_MISMATCH, _TIME_FORMAT, "string is not in this format")
    micros = _micros(m[4], _TIME_FORMAT)
    try:
        return time(int(m[1]), int(m[2]), int(m[3]), micros)
    except ValueError as exc:
        raise _Bad(Kind.TYPE_MISMATCH, _TIME_FORMAT, f"not a valid time: {exc}") from None


def _naive(m: re.Match[str], expected: str) -> datetime:
    micros = _micros(m[7], expected)
    try:
        return datetime(int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6]), micros)
    except ValueError as exc:
        raise _Bad(Kind.TYPE_MISMATCH, expected, f"not a valid timestamp: {exc}") from None


def _timestamp(value: Any) -> datetime:
    text = _text_of(value, _TS_FORMAT)
    m = _TS_RE.fullmatch(text)
    if not m:
        if _TS_ANY_ZONE.fullmatch(text):
            raise _Bad(Kind.TYPE_MISMATCH, _TS_FORMAT, "a timestamp without zone has a zone")
        raise _Bad(Kind.TYPE_MISMATCH, _TS_FORMAT, "string is not in this format")
    return _naive(m, _TS_FORMAT)


def _timestamptz(value: Any) -> datetime:
    text = _text_of(value, _TSTZ_FORMAT)
    m = _TSTZ_RE.fullmatch(text)
    if not m:
        if _TS_RE.fullmatch(text):
            raise _Bad(Kind.TYPE_MISMATCH, _TSTZ_FORMAT, "the zone (Z or ±hh:mm) is missing")
        raise _Bad(Kind.TYPE_MISMATCH, _TSTZ_FORMAT, "string is not in this format")
    local = _naive(m, _TSTZ_FORMAT)
    zone = m[8]
    if zone == "Z":
        return local.replace(tzinfo=UTC)
    hours, minutes = int(zone[1:3]), int(zone[4:6])
    if hours > 23 or minutes > 59:
        raise _Bad(Kind.TYPE_MISMATCH, _TSTZ_FORMAT, f"invalid offset {zone}")
    offset = timedelta(hours=hours, minutes=minutes)
    tz = timezone(-offset if zone[0] == "-" else offset)
    try:
        return local.replace(tzinfo=tz).astimezone(UTC)
    except OverflowError:
        raise _Bad(Kind.OUT_OF_RANGE, _TSTZ_FORMAT, "outside years 1..9999 in UTC") from None


_UUID_RE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", re.ASCII
)
_UUID_FORMAT = "uuid (8-4-4-4-12 hex)"


def _uuid(value: Any) -> str:
    if not _UUID_RE.fullmatch(_text_of(value, _UUID_FORMAT)):
        raise _Bad(Kind.TYPE_MISMATCH, _UUID_FORMAT, "string is not a canonical uuid")
    return value.lower()


def _b64(value: Any, expected: str) -> bytes:
    try:
        return base64.b64decode(_text_of(value, expected), validate=True)
    except (binascii.Error, ValueError):
        raise _Bad(Kind.TYPE_MISMATCH, expected, "string is not valid padded base64") from None


def _binary(value: Any) -> bytes:
    return _b64(value, "binary (base64)")


def _fixed(length: int) -> Converter:
    expected = f"fixed[{length}] (base64)"

    def convert(value: Any) -> bytes:
        raw = _b64(value, expected)
        if len(raw) != length:
            raise _Bad(Kind.TYPE_MISMATCH, expected, f"decodes to {len(raw)} bytes")
        return raw

    return convert


def _missing(expected: str) -> _Bad:
    return _Bad(Kind.MISSING_REQUIRED, expected, "required value is missing or null")


def _list(element: Converter, required: bool, expected_element: str) -> Converter:
    def convert(value: Any) -> list[Any]:
        if type(value) is not list:
            raise _mismatch("list (JSON array)", value)
        out: list[Any] = []
        for index, item in enumerate(value):
            try:
                if item is None:
                    if required:
                        raise _missing(expected_element)
                    out.append(None)
                else:
                    out.append(element(item))
            except _Bad as bad:
                bad.segments.append(f"[{index}]")
                raise
        return out

    return convert


def _map(value_conv: Converter, required: bool, expected_value: str) -> Converter:
    def convert(value: Any) -> dict[str, Any]:
        if type(value) is not dict:
            raise _mismatch("map (JSON object)", value)
        out: dict[str, Any] = {}
        for key, item in value.items():
            try:
                _check_text(key, "string map key")
                if item is None:
                    if required:
                        raise _missing(expected_value)
                    out[key] = None
                else:
                    out[key] = value_conv(item)
            except _Bad as bad:
                bad.segments.append(_key_segment(key))
                raise
        return out

    return convert


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    folded: str
    convert: Converter
    required: bool
    expected: str


def _struct(fields: tuple[_Field, ...], case_insensitive: bool) -> Callable[[Any], dict[str, Any]]:
    exact_names = frozenset(f.name for f in fields)

    def fold_keys(obj: dict[str, Any]) -> dict[str, list[str]]:
        folded: dict[str, list[str]] = {}
        for key in obj:
            if key not in exact_names:
                folded.setdefault(key.lower(), []).append(key)
        return folded

    def convert(value: Any) -> dict[str, Any]:
        if type(value) is not dict:
            raise _mismatch("struct (JSON object)", value)
        out: dict[str, Any] = {}
        folded: dict[str, list[str]] | None = None
        for field in fields:
            try:
                if field.name in value:
                    item = value[field.name]
                elif case_insensitive:
                    if folded is None:
                        folded = fold_keys(value)
                    keys = folded.get(field.folded)
                    if not keys:
                        item = None
                    elif len(keys) > 1:
                        raise _Bad(
                            Kind.AMBIGUOUS_FIELD,
                            field.expected,
                            f"keys {sorted(keys)!r} all match the field case-insensitively",
                        )
                    else:
                        item = value[keys[0]]
                else:
                    item = None
                if item is None:
                    if field.required:
                        raise _missing(field.expected)
                    out[field.name] = None
                else:
                    out[field.name] = field.convert(item)
            except _Bad as bad:
                bad.segments.append(field.name)
                raise
        return out

    return convert


def _describe(t: it.IcebergType) -> str:
    if isinstance(t, it.ListType):
        return "list (JSON array)"
    if isinstance(t, it.MapType):
        return "map (JSON object)"
    if isinstance(t, it.StructType):
        return "struct (JSON object)"
    return str(t)


_PRIMITIVES: dict[type[it.IcebergType], Converter] = {
    it.BooleanType: _boolean,
    it.IntegerType: _integer("int", INT_MIN, INT_MAX),
    it.LongType: _integer("long", LONG_MIN, LONG_MAX),
    it.FloatType: _float,
    it.DoubleType: _double,
    it.StringType: _string,
    it.DateType: _date,
    it.TimeType: _time,
    it.TimestampType: _timestamp,
    it.TimestamptzType: _timestamptz,
    it.UUIDType: _uuid,
    it.BinaryType: _binary,
}


def _compile(t: it.IcebergType, case_insensitive: bool, where: str) -> Converter:
    if isinstance(t, it.StructType):
        return _struct(_compile_fields(t.fields, case_insensitive, where), case_insensitive)
    if isinstance(t, it.ListType):
        element = _compile(t.element_type, case_insensitive, where + "[]")
        return _list(element, t.element_required, _describe(t.element_type))
    if isinstance(t, it.MapType):
        if not isinstance(t.key_type, it.StringType):
            raise SchemaMismatch(
                f"{where}: map keys of type {t.key_type} cannot come from JSON object keys; "
                "only string keys are supported"
            )
        value = _compile(t.value_type, case_insensitive, where + "[]")
        return _map(value, t.value_required, _describe(t.value_type))
    if isinstance(t, it.DecimalType):
        return _decimal(t.precision, t.scale)
    if isinstance(t, it.FixedType):
        return _fixed(len(t))
    converter = _PRIMITIVES.get(type(t))
    if converter is None:
        raise SchemaMismatch(f"{where}: the loader cannot load columns of type {t}")
    return converter


def _compile_fields(
    fields: tuple[it.NestedField, ...], case_insensitive: bool, where: str
) -> tuple[_Field, ...]:
    return tuple(
        _Field(
            name=f.name,
            folded=f.name.lower(),
            convert=_compile(
                f.field_type, case_insensitive, f"{where}.{f.name}" if where else f.name
            ),
            required=f.required,
            expected=_describe(f.field_type),
        )
        for f in fields
    )


def _key_segment(key: str) -> str:
    """A map key as a path segment: ``["k"]``, a lone surrogate written as its escape.

    The path travels in a reject (Arrow, the dead-letter headers), which hold UTF-8 only.
    """
    quoted = json.dumps(key, ensure_ascii=False)
    return "[" + quoted.encode("utf-8", "backslashreplace").decode("utf-8") + "]"


def _path(segments: list[str]) -> str:
    if not segments:
        return "$"
    parts: list[str] = []
    for segment in reversed(segments):
        if parts and not segment.startswith("["):
            parts.append(".")
        parts.append(segment)
    return "".join(parts)


class RowParser:
    """A table schema compiled for parsing; build one per schema version.

    Args:
        schema: the table's current Iceberg schema.
        case_insensitive: match JSON keys to field names ignoring case.

    Raises:
        SchemaMismatch: the schema holds a type the loader cannot load
            (nanosecond timestamps, variant, geometry, non-string map keys, ...).
    """

    def __init__(self, schema: Schema, *, case_insensitive: bool = True) -> None:
        self.schema = schema
        self.case_insensitive = case_insensitive
        self.fields = _compile_fields(schema.fields, case_insensitive, "")
        self._convert = _struct(self.fields, case_insensitive)

    def parse_object(self, doc: object) -> dict[str, Any]:
        """Convert a decoded JSON document into a row.

        Args:
            doc: the output of ``load_json`` (possibly transformed).

        Returns:
            ``{field name: Python value}`` for every top-level field, in schema order.

        Raises:
            MalformedRecord: the document does not fit the schema.
        """
        if type(doc) is not dict:
            raise MalformedRecord(
                Kind.NOT_AN_OBJECT, "$", "JSON object", f"root is a JSON {json_type_name(doc)}"
            )
        try:
            return self._convert(doc)
        except _Bad as bad:
            raise MalformedRecord(bad.kind, _path(bad.segments), bad.expected, bad.reason) from None

    def parse(
        self,
        value: bytes | bytearray | memoryview | None,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_depth: int = DEFAULT_MAX_DEPTH,
    ) -> dict[str, Any]:
        """Decode and convert one record value; see ``parse_row``."""
        return self.parse_object(load_json(value, max_bytes=max_bytes, max_depth=max_depth))


_CACHE_SIZE = 8
_cache: list[tuple[Schema, bool, RowParser]] = []
_cache_lock = threading.Lock()


def row_parser(schema: Schema, *, case_insensitive: bool = True) -> RowParser:
    """A compiled ``RowParser`` for ``schema``, reused while the same object is passed.

    Schemas are unhashable, so the cache matches by identity, which is what a
    loader holding the current schema object per batch needs.

    Args:
        schema: the table's current Iceberg schema.
        case_insensitive: match JSON keys to field names ignoring case.

    Returns:
        The compiled parser.

    Raises:
        SchemaMismatch: the schema holds a type the loader cannot load.
    """
    with _cache_lock:
        for cached_schema, cached_ci, parser in _cache:
            if cached_schema is schema and cached_ci == case_insensitive:
                return parser
    parser = RowParser(schema, case_insensitive=case_insensitive)
    with _cache_lock:
        _cache.insert(0, (schema, case_insensitive, parser))
        del _cache[_CACHE_SIZE:]
    return parser


def parse_row(
    value: bytes | bytearray | memoryview | None,
    schema: Schema,
    *,
    case_insensitive: bool = True,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> dict[str, Any]:
    """Parse one JSON message into a row of ``schema``.

    See the module docstring for the accepted JSON per type and the Python
    value returned per type.

    Args:
        value: the Kafka record value (UTF-8 JSON object), ``None`` for a tombstone.
        schema: the table's current Iceberg schema.
        case_insensitive: match JSON keys to field names ignoring case
            (an exact match wins).
        max_bytes: larger payloads are rejected as ``too_large``.
        max_depth: deeper nesting is rejected as ``too_deep``.

    Returns:
        ``{field name: Python value or None}`` for every top-level field, in schema order.

    Raises:
        MalformedRecord: with ``kind``, ``path`` and ``expected`` saying what is wrong where.
        SchemaMismatch: the schema holds a type the loader cannot load.
    """
    parser = row_parser(schema, case_insensitive=case_insensitive)
    return parser.parse(value, max_bytes=max_bytes, max_depth=max_depth)


# ---------------------------------------------------------------------------
# Type mappings for the wiring
# ---------------------------------------------------------------------------


def spark_schema(schema: Schema) -> st.StructType:
    """The Spark type of rows produced by ``parse_row`` for ``schema``.

    uuid maps to ``StringType`` (as in Iceberg's Spark integration), fixed to
    ``BinaryType``, timestamp to ``TimestampNTZType``, timestamptz to
    ``TimestampType``; time has no mapping (see ``SchemaMismatch`` below).

    Args:
        schema: an Iceberg schema.

    Returns:
        A ``pyspark.sql.types.StructType``; nullability follows ``required``.

    Raises:
        SchemaMismatch: a type with no Spark equivalent the loader supports, time
            included: Iceberg's Spark runtime refuses tables with time columns.
    """
    from pyspark.sql import types as st

    def convert(t: it.IcebergType) -> st.DataType:
        if isinstance(t, it.StructType):
            return st.StructType(
                [st.StructField(f.name, convert(f.field_type), not f.required) for f in t.fields]
            )
        if isinstance(t, it.ListType):
            return st.ArrayType(convert(t.element_type), not t.element_required)
        if isinstance(t, it.MapType):
            return st.MapType(convert(t.key_type), convert(t.value_type), not t.value_required)
        if isinstance(t, it.DecimalType):
            return st.DecimalType(t.precision, t.scale)
        if isinstance(t, it.TimeType):
            raise SchemaMismatch(
                "the table has an Iceberg time column, which Spark cannot load: Iceberg's Spark "
                "runtime (1.11, for Spark 4.1) maps no Spark type to Iceberg's time and refuses "
                "the table ('Spark does not support time fields')"
            )
        simple: dict[type[it.IcebergType], Callable[[], st.DataType]] = {
            it.BooleanType: st.BooleanType,
            it.IntegerType: st.IntegerType,
            it.LongType: st.LongType,
            it.FloatType: st.FloatType,
            it.DoubleType: st.DoubleType,
            it.StringType: st.StringType,
            it.DateType: st.DateType,
            it.TimestampType: st.TimestampNTZType,
            it.TimestamptzType: st.TimestampType,
            it.UUIDType: st.StringType,
            it.BinaryType: st.BinaryType,
            it.FixedType: st.BinaryType,
        }
        factory = simple.get(type(t))
        if factory is None:
            raise SchemaMismatch(f"no Spark type for Iceberg type {t}")
        return factory()

    result = convert(schema.as_struct())
    assert isinstance(result, st.StructType)
    return result


def arrow_schema(schema: Schema) -> pa.Schema:
    """The Arrow schema of rows produced by ``parse_row`` for ``schema``.

    ``pa.Table.from_pylist(rows, schema=arrow_schema(schema))`` accepts the rows
    as they are.  Fields carry ``PARQUET:field_id`` metadata like pyiceberg's.
    uuid maps to ``string`` (parse_row yields canonical strings), fixed(n) to
    ``binary(n)``, timestamptz to ``timestamp[us, tz=UTC]``.

    Args:
        schema: an Iceberg schema.

    Returns:
        A ``pyarrow.Schema``.

    Raises:
        SchemaMismatch: a type with no Arrow equivalent the loader supports.
    """
    import pyarrow as pa

    def field(name: str, field_id: int, t: it.IcebergType, required: bool) -> pa.Field:
        return pa.field(
            name, convert(t), nullable=not required, metadata={"PARQUET:field_id": str(field_id)}
        )

    def convert(t: it.IcebergType) -> pa.DataType:
        if isinstance(t, it.StructType):
            return pa.struct(
                [field(f.name, f.field_id, f.field_type, f.required) for f in t.fields]
            )
        if isinstance(t, it.ListType):
            return pa.list_(field("element", t.element_id, t.element_type, t.element_required))
        if isinstance(t, it.MapType):
            return pa.map_(
                field("key", t.key_id, t.key_type, True),
                field("value", t.value_id, t.value_type, t.value_required),
            )
        if isinstance(t, it.DecimalType):
            return pa.decimal128(t.precision, t.scale)
        if isinstance(t, it.FixedType):
            return pa.binary(len(t))
        simple: dict[type[it.IcebergType], Callable[[], pa.DataType]] = {
            it.BooleanType: pa.bool_,
            it.IntegerType: pa.int32,
            it.LongType: pa.int64,
            it.FloatType: pa.float32,
            it.DoubleType: pa.float64,
            it.StringType: pa.string,
            it.DateType: pa.date32,
            it.TimeType: lambda: pa.time64("us"),
            it.TimestampType: lambda: pa.timestamp("us"),
            it.TimestamptzType: lambda: pa.timestamp("us", tz="UTC"),
            it.UUIDType: pa.string,
            it.BinaryType: pa.binary,
        }
        factory = simple.get(type(t))
        if factory is None:
            raise SchemaMismatch(f"no Arrow type for Iceberg type {t}")
        return factory()

    return pa.schema([field(f.name, f.field_id, f.field_type, f.required) for f in schema.fields])
