r"""A loader a user brings, described by a command line and a configuration template.

A user puts a loader of their own (a Flink job, a Spark job, a script) under the same scenarios
without writing Python: a TOML file names the command that runs it, the configuration file it
reads (a template), its environment, what it can do and how to tell it has started::

    name = "my-loader"
    command = ["${python}", "-m", "myloader", "--config", "${config_file}"]
    capabilities = ["kill", "freeze", "dead_letters"]   # see harness.loaders.base.Capability
    ready_log = "started streaming"                     # a regular expression of its log
    progress = "its checkpoint in ${state_dir}/checkpoint"

    [config]                       # written to ${config_file} before each start
    name = "loader.toml"
    template = '''
    bootstrap = "${bootstrap_servers}"
    topics = ["${topic}"]
    table = "${table}"
    '''                            # or file = "my-loader.toml.in", beside this file

    [env]                          # credentials go here, and only here
    MY_S3_ACCESS_KEY = "${s3_access_key}"
    MY_S3_SECRET_KEY = "${s3_secret_key}"

    [observe]                      # how the kit tells its commits and its position (optional)
    commit_key = "my.offsets"      # a summary key each of its commits carries
    position = "summary"           # or "group" with consumer_group = "${loader_id}", or
                                   # "checkpoint" with checkpoint = "${state_dir}/checkpoint"
    position_key = "my.offsets"    # JSON {"topic": {"partition": next offset}}
    commit_interval_s = 2.0
    partition_discovery_s = 0      # how late it sees partitions added to its topic
    halt_pattern = 'topic (?P<topic>\S+) partition (?P<partition>\d+) offset (?P<offset>\d+)'

    [observe.dead_letter_headers]  # the headers its dead letters carry (optional)
    topic = "my.source.topic"
    partition = "my.source.partition"
    offset = "my.source.offset"
    reason = "my.reason"

What ``[observe]`` leaves out is not known of the loader: without a position, a row missing at
the end of a run is pending, never shown lost; without dead-letter headers, the checks of dead
letters do not apply (``harness.observer``).

Placeholders (``${name}``) are :data:`PLACEHOLDERS`; a name not among them is an error when the
file is read. The S3 credentials (:data:`SECRETS`) may appear only in ``[env]``: never on the
command line (``ps`` shows it) nor in the configuration file. Each start runs the command in
its own process group (kill -9 and SIGSTOP reach all of it), in the loader's state folder, its
output in ``command.log`` there.
"""

from __future__ import annotations

import contextlib
import functools
import re
import string
import sys
import threading
import time
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from icefloe.harness.loaders.base import (
    Capability,
    ExitWatch,
    Health,
    LoaderTarget,
    OneProcessLoader,
)
from icefloe.harness.observer import HALT_GROUPS, Observer
from icefloe.harness.stack import keys
from icefloe.harness.stack.process import ManagedProcess
from icefloe.publisher.malformations import POLICY

__all__ = [
    "PLACEHOLDERS",
    "SECRETS",
    "CommandKind",
    "CommandLoader",
    "CommandSpec",
    "ObserveSpec",
    "SpecError",
    "checkpoint_dir",
    "consumer_group",
    "load_spec",
]

PREFIX = "command:"
"""``--loader command:FILE`` names a command loader by its description file."""

PLACEHOLDERS = {
    "bootstrap_servers": "the Kafka bootstrap servers (host:port,...)",
    "topic": "the source topic (the first, when there are several)",
    "topics": "the source topics, comma-separated",
    "table": "the table as catalog.schema.table",
    "namespace": "the table's schema (namespace) in the catalog",
    "table_name": "the table's name in its namespace",
    "catalog_type": "the kind of catalog the stack runs: rest, or glue (declare the glue "
    "capability to run on it)",
    "catalog_uri": "the catalog's address: the Iceberg REST catalog's URI, or the "
    "Glue-compatible endpoint on a Glue stack",
    "warehouse": "the catalog's warehouse location",
    "s3_endpoint": "the object store's endpoint",
    "s3_region": "the object store's region",
    "dead_letter_topic": "the run's dead-letter topic (empty when the run has none)",
    "loader_id": "the loader's id (kept across restarts; unique per table)",
    "state_dir": "the loader's own folder (keep progress here: it survives a restart)",
    "config_file": "the rendered configuration file",
    "python": "the Python interpreter running the harness",
    "spec_dir": "the folder of this description file (to name a program kept beside it)",
    "spark_jars": "the jars the kit provisions for Spark (Iceberg, AWS bundle, Kafka source), "
    "comma-separated",
    "java_home": "a Java home the kit provisions that Spark runs on",
    "flink_python": "PyFlink's Python, in a virtualenv of its own the kit provisions on demand",
    "flink_jars": "the jars the kit provisions for a Flink job (the Iceberg Flink runtime, the "
    "AWS bundle, Flink's Kafka connector), each quoted, comma-separated (a TOML list's items)",
    "flink_hadoop_classpath": "Hadoop's client jars for the Flink JVM's own class path",
    "flink_java_home": "a Java home the kit provisions that Flink runs on",
}
"""Placeholders the command, the configuration template and ``[env]`` may use."""

