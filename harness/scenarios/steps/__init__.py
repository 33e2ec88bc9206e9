"""Step kinds: what a scenario's timeline may do, one small function each, typed parameters.

Each kind is registered with :func:`step`: its name (the ``do`` of a ``[[steps]]`` table), the
dataclass of its parameters (or a parse function for steps whose parameters build on other
tables: ``publish`` on ``[workload]``, ``fault`` on a fault kind's dataclass), and the function
that runs it on a :class:`~harness.scenarios.engine.Run` through the run's public API. The
scenario reader parses every step when the file is read, so a wrong name, type or value is an
error before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from icefloe.harness.scenarios.params import parse_params

__all__ = ["STEPS", "ParseContext", "StepKind", "parse_step", "perform", "step"]


@dataclass(frozen=True)
class ParseContext:
    """What a step's parser may need from the rest of the file.

    Attributes:
        workload: The scenario's ``[workload]`` table (variables substituted).
        loader: The scenario's ``[loader]`` table.
    """

    workload: Mapping[str, Any] = field(default_factory=dict)
    loader: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StepKind:
    """A registered step kind.

    Attributes:
        name: Its ``do``.
        parse: Turns the step's table into its parameters.
        run: Runs it on a run with those parameters.
        doc: One line for listings.
        params: The dataclass of its parameters (what the reference page shows).
        checked_by_fields: Its table is read field by field into ``params`` (a parser of its
            own builds it from other tables: the reference shows its docstring only).
    """

    name: str
    parse: Callable[[Mapping[str, Any], str, ParseContext], Any]
    run: Callable[[Any, Any], None]
    doc: str
    params: type
    checked_by_fields: bool = True


STEPS: dict[str, StepKind] = {}


def step(
    name: str,
    params: type | None = None,
    parse: Callable[[Mapping[str, Any], str, ParseContext], Any] | None = None,
) -> Callable[[Callable[[Any, Any], None]], Callable[[Any, Any], None]]:
    """Register a step function ``fn(run, params)`` under ``name``.

    Args:
        name: The step's ``do``.
        params: The dataclass of its parameters (checked by ``parse_params`` unless ``parse``
            is given).
        parse: A parser of its own, for parameters that build on other tables; it returns a
            ``params``.
    """
    if params is None:
        raise ValueError("give the parameters' dataclass")

    def by_dataclass(raw: Mapping[str, Any], where: str, ctx: ParseContext) -> Any:
        return parse_params(params, raw, where)  # type: ignore[arg-type]

    def register(fn: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
        doc = (fn.__doc__ or name).strip().splitlines()[0]
        STEPS[name] = StepKind(name, parse or by_dataclass, fn, doc, params, parse is None)
        return fn

    return register


def parse_step(do: str, raw: Mapping[str, Any], where: str, ctx: ParseContext) -> Any:
    """The typed parameters of one step.

    Raises:
        harness.scenarios.params.ParamError: Unknown kind or bad parameters.
    """
    from icefloe.harness.scenarios.params import ParamError

    load_kinds()
    if do not in STEPS:
        raise ParamError(f"{where}: unknown action {do!r}; one of {sorted(STEPS)}")
    return STEPS[do].parse(raw, where, ctx)


def perform(run: Any, do: str, raw: Mapping[str, Any] | None = None) -> None:
    """Parse and run one step on ``run`` (what a scenario file's ``[[steps]]`` table does).

    Raises:
        harness.scenarios.params.ParamError: Unknown kind or bad parameters.
    """
    params = parse_step(do, raw or {}, do, ParseContext())  # loads the kinds first
    STEPS[do].run(run, params)


def load_kinds() -> None:
    # The kinds register themselves when their modules are imported.
    from icefloe.harness.scenarios.steps import basic, faulting  # noqa: F401
