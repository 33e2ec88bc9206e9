"""The start-up warm-up runs Spark jobs only when every record will go to the Python workers.

``warm_up_decoding`` (``frames.warm_up``) starts the Python workers before "starting" when the
JVM path is off or cannot decode the schema (transforms configured); when the JVM path decodes
the schema it runs nothing, since a warm-up there was measured to cost more than it saved
(``docs/benchmarks.md``). Each case runs it in the loader's session under a job group of its
own and counts the Spark jobs it started.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from icefloe.loader.config import DecodeOptions, Transform
from icefloe.loader.ext.fastpath.onepass import FastPath
from icefloe.loader.run.job import warm_up_decoding
from icefloe.publisher.rows import reference_schema

pytestmark = pytest.mark.integration


def _jobs(spark: Any, options: DecodeOptions, jvm: bool) -> int:
    sc = spark.sparkContext
    group = f"warm-up-{uuid.uuid4().hex}"
    sc.setJobGroup(group, "warm-up test")
    try:
        warm_up_decoding(spark, reference_schema(), options, FastPath() if jvm else None)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return len(sc.statusTracker().getJobIdsForGroup(group))


def test_nothing_runs_when_the_jvm_path_decodes_the_schema(spark: Any) -> None:
    assert _jobs(spark, DecodeOptions(), jvm=True) == 0


@pytest.mark.parametrize(
    ("options", "jvm"),
    [
        (DecodeOptions(), False),
        (DecodeOptions(transform=Transform(unnest="/data")), True),
    ],
    ids=["jvm-path-off", "transforms-keep-the-jvm-path-off"],
)
def test_the_python_workers_start_when_every_record_goes_to_them(
    spark: Any, options: DecodeOptions, jvm: bool
) -> None:
    assert _jobs(spark, options, jvm) > 0