SECRETS = {
    "s3_access_key": "the object store's access key",
    "s3_secret_key": "the object store's secret key",
}
"""Placeholders only ``[env]`` may use."""

DEFAULT_CAPABILITIES = frozenset({Capability.KILL, Capability.FREEZE})


class SpecError(ValueError):
    """A command loader's description is wrong (named with its file)."""


def _names(text: str) -> set[str]:
    found = set()
    for match in string.Template.pattern.finditer(text):
        name = match.group("named") or match.group("braced")
        if name:
            found.add(name)
        elif match.group("invalid") is not None:
            raise SpecError(f"a lone '$' in {text!r}: write $$ for a dollar sign")
    return found


POSITIONS = ("summary", "group", "checkpoint")
"""Where a command loader may keep its committed position (``[observe] position``)."""


@dataclass(frozen=True)
class ObserveSpec:
    """How the kit observes a command loader's commits and position (``[observe]``).

    All None (no ``[observe]`` table): every snapshot not made by the kit's maintenance counts
    as the loader's commit, and its position is unknown.

    Attributes:
        commit_key: A snapshot summary key every commit of the loader carries (None: every
            snapshot not made by the kit's maintenance).
        position: ``"summary"``: ``position_key`` of its newest commit on main; ``"group"``:
            the committed offsets of ``consumer_group``; ``"checkpoint"``: the newest
            committed batch of the Spark streaming checkpoint in ``checkpoint``; None: not
            observable.
        position_key: With ``"summary"``: the summary key holding JSON
            ``{"topic": {"partition": next offset}}``.
        consumer_group: With ``"group"``: the consumer group (placeholders allowed).
        checkpoint: With ``"checkpoint"``: the checkpoint folder (placeholders allowed).
        held_checkpoints: A folder of Flink checkpoints (``<job id>/chk-<N>/_metadata``,
            placeholders allowed) whose newest complete one holds rows its restore commits, for
            a loader whose ``commit_key`` is the checkpoint number: a missing row behind its
            position is *pending (in its checkpoint)* while that checkpoint is newer than the one
            its last commit names.
        commit_interval_s: How often it commits while it has rows (the kit's waits follow it).
        partition_discovery_s: How late it may see partitions added to its topic (the drain
            after the topic grew waits that much longer); None: at its next commit.
        drain_s: How long after a disturbance (a start, a heal, the last publish) it may take
            to load what it had in hand, and how long after its committed position passed a
            row it may still write it: the kit waits that long for missing rows before it
            calls them lost. None: 30 s (a start) and five commit intervals, or 60 s without
            ``commit_interval_s``. Declare less only for a loader whose own start is quick and
            that writes what it read within that time.
        halt_pattern: A regular expression with the named groups ``topic``, ``partition`` and
            ``offset``, matching how its log names the message it stopped at.
        restart_pattern: A regular expression matching a line its log writes when it recovers
            from a failure inside its own process instead of exiting (a Flink job's restart):
            each match counts as a failure of the loader, as an exit of its own would.
        dead_letter_headers: The headers its dead letters carry, by what they say: ``topic``,
            ``partition``, ``offset`` (the source message) and ``reason`` (None: the kit cannot
            read its dead letters, and checks of them do not apply).
        refuses: The malformations of icefloe's own policy it refuses too (of
            ``duplicate_key``: valid JSON with a name twice, ``oversized``: a row over icefloe's
            1 MiB limit): it is held to dead-lettering those; any other it may load or
            dead-letter, and the report says which it did.
    """

    commit_key: str | None = None
    position: Literal["summary", "group", "checkpoint"] | None = None
    position_key: str | None = None
    consumer_group: str | None = None
    checkpoint: str | None = None
    held_checkpoints: str | None = None
    commit_interval_s: float | None = None
    partition_discovery_s: float | None = None
    drain_s: float | None = None
    halt_pattern: str | None = None
    restart_pattern: str | None = None
    dead_letter_headers: Mapping[str, str] | None = None
    refuses: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        beyond = sorted(set(self.refuses) - set(POLICY))
        if beyond:
            raise SpecError(f"[observe] refuses: {beyond}; one of {sorted(POLICY)}")
        if self.position is not None and self.position not in POSITIONS:
            raise SpecError(f"[observe] position: {self.position!r}, expected one of {POSITIONS}")
        # A key read under one position only would be ignored under the other: say so.
        if self.position == "summary" and not self.position_key:
            raise SpecError('[observe] position_key: required with position = "summary"')
        if self.held_checkpoints and not self.commit_key:
            raise SpecError("[observe] held_checkpoints: needs commit_key (the checkpoint number)")
        if self.position != "summary" and self.position_key is not None:
            raise SpecError('[observe] position_key: read only with position = "summary"')
        if self.position == "group" and not self.consumer_group:
            raise SpecError('[observe] consumer_group: required with position = "group"')
        if self.position != "group" and self.consumer_group is not None:
            raise SpecError('[observe] consumer_group: read only with position = "group"')
        if self.position == "checkpoint" and not self.checkpoint:
            raise SpecError('[observe] checkpoint: required with position = "checkpoint"')
        if self.position != "checkpoint" and self.checkpoint is not None:
            raise SpecError('[observe] checkpoint: read only with position = "checkpoint"')
        for key in ("consumer_group", "checkpoint"):
            used = _names(getattr(self, key) or "")
            if used - set(PLACEHOLDERS):
                raise SpecError(
                    f"[observe] {key}: unknown placeholder(s) {sorted(used - set(PLACEHOLDERS))}"
                )
        if self.commit_key is not None and not self.commit_key:
            raise SpecError("[observe] commit_key: an empty key (leave it out instead)")
        if self.commit_interval_s is not None and not self.commit_interval_s > 0:
            raise SpecError(
                f"[observe] commit_interval_s: {self.commit_interval_s}, expected seconds > 0"
            )
        if self.drain_s is not None and not self.drain_s > 0:
            raise SpecError(f"[observe] drain_s: {self.drain_s}, expected seconds > 0")
        if self.partition_discovery_s is not None and not self.partition_discovery_s >= 0:
            raise SpecError(
                f"[observe] partition_discovery_s: {self.partition_discovery_s}, expected "
                "seconds >= 0"
            )
        if self.halt_pattern is not None:
            try:
                compiled = re.compile(self.halt_pattern)
            except re.error as exc:
                raise SpecError(f"[observe] halt_pattern: does not compile: {exc}") from exc
            missing = [g for g in HALT_GROUPS if g not in compiled.groupindex]
            if missing:
                raise SpecError(
                    f"[observe] halt_pattern: no named group(s) {missing} "
                    "(write (?P<topic>...), (?P<partition>...), (?P<offset>...))"
                )
        if self.restart_pattern is not None:
            try:
                re.compile(self.restart_pattern)
            except re.error as exc:
                raise SpecError(f"[observe] restart_pattern: does not compile: {exc}") from exc


