"""Rows of the reference shape as a Trino VALUES list: edge values, empty collections, nulls."""

SAMPLE_ROWS_SQL = """
(true, 1.5, 42, 'first', ARRAY[true, false], ARRAY[1.0, 2.5], ARRAY[1, 2, 3], ARRAY['a', 'b'],
 MAP(ARRAY['colour'], ARRAY['blue']), ROW('k1', 7), TIMESTAMP '2022-07-26 00:41:48.046773 -07:00'),
(false, -0.25, -7, 'second', ARRAY[], ARRAY[3.25], ARRAY[9223372036854775807], ARRAY['c'],
 MAP(), ROW('k2', NULL), TIMESTAMP '2022-07-27 12:00:00.000001 +02:00'),
(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
 TIMESTAMP '2022-07-28 23:59:59.999999 Z')
"""
