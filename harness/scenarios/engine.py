"""The engine's public API: one :class:`Run` that publishes, drives the loader, injects and
heals faults, and reads, recording everything in one history.

Scenario steps, generated fault schedules, the state machine and benchmarks all act through
this API, never through each other's insides. A run owns its world (topics, table), its
recording client (every Trino query and Kafka read), its loaders, its traffic and the set of
active faults. Whatever fails, :meth:`Run.heal_all` heals what is still injected, in reverse
order, and :meth:`Run.teardown` calls it before stopping the loaders and dropping the world.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from icefloe.harness.history import Event, History
from icefloe.harness.loaders.base import LoaderKind
from icefloe.harness.scenarios.checks.facts.faults import heals
from icefloe.harness.scenarios.checks.facts.reads import removed_by_retention
from icefloe.harness.scenarios.client import RecordingClient
from icefloe.harness.scenarios.faults import Fault, FaultSkipped
from icefloe.harness.scenarios.faults.commits import attach_catalog_proxy
from icefloe.harness.scenarios.faults.timing import CommitWatcher
from icefloe.harness.scenarios.loaders import LoaderControl, LoaderOptions
from icefloe.harness.scenarios.params import as_dict
from icefloe.harness.scenarios.traffic import Phase, Traffic, Workload
from icefloe.harness.scenarios.world import Names, World
from icefloe.harness.stack.catalogproxy import CatalogProxy
from icefloe.publisher.ledger import LedgerEntry

__all__ = ["GONE_S", "Run", "RunSetup"]

GONE_S = 5.0
"""How long no loader of a run may have been left before a wait for rows gives up early."""
POSITION_EVERY_S = 5.0
"""How often a wait for rows reads the loader's committed position."""
GONE = "no loader left to load them"
BEHIND = "every missing row behind the loader's committed position for its drain bound"
"""Why a wait for rows ended before its time."""


def _behind(missing: set[str], position: Any, by_id: dict[str, Any]) -> bool:
    """Whether the committed position is past every missing row (the loader resumes past
    them all)."""
    for eid in missing:
        entry = by_id.get(eid)
        if entry is None or entry.offset is None:
            return False
        at = position.get(entry.topic, {}).get(entry.partition)
        if at is None or at <= entry.offset:
            return False
    return True


class RunSetup:
    """What a run needs to know about the world it makes (a scenario, or a generated schedule).

    Args:
        name: The run's name (topic and table are named after it).
        loader: The loader's settings.
        workload: The publisher's defaults.
        partitions: Partitions of the source topic.
        dead_letter: Make a dead-letter topic.
        extra_columns: Columns beyond the reference table, as (name, Trino type).
        liveness_bound_s: The longest bound of the run's liveness checks (0: none): a wait
            that ends early leaves every liveness window at least this long.
    """

    def __init__(
        self,
        name: str,
        loader: LoaderOptions,
        workload: Workload,
        partitions: int = 1,
        dead_letter: bool = True,
        extra_columns: tuple[tuple[str, str], ...] = (),
        liveness_bound_s: float = 0.0,
    ) -> None:
        self.name = name
        self.loader = loader
        self.workload = workload
        self.partitions = partitions
        self.dead_letter = dead_letter
        self.extra_columns = extra_columns
        self.liveness_bound_s = liveness_bound_s


