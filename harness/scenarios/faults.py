"""Faults: things that go wrong on purpose, each with `inject` and `heal`.

A fault acts on a running scenario (:class:`FaultTarget`: the stack, the loader, the
history, the table's names) and records ``fault`` events - ``<name>.inject`` and
``<name>.heal`` - into the same history as publishes and reads. Every fault can be healed;
for a fault with nothing to undo (added partitions stay) healing records that it is over.

Timing: a fault may wait for a commit moment first. :class:`CommitWatcher` watches the
table's metadata folder in MinIO's data directory; a new manifest list (``snap-<id>-...avro``)
means a writer is between writing its data and committing the snapshot to the catalog. A
fault injected then lands *during* an Iceberg commit; afterwards the fault checks whether that
snapshot ever became part of the table, and records ``during_commit``.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from harness.scenarios.history import History

_SNAP = re.compile(r"^snap-(-?\d+)-")


class FaultTarget(Protocol):
    """What faults act on: provided by the scenario runner."""

    stack: Any
    history: History
    loader: Any
    topic: str

    def table_snapshot_ids(self) -> set[int] | None: ...

    def commit_watcher(self) -> CommitWatcher | None: ...

    def lease_expires_ms(self) -> int | None: ...

    def start_successor(self) -> tuple[Any, float]: ...


class Fault(Protocol):
    """A fault: `inject` breaks something, `heal` repairs it."""

    name: str

    def inject(self, target: FaultTarget) -> None: ...

    def heal(self, target: FaultTarget) -> None: ...


class CommitWatcher:
    """Notices manifest lists appearing in a table's metadata folder (commits in flight).

    Args:
        metadata_dir: ``<minio data>/<bucket>/<table path>/metadata``.
    """

    def __init__(self, metadata_dir: Path) -> None:
        self.metadata_dir = metadata_dir
        self._known = self._snapshots()

    def _snapshots(self) -> set[int]:
        try:
            names = [p.name for p in self.metadata_dir.iterdir()]
        except FileNotFoundError:
            return set()
        return {int(m.group(1)) for n in names if (m := _SNAP.match(n))}

    def wait_for_commit(self, timeout_s: float, poll_s: float = 0.005) -> int | None:
        """Block until a new manifest list appears; return its snapshot id.

        Args:
            timeout_s: Give up after this long.
            poll_s: Directory poll interval.

        Returns:
            The snapshot id being committed, or None on timeout.
        """
        deadline = time.monotonic() + timeout_s
        self._known = self._snapshots()
        while time.monotonic() < deadline:
            now = self._snapshots()
            new = now - self._known
            if new:
                self._known = now
                return max(new)
            time.sleep(poll_s)
        return None


@dataclass
class Timing:
    """When an injection happens: now, or at the next commit (plus a small random delay).

    Attributes:
        at: ``now`` or ``commit``.
        commit_timeout_s: How long to wait for a commit before injecting anyway.
        max_delay_s: Random extra delay after the commit was seen.
    """

    at: str = "now"
    commit_timeout_s: float = 120.0
    max_delay_s: float = 0.0

    def wait(self, target: FaultTarget, rng: random.Random) -> int | None:
        """Wait for the moment; return the snapshot id being committed, if one was seen."""
        if self.at != "commit":
            return None
        watcher = target.commit_watcher()
        if watcher is None:
            return None
        snapshot = watcher.wait_for_commit(self.commit_timeout_s)
        if snapshot is not None and self.max_delay_s:
            time.sleep(rng.uniform(0, self.max_delay_s))
        return snapshot


def _landed(target: FaultTarget, snapshot: int | None) -> bool | None:
    if snapshot is None:
        return None
    ids = target.table_snapshot_ids()
    return None if ids is None else snapshot in ids


def _record_landed(target: FaultTarget, name: str, snapshot: int | None) -> bool | None:
    """Record whether the commit a kill interrupted landed (known once the catalog answers)."""
    landed = _landed(target, snapshot)
    target.history.record(
        "fault",
        "info",
        f"{name}.commit",
        snapshot=snapshot,
        landed=landed,
        during_commit=landed is False,
    )
    return landed


class LoaderKill:
    """kill -9 the loader (inject) and start it again (heal).

    Args:
        timing: When to kill.
        rng: Random source for the delay after a commit is seen.
    """

    name = "kill_loader"

    def __init__(self, timing: Timing | None = None, rng: random.Random | None = None) -> None:
        self.timing = timing or Timing()
        self.rng = rng or random.Random()
        self._snapshot: int | None = None

    def inject(self, target: FaultTarget) -> None:
        target.history.record("fault", "invoke", f"{self.name}.inject", at=self.timing.at)
        self._snapshot = self.timing.wait(target, self.rng)
        pid = target.loader.kill()
        target.history.record(
            "fault",
            "ok",
            f"{self.name}.inject",
            pid=pid,
            at=self.timing.at,
            committing_snapshot=self._snapshot,
            during_commit=None,
        )

    def heal(self, target: FaultTarget) -> None:
        _record_landed(target, self.name, self._snapshot)
        target.history.record("fault", "invoke", f"{self.name}.heal")
        took = target.loader.start()
        target.history.record("fault", "ok", f"{self.name}.heal", seconds=round(took, 2))


class ZombieLoader:
    """Freeze the loader past its lease, start a successor, then thaw it (a zombie writer).

    Inject: the loader is frozen (SIGSTOP of its process group), either by this fault at once
    (``freeze = "now"``) or by the loader's own pause hook at a named point of a batch
    (``freeze = "hook"``: the scenario's ``pause_at``), as a GC pause, a frozen VM or a
    stalled container would freeze it. Once its lease has run out a second loader (another
    loader id, its own checkpoint) is started on the same table and topic. Heal: the frozen
    loader is thawed; whatever it was doing must not reach the table, and it must step down
    (exit ``EXIT_NOT_OWNER``) without stopping its successor, which carries on.

    Args:
        freeze: ``now`` or ``hook``.
        freeze_timeout_s: How long to wait for the hook to freeze the loader.
        grace_s: Extra wait after the lease ran out (clock skew allowance plus margin).
        run_s: How long the successor loads before the zombie is thawed.
    """

    name = "zombie_loader"

    def __init__(
        self,
        freeze: str = "hook",
        freeze_timeout_s: float = 180.0,
        grace_s: float = 1.5,
        run_s: float = 5.0,
    ) -> None:
        if freeze not in ("now", "hook"):
            raise ValueError(f"zombie_loader: freeze must be 'now' or 'hook', not {freeze!r}")
        self.freeze = freeze
        self.freeze_timeout_s = freeze_timeout_s
        self.grace_s = grace_s
        self.run_s = run_s
        self._zombie: Any = None

    def inject(self, target: FaultTarget) -> None:
        target.history.record("fault", "invoke", f"{self.name}.inject", freeze=self.freeze)
        loader = target.loader
        if self.freeze == "now":
            loader.freeze()
        else:
            deadline = time.monotonic() + self.freeze_timeout_s
            while not loader.frozen() and time.monotonic() < deadline:
                if not loader.is_running():
                    raise RuntimeError("the loader exited before its pause hook froze it")
                time.sleep(0.1)
            if not loader.frozen():
                raise RuntimeError(
                    f"the loader's pause hook did not fire in {self.freeze_timeout_s:.0f} s"
                )
        expires = target.lease_expires_ms()
        if expires is not None:
            time.sleep(max(0.0, expires / 1000 - time.time()) + self.grace_s)
        self._zombie, took = target.start_successor()
        target.history.record(
            "fault",
            "ok",
            f"{self.name}.inject",
            freeze=self.freeze,
            lease_expired_ms=expires,
            successor_start_s=round(took, 2),
        )

    def heal(self, target: FaultTarget) -> None:
        time.sleep(self.run_s)  # the successor commits on top of what the zombie planned from
        target.history.record("fault", "invoke", f"{self.name}.heal")
        code = self._zombie.retire() if self._zombie is not None else None
        target.history.record(
            "fault",
            "ok",
            f"{self.name}.heal",
            zombie_exit_code=code,
            successor_running=bool(target.loader.is_running()),
        )


class ServiceKill:
    """kill -9 a stack service (inject) and start it again (heal).

    Args:
        service: ``kafka``, ``minio``, ``catalog`` or ``trino``.
        timing: When to kill.
        rng: Random source for the delay after a commit is seen.
    """

    def __init__(
        self, service: str, timing: Timing | None = None, rng: random.Random | None = None
    ) -> None:
        self.service = service
        self.name = f"kill_{service}"
        self.timing = timing or Timing()
        self.rng = rng or random.Random()
        self._snapshot: int | None = None

    def inject(self, target: FaultTarget) -> None:
        target.history.record("fault", "invoke", f"{self.name}.inject", at=self.timing.at)
        self._snapshot = self.timing.wait(target, self.rng)
        target.stack.service(self.service).kill()
        target.history.record(
            "fault",
            "ok",
            f"{self.name}.inject",
            at=self.timing.at,
            committing_snapshot=self._snapshot,
        )

    def heal(self, target: FaultTarget) -> None:
        target.history.record("fault", "invoke", f"{self.name}.heal")
        took = target.stack.service(self.service).start()
        landed = _record_landed(target, self.name, self._snapshot)
        target.history.record(
            "fault",
            "ok",
            f"{self.name}.heal",
            seconds=round(float(took or 0), 2),
            committing_snapshot=self._snapshot,
            landed=landed,
        )


class ServicePause:
    """SIGSTOP a service (inject) and SIGCONT it (heal): it holds its ports, answers nothing."""

    def __init__(self, service: str) -> None:
        self.service = service
        self.name = f"pause_{service}"

    def inject(self, target: FaultTarget) -> None:
        target.history.record("fault", "invoke", f"{self.name}.inject")
        target.stack.service(self.service).pause()
        target.history.record("fault", "ok", f"{self.name}.inject")

    def heal(self, target: FaultTarget) -> None:
        target.history.record("fault", "invoke", f"{self.name}.heal")
        target.stack.service(self.service).resume()
        target.history.record("fault", "ok", f"{self.name}.heal")


class AddPartitions:
    """Grow the source topic to ``total`` partitions; partitions cannot be removed, so the
    heal only records that the fault is over.

    Args:
        total: The new partition count.
    """

    name = "add_partitions"

    def __init__(self, total: int) -> None:
        self.total = total

    def inject(self, target: FaultTarget) -> None:
        from confluent_kafka.admin import NewPartitions

        target.history.record("fault", "invoke", f"{self.name}.inject", total=self.total)
        admin = target.stack.kafka_admin()
        futures = admin.create_partitions([NewPartitions(target.topic, self.total)])
        for future in futures.values():
            future.result(timeout=30)
        target.history.record("fault", "ok", f"{self.name}.inject", total=self.total)

    def heal(self, target: FaultTarget) -> None:
        target.history.record("fault", "ok", f"{self.name}.heal", note="partitions stay")


def make_fault(spec: dict[str, Any], rng: random.Random) -> Fault:
    """Build a fault from a scenario step's fields.

    Args:
        spec: ``fault`` (kill_loader, kill_service, pause_service, add_partitions,
            zombie_loader) and its parameters (``service``, ``at``, ``total``, ``freeze``...).
        rng: The run's seeded random source.

    Returns:
        The fault.

    Raises:
        ValueError: For an unknown fault.
    """
    timing = Timing(
        at=spec.get("at", "now"),
        commit_timeout_s=float(spec.get("commit_timeout_s", 120.0)),
        max_delay_s=float(spec.get("max_delay_s", 0.0)),
    )
    kind = spec["fault"]
    builders: dict[str, Callable[[], Fault]] = {
        "kill_loader": lambda: LoaderKill(timing, rng),
        "kill_service": lambda: ServiceKill(spec["service"], timing, rng),
        "pause_service": lambda: ServicePause(spec["service"]),
        "add_partitions": lambda: AddPartitions(int(spec["total"])),
        "zombie_loader": lambda: ZombieLoader(
            freeze=str(spec.get("freeze", "hook")),
            run_s=float(spec.get("run_s", 5.0)),
        ),
    }
    if kind not in builders:
        raise ValueError(f"unknown fault {kind!r}; one of {sorted(builders)}")
    return builders[kind]()