OBSERVE_KEYS = (
    "commit_key", "position", "position_key", "consumer_group", "checkpoint", "held_checkpoints",
    "commit_interval_s", "partition_discovery_s", "drain_s", "halt_pattern", "restart_pattern",
    "dead_letter_headers", "refuses",
)  # fmt: skip
LETTER_HEADERS = ("topic", "partition", "offset", "reason")
"""What ``[observe.dead_letter_headers]`` names: the source message's coordinates, and why."""
"""The keys of ``[observe]``."""


def _observe(table: object) -> ObserveSpec:
    if not isinstance(table, dict):
        raise SpecError("[observe]: expected a table")
    unknown = sorted(set(table) - set(OBSERVE_KEYS))
    if unknown:
        raise SpecError(f"[observe]: unknown key(s) {unknown}; known: {list(OBSERVE_KEYS)}")
    texts = {}
    for key in (
        "commit_key", "position", "position_key", "consumer_group", "checkpoint", "halt_pattern",
        "restart_pattern", "held_checkpoints",
    ):  # fmt: skip
        value = table.get(key)
        if value is not None and not isinstance(value, str):
            raise SpecError(f"[observe] {key}: {value!r}, expected a string")
        texts[key] = value
    seconds = {}
    for key in ("commit_interval_s", "partition_discovery_s", "drain_s"):
        value = table.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise SpecError(f"[observe] {key}: {value!r}, expected seconds")
        seconds[key] = value
    interval, discovery = seconds["commit_interval_s"], seconds["partition_discovery_s"]
    headers = table.get("dead_letter_headers")
    if headers is not None:
        if not isinstance(headers, dict) or not all(
            isinstance(v, str) and v for v in headers.values()
        ):
            raise SpecError("[observe] dead_letter_headers: a table of header names")
        missing = sorted(set(LETTER_HEADERS[:3]) - set(headers))
        unknown = sorted(set(headers) - set(LETTER_HEADERS))
        if missing or unknown:
            raise SpecError(
                f"[observe] dead_letter_headers: name {list(LETTER_HEADERS)} "
                f"(missing {missing}, unknown {unknown})"
            )
    refuses = table.get("refuses", [])
    if not isinstance(refuses, list) or not all(isinstance(r, str) for r in refuses):
        raise SpecError("[observe] refuses: a list of malformation names")
    return ObserveSpec(
        refuses=tuple(refuses),
        dead_letter_headers=headers,
        commit_key=texts["commit_key"],
        position=cast(Literal["summary", "group", "checkpoint"] | None, texts["position"]),
        position_key=texts["position_key"],
        consumer_group=texts["consumer_group"],
        checkpoint=texts["checkpoint"],
        held_checkpoints=texts["held_checkpoints"],
        commit_interval_s=None if interval is None else float(interval),
        partition_discovery_s=None if discovery is None else float(discovery),
        drain_s=None if seconds["drain_s"] is None else float(seconds["drain_s"]),
        halt_pattern=texts["halt_pattern"],
        restart_pattern=texts["restart_pattern"],
    )


