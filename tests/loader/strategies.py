"""Hypothesis strategies: random Iceberg schemas, matching values and their JSON.

A schema is first drawn as a plain "spec" tree (tuples), then turned into
pyiceberg types.  ``documents`` draws a schema plus one JSON document encoded
per the shared conventions, the row ``parse_row`` must return for it, and the
"sites" where a mutation can be planted (with the error path it must produce).
"""

from __future__ import annotations

import base64
import itertools
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from decimal import Context, Decimal
from typing import Any

from hypothesis import strategies as st
from pyiceberg import types as it
from pyiceberg.schema import Schema

SIMPLE = (
    "boolean",
    "int",
    "long",
    "float",
    "double",
    "string",
    "date",
    "time",
    "timestamp",
    "timestamptz",
    "uuid",
    "binary",
)


@dataclass(frozen=True)
class Raw:
    """A JSON literal written verbatim (numbers the json module would reformat)."""

    text: str


def dumps(node: Any) -> str:
    """Serialize a JSON tree that may contain ``Raw`` literals."""
    if isinstance(node, Raw):
        return node.text
    if isinstance(node, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{dumps(v)}" for k, v in node.items()) + "}"
    if isinstance(node, list):
        return "[" + ",".join(dumps(v) for v in node) + "]"
    return json.dumps(node)


# --- schema specs ----------------------------------------------------------

names = st.tuples(st.sampled_from("abcdefgh"), st.text("abcdefgh0123_", max_size=5)).map("".join)

sized_specs = st.one_of(
    st.integers(1, 38).flatmap(lambda p: st.integers(0, p).map(lambda s: ("decimal", p, s))),
    st.integers(1, 24).map(lambda n: ("fixed", n)),
)
primitive_specs = st.one_of(st.sampled_from(SIMPLE).map(lambda k: (k,)), sized_specs)


def _fields(children: st.SearchStrategy[Any], min_size: int, max_size: int) -> Any:
    return st.lists(
        st.tuples(names, children, st.booleans()),
        min_size=min_size,
        max_size=max_size,
        unique_by=lambda f: f[0],
    ).map(tuple)


type_specs = st.recursive(
    primitive_specs,
    lambda children: st.one_of(
        st.tuples(st.just("list"), children, st.booleans()),
        st.tuples(st.just("map"), children, st.booleans()),
        _fields(children, 1, 4).map(lambda fs: ("struct", fs)),
    ),
    max_leaves=8,
)

root_specs = _fields(type_specs, 1, 6)

# What the JVM path (loader.ext.fastpath.plain) reads: every type but time, which Spark cannot load.
jvm_type_specs = st.recursive(
    st.one_of(st.sampled_from([k for k in SIMPLE if k != "time"]).map(lambda k: (k,)), sized_specs),
    lambda children: st.one_of(
        st.tuples(st.just("list"), children, st.booleans()),
        st.tuples(st.just("map"), children, st.booleans()),
        _fields(children, 1, 4).map(lambda fs: ("struct", fs)),
    ),
    max_leaves=8,
)
jvm_root_specs = _fields(jvm_type_specs, 1, 6)


def to_iceberg(spec: tuple[Any, ...], ids: itertools.count[int]) -> it.IcebergType:
    kind = spec[0]
    simple = {
        "boolean": it.BooleanType,
        "int": it.IntegerType,
        "long": it.LongType,
        "float": it.FloatType,
        "double": it.DoubleType,
        "string": it.StringType,
        "date": it.DateType,
        "time": it.TimeType,
        "timestamp": it.TimestampType,
        "timestamptz": it.TimestamptzType,
        "uuid": it.UUIDType,
        "binary": it.BinaryType,
    }
    if kind in simple:
        return simple[kind]()
    if kind == "decimal":
        return it.DecimalType(spec[1], spec[2])
    if kind == "fixed":
        return it.FixedType(spec[1])
    if kind == "list":
        return it.ListType(next(ids), to_iceberg(spec[1], ids), element_required=spec[2])
    if kind == "map":
        key_id = next(ids)
        return it.MapType(
            key_id, it.StringType(), next(ids), to_iceberg(spec[1], ids), value_required=spec[2]
        )
    assert kind == "struct"
    return it.StructType(*to_nested(spec[1], ids))


def to_nested(fields: tuple[Any, ...], ids: itertools.count[int]) -> list[it.NestedField]:
    return [
        it.NestedField(next(ids), name, to_iceberg(spec, ids), required=required)
        for name, spec, required in fields
    ]


def to_schema(fields: tuple[Any, ...]) -> Schema:
    return Schema(*to_nested(fields, itertools.count(1)))


# --- values ----------------------------------------------------------------


@dataclass
class Site:
    """A place in the JSON document where a value can be replaced."""

    tokens: tuple[str | int, ...]  # keys/indices to walk the JSON tree
    path: str  # the path parse_row must report
    spec: tuple[Any, ...]
    required: bool


