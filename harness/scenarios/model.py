"""Scenario: the data that describes one end-to-end experiment, and the reader of its file.

A scenario file (``scenarios/<name>.toml``) names what the run needs (a topic with some
partitions, a table of the reference shape plus extra columns, a dead-letter topic or not),
the loader's settings, a workload (publisher defaults), a timeline of steps and faults, and
the checks that judge the result. The harness (``harness.scenarios.runner``) interprets it.
Every step's parameters are its kind's dataclass (``harness.scenarios.steps``), checked here:
a wrong name, type or value is refused when the file is read.

Values may refer to profile variables: a string ``"$count"`` is replaced by ``vars.count``
from ``[vars]``, overridden by ``[profiles.<profile>.vars]`` (profiles ``ci`` and ``full``).
``[breaks.<name>]`` describes the same scenario with its property broken on purpose (loader
overrides, a mutation of what was read, extra steps) and the anomaly the checks must then
report.
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icefloe.harness.resources import kit_file
from icefloe.harness.scenarios.faults import FAULTS, load_kinds
from icefloe.harness.scenarios.loaders import LoaderOptions
from icefloe.harness.scenarios.mutations import MUTATIONS
from icefloe.harness.scenarios.params import ParamError, parse_params
from icefloe.harness.scenarios.steps import ParseContext, parse_step
from icefloe.harness.scenarios.traffic import Workload

PROFILES = ("ci", "full")
SCENARIO_DIR = kit_file("scenarios")
"""The built-in scenarios (package data: `icefloe.harness.resources`)."""


class ScenarioError(ValueError):
    """A scenario file is not valid."""


KNOWN_KEYS: dict[str, tuple[str, ...]] = {
    "": (
        "name",
        "title",
        "description",
        "vars",
        "profiles",
        "topic",
        "table",
        "loader",
        "workload",
        "steps",
        "checks",
        "breaks",
        "found",
    ),
    "topic": ("partitions", "dead_letter"),
    "table": ("extra_columns",),
    "profiles.*": ("vars",),
    "breaks.*": ("description", "loader", "mutate", "expect"),
    "breaks.*.expect": ("check", "anomaly", "verdict"),
    "found": ("seed", "faults", "anomalies", "failed_checks", "error", "run"),
}
"""The keys a scenario file may hold, by table (``*``: any name); any other is refused, so a
misspelt key never leaves a scenario silently doing less. ``[found]`` is what a generated
search wrote beside a schedule it shrank (``generative/explore.py``); it is not read. The
steps', checks', ``[loader]``'s and ``[workload]``'s own keys are checked by their parameter
declarations."""


def _unknown_keys(doc: Mapping[str, Any]) -> list[tuple[str, str, tuple[str, ...]]]:
    """(table, key, known keys) for every key of ``doc`` that `KNOWN_KEYS` does not know."""
    found = []

    def walk(table: Mapping[str, Any], path: str, pattern: str) -> None:
        for key, value in table.items():
            if key not in KNOWN_KEYS[pattern]:
                found.append((path, key, KNOWN_KEYS[pattern]))
                continue
            if not isinstance(value, Mapping):
                continue
            inner, here = f"{pattern}.{key}".lstrip("."), f"{path}.{key}".lstrip(".")
            if inner in KNOWN_KEYS:
                walk(value, here, inner)
            elif f"{inner}.*" in KNOWN_KEYS:
                for name, each in value.items():
                    if isinstance(each, Mapping):
                        walk(each, f"{here}.{name}", f"{inner}.*")

    walk(doc, "", "")
    return found


def _line_of(path: Path | None, key: str) -> str:
    """`` line N`` where ``key`` is first written in the file at ``path`` (or nothing)."""
    if path is None:
        return ""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return ""
    for n, line in enumerate(lines, 1):
        text = line.strip()
        if text.startswith((f"{key} ", f"{key}=", f"[{key}", f'"{key}"')) or f".{key}]" in text:
            return f" line {n}:"
    return ""


@dataclass(frozen=True)
class Step:
    """One timeline entry.

    Attributes:
        do: The step kind (``harness.scenarios.steps.STEPS``).
        params: Its typed parameters (the kind's dataclass), variables already substituted.
        raw: The table as written (for the history and reports).
        only_in_break: Run the step only under this break (``None``: normal runs and breaks).
        not_in_break: Skip the step under this break (a break may replace part of the
            timeline, e.g. a timed nemesis by a deterministic crash).
    """

    do: str
    params: Any
    raw: Mapping[str, Any] = field(default_factory=dict)
    only_in_break: str | None = None
    not_in_break: str | None = None

    def runs_in(self, break_name: str | None) -> bool:
        """Whether the step belongs to a plain run (``None``) or to the named break's run."""
        if self.only_in_break is not None and self.only_in_break != break_name:
            return False
        return self.not_in_break is None or self.not_in_break != break_name

    def faults(self) -> list[tuple[str, Any]]:
        """The faults the step injects: (kind, params) of a ``fault``, a ``nemesis`` or each
        event of a ``schedule``; none for other steps."""
        if self.do == "fault":
            return [(self.params.kind, self.params.params)]
        if self.do == "nemesis":
            return [(self.params.fault.kind, self.params.fault.params)]
        if self.do == "schedule":
            return [(event.kind, event.params) for event in self.params.events.faults]
        return []

    @property
    def label(self) -> str:
        """``do``, with the phase or fault it is about."""
        extra = self.raw.get("phase") or self.raw.get("fault") or self.raw.get("name")
        return f"{self.do} {extra}" if extra else self.do


@dataclass(frozen=True)
class Check:
    """One check to run after the timeline: a checker name and its parameters."""

    check: str
    params: Mapping[str, Any]


@dataclass(frozen=True)
class Break:
    """The scenario run with its property broken, and what the checks must then report.

    Attributes:
        name: The break's name (``--break NAME``).
        description: What is broken, for reports and docs.
        loader: Loader setting overrides (names and types of ``[loader]``).
        mutate: A named mutation of what was read back or recorded before checking
            (``harness.scenarios.mutations``).
        expect_check: The check that must turn invalid (or unknown).
        expect_anomaly: The anomaly it must name (None with ``expect_verdict`` unknown).
        expect_verdict: ``invalid`` (with the anomaly), or ``unknown`` for a premise (a check
            that says whether the run proved anything: ``faults_exercised``) that must say the
            run proved nothing.
    """

    name: str
    description: str
    loader: Mapping[str, Any]
    mutate: str | None
    expect_check: str
    expect_anomaly: str | None
    expect_verdict: str = "invalid"

    @property
    def expected(self) -> str:
        """What must be reported, in words: ``exactly_once: duplicated``."""
        return f"{self.expect_check}: {self.expect_anomaly or self.expect_verdict}"


@dataclass(frozen=True)
class Scenario:
    """A scenario resolved for one profile.

    Attributes:
        name: File stem; also the pytest id.
        title: One line.
        description: What it shows and why it matters.
        profile: ``ci`` or ``full``.
        topic_partitions: Partitions of the source topic.
        dead_letter: Create a dead-letter topic (the loader uses it unless configured off).
        extra_columns: Columns beyond the reference table, as (name, Trino type).
        loader: Loader settings.
        workload: Publisher defaults for every ``publish`` step.
        steps: The timeline.
        checks: The checks.
        breaks: Named broken variants.
        path: The file.
        doc: The decoded file (a run saves it, so its verdict can be recomputed).
    """

    name: str
    title: str
    description: str
    profile: str
    topic_partitions: int
    dead_letter: bool
    extra_columns: tuple[tuple[str, str], ...]
    loader: LoaderOptions
    workload: Workload
    steps: tuple[Step, ...]
    checks: tuple[Check, ...]
    breaks: Mapping[str, Break] = field(default_factory=dict)
    path: Path | None = None
    doc: Mapping[str, Any] = field(default_factory=dict)

    def needs_the_stack_alone(self, break_name: str | None = None) -> bool:
        """Whether its timeline (under ``break_name``) injects a fault into what every run on
        the stack shares (``FaultKind.shared``: a service, Toxiproxy's proxies), so that no
        other run may share the stack with it."""
        load_kinds()
        return any(
            FAULTS[kind].shared
            for step in self.steps
            if step.runs_in(break_name)
            for kind, _ in step.faults()
        )

    def with_break(self, name: str | None) -> LoaderOptions:
        """The loader settings under a break (the plain ones for ``None``)."""
        if name is None:
            return self.loader
        return self.loader.updated(self.breaks[name].loader, f"{self.name}: break {name}")


def _substitute(value: Any, variables: Mapping[str, Any], where: str) -> Any:
    if isinstance(value, str) and value.startswith("$"):
        key = value[1:]
        if key not in variables:
            raise ScenarioError(f"{where}: unknown variable {value}")
        return variables[key]
    if isinstance(value, list):
        return [_substitute(v, variables, where) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, variables, f"{where}.{k}") for k, v in value.items()}
    return value


