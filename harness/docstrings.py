"""Docstrings and dataclass fields as Markdown, for the reference pages generated from the code.

The kit's docstrings are Google-style: prose, then sections such as ``Attributes:`` whose
entries are ``name: text`` lines indented under it. `attributes` reads such a section into a
mapping; `markdown` renders a whole docstring as Markdown (inline literals in single
backticks, a section's entries as a list, since an indented block would read as code).
`cell` makes any text one table cell, `default` names a field's default as a cell shows it.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from typing import Any

__all__ = ["attributes", "cell", "default", "markdown"]

_SECTIONS = ("Attributes:", "Members:", "Args:")


def _lines(obj: Any) -> list[str]:
    return inspect.cleandoc(obj.__doc__ or "").strip().replace("``", "`").splitlines()


def attributes(obj: Any, section: str = "Attributes:") -> dict[str, str]:
    """The entries of one section of ``obj``'s docstring: name -> its text, on one line."""
    found: dict[str, str] = {}
    inside, last = False, ""
    for line in _lines(obj):
        if line.strip() == section:
            inside = True
            continue
        if not inside:
            continue
        if line and not line.startswith(" "):
            break
        if line.startswith("        ") and last:
            found[last] += " " + line.strip()
        elif line.startswith("    "):
            name, _, rest = line.strip().partition(":")
            last = name.strip()
            found[last] = rest.strip()
    return {k: _roles(v) for k, v in found.items()}


def _roles(text: str) -> str:
    return re.sub(r":\w+:`~?([^`]+)`", r"`\1`", text)


def markdown(obj: Any) -> str:
    """``obj``'s whole docstring as Markdown."""
    out: list[str] = []
    for line in _lines(obj):
        if line.rstrip() in _SECTIONS:
            out.append("")
            continue
        if line.startswith("        ") and out:
            out[-1] += " " + line.strip()
        elif line.startswith("    "):
            name, sep, rest = line.strip().partition(":")
            out.append(f"- `{name}`: {rest.strip()}" if sep else f"- {line.strip()}")
        else:
            out.append(line)
    return re.sub(r"\n{3,}", "\n\n", _roles("\n".join(out))).strip()


def cell(text: object) -> str:
    """``text`` as one Markdown table cell: on one line, its pipes escaped."""
    return " ".join(str(text).split()).replace("NoneType", "None").replace("|", "\\|")


def default(cls: type, name: str) -> str:
    """The default of ``cls``'s field ``name`` as a reference cell shows it: ``required``,
    ``none``, or the value in backticks (a set sorted)."""
    field = {f.name: f for f in dataclasses.fields(cls)}[name]
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return "required"
    if isinstance(value, frozenset):
        value = sorted(str(v) for v in value)
    return "none" if value is None else f"`{value!r}`"
