"""Topic faults while the loader loads: partitions added (the loader must find and load them)."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from icefloe.harness.scenarios.faults import FaultSkipped, Over, fault_kind

__all__ = ["AddPartitionsParams"]


@dataclass(frozen=True)
class AddPartitionsParams:
    """Parameters of ``add_partitions``: grow the topic to ``total`` partitions, or by ``add``."""

    total: int | None = None
    add: int | None = None

    def __post_init__(self) -> None:
        if (self.total is None) == (self.add is None):
            raise ValueError("give exactly one of total and add")


@fault_kind("add_partitions", "topic", AddPartitionsParams)
class AddPartitions(Over):
    """Grow the source topic; partitions cannot be removed, so healing only records the end."""

    kind = name = "add_partitions"
    lane = "topic"

    def __init__(self, params: AddPartitionsParams, rng: random.Random) -> None:
        self.params = params

    def inject(self, run: Any) -> Mapping[str, Any]:
        from confluent_kafka.admin import NewPartitions

        admin = run.stack.kafka_admin()
        topic = run.names.topic
        now = len(admin.list_topics(topic, timeout=30).topics[topic].partitions)
        total = self.params.total if self.params.total is not None else now + (self.params.add or 0)
        if total <= now:
            raise FaultSkipped(f"the topic has {now} partitions already")
        for future in admin.create_partitions([NewPartitions(topic, total)]).values():
            future.result(timeout=30)
        return {"before": now, "total": total}
