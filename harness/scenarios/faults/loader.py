"""Loader faults: kill -9 and the zombie (frozen past its lease), from outside or at a point.

Timed kills from outside (``now``, during start-up, when a commit starts) hit the dangerous
windows only by luck. At a fault point (``loader.testing.faultpoints.POINTS``: ``take_over``,
``planned``, ``decoded``, ``dead_lettered``, ``write``, ``publish``, ``commit_sent``,
``committed``) the loader itself SIGKILLs or freezes its process group when its first batch
reaches that point, so the fault lands there for sure and nothing waits for a commit
(``after_commit`` is the older name of a kill at ``committed`` after one commit). A hook is
given to one start of the loader: a schedule arms it on the start that comes before the fault
(``prepare``); otherwise the fault restarts the loader with it. Where it landed is what the
start's trace says (``harness.loaders.process`` records it in the history when the start
ends): a point that never fired is ``not landed``, not counted.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from icefloe.harness.scenarios.faults import FaultSkipped, fault_kind
from icefloe.harness.scenarios.faults.timing import landed, wait_for_commit
from icefloe.harness.waiting import poll
from icefloe.loader.testing.faultpoints import (
    KILL_AFTER_COMMIT_ENV,
    KILL_AT_ENV,
    PAUSE_AFTER_COMMITS_ENV,
    PAUSE_AT_ENV,
    POINTS,
    Point,
    where_landed,
)

__all__ = ["KillLoader", "KillLoaderParams", "ZombieLoader", "ZombieParams"]

_SIGKILL_CODE = -9
TAKE_OVER_POLL_S = 0.5
"""How often a zombie fault reads the lease while it waits for the successor's take-over."""


def _fired(loader: Any, action: str) -> str | None:
    """The point at which the loader's last start's ``action`` landed (None: it did not fire)."""
    for line in loader.last_trace():
        if line.get("action") == action:
            return where_landed(line)
    return None


def _where(loader: Any) -> dict[str, Any]:
    """Where in its life a loader was hit: seconds since its start, and whether its query ran."""
    return {"uptime_s": round(loader.uptime_s(), 2), "had_started": loader.has_started()}


@dataclass(frozen=True)
class KillLoaderParams:
    """Parameters of ``kill_loader``.

    Attributes:
        at: ``now``; ``start`` (during the loader's start-up: after a random delay of up to
            ``max_delay_s``, and never held back by a long run's pacing, which waits for a
            commit before other loader faults); ``commit`` (the moment a commit starts, plus
            up to ``max_delay_s``); ``after_commit`` (the loader's hook: right after its next
            commit, before Spark's checkpoint); or a fault point (``take_over``, ``planned``,
            ``decoded``, ``dead_lettered``, ``write``, ``publish``, ``commit_sent``,
            ``committed``): the loader kills itself there in the first batch of its next
            start (for ``take_over``: once its take-over has committed).
        commit_timeout_s: How long to wait for a commit before killing anyway (for
            ``after_commit`` and a point: for the armed loader to start, reach the point and
            kill itself; after that it is killed from outside, and the fault did not land).
        max_delay_s: Random delay after the commit was seen.
        restart: Heal by starting the loader and waiting for it (``wait``) or only
            launching it (``launch``: the next fault may find it still starting).
    """

    at: Literal["now", "start", "commit", "after_commit"] | Point = "now"
    commit_timeout_s: float = 120.0
    max_delay_s: float = 0.0
    restart: Literal["wait", "launch"] = "wait"


