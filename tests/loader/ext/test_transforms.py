"""Transforms: JSON pointers, unnest, projections, case conversion and their order."""

from __future__ import annotations

import pytest

from icefloe.loader.config import CASE_FORMATS, Transform
from icefloe.loader.decode.record import KafkaMeta
from icefloe.loader.errors import ConfigError, MalformedRecord
from icefloe.loader.ext.transforms import (
    CaseFormat,
    JsonPointer,
    Projection,
    apply,
    convert_case,
    convert_keys,
)

LC, UC, LU, UU, LH = (
    CaseFormat.LOWER_CAMEL,
    CaseFormat.UPPER_CAMEL,
    CaseFormat.LOWER_UNDERSCORE,
    CaseFormat.UPPER_UNDERSCORE,
    CaseFormat.LOWER_HYPHEN,
)

META = KafkaMeta(
    topic="events",
    partition=3,
    offset=42,
    timestamp_ms=1658796108046,
    key=b"user-7",
    headers=(("trace", b"abc"), ("bin", b"\xff\x00"), ("trace", b"def")),
)


# --- JSON pointer ----------------------------------------------------------------

DOC = {"foo": ["bar", "baz"], "": 0, "a/b": 1, "m~n": 8, " ": 7, "data": {"x": {"y": None}}}


@pytest.mark.parametrize(
    ("pointer", "expected"),
    [
        ("", DOC),
        ("/foo", ["bar", "baz"]),
        ("/foo/0", "bar"),
        ("/", 0),
        ("/a~1b", 1),
        ("/m~0n", 8),
        ("/ ", 7),
        ("/data/x/y", None),
    ],
)
def test_pointer_resolves_rfc6901_examples(pointer: str, expected: object) -> None:
    assert JsonPointer.parse(pointer).resolve(DOC, "missing") == expected


@pytest.mark.parametrize(
    "pointer", ["/nope", "/foo/2", "/foo/-", "/foo/01", "/foo/x", "/data/x/y/z"]
)
def test_pointer_selecting_nothing_gives_default(pointer: str) -> None:
    assert JsonPointer.parse(pointer).resolve(DOC, "missing") == "missing"


def test_pointer_unescapes_tilde_one_before_tilde_zero() -> None:
    assert JsonPointer.parse("/~01").tokens == ("~1",)


@pytest.mark.parametrize("pointer", ["data", "/a~2", "/a~"])
def test_invalid_pointers_are_config_errors(pointer: str) -> None:
    with pytest.raises(ConfigError):
        JsonPointer.parse(pointer)


# --- case conversion -------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "target", "name", "expected"),
    [
        (LC, LU, "fooBar", "foo_bar"),
        (LC, LU, "fooBarBaz", "foo_bar_baz"),
        (LC, LU, "foo", "foo"),
        (LC, LU, "", ""),
        (LC, LU, "HTTPRequest", "h_t_t_p_request"),
        (LC, LU, "field1Name", "field1_name"),
        (LC, LU, "éclairCake", "éclair_cake"),
        (LC, UU, "fooBar", "FOO_BAR"),
        (LC, LH, "fooBar", "foo-bar"),
        (LC, UC, "fooBar", "FooBar"),
        (UC, LC, "FooBar", "fooBar"),
        (UC, LU, "FooBar", "foo_bar"),
        (UC, LH, "FooBarBaz", "foo-bar-baz"),
        (LU, LC, "foo_bar", "fooBar"),
        (LU, LC, "foo__bar", "fooBar"),
        (LU, UC, "foo_bar", "FooBar"),
        (LU, UC, "FOO_bar", "FooBar"),
        (LU, LH, "foo_bar", "foo-bar"),
        (LU, UU, "foo_bar", "FOO_BAR"),
        (UU, LC, "FOO_BAR", "fooBar"),
        (UU, UC, "FOO_BAR", "FooBar"),
        (UU, LU, "FOO_BAR", "foo_bar"),
        (LH, UU, "foo-bar", "FOO_BAR"),
        (LH, LC, "foo-bar-baz", "fooBarBaz"),
        (LH, LU, "foo-bar", "foo_bar"),
        (LU, LU, "fooBar", "fooBar"),
    ],
)
def test_convert_case(source: CaseFormat, target: CaseFormat, name: str, expected: str) -> None:
    assert convert_case(name, source, target) == expected


@pytest.mark.parametrize("name", ["lowerCamel", "LOWER_CAMEL"])
def test_case_format_parses_both_spellings(name: str) -> None:
    assert CaseFormat.parse(name) is LC


def test_case_format_rejects_unknown_names() -> None:
    with pytest.raises(ConfigError, match="snake"):
        CaseFormat.parse("snake")


def test_convert_keys_recurses_into_objects_and_arrays() -> None:
    doc = {
        "userId": 1,
        "homeAddress": {"zipCode": "x"},
        "lineItems": [{"skuId": 1}, 2, [{"aB": 3}]],
    }
    assert convert_keys(doc, LC, LU) == {
        "user_id": 1,
        "home_address": {"zip_code": "x"},
        "line_items": [{"sku_id": 1}, 2, [{"a_b": 3}]],
    }


