"""pyspark's private names: the loader's way into Spark's JVM, in one place.

pyspark offers no public way to reach the JVM behind a session, yet the loader needs it: to
register its JVM decoder, read and delete its checkpoint through Hadoop's file systems, find
Spark's log4j, and quiet pyspark's accumulator server while it stops. Every use of a pyspark
name that is not public API sits in this module, so an upgrade that moves one fails here, in
``tests/loader/run/test_jvmbridge.py``, without a stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["accumulator_server", "hadoop_configuration", "java_session", "jvm"]


def jvm(spark: SparkSession) -> Any:
    """The py4j view of the session's JVM (``jvm.java.lang...``, ``jvm.org.apache...``)."""
    return spark.sparkContext._jvm


def hadoop_configuration(spark: SparkSession) -> Any:
    """The session's Hadoop configuration (a JVM object), for Hadoop's file systems."""
    return spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[union-attr]


def java_session(spark: SparkSession) -> Any:
    """The JVM's ``SparkSession`` behind ``spark`` (its catalog, UDF registry, type parser)."""
    return spark._jsparkSession


def accumulator_server(spark: SparkSession) -> Any | None:
    """pyspark's accumulator server of the session's context, if one runs."""
    return getattr(spark.sparkContext, "_accumulatorServer", None)