@fault_kind("kill_loader", "loader", KillLoaderParams)
class KillLoader:
    """kill -9 the loader (inject) and start it again (heal)."""

    kind = "kill_loader"
    name = "kill_loader"
    lane = "loader"

    def __init__(self, params: KillLoaderParams, rng: random.Random) -> None:
        self.params = params
        self.rng = rng
        self._snapshot: int | None = None

    @property
    def unpaced(self) -> bool:
        """A kill ``at = start`` or at a point comes at once: a long run's pacing waits for no
        commit (a point kill waits for its own point)."""
        return self.params.at == "start" or self.params.at in POINTS

    def prepare(self, run: Any) -> None:
        """Arm the next start of the loader for this fault (``after_commit`` and points)."""
        if self.params.at == "after_commit":
            run.loaders.arm({KILL_AFTER_COMMIT_ENV: "1"}, expect_codes=(_SIGKILL_CODE,))
        elif self.params.at in POINTS:
            run.loaders.arm({KILL_AT_ENV: self.params.at}, expect_codes=(_SIGKILL_CODE,))

    def inject(self, run: Any) -> Mapping[str, Any]:
        p = self.params
        if p.at == "after_commit":
            return self._after_commit(run)
        if p.at in POINTS:
            return self._at_point(run)
        if p.at == "start":
            return self._during_start(run)
        self._snapshot = wait_for_commit(run, p.at, p.commit_timeout_s, p.max_delay_s, self.rng)
        pid = run.loaders.kill()
        return {"at": p.at, "pid": pid, "committing_snapshot": self._snapshot}

    def _during_start(self, run: Any) -> Mapping[str, Any]:
        loaders = run.loaders
        if not loaders.is_running():
            raise FaultSkipped("the loader is not running")
        time.sleep(self.rng.uniform(0.0, self.params.max_delay_s))
        where = _where(loaders.current)
        pid = loaders.kill()
        return {"at": "start", "pid": pid, **where}

    def _at_point(self, run: Any) -> Mapping[str, Any]:
        """Wait for the armed start to kill itself at the point (arm a fresh start if the
        current one is not armed for it); kill it from outside after ``commit_timeout_s``."""
        loaders = run.loaders
        point = self.params.at
        if loaders.hooks.get(KILL_AT_ENV) != point:
            loaders.kill()
            self.prepare(run)
            loaders.start(wait=False)
        current = loaders.current
        began = time.monotonic()
        exited = current.wait_exit(self.params.commit_timeout_s)
        landed_at = _fired(current, "kill")
        pid = None if exited else loaders.kill()
        return {
            "at": point,
            "landed": landed_at,
            "self_killed": landed_at is not None,
            "waited_s": round(time.monotonic() - began, 2),
            "pid": pid,
        }

    def _after_commit(self, run: Any) -> Mapping[str, Any]:
        loaders = run.loaders
        if KILL_AFTER_COMMIT_ENV not in loaders.hooks or not loaders.current.starts:
            loaders.kill()
            self.prepare(run)
            loaders.start(wait=False)
        exited = loaders.current.wait_exit(self.params.commit_timeout_s)
        pid = None if exited else loaders.kill()
        return {"at": "after_commit", "self_killed": exited, "pid": pid}

    def heal(self, run: Any) -> Mapping[str, Any]:
        landed(run, self.name, self._snapshot)
        if run.loaders.is_running():
            # Healed again after a failed restart, which the supervisor has since made good:
            # a second process would only fight the first for the lease.
            return {"seconds": 0.0, "restart": self.params.restart, "already_running": True}
        took = run.loaders.start(wait=self.params.restart == "wait")
        return {"seconds": round(took, 2), "restart": self.params.restart}


@dataclass(frozen=True)
class ZombieParams:
    """Parameters of ``zombie_loader``.

    Attributes:
        freeze: ``now`` (SIGSTOP from outside, wherever it is); ``start`` (SIGSTOP from
            outside during the start-up the previous fault launched, after a random delay of
            up to ``delay_s``; never held back by a long run's pacing); a fault point
            (``take_over``, ``planned``, ``decoded``, ``dead_lettered``, ``write``,
            ``publish``, ``commit_sent``, ``committed``: the loader's pause hook at that
            point of its next start); ``hook`` (the pause point the scenario's ``[loader]``
            gives its first start).
        run_s: How long the successor loads before the frozen loader is thawed.
        grace_s: Extra wait after the lease ran out (clock skew allowance plus margin).
        after_commits: For a named point: commits the armed loader makes before the hook
            may freeze it (0: its first batch, while it is still warming up).
        freeze_timeout_s: How long to wait for the hook to freeze the loader.
        step_down_s: How long the thawed loader may take to step down before it is killed.
        restart: Start the successor and wait for it (``wait``) or only launch it.
        delay_s: For ``start``: the longest random delay before the freeze.
        successor: How far the successor gets before ``run_s`` starts: ``started`` (its
            query runs, as ``restart`` says) or ``took_over`` (the lease names it: it has
            fenced the frozen loader off and may still be warming up). A zombie frozen during
            a start-up needs no more than the take-over, and a successor's start costs
            30-70 s of the soak's loader lane.
    """

    freeze: Literal["now", "start", "hook"] | Point = "hook"
    run_s: float = 5.0
    grace_s: float = 1.5
    after_commits: int = 0
    freeze_timeout_s: float = 180.0
    step_down_s: float = 180.0
    restart: Literal["wait", "launch"] = "wait"
    delay_s: float = 15.0
    successor: Literal["started", "took_over"] = "started"

    def __post_init__(self) -> None:
        if self.after_commits < 0:
            raise ValueError("after_commits must be >= 0")


