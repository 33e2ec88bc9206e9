"""Schema drift: valid rows whose shape departs from the table, on demand.

Producers in the wild add fields, drop fields, rename them to camelCase, wrap
rows in envelopes, and start sending columns a later ``ALTER TABLE ADD COLUMN``
will match. :class:`DriftConfig` says which of these to apply and
:func:`apply_drift` applies them to a row dict, reporting the names of what it
did so the ledger can record them.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from faker import Faker
from pyiceberg.schema import Schema
from pyiceberg.types import IcebergType, ListType, MapType, PrimitiveType, StructType

from icefloe.publisher.schema_rows import (
    EVENT_ID_FIELD,
    SchemaRowsConfig,
    ValueCompiler,
    string_pool,
)

ValueGen = Callable[[random.Random], Any]

#: Envelope ``type`` attribute, in the CloudEvents reverse-DNS style.
ENVELOPE_TYPE = "dev.icefloe.row"
ENVELOPE_SOURCE = "/icefloe/publisher"


@dataclass(frozen=True)
class ExtraFieldSpec:
    """A field to add to every drifted row, e.g. for a column added later.

    Attributes:
        name: JSON key.
        generator: One of: an Iceberg primitive type (``long``, ``string``,
            ``decimal(10, 2)``, ``timestamptz``, ``fixed[4]``...), ``faker:PROVIDER``
            (a pool drawn from that Faker provider), ``const:JSON`` or ``seq``
            (1, 2, 3, ...).
    """

    name: str
    generator: str

    @classmethod
    def parse(cls, text: str) -> ExtraFieldSpec:
        """Parse ``NAME=GENERATOR``.

        Args:
            text: The CLI form.

        Returns:
            The spec.

        Raises:
            ValueError: Without ``=`` or with an empty name or generator.
        """
        name, sep, generator = text.partition("=")
        if not sep or not name.strip() or not generator.strip():
            raise ValueError(f"expected NAME=GENERATOR, got {text!r}")
        return cls(name.strip(), generator.strip())


@dataclass(frozen=True)
class DriftConfig:
    """Which drifts to apply, and to what fraction of valid messages.

    Attributes:
        fraction: Share of valid messages that drift (when any drift is set).
        extra_fields: Number of unknown extra fields (``extra_1``...) to add.
        missing_fields: Number of columns (never ``event_id``) to leave out.
        camel_case: Rename struct field names from snake_case to camelCase.
        envelope: Wrap the row as ``data`` of a CloudEvents-like envelope.
        extra_field_specs: Named fields with chosen generators.
    """

    fraction: float = 1.0
    extra_fields: int = 0
    missing_fields: int = 0
    camel_case: bool = False
    envelope: bool = False
    extra_field_specs: tuple[ExtraFieldSpec, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if not 0.0 <= self.fraction <= 1.0:
            raise ValueError(f"drift fraction must be within [0, 1], got {self.fraction}")
        if self.extra_fields < 0 or self.missing_fields < 0:
            raise ValueError("extra_fields and missing_fields must be >= 0")

    @property
    def active(self) -> bool:
        """Whether any drift is configured."""
        return bool(
            self.extra_fields
            or self.missing_fields
            or self.camel_case
            or self.envelope
            or self.extra_field_specs
        )


_SNAKE = re.compile(r"_([a-z0-9])")


def camel_case(name: str) -> str:
    """Convert ``snake_case`` to ``camelCase`` (``string_map`` -> ``stringMap``).

    Args:
        name: A field name.

    Returns:
        The camelCase spelling; names without underscores are unchanged.
    """
    return _SNAKE.sub(lambda m: m.group(1).upper(), name)


def _camel_value(value: Any, kind: IcebergType | None) -> Any:
    # Only struct field names are renamed: map keys are data, not names.
    if isinstance(kind, StructType) and isinstance(value, dict):
        types = {f.name: f.field_type for f in kind.fields}
        return {camel_case(k): _camel_value(v, types.get(k)) for k, v in value.items()}
    if isinstance(kind, ListType) and isinstance(value, list):
        return [_camel_value(v, kind.element_type) for v in value]
    if isinstance(kind, MapType) and isinstance(value, dict):
        return {k: _camel_value(v, kind.value_type) for k, v in value.items()}
    return value


def _extra_generator(spec: ExtraFieldSpec, seed: int, clock: Any) -> ValueGen:
    gen = spec.generator
    if gen == "seq":
        counter = itertools.count(1)
        return lambda rng: next(counter)
    if gen.startswith("const:"):
        constant = json.loads(gen.removeprefix("const:"))
        return lambda rng: constant
    if gen.startswith("faker:"):
        provider = gen.removeprefix("faker:")
        fake = Faker()
        fake.seed_instance(seed)
        maker = getattr(fake, provider, None)
        if maker is None or not callable(maker):
            raise ValueError(f"unknown Faker provider {provider!r} for field {spec.name!r}")
        pool = tuple(_plain(maker()) for _ in range(256))
        return lambda rng: pool[int(rng.random() * len(pool))]
    try:
        kind = IcebergType.model_validate(gen)
    except ValueError as exc:
        raise ValueError(f"unknown generator {gen!r} for field {spec.name!r}") from exc
    if not isinstance(kind, PrimitiveType):
        raise ValueError(f"generator {gen!r} for field {spec.name!r} is not a primitive type")
    return ValueCompiler(seed, clock, SchemaRowsConfig()).primitive(kind)


def _plain(value: Any) -> Any:
    # Faker returns dates, Decimals and the like; keep JSON-native values only.
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


class Drifter:
    """Applies a :class:`DriftConfig` to rows of one schema.

    Args:
        config: What to apply.
        schema: The table schema (struct field names are camelCased by it).
        seed: Seeds the pools of ``extra_field_specs`` generators.
        clock: An :class:`publisher.clock.EventClock` for time-typed extra fields.

    Raises:
        ValueError: For an extra field generator that cannot be built.
    """

    def __init__(self, config: DriftConfig, schema: Schema, seed: int, clock: Any) -> None:
        self.config = config
        self.schema = schema
        self._struct = schema.as_struct()
        self._specs = tuple(
            (s.name, _extra_generator(s, seed, clock)) for s in config.extra_field_specs
        )
        self._words = string_pool(seed)
        self._droppable = tuple(f.name for f in schema.fields if f.name != EVENT_ID_FIELD)

    def apply(
        self, row: dict[str, Any], event_id: str, rng: random.Random
    ) -> tuple[Any, tuple[str, ...]]:
        """Drift one row.

        Args:
            row: A valid row (mutated in place).
            event_id: The message's event id (envelope ``id``).
            rng: The seeded source for the choices drift makes.

        Returns:
            The drifted JSON document and the names of the drifts applied, in order.
        """
        cfg = self.config
        applied: list[str] = []
        for name, gen in self._specs:
            row[name] = gen(rng)
        if self._specs:
            applied.append("extra_field_specs")
        if cfg.extra_fields:
            words = self._words
            for i in range(1, cfg.extra_fields + 1):
                row[f"extra_{i}"] = words[int(rng.random() * len(words))]
            applied.append("extra_fields")
        if cfg.missing_fields:
            k = min(cfg.missing_fields, len(self._droppable))
            for name in rng.sample(self._droppable, k):
                row.pop(name, None)
            applied.append("missing_fields")
        doc: Any = row
        if cfg.camel_case:
            doc = _camel_value(row, self._struct)
            applied.append("camel_case")
        if cfg.envelope:
            doc = {
                "specversion": "1.0",
                "type": ENVELOPE_TYPE,
                "source": ENVELOPE_SOURCE,
                "id": event_id,
                "datacontenttype": "application/json",
                "data": doc,
            }
            applied.append("envelope")
        return doc, tuple(applied)
