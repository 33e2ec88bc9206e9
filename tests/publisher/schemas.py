"""Schemas for publisher tests: one holding every Iceberg type, nested deeply."""

from __future__ import annotations

from pyiceberg.schema import Schema
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)


def all_types_schema() -> Schema:
    """Every JSON-representable Iceberg type, required and optional, nested 3 deep."""
    ids = iter(range(1, 1000))

    def f(name: str, kind: object, required: bool = False) -> NestedField:
        return NestedField(next(ids), name, kind, required=required)  # type: ignore[arg-type]

    inner = StructType(
        f("leaf_decimal", DecimalType(38, 10)),
        f("leaf_list", ListType(next(ids), TimestamptzType(), element_required=True)),
    )
    middle = StructType(
        f("label", StringType(), required=True),
        f("inner", inner),
        f("inners", ListType(next(ids), inner, element_required=False)),
    )
    return Schema(
        f("event_id", StringType(), required=True),
        f("flag", BooleanType(), required=True),
        f("small", IntegerType()),
        f("big", LongType()),
        f("ratio", FloatType()),
        f("measure", DoubleType()),
        f("price", DecimalType(9, 2)),
        f("tiny_decimal", DecimalType(1, 0)),
        f("fraction_decimal", DecimalType(5, 5)),
        f("label", StringType()),
        f("day", DateType()),
        f("clock", TimeType()),
        f("local_ts", TimestampType()),
        f("zoned_ts", TimestamptzType()),
        f("ident", UUIDType()),
        f("blob", BinaryType()),
        f("hash", FixedType(16)),
        f("tags", ListType(next(ids), StringType(), element_required=False)),
        f("scores", ListType(next(ids), LongType(), element_required=True)),
        f(
            "attributes",
            MapType(next(ids), StringType(), next(ids), StringType(), value_required=False),
        ),
        f("counters", MapType(next(ids), StringType(), next(ids), LongType(), value_required=True)),
        f("point", StructType(f("x", DoubleType()), f("y", DoubleType()))),
        f("outer", StructType(f("middle", middle), f("depth", IntegerType()))),
        f(
            "matrix",
            ListType(next(ids), ListType(next(ids), IntegerType(), element_required=False)),
        ),
        f(
            "index",
            MapType(
                next(ids),
                StringType(),
                next(ids),
                ListType(next(ids), middle, element_required=True),
                value_required=False,
            ),
        ),
    )