@dataclass(frozen=True)
class CommandSpec:
    """A command loader's description (see the module's docstring for the file).

    Attributes:
        name: What reports call it.
        command: The command line, with placeholders.
        config_name: The configuration file's name in the loader's folder.
        config_template: Its text, with placeholders (empty: no file).
        env: Further environment variables, with placeholders (credentials here only).
        capabilities: What it can do (``harness.loaders.base.Capability`` values).
        ready_log: A regular expression its log matches once it has started (None: started
            as soon as it runs).
        ready_timeout_s: How long a start may take.
        progress: Where it keeps its progress, for reports (placeholders allowed).
        settle_s: How long a run waits after the last expected row is visible, for a late
            commit to show (about two of its commit intervals).
        stop_timeout_s: How long it may take to stop on SIGTERM before it is killed.
        observe: How the kit observes its commits and position (``[observe]``).
        path: The file it was read from.
    """

    name: str
    command: tuple[str, ...]
    config_name: str = "loader.conf"
    config_template: str = ""
    env: Mapping[str, str] = field(default_factory=dict)
    capabilities: frozenset[Capability] = DEFAULT_CAPABILITIES
    ready_log: str | None = None
    ready_timeout_s: float = 180.0
    progress: str = "(not described)"
    settle_s: float = 10.0
    stop_timeout_s: float = 60.0
    observe: ObserveSpec = ObserveSpec()
    path: Path | None = None

    def __post_init__(self) -> None:
        if not self.command:
            raise SpecError("command: give the command line as a list of strings")
        known = set(PLACEHOLDERS)
        for where, text in (
            *(("command", part) for part in self.command),
            ("config", self.config_template),
            ("progress", self.progress),
        ):
            used = _names(text)
            if used & set(SECRETS):
                raise SpecError(
                    f"{where}: {sorted(used & set(SECRETS))} may appear only in [env] "
                    "(credentials never go on a command line or into a file)"
                )
            if used - known:
                raise SpecError(f"{where}: unknown placeholder(s) {sorted(used - known)}")
        for var, text in self.env.items():
            unknown = _names(text) - known - set(SECRETS)
            if unknown:
                raise SpecError(f"env {var}: unknown placeholder(s) {sorted(unknown)}")
        if self.ready_log is not None:
            re.compile(self.ready_log)


