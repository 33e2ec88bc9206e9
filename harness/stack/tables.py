"""Tables through Trino: the reference table's DDL, derived from its one definition.

The reference shape is defined once, as an Iceberg schema, by the publisher that generates its
rows (`publisher.rows.reference_schema`). The Trino DDL here derives from it: the reference
table holds every column but the publisher's `event_id`, which tables that track messages add
as an extra column (`EVENT_ID_COLUMN`).
"""

from __future__ import annotations

from pyiceberg import types as it

from icefloe.publisher.rows import EVENT_ID_FIELD, reference_schema

_PRIMITIVES: dict[type[it.IcebergType], str] = {
    it.BooleanType: "BOOLEAN",
    it.IntegerType: "INTEGER",
    it.LongType: "BIGINT",
    it.FloatType: "REAL",
    it.DoubleType: "DOUBLE",
    it.DateType: "DATE",
    it.TimeType: "TIME(6)",
    it.TimestampType: "TIMESTAMP(6)",
    it.TimestamptzType: "TIMESTAMP(6) WITH TIME ZONE",
    it.StringType: "VARCHAR",
    it.UUIDType: "UUID",
    it.BinaryType: "VARBINARY",
}


def trino_type(t: it.IcebergType) -> str:
    """The Trino type of an Iceberg type, as Trino's Iceberg connector maps it.

    Raises:
        ValueError: a type with no Trino counterpart here.
    """
    if isinstance(t, it.ListType):
        return f"ARRAY({trino_type(t.element_type)})"
    if isinstance(t, it.MapType):
        return f"MAP({trino_type(t.key_type)}, {trino_type(t.value_type)})"
    if isinstance(t, it.StructType):
        return "ROW(" + ", ".join(f"{f.name} {trino_type(f.field_type)}" for f in t.fields) + ")"
    if isinstance(t, it.DecimalType):
        return f"DECIMAL({t.precision}, {t.scale})"
    if isinstance(t, it.FixedType):
        return "VARBINARY"
    for kind, name in _PRIMITIVES.items():
        if isinstance(t, kind):
            return name
    raise ValueError(f"no Trino type for Iceberg {t}")


REFERENCE_COLUMNS: tuple[tuple[str, str], ...] = tuple(
    (f.name, trino_type(f.field_type))
    for f in reference_schema().fields
    if f.name != EVENT_ID_FIELD
)
"""(name, Trino type) of every reference column, in order."""

EVENT_ID_COLUMN: tuple[tuple[str, str], ...] = (
    (EVENT_ID_FIELD, trino_type(reference_schema().find_type(EVENT_ID_FIELD))),
)
"""The publisher's message id as an extra column: `create_table_sql(t, EVENT_ID_COLUMN)`."""


def quote(identifier: str) -> str:
    """Quote a Trino identifier (several reference column names are keywords)."""
    return '"' + identifier.replace('"', '""') + '"'


def create_table_sql(
    table: str, extra_columns: tuple[tuple[str, str], ...] = (), *, if_not_exists: bool = False
) -> str:
    """CREATE TABLE for the reference shape: Parquet, partitioned by day(timestamp).

    Args:
        table: a qualified name such as `lake.demo.events`.
        extra_columns: (name, type) pairs appended after the reference columns.
    """
    columns = ",\n  ".join(f"{quote(n)} {t}" for n, t in (*REFERENCE_COLUMNS, *extra_columns))
    guard = "IF NOT EXISTS " if if_not_exists else ""
    return (
        f"CREATE TABLE {guard}{table} (\n  {columns}\n)\n"
        "WITH (format = 'PARQUET', partitioning = ARRAY['day(timestamp)'])"
    )
