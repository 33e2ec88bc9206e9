"""The per-record pipeline: decode -> transforms -> parse, and dead-letter routing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pyiceberg import types as it
from pyiceberg.schema import Schema

from icefloe.loader import keys
from icefloe.loader.config import DecodeOptions, Transform
from icefloe.loader.decode.record import KafkaMeta, RecordDecoder, route_malformed
from icefloe.loader.errors import MalformedRecord, PoisonMessage, SchemaMismatch
from icefloe.loader.ext.transforms import CaseFormat, Projection

SCHEMA = Schema(
    it.NestedField(1, "order_id", it.LongType(), required=True),
    it.NestedField(2, "event_id", it.StringType(), required=False),
    it.NestedField(3, "kafka_offset", it.LongType(), required=False),
    it.NestedField(4, "kafka_time", it.TimestamptzType(), required=False),
    it.NestedField(
        5,
        "line_items",
        it.ListType(
            6,
            it.StructType(it.NestedField(7, "sku_id", it.StringType(), required=False)),
            element_required=False,
        ),
        required=False,
    ),
)
META = KafkaMeta("orders", 1, 99, timestamp_ms=1658796108046, key=b"k")
OPTIONS = DecodeOptions(
    transform=Transform(
        unnest="/data",
        projections=(
            Projection("event_id", "/id"),
            Projection("kafka_offset", "kafka:offset"),
            Projection("kafka_time", "kafka:timestamp"),
            Projection("not_a_column", "kafka:topic"),
        ),
        case_from=CaseFormat.LOWER_CAMEL,
        case_to=CaseFormat.LOWER_UNDERSCORE,
    )
)
MESSAGE = b'{"id": "ev-1", "data": {"orderId": 7, "lineItems": [{"skuId": "a"}]}}'


def test_decode_runs_the_whole_pipeline() -> None:
    assert RecordDecoder(SCHEMA, OPTIONS).decode(MESSAGE, META) == {
        "order_id": 7,
        "event_id": "ev-1",
        "kafka_offset": 99,
        "kafka_time": datetime(2022, 7, 26, 0, 41, 48, 46000, tzinfo=UTC),
        "line_items": [{"sku_id": "a"}],
    }


def test_decoder_reports_unused_projections() -> None:
    assert RecordDecoder(SCHEMA, OPTIONS).unused_projections == ("not_a_column",)


def test_decode_with_default_options() -> None:
    assert RecordDecoder(SCHEMA).decode(b'{"order_id": 1}', META)["order_id"] == 1


@pytest.mark.parametrize(
    ("payload", "kind", "path"),
    [
        (b'{"id": "x"}', "unnest_missing", "/data"),
        (b'{"data": {"orderId": 1.5}}', "type_mismatch", "order_id"),
        (
            b'{"data": {"lineItems": [{"skuId": 1}], "orderId": 1}}',
            "type_mismatch",
            "line_items[0].sku_id",
        ),
        (b"[]", "unnest_missing", "/data"),
        (None, "empty_payload", "$"),
    ],
)
def test_decode_errors(payload: bytes | None, kind: str, path: str) -> None:
    with pytest.raises(MalformedRecord) as info:
        RecordDecoder(SCHEMA, OPTIONS).decode(payload, META)
    assert (info.value.kind, info.value.path) == (kind, path)


def test_incompatible_kafka_projection_fails_when_compiled() -> None:
    options = DecodeOptions(
        transform=Transform(projections=(Projection("event_id", "kafka:offset"),))
    )
    with pytest.raises(SchemaMismatch, match="event_id"):
        RecordDecoder(SCHEMA, options)


def test_route_malformed_builds_a_dead_letter() -> None:
    meta = KafkaMeta("orders", 2, 5, key=b"k", headers=(("trace", b"t"),))
    error = MalformedRecord("type_mismatch", "order_id", "long", "got JSON string")
    letter = route_malformed(b"{}", meta, error, "orders.dlq", loader_id="L1")
    assert (letter.topic, letter.key, letter.value) == ("orders.dlq", b"k", b"{}")
    headers = dict(letter.headers)
    assert headers["trace"] == b"t"
    assert headers[keys.DLQ_ERROR_KIND] == b"type_mismatch"
    assert headers[keys.DLQ_ERROR_PATH] == b"order_id"
    assert headers[keys.DLQ_SOURCE_OFFSET] == b"5"
    assert headers[keys.DLQ_LOADER_ID] == b"L1"


def test_route_malformed_without_dead_letter_topic_is_poison() -> None:
    error = MalformedRecord("invalid_json", "$", "JSON", "Expecting value")
    with pytest.raises(PoisonMessage) as info:
        route_malformed(b"{", META, error, None)
    message = str(info.value)
    for part in ("orders", "partition 1", "offset 99", "invalid_json", "$"):
        assert part in message
    assert info.value.record is error
