"""Explicit rules of parse_row: what each column type accepts, and every rejection."""

from __future__ import annotations

import pickle
import uuid
from datetime import UTC, date, datetime, time
from decimal import Decimal

import pytest
from pyiceberg import types as it
from pyiceberg.schema import Schema

from icefloe.loader.decode.parse import load_json, parse_row, row_parser
from icefloe.loader.errors import Kind, MalformedRecord, SchemaMismatch

SCHEMA = Schema(
    it.NestedField(1, "id", it.LongType(), required=True),
    it.NestedField(2, "flag", it.BooleanType(), required=False),
    it.NestedField(3, "small", it.IntegerType(), required=False),
    it.NestedField(4, "ratio", it.FloatType(), required=False),
    it.NestedField(5, "score", it.DoubleType(), required=False),
    it.NestedField(6, "amount", it.DecimalType(9, 2), required=False),
    it.NestedField(7, "name", it.StringType(), required=False),
    it.NestedField(8, "day", it.DateType(), required=False),
    it.NestedField(9, "at", it.TimeType(), required=False),
    it.NestedField(10, "local_ts", it.TimestampType(), required=False),
    it.NestedField(11, "ts", it.TimestamptzType(), required=False),
    it.NestedField(12, "uid", it.UUIDType(), required=False),
    it.NestedField(13, "blob", it.BinaryType(), required=False),
    it.NestedField(14, "digest", it.FixedType(4), required=False),
    it.NestedField(
        15, "integers", it.ListType(16, it.IntegerType(), element_required=False), required=False
    ),
    it.NestedField(
        17,
        "string_map",
        it.MapType(18, it.StringType(), 19, it.LongType(), value_required=False),
        required=False,
    ),
    it.NestedField(
        20,
        "nested",
        it.StructType(
            it.NestedField(21, "value", it.IntegerType(), required=False),
            it.NestedField(
                22,
                "items",
                it.ListType(
                    23,
                    it.StructType(it.NestedField(24, "code", it.StringType(), required=True)),
                    element_required=True,
                ),
                required=False,
            ),
        ),
        required=False,
    ),
)


def parse(text: str | bytes, **kwargs: object) -> dict[str, object]:
    raw = text.encode() if isinstance(text, str) else text
    return parse_row(raw, SCHEMA, **kwargs)  # type: ignore[arg-type]


def document(name: str, json_value: str) -> str:
    head = "" if name == "id" else '"id": 1, '
    return f'{{{head}"{name}": {json_value}}}'


def field(name: str, json_value: str) -> object:
    return parse(document(name, json_value))[name]


def reject(text: str | bytes | None, **kwargs: object) -> MalformedRecord:
    raw = text.encode() if isinstance(text, str) else text
    with pytest.raises(MalformedRecord) as info:
        parse_row(raw, SCHEMA, **kwargs)  # type: ignore[arg-type]
    return info.value


def reject_field(name: str, json_value: str) -> MalformedRecord:
    return reject(document(name, json_value))


# --- accepted values ---------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "json_value", "expected"),
    [
        ("flag", "true", True),
        ("small", "-2147483648", -(2**31)),
        ("small", "2147483647", 2**31 - 1),
        ("id", "9223372036854775807", 2**63 - 1),
        ("score", "1", 1.0),
        ("score", "1.5e300", 1.5e300),
        ("score", "1e-400", 0.0),  # underflow rounds, as any float parse does
        ("ratio", "0.5", 0.5),
        ("amount", "12.5", Decimal("12.50")),
        ("amount", '"12.50"', Decimal("12.50")),
        ("amount", "1.500", Decimal("1.50")),  # trailing zeros are exact
        ("amount", "-1234567.89", Decimal("-1234567.89")),
        ("amount", "1e2", Decimal("100.00")),
        ("amount", '"0E-8"', Decimal("0.00")),
        ("name", '"héllo \\u2603"', "héllo ☃"),
        ("day", '"2022-07-26"', date(2022, 7, 26)),
        ("at", '"23:59:59"', time(23, 59, 59)),
        ("at", '"00:00:00.5"', time(0, 0, 0, 500000)),
        ("local_ts", '"2022-07-26T00:41:48.046773"', datetime(2022, 7, 26, 0, 41, 48, 46773)),
        ("ts", '"2022-07-26T00:41:48Z"', datetime(2022, 7, 26, 0, 41, 48, tzinfo=UTC)),
        (
            "ts",
            '"2022-07-26T00:41:48.046773-07:00"',
            datetime(2022, 7, 26, 7, 41, 48, 46773, tzinfo=UTC),
        ),
        ("ts", '"2022-07-26T05:30:00+05:30"', datetime(2022, 7, 26, 0, 0, tzinfo=UTC)),
        (
            "uid",
            '"A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"',
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        ),
        ("blob", '"aGVsbG8="', b"hello"),
        ("blob", '""', b""),
        ("digest", '"AQIDBA=="', b"\x01\x02\x03\x04"),
        ("integers", "[1, null, 3]", [1, None, 3]),
        ("integers", "[]", []),
        ("string_map", '{"k": 1, "K": null}', {"k": 1, "K": None}),
        (
            "nested",
            '{"value": 3, "items": [{"code": "a"}]}',
            {"value": 3, "items": [{"code": "a"}]},
        ),
    ],
)
def test_accepts(name: str, json_value: str, expected: object) -> None:
    value = field(name, json_value)
    assert value == expected
    assert type(value) is type(expected)


