"""The sink's replay filter keeps exactly the records above the committed offsets, and its code
is generated once, not per batch.

Runs in the loader's real Spark session: the filter is a Spark expression, and what it costs per
batch (Spark's code generation) is only visible there.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.loader.commit.offsets import Offsets
from icefloe.loader.commit.sink import _keep_condition
from icefloe.loader.run.jvmbridge import jvm

pytestmark = pytest.mark.integration

TOPICS = ("a", "b.c", "d-e", "q'uote\\d")  # the last no Kafka topic: escaping

offsets: st.SearchStrategy[Offsets] = st.dictionaries(
    st.sampled_from(TOPICS),
    st.dictionaries(st.integers(0, 3), st.integers(0, 2**40), max_size=4),
    max_size=3,
)
records = st.lists(
    st.tuples(st.sampled_from(TOPICS), st.integers(0, 3), st.integers(0, 2**40)), max_size=40
)


def expected(committed: Offsets, rows: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    def keep(topic: str, partition: int, offset: int) -> bool:
        done = committed.get(topic, {}).get(partition)
        return done is None or offset >= done

    return sorted(r for r in rows if keep(*r))


def kept(spark: Any, committed: Offsets, rows: list[tuple[str, int, int]]) -> list[Any]:
    frame = spark.createDataFrame(rows, "topic string, partition int, offset long")
    return sorted(tuple(r) for r in frame.where(_keep_condition(committed)).collect())


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(committed=offsets, rows=records)
def test_keeps_the_records_at_or_above_the_committed_offsets(
    spark: Any, committed: Offsets, rows: list[tuple[str, int, int]]
) -> None:
    assert kept(spark, committed, rows) == expected(committed, rows)


def test_edges_of_a_committed_offset(spark: Any) -> None:
    rows = [("a", 0, 9), ("a", 0, 10), ("a", 0, 11), ("a", 1, 0), ("b.c", 0, 0)]
    assert kept(spark, {"a": {0: 10}}, rows) == [
        ("a", 0, 10),
        ("a", 0, 11),
        ("a", 1, 0),
        ("b.c", 0, 0),
    ]
    assert kept(spark, {}, rows) == sorted(rows)
    assert kept(spark, {"a": {}}, rows) == sorted(rows)


def test_the_code_for_the_next_batch_is_not_compiled_again(spark: Any) -> None:
    """Batches differ only in their committed offsets: their code must be the same."""
    metrics = jvm(spark).org.apache.spark.metrics.source.CodegenMetrics
    frame = spark.range(0, 1000).selectExpr(
        "'a' AS topic", "CAST(id % 2 AS INT) AS partition", "id AS offset"
    )

    def batch(done: int) -> int:
        before = metrics.METRIC_COMPILATION_TIME().getCount()
        frame.where(_keep_condition({"a": {0: done, 1: done + 1}})).groupBy(
            "partition"
        ).count().collect()
        return int(metrics.METRIC_COMPILATION_TIME().getCount() - before)

    batch(100)  # the first one compiles
    assert [batch(done) for done in (200, 300, 400)] == [0, 0, 0]
