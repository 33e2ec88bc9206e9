"""Typed parameters: a step's or a fault's fields as a frozen dataclass, checked when read.

Every step kind and every fault declares its parameters as a frozen dataclass. The scenario
reader turns a TOML table into that dataclass with :func:`parse_params`: an unknown key, a
missing required one, a value of the wrong type or outside a ``Literal``'s choices is an error
naming the file's step, before anything runs. So the file format is the dataclass, and the
step code that receives it cannot drift apart from it. A dataclass may check more in its
``__post_init__`` (raise ``ValueError``).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

T = TypeVar("T")

__all__ = ["ParamError", "as_dict", "coerce", "describe_type", "parse_params"]


class ParamError(ValueError):
    """A parameter table does not fit its dataclass."""


def describe_type(kind: Any) -> str:
    """A type as a scenario file's reader names it (``int``, ``'a' | 'b'``, ``tuple[str, ...]``)."""
    origin = get_origin(kind)
    if origin is Literal:
        return " | ".join(repr(a) for a in get_args(kind))
    if origin in (Union, types.UnionType):
        return " | ".join(describe_type(a) for a in get_args(kind))
    if origin is not None:
        args = ", ".join(map(describe_type, get_args(kind)))
        return f"{getattr(origin, '__name__', origin)}[{args}]"
    if kind is Ellipsis:
        return "..."
    return getattr(kind, "__name__", str(kind))


def coerce(kind: Any, value: Any, where: str) -> Any:
    """``value`` as ``kind`` (an int as a float, a list as a tuple), or ParamError at ``where``."""
    origin = get_origin(kind)
    if origin is Literal:
        if value in get_args(kind):
            return value
    elif origin in (Union, types.UnionType):
        args = get_args(kind)
        if value is None and type(None) in args:
            return None
        for arg in args:
            if arg is type(None):
                continue
            try:
                return coerce(arg, value, where)
            except ParamError:
                continue
    elif origin is tuple:
        args = get_args(kind)
        if isinstance(value, list | tuple):
            if len(args) == 2 and args[1] is Ellipsis:
                return tuple(coerce(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
            if len(args) == len(value):
                pairs = enumerate(zip(args, value, strict=True))
                return tuple(coerce(a, v, f"{where}[{i}]") for i, (a, v) in pairs)
    elif origin in (dict, Mapping, typing.Mapping):
        if isinstance(value, Mapping):
            return dict(value)
    elif kind is Any:
        return value
    elif kind is bool:
        if isinstance(value, bool):
            return value
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif kind is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif kind is str:
        if isinstance(value, str):
            return value
    elif isinstance(kind, type) and dataclasses.is_dataclass(kind) and isinstance(value, Mapping):
        return parse_params(kind, value, where)
    raise ParamError(f"{where}: {value!r} is not {describe_type(kind)}")


def parse_params(cls: type[T], raw: Mapping[str, Any], where: str = "") -> T:
    """Build ``cls`` from a decoded TOML table, checking names, types and choices.

    Args:
        cls: A dataclass whose annotated fields are the parameters.
        raw: The table (variables already substituted).
        where: Prefix for error messages, e.g. ``"01_x: step 3 (publish)"``.

    Returns:
        The instance.

    Raises:
        ParamError: An unknown or missing key, a wrong type, or ``__post_init__`` refused it.
    """
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        raise ParamError(f"{where}: unknown parameter(s) {unknown}; known: {sorted(fields)}")
    values: dict[str, Any] = {}
    for name, f in fields.items():
        if name in raw:
            values[name] = coerce(hints[name], raw[name], f"{where}.{name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ParamError(f"{where}: missing parameter {name!r} ({describe_type(hints[name])})")
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:
        raise ParamError(f"{where}: {exc}") from exc


def as_dict(params: Any) -> dict[str, Any]:
    """The parameters as a JSON/TOML-ready dict (tuples as lists), for history and files."""

    def plain(value: Any) -> Any:
        if isinstance(value, tuple | list):
            return [plain(v) for v in value]
        if isinstance(value, Mapping):
            return {k: plain(v) for k, v in value.items()}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return as_dict(value)
        return value

    return {f.name: plain(getattr(params, f.name)) for f in dataclasses.fields(params)}
