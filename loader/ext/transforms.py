"""Transforms: reshaping a decoded JSON message before it is parsed into a row.

Turned on by the ``[transform]`` section of the loader's configuration (its settings and their
defaults: ``loader.config.Transform``), e.g. in the TOML file::

    [transform]
    unnest = "/data"
    case_from = "lowerCamel"
    case_to = "lower_underscore"

    [transform.projections]
    kafka_offset = "kafka:offset"

or ``--transform-unnest /data``, ``ICEFLOE_LOADER_TRANSFORM_UNNEST=/data``. Unset (the
default), nothing here is imported: ``RecordDecoder`` (``loader.decode.record``) parses each
message as it comes. Set, every record goes to the strict Python parser (the JVM path decodes
plain JSON only), through ``apply``.

Three tweaks, applied in this order by ``apply``:

1. **Projections** are read from the *original* message (JSON pointers) or
   from the Kafka record's metadata, before anything else changes it.
2. **Unnest**: a JSON pointer (RFC 6901) selects an inner object as the row,
   e.g. ``/data`` for a CloudEvent.  A pointer that selects nothing is an
   ``unnest_missing`` error; one that selects a non-object ``not_an_object``.
3. **Case conversion** rewrites every object key, recursively through nested
   objects and arrays of objects, from one ``CaseFormat`` to another with the
   semantics of Guava's ``CaseFormat``: a camel-case word starts at each ASCII
   upper-case letter (so ``HTTPCode`` is the words ``H T T P Code``);
   ``_``/``-`` separate the other formats' words; only ASCII letters change
   case.  Keys of map columns are converted too (the transform runs before
   the schema is consulted).  Two keys of one object converting to the same
   name is an ``ambiguous_field`` error.

Finally the projections are merged into the row object; projected names are
never case-converted, projected values are taken verbatim, and a projection
replaces a message key of the same name.

Projection sources are strings:

* ``/a/b~1c`` (or ``""`` for the whole message): a JSON pointer into the
  original message; a pointer that selects nothing gives null.
* ``kafka:topic``, ``kafka:partition``, ``kafka:offset``,
  ``kafka:timestamp`` (ISO-8601 UTC, for timestamptz or string columns),
  ``kafka:timestamp_ms`` (epoch milliseconds), ``kafka:key`` (UTF-8 text),
  ``kafka:key_base64``, ``kafka:headers`` (object of UTF-8 texts; for a
  repeated header the last value wins), ``kafka:headers_base64``,
  ``kafka:header:NAME`` and ``kafka:header_base64:NAME`` (the last value of
  header NAME).

Values are rendered in the shared JSON conventions, so they go through the
same parsing rules as message fields.
"""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from pyiceberg import types as it

from icefloe.loader.decode.parse import json_type_name
from icefloe.loader.errors import ConfigError, Kind, MalformedRecord, SchemaMismatch

if TYPE_CHECKING:
    from pyiceberg.schema import Schema

__all__ = [
    "CaseFormat",
    "JsonPointer",
    "Meta",
    "Projection",
    "Settings",
    "apply",
    "check_projections",
    "convert_case",
    "convert_keys",
    "reshaper",
]