@dataclass
class Document:
    fields: tuple[Any, ...]
    schema: Schema
    json_tree: dict[str, Any]
    expected: dict[str, Any]
    sites: list[Site] = field(default_factory=list)

    @property
    def payload(self) -> bytes:
        return dumps(self.json_tree).encode("utf-8")


_offsets = st.integers(-(23 * 60 + 59), 23 * 60 + 59).map(lambda m: timezone(timedelta(minutes=m)))


def _primitive(draw: Any, spec: tuple[Any, ...], normal: bool = False) -> tuple[Any, Any]:
    """(expected Python value, JSON node) for a primitive spec; ``normal``: no subnormal floats."""
    kind = spec[0]
    if kind == "boolean":
        v = draw(st.booleans())
        return v, v
    if kind in ("int", "long"):
        bits = 31 if kind == "int" else 63
        v = draw(st.integers(-(2**bits), 2**bits - 1))
        return v, Raw(str(v))
    if kind in ("float", "double"):
        v = draw(
            st.floats(
                width=32 if kind == "float" else 64,
                allow_nan=False,
                allow_infinity=False,
                allow_subnormal=not normal,
            )
        )
        if v.is_integer() and abs(v) < 2**53 and draw(st.booleans()):
            return v, Raw(str(int(v)))
        return v, Raw(repr(v))
    if kind == "decimal":
        p, s = spec[1], spec[2]
        # From the unscaled integer: st.decimals rounds bounds beyond 28 digits.
        unscaled = draw(st.integers(-(10**p) + 1, 10**p - 1))
        expected = Decimal(unscaled).scaleb(-s, context=Context(prec=p + 2))
        text = str(expected)
        return expected, Raw(text) if draw(st.booleans()) else text
    if kind == "string":
        v = draw(st.text(max_size=8))
        return v, v
    if kind == "date":
        v = draw(st.dates())
        return v, v.isoformat()
    if kind == "time":
        v = draw(st.times())
        return v, v.isoformat()
    if kind == "timestamp":
        v = draw(st.datetimes())
        return v, v.isoformat()
    if kind == "timestamptz":
        v = draw(
            st.datetimes(
                min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31), timezones=_offsets
            )
        )
        text = v.isoformat()
        if text.endswith("+00:00") and draw(st.booleans()):
            text = text[:-6] + "Z"
        return v.astimezone(UTC), text
    if kind == "uuid":
        v = str(draw(st.uuids()))
        return v, v.upper() if draw(st.booleans()) else v
    if kind == "binary":
        v = draw(st.binary(max_size=12))
        return v, base64.b64encode(v).decode()
    assert kind == "fixed"
    v = draw(st.binary(min_size=spec[1], max_size=spec[1]))
    return v, base64.b64encode(v).decode()


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _value(
    draw: Any,
    spec: tuple[Any, ...],
    required: bool,
    tokens: tuple[str | int, ...],
    path: str,
    sites: list[Site],
    plain: bool = False,
) -> tuple[Any, Any]:
    sites.append(Site(tokens, path, spec, required))
    kind = spec[0]
    if kind == "list":
        items: list[Any] = []
        nodes: list[Any] = []
        for index in range(draw(st.integers(0, 3))):
            if not spec[2] and draw(st.integers(0, 4)) == 0:
                items.append(None)
                nodes.append(None)
                continue
            v, n = _value(
                draw, spec[1], spec[2], (*tokens, index), f"{path}[{index}]", sites, plain
            )
            items.append(v)
            nodes.append(n)
        return items, nodes
    if kind == "map":
        keys = draw(st.lists(st.text(max_size=5), max_size=3, unique=True))
        out: dict[str, Any] = {}
        node: dict[str, Any] = {}
        for key in keys:
            if not spec[2] and draw(st.integers(0, 4)) == 0:
                out[key] = node[key] = None
                continue
            sub = f"{path}[{json.dumps(key, ensure_ascii=False)}]"
            out[key], node[key] = _value(draw, spec[1], spec[2], (*tokens, key), sub, sites, plain)
        return out, node
    if kind == "struct":
        return _struct(draw, spec[1], tokens, path, sites, plain)
    return _primitive(draw, spec, normal=plain)


