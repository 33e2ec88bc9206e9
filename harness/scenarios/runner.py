"""Runner: interprets a scenario on the running stack, records its history, then checks it.

One :class:`ScenarioRun` gives the scenario its own topic (and dead-letter topic), schema and
table, plays the timeline (publishes in background threads, loader starts and kills, faults,
SQL), reads the table and the dead-letter topic back once at the end, and hands history,
ledger and readings to the checkers. The run's seed drives every random choice (publish seeds
per phase, fault timing), so ``--seed`` replays a run's decisions.

With a break (``--break NAME``) the run applies the break's loader overrides, runs the
break-only steps and mutation, and succeeds when the expected check turns invalid with the
expected anomaly: the check is shown to catch the broken property.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import random
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyiceberg.types import TimestamptzType

from harness.loader_process import LoaderProcess, LoaderSettings
from harness.scenarios.checkers import (
    INVALID,
    CheckResult,
    DeadLetter,
    Observed,
    run_check,
    summarize,
)
from harness.scenarios.faults import CommitWatcher, Fault, make_fault
from harness.scenarios.history import Event, History, select
from harness.scenarios.model import Scenario, Step
from harness.stack.keys import TRINO_CATALOG as LAKE
from harness.stack.tables import EVENT_ID_COLUMN, create_table_sql, quote
from loader import keys
from loader.deadletter import DEAD_LETTER_MAX_BYTES
from loader.faultpoints import PAUSE_POINTS
from publisher.ledger import Ledger, LedgerEntry
from publisher.rows import EVENT_ID_FIELD, reference_schema

DEFAULT_ANCHOR = "2025-01-01T00:00:00+00:00"
# What a `values` check compares unless told otherwise: the reference table's scalar columns
# (its timestamp, rendered in many zones, aside).
_REFERENCE_VALUE_COLUMNS = tuple(
    f.name
    for f in reference_schema().fields
    if f.field_type.is_primitive
    and not isinstance(f.field_type, TimestamptzType)
    and f.name != EVENT_ID_FIELD
)


@dataclass
class RunOptions:
    """How to run a scenario.

    Attributes:
        seed: The run's seed; ``None`` draws one (it is printed and recorded).
        break_name: Run the named break instead of the plain scenario.
        reports_dir: Where the run's folder (history, ledgers, loader log) goes.
        keep: Keep topics and the table afterwards (for inspection).
        listener: Called with every history event (live progress).
    """

    seed: int | None = None
    break_name: str | None = None
    reports_dir: Path = Path("reports")
    keep: bool = False
    listener: Callable[[Event], None] | None = None


@dataclass
class RunResult:
    """What a run found.

    Attributes:
        scenario: The scenario run.
        seed: Its seed (replay with ``--seed``).
        break_name: The break, if one was run.
        checks: Each check's verdict.
        verdict: ``valid``, ``invalid`` or ``unknown`` over all checks.
        elapsed_s: Wall-clock seconds, setup to teardown.
        step_times: (step label, seconds) in timeline order.
        run_dir: The run's folder (history.jsonl, ledgers, loader log).
        names: Topic, dead-letter topic and table used.
        error: Why the run itself failed (a step raised), if it did.
        history: The recorded history.
    """

    scenario: Scenario
    seed: int
    break_name: str | None
    checks: list[CheckResult]
    verdict: str
    elapsed_s: float
    step_times: list[tuple[str, float]]
    run_dir: Path
    names: dict[str, str]
    error: str | None = None
    history: History | None = None

    @property
    def passed(self) -> bool:
        """Plain run: every check valid. Break run: the expected anomaly was reported."""
        if self.error is not None:
            return False
        if self.break_name is None:
            return self.verdict == "valid"
        return self.break_demonstrated

    @property
    def break_demonstrated(self) -> bool:
        if self.break_name is None:
            return False
        brk = self.scenario.breaks[self.break_name]
        return any(
            r.check == brk.expect_check
            and r.verdict == INVALID
            and brk.expect_anomaly in r.anomalies
            for r in self.checks
        )


@dataclass
class _Phase:
    name: str
    generation: Any
    ledger_path: Path
    thread: threading.Thread | None = None
    error: str | None = None
    done: bool = False


def _anchor(text: str) -> dt.datetime:
    if text == "now":
        return dt.datetime.now(dt.UTC)
    moment = dt.datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _micros(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1_000_000)


class ScenarioRun:
    """One run of one scenario on one stack (see the module docstring).

    Args:
        scenario: What to run.
        stack: A running :class:`harness.stack.lakehouse.Stack`.
        options: Seed, break, report folder.
    """

    def __init__(self, scenario: Scenario, stack: Any, options: RunOptions | None = None) -> None:
        self.scenario = scenario
        self.stack = stack
        self.options = options or RunOptions()
        self.seed = (
            self.options.seed
            if self.options.seed is not None
            else random.SystemRandom().randrange(2**31)
        )
        self.rng = random.Random(f"icefloe-scenario:{scenario.name}:{self.seed}")
        self.brk = scenario.breaks[self.options.break_name] if self.options.break_name else None
        suffix = uuid.uuid4().hex[:8]
        short = scenario.name.split("_", 1)[-1][:24]
        self.schema = f"scen_{suffix}"
        self.table = f"{LAKE}.{self.schema}.{short}"
        self.topic = f"scen-{short}-{suffix}"
        self.dead_letter_topic = f"{self.topic}.dlq" if scenario.dead_letter else None
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        label = scenario.name + (f"-break-{self.brk.name}" if self.brk else "")
        self.run_dir = self.options.reports_dir / "runs" / f"{stamp}-{label}-{suffix}"
        self.history = History(self.run_dir / "history.jsonl", listener=self.options.listener)
        self.phases: dict[str, _Phase] = {}
        self.reads: dict[str, Any] = {}
        self.step_times: list[tuple[str, float]] = []
        self._probe: threading.Thread | None = None
        self._probing = False
        self._watcher: CommitWatcher | None = None
        loader = dict(scenario.loader)
        if self.brk is not None:
            loader.update(self.brk.loader)
        if loader.get("pause_at") == "random":
            # The loader's pause hook at a point of a batch drawn from the run's seed.
            loader["pause_at"] = self.rng.choice(PAUSE_POINTS)
        self.loader_options = loader
        self.loader = LoaderProcess(
            self._loader_settings(loader),
            stack,
            self.run_dir / "loader",
            self.history,
            restart_on_exit=bool(loader.get("restart_on_exit", False)),
        )
        self.successors = 0
        self.retired: list[LoaderProcess] = []

    # -- FaultTarget ------------------------------------------------------------

    def table_snapshot_ids(self) -> set[int] | None:
        """Snapshots of the table's main lineage, or None when the catalog cannot be asked.

        A snapshot the loader staged but never published (its write-audit-publish commit) is
        in the table's metadata but not in main: it did not land.
        """
        try:
            table = self.stack.pyiceberg_catalog().load_table(self.table.split(".", 1)[1])
        except Exception:
            return None
        by_id = {s.snapshot_id: s for s in table.snapshots()}
        lineage: set[int] = set()
        current = table.current_snapshot()
        while current is not None and current.snapshot_id not in lineage:
            lineage.add(current.snapshot_id)
            parent = current.parent_snapshot_id
            current = by_id.get(parent) if parent is not None else None
        return lineage

    def lease_expires_ms(self) -> int | None:
        """When the table's loader lease runs out (epoch ms), or None if there is none."""
        from loader.offsets import lease_from_properties

        try:
            table = self.stack.pyiceberg_catalog().load_table(self.table.split(".", 1)[1])
        except Exception:
            return None
        lease = lease_from_properties(table.properties)
        return lease.expires_ms if lease is not None else None

    def start_successor(self) -> tuple[Any, float]:
        """Start a second loader (another loader id) on the same table and topic.

        The new loader becomes ``self.loader``; the one it replaces is returned, with the
        seconds the new one took to start.
        """
        previous = self.loader
        self.successors += 1
        settings = dataclasses.replace(
            self._loader_settings(self.loader_options),
            loader_id=f"scen-{self.topic}-{self.successors}",
            pause_at=None,
            kill_after_commit=None,
        )
        self.loader = LoaderProcess(
            settings,
            self.stack,
            self.run_dir / f"loader-{self.successors}",
            self.history,
            restart_on_exit=previous.restart_on_exit,
        )
        self.retired.append(previous)
        return previous, self.loader.start()

    def commit_watcher(self) -> CommitWatcher | None:
        """A watcher on the table's metadata folder in MinIO's data directory."""
        if self._watcher is None:
            try:
                table = self.stack.pyiceberg_catalog().load_table(self.table.split(".", 1)[1])
            except Exception:
                return None
            location = table.location().removeprefix("s3://")
            self._watcher = CommitWatcher(
                self.stack.minio.state_dir / "data" / location / "metadata"
            )
        return self._watcher

    # -- settings -------------------------------------------------------------

    def _loader_settings(self, options: Mapping[str, Any]) -> LoaderSettings:
        dlq = self.dead_letter_topic if options.get("dead_letter", True) else None
        return LoaderSettings(
            loader_id=f"scen-{self.topic}",
            table=self.table,
            topics=(self.topic,),
            dead_letter_topic=dlq,
            trigger_interval_s=float(
                options.get("trigger_interval_s", LoaderSettings.trigger_interval_s)
            ),
            exactly_once=bool(options.get("exactly_once", LoaderSettings.exactly_once)),
            max_offsets_per_trigger=options.get("max_offsets_per_trigger"),
            transform=dict(options.get("transform", {})),
            extra={k: options[k] for k in ("max_record_bytes",) if k in options},
            kill_after_commit=options.get("kill_after_commit"),
            self_kills=int(options.get("self_kills", LoaderSettings.self_kills)),
            lease_ttl_s=float(options.get("lease_ttl_s", LoaderSettings.lease_ttl_s)),
            fencing=bool(options.get("fencing", LoaderSettings.fencing)),
            pause_at=options.get("pause_at"),
            pause_after_commits=int(
                options.get("pause_after_commits", LoaderSettings.pause_after_commits)
            ),
        )

    # -- the run --------------------------------------------------------------

    def run(self) -> RunResult:
        """Set up, play the timeline, read back, check, tear down.

        Returns:
            The result; a step that raises is reported in ``error`` (the checks still run
            on what was recorded).
        """
        began = time.monotonic()
        error: str | None = None
        self.history.record(
            "info",
            "info",
            "run",
            scenario=self.scenario.name,
            profile=self.scenario.profile,
            seed=self.seed,
            break_name=self.brk.name if self.brk else None,
            topic=self.topic,
            table=self.table,
        )
        checks: list[CheckResult] = []
        try:
            self._setup()
            for step in self.scenario.steps:
                if step.runs_in(self.brk.name if self.brk else None):
                    self._step(step)
            observed = self._collect()
            if self.brk is not None and self.brk.mutate:
                observed = mutate(observed, self.brk.mutate)
                self.history.record("info", "info", "mutate", mutation=self.brk.mutate)
            self._save_observed(observed)
            ledger = self.ledger_entries()
            for check in self.scenario.checks:
                result = run_check(check.check, self.history, ledger, observed, check.params)
                checks.append(result)
                self.history.record(
                    "info", "info", "check", check=check.check, verdict=result.verdict
                )
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            self.history.record("info", "fail", "run", error=error)
        finally:
            self._teardown()
        return RunResult(
            scenario=self.scenario,
            seed=self.seed,
            break_name=self.brk.name if self.brk else None,
            checks=checks,
            verdict=summarize(checks) if checks else "unknown",
            elapsed_s=time.monotonic() - began,
            step_times=self.step_times,
            run_dir=self.run_dir,
            names={
                "topic": self.topic,
                "dead_letter_topic": str(self.dead_letter_topic),
                "table": self.table,
            },
            error=error,
            history=self.history,
        )

    def _setup(self) -> None:
        from confluent_kafka.admin import NewTopic

        admin = self.stack.kafka_admin()
        topics = [NewTopic(self.topic, self.scenario.topic_partitions, 1)]
        if self.dead_letter_topic:
            # A dead letter is the rejected record plus headers: the topic must take records
            # larger than the loader's own size limit (the `oversized` malformation).
            limit = {"max.message.bytes": str(DEAD_LETTER_MAX_BYTES)}
            topics.append(NewTopic(self.dead_letter_topic, 1, 1, config=limit))
        for future in admin.create_topics(topics, operation_timeout=30).values():
            future.result(timeout=30)
        columns = (*EVENT_ID_COLUMN, *self.scenario.extra_columns)
        try:
            self._sql(f"CREATE SCHEMA {LAKE}.{self.schema}")
        except Exception as exc:
            if "ICEBERG_CATALOG_ERROR" not in str(exc):
                raise
            # The REST catalog keeps its state in SQLite; after a write collided with another
            # ("database is locked") it can refuse every later write until restarted. A run
            # that hit that has failed already; this one starts on a catalog that works.
            self._restart_catalog(str(exc))
            self._sql(f"CREATE SCHEMA IF NOT EXISTS {LAKE}.{self.schema}")
        self._sql(create_table_sql(self.table, columns))
        self.history.record("info", "info", "setup", topic=self.topic, table=self.table)

    def _restart_catalog(self, reason: str) -> None:
        self.history.record("info", "fail", "catalog_refuses_writes", error=reason[:300])
        service = self.stack.service("catalog")
        service.kill()
        service.start()
        self.history.record("info", "info", "catalog_restarted")

    def _teardown(self) -> None:
        self._probing = False
        for phase in self.phases.values():
            if phase.thread is not None:
                phase.thread.join(timeout=120)
        for loader in [*self.retired, self.loader]:
            try:
                loader.close()
            except Exception as exc:
                self.history.record("loader", "fail", "close", error=str(exc))
        if self.options.keep:
            return
        try:
            self._sql(f"DROP TABLE IF EXISTS {self.table}")
            self._sql(f"DROP SCHEMA IF EXISTS {LAKE}.{self.schema}")
            admin = self.stack.kafka_admin()
            names = [self.topic] + ([self.dead_letter_topic] if self.dead_letter_topic else [])
            for future in admin.delete_topics(names, operation_timeout=30).values():
                future.result(timeout=30)
        except Exception as exc:  # a failed outage scenario may leave a service down
            self.history.record("info", "fail", "teardown", error=str(exc))

    def _step(self, step: Step) -> None:
        handler = getattr(self, f"_do_{step.do}")
        label = step.do + (f" {step.get('phase')}" if step.get("phase") else "")
        began = time.monotonic()
        self.history.record("step", "invoke", step.do, **dict(step.params))
        handler(step)
        took = time.monotonic() - began
        self.step_times.append((label, took))
        self.history.record("step", "ok", step.do, seconds=round(took, 2))

    # -- SQL ------------------------------------------------------------------

    def _sql(self, statement: str, session: Mapping[str, str] | None = None) -> list[Any]:
        return list(self.stack.query(statement, session))

    def _sql_retrying(self, statement: str, attempts: int = 30, pause_s: float = 2.0) -> list[Any]:
        for attempt in range(attempts):
            try:
                return self._sql(statement)
            except Exception:
                if attempt == attempts - 1:
                    raise
                time.sleep(pause_s)
        raise AssertionError("unreachable")

    def _recorded_sql(self, name: str, statement: str, **data: Any) -> list[Any]:
        self.history.record("sql", "invoke", name, statement=statement)
        try:
            rows = self._sql(statement, data.pop("session", None))
        except Exception as exc:
            self.history.record("sql", "fail", name, statement=statement, error=str(exc)[:500])
            raise
        self.history.record("sql", "ok", name, statement=statement, rows=len(rows), **data)
        return rows

    def visible_ids(self) -> set[str]:
        """Event ids the table holds now (Trino)."""
        return {r[0] for r in self._sql_retrying(f"SELECT DISTINCT event_id FROM {self.table}")}

    # -- loader steps -----------------------------------------------------------

    def _do_start_loader(self, step: Step) -> None:
        self.loader.start()

    def _do_stop_loader(self, step: Step) -> None:
        self.loader.stop()

    def _do_restart_loader(self, step: Step) -> None:
        if step.get("kill", False):
            self.loader.kill()
        else:
            self.loader.stop()
        if step.get("fresh_checkpoint", False):
            shutil.rmtree(self.loader.state_dir / "checkpoint", ignore_errors=True)
            self.history.record("loader", "info", "checkpoint_deleted")
        self.loader.start()

    def _do_configure_loader(self, step: Step) -> None:
        self.loader_options.update(step.params)
        self.loader.configure(self._loader_settings(self.loader_options))
        self.history.record("loader", "info", "configured", **dict(step.params))

    def _do_await_loader_exit(self, step: Step) -> None:
        deadline = time.monotonic() + float(step.get("timeout_s", 120))
        while time.monotonic() < deadline:
            if [e for e in select(self.history, "loader", "exit") if not e.data.get("expected")]:
                break
            time.sleep(0.5)
        else:
            self.history.record("loader", "fail", "await_exit", note="still running")
        self.reads["visible_at_halt"] = sorted(self.visible_ids())

    # -- publishing ---------------------------------------------------------------

    def _generation(self, phase: str, params: Mapping[str, Any]) -> Any:
        from publisher.clock import ClockConfig
        from publisher.drift import DriftConfig, ExtraFieldSpec
        from publisher.messages import GenerationConfig, KeySpec

        p = {**self.scenario.workload, **params}
        seed = random.Random(f"{self.seed}:{phase}").randrange(2**62)
        partitions = p.get("partitions")
        return GenerationConfig(
            seed=seed,
            clock=ClockConfig(
                anchor=_anchor(str(p.get("anchor", DEFAULT_ANCHOR))),
                window_days=float(p.get("window_days", 30.0)),
            ),
            key=KeySpec.parse(str(p.get("key", "none"))),
            partitions=tuple(partitions) if partitions else None,
            malformed_fraction=float(p.get("malformed_fraction", 0.0)),
            malformed_kinds=tuple(p.get("malformed_kinds", ())),
            drift=DriftConfig(
                fraction=float(p.get("drift_fraction", 1.0)),
                camel_case=bool(p.get("camel_case", False)),
                envelope=bool(p.get("envelope", False)),
                extra_field_specs=tuple(ExtraFieldSpec.parse(s) for s in p.get("extra_fields", ())),
            ),
        )

    def _do_publish(self, step: Step) -> None:
        from publisher.producer import Publisher, PublisherConfig

        name = str(step.get("phase", f"phase{len(self.phases)}"))
        generation = self._generation(name, step.params)
        phase = _Phase(name, generation, self.run_dir / "ledgers" / f"{name}.jsonl")
        self.phases[name] = phase
        p = {**self.scenario.workload, **step.params}
        config = PublisherConfig(
            generation=generation,
            ledger_dir=self.run_dir / "ledgers",
            progress=False,
            # New partitions must be seen within seconds, not librdkafka's 5 minutes.
            producer_overrides={"topic.metadata.refresh.interval.ms": 1000},
        )
        publisher = Publisher(self.stack.bootstrap_servers, self.topic, config)
        count = p.get("count")
        rate = p.get("rate")
        duration = p.get("duration_s")

        def work() -> None:
            self.history.record(
                "publish", "invoke", "publish", phase=name, count=count, rate=rate,
                seed=generation.seed,
            )  # fmt: skip
            try:
                result = publisher.publish(
                    count, rate=rate, duration=duration, ledger_path=phase.ledger_path
                )
                self.history.record(
                    "publish", "ok", "publish", phase=name, sent=result.sent,
                    valid=result.valid, malformed=result.malformed, failed=result.failed,
                    seconds=round(result.elapsed, 2), resends=result.resends,
                )  # fmt: skip
            except Exception as exc:
                phase.error = f"{type(exc).__name__}: {exc}"
                self.history.record("publish", "fail", "publish", phase=name, error=phase.error)
            finally:
                phase.done = True

        if step.get("background", False):
            phase.thread = threading.Thread(target=work, name=f"publish-{name}", daemon=True)
            phase.thread.start()
        else:
            work()

    def _do_await_publish(self, step: Step) -> None:
        wanted = step.get("phase")
        for phase in self.phases.values():
            if phase.thread is not None and (wanted is None or phase.name == wanted):
                phase.thread.join()

    def publishing(self) -> bool:
        """Whether any background publish is still running."""
        return any(not p.done for p in self.phases.values())

    def ledger_entries(self, *, finished_only: bool = False) -> list[LedgerEntry]:
        """Every ledger entry of the run's publish phases."""
        entries: list[LedgerEntry] = []
        for phase in self.phases.values():
            if finished_only and not phase.done:
                continue
            if phase.ledger_path.exists():
                entries.extend(Ledger.read(phase.ledger_path).entries)
        return entries

    # -- waiting for the table ---------------------------------------------------

    def _do_await_loaded(self, step: Step) -> None:
        self._do_await_publish(Step("await_publish", {}))
        timeout = float(step.get("timeout_s", 180))
        trigger = self.loader.settings.trigger_interval_s
        settle = float(step.get("settle_s", 2 * trigger))
        expected = {
            e.event_id for e in self.ledger_entries() if e.delivered and e.status == "valid"
        }
        cutoff = self._retention_cutoff()
        if cutoff is not None:
            times = self._event_times()
            expected = {i for i in expected if times.get(i, 0) >= cutoff}
        deadline = time.monotonic() + timeout
        seen: set[str] = set()
        while time.monotonic() < deadline:
            try:
                seen = self.visible_ids()
            except Exception:
                seen = set()
            if expected <= seen:
                break
            time.sleep(1.0)
        missing = len(expected - seen)
        self.history.record(
            "read", "ok" if not missing else "fail", "await_loaded",
            expected=len(expected), visible=len(seen), missing=missing,
        )  # fmt: skip
        time.sleep(settle)

    def _retention_cutoff(self) -> int | None:
        deletes = [e for e in select(self.history, "sql", phase="ok") if "cutoff_micros" in e.data]
        return int(deletes[-1].data["cutoff_micros"]) if deletes else None

    # -- faults ------------------------------------------------------------------

    def _fault(self, spec: Mapping[str, Any]) -> Fault:
        return make_fault(dict(spec), self.rng)

    def _do_fault(self, step: Step) -> None:
        fault = self._fault(step.params)
        fault.inject(self)
        time.sleep(float(step.get("duration_s", 0)))
        fault.heal(self)

    def _do_nemesis(self, step: Step) -> None:
        times = int(step.get("times", 5))
        low, high = step.get("interval_s", [2.0, 6.0])
        mode = step.get("at", "now")
        for i in range(times):
            time.sleep(self.rng.uniform(float(low), float(high)))
            spec = {**step.params, "at": mode}
            if mode == "mixed":
                # A cycle of three: the moment a commit starts (inside it), anywhere, and
                # shortly after a commit started (often after it landed, before the Spark
                # checkpoint is written - the window a replay would duplicate).
                spec["at"] = ("commit", "now", "commit")[i % 3]
                spec["max_delay_s"] = (0.0, 0.0, 0.6)[i % 3]
            fault = self._fault(spec)
            fault.inject(self)
            time.sleep(float(step.get("duration_s", 0)))
            fault.heal(self)

    def _do_sleep(self, step: Step) -> None:
        time.sleep(float(step.get("seconds", 1)))

    # -- SQL steps ---------------------------------------------------------------

    def _do_sql(self, step: Step) -> None:
        statement = str(step.get("statement")).format(table=self.table)
        self._recorded_sql(str(step.get("name", "sql")), statement)

    def _do_retention_delete(self, step: Step) -> None:
        anchor = _anchor(str(self.scenario.workload.get("anchor", DEFAULT_ANCHOR)))
        day = (anchor - dt.timedelta(days=float(step.get("older_than_days", 7)))).date()
        cutoff = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
        self.reads["before_delete"] = sorted(self.visible_ids())
        self.history.record("read", "ok", "before_delete", visible=len(self.reads["before_delete"]))
        literal = cutoff.strftime("%Y-%m-%d %H:%M:%S.000000 UTC")
        statement = f"DELETE FROM {self.table} WHERE \"timestamp\" < TIMESTAMP '{literal}'"
        for attempt in range(int(step.get("attempts", 5))):
            try:
                self._recorded_sql("delete", statement, cutoff_micros=_micros(cutoff))
                return
            except Exception:
                if attempt == int(step.get("attempts", 5)) - 1:
                    raise
                time.sleep(1.0)

    def _do_optimize(self, step: Step) -> None:
        files_before = self._sql_retrying(f"SELECT count(*) FROM {self._meta('files')}")[0][0]
        self._recorded_sql(
            "optimize", f"ALTER TABLE {self.table} EXECUTE optimize", files_before=files_before
        )
        rows = self._sql(
            f"SELECT snapshot_id, parent_id, summary['total-data-files'] "
            f"FROM {self._meta('snapshots')} WHERE operation = 'replace' "
            "ORDER BY committed_at DESC LIMIT 1"
        )
        if not rows:
            return
        snap, parent, files = rows[0]
        parent_files = self._sql(
            f"SELECT summary['total-data-files'] FROM {self._meta('snapshots')} "
            f"WHERE snapshot_id = {parent}"
        )[0][0]
        aggregate = (
            "count(*), count(DISTINCT event_id), checksum(event_id), checksum(string), "
            "checksum(integer), checksum(floating)"
        )
        before = self._sql(f"SELECT {aggregate} FROM {self.table} FOR VERSION AS OF {parent}")[0]
        after = self._sql(f"SELECT {aggregate} FROM {self.table} FOR VERSION AS OF {snap}")[0]
        self.reads["compaction"] = {
            "before": {"snapshot": parent, "files": int(parent_files), "rows": _plain(before)},
            "after": {"snapshot": snap, "files": int(files), "rows": _plain(after)},
        }
        self.history.record("read", "ok", "compaction", **self.reads["compaction"])

    def _do_expire_snapshots(self, step: Step) -> None:
        count = f"SELECT count(*) FROM {self._meta('snapshots')}"
        # Expiring a table that has one snapshot removes nothing and proves nothing: wait
        # until the loader has committed a few times (a first batch can take a minute).
        wanted = int(step.get("min_snapshots", 1))
        deadline = time.monotonic() + float(step.get("timeout_s", 240))
        before = self._sql_retrying(count)[0][0]
        while before < wanted and time.monotonic() < deadline:
            time.sleep(1.0)
            before = self._sql_retrying(count)[0][0]
        # The catalog's minimum retention (7 d by default) is lowered for this session only.
        self._recorded_sql(
            "expire_snapshots",
            f"ALTER TABLE {self.table} EXECUTE expire_snapshots(retention_threshold => '0s')",
            session={f"{LAKE}.expire_snapshots_min_retention": "0s"},
            snapshots_before=before,
        )
        after = self._sql_retrying(count)[0][0]
        self.history.record("read", "ok", "snapshots", before=before, after=after)

    def _do_read_visible(self, step: Step) -> None:
        name = str(step.get("name", "visible"))
        self.reads[name] = sorted(self.visible_ids())
        self.history.record("read", "ok", name, visible=len(self.reads[name]))

    def _meta(self, suffix: str) -> str:
        catalog, schema, name = self.table.split(".")
        return f'{catalog}.{schema}."{name}${suffix}"'

    # -- freshness probe -----------------------------------------------------------

    def _do_probe(self, step: Step) -> None:
        if step.get("action", "start") == "stop":
            self._probing = False
            if self._probe is not None:
                self._probe.join(timeout=30)
            self.history.record("read", "ok", "probe", seen=len(self.reads.get("first_seen", {})))
            return
        interval = float(step.get("interval_s", 0.5))
        first_seen: dict[str, float] = {}
        self.reads["first_seen"] = first_seen
        self._probing = True

        def poll() -> None:
            while self._probing:
                try:
                    ids = self.visible_ids()
                except Exception:
                    ids = set()
                now = time.time()
                for eid in ids:
                    first_seen.setdefault(eid, now)
                time.sleep(interval)

        self._probe = threading.Thread(target=poll, name="freshness-probe", daemon=True)
        self._probe.start()

    # -- reading back ----------------------------------------------------------------

    def _collect(self) -> Observed:
        rows = self._sql_retrying(f"SELECT event_id, count(*) FROM {self.table} GROUP BY event_id")
        counts = {str(eid): int(n) for eid, n in rows}
        self.history.record("read", "ok", "table", distinct=len(counts), rows=sum(counts.values()))
        letters = self._dead_letters() if self.dead_letter_topic else []
        if self.dead_letter_topic:
            self.history.record("read", "ok", "dead_letters", records=len(letters))
        catalog, schema, name = self.table.split(".")
        columns = self._sql_retrying(
            f"SELECT column_name FROM {catalog}.information_schema.columns "
            f"WHERE table_schema = '{schema}' AND table_name = '{name}'"
        )
        self.reads["columns"] = [c[0] for c in columns]
        facts: dict[str, Any] = {
            "phases": {
                n: [e.event_id for e in Ledger.read(p.ledger_path).entries]
                for n, p in self.phases.items()
                if p.ledger_path.exists()
            }
        }
        for check in self.scenario.checks:
            if check.check == "column_values":
                col = check.params["column"]
                got = self._sql_retrying(f"SELECT event_id, {quote(col)} FROM {self.table}")
                self.reads[f"column:{col}"] = {str(i): v for i, v in got}
            elif check.check == "retention":
                facts["event_times"] = self._event_times()
            elif check.check == "values":
                cols = [c for c in check.params.get("columns", _REFERENCE_VALUE_COLUMNS)
                        if c in self.reads["columns"]]  # fmt: skip
                got = self._sql_retrying(
                    f"SELECT event_id, {', '.join(quote(c) for c in cols)} FROM {self.table}"
                )
                self.reads["rows"] = {str(r[0]): dict(zip(cols, r[1:], strict=True)) for r in got}
                facts["expected_rows"] = self._expected_rows(cols)
        return Observed(counts, letters, self.reads, facts)

    def _save_observed(self, observed: Observed) -> None:
        # Saved beside the history so a verdict can be recomputed without the services.
        doc = {
            "table_counts": observed.table_counts,
            "dead_letters": [
                {"partition": d.partition, "offset": d.offset, "headers": dict(d.headers)}
                for d in observed.dead_letters
            ],
            "reads": observed.reads,
            "facts": observed.facts,
        }
        path = self.run_dir / "observed.json"
        path.write_text(json.dumps(doc, default=list), encoding="utf-8")

    def _dead_letters(self) -> list[DeadLetter]:
        from confluent_kafka import TopicPartition

        consumer = self.stack.kafka_consumer("icefloe-scenario")
        letters: list[DeadLetter] = []
        try:
            metadata = consumer.list_topics(self.dead_letter_topic, timeout=30)
            assert self.dead_letter_topic is not None
            partitions = metadata.topics[self.dead_letter_topic].partitions
            ends = {}
            for p in partitions:
                low, high = consumer.get_watermark_offsets(
                    TopicPartition(self.dead_letter_topic, p), timeout=30
                )
                if high > low:
                    ends[p] = high
            consumer.assign([TopicPartition(self.dead_letter_topic, p, 0) for p in ends])
            deadline = time.monotonic() + 60
            done: set[int] = set()
            while len(done) < len(ends) and time.monotonic() < deadline:
                msg = consumer.poll(1.0)
                if msg is None or msg.error():
                    continue
                partition, offset = int(msg.partition() or 0), int(msg.offset() or 0)
                headers = _decode_headers(msg.headers())
                value = msg.value()
                raw = value.encode() if isinstance(value, str) else value
                letters.append(DeadLetter(partition, offset, headers, raw))
                if offset + 1 >= ends[partition]:
                    done.add(partition)
        finally:
            consumer.close()
        return letters

    def _regenerated(self) -> list[tuple[str, dict[str, Any]]]:
        """Plain (undrifted) rows of every valid message, regenerated from the phase seeds."""
        from publisher.drift import DriftConfig
        from publisher.messages import generate

        valid = {e.event_id for e in self.ledger_entries() if e.status == "valid"}
        out: list[tuple[str, dict[str, Any]]] = []
        for phase in self.phases.values():
            if not phase.ledger_path.exists():
                continue
            entries = Ledger.read(phase.ledger_path).entries
            if not entries:
                continue
            count = max(e.seq for e in entries) + 1
            # Drift never changes the values of a valid row, so the plain row is the truth.
            plain = dataclasses.replace(phase.generation, drift=DriftConfig())
            for m in generate(plain, count):
                if m.event_id in valid and m.kind is None and m.value is not None:
                    out.append((m.event_id, json.loads(m.value)))
        return out

    def _event_times(self) -> dict[str, int]:
        return {
            eid: _micros(dt.datetime.fromisoformat(row["timestamp"]))
            for eid, row in self._regenerated()
        }

    def _expected_rows(self, columns: Sequence[str]) -> dict[str, dict[str, Any]]:
        return {eid: {c: row[c] for c in columns if c in row} for eid, row in self._regenerated()}