class Meta(Protocol):
    """What a projection reads of a record's Kafka metadata (``loader.decode.record.KafkaMeta``)."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def timestamp_ms(self) -> int | None: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def headers(self) -> tuple[tuple[str, bytes | None], ...]: ...


class Settings(Protocol):
    """What ``apply`` reads of the ``[transform]`` settings (``loader.config.Transform``)."""

    @property
    def projections(self) -> tuple[Projection, ...]: ...
    @property
    def unnest_pointer(self) -> JsonPointer | None: ...
    @property
    def case_from(self) -> CaseFormat | None: ...
    @property
    def case_to(self) -> CaseFormat | None: ...
    @property
    def is_identity(self) -> bool: ...


# ---------------------------------------------------------------------------
# JSON pointer
# ---------------------------------------------------------------------------

_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*", re.ASCII)
_MISSING = object()


@dataclass(frozen=True, slots=True)
class JsonPointer:
    """An RFC 6901 JSON pointer.

    Attributes:
        text: the pointer as written, e.g. ``/data/a~1b``.
        tokens: the unescaped reference tokens, e.g. ``("data", "a/b")``.
    """

    text: str
    tokens: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> JsonPointer:
        """Parse a pointer.

        Args:
            text: ``""`` (the whole document) or ``/token/token...`` where
                ``~1`` stands for ``/`` and ``~0`` for ``~``.

        Returns:
            The pointer.

        Raises:
            ConfigError: not a valid pointer.
        """
        if text == "":
            return cls(text, ())
        if not text.startswith("/"):
            raise ConfigError(f"JSON pointer {text!r} must be empty or start with '/'")
        tokens = []
        for raw in text[1:].split("/"):
            if re.search(r"~(?![01])", raw):
                raise ConfigError(f"JSON pointer {text!r}: '~' must be followed by 0 or 1")
            # ~1 first, so "~01" becomes "~1" and not "/".
            tokens.append(raw.replace("~1", "/").replace("~0", "~"))
        return cls(text, tuple(tokens))

    def resolve(self, doc: object, default: object = None) -> object:
        """The value the pointer selects in ``doc``.

        Args:
            doc: a decoded JSON document.
            default: returned when the pointer selects nothing.

        Returns:
            The selected value (which may itself be ``None`` for JSON null), or
            ``default``.
        """
        node = doc
        for token in self.tokens:
            if isinstance(node, dict):
                node = node.get(token, _MISSING)
            elif isinstance(node, list) and _ARRAY_INDEX.fullmatch(token):
                index = int(token)
                node = node[index] if index < len(node) else _MISSING
            else:
                node = _MISSING
            if node is _MISSING:
                return default
        return node

    def __str__(self) -> str:
        return self.text


# ---------------------------------------------------------------------------
# Case formats
# ---------------------------------------------------------------------------

_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _lower(word: str) -> str:
    return word.translate(_LOWER)


def _upper(word: str) -> str:
    return word.translate(_UPPER)


def _capitalized(word: str) -> str:
    return _upper(word[:1]) + _lower(word[1:])


_CAMEL_BOUNDARY = re.compile(r"[A-Z]")


class CaseFormat(Enum):
    """A naming convention for field names."""

    LOWER_CAMEL = "lowerCamel"
    UPPER_CAMEL = "UpperCamel"
    LOWER_UNDERSCORE = "lower_underscore"
    UPPER_UNDERSCORE = "UPPER_UNDERSCORE"
    LOWER_HYPHEN = "lower-hyphen"

    @classmethod
    def parse(cls, name: str) -> CaseFormat:
        """A format from its example name (``lowerCamel``) or its constant name (``LOWER_CAMEL``).

        Raises:
            ConfigError: an unknown name.
        """
        for member in cls:
            if name in (member.value, member.name):
                return member
        known = ", ".join(m.value for m in cls)
        raise ConfigError(f"unknown case format {name!r}; expected one of {known}")

    @property
    def separator(self) -> str:
        return {
            CaseFormat.LOWER_UNDERSCORE: "_",
            CaseFormat.UPPER_UNDERSCORE: "_",
            CaseFormat.LOWER_HYPHEN: "-",
        }.get(self, "")

    def _first_word(self, word: str) -> str:
        if self is CaseFormat.UPPER_CAMEL:
            return _capitalized(word)
        if self is CaseFormat.UPPER_UNDERSCORE:
            return _upper(word)
        return _lower(word)

    def _word(self, word: str) -> str:
        if self in (CaseFormat.LOWER_CAMEL, CaseFormat.UPPER_CAMEL):
            return _capitalized(word)
        if self is CaseFormat.UPPER_UNDERSCORE:
            return _upper(word)
        return _lower(word)

    def _next_boundary(self, name: str, start: int) -> int:
        if self.separator:
            return name.find(self.separator, start)
        m = _CAMEL_BOUNDARY.search(name, start)
        return m.start() if m else -1


@functools.lru_cache(maxsize=8192)
def convert_case(name: str, source: CaseFormat, target: CaseFormat) -> str:
    """Convert one name between case formats, like Guava's ``CaseFormat.to``.

    Args:
        name: a name in the ``source`` format.
        source: its format.
        target: the wanted format.

    Returns:
        The converted name (``name`` itself when the formats are equal).
    """
    if source is target:
        return name
    out: list[str] = []
    start = 0
    index = -1
    sep = source.separator
    while (index := source._next_boundary(name, index + 1)) != -1:
        if start == 0:
            # A boundary at the very start (``FooBar`` read as camel case)
            # leaves start at 0, so the first real word restarts the output.
            out = [target._first_word(name[start:index])]
        else:
            out.append(target._word(name[start:index]))
        out.append(target.separator)
        start = index + len(sep)
    if start == 0:
        return target._first_word(name)
    out.append(target._word(name[start:]))
    return "".join(out)


def convert_keys(doc: object, source: CaseFormat, target: CaseFormat) -> object:
    """Convert every object key in ``doc``, recursively through objects and arrays.

    Args:
        doc: a decoded JSON document.
        source: the keys' current format.
        target: the wanted format.

    Returns:
        A converted copy (containers are rebuilt; scalars are shared).

    Raises:
        MalformedRecord: ``ambiguous_field`` when two keys of one object
            convert to the same name; the path names that object.
    """
    if source is target:
        return doc
    trail: list[str] = []

    def walk(node: object) -> object:
        if isinstance(node, dict):
            out: dict[str, Any] = {}
            for key, value in node.items():
                new_key = convert_case(key, source, target)
                if new_key in out:
                    path = "".join(trail) or "$"
                    raise MalformedRecord(
                        Kind.AMBIGUOUS_FIELD,
                        path,
                        f"keys distinct in {target.value}",
                        f"two keys convert to {new_key!r}",
                    )
                trail.append(f".{key}" if trail else key)
                out[new_key] = walk(value)
                trail.pop()
            return out
        if isinstance(node, list):
            items = []
            for index, value in enumerate(node):
                trail.append(f"[{index}]")
                items.append(walk(value))
                trail.pop()
            return items
        return node

    return walk(doc)


# ---------------------------------------------------------------------------
# Projections
# ---------------------------------------------------------------------------

KAFKA_PREFIX = "kafka:"
_KAFKA_SIMPLE = frozenset(
    {
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestamp_ms",
        "key",
        "key_base64",
        "headers",
        "headers_base64",
    }
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Projection:
    """A column filled from the original message or from Kafka metadata.

    Attributes:
        column: the target column name (never case-converted).
        source: a JSON pointer or a ``kafka:...`` source (see the module docstring).
    """

    column: str
    source: str
    pointer: JsonPointer | None = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.column:
            raise ConfigError("a projection needs a column name")
        if self.source.startswith(KAFKA_PREFIX):
            name = self.source.removeprefix(KAFKA_PREFIX)
            header = name.partition(":")
            if name not in _KAFKA_SIMPLE and not (
                header[0] in ("header", "header_base64") and header[1] and header[2]
            ):
                raise ConfigError(f"projection {self.column!r}: unknown source {self.source!r}")
        else:
            object.__setattr__(self, "pointer", JsonPointer.parse(self.source))

    @property
    def kafka_field(self) -> str | None:
        """The metadata name (``offset``, ``header:NAME``...) or ``None`` for a pointer."""
        if self.pointer is not None:
            return None
        return self.source.removeprefix(KAFKA_PREFIX)

    def extract(self, doc: object, meta: Meta) -> object:
        """The projected value, rendered in the shared JSON conventions.

        Args:
            doc: the original decoded message.
            meta: the record's Kafka metadata.

        Returns:
            A JSON-like value, or ``None``.

        Raises:
            MalformedRecord: ``invalid_utf8`` when a key or header is not UTF-8
                text but was projected as text; the path is the column.
        """
        if self.pointer is not None:
            return self.pointer.resolve(doc)
        name = self.source.removeprefix(KAFKA_PREFIX)
        if name == "topic":
            return meta.topic
        if name == "partition":
            return meta.partition
        if name == "offset":
            return meta.offset
        if name in ("timestamp", "timestamp_ms"):
            if meta.timestamp_ms is None or meta.timestamp_ms < 0:
                return None
            if name == "timestamp_ms":
                return meta.timestamp_ms
            moment = _EPOCH + timedelta(milliseconds=meta.timestamp_ms)
            return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        if name == "key":
            return self._text(meta.key)
        if name == "key_base64":
            return _b64(meta.key)
        if name == "headers":
            return {k: self._text(v) for k, v in meta.headers}
        if name == "headers_base64":
            return {k: _b64(v) for k, v in meta.headers}
        kind, _, header = name.partition(":")
        value = None
        for k, v in meta.headers:
            if k == header:
                value = v
        return self._text(value) if kind == "header" else _b64(value)

    def _text(self, raw: bytes | None) -> str | None:
        if raw is None:
            return None
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedRecord(
                Kind.INVALID_UTF8,
                self.column,
                "UTF-8 text",
                f"{self.source} is not UTF-8; project it with a _base64 source",
            ) from None


def _b64(raw: bytes | None) -> str | None:
    return None if raw is None else base64.b64encode(bytes(raw)).decode("ascii")


# ---------------------------------------------------------------------------
# The transform
# ---------------------------------------------------------------------------


def apply(doc: object, meta: Meta, transform: Settings) -> object:
    """Reshape a decoded message: projections, unnest, case conversion, merge.

    Args:
        doc: the decoded JSON message (any JSON value).
        meta: the record's Kafka metadata, for ``kafka:`` projections.
        transform: what to do.

    Returns:
        The object to parse against the schema; when the transform has no
        unnest or projections, a non-object root is passed through for the
        parser to reject.

    Raises:
        MalformedRecord: ``unnest_missing``, ``not_an_object`` (the unnest
            target, or a non-object root when projections must be merged),
            ``ambiguous_field`` (case conversion collision) or
            ``invalid_utf8`` (a projected key/header).
    """
    if transform.is_identity:
        return doc
    projected = {p.column: p.extract(doc, meta) for p in transform.projections}
    pointer = transform.unnest_pointer
    if pointer is not None:
        target = pointer.resolve(doc, _MISSING)
        if target is _MISSING:
            raise MalformedRecord(
                Kind.UNNEST_MISSING,
                pointer.text,
                "JSON object",
                "the unnest pointer selects nothing",
            )
        if not isinstance(target, dict):
            raise MalformedRecord(
                Kind.NOT_AN_OBJECT,
                pointer.text,
                "JSON object",
                f"the unnest pointer selects a JSON {json_type_name(target)}",
            )
        doc = target
    if transform.case_from is not None and transform.case_to is not None:
        doc = convert_keys(doc, transform.case_from, transform.case_to)
    if not projected:
        return doc
    if not isinstance(doc, dict):
        raise MalformedRecord(Kind.NOT_AN_OBJECT, "$", "JSON object", "the root is not an object")
    merged = dict(doc)  # never mutate: a projected value may be this very object
    merged.update(projected)
    return merged


def reshaper(transform: Settings) -> Callable[[object, Meta], object]:
    """``apply`` with ``transform``, as ``RecordDecoder`` calls it for each record."""
    return functools.partial(apply, transform=transform)


# ---------------------------------------------------------------------------
# Projections against the table's schema
# ---------------------------------------------------------------------------


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


def check_projections(
    schema: Schema, transform: Settings, case_insensitive: bool
) -> tuple[str, ...]:
    """Check the ``kafka:`` projections against the table's columns, once per schema version.

    Args:
        schema: the table's current Iceberg schema.
        transform: the ``[transform]`` settings.
        case_insensitive: whether column names match ignoring case.

    Returns:
        The projected columns the schema does not have; they are dropped like any extra key
        (worth a warning in the job log).

    Raises:
        SchemaMismatch: a ``kafka:`` projection targets a column of an incompatible type.
    """
    unused = []
    for projection in transform.projections:
        column = _find_column(schema, projection.column, case_insensitive)
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
    return tuple(unused)
