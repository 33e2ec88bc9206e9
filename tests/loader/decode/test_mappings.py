"""Spark and Arrow type mappings: the rows parse_row returns fit them."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg import types as it
from pyiceberg.schema import Schema
from pyspark.sql import types as st

from icefloe.loader.decode.parse import arrow_schema, parse_row, spark_schema
from icefloe.loader.errors import SchemaMismatch
from tests.loader.decode.test_parse import SCHEMA

FULL_ROW = b"""{
  "id": 1, "flag": true, "small": 2, "ratio": 0.5, "score": 1.25, "amount": "12.30",
  "name": "n", "day": "2022-07-26", "at": "12:00:00.5", "local_ts": "2022-07-26T00:00:00",
  "ts": "2022-07-26T00:00:00+02:00", "uid": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
  "blob": "aGk=", "digest": "AQIDBA==", "integers": [1, null], "string_map": {"k": 1},
  "nested": {"value": 3, "items": [{"code": "c"}]}
}"""


SPARK_SCHEMA = Schema(*[f for f in SCHEMA.fields if not isinstance(f.field_type, it.TimeType)])


def test_spark_schema() -> None:
    schema = spark_schema(SPARK_SCHEMA)
    types = {f.name: f.dataType for f in schema.fields}
    assert types["id"] == st.LongType()
    assert not schema["id"].nullable
    assert types["amount"] == st.DecimalType(9, 2)
    assert types["local_ts"] == st.TimestampNTZType()
    assert types["ts"] == st.TimestampType()
    assert types["uid"] == st.StringType()
    assert types["digest"] == st.BinaryType()
    assert types["integers"] == st.ArrayType(st.IntegerType(), True)
    assert types["string_map"] == st.MapType(st.StringType(), st.LongType(), True)
    nested = types["nested"]
    assert isinstance(nested, st.StructType)
    assert nested["items"].dataType == st.ArrayType(
        st.StructType([st.StructField("code", st.StringType(), False)]), False
    )


def test_arrow_schema_accepts_parsed_rows() -> None:
    row = parse_row(FULL_ROW, SCHEMA)
    table = pa.Table.from_pylist(
        [row, parse_row(b'{"id": 2}', SCHEMA)], schema=arrow_schema(SCHEMA)
    )
    assert table.num_rows == 2
    back = table.to_pylist()[0]
    assert back.pop("string_map") == [("k", 1)]  # Arrow maps come back as pairs
    assert back == {k: v for k, v in row.items() if k != "string_map"}
    assert table.schema.field("id").metadata == {b"PARQUET:field_id": b"1"}
    assert table.schema.field("digest").type == pa.binary(4)


def test_spark_cannot_load_time_columns() -> None:
    schema = Schema(it.NestedField(1, "at", it.TimeType(), required=False))
    with pytest.raises(SchemaMismatch, match="time column"):
        spark_schema(schema)


def test_unsupported_types() -> None:
    schema = Schema(it.NestedField(1, "x", it.TimestamptzNanoType(), required=False))
    with pytest.raises(SchemaMismatch):
        spark_schema(schema)
    with pytest.raises(SchemaMismatch):
        arrow_schema(schema)