def _steps(doc: Mapping[str, Any], name: str, sub: Any, ctx: ParseContext) -> list[Step]:
    steps = []
    for i, raw in enumerate(doc.get("steps", ())):
        raw = dict(raw)
        do = raw.pop("do", None)
        only = raw.pop("only_in_break", None)
        skip = raw.pop("not_in_break", None)
        where = f"{name}: step {i} ({do})"
        values = sub(raw, f"step {i} ({do})")
        params = parse_step(str(do), values, where, ctx)
        steps.append(Step(str(do), params, values, only, skip))
    return steps


def parse(
    doc: Mapping[str, Any], *, profile: str = "ci", name: str = "", path: Path | None = None
) -> Scenario:
    """Resolve a decoded scenario document for one profile.

    Args:
        doc: The TOML document.
        profile: ``ci`` or ``full``.
        name: Default name (the file stem).
        path: Where it was read from.

    Returns:
        The scenario.

    Raises:
        ScenarioError: For an unknown profile, step, check, variable, a missing field, or a
            parameter of the wrong name, type or value.
    """
    from icefloe.harness.scenarios.checks.verdict import (
        CHECKERS,  # the package registers every checker
    )

    if profile not in PROFILES:
        raise ScenarioError(f"unknown profile {profile!r}; one of {PROFILES}")
    for table, key, known in _unknown_keys(doc):
        where = str(path) if path is not None else str(doc.get("name", name))
        raise ScenarioError(
            f"{where}:{_line_of(path, key)} unknown key {key!r}"
            f"{f' in [{table}]' if table else ''}; known: {', '.join(known)}"
        )
    original = copy.deepcopy(dict(doc))
    doc = copy.deepcopy(original)
    name = str(doc.get("name", name))
    variables = dict(doc.get("vars", {}))
    variables.update(doc.get("profiles", {}).get(profile, {}).get("vars", {}))
    sub = lambda value, where: _substitute(value, variables, f"{name}: {where}")  # noqa: E731
    try:
        loader_raw = sub(doc.get("loader", {}), "loader")
        workload_raw = sub(doc.get("workload", {}), "workload")
        loader = LoaderOptions.read(loader_raw, f"{name}: [loader]")
        workload = parse_params(Workload, workload_raw, f"{name}: [workload]")
        steps = _steps(doc, name, sub, ParseContext(workload_raw, loader_raw))
    except ParamError as exc:
        raise ScenarioError(str(exc)) from exc
    if not steps:
        raise ScenarioError(f"{name}: no steps")
    checks = []
    for i, raw in enumerate(doc.get("checks", ())):
        raw = dict(raw)
        if "check" not in raw:
            raise ScenarioError(f"{name}: check {i}: no 'check' name")
        check = raw.pop("check")
        if check not in CHECKERS:
            raise ScenarioError(f"{name}: check {i}: unknown checker {check!r}")
        checks.append(Check(check, sub(raw, f"check {i} ({check})")))
    if not checks:
        raise ScenarioError(f"{name}: no checks")
    breaks = {}
    for bname, raw in doc.get("breaks", {}).items():
        expect = raw.get("expect", {})
        verdict = expect.get("verdict", "invalid")
        if "check" not in expect or ("anomaly" in expect) != (verdict == "invalid"):
            raise ScenarioError(
                f"{name}: break {bname}: expect needs check and anomaly, or check and "
                'verdict = "unknown"'
            )
        if verdict not in ("invalid", "unknown"):
            raise ScenarioError(f"{name}: break {bname}: expect verdict {verdict!r}")
        if raw.get("mutate") is not None and raw["mutate"] not in MUTATIONS:
            raise ScenarioError(
                f"{name}: break {bname}: unknown mutation {raw['mutate']!r}; one of "
                f"{sorted(MUTATIONS)}"
            )
        overrides = sub(raw.get("loader", {}), f"break {bname}")
        try:
            loader.updated(overrides, f"{name}: break {bname}")
        except ParamError as exc:
            raise ScenarioError(str(exc)) from exc
        breaks[bname] = Break(
            bname,
            str(raw.get("description", "")),
            overrides,
            raw.get("mutate"),
            expect["check"],
            expect.get("anomaly"),
            verdict,
        )
    for step in steps:
        for named in (step.only_in_break, step.not_in_break):
            if named is not None and named not in breaks:
                raise ScenarioError(f"{name}: a step names unknown break {named!r}")
    topic = doc.get("topic", {})
    table = doc.get("table", {})
    return Scenario(
        name=name,
        title=str(doc.get("title", name)),
        description=str(doc.get("description", "")).strip(),
        profile=profile,
        topic_partitions=int(sub(topic.get("partitions", 1), "topic.partitions")),
        dead_letter=bool(topic.get("dead_letter", True)),
        extra_columns=tuple((str(c), str(t)) for c, t in table.get("extra_columns", ())),
        loader=loader,
        workload=workload,
        steps=tuple(steps),
        checks=tuple(checks),
        breaks=breaks,
        path=path,
        doc=original,
    )