def test_timestamptz_is_utc_and_timestamp_is_naive() -> None:
    row = parse('{"id": 1, "ts": "2022-07-26T00:41:48+02:00", "local_ts": "2022-07-26T00:41:48"}')
    assert row["ts"].tzinfo is UTC  # type: ignore[union-attr]
    assert row["local_ts"].tzinfo is None  # type: ignore[union-attr]


def test_uuid_is_canonical_string() -> None:
    value = field("uid", '"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"')
    assert isinstance(value, str)
    assert str(uuid.UUID(value)) == value


def test_float_is_rounded_to_float32() -> None:
    assert field("ratio", "0.1") == pytest.approx(0.1, rel=1e-7)
    assert field("ratio", "0.1") != 0.1


def test_decimal_keeps_column_scale() -> None:
    value = field("amount", "7")
    assert str(value) == "7.00"


def test_missing_and_null_are_none_and_extra_keys_ignored() -> None:
    row = parse('{"id": 1, "flag": null, "unknown": {"deep": [1, 2]}}')
    assert row["flag"] is None
    assert row["name"] is None
    assert "unknown" not in row
    assert list(row) == [f.name for f in SCHEMA.fields]


# --- field names ---------------------------------------------------------------


def test_names_match_case_insensitively_by_default() -> None:
    row = parse('{"ID": 7, "Nested": {"VALUE": 3}}')
    assert row["id"] == 7
    assert row["nested"] == {"value": 3, "items": None}


def test_exact_match_wins_over_case_insensitive() -> None:
    assert parse('{"id": 1, "Flag": false, "flag": true}')["flag"] is True


def test_ambiguous_case_insensitive_keys_are_rejected() -> None:
    err = reject('{"id": 1, "Flag": false, "FLAG": true}')
    assert (err.kind, err.path) == ("ambiguous_field", "flag")


def test_case_sensitive_mode_ignores_other_cases() -> None:
    assert parse('{"id": 1, "Flag": true}', case_insensitive=False)["flag"] is None
    err = reject('{"ID": 1}', case_insensitive=False)
    assert (err.kind, err.path) == ("missing_required", "id")


def test_key_used_exactly_is_not_reused_for_another_field() -> None:
    schema = Schema(
        it.NestedField(1, "a", it.LongType(), required=False),
        it.NestedField(2, "A", it.LongType(), required=False),
    )
    assert parse_row(b'{"a": 1}', schema) == {"a": 1, "A": None}
    assert parse_row(b'{"a": 1, "A": 2}', schema) == {"a": 1, "A": 2}