def load_spec(path: Path) -> CommandSpec:
    """Read a command loader's description.

    Args:
        path: Its TOML file.

    Returns:
        The description.

    Raises:
        SpecError: an unknown key, a missing command, an unknown placeholder, a credential
            outside ``[env]``, an unknown capability, a wrong ``[observe]`` table.
        OSError: the file (or its configuration template file) cannot be read.
    """
    doc = tomllib.loads(path.read_text())
    known = {
        "name", "command", "config", "env", "capabilities", "ready_log", "ready_timeout_s",
        "progress", "settle_s", "stop_timeout_s", "observe",
    }  # fmt: skip
    unknown = sorted(set(doc) - known)
    if unknown:
        raise SpecError(f"{path}: unknown key(s) {unknown}; known: {sorted(known)}")
    config = doc.get("config", {})
    template = str(config.get("template", ""))
    if "file" in config:
        template = (path.parent / str(config["file"])).read_text()
    try:
        capabilities = frozenset(Capability(c) for c in doc.get("capabilities", ["kill", "freeze"]))
    except ValueError as exc:
        raise SpecError(f"{path}: {exc}; known: {[c.value for c in Capability]}") from exc
    try:
        return CommandSpec(
            name=str(doc.get("name", path.stem)),
            command=tuple(str(part) for part in doc.get("command", ())),
            config_name=str(config.get("name", "loader.conf")),
            config_template=template,
            env={str(k): str(v) for k, v in doc.get("env", {}).items()},
            capabilities=capabilities,
            ready_log=doc.get("ready_log"),
            ready_timeout_s=float(doc.get("ready_timeout_s", 180.0)),
            progress=str(doc.get("progress", "(not described)")),
            settle_s=float(doc.get("settle_s", 10.0)),
            stop_timeout_s=float(doc.get("stop_timeout_s", 60.0)),
            observe=_observe(doc.get("observe", {})),
            path=path,
        )
    except SpecError as exc:
        raise SpecError(f"{path}: {exc}") from exc


def values(
    target: LoaderTarget, stack: Any, config_file: Path, spec_dir: Path | None = None
) -> dict[str, str]:
    """The placeholders' values for ``target`` on ``stack`` (no credential among them).

    ``spec_dir`` is the description's folder (None, for a description not read from a file:
    the current directory). Without a stack (None) its endpoints are empty.
    """
    catalog, namespace, table = target.table.split(".", 2)
    del catalog
    endpoints = target.endpoints

    def of_stack(name: str) -> str:
        return str(getattr(stack, name)) if stack is not None else ""

    served = getattr(stack, "catalog", None)  # the stack's catalog service (None: no stack)
    address_key = f"catalog.{getattr(served, 'endpoint_key', 'uri')}"

    return _Values(
        stack,
        {
            "bootstrap_servers": endpoints.get("kafka.bootstrap", of_stack("bootstrap_servers")),
            "topic": target.topics[0],
            "topics": ",".join(target.topics),
            "table": target.table,
            "namespace": namespace,
            "table_name": table,
            "catalog_type": str(getattr(served, "kind", "rest")),
            "catalog_uri": endpoints.get(address_key, of_stack("catalog_uri")),
            "warehouse": f"s3://{keys.WAREHOUSE_BUCKET}/",
            "s3_endpoint": endpoints.get("catalog.s3_endpoint", of_stack("s3_endpoint")),
            "s3_region": keys.S3_REGION,
            "dead_letter_topic": target.dead_letter_topic or "",
            "loader_id": target.loader_id,
            "state_dir": str(target.state_dir.resolve()),
            "config_file": str(config_file),
            "python": sys.executable,
            "spec_dir": str((spec_dir or Path()).resolve()),
        },
    )


def _spark_runtime(stack: Any) -> dict[str, str]:
    """``spark_jars`` and ``java_home``: the kit's Spark runtime (provisioned by `icefloe
    provision`)."""
    return dict(_spark_runtime_in(Path(stack.config.cache_dir)))