class Run:
    """One run on one stack: its world, history, client, loaders, traffic and faults.

    Args:
        setup: What the world is.
        stack: A running stack.
        run_dir: The run's folder (history, ledgers, loader logs).
        seed: The run's seed (every random choice derives from it).
        listener: Called with every history event (live progress).
        names: The world's names (fresh ones by default).
        loader: The kind of loader under test (``harness.loaders.kinds``; icefloe's own by
            default).
    """

    def __init__(
        self,
        setup: RunSetup,
        stack: Any,
        run_dir: Path,
        seed: int,
        listener: Callable[[Event], None] | None = None,
        names: Names | None = None,
        loader: LoaderKind | None = None,
    ) -> None:
        self.setup_spec = setup
        self.stack = stack
        self.run_dir = run_dir
        self.seed = seed
        self.rng = random.Random(f"icefloe-scenario:{setup.name}:{seed}")
        self.names = names or Names.fresh(setup.name, setup.dead_letter)
        self.history = History(run_dir / "history.jsonl", listener=listener)
        self.client = RecordingClient(stack, self.history)
        self.world = World(self.names, self.client, setup.partitions, setup.extra_columns)
        self.loaders = LoaderControl(
            self.names, stack, run_dir, self.history, setup.loader, self.rng, loader
        )
        self.traffic = Traffic(
            stack.bootstrap_servers, self.names.topic, run_dir, self.history, seed
        )
        self.tasks: dict[str, Any] = {}
        self._active: list[Fault] = []
        self._lock = threading.Lock()
        self._watcher: CommitWatcher | None = None
        self.catalog_proxy: CatalogProxy | None = None

    @property
    def workload(self) -> Workload:
        """The run's publisher defaults."""
        return self.setup_spec.workload

    @property
    def table(self) -> str:
        return self.names.table

    # -- the world ---------------------------------------------------------------

    def setup(self) -> None:
        """Create the topics and the table, and put the loader behind its fault points."""
        self.world.create()
        self._route_loader()

    def _route_loader(self) -> None:
        """Start the fault points ``[loader] via`` names and point the loader's endpoints at
        them: Toxiproxy for Kafka, S3 and the catalog (TCP faults), the catalog proxy for HTTP
        faults on the catalog (in front of Toxiproxy's catalog proxy when both are named)."""
        via = self.setup_spec.loader.via
        routes: dict[str, str] = {}
        catalog = self.stack.catalog_uri
        address = f"catalog.{self.stack.catalog.endpoint_key}"  # uri, or glue_endpoint
        if "toxiproxy" in via:
            toxiproxy = self.stack.toxiproxy
            if not toxiproxy.process.is_running():
                toxiproxy.start()
            proxied = toxiproxy.proxied_endpoints()
            routes["kafka.bootstrap"] = proxied.bootstrap_servers
            routes["catalog.s3_endpoint"] = proxied.s3_endpoint
            catalog = routes[address] = proxied.catalog_uri
        if "catalog_proxy" in via:
            routes[address] = attach_catalog_proxy(self, upstream=catalog).url
        if routes:
            self.loaders.route(routes)

    def teardown(self, *, keep: bool = False) -> None:
        """Heal every active fault, wait for publishers, stop the loaders, drop the world."""
        self.heal_all()
        for name, task in list(self.tasks.items()):
            stop = getattr(task, "stop", None)
            if stop is not None:
                stop()
            self.tasks.pop(name, None)
        self.traffic.wait(timeout_s=120)
        self.loaders.close()
        if self.catalog_proxy is not None:
            self.catalog_proxy.stop()
            self.catalog_proxy = None
        if not keep:
            self.world.drop()

    # -- publishing ------------------------------------------------------------------

    def publish(
        self, name: str, workload: Workload | None = None, *, background: bool = False
    ) -> Phase:
        """Publish a phase (the run's workload unless another is given)."""
        return self.traffic.publish(name, workload or self.workload, background=background)

    def ledger_entries(self, *, finished_only: bool = False) -> list[LedgerEntry]:
        """Every ledger entry of the run so far."""
        return self.traffic.entries(finished_only=finished_only)

    # -- the loader ------------------------------------------------------------------------

    def start_loader(self, *, wait: bool = True) -> float:
        return self.loaders.start(wait=wait)

    def stop_loader(self) -> None:
        self.loaders.stop()

    def restart_loader(self, *, kill: bool = False, fresh_checkpoint: bool = False) -> float:
        return self.loaders.restart(kill=kill, fresh_checkpoint=fresh_checkpoint)

    def commit_watcher(self) -> CommitWatcher | None:
        """A watcher on the table's metadata folder in MinIO's data directory."""
        if self._watcher is None:
            location = self.client.location(self.table)
            data_dir = getattr(getattr(self.stack, "minio", None), "state_dir", None)
            if location is None or data_dir is None:
                return None
            path = data_dir / "data" / location.removeprefix("s3://") / "metadata"
            self._watcher = CommitWatcher(path)
        return self._watcher

    # -- faults ----------------------------------------------------------------------------

    def inject(self, fault: Fault) -> bool:
        """Inject a fault and add it to the active set (even if injecting fails half-way).

        Returns:
            False when the fault did not apply now (skipped, nothing to heal).

        Raises:
            Exception: Injecting failed (recorded; the fault stays active, to be healed).
        """
        params = getattr(fault, "params", None)
        self.history.record(
            "fault",
            "invoke",
            f"{fault.name}.inject",
            kind=fault.kind,
            lane=fault.lane,
            params=as_dict(params) if params is not None else {},
        )
        with self._lock:
            self._active.append(fault)
        try:
            facts = fault.inject(self)
        except FaultSkipped as exc:
            with self._lock:
                self._active.remove(fault)
            self.history.record("fault", "info", f"{fault.name}.skipped", reason=str(exc))
            return False
        except Exception as exc:
            self.history.record("fault", "fail", f"{fault.name}.inject", error=str(exc)[:400])
            raise
        self.history.record("fault", "ok", f"{fault.name}.inject", **dict(facts))
        return True

    def heal(self, fault: Fault) -> None:
        """Heal an active fault and drop it from the set (a failed heal leaves it there).

        Raises:
            Exception: Healing failed (recorded).
        """
        with self._lock:
            if fault not in self._active:
                return
        self.history.record("fault", "invoke", f"{fault.name}.heal")
        try:
            facts = fault.heal(self)
        except Exception as exc:
            self.history.record("fault", "fail", f"{fault.name}.heal", error=str(exc)[:400])
            raise
        with self._lock:
            if fault in self._active:
                self._active.remove(fault)
        self.history.record("fault", "ok", f"{fault.name}.heal", **dict(facts))

    @property
    def active_faults(self) -> list[Fault]:
        with self._lock:
            return list(self._active)

    def heal_all(self, attempts: int = 3) -> list[str]:
        """Heal every active fault, newest first; return the names of those that stay unhealed."""
        for _ in range(attempts):
            for fault in reversed(self.active_faults):
                try:
                    self.heal(fault)
                except Exception:
                    time.sleep(2.0)
            if not self.active_faults:
                break
        left = [f.name for f in self.active_faults]
        if left:
            self.history.record("fault", "fail", "unhealed", faults=left)
        return left

    # -- reading ---------------------------------------------------------------------------

    def sql(self, name: str, statement: str, **data: Any) -> list[Any]:
        """One statement on Trino, recorded (``{table}`` in it is the run's table)."""
        return self.client.sql(name, statement.format(table=self.table), **data)

    def visible_ids(self) -> set[str]:
        """The event ids the table holds now (recorded)."""
        return self.client.ids(self.table)

    def read(self, name: str) -> list[str]:
        """A named read of the ids visible now, recorded in full."""
        return self.client.visible(name, self.table)

    def expected_ids(self) -> set[str]:
        """Valid delivered ids that should be in the table (what retention removed aside)."""
        valid = {e.event_id for e in self.ledger_entries() if e.delivered and e.status == "valid"}
        return valid - removed_by_retention(self.history)

    def await_loaded(
        self,
        timeout_s: float = 180.0,
        settle_s: float | None = None,
        *,
        progress_s: float | None = None,
        drain: bool = False,
        drain_s: float | None = None,
    ) -> int:
        """Wait for the publishers, then until every expected id is visible; return how many
        are still missing (0: all there).

        The wait ends early when nothing can load the missing rows any more (:meth:`orphaned`
        for ``GONE_S``): no loader of the run runs or will be started again, no fault is
        active, and the longest liveness bound has passed since the last heal, so the checks
        judge the same rows and the same liveness windows as after the whole wait; or when
        every missing row has been behind the loader's committed position for its kind's
        drain bound (it will never read them again). The loader's committed position is read
        now and then (``read``/``positions``).

        Args:
            timeout_s: The longest wait.
            settle_s: A last pause after it (default: two trigger intervals; none after an
                early end).
            progress_s: Wait past ``timeout_s`` while more ids became visible within this
                many seconds (a long backlog loading), not while the table stands still.
            drain: Rows still missing then get the run's drain (:meth:`drain`).
            drain_s: The drain's bound (default: the loader kind's own).
        """
        self.traffic.wait()
        expected = self.expected_ids()
        seen, ended = self._wait_for(expected, time.monotonic() + timeout_s, progress_s)
        missing = len(expected - seen)
        self.history.record(
            "read",
            "ok" if not missing else "fail",
            "await_loaded",
            expected=len(expected),
            visible=len(seen),
            missing=missing,
            **({"ended": ended} if ended else {}),
        )
        if missing and drain:
            missing, ended = self.drain(expected, drain_s)
        if ended != GONE:  # a last commit (a duplicate) can still come; none can without a loader
            time.sleep(self.loaders.settle_s() if settle_s is None else settle_s)
            self._await_batch_in_flight()
        return missing

    def _await_batch_in_flight(self) -> None:
        """Past the settle: while the loader still has a batch its checkpoint planned and did
        not mark committed (a batch a restart runs again, on a slow start still to come), wait
        for it, up to the loader kind's drain bound, so the checks read what that batch
        writes (a duplicate, in a break)."""
        if not self.loaders.in_flight():
            return
        began = time.monotonic()
        bound = self.loaders.observer().drain_s
        while self.loaders.in_flight() and time.monotonic() - began < bound:
            time.sleep(0.5)
        self.history.record(
            "info", "info", "batch_in_flight",
            waited_s=round(time.monotonic() - began, 1), done=not self.loaders.in_flight(),
        )  # fmt: skip

    def drain(self, expected: set[str], bound_s: float | None = None) -> tuple[int, str | None]:
        """The run's drain: rows still missing get the loader's own time to arrive, with no
        fault active and the loader running, before the checks tell lost from pending.

        Every fault still active is healed; a loader that has stopped (it exited, or failed
        for good and was stopped) is started again, once. The drain then lasts until the
        loader kind's bound (its observer's ``drain_s``, plus ``discovery_s`` when the topic
        grew during the run) has passed since the last disturbance (a heal, a publish, a
        start), every expected row is visible, or nothing is left to load them. Rows that
        arrive in it are *late* (``harness.scenarios.checks.missing``), not lost.

        Args:
            expected: The ids that should be visible.
            bound_s: The bound, instead of the loader kind's.

        Returns:
            How many are still missing, and why it ended early (:data:`GONE`, :data:`BEHIND`),
            if it did.
        """
        seen = self._visible_now()
        missing = expected - seen
        if not missing:
            return 0, None
        self.heal_all()
        restarted = not self.loaders.is_running()
        if restarted:
            try:
                self.loaders.start(wait=False)
            except Exception as exc:  # recorded; the drain then waits for nothing
                self.history.record("loader", "fail", "start", error=str(exc)[:400])
        observer = self.loaders.observer()
        grew = self._topic_grew()
        bound = bound_s
        if bound is None:
            bound = observer.drain_s + (observer.discovery_s if grew else 0.0)
        quiet = time.time() if restarted else self._last_disturbance()
        wait_s = max(0.0, quiet + bound - time.time())
        self.history.record(
            "info", "invoke", "drain", missing=len(missing), bound_s=bound,
            wait_s=round(wait_s, 1), restarted=restarted, topic_grew=grew,
        )  # fmt: skip
        seen, ended = self._wait_for(expected, time.monotonic() + wait_s)
        left = expected - seen
        self.history.record(
            "read",
            "ok" if not left else "fail",
            "drain",
            arrived=len(missing - left),
            missing=len(left),
            **({"ended": ended} if ended else {}),
        )
        return len(left), ended

    def _visible_now(self) -> set[str]:
        try:
            return self.visible_ids()
        except Exception:
            return set()

    def _wait_for(
        self, expected: set[str], until: float, progress_s: float | None = None
    ) -> tuple[set[str], str | None]:
        """Poll the visible ids (and, every ``POSITION_EVERY_S``, the loader's position)
        until every expected id is visible or ``until`` (monotonic) passes.

        It ends early, saying why, once nothing can load the rest (:meth:`orphaned` for
        ``GONE_S``: :data:`GONE`), or once every missing row has been behind the loader's
        committed position for its whole drain bound (:data:`BEHIND`): the loader resumes past
        them, and whatever it had in hand of them it would have committed by then.

        Returns:
            What was seen, and why it ended early (None: all seen, or ``until`` passed).
        """
        seen: set[str] = set()
        most = 0
        orphaned_at: float | None = None
        behind_at: float | None = None
        next_position = 0.0
        position: Any = None
        by_id: dict[str, Any] | None = None
        while time.monotonic() < until:
            seen = self._visible_now()
            if time.monotonic() >= next_position:
                position = self.read_position()
                next_position = time.monotonic() + POSITION_EVERY_S
            if expected <= seen:
                return seen, None
            if progress_s is not None and len(seen) > most:
                most = len(seen)
                until = max(until, time.monotonic() + progress_s)
            if not self.orphaned():
                orphaned_at = None
            elif orphaned_at is None:
                orphaned_at = time.monotonic()
            elif time.monotonic() - orphaned_at >= GONE_S:
                return seen, GONE
            if position:
                by_id = by_id or {e.event_id: e for e in self.ledger_entries()}
                if not _behind(expected - seen, position, by_id):
                    behind_at = None
                elif behind_at is None:
                    behind_at = time.monotonic()
                elif time.monotonic() - behind_at >= self.loaders.observer().drain_s:
                    return seen, BEHIND
            time.sleep(1.0)
        return seen, None

    def read_position(self, *, final: bool = False) -> Any:
        """The loader's committed position now (recorded when it changed; see
        ``RecordingClient.positions``)."""
        return self.client.positions(self.table, self.loaders.observer(), final=final)

    def _topic_grew(self) -> bool:
        """Whether a fault added partitions to the run's topic."""
        return any(
            e.data.get("kind") == "add_partitions"
            for e in self.history.events
            if e.kind == "fault" and e.phase == "invoke"
        )

    def _last_disturbance(self) -> float:
        """When the loader was last disturbed: the last heal, publish or loader start."""
        times = [h.time for h in heals(self.history.events)]
        times += [e.time for e in self.history.events if e.kind == "loader" and e.name == "start"]
        times += [e.timestamp / 1000 for e in self.ledger_entries() if e.timestamp is not None]
        return max(times, default=time.time())

    def orphaned(self) -> bool:
        """Whether nothing can load a row any more: no loader of the run runs or will be
        started again by its supervisor, no fault is active (its heal may start one), and the
        longest liveness bound has passed since the last heal."""
        if self.active_faults or not self.loaders.all_gone():
            return False
        last = max((h.time for h in heals(self.history.events)), default=None)
        return last is None or time.time() >= last + self.setup_spec.liveness_bound_s

    def read_back(self) -> None:
        """The final reads every check may use: row counts per id, dead letters, columns."""
        self.client.table_counts(self.table)
        self.client.commits(self.table, attempts=10)
        self.read_position(final=True)
        if self.names.dead_letter_topic:
            self.client.dead_letters(self.names.dead_letter_topic)
        self.client.columns(self.table)
        self.loaders.record_log_facts()