# --- rejections ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "json_value", "kind", "expected"),
    [
        ("flag", '"yes"', "type_mismatch", "boolean"),
        ("flag", "1", "type_mismatch", "boolean"),
        ("id", "1.5", "type_mismatch", "long"),
        ("id", "2.0", "type_mismatch", "long"),
        ("id", "1e3", "type_mismatch", "long"),
        ("id", '"12"', "type_mismatch", "long"),
        ("id", "true", "type_mismatch", "long"),
        ("id", "9223372036854775808", "out_of_range", "long"),
        ("id", "-9223372036854775809", "out_of_range", "long"),
        ("id", "1" + "0" * 5000, "out_of_range", "long"),
        ("small", "2147483648", "out_of_range", "int"),
        ("small", "-2147483649", "out_of_range", "int"),
        ("score", "1e309", "out_of_range", "double"),
        ("score", "1" + "0" * 400, "out_of_range", "double"),
        ("score", '"1.0"', "type_mismatch", "double"),
        ("score", "1e99999999999999999999", "out_of_range", "double"),
        ("ratio", "3.5e38", "out_of_range", "float"),
        ("amount", "1.234", "out_of_range", "decimal(9, 2)"),
        ("amount", "12345678", "out_of_range", "decimal(9, 2)"),
        ("amount", '"1_000"', "type_mismatch", "decimal(9, 2)"),
        ("amount", '" 1"', "type_mismatch", "decimal(9, 2)"),
        ("amount", '"NaN"', "type_mismatch", "decimal(9, 2)"),
        ("amount", "true", "type_mismatch", "decimal(9, 2)"),
        ("name", '{"a": 1}', "type_mismatch", "string"),
        ("name", "[]", "type_mismatch", "string"),
        ("name", "12", "type_mismatch", "string"),
        ("name", "1.5", "type_mismatch", "string"),
        ("name", "false", "type_mismatch", "string"),
        ("name", '"\\ud800"', "invalid_utf8", "string"),
        ("day", '"2022-02-30"', "type_mismatch", "date (YYYY-MM-DD)"),
        ("day", '"20220726"', "type_mismatch", "date (YYYY-MM-DD)"),
        ("day", '"2022-07-26T00:00:00"', "type_mismatch", "date (YYYY-MM-DD)"),
        ("day", '"२०२२-07-26"', "type_mismatch", "date (YYYY-MM-DD)"),
        ("at", '"24:00:00"', "type_mismatch", "time (HH:MM:SS[.ffffff])"),
        ("at", '"12:00:00.1234567"', "type_mismatch", "time (HH:MM:SS[.ffffff])"),
        ("local_ts", '"2022-07-26T00:41:48Z"', "type_mismatch", None),
        ("local_ts", '"2022-07-26T00:41:48+01:00"', "type_mismatch", None),
        ("local_ts", '"2022-07-26 00:41:48"', "type_mismatch", None),
        ("local_ts", '"yesterday"', "type_mismatch", None),
        ("ts", '"2022-07-26T00:41:48"', "type_mismatch", None),
        ("ts", '"2022-07-26T00:41:48.0467731Z"', "type_mismatch", None),
        ("ts", '"2022-07-26T00:41:48+0100"', "type_mismatch", None),
        ("ts", '"2022-07-26T00:41:48z"', "type_mismatch", None),
        ("ts", '"2022-07-26T00:41:48+24:00"', "type_mismatch", None),
        ("ts", '"0001-01-01T00:00:00+01:00"', "out_of_range", None),
        ("ts", "1658796108", "type_mismatch", None),
        ("uid", '"a0eebc999c0b4ef8bb6d6bb9bd380a11"', "type_mismatch", None),
        ("uid", '"{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}"', "type_mismatch", None),
        ("blob", '"aGVsbG8"', "type_mismatch", "binary (base64)"),
        ("blob", '"a*b="', "type_mismatch", "binary (base64)"),
        ("digest", '"AQID"', "type_mismatch", "fixed[4] (base64)"),
        ("integers", '{"0": 1}', "type_mismatch", "list (JSON array)"),
        ("string_map", "[]", "type_mismatch", "map (JSON object)"),
        ("nested", '"x"', "type_mismatch", "struct (JSON object)"),
    ],
)
def test_rejects(name: str, json_value: str, kind: str, expected: str | None) -> None:
    err = reject_field(name, json_value)
    assert err.kind == kind
    assert err.path == name
    if expected is not None:
        assert err.expected == expected
    assert name in str(err)


