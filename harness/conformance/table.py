"""The conformance table: one cell per scenario and loader, from the runs' results.

Pure functions over what the runs found (``harness.scenarios.runner.RunResult``): a cell is
``pass``, the anomalies found with their counts (each with the seed and the file that
reproduce it), ``not applicable`` with the reason, ``not run`` (the time budget ran out) or
``error`` (the run itself failed). Anomalies keep their checks' names; :func:`category` sorts
them into the classes the table sums up: lost (the loader's committed position passed rows it
never wrote), pending (rows not loaded, the position before them), duplicated, misrouted,
stalled, coerced, dropped (a value sent that the table holds as NULL). A message two checks
of one run both found is counted once in its class.
Rows that arrived only in a run's drain are shown as *late* beside the outcome; checks that
cannot apply to a loader are listed with why, not counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icefloe.harness.scenarios.model import SCENARIO_DIR

__all__ = ["CATEGORIES", "Cell", "category", "from_result", "markdown", "not_applicable"]

CATEGORIES = (
    "lost",
    "pending",
    "duplicated",
    "misrouted",
    "stalled",
    "coerced",
    "dropped",
    "missing_files",
    "unhealed",
)
"""The anomaly classes the table sums up (an anomaly of no class is shown by its name).

``missing_files`` are data files a snapshot lists and storage does not hold (the table is
broken; no row is judged lost by it); ``unhealed`` is a fault the kit failed to heal, the
kit's failure and not the loader's stall."""

_PREFIXES = {
    "lost": ("lost",),
    "missing_files": ("missing_file",),
    "unhealed": ("unhealed",),
    "pending": ("pending",),
    "duplicated": ("duplicate", "added_twice", "listed_twice"),
    "misrouted": ("misrouted", "unexpected"),
    "stalled": ("stalled", "stale", "unexplained_exit"),
    "coerced": ("coerced",),
    "dropped": ("dropped_value",),
}
_VALUE_CHECKS = ("values", "column_values", "values_match_ledger")
"""Checks whose ``wrong_value`` is a value the loader changed (coerced); elsewhere it is a
wrong fact about a row or a letter (a dead letter's error kind), kept under its own name."""

KIT = SCENARIO_DIR.parent
"""The folder the built-in scenarios are named relative to (``scenarios/01_....toml``), in a
checkout and installed alike; a user's own scenario file keeps the name it was given."""

PASS = "pass"
ANOMALIES = "anomalies"
NOT_APPLICABLE = "not applicable"
NOT_RUN = "not run"
ERROR = "error"
UNKNOWN = "unknown"


def scenario_file(scenario: Any) -> str:
    """The file of ``scenario`` as the table names it (a built-in one relative to `KIT`)."""
    if scenario.path is None:
        return str(scenario.name)
    return file_name(scenario.path)


def file_name(path: str | Path) -> str:
    """``path`` as the table names it: a built-in scenario relative to `KIT`, others as given."""
    path = Path(path)
    if path.is_absolute() and path.is_relative_to(KIT):
        path = path.relative_to(KIT)
    return str(path)


def file_path(name: str) -> Path:
    """The scenario file a table's ``name`` (`file_name`) stands for."""
    path = Path(name)
    if path.is_absolute() or not (KIT / path).exists():
        return path
    return KIT / path


def category(anomaly: str, check: str = "") -> str | None:
    """The class (``CATEGORIES``) of a checker's anomaly name, or None.

    Args:
        anomaly: The anomaly's name.
        check: The check that found it (``wrong_value`` of a value check is ``coerced``).
    """
    if anomaly == "wrong_value" and check in _VALUE_CHECKS:
        return "coerced"
    for name, prefixes in _PREFIXES.items():
        if anomaly.startswith(prefixes):
            return name
    return None


@dataclass(frozen=True)
class Cell:
    """One scenario run against one loader.

    Attributes:
        scenario: The scenario's name.
        loader: The loader's name (``--loader``).
        outcome: ``pass``, ``anomalies``, ``unknown``, ``not applicable``, ``not run``, ``error``.
        anomalies: ``check: anomaly`` -> count.
        seed: The run's seed.
        file: The scenario file that reproduces it.
        reason: Why not applicable, not run, unknown, or the error.
        seconds: How long the run took.
        replay: The command that runs it again.
        classes: Anomalies by class, each message counted once whichever checks found it
            (empty: computed from ``anomalies``).
        notes: What the run found that breaks no promise: ``late`` rows (arrived only in the
            drain).
        inapplicable: Checks that could not apply to the loader, with why.
        evidence: A few anomalies as their checks named them (a lost row with the commit that
            passed it).
    """

    scenario: str
    loader: str
    outcome: str
    anomalies: Mapping[str, int] = field(default_factory=dict)
    seed: int | None = None
    file: str = ""
    reason: str = ""
    seconds: float = 0.0
    replay: str = ""
    classes: Mapping[str, int] = field(default_factory=dict)
    notes: Mapping[str, int] = field(default_factory=dict)
    inapplicable: Mapping[str, str] = field(default_factory=dict)
    evidence: tuple[str, ...] = ()

    def categories(self) -> dict[str, int]:
        """Anomaly counts by class (``CATEGORIES``; others under their own names)."""
        if self.classes:
            return dict(self.classes)
        out: dict[str, int] = {}
        for name, count in self.anomalies.items():
            check, _, anomaly = name.rpartition(": ")
            key = class_of(anomaly, check)
            out[key] = out.get(key, 0) + count
        return out

    def text(self) -> str:
        """The cell as the table shows it."""
        late = f", late {self.notes['late']}" if self.notes.get("late") else ""
        if self.outcome == PASS:
            return f"pass{late}"
        if self.outcome == ANOMALIES:
            found = ", ".join(f"{k} {n}" for k, n in sorted(self.categories().items()))
            return f"**{found}**{late} (seed {self.seed})"
        if self.outcome == NOT_APPLICABLE:  # the capabilities it lacks; why, below the table
            lacks = [r.split(":", 1)[0].removeprefix("no ") for r in self.reason.split("; ")]
            return f"not applicable (no {', '.join(lacks)})"
        if self.outcome == NOT_RUN:
            return NOT_RUN
        return f"{self.outcome}: {self.reason[:120]}"


def class_of(anomaly: str, check: str) -> str:
    """The class a check's anomaly is counted under in a cell."""
    key = category(anomaly, check) or anomaly
    if check == "dead_letter":
        key = f"dead letters {key}"  # of the malformed messages, not of the rows
    return key


def from_result(result: Any, loader: str, replay: str) -> Cell:
    """The cell of a finished run.

    Args:
        result: A ``harness.scenarios.runner.RunResult``.
        loader: The loader's name.
        replay: The command that replays it.

    Returns:
        ``pass`` when every check is valid (or not applicable); ``anomalies`` with each
        invalid check's anomalies and counts, and by class with each message once;
        ``unknown`` when no check failed but one compared nothing; ``error`` when the run
        itself failed.
    """
    common = {
        "scenario": result.scenario.name,
        "loader": loader,
        "seed": result.seed,
        "file": scenario_file(result.scenario),
        "seconds": round(result.elapsed_s, 1),
        "replay": replay,
        "notes": {
            k: v
            for k, v in {
                "late": max((int(c.stats.get("late", 0)) for c in result.checks), default=0)
            }.items()
            if v
        },
        "inapplicable": {
            c.check: c.summary for c in result.checks if c.verdict == "not_applicable"
        },
    }
    invalid = [c for c in result.checks if c.verdict == "invalid"]
    anomalies = {
        f"{check.check}: {name}": anomaly.count
        for check in invalid
        for name, anomaly in check.anomalies.items()
    }
    if anomalies:
        evidence = tuple(
            f"{check.check}: {name}: {anomaly.examples[0]}"
            for check in invalid
            for name, anomaly in check.anomalies.items()
            if anomaly.examples
        )
        return Cell(
            outcome=ANOMALIES, anomalies=anomalies, classes=merged(invalid), evidence=evidence,
            **common,
        )  # type: ignore[arg-type]  # fmt: skip
    if result.error is not None:
        return Cell(outcome=ERROR, reason=str(result.error), **common)  # type: ignore[arg-type]
    if result.verdict == "valid":
        return Cell(outcome=PASS, **common)  # type: ignore[arg-type]
    unknown = [c.check for c in result.checks if c.verdict == "unknown"]
    return Cell(outcome=UNKNOWN, reason=f"compared nothing: {', '.join(unknown)}", **common)  # type: ignore[arg-type]


def merged(checks: Iterable[Any]) -> dict[str, int]:
    """Anomaly counts by class over several checks' results, a message found by two checks
    counted once in its class (anomalies that name their messages, ``Anomaly.keys``)."""
    keyed: dict[str, set[str]] = {}
    counted: dict[str, int] = {}
    for check in checks:
        for name, anomaly in check.anomalies.items():
            cls = class_of(name, check.check)
            keys: set[str] = getattr(anomaly, "keys", set())
            if keys and len(keys) == anomaly.count:
                keyed.setdefault(cls, set()).update(keys)
            else:
                counted[cls] = counted.get(cls, 0) + anomaly.count
    return {
        cls: len(keyed.get(cls, ())) + counted.get(cls, 0) for cls in sorted({*keyed, *counted})
    }


def not_applicable(scenario: Any, loader: str, reasons: Sequence[str]) -> Cell:
    """The cell of a scenario that needs what the loader lacks."""
    return Cell(
        scenario.name, loader, NOT_APPLICABLE, file=scenario_file(scenario),
        reason="; ".join(reasons),
    )  # fmt: skip


def markdown(cells: Iterable[Cell], loaders: Sequence[str]) -> str:
    """The scenario x loader table, then every anomaly with its count and how to reproduce it.

    Args:
        cells: The cells (any order).
        loaders: The loaders, in column order.

    Returns:
        Markdown text.
    """
    cells = list(cells)
    by = {(c.scenario, c.loader): c for c in cells}
    scenarios = list(dict.fromkeys(c.scenario for c in cells))
    lines = [
        "| scenario | " + " | ".join(loaders) + " |",
        "|---|" + "---|" * len(loaders),
    ]
    for scenario in scenarios:
        row = [
            by[(scenario, loader)].text() if (scenario, loader) in by else "-" for loader in loaders
        ]
        lines.append(f"| {scenario} | " + " | ".join(r.replace("|", "/") for r in row) + " |")
    lacking = [c for c in cells if c.outcome == NOT_APPLICABLE]
    if lacking:
        lines += ["", "Not applicable, and why:", ""]
        lines += [f"- {c.scenario} on {c.loader}: {c.reason}" for c in lacking]
    partial = [c for c in cells if c.inapplicable and c.outcome != NOT_APPLICABLE]
    if partial:
        lines += ["", "Checks that could not apply to a loader (not counted), and why:", ""]
        lines += [
            f"- {c.scenario} on {c.loader}: {check}: {why}"
            for c in partial
            for check, why in sorted(c.inapplicable.items())
        ]
    found = [c for c in cells if c.outcome in (ANOMALIES, ERROR, UNKNOWN)]
    if found:
        lines += ["", "Each finding, with what reproduces it:", ""]
        for c in found:
            detail = ", ".join(f"{k} x{n}" for k, n in c.anomalies.items()) or c.reason[:200]
            lines.append(f"- {c.scenario} on {c.loader} ({c.outcome}): {detail}; file `{c.file}`, "
                         f"seed {c.seed}: `{c.replay}`")  # fmt: skip
            lines += [f"  - e.g. {e[:300]}" for e in c.evidence[:3]]
    return "\n".join(lines) + "\n"