def test_convert_keys_collision_is_ambiguous() -> None:
    with pytest.raises(MalformedRecord) as info:
        convert_keys({"outer": [{"fooBar": 1, "FooBar": 2}]}, LC, LU)
    assert (info.value.kind, info.value.path) == ("ambiguous_field", "outer[0]")


# --- projections --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("kafka:topic", "events"),
        ("kafka:partition", 3),
        ("kafka:offset", 42),
        ("kafka:timestamp", "2022-07-26T00:41:48.046000Z"),
        ("kafka:timestamp_ms", 1658796108046),
        ("kafka:key", "user-7"),
        ("kafka:key_base64", "dXNlci03"),
        ("kafka:header:trace", "def"),
        ("kafka:header_base64:bin", "/wA="),
        ("kafka:header:absent", None),
        ("kafka:headers_base64", {"trace": "ZGVm", "bin": "/wA="}),
        ("/id", "e-1"),
        ("/data/Amount", 5),
        ("/nope", None),
    ],
)
def test_projection_sources(source: str, expected: object) -> None:
    doc = {"id": "e-1", "data": {"Amount": 5}}
    assert Projection("col", source).extract(doc, META) == expected


def test_projection_of_non_utf8_text_is_malformed_at_the_column() -> None:
    with pytest.raises(MalformedRecord) as info:
        Projection("hdrs", "kafka:headers").extract({}, META)
    assert (info.value.kind, info.value.path) == ("invalid_utf8", "hdrs")


def test_missing_metadata_gives_null() -> None:
    meta = KafkaMeta("t", 0, 1, timestamp_ms=-1)
    assert Projection("c", "kafka:timestamp").extract({}, meta) is None
    assert Projection("c", "kafka:key").extract({}, meta) is None


@pytest.mark.parametrize("source", ["kafka:nope", "kafka:header:", "kafka:", "nope"])
def test_unknown_projection_sources_are_config_errors(source: str) -> None:
    with pytest.raises(ConfigError):
        Projection("c", source)


# --- the whole transform --------------------------------------------------------------

CLOUD_EVENT = {
    "specversion": "1.0",
    "id": "ev-1",
    "type": "order.created",
    "data": {"orderId": 7, "lineItems": [{"skuId": "a"}], "eventId": "inner"},
}


def test_identity_transform_returns_the_document() -> None:
    assert apply(CLOUD_EVENT, META, Transform()) is CLOUD_EVENT


def test_order_projections_unnest_case_merge() -> None:
    transform = Transform(
        unnest="/data",
        projections=(
            Projection("eventId", "/id"),  # from the original, name not converted
            Projection("source_offset", "kafka:offset"),
        ),
        case_from=LC,
        case_to=LU,
    )
    assert apply(CLOUD_EVENT, META, transform) == {
        "order_id": 7,
        "line_items": [{"sku_id": "a"}],
        "event_id": "inner",
        "eventId": "ev-1",
        "source_offset": 42,
    }


def test_projected_value_is_taken_verbatim() -> None:
    transform = Transform(projections=(Projection("raw_data", "/data"),), case_from=LC, case_to=LU)
    out = apply(CLOUD_EVENT, META, transform)
    assert out["raw_data"] == CLOUD_EVENT["data"]  # type: ignore[index]
    assert "order_id" in out["data"]  # type: ignore[index]


def test_projection_into_the_unnested_object_does_not_create_cycles() -> None:
    doc = {"data": {"a": 1}}
    out = apply(doc, META, Transform(unnest="/data", projections=(Projection("whole", "/data"),)))
    assert out == {"a": 1, "whole": {"a": 1}}
    assert doc == {"data": {"a": 1}}


def test_projection_replaces_a_message_key() -> None:
    out = apply(
        {"topic": "mine"}, META, Transform(projections=(Projection("topic", "kafka:topic"),))
    )
    assert out == {"topic": "events"}


@pytest.mark.parametrize(
    ("doc", "kind"),
    [
        ({"other": 1}, "unnest_missing"),
        ({"data": None}, "not_an_object"),
        ({"data": [1]}, "not_an_object"),
        ("scalar", "unnest_missing"),
    ],
)
def test_unnest_target_must_be_an_object(doc: object, kind: str) -> None:
    with pytest.raises(MalformedRecord) as info:
        apply(doc, META, Transform(unnest="/data"))
    assert (info.value.kind, info.value.path) == (kind, "/data")


def test_non_object_root_with_projections() -> None:
    with pytest.raises(MalformedRecord) as info:
        apply([1], META, Transform(projections=(Projection("t", "kafka:topic"),)))
    assert (info.value.kind, info.value.path) == ("not_an_object", "$")


def test_transform_validation() -> None:
    with pytest.raises(ConfigError, match="both"):
        Transform(case_from=LC)
    with pytest.raises(ConfigError, match="several"):
        Transform(projections=(Projection("a", "/x"), Projection("a", "/y")))
    with pytest.raises(ConfigError):
        Transform(unnest="data")


def test_the_settings_name_every_case_format() -> None:
    # The [transform] help lines list the formats without importing this module.
    assert tuple(f.value for f in CaseFormat) == CASE_FORMATS
