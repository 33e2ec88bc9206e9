"""The verdict vocabulary and the checker registry.

A checker is a pure function ``(history, ledger, observed, params) -> CheckResult``: ``valid``,
``invalid`` (with named anomalies and examples), ``unknown`` (the run did not exercise what the
check is about, so it proves nothing) or ``not_applicable`` (the loader under test lacks what
the check needs, read from its observer). A check that compared nothing says ``unknown`` with
the reason, never ``valid``; a checker that raises is ``unknown`` too (:func:`run_check`).

Registering a checker declares its parameters, each with its type, its default and what it
means, so a scenario file's parameters can be checked before anything runs and a reference of
every check can be generated::

    @checker(
        "liveness",
        Param("bound_s", float, "seconds after a heal for the loader to commit again", 120.0),
        Param("faults", tuple[str, ...], "judge only the heals of these faults"),
    )
    def check_liveness(history, ledger, observed, params): ...

- :data:`CHECKERS` maps a name to its function, :data:`PARAMS` to its declared parameters (a
  tuple of :class:`Param`; a checker that reads none declares none).
- :func:`check_params` ``(name, params, where="")`` validates a scenario's parameters for a
  check: an unknown name is a :class:`~harness.scenarios.params.ParamError` listing the known
  ones, as is a missing required parameter or a value of the wrong type. It returns the
  parameters given, each as its declared type (a list as a tuple, an int as a float).
- :func:`run_check` fills in the declared defaults of the parameters not given and runs the
  checker: a default is written once, in its declaration, and a checker reads
  ``params[name]`` for a parameter with a default, ``params.get(name)`` for an optional one.

Anomaly names are the vocabulary of the reports (docs/scenarios.md lists them); each checker's
docstring says which it finds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from icefloe.harness.history import History
from icefloe.harness.observer import observer_of
from icefloe.harness.scenarios.checks.facts.ledger import under_contract
from icefloe.harness.scenarios.checks.facts.reads import Observed
from icefloe.harness.scenarios.params import ParamError, coerce, describe_type
from icefloe.publisher.ledger import LedgerEntry

__all__ = [
    "CHECKERS",
    "INVALID",
    "NOT_APPLICABLE",
    "OPTIONAL",
    "PARAMS",
    "REQUIRED",
    "UNKNOWN",
    "VALID",
    "Anomaly",
    "CheckResult",
    "Checker",
    "Found",
    "Param",
    "check_params",
    "checker",
    "run_check",
    "summarize",
]

VALID, INVALID, UNKNOWN, NOT_APPLICABLE = "valid", "invalid", "unknown", "not_applicable"
_EXAMPLES = 5


@dataclass
class Anomaly:
    """One named kind of failure found by a check.

    Attributes:
        name: The anomaly's name (see the module docstring).
        count: How many instances were found.
        examples: A few instances, as short text.
        keys: What each instance is about (a message's event id), when it says: two checks
            that find the same message are counted once in a report.
    """

    name: str
    count: int = 0
    examples: list[str] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)

    def add(self, example: str, key: str | None = None) -> None:
        self.count += 1
        if key is not None:
            self.keys.add(key)
        if len(self.examples) < _EXAMPLES:
            self.examples.append(example)

    @property
    def keyed(self) -> bool:
        """Every instance names what it is about (an event id): counts can be merged."""
        return len(self.keys) == self.count


@dataclass
class CheckResult:
    """A checker's verdict.

    Attributes:
        check: The checker's name.
        verdict: ``valid``, ``invalid`` or ``unknown``.
        summary: One line for humans.
        anomalies: Named anomalies found (empty when valid).
        stats: Numbers worth reporting (counts, latencies).
    """

    check: str
    verdict: str
    summary: str
    anomalies: dict[str, Anomaly] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Valid, or not applicable to the loader under test."""
        return self.verdict in (VALID, NOT_APPLICABLE)

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "verdict": self.verdict,
            "summary": self.summary,
            "anomalies": {
                n: {"count": a.count, "examples": a.examples} for n, a in self.anomalies.items()
            },
            "stats": self.stats,
        }


class Found:
    """Collects anomalies while a checker works; ``result`` turns them into a verdict."""

    def __init__(self) -> None:
        self.anomalies: dict[str, Anomaly] = {}

    def add(self, name: str, example: str, key: str | None = None) -> None:
        self.anomalies.setdefault(name, Anomaly(name)).add(example, key)

    def result(self, check: str, ok_summary: str, stats: dict[str, Any]) -> CheckResult:
        if not self.anomalies:
            return CheckResult(check, VALID, ok_summary, {}, stats)
        parts = ", ".join(f"{a.count} {n}" for n, a in self.anomalies.items())
        return CheckResult(check, INVALID, parts, self.anomalies, stats)


Checker = Callable[[History, Sequence[LedgerEntry], Observed, Mapping[str, Any]], CheckResult]


CHECKERS: dict[str, Checker] = {}


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