@pytest.mark.parametrize(
    ("json_text", "path", "kind"),
    [
        ('{"id": 1, "nested": {"value": 1.5}}', "nested.value", "type_mismatch"),
        ('{"id": 1, "integers": [1, 2, "x"]}', "integers[2]", "type_mismatch"),
        ('{"id": 1, "string_map": {"k": "v"}}', 'string_map["k"]', "type_mismatch"),
        ('{"id": 1, "string_map": {"a\\"b": 1.5}}', 'string_map["a\\"b"]', "type_mismatch"),
        (
            '{"id": 1, "nested": {"items": [{"code": "a"}, {}]}}',
            "nested.items[1].code",
            "missing_required",
        ),
        ('{"id": 1, "nested": {"items": [null]}}', "nested.items[0]", "missing_required"),
        ('{"id": null}', "id", "missing_required"),
        ("{}", "id", "missing_required"),
    ],
)
def test_rejects_nested_with_path(json_text: str, path: str, kind: str) -> None:
    err = reject(json_text)
    assert (err.kind, err.path) == (kind, path)


@pytest.mark.parametrize(
    ("payload", "kind"),
    [
        (None, "empty_payload"),
        (b"", "empty_payload"),
        (b"  \n", "empty_payload"),
        (b"null", "not_an_object"),
        (b"[1, 2]", "not_an_object"),
        (b'"text"', "not_an_object"),
        (b"42", "not_an_object"),
        (b"\xff\xfe{}", "invalid_utf8"),
        (b'{"id": "\xc3\x28"}', "invalid_utf8"),
        (b"{", "invalid_json"),
        (b'{"id": 1,}', "invalid_json"),
        (b'{"id": 1} trailing', "invalid_json"),
        (b'{"id": NaN}', "invalid_json"),
        (b'{"id": Infinity}', "invalid_json"),
        (b'{"id": 1, "id": 2}', "invalid_json"),
        (b'{"id": 1, "nested": {"value": 1, "value": 2}}', "invalid_json"),
        (b"\xef\xbb\xbf{}", "invalid_json"),
    ],
)
def test_rejects_payload_at_root(payload: bytes | None, kind: str) -> None:
    err = reject(payload)
    assert (err.kind, err.path) == (kind, "$")


def test_too_large() -> None:
    err = reject(b'{"id": 1, "name": "' + b"x" * 100 + b'"}', max_bytes=64)
    assert (err.kind, err.path) == ("too_large", "$")


def test_too_deep_limit_is_inclusive() -> None:
    ok = '{"id": 1, "x": ' + "[" * 62 + "]" * 62 + "}"  # root + 62 arrays = depth 63
    assert parse(ok, max_depth=63)["id"] == 1
    err = reject(ok, max_depth=62)
    assert (err.kind, err.path) == ("too_deep", "$")


def test_too_deep_beyond_the_decoder_recursion_limit() -> None:
    err = reject(b"[" * 100_000 + b"]" * 100_000)
    assert err.kind == "too_deep"


def test_brackets_inside_strings_do_not_count_as_depth() -> None:
    assert parse('{"id": 1, "name": "' + "[" * 200 + '"}')["name"] == "[" * 200


def test_accepts_bytearray_and_memoryview() -> None:
    assert parse_row(bytearray(b'{"id": 1}'), SCHEMA)["id"] == 1
    assert parse_row(memoryview(b'{"id": 2}'), SCHEMA)["id"] == 2


def test_load_json_keeps_numbers_distinguishable() -> None:
    doc = load_json(b'{"a": 1, "b": 1.0, "c": 1e3, "d": 123456789012345678901234567890}')
    assert doc == {
        "a": 1,
        "b": Decimal("1.0"),
        "c": Decimal("1e3"),
        "d": 123456789012345678901234567890,
    }
    assert type(doc["a"]) is int  # type: ignore[index]


# --- schemas ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field_type",
    [
        it.TimestampNanoType(),
        it.UnknownType(),
        it.MapType(1, it.IntegerType(), 2, it.StringType()),
    ],
)
def test_unsupported_types_are_schema_mismatch(field_type: it.IcebergType) -> None:
    schema = Schema(it.NestedField(10, "x", field_type, required=False))
    with pytest.raises(SchemaMismatch, match="x"):
        parse_row(b"{}", schema)


def test_row_parser_is_cached_per_schema_object() -> None:
    assert row_parser(SCHEMA) is row_parser(SCHEMA)
    assert row_parser(SCHEMA) is not row_parser(SCHEMA, case_insensitive=False)


def test_errors_survive_pickling() -> None:
    err = reject_field("id", "1.5")
    copy = pickle.loads(pickle.dumps(err))
    assert (copy.kind, copy.path, copy.expected, copy.reason) == (
        err.kind,
        err.path,
        err.expected,
        err.reason,
    )
    assert copy.kind is Kind.TYPE_MISMATCH
