"""The reference table: the row shape the reference design's loader declares, as Trino DDL."""

from __future__ import annotations

REFERENCE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("bool", "BOOLEAN"),
    ("floating", "DOUBLE"),
    ("integer", "BIGINT"),
    ("string", "VARCHAR"),
    ("bools", "ARRAY(BOOLEAN)"),
    ("floatings", "ARRAY(DOUBLE)"),
    ("integers", "ARRAY(BIGINT)"),
    ("strings", "ARRAY(VARCHAR)"),
    ("string_map", "MAP(VARCHAR, VARCHAR)"),
    ("nested", "ROW(key VARCHAR, value BIGINT)"),
    ("timestamp", "TIMESTAMP(6) WITH TIME ZONE"),
)


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


SAMPLE_ROWS_SQL = """
(true, 1.5, 42, 'first', ARRAY[true, false], ARRAY[1.0, 2.5], ARRAY[1, 2, 3], ARRAY['a', 'b'],
 MAP(ARRAY['colour'], ARRAY['blue']), ROW('k1', 7), TIMESTAMP '2022-07-26 00:41:48.046773 -07:00'),
(false, -0.25, -7, 'second', ARRAY[], ARRAY[3.25], ARRAY[9223372036854775807], ARRAY['c'],
 MAP(), ROW('k2', NULL), TIMESTAMP '2022-07-27 12:00:00.000001 +02:00'),
(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
 TIMESTAMP '2022-07-28 23:59:59.999999 Z')
"""
