"""The scenario file's reference, generated from the code that reads it.

Every step kind, fault kind and checker declares its parameters (a dataclass, or a checker's
``Param`` list) and says what it does in its docstring; this module writes them out as one
Markdown page (``icefloe scenario reference``; docs/scenario-reference.md is its output, and a
test fails when the page and the code part). Nothing here is written by hand but the headings.
"""

from __future__ import annotations

import dataclasses
from typing import get_type_hints

from icefloe.harness import docstrings
from icefloe.harness.scenarios import checks as _registers_the_checkers  # noqa: F401
from icefloe.harness.scenarios import model
from icefloe.harness.scenarios.checks.verdict import CHECKERS, PARAMS
from icefloe.harness.scenarios.faults import FAULTS
from icefloe.harness.scenarios.faults import load_kinds as load_fault_kinds
from icefloe.harness.scenarios.mutations import MUTATIONS
from icefloe.harness.scenarios.params import describe_type
from icefloe.harness.scenarios.steps import STEPS
from icefloe.harness.scenarios.steps import load_kinds as load_step_kinds
from icefloe.harness.scenarios.traffic import Workload

__all__ = ["markdown"]

COMMAND = "icefloe scenario reference > docs/scenario-reference.md"

_HEAD = f"""# Scenario file reference

Generated from the code that reads scenario files (`{COMMAND}`); a test fails when this page
and the code part. How to write a scenario, with an annotated example:
[scenarios.md](scenarios.md#write-a-scenario). A key that is not here is refused, with its file
and line and the keys that are known there.
"""


_cell = docstrings.cell
_doc = docstrings.markdown


def _fields(cls: type) -> list[str]:
    hints = get_type_hints(cls)
    fields = dataclasses.fields(cls)
    if not fields:
        return ["No parameters."]
    lines = ["| key | type | default |", "|---|---|---|"]
    for f in fields:
        kind, default = _cell(describe_type(hints[f.name])), docstrings.default(cls, f.name)
        lines.append(f"| `{f.name}` | {kind} | {default} |")
    return lines


def _top_level() -> list[str]:
    lines = ["## Tables and keys of a file", "", "| table | keys |", "|---|---|"]
    for table, keys in model.KNOWN_KEYS.items():
        name = f"`[{table}]`" if table else "top level"
        lines.append(f"| {name} | {', '.join(f'`{k}`' for k in keys)} |")
    lines += [
        "",
        "Every `[[steps]]` table also takes `only_in_break` (run the step only under that "
        'break) and `not_in_break` (skip it under that break). A value written `"$name"` is '
        "the scenario's variable `name` (`[vars]`, overridden by `[profiles.<profile>.vars]`).",
    ]
    return lines


def _workload() -> list[str]:
    return [
        "## `[workload]`",
        "",
        "What a `publish` step sends; the step's own keys override the table's.",
        "",
        *_fields(Workload),
    ]


def _steps() -> list[str]:
    load_step_kinds()
    lines = ['## Steps (`[[steps]]`, `do = "..."`)']
    for name in sorted(STEPS):
        kind = STEPS[name]
        lines += ["", f"### `{name}`", "", _doc(kind.run), "", _doc(kind.params)]
        if kind.checked_by_fields:
            lines += ["", *_fields(kind.params)]
    return lines


def _faults() -> list[str]:
    load_fault_kinds()
    lines = [
        '## Faults (`fault = "..."` in a `fault` or `nemesis` step, or a schedule\'s event)',
    ]
    for name in sorted(FAULTS):
        kind = FAULTS[name]
        lines += ["", f"### `{name}` (lane: {kind.lane})", "", _doc(kind.build)]
        params_doc = _doc(kind.params)
        if params_doc:
            lines += ["", params_doc]
        lines += ["", *_fields(kind.params)]
    return lines


def _checks() -> list[str]:
    lines = ['## Checks (`[[checks]]`, `check = "..."`)']
    for name in sorted(CHECKERS):
        lines += ["", f"### `{name}`", "", _doc(CHECKERS[name]).split("\n\n")[0]]
        params = PARAMS[name]
        if not params:
            lines += ["", "No parameters."]
            continue
        lines += ["", "| key | type | default | meaning |", "|---|---|---|---|"]
        for p in params:
            cells = (p.type_text, p.default_text, p.meaning)
            lines.append(f"| `{p.name}` | " + " | ".join(_cell(c) for c in cells) + " |")
    return lines


def _mutations() -> list[str]:
    lines = [
        '## Mutations (`[breaks.NAME] mutate = "..."`)',
        "",
        "A break may change what the run read back or recorded instead of the loader, and then "
        'names the check that must turn invalid with an anomaly (`expect = { check = "...", '
        'anomaly = "..." }`), or, for a check that only says whether the run proved anything, '
        'that must say it proved nothing (`expect = { check = "...", verdict = "unknown" }`).',
        "",
        "| mutation | what it changes |",
        "|---|---|",
    ]
    for name, mutation in sorted(MUTATIONS.items()):
        lines.append(f"| `{name}` | {_cell(mutation.doc)} |")
    return lines


def markdown() -> str:
    """The whole reference page."""
    sections = (_top_level(), _workload(), _steps(), _faults(), _checks(), _mutations())
    parts = [_HEAD, *("\n".join(section) for section in sections)]
    return "\n\n".join(parts).rstrip() + "\n"
