"""Records: the one call the Spark job makes per Kafka record.

``RecordDecoder(schema, options).decode(value, meta)`` runs the whole pipeline
for one record: strict UTF-8 JSON decoding (``loader.decode.parse.load_json``),
the transforms when ``[transform]`` sets any (``loader.ext.transforms``:
projections from the original message, unnest, case conversion, merge) and
parsing against the table's current schema (``loader.decode.parse.RowParser``).
It returns a row dict or raises ``MalformedRecord``; ``route_malformed`` then
turns that error into a dead-letter message, or into ``PoisonMessage`` when
there is no dead-letter topic.

Build one decoder per micro-batch from the schema read at the start of the
batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icefloe.loader import keys
from icefloe.loader.config import DecodeOptions
from icefloe.loader.decode.parse import RowParser, load_json
from icefloe.loader.errors import MalformedRecord, PoisonMessage

if TYPE_CHECKING:
    from pyiceberg.schema import Schema

__all__ = [
    "DeadLetter",
    "KafkaMeta",
    "RecordDecoder",
    "route_malformed",
]


@dataclass(frozen=True, slots=True)
class KafkaMeta:
    """Where a record came from, as the Spark Kafka source reports it.

    Attributes:
        topic, partition, offset: the record's position.
        timestamp_ms: the record timestamp in epoch milliseconds; ``None`` or
            negative when the producer set none.
        key: the record key bytes, ``None`` when absent.
        headers: ``(name, value)`` pairs in record order; values may be ``None``.
    """

    topic: str
    partition: int
    offset: int
    timestamp_ms: int | None = None
    key: bytes | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()


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
        self.unused_projections: tuple[str, ...] = ()
        self._reshape: Callable[[object, KafkaMeta], object] | None = None
        transform = self.options.transform
        if not transform.is_identity:  # the extension is imported only when configured
            from icefloe.loader.ext import transforms

            self.unused_projections = transforms.check_projections(
                schema, transform, self.options.case_insensitive
            )
            self._reshape = transforms.reshaper(transform)

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
        if self._reshape is not None:
            doc = self._reshape(doc, meta)
        return self.parser.parse_object(doc)


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