def load(path: Path, profile: str = "ci", variables: Mapping[str, Any] | None = None) -> Scenario:
    """Read one scenario file.

    Args:
        path: A ``.toml`` scenario.
        profile: ``ci`` or ``full``.
        variables: Values that override its ``[vars]`` and the profile's (a smaller run of
            the same steps, as a test wants it).

    Returns:
        The scenario.

    Raises:
        ScenarioError: If the file is not a valid scenario.
        OSError: If it cannot be read.
    """
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path}: {exc}") from exc
    if variables:
        doc["vars"] = {**doc.get("vars", {}), **variables}
        chosen = doc.get("profiles", {}).get(profile, {})
        if "vars" in chosen:
            chosen["vars"] = {**chosen["vars"], **variables}
    return parse(doc, profile=profile, name=path.stem, path=path)


def discover(directory: Path = SCENARIO_DIR, profile: str = "ci") -> list[Scenario]:
    """Every scenario in a folder, ordered by file name.

    Args:
        directory: Where the ``.toml`` files are.
        profile: ``ci`` or ``full``.

    Returns:
        The scenarios.
    """
    return [load(p, profile) for p in sorted(directory.glob("*.toml"))]


USER_FOLDER = Path("scenarios")
"""A user's own scenarios: ``scenarios/`` of the folder a command runs in, when it is not the
kit's own (a checkout's ``scenarios/`` is the built-in folder)."""


