"""The JVM path accepts only what the strict parser accepts, with the same row, and takes plain
records.

The JVM decoder runs in a real local Spark session, as in the loader (the UDF
``loader.ext.fastpath.plain.plain_column`` builds), and its rows come back as Spark hands them
over (Arrow); the strict parser runs what the executors run for it
(``loader.decode.batch.decode_arrow``), here or, for the publisher's messages, through
``mapInArrow`` in Spark too. Each Hypothesis example draws one schema of any type, nesting and
nullability and a batch of records for it: plain documents, documents with re-cased and extra
keys, documents with a planted bad value, a duplicated key, corrupted bytes, under case-sensitive
and -insensitive matching and small depth limits.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pyiceberg import types as it
from pyiceberg.schema import Schema

from icefloe.loader.config import DecodeOptions, Transform
from icefloe.loader.decode.batch import POSITION_COLUMN, REJECT_COLUMN, arrow_decoder, decode_arrow
from icefloe.loader.decode.batch import decoded_schema as python_output
from icefloe.loader.decode.frames import all_nullable
from icefloe.loader.decode.parse import DEFAULT_MAX_DEPTH, spark_schema
from icefloe.loader.decode.record import RecordDecoder
from icefloe.loader.errors import SchemaMismatch
from icefloe.loader.ext.fastpath.plain import Ineligible, plain_column, spec
from icefloe.publisher.rows import reference_schema
from tests.loader.strategies import (
    Document,
    Raw,
    documents_for,
    dumps,
    jvm_root_specs,
    mutated,
    plant,
    to_schema,
)

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- no Spark needed -----------------------------------------------------------


def test_the_spec_names_fields_their_folding_and_limits() -> None:
    schema = Schema(
        it.NestedField(1, "Id", it.LongType(), required=True),
        it.NestedField(
            2,
            "tags",
            it.MapType(3, it.StringType(), 4, it.DecimalType(9, 2), value_required=False),
            required=False,
        ),
    )
    got = json.loads(spec(schema, DecodeOptions(case_insensitive=False, max_depth=5)))
    assert got["case_insensitive"] is False
    assert got["max_depth"] == 5
    assert got["fields"][0] == {
        "name": "Id",
        "folded": "id",
        "required": True,
        "type": {"type": "long"},
    }
    assert got["fields"][1]["type"] == {
        "type": "map",
        "required": False,
        "value": {"type": "decimal", "precision": 9, "scale": 2},
    }


def test_transforms_and_time_columns_take_the_python_path() -> None:
    with pytest.raises(Ineligible, match="transforms"):
        spec(reference_schema(), DecodeOptions(transform=Transform(unnest="/data")))
    schema = Schema(it.NestedField(1, "at", it.TimeType(), required=False))
    with pytest.raises(Ineligible, match="time"):
        spec(schema, DecodeOptions())


# --- both paths in Spark ---------------------------------------------------------


@dataclass(frozen=True)
class Decided:
    """One record as each path decided it."""

    payload: bytes | None
    jvm: dict[str, Any] | None  # the JVM path's row, None when it declined
    python: dict[str, Any] | None  # the strict parser's row, None when it rejected
    reject: str | None  # the strict parser's error kind


def decide(
    spark: Any,
    schema: Schema,
    payloads: Sequence[bytes | None],
    options: DecodeOptions,
    *,
    python_in_spark: bool = False,
) -> list[Decided]:
    """Run every payload through both paths, as the loader's executors do.

    The JVM path runs in Spark and its rows come back through Spark's Arrow conversion. The
    strict parser runs ``decode_arrow`` (what ``mapInArrow`` runs in the executors) here, or,
    with ``python_in_spark``, in Spark too, so its rows also pass Spark's types (slower).
    """
    from pyspark.sql.pandas.types import from_arrow_schema

    at = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    kafka = pa.table(
        {
            "key": pa.array([b"k"] * len(payloads), pa.binary()),
            "value": pa.array(payloads, pa.binary()),
            "topic": pa.array(["t"] * len(payloads), pa.string()),
            "partition": pa.array([0] * len(payloads), pa.int32()),
            "offset": pa.array(range(len(payloads)), pa.int64()),
            "timestamp": pa.array([at] * len(payloads), pa.timestamp("us", tz="UTC")),
            "headers": pa.array([[]] * len(payloads), HEADERS),
        }
    )
    records = spark.createDataFrame(kafka)
    # Nullable all through, for Arrow: it refuses a null struct whose field is required.
    row = plain_column(records, schema, options).cast(all_nullable(spark_schema(schema)))
    jvm = records.select("offset", row.alias("row")).toArrow().to_pylist()
    if python_in_spark:
        output = from_arrow_schema(python_output(schema))
        python = records.mapInArrow(arrow_decoder(schema, options), output).toArrow().to_pylist()
    else:
        python = decode_arrow(kafka, RecordDecoder(schema, options)).to_pylist()
    jvm.sort(key=lambda r: r["offset"])
    python.sort(key=lambda r: r[POSITION_COLUMN]["offset"])
    out = []
    for payload, j, p in zip(payloads, jvm, python, strict=True):
        reject = p.pop(REJECT_COLUMN)
        del p[POSITION_COLUMN]
        out.append(Decided(payload, j["row"], None if reject else p, reject and reject["kind"]))
    return out


HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def same(jvm: Any, python: Any, where: str = "$") -> None:
    """Equal values of equal types; floats bit for bit (so 0.0 and -0.0 differ)."""
    assert type(jvm) is type(python), (where, jvm, python)
    if isinstance(python, dict):
        assert jvm.keys() == python.keys(), where
        for key in python:
            same(jvm[key], python[key], f"{where}.{key}")
    elif isinstance(python, list):
        assert len(jvm) == len(python), where
        for i, (a, b) in enumerate(zip(jvm, python, strict=True)):
            same(a, b, f"{where}[{i}]")
    elif isinstance(python, float):
        assert struct.pack(">d", jvm) == struct.pack(">d", python), (where, jvm, python)
    else:
        assert jvm == python, (where, jvm, python)


def agree(decided: list[Decided], note: bool = True) -> None:
    """Whatever the JVM path accepted, the strict parser accepted with the same row.

    ``note`` records Hypothesis events (statistics); only inside a Hypothesis test.
    """
    for d in decided:
        if d.jvm is not None:
            assert d.reject is None, (d.payload, d.reject)
            same(d.jvm, d.python)
            outcome = "taken by the JVM path"
        elif d.reject is None:
            outcome = "declined, accepted by the strict parser"
        else:
            outcome = f"declined, rejected: {d.reject}"
        if note:
            event(outcome)


options_strategy = st.builds(
    DecodeOptions,
    case_insensitive=st.booleans(),
    max_depth=st.sampled_from([2, 3, 4, DEFAULT_MAX_DEPTH]),
)


@st.composite
def batches(draw: Any, plain: bool) -> tuple[Schema, list[Document]]:
    fields = draw(jvm_root_specs)
    schema = to_schema(fields)
    docs = draw(st.lists(documents_for(fields, schema, plain), min_size=1, max_size=20))
    return schema, docs


@pytest.mark.integration
@SETTINGS
@given(batches(plain=True))
def test_plain_documents_take_the_jvm_path_with_the_strict_row(
    spark: Any, batch: tuple[Schema, list[Document]]
) -> None:
    schema, docs = batch
    decided = decide(spark, schema, [d.payload for d in docs], DecodeOptions())
    for d in decided:
        assert d.jvm is not None, d.payload
    agree(decided)


def _duplicated(doc: Document, data: st.DataObject) -> bytes | None:
    """``doc`` with one key of one of its objects written twice, or None if it has none."""
    objects = _objects(doc.json_tree)
    if not objects:
        return None
    tokens, obj = data.draw(st.sampled_from(objects))
    key = data.draw(st.sampled_from(sorted(obj)))
    again = data.draw(st.sampled_from([obj[key], None, 1, "x"]))
    members = [f"{json.dumps(k)}:{dumps(v)}" for k, v in obj.items()]
    members.insert(data.draw(st.integers(0, len(members))), f"{json.dumps(key)}:{dumps(again)}")
    return dumps(plant(doc.json_tree, tokens, Raw("{" + ",".join(members) + "}"))).encode()


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


def corrupted(payload: bytes, data: st.DataObject) -> bytes:
    """The payload with one byte replaced, inserted or removed."""
    at = data.draw(st.integers(0, max(0, len(payload) - 1)))
    byte = bytes([data.draw(st.sampled_from(b'{}[]":,\\0a1.-e \x00\x1f\x7f\xc3\xa9\xed\xff'))])
    how = data.draw(st.sampled_from(["replace", "insert", "remove"]))
    if how == "replace":
        return payload[:at] + byte + payload[at + 1 :]
    if how == "insert":
        return payload[:at] + byte + payload[at:]
    return payload[:at] + payload[at + 1 :]


@pytest.mark.integration
@SETTINGS
@given(batches(plain=False), options_strategy, st.data())
def test_whatever_the_jvm_path_accepts_the_strict_parser_accepts_alike(
    spark: Any, batch: tuple[Schema, list[Document]], options: DecodeOptions, data: st.DataObject
) -> None:
    schema, docs = batch
    payloads: list[bytes | None] = []
    malformed: list[bytes] = []  # what the strict parser must reject
    for doc in docs:
        payloads.append(doc.payload)
        payloads.append(corrupted(doc.payload, data))
        if doc.sites:
            bad, _kind, _site = mutated(doc, data)
            payloads.append(bad)
            # Planted for the default matching: case-sensitive keys may not reach the field.
            if options.case_insensitive and options.max_depth == DEFAULT_MAX_DEPTH:
                malformed.append(bad)
        duplicated = _duplicated(doc, data)
        if duplicated is not None:
            payloads.append(duplicated)
            malformed.append(duplicated)
    payloads += [None, b"", b" ", b"[]", b"null", b'{"a": NaN}', b"\xef\xbb\xbf{}"]
    decided = decide(spark, schema, payloads, options)
    agree(decided)
    for d in decided:
        if d.payload in malformed:
            assert d.reject is not None and d.jvm is None, d.payload


REFERENCE_ROW = {
    "event_id": "e-1",
    "bool": True,
    "floating": 1.5,
    "integer": 7,
    "string": "a:b",
    "bools": [True, None],
    "floatings": [0.5, -0.0, 3],
    "integers": [1, -0],
    "strings": ["x", "\u00e9\U0001f600"],
    "string_map": {"k:1": "v:2"},
    "nested": {"key": "k", "value": 3},
    "timestamp": "2022-07-26T00:41:48.046773-07:00",
}


def _reference(drop: str = "", **changes: Any) -> bytes:
    row = {k: v for k, v in REFERENCE_ROW.items() if k != drop}
    return json.dumps({**row, **changes}, ensure_ascii=False).encode()


ACCEPTED = [
    (_reference(), "a plain reference row"),
    (_reference(extra={"x": [1, {"y": 2}]}), "an extra key"),
    (_reference(drop="integer", Integer=1), "a re-cased key"),
    (_reference(timestamp="2022-07-26T00:41:48Z"), "Z"),
    (_reference(timestamp="0001-01-01T05:00:00+05:00"), "the first instant"),
    (_reference().replace(b'"a:b"', b'"\\u003a \\ud83d\\ude00"'), "escapes"),
]
DECLINED = [
    (_reference(timestamp="2022-07-26T00:41:48.0467731-07:00"), "seven fraction digits"),
    (_reference(timestamp="2022-07-26 00:41:48Z"), "space for T"),
    (_reference(timestamp="2022-07-26t00:41:48z"), "lower-case t and z"),
    (_reference(timestamp="2022-07-26T00:41:48+0700"), "offset without colon"),
    (_reference(timestamp="2022-07-26T00:41:48"), "no zone"),
    (_reference(timestamp="2022-02-30T00:00:00Z"), "no such day"),
    (_reference(timestamp="0001-01-01T00:00:00+01:00"), "before year 1 in UTC"),
    (_reference(integer=2.0), "float for bigint"),
    (_reference(integer=2**63), "beyond bigint"),
    (_reference(bool="yes"), "string for boolean"),
    (_reference(string=1), "number for string"),
    (_reference(string={"a": 1}), "object for string"),
    (_reference(integers=[1, "2"]), "string in a bigint array"),
    (_reference(string_map={"k": 1}), "number as a map value"),
    (_reference(floating=1e400), "double overflow"),
    (_reference(drop="integer", Integer=2, INTEGER=3), "ambiguous keys"),
    (b'{"integer": 1, "integer": 2}', "duplicate key"),
    (b'{"string_map": {"a": "x", "a": "y"}}', "duplicate map key"),
    (b'{"extra": {"a": 1, "a": 2}}', "duplicate key in an ignored object"),
    (b'{"nested": {"key": "a", "key": "b"}}', "duplicate nested key"),
    (b'{"integer": 1}x', "trailing bytes"),
    (b'{"integer": 1}{}', "a second document"),
    (b"[]", "array root"),
    (b"", "empty"),
    (b"\xff", "invalid UTF-8"),
    (b'{"string": "\xed\xa0\x80"}', "an encoded surrogate"),
    (b'{"string": "\xc0\xaf"}', "an overlong encoding"),
    (b'{"string": "\\ud800"}', "lone surrogate"),
    (b'{"string": "a\tb"}', "raw control character"),
    (b'{\x00"a": 1}', "NUL byte"),
    (b'{"integer": 01}', "leading zero"),
    (b'{"floating": .5}', "no integer part"),
    (b'{"integer": 1,}', "trailing comma"),
    (b"{'integer': 1}", "single quotes"),
    (b'{"integer": 1 /* c */}', "comment"),
]


@pytest.mark.integration
def test_reference_records_are_decided_alike(spark: Any) -> None:
    schema = reference_schema()
    payloads = [p for p, _ in ACCEPTED + DECLINED]
    decided = decide(spark, schema, payloads, DecodeOptions())
    agree(decided, note=False)
    for d, (_, why) in zip(decided[: len(ACCEPTED)], ACCEPTED, strict=True):
        assert d.jvm is not None, why
    for d, (_, why) in zip(decided[len(ACCEPTED) :], DECLINED, strict=True):
        assert d.jvm is None, why
    floats = decided[0].jvm["floatings"]  # type: ignore[index]
    assert math.copysign(1, floats[1]) == -1 and floats[2] == 3.0


@pytest.mark.integration
def test_every_publisher_message_is_decided_alike(spark: Any) -> None:
    from icefloe.publisher.clock import ClockConfig
    from icefloe.publisher.messages import GenerationConfig, generate

    clock = ClockConfig(anchor=dt.datetime(2026, 1, 1, tzinfo=dt.UTC), window_days=30)
    config = GenerationConfig(seed=5, clock=clock, malformed_fraction=0.3)
    messages = list(generate(config, 2000))
    values = [m.value for m in messages]
    decided = decide(spark, reference_schema(), values, DecodeOptions(), python_in_spark=True)
    agree(decided, note=False)
    for message, d in zip(messages, decided, strict=True):
        if message.kind is not None:
            assert d.jvm is None, message.kind
    assert sum(d.jvm is not None for d in decided) > 1000


@pytest.mark.integration
def test_records_over_the_size_limit_are_declined(spark: Any) -> None:
    decided = decide(spark, reference_schema(), [_reference()], DecodeOptions(max_bytes=50))
    assert decided[0].jvm is None and decided[0].reject == "too_large"


def test_a_time_column_stops_the_loader_before_any_record() -> None:
    from icefloe.loader.decode.parse import spark_schema

    schema = Schema(it.NestedField(1, "at", it.TimeType(), required=False))
    with pytest.raises(SchemaMismatch, match="time"):
        spark_schema(schema)
