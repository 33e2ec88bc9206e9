"""Domain errors of the loader.

Every failure the loader can name lives here, so callers (the Spark job, the
publisher's tests, the harness) catch one vocabulary:

* ``MalformedRecord``: one Kafka record cannot become a row of the table.  It is
  a property of the *record*; the loader routes it to the dead-letter topic.
* ``PoisonMessage``: a malformed record met a loader without a dead-letter
  topic, so the stream must stop rather than drop or skip it silently.
* ``SchemaMismatch``: the *table* schema has something the loader cannot load
  (an unsupported type, a projection into an incompatible column).
* ``InvalidOffsets``: the offsets bookkeeping in a snapshot summary is corrupt.
* ``TableNotFound``, ``CatalogUnavailable``: the table does not exist; the catalog or its
  storage does not answer (after the start-up's wait).
* ``ConcurrentLoader``: another live loader owns the table (refused at start).
* ``Fenced``: another loader took the table over from this running one, which steps down.
* ``ConfigError``: the configuration is invalid.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

EXIT_NOT_OWNER = 3
"""Exit code of a loader that does not own its table: another loader's lease was live at
start (``ConcurrentLoader``), or another loader took the table over while it ran (``Fenced``).
A supervisor need not restart it at once: the owner is loading."""

EXIT_STALLED = 4
"""Exit code of a loader that made no progress for ``progress_timeout``: a catalog, storage
or Kafka that did not answer (the message names it)."""


class Kind(StrEnum):
    """Why a record is malformed.

    A ``StrEnum``, so ``err.kind == "type_mismatch"`` holds as well as
    ``err.kind is Kind.TYPE_MISMATCH``.
    """

    INVALID_JSON = "invalid_json"
    """Not JSON (syntax error, NaN/Infinity literals, duplicate object keys)."""
    INVALID_UTF8 = "invalid_utf8"
    """The payload, a string or a Kafka key/header is not valid UTF-8."""
    EMPTY_PAYLOAD = "empty_payload"
    """A tombstone (null value), an empty or whitespace-only payload."""
    NOT_AN_OBJECT = "not_an_object"
    """The root (or the unnest target) is an array, a scalar or ``null``."""
    TYPE_MISMATCH = "type_mismatch"
    """A JSON value of the wrong kind, or a string not in the agreed format."""
    OUT_OF_RANGE = "out_of_range"
    """The right kind of value, but it does not fit the column type."""
    TOO_DEEP = "too_deep"
    """Objects/arrays nested deeper than the configured limit."""
    TOO_LARGE = "too_large"
    """The payload is larger than the configured limit."""
    UNNEST_MISSING = "unnest_missing"
    """The unnest JSON pointer selects nothing."""
    MISSING_REQUIRED = "missing_required"
    """A required (NOT NULL) field, list element or map value is missing or null."""
    AMBIGUOUS_FIELD = "ambiguous_field"
    """Several JSON keys match one field case-insensitively, or collide after case conversion."""


class LoaderError(Exception):
    """Base class of every loader error."""


class MalformedRecord(LoaderError):
    """One record cannot be loaded into the table.

    Attributes:
        kind: a ``Kind`` (compares equal to its string value).
        path: where in the record: ``$`` for the root, ``nested.value``,
            ``integers[2]``, ``string_map["k"]``; a JSON pointer for unnest.
        expected: the type or shape that was expected, e.g. ``long``,
            ``decimal(9, 2)``, ``JSON object``.
        reason: what was wrong, for humans; never contains the whole payload.
    """

    def __init__(self, kind: Kind | str, path: str, expected: str, reason: str) -> None:
        self.kind = Kind(kind)
        self.path = path
        self.expected = expected
        self.reason = reason
        super().__init__(f"{self.kind.value} at {path}: expected {expected}: {reason}")

    def __reduce__(self) -> tuple[object, ...]:
        # Spark ships exceptions between processes; keep the fields on unpickling.
        return (type(self), (self.kind, self.path, self.expected, self.reason))

    def as_dict(self) -> dict[str, str]:
        """The error as plain strings, e.g. for dead-letter headers.

        Returns:
            ``{"kind": ..., "path": ..., "expected": ..., "reason": ...}``.
        """
        return {
            "kind": self.kind.value,
            "path": self.path,
            "expected": self.expected,
            "reason": self.reason,
        }


class PoisonMessage(LoaderError):
    """A malformed record and no dead-letter topic to send it to.

    Attributes:
        topic, partition, offset: where the record is in Kafka.
        record: the ``MalformedRecord`` describing what is wrong.
    """

    def __init__(self, topic: str, partition: int, offset: int, record: MalformedRecord) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.record = record
        super().__init__(
            f"poison message at topic {topic!r} partition {partition} offset {offset} "
            f"and no dead-letter topic configured: {record}"
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.topic, self.partition, self.offset, self.record))


class SchemaMismatch(LoaderError):
    """The table schema (or the loader's configuration against it) cannot be loaded."""


class KafkaUnavailable(LoaderError):
    """Kafka's metadata (the subscribed topics and their partitions) could not be read."""


class CatalogUnavailable(LoaderError):
    """The Iceberg REST catalog, or the table's storage behind it, did not answer."""


class TableNotFound(LoaderError):
    """The configured table does not exist in the catalog."""


class InvalidOffsets(LoaderError, ValueError):
    """The offsets recorded in a snapshot summary are not in the expected shape."""


class ConcurrentLoader(LoaderError):
    """Another loader holds an unexpired lease on the table.

    Attributes:
        table: the table identifier.
        owner: the loader id of the other loader.
        lease_expires_ms: when its lease ends (epoch milliseconds).
    """

    def __init__(self, table: str, owner: str, lease_expires_ms: int) -> None:
        self.table = table
        self.owner = owner
        self.lease_expires_ms = lease_expires_ms
        super().__init__(
            f"table {table!r} is owned by loader {owner!r} "
            f"whose lease expires at {lease_expires_ms} (epoch ms)"
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.table, self.owner, self.lease_expires_ms))


class Fenced(ConcurrentLoader):
    """This loader process no longer holds the table: another one took it over.

    Raised when the lease names another loader (or a newer process of this loader) or when
    the commit that would publish a batch is refused because the table moved on. The loader
    steps down: it commits nothing more, renews no lease and leaves the owner alone.

    Attributes:
        me: this loader's id.
    """

    def __init__(self, table: str, me: str, lease: Any) -> None:
        self.me = me
        self.lease = lease
        owner = lease.owner if lease is not None else "(none)"
        expires = lease.expires_ms if lease is not None else 0
        LoaderError.__init__(
            self,
            f"table {table!r} is now owned by loader {owner!r}"
            + (f" (process {lease.instance})" if lease is not None and lease.instance else "")
            + f"; loader {me!r} was fenced off and steps down without committing",
        )
        self.table = table
        self.owner = owner
        self.lease_expires_ms = expires

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.table, self.me, self.lease))


class ConfigError(LoaderError, ValueError):
    """The loader configuration is invalid; the message names the setting and its source."""


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message, or its type's name when it has none."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
