"""Traffic faults: a burst from idle to the loader's maximum rate, a stretch of malformed input.

Each is a publish phase of its own (its own seed and ledger) on top of the run's workload,
started by ``inject`` in the background and awaited by ``heal``. Malformed messages are drawn
from every malformation that applies to the table except ``oversized`` (a megabyte each: at a
burst's rate it would fill the disk, and scenario 02 covers it).
"""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from icefloe.harness.scenarios.faults import fault_kind

__all__ = ["BurstParams", "MalformedParams", "malformed_kinds"]

DEFAULT_MAX_RATE = 1000.0
"""Messages per second of a burst when the loader's rate is not capped."""


@functools.cache
def malformed_kinds() -> tuple[str, ...]:
    """Malformations of the reference table that a burst may carry (all but ``oversized``)."""
    from icefloe.publisher.malformations import resolve_kinds
    from icefloe.publisher.rows import reference_schema

    return tuple(m.name for m in resolve_kinds((), reference_schema()) if m.name != "oversized")


class _Publish:
    lane = "traffic"

    def _start(self, run: Any, stem: str, **overrides: Any) -> Mapping[str, Any]:
        base = run.workload
        kinds = base.malformed_kinds or malformed_kinds()
        workload = dataclasses.replace(base, count=None, malformed_kinds=kinds, **overrides)
        self._phase = run.publish(run.traffic.next_name(stem), workload, background=True)
        return {
            "phase": self._phase.name,
            "rate": workload.rate,
            "seconds": workload.duration_s,
            "malformed_fraction": workload.malformed_fraction,
        }

    def heal(self, run: Any) -> Mapping[str, Any]:
        run.traffic.wait(self._phase.name, timeout_s=600)
        return {"phase": self._phase.name, "error": self._phase.error}


@dataclass(frozen=True)
class BurstParams:
    """Parameters of ``burst``.

    Attributes:
        seconds: How long it lasts.
        rate: Messages per second (``None``: the loader's maximum rate,
            ``kafka.max_offsets_per_trigger`` over the trigger interval).
        malformed_fraction: Share of malformed messages in it.
    """

    seconds: float = 2.0
    rate: float | None = None
    malformed_fraction: float = 0.0

    def __post_init__(self) -> None:
        if self.seconds <= 0 or not 0 <= self.malformed_fraction <= 1:
            raise ValueError("seconds must be > 0 and malformed_fraction within [0, 1]")


@fault_kind("burst", "traffic", BurstParams)
class Burst(_Publish):
    """A burst of messages from idle to the loader's maximum rate."""

    kind = name = "burst"

    def __init__(self, params: BurstParams, rng: random.Random) -> None:
        self.params = params

    def inject(self, run: Any) -> Mapping[str, Any]:
        p = self.params
        rate = p.rate or run.loaders.options.max_rate or DEFAULT_MAX_RATE
        return self._start(
            run,
            "burst",
            rate=rate,
            duration_s=p.seconds,
            malformed_fraction=p.malformed_fraction,
        )


@dataclass(frozen=True)
class MalformedParams:
    """Parameters of ``malformed_traffic``: the share of malformed messages (0-50 %), the
    rate and how many seconds it lasts."""

    fraction: float = 0.2
    rate: float = 50.0
    seconds: float = 5.0

    def __post_init__(self) -> None:
        if not 0 <= self.fraction <= 0.5 or self.rate <= 0 or self.seconds <= 0:
            raise ValueError("fraction within [0, 0.5], rate and seconds > 0")


@fault_kind("malformed_traffic", "traffic", MalformedParams)
class MalformedTraffic(_Publish):
    """A stretch of traffic with a share of malformed messages."""

    kind = name = "malformed_traffic"

    def __init__(self, params: MalformedParams, rng: random.Random) -> None:
        self.params = params

    def inject(self, run: Any) -> Mapping[str, Any]:
        p = self.params
        return self._start(
            run, "malformed", rate=p.rate, duration_s=p.seconds, malformed_fraction=p.fraction
        )