@functools.cache
def _spark_runtime_in(cache: Path) -> tuple[tuple[str, str], ...]:
    """``_spark_runtime`` of one cache, looked up once a process (a loader's start renders its
    command, configuration and environment)."""
    from icefloe.harness.provision import jdk
    from icefloe.harness.provision.layout import Layout

    jars = sorted(str(p) for p in Layout(cache).spark_jars.glob("*.jar"))
    if not jars:
        raise FileNotFoundError(
            f"no Spark jars in {Layout(cache).spark_jars}: run `icefloe provision`"
        )
    return (("spark_jars", ",".join(jars)), ("java_home", str(jdk.spark_java_home(cache))))


def _flink_runtime(stack: Any) -> dict[str, str]:
    """The ``flink_*`` placeholders: the Flink runtime, provisioned here on first use."""
    return dict(_flink_runtime_in(Path(stack.config.cache_dir)))


@functools.cache
def _flink_runtime_in(cache: Path) -> tuple[tuple[str, str], ...]:
    """``_flink_runtime`` of one cache, provisioned or looked up once a process."""
    from icefloe.harness.provision import flink
    from icefloe.harness.provision.layout import Layout

    layout = Layout(cache)
    runtime = flink.provision(layout)
    return (
        ("flink_python", str(runtime.python)),
        ("flink_jars", ", ".join(f'"{p}"' for p in runtime.pipeline_jars())),
        ("flink_hadoop_classpath", runtime.hadoop_classpath()),
        ("flink_java_home", str(flink.java_home(layout))),
    )


_RUNTIMES = {
    **dict.fromkeys(("spark_jars", "java_home"), _spark_runtime),
    **dict.fromkeys(
        ("flink_python", "flink_jars", "flink_hadoop_classpath", "flink_java_home"),
        _flink_runtime,
    ),
}
"""Placeholders whose values are a runtime's the kit provisions: looked up (or provisioned)
only when a description uses one, so a loader without it never needs it."""


class _Values(dict[str, str]):
    """Placeholder values; a runtime's (``_RUNTIMES``) looked up only when a description uses
    them."""

    def __init__(self, stack: Any, known: Mapping[str, str]) -> None:
        super().__init__(known)
        self.stack = stack

    def __missing__(self, name: str) -> str:
        runtime = _RUNTIMES.get(name)
        if runtime is None:
            raise KeyError(name)
        if self.stack is None:
            return ""
        self.update(runtime(self.stack))
        return self[name]


def consumer_group(spec: CommandSpec, target: LoaderTarget, stack: Any = None) -> str | None:
    """The consumer group whose committed offsets are the loader's position, for ``target``.

    Args:
        spec: The loader's description.
        target: What the loader loads.
        stack: The running stack (None: its endpoints' placeholders render empty; a group is
            named by ``${loader_id}`` or the like, not by an endpoint).

    Returns:
        ``[observe] consumer_group`` with its placeholders filled in, or None when the
        description keeps its position elsewhere (``position`` is not ``"group"``).
    """
    return _rendered(spec, spec.observe.consumer_group, target, stack)


def checkpoint_dir(spec: CommandSpec, target: LoaderTarget) -> str | None:
    """``[observe] checkpoint`` with its placeholders filled in for ``target`` (None: the
    description keeps its position elsewhere)."""
    return _rendered(spec, spec.observe.checkpoint, target, None)


def _rendered(spec: CommandSpec, text: str | None, target: LoaderTarget, stack: Any) -> str | None:
    if text is None:
        return None
    config_file = target.state_dir.resolve() / spec.config_name
    return string.Template(text).substitute(values(target, stack, config_file, _spec_dir(spec)))


def _spec_dir(spec: CommandSpec) -> Path | None:
    return None if spec.path is None else spec.path.parent


