"""The JVM path for plain records: Spark decodes them without a round trip to Python.

Most records of a healthy stream are plain: a JSON object whose values already have their
column's JSON type. ``PlainDecoder`` (``jvm/icefloe/loader/`` beside this module, a Spark UDF
compiled into the loader's jar at provisioning) decodes such a record's bytes into a row inside
the executors' JVM. It never rejects: a record it cannot prove plain comes back null and goes to
the strict Python parser (``loader.decode.parse``), which stays the reference for what is valid
and names the error of every reject. ``tests/loader/ext/test_plain.py`` checks with Hypothesis
that whatever the JVM path accepts the strict parser accepts with the same row.

This module writes the table schema as the spec the JVM decoder reads, registers one UDF per
schema version on the session, and says whether a schema can take the JVM path at all:
transforms (unnest, projections, case conversion) and types without a JVM reader (time) send
every record to Python.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import TYPE_CHECKING, Any

from pyiceberg import types as it

from icefloe.loader.errors import ConfigError
from icefloe.loader.run.jvmbridge import java_session, jvm

if TYPE_CHECKING:
    from pyiceberg.schema import Schema
    from pyspark.sql import Column, DataFrame, SparkSession

    from icefloe.loader.config import DecodeOptions

__all__ = [
    "DECODER_CLASS",
    "JAR_NAME",
    "Ineligible",
    "check_available",
    "plain_call",
    "plain_column",
    "spec",
]

DECODER_CLASS = "icefloe.loader.PlainDecoder"
"""The UDF class in the loader's jar (``[spark] jars`` or ``spark-submit --jars``)."""

JAR_NAME = "icefloe-loader-jvm.jar"
"""The file name the loader's jar is built under."""

_PRIMITIVES: dict[type[it.IcebergType], str] = {
    it.BooleanType: "boolean",
    it.IntegerType: "int",
    it.LongType: "long",
    it.FloatType: "float",
    it.DoubleType: "double",
    it.StringType: "string",
    it.DateType: "date",
    it.TimestampType: "timestamp",
    it.TimestamptzType: "timestamptz",
    it.UUIDType: "uuid",
    it.BinaryType: "binary",
}


class Ineligible(Exception):
    """Every record of this schema (or these options) goes to the strict Python parser."""


def _type(t: it.IcebergType) -> dict[str, Any]:
    if isinstance(t, it.StructType):
        return {"type": "struct", "fields": _fields(t.fields)}
    if isinstance(t, it.ListType):
        return {"type": "list", "element": _type(t.element_type), "required": t.element_required}
    if isinstance(t, it.MapType):
        if not isinstance(t.key_type, it.StringType):
            raise Ineligible(f"map keys of type {t.key_type}")
        return {"type": "map", "value": _type(t.value_type), "required": t.value_required}
    if isinstance(t, it.DecimalType):
        return {"type": "decimal", "precision": t.precision, "scale": t.scale}
    if isinstance(t, it.FixedType):
        return {"type": "fixed", "length": len(t)}
    name = _PRIMITIVES.get(type(t))
    if name is None:
        raise Ineligible(f"no JVM reader for {t}")
    return {"type": name}


def _fields(fields: tuple[it.NestedField, ...]) -> list[dict[str, Any]]:
    # `folded` is the name as the strict parser folds it (str.lower), so both sides agree.
    return [
        {
            "name": f.name,
            "folded": f.name.lower(),
            "required": f.required,
            "type": _type(f.field_type),
        }
        for f in fields
    ]


def spec(schema: Schema, options: DecodeOptions) -> str:
    """The JSON spec ``PlainDecoder`` is built from.

    Args:
        schema: the table's current Iceberg schema.
        options: the decoding options.

    Returns:
        The schema's fields (names, their case folding, required flags, types) and the limits.

    Raises:
        Ineligible: transforms are configured, or a column has no JVM reader.
    """
    if not options.transform.is_identity:
        raise Ineligible("transforms are applied by the Python parser")
    return json.dumps(
        {
            "fields": _fields(schema.fields),
            "case_insensitive": options.case_insensitive,
            "max_bytes": options.max_bytes,
            "max_depth": options.max_depth,
        },
        separators=(",", ":"),
        sort_keys=True,
    )


def check_available(spark: SparkSession) -> None:
    """Fail at once when the loader's jar is not on the session's classpath.

    Raises:
        ConfigError: naming the jar and the setting that turns the JVM path off.
    """
    java: Any = jvm(spark)
    loader = java.java.lang.Thread.currentThread().getContextClassLoader()
    try:
        java.java.lang.Class.forName(DECODER_CLASS, False, loader)
    except Exception:
        raise ConfigError(
            f"the loader's JVM decoder ({DECODER_CLASS}) is not on Spark's classpath: add "
            f"{JAR_NAME} (built by `icefloe provision`) to [spark] jars or spark-submit --jars, "
            "or set jvm_decode = false to decode every record in Python"
        ) from None


def plain_column(records: DataFrame, schema: Schema, options: DecodeOptions) -> Column:
    """The decoded row of ``records.value`` (a struct of the table's columns), null when not plain.

    Args:
        records: the Kafka source columns.
        schema: the table's current Iceberg schema.
        options: decoding options.

    Raises:
        Ineligible: this schema or these options take the Python path only.
    """
    from pyspark.sql import functions as F

    return F.expr(plain_call(records, schema, options))


def plain_call(records: DataFrame, schema: Schema, options: DecodeOptions) -> str:
    """``plain_column`` as Spark SQL, to build a batch's query in as few calls to the JVM as can
    be (each costs a round trip, and a batch's Python time is mostly those).

    The UDF is registered once per schema version on the frame's session (a streaming query
    runs its batches in a session of its own), under a name derived from the spec.

    Raises:
        Ineligible: this schema or these options take the Python path only.
    """
    from icefloe.loader.decode.parse import spark_schema

    text = spec(schema, options)
    name = "icefloe_plain_" + hashlib.sha1(text.encode()).hexdigest()[:16]
    session: Any = java_session(records.sparkSession)
    with _lock:
        if not session.catalog().functionExists(name):
            decoder = jvm(records.sparkSession).icefloe.loader.PlainDecoder(text)
            returns = session.parseDataType(spark_schema(schema).json())
            session.udf().register(name, decoder, returns)
    return f"{name}(`value`)"


_lock = threading.Lock()