REQUIRED: Any = _Marker("REQUIRED")
"""A parameter's default when a scenario must give it."""
OPTIONAL: Any = _Marker("OPTIONAL")
"""A parameter's default when it may be left out and has no value then (``params.get``)."""


@dataclass(frozen=True)
class Param:
    """One parameter a checker reads from its scenario table.

    Attributes:
        name: Its key in the scenario file.
        kind: Its type (``int``, ``float``, ``str``, ``bool``, ``tuple[str, ...]``, ``Any``).
        meaning: What it means, in one line.
        default: Its value when not given, or :data:`REQUIRED` or :data:`OPTIONAL`.
    """

    name: str
    kind: Any
    meaning: str
    default: Any = OPTIONAL

    @property
    def required(self) -> bool:
        """A scenario must give it."""
        return self.default is REQUIRED

    @property
    def type_text(self) -> str:
        """Its type as a reference page shows it."""
        return describe_type(self.kind)

    @property
    def default_text(self) -> str:
        """Its default as a reference page shows it (``required``, ``none``, or the value)."""
        if self.default is REQUIRED:
            return "required"
        if self.default is OPTIONAL:
            return "none"
        return repr(list(self.default) if isinstance(self.default, tuple) else self.default)


PARAMS: dict[str, tuple[Param, ...]] = {}
"""Each registered checker's declared parameters, by checker name."""


def checker(name: str, *params: Param) -> Callable[[Checker], Checker]:
    """Register a checker under the name scenarios use, with the parameters it reads.

    Args:
        name: The checker's name.
        *params: Its parameters (none: it reads none).

    Raises:
        ValueError: Two parameters of one name.
    """
    names = [p.name for p in params]
    if len(set(names)) != len(names):
        raise ValueError(f"checker {name}: a parameter declared twice in {names}")

    def register(fn: Checker) -> Checker:
        CHECKERS[name] = fn
        PARAMS[name] = tuple(params)
        return fn

    return register


def check_params(name: str, params: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """Validate a scenario's parameters for the check ``name``.

    Args:
        name: A registered checker's name.
        params: The parameters the scenario gives it (variables substituted).
        where: Prefix for error messages (``"01_x: check 2 (liveness)"``).

    Returns:
        The parameters given, each as its declared type.

    Raises:
        ParamError: An unknown checker, an unknown parameter (the message lists the known
            ones), a required one missing, or a value of the wrong type.
    """
    prefix = f"{where}: " if where else ""
    if name not in PARAMS:
        raise ParamError(f"{prefix}unknown checker {name!r}; known: {sorted(PARAMS)}")
    declared = {p.name: p for p in PARAMS[name]}
    unknown = sorted(set(params) - set(declared))
    if unknown:
        known = ", ".join(sorted(declared)) or "none (it takes no parameters)"
        raise ParamError(f"{prefix}{name}: unknown parameter(s) {unknown}; known: {known}")
    missing = [p.name for p in declared.values() if p.required and p.name not in params]
    if missing:
        raise ParamError(f"{prefix}{name}: missing parameter(s) {missing}")
    at = where or name
    return {k: coerce(declared[k].kind, v, f"{at}.{k}") for k, v in params.items()}


def _with_defaults(name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    out = {
        p.name: p.default
        for p in PARAMS.get(name, ())
        if p.default is not REQUIRED and p.default is not OPTIONAL
    }
    out.update(params)
    return out


def run_check(
    name: str,
    history: History,
    ledger: Sequence[LedgerEntry],
    observed: Observed,
    params: Mapping[str, Any] | None = None,
) -> CheckResult:
    """Run the named checker; a checker that raises yields ``unknown``, never a pass.

    Args:
        name: A key of :data:`CHECKERS`.
        history: The run's history.
        ledger: Every ledger entry of the run (all publish phases); the checker gets it as the
            loader is held to it (``facts.ledger.under_contract``: a malformation of icefloe's
            policy that the loader does not declare it refuses is left to its choice).
        observed: What was read back.
        params: The scenario's parameters for this check (declared defaults fill the rest).

    Returns:
        The verdict.

    Raises:
        KeyError: For an unknown checker name.
    """
    fn = CHECKERS[name]
    try:
        held_to = under_contract(ledger, observer_of(history.events))
        return fn(history, held_to, observed, _with_defaults(name, params or {}))
    except Exception as exc:  # a broken checker must not turn into a pass
        return CheckResult(name, UNKNOWN, f"checker raised {type(exc).__name__}: {exc}")


def summarize(results: Sequence[CheckResult]) -> str:
    """``invalid`` if any result is; else ``valid`` if every result is valid or not
    applicable and one at least is valid; else ``unknown``."""
    verdicts = {r.verdict for r in results}
    if INVALID in verdicts:
        return INVALID
    if verdicts <= {VALID, NOT_APPLICABLE} and VALID in verdicts:
        return VALID
    return UNKNOWN