class CommandLoader(OneProcessLoader):
    """One command loader for one target: a ``harness.loaders.base.Loader``.

    Args:
        spec: Its description.
        target: What it loads.
        stack: The running stack (endpoints and credentials).
        history: Where starts, exits, kills and stops are recorded.
    """

    def __init__(self, spec: CommandSpec, target: LoaderTarget, stack: Any, history: Any) -> None:
        self.spec = spec
        self.target = target
        self.stack = stack
        self.history = history
        # Absolute: the command runs in its folder, and a relative path would start from there.
        self.state_dir = target.state_dir.resolve()
        self.process = ManagedProcess("command", self.state_dir)
        self.config_file = self.state_dir / spec.config_name
        self.starts = 0
        self.hooks: dict[str, str] = {}
        self._began = 0.0
        self._mark = 0
        self._watch = ExitWatch(
            self.process, history, lambda: self.start(wait=False), self.log_tail
        )
        self._watch.restart_on_exit = target.restart_on_exit

    @property
    def loader_id(self) -> str:
        return self.target.loader_id

    @property
    def dead_letter_topic(self) -> str | None:
        return self.target.dead_letter_topic

    def _render(self, text: str, extra: Mapping[str, str] | None = None) -> str:
        mapping = values(self.target, self.stack, self.config_file, _spec_dir(self.spec))
        return string.Template(text).substitute(mapping, **(extra or {}))

    def argv(self) -> list[str]:
        """The command line (no credential in it)."""
        return [self._render(part) for part in self.spec.command]

    def environment(self) -> dict[str, str]:
        """The caller's environment, the stack catalog's client environment (on Glue, the keys
        its requests are signed with), plus ``[env]`` with the credentials filled in."""
        import os

        secrets = {
            "s3_access_key": self.stack.credentials.access_key,
            "s3_secret_key": self.stack.credentials.secret_key.reveal(),
        }
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        env.update(self.stack.catalog.client_environment())  # AWS keys to sign to Glue, if on it
        env.update({k: self._render(v, secrets) for k, v in self.spec.env.items()})
        return env

    def start(
        self,
        *,
        wait: bool = True,
        track: bool = False,
        hooks: Mapping[str, str] | None = None,
        expect_codes: tuple[int, ...] = (),
    ) -> float:
        """Write its configuration, start it, and (by default) wait until it has started.

        Returns:
            Seconds until started (0 when not waiting).

        Raises:
            ValueError: fault hooks were given (a command loader has no fault points).
            RuntimeError: it exited, or did not start within ``ready_timeout_s``.
        """
        if hooks:
            raise ValueError(f"{self.spec.name} has no fault points: {sorted(hooks)}")
        self.state_dir.mkdir(parents=True, exist_ok=True)
        if self.spec.config_template:
            self.config_file.write_text(self._render(self.spec.config_template))
        self._mark = self.log_size()
        self._began = time.monotonic()
        self.history.record(
            "loader", "invoke", "start", loader=self.spec.name, loader_id=self.loader_id
        )
        pid = self.process.start(self.argv(), self.environment(), self.state_dir)
        self.starts += 1
        self._watch.started()
        if wait:
            return self._await_started(pid)
        if track:
            threading.Thread(target=self._track, args=(pid,), daemon=True).start()
        return 0.0

    def _track(self, pid: int) -> None:
        with contextlib.suppress(RuntimeError):  # recorded as a failed start
            self._await_started(pid)

    def _await_started(self, pid: int) -> float:
        deadline = self._began + self.spec.ready_timeout_s
        while time.monotonic() < deadline:
            if self.process.started_pid != pid:
                raise RuntimeError(f"{self.spec.name} was started again before it had started")
            if not self.process.is_running():
                if self._watch.expected:
                    self.history.record("loader", "info", "start_interrupted", pid=pid)
                    raise RuntimeError(f"{self.spec.name} was stopped while starting")
                self.history.record("loader", "fail", "start", pid=pid, log=self.log_tail(20))
                raise RuntimeError(f"{self.spec.name} exited while starting:\n{self.log_tail(20)}")
            if self.has_started():
                took = time.monotonic() - self._began
                self.history.record("loader", "ok", "start", pid=pid, seconds=round(took, 2))
                return took
            time.sleep(0.25)
        self.history.record("loader", "fail", "start", pid=pid, log=self.log_tail(20))
        raise RuntimeError(
            f"{self.spec.name} did not start in {self.spec.ready_timeout_s:.0f} s; its log "
            f"ends:\n{self.log_tail(20)}"
        )

    def has_started(self) -> bool:
        """Whether the last start's log matches ``ready_log`` (or it simply runs)."""
        if self.spec.ready_log is None:
            return self.process.is_running()
        return re.search(self.spec.ready_log, self.log_since(self._mark)) is not None

    def stop(self, timeout: float | None = None) -> None:
        """SIGTERM its process group; SIGKILL after ``stop_timeout_s``."""
        pid = self.process.pid
        self._watch.expect()
        self.process.stop(self.spec.stop_timeout_s if timeout is None else timeout)
        self.history.record("loader", "info", "stopped", pid=pid, loader=self.spec.name)

    def kill(self) -> int | None:
        pid = self.process.pid
        self._watch.expect()
        self.process.kill()
        self.history.record("loader", "info", "killed", pid=pid, loader=self.spec.name)
        return pid

    def freeze(self) -> int | None:
        pid = self.process.pid
        self.process.pause()
        self.history.record("loader", "info", "frozen", pid=pid, loader=self.spec.name)
        return pid

    def thaw(self) -> None:
        pid = self.process.pid
        self.process.resume()
        self.history.record("loader", "info", "thawed", pid=pid, loader=self.spec.name)

    def frozen(self) -> bool:
        return self.process.is_paused()

    def is_running(self) -> bool:
        return self.process.is_running()

    def wait_exit(self, timeout_s: float) -> bool:
        return self.process.wait_exit(timeout_s)

    def health(self) -> Health:
        running = self.is_running()
        frozen = running and self.frozen()
        return Health(
            running, running and not frozen and self.has_started(), "frozen" if frozen else ""
        )

    def configuration(self) -> dict[str, Any]:
        """Its command line and its rendered configuration file (no credential in either)."""
        text = self.config_file.read_text() if self.config_file.exists() else ""
        return {"command": self.argv(), "config_file": str(self.config_file), "config": text}

    def progress(self) -> str:
        return self._render(self.spec.progress)

    def consumer_group(self) -> str | None:
        """The consumer group holding its position (``[observe]``), or None."""
        return consumer_group(self.spec, self.target, self.stack)

    def uptime_s(self) -> float:
        return time.monotonic() - self._began

    def _log_file(self) -> Path:
        return self.process.log_file

    def log_tail(self, lines: int = 40) -> str:
        return self.process.log_tail(lines)

    def close(self) -> None:
        self._watch.close()
        if self.process.is_running():
            self.stop()