def _decode_headers(raw: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in raw or []:
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value or "")
        out[str(key)] = text
    return out


def _plain(row: Sequence[Any]) -> list[Any]:
    return [v.hex() if isinstance(v, bytes | bytearray) else v for v in row]


def mutate(observed: Observed, mutation: str) -> Observed:
    """Break what was read back on purpose, to show a checker notices.

    Args:
        observed: The real readings.
        mutation: ``drop_dead_letters`` (lose the first dead letter of each error kind),
            ``duplicate_rows`` (count the first ten ids twice).

    Returns:
        The mutated readings.

    Raises:
        ValueError: For an unknown mutation.
    """
    if mutation == "drop_dead_letters":
        kept: list[DeadLetter] = []
        dropped: set[str] = set()
        for letter in observed.dead_letters:
            kind = letter.headers.get(keys.DLQ_ERROR_KIND, "")
            if kind not in dropped:
                dropped.add(kind)
                continue
            kept.append(letter)
        return dataclasses.replace(observed, dead_letters=kept)
    if mutation == "duplicate_rows":
        counts = dict(observed.table_counts)
        for eid in list(counts)[:10]:
            counts[eid] += 1
        return dataclasses.replace(observed, table_counts=counts)
    raise ValueError(f"unknown mutation {mutation!r}")


def run_scenario(scenario: Scenario, stack: Any, options: RunOptions | None = None) -> RunResult:
    """Run one scenario (see :class:`ScenarioRun`).

    Args:
        scenario: What to run.
        stack: A running stack.
        options: Seed, break, reports folder.

    Returns:
        The result.
    """
    return ScenarioRun(scenario, stack, options).run()


__all__ = ["RunOptions", "RunResult", "ScenarioRun", "mutate", "run_scenario"]
