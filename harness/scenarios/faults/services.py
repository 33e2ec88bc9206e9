"""Service faults: kill -9 a service of the stack then start it again; SIGSTOP it then SIGCONT.

Kafka, MinIO and the REST catalog under the loader; Trino under the readers (a Trino restart
fails reads, which are retried; loading must not care). A paused service holds its ports and
answers nothing, as a stalled VM or a long garbage-collection pause would.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from icefloe.harness.scenarios.faults import fault_kind
from icefloe.harness.scenarios.faults.timing import landed, wait_for_commit

__all__ = ["KillService", "KillServiceParams", "PauseService", "PauseServiceParams"]

ServiceName = Literal["kafka", "minio", "catalog", "trino"]


@dataclass(frozen=True)
class KillServiceParams:
    """Parameters of ``kill_service``.

    Attributes:
        service: Which service.
        at: ``now`` or ``commit`` (the moment a commit starts, plus up to ``max_delay_s``).
        commit_timeout_s: How long to wait for a commit before killing anyway.
        max_delay_s: Random delay after the commit was seen.
        start_attempts: Tries at starting it again.
    """

    service: ServiceName
    at: Literal["now", "commit"] = "now"
    commit_timeout_s: float = 120.0
    max_delay_s: float = 0.0
    start_attempts: int = 3


@fault_kind("kill_service", "infra", KillServiceParams, shared=True)
class KillService:
    """kill -9 a stack service (inject) and start it again (heal)."""

    kind = "kill_service"
    lane = "infra"

    def __init__(self, params: KillServiceParams, rng: random.Random) -> None:
        self.params = params
        self.rng = rng
        self.name = f"kill_{params.service}"
        self._snapshot: int | None = None

    def inject(self, run: Any) -> Mapping[str, Any]:
        p = self.params
        self._snapshot = wait_for_commit(run, p.at, p.commit_timeout_s, p.max_delay_s, self.rng)
        run.stack.service(p.service).kill()
        return {"at": p.at, "committing_snapshot": self._snapshot}

    def heal(self, run: Any) -> Mapping[str, Any]:
        service = run.stack.service(self.params.service)
        for attempt in range(1, self.params.start_attempts + 1):
            try:
                took = float(service.start() or 0)
                break
            except Exception:
                if attempt == self.params.start_attempts:
                    raise
                service.kill()  # a half-started process holds its ports
                time.sleep(2.0)
        result = landed(run, self.name, self._snapshot)
        return {"seconds": round(took, 2), "committing_snapshot": self._snapshot, "landed": result}


@dataclass(frozen=True)
class PauseServiceParams:
    """Parameters of ``pause_service``: which service (the pause lasts the step's
    ``duration_s`` or the schedule event's)."""

    service: ServiceName


@fault_kind("pause_service", "infra", PauseServiceParams, shared=True)
class PauseService:
    """SIGSTOP a service (inject) and SIGCONT it (heal): it holds its ports, answers nothing."""

    kind = "pause_service"
    lane = "infra"

    def __init__(self, params: PauseServiceParams, rng: random.Random) -> None:
        self.params = params
        self.name = f"pause_{params.service}"

    def inject(self, run: Any) -> Mapping[str, Any]:
        run.stack.service(self.params.service).pause()
        return {}

    def heal(self, run: Any) -> Mapping[str, Any]:
        run.stack.service(self.params.service).resume()
        return {}