class CommandKind:
    """Makes command loaders from a description (``--loader command:FILE``).

    Args:
        spec: The description.
        name: What ``--loader`` calls it, for a description the kit ships (default:
            ``command:<its file>``).
        runs_on: What a shipped description runs on, with versions (``Spark <version>, Iceberg
            <version>``), for reports; empty for a user's.
    """

    def __init__(self, spec: CommandSpec, name: str | None = None, runs_on: str = "") -> None:
        self.spec = spec
        self.name = name or (f"{PREFIX}{spec.path}" if spec.path is not None else spec.name)
        self.capabilities = spec.capabilities
        self.runs_on = runs_on

    def make(self, target: LoaderTarget, stack: Any, history: Any) -> CommandLoader:
        return CommandLoader(self.spec, target, stack, history)

    def retarget(self, loader: Any, target: LoaderTarget) -> None:
        loader.target = target
        loader.restart_on_exit = target.restart_on_exit

    def settle_s(self, target: LoaderTarget) -> float:
        return self.spec.settle_s

    def observer(self, target: LoaderTarget) -> Observer:
        """What ``[observe]`` declares, and nothing more. Its drain is the one it declares;
        else, with a commit interval declared, a start and a few commits (as icefloe's own:
        30 s + 5 intervals); without one, the kit's default."""
        observe = self.spec.observe
        interval = observe.commit_interval_s
        drain_s = observe.drain_s
        if drain_s is None:
            drain_s = 30.0 + 5 * interval if interval is not None else Observer.drain_s
        return Observer(
            kind=self.name,
            commit_key=observe.commit_key,
            position=observe.position,
            position_key=observe.position_key,
            consumer_group=consumer_group(self.spec, target),
            checkpoint_dir=checkpoint_dir(self.spec, target),
            held_checkpoints=_rendered(self.spec, observe.held_checkpoints, target, None),
            cadence_s=interval,
            drain_s=drain_s,
            discovery_s=observe.partition_discovery_s or 0.0,
            halt_pattern=observe.halt_pattern,
            restart_pattern=observe.restart_pattern,
            refuses=observe.refuses,
            letter_headers=(
                {k: (v,) for k, v in observe.dead_letter_headers.items()}
                if observe.dead_letter_headers is not None
                else None
            ),
        )

    def describe(self) -> dict[str, Any]:
        return {
            "loader": f"{self.spec.name} (a command line)",
            "command": " ".join(self.spec.command),
            "capabilities": sorted(c.value for c in self.spec.capabilities),
            "progress": self.spec.progress,
            **({"runs on": self.runs_on} if self.runs_on else {}),
        }