def folders(extra: Sequence[Path] = ()) -> list[Path]:
    """Where scenarios are looked up, in order: ``extra`` (or, without it, ``USER_FOLDER`` when
    it exists), then the built-in folder.

    Raises:
        ScenarioError: a folder of ``extra`` that does not exist.
    """
    for folder in extra:
        if not folder.is_dir():
            raise ScenarioError(f"{folder}: no such folder of scenarios")
    chosen = list(extra) or ([USER_FOLDER] if USER_FOLDER.is_dir() else [])
    builtin = SCENARIO_DIR.resolve()
    return [*(f for f in chosen if f.resolve() != builtin), SCENARIO_DIR]


def source(scenario: Scenario) -> str:
    """Where a scenario comes from: ``built-in``, or the folder of its file."""
    if scenario.path is None:
        return "generated"
    if scenario.path.resolve().parent == SCENARIO_DIR.resolve():
        return "built-in"
    return str(scenario.path.parent)


def discover_all(extra: Sequence[Path] = (), profile: str = "ci") -> list[Scenario]:
    """Every scenario of `folders`: a user's first, then the built-in ones."""
    return [s for folder in folders(extra) for s in discover(folder, profile)]


def find_in(
    name: str,
    extra: Sequence[Path] = (),
    profile: str = "ci",
    variables: Mapping[str, Any] | None = None,
) -> Scenario:
    """The scenario ``name`` of the first of `folders` that has it (a user's own before the
    built-in one of the same name), or a ``.toml`` file.

    Raises:
        ScenarioError: no folder has it (the known names are given).
    """
    if name.endswith(".toml"):
        if not Path(name).is_file():
            raise ScenarioError(f"{name}: no such scenario file")
        return load(Path(name), profile, variables)
    searched = folders(extra)
    for folder in searched:
        if any(_named(p, name) for p in folder.glob("*.toml")):
            return find(name, folder, profile, variables)
    known = ", ".join(p.stem for folder in searched for p in sorted(folder.glob("*.toml")))
    raise ScenarioError(f"no scenario named {name!r}; known: {known}")


def _named(path: Path, name: str) -> bool:
    return path.stem == name or path.stem.split("_", 1)[-1] == name


def find(
    name: str,
    directory: Path = SCENARIO_DIR,
    profile: str = "ci",
    variables: Mapping[str, Any] | None = None,
) -> Scenario:
    """The scenario called ``name`` (its file stem, with or without a number prefix).

    Args:
        name: e.g. ``exactly_once_kill9`` or ``01_exactly_once_kill9``, or a path to a
            ``.toml`` file elsewhere (a schedule written by a generated run).
        directory: Where the files are.
        profile: ``ci`` or ``full``.
        variables: Overrides of its variables (:func:`load`).

    Returns:
        The scenario.

    Raises:
        ScenarioError: If no file (or more than one) matches.
    """
    if name.endswith(".toml") and Path(name).is_file():
        return load(Path(name), profile, variables)
    matches = [p for p in sorted(directory.glob("*.toml")) if _named(p, name)]
    if len(matches) != 1:
        known = ", ".join(p.stem for p in sorted(directory.glob("*.toml")))
        raise ScenarioError(f"no single scenario named {name!r}; known: {known}")
    return load(matches[0], profile, variables)