def _struct(
    draw: Any,
    fields: tuple[Any, ...],
    tokens: tuple[str | int, ...],
    path: str,
    sites: list[Site],
    plain: bool = False,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A struct's expected value and JSON node.

    ``plain`` keeps exact key names, no extra keys and only normal floats (the JVM path leaves
    subnormal ones to the strict parser).
    """
    out: dict[str, Any] = {}
    node: dict[str, Any] = {}
    for name, spec, required in fields:
        # Names are unique lower-case, so any re-casing still matches one field.
        key = name if plain else draw(st.sampled_from([name, name.upper(), name.capitalize()]))
        presence = "value" if required else draw(st.sampled_from(["value", "null", "missing"]))
        if presence == "missing":
            out[name] = None
        elif presence == "null":
            out[name] = node[key] = None
        else:
            out[name], node[key] = _value(
                draw, spec, required, (*tokens, key), _child(path, name), sites, plain
            )
    if not plain and draw(st.booleans()):
        node["Extra-Key!"] = {"ignored": [1, 2.5, "x"]}  # never a field name
    return out, node


@st.composite
def documents_for(
    draw: Any, fields: tuple[Any, ...], schema: Schema, plain: bool = False
) -> Document:
    """One more document for a schema already drawn (``fields``, and ``schema`` built from it)."""
    sites: list[Site] = []
    expected, tree = _struct(draw, fields, (), "", sites, plain)
    return Document(fields, schema, tree, expected, sites)


@st.composite
def documents(
    draw: Any, roots: st.SearchStrategy[Any] = root_specs, plain: bool = False
) -> Document:
    """A schema and one document for it; ``plain``: exact key names, no extra keys."""
    fields = draw(roots)
    return draw(documents_for(fields, to_schema(fields), plain))


# --- mutations ---------------------------------------------------------------


def bad_values(spec: tuple[Any, ...]) -> list[tuple[Any, str]]:
    """JSON nodes that must be rejected for ``spec``, with the error kind."""
    kind = spec[0]
    mismatch = "type_mismatch"
    table: dict[str, list[tuple[Any, str]]] = {
        "boolean": [("true", mismatch), (Raw("1"), mismatch), (None, "")],
        "int": [
            (Raw("1.5"), mismatch),
            (Raw("2.0"), mismatch),
            ("1", mismatch),
            (Raw(str(2**31)), "out_of_range"),
        ],
        "long": [
            (Raw("1e3"), mismatch),
            (True, mismatch),
            (Raw(str(-(2**63) - 1)), "out_of_range"),
        ],
        "float": [("1.0", mismatch), (Raw("1e39"), "out_of_range"), (False, mismatch)],
        "double": [("1.0", mismatch), (Raw("-1e309"), "out_of_range"), ({}, mismatch)],
        "string": [(Raw("1"), mismatch), ({}, mismatch), ([], mismatch), (True, mismatch)],
        "date": [
            ("2022-13-01", mismatch),
            ("2022-01-01T00:00:00", mismatch),
            (Raw("20220101"), mismatch),
        ],
        "time": [("25:00:00", mismatch), ("12:00", mismatch), ("12:00:00.1234567", mismatch)],
        "timestamp": [
            ("2022-01-01T00:00:00Z", mismatch),
            ("2022-01-01T00:00:00+01:00", mismatch),
            ("2022-01-01 00:00:00", mismatch),
            ("2022-01-01T00:00:00.1234567", mismatch),
        ],
        "timestamptz": [
            ("2022-01-01T00:00:00", mismatch),
            ("2022-01-01T00:00:00+0100", mismatch),
            ("2022-02-30T00:00:00Z", mismatch),
            (Raw("1"), mismatch),
        ],
        "uuid": [
            ("not-a-uuid", mismatch),
            (Raw("1"), mismatch),
            ("a0eebc999c0b4ef8bb6d6bb9bd380a11", mismatch),
        ],
        "binary": [("***", mismatch), (Raw("1"), mismatch), ("QQ", mismatch)],
        "list": [({}, mismatch), ("x", mismatch)],
        "map": [([], mismatch), (Raw("1"), mismatch)],
        "struct": [([], mismatch), ("x", mismatch)],
    }
    if kind == "decimal":
        p, s = spec[1], spec[2]
        return [
            (True, mismatch),
            ("1_000", mismatch),
            (Raw("1" + "0" * (p - s)), "out_of_range"),
            (Raw("0." + "0" * s + "1"), "out_of_range"),
        ]
    if kind == "fixed":
        return [(base64.b64encode(b"x" * (spec[1] + 1)).decode(), mismatch), (Raw("1"), mismatch)]
    return [(v, k) for v, k in table[kind] if k]


def plant(tree: Any, tokens: tuple[str | int, ...], node: Any) -> Any:
    """A copy of ``tree`` with the value at ``tokens`` replaced by ``node``."""
    if not tokens:
        return node
    head, rest = tokens[0], tokens[1:]
    if isinstance(tree, dict):
        copy: Any = dict(tree)
    else:
        copy = list(tree)
    copy[head] = plant(tree[head], rest, node)
    return copy


def mutated(doc: Document, data: Any) -> tuple[bytes, str, Site]:
    """``doc`` with one site's value replaced by a bad one: (payload, error kind, site)."""
    site = data.draw(st.sampled_from(doc.sites))
    candidates = bad_values(site.spec)
    if site.required:
        candidates.append((None, "missing_required"))
    bad, kind = data.draw(st.sampled_from(candidates))
    return dumps(plant(doc.json_tree, site.tokens, bad)).encode(), kind, site