@fault_kind("zombie_loader", "loader", ZombieParams)
class ZombieLoader:
    """Freeze the loader past its lease, start a successor, thaw it: a zombie writer.

    Whatever the frozen loader was doing must not reach the table; thawed, it must step down
    (exit ``EXIT_NOT_OWNER``) without stopping its successor, which carries on.
    """

    kind = "zombie_loader"
    name = "zombie_loader"
    lane = "loader"

    def __init__(self, params: ZombieParams, rng: random.Random) -> None:
        self.params = params
        self.rng = rng
        self._zombie: Any = None

    @property
    def unpaced(self) -> bool:
        """A zombie frozen ``start`` or at a point (with no commit to wait for) comes at once:
        a long run's pacing waits for no commit."""
        p = self.params
        return p.freeze == "start" or (p.freeze in POINTS and p.after_commits == 0)

    def prepare(self, run: Any) -> None:
        """Arm the next start of the loader with the pause hook (a named point only)."""
        if self.params.freeze in POINTS:
            hooks = {PAUSE_AT_ENV: self.params.freeze}
            run.loaders.arm({**hooks, PAUSE_AFTER_COMMITS_ENV: str(self.params.after_commits)})

    def _armed(self, run: Any) -> bool:
        point = self.params.freeze
        if point == "hook":
            return True  # the scenario's own pause_at, given to the first start
        return bool(run.loaders.hooks.get(PAUSE_AT_ENV) == point)

    def inject(self, run: Any) -> Mapping[str, Any]:
        p = self.params
        loaders = run.loaders
        fallback: str | None = None
        frozen_at: dict[str, Any] = {}
        if p.freeze in ("now", "start"):
            if p.freeze == "start":
                time.sleep(self.rng.uniform(0.0, p.delay_s))
            if not loaders.is_running():
                raise FaultSkipped("the loader is not running")
            current = loaders.current
            frozen_at = _where(current)
            current.freeze()
        else:
            if not self._armed(run):
                loaders.kill()
                self.prepare(run)
                loaders.start(wait=False)
            fallback = self._await_frozen(loaders.current)
            frozen_at["landed"] = _fired(loaders.current, "freeze")
        expires = run.client.lease_expires_ms(run.names.table)
        if expires is not None:
            time.sleep(max(0.0, expires / 1000 - time.time()) + p.grace_s)
        self._zombie = loaders.current
        if p.successor == "took_over":
            loaders.start_successor(wait=False)
            took, took_over = self._await_take_over(run)
            frozen_at["successor_took_over"] = took_over
        else:
            _, took = loaders.start_successor(wait=p.restart == "wait")
        return {
            "freeze": p.freeze,
            "freeze_fallback": fallback,
            "lease_expired_ms": expires,
            "successor_start_s": round(took, 2),
            **frozen_at,
        }

    def _await_take_over(self, run: Any) -> tuple[float, bool]:
        """Wait until the lease names the successor; seconds waited and whether it did.

        A successor that exits first, or a wait past ``freeze_timeout_s``, ends it: the thaw
        then comes anyway, and the checks judge whatever follows.
        """
        began = time.monotonic()
        successor = run.loaders.current
        me = successor.settings.loader_id
        took = poll(
            lambda: run.client.lease_owner(run.names.table) == me,
            lambda took: took or not successor.is_running(),
            timeout_s=self.params.freeze_timeout_s,
            every_s=TAKE_OVER_POLL_S,
        )
        return time.monotonic() - began, took

    def _await_frozen(self, loader: Any) -> str | None:
        deadline = time.monotonic() + self.params.freeze_timeout_s
        while time.monotonic() < deadline:
            if loader.frozen():
                return None
            if PAUSE_AT_ENV not in loader.hooks and loader.is_running():
                break  # the armed start died (a catalog kill) and was restarted without it
            time.sleep(0.1)
        if not loader.is_running():
            raise FaultSkipped("the loader is not running")
        loader.freeze()  # the hook never fired (no batch with records): freeze it from outside
        return "now"

    def heal(self, run: Any) -> Mapping[str, Any]:
        loaders = run.loaders
        if self._zombie is None:  # the injection stopped before a successor was started
            loaders.current.thaw()
            return {"zombie_exit_code": None, "successor_running": False}
        time.sleep(self.params.run_s)  # the successor commits on top of what the zombie planned
        zombie, thawed_ms = self._zombie, time.time() * 1000

        def holds_table() -> bool:  # a lease it renewed after its thaw: it took the table back
            lease = run.client.lease(run.names.table)
            return bool(
                lease is not None
                and lease.owner == zombie.settings.loader_id
                and lease.expires_ms > thawed_ms
            )

        code = zombie.retire(self.params.step_down_s, holds_table)
        self._zombie = None
        if not loaders.is_running():
            loaders.start(wait=self.params.restart == "wait")
        return {"zombie_exit_code": code, "successor_running": bool(loaders.is_running())}
