"""Writing scenario files: the small TOML subset a scenario uses, from plain data.

Tables become ``[section]`` headers, lists of tables ``[[section]]`` (one level of nested
``[[section.sub]]`` for a step's events), everything else ``key = value`` with strings,
numbers, booleans, arrays and inline tables. Output reads back with ``tomllib`` to the same
data (a test checks it).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["dumps"]

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(name: str) -> str:
    return name if _BARE.match(name) else json.dumps(name)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"TOML has no {value}")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _is_tables(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _body(table: Mapping[str, Any], name: str, out: list[str]) -> None:
    nested: list[tuple[str, Any]] = []
    for key, value in table.items():
        if isinstance(value, Mapping) or _is_tables(value):
            nested.append((key, value))
        else:
            out.append(f"{_key(key)} = {_value(value)}")
    for key, value in nested:
        path = f"{name}.{_key(key)}" if name else _key(key)
        if isinstance(value, Mapping):
            out += ["", f"[{path}]"]
            _body(value, path, out)
        else:
            for item in value:
                out += ["", f"[[{path}]]"]
                _body(item, path, out)


def dumps(doc: Mapping[str, Any], header: str = "") -> str:
    """The TOML text of ``doc``, after ``header`` (comment lines, ``#`` added).

    Raises:
        TypeError: A value TOML cannot hold.
    """
    out = [f"# {line}".rstrip() for line in header.splitlines()]
    _body(doc, "", out)
    return "\n".join(out).lstrip("\n") + "\n"
