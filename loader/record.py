"""Records: the one call the Spark job makes per Kafka record.

``RecordDecoder(schema, options).decode(value, meta)`` runs the whole pipeline
for one record: strict UTF-8 JSON decoding (``loader.parse.load_json``), the
transforms (``loader.transforms.apply``: projections from the original message,
unnest, case conversion, merge) and parsing against the table's current schema
(``loader.parse.RowParser``).  It returns a row dict or raises
``MalformedRecord``; ``route_malformed`` then turns that error into a
dead-letter message, or into ``PoisonMessage`` when there is no dead-letter
topic.

Build one decoder per micro-batch from the schema read at the start of the
batch; ``decode`` (module function) caches decoders by schema identity for
callers that do not want to hold one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyiceberg import types as it

from loader import keys
from loader.errors import MalformedRecord, PoisonMessage, SchemaMismatch
from loader.parse import DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, RowParser, load_json
from loader.transforms import KafkaMeta, Transform, apply

if TYPE_CHECKING:
    from pyiceberg.schema import Schema

__all__ = [
    "DeadLetter",
    "DecodeOptions",
    "KafkaMeta",
    "RecordDecoder",
    "route_malformed",
]


@dataclass(frozen=True, slots=True)
class DecodeOptions:
    """How records are decoded; part of the loader configuration.

    Attributes:
        transform: unnest / projections / case conversion.
        case_insensitive: match JSON keys to column names ignoring case.
        max_bytes: larger payloads are ``too_large``.
        max_depth: deeper nesting is ``too_deep``.
    """

    transform: Transform = field(default_factory=Transform)
    case_insensitive: bool = True
    max_bytes: int = DEFAULT_MAX_BYTES
    max_depth: int = DEFAULT_MAX_DEPTH


def _is_string(t: it.IcebergType) -> bool:
    return isinstance(t, it.StringType)


def _is_binary(t: it.IcebergType) -> bool:
    return isinstance(t, it.BinaryType)


def _is_map_of(value_check: Any) -> Any:
    def check(t: it.IcebergType) -> bool:
        return isinstance(t, it.MapType) and _is_string(t.key_type) and value_check(t.value_type)

    return check


# Which column types each Kafka metadata source can fill, so a wrong pairing
# fails once when the schema is compiled, not once per record.
_KAFKA_COLUMN_TYPES: dict[str, tuple[str, Any]] = {
    "topic": ("string", _is_string),
    "partition": ("int or long", lambda t: isinstance(t, it.IntegerType | it.LongType)),
    "offset": ("long", lambda t: isinstance(t, it.LongType)),
    "timestamp": (
        "timestamptz or string",
        lambda t: isinstance(t, it.TimestamptzType | it.StringType),
    ),
    "timestamp_ms": ("long", lambda t: isinstance(t, it.LongType)),
    "key": ("string", _is_string),
    "key_base64": ("binary", _is_binary),
    "header": ("string", _is_string),
    "header_base64": ("binary", _is_binary),
    "headers": ("map<string, string>", _is_map_of(_is_string)),
    "headers_base64": ("map<string, binary>", _is_map_of(_is_binary)),
}


def _find_column(schema: Schema, name: str, case_insensitive: bool) -> it.NestedField | None:
    for f in schema.fields:
        if f.name == name:
            return f
    if case_insensitive:
        matches = [f for f in schema.fields if f.name.lower() == name.lower()]
        if len(matches) == 1:
            return matches[0]
    return None


class RecordDecoder:
    """Decodes records into rows of one schema version.

    Args:
        schema: the table's current Iceberg schema.
        options: decoding options.

    Attributes:
        unused_projections: projected columns the schema does not have; they
            are dropped like any extra key (worth a warning in the job log).

    Raises:
        SchemaMismatch: the schema has a type the loader cannot load, or a
            ``kafka:`` projection targets a column of an incompatible type.
    """

    def __init__(self, schema: Schema, options: DecodeOptions | None = None) -> None:
        self.schema = schema
        self.options = options or DecodeOptions()
        self.parser = RowParser(schema, case_insensitive=self.options.case_insensitive)
        unused = []
        for projection in self.options.transform.projections:
            column = _find_column(schema, projection.column, self.options.case_insensitive)
            if column is None:
                unused.append(projection.column)
                continue
            source = projection.kafka_field
            if source is None:
                continue
            expected, fits = _KAFKA_COLUMN_TYPES[source.partition(":")[0]]
            if not fits(column.field_type):
                raise SchemaMismatch(
                    f"projection {projection.source} into column {column.name!r} "
                    f"of type {column.field_type}: needs a {expected} column"
                )
        self.unused_projections: tuple[str, ...] = tuple(unused)

    def decode(
        self, value: bytes | bytearray | memoryview | None, meta: KafkaMeta
    ) -> dict[str, Any]:
        """Decode one Kafka record into a row.

        Args:
            value: the record value.
            meta: the record's Kafka metadata.

        Returns:
            ``{column: Python value}`` for every top-level column, in schema order.

        Raises:
            MalformedRecord: the record cannot become a row; route it with
                ``route_malformed``.
        """
        opts = self.options
        doc = load_json(value, max_bytes=opts.max_bytes, max_depth=opts.max_depth)
        return self.parser.parse_object(apply(doc, meta, opts.transform))


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A message for the dead-letter topic: the original bytes plus why and where.

    Attributes:
        topic: the dead-letter topic.
        key, value: the original record's key and value, unchanged.
        headers: the original headers followed by ``icefloe.*`` headers
            (see ``loader.keys``) naming the source position and the error.
    """

    topic: str
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


def route_malformed(
    value: bytes | bytearray | memoryview | None,
    meta: KafkaMeta,
    error: MalformedRecord,
    dead_letter_topic: str | None,
    *,
    loader_id: str = "",
    table: str = "",
) -> DeadLetter:
    """Decide what happens to a malformed record.

    Args:
        value: the original record value.
        meta: the original record's metadata.
        error: why it was rejected.
        dead_letter_topic: where rejected records go; ``None`` stops the stream.
        loader_id: stamped into a header, to tell loaders apart.
        table: the table being loaded, stamped into a header when given.

    Returns:
        The dead-letter message to produce.

    Raises:
        PoisonMessage: no dead-letter topic is configured.
    """
    if not dead_letter_topic:
        raise PoisonMessage(meta.topic, meta.partition, meta.offset, error)
    stamp = {
        keys.DLQ_SOURCE_TOPIC: meta.topic,
        keys.DLQ_SOURCE_PARTITION: str(meta.partition),
        keys.DLQ_SOURCE_OFFSET: str(meta.offset),
        keys.DLQ_ERROR_KIND: error.kind.value,
        keys.DLQ_ERROR_PATH: error.path,
        keys.DLQ_ERROR_EXPECTED: error.expected,
        keys.DLQ_ERROR_REASON: error.reason,
        keys.DLQ_LOADER_ID: loader_id,
    }
    if table:
        stamp[keys.DLQ_TABLE] = table
    headers = tuple(meta.headers) + tuple((k, v.encode("utf-8")) for k, v in stamp.items())
    raw = None if value is None else bytes(value)
    return DeadLetter(dead_letter_topic, meta.key, raw, headers)
