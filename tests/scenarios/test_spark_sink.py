"""Spark's own streaming sink (``--loader spark-sink``) under scenario 01, as the kit reads it:
its commits found by their own summary key (``spark.sql.streaming.epochId``), its committed
position read from its Spark checkpoint, and exactly-once judged from those alone
(``own_reading``: the kit's reading, not the sink's merit; the verdicts are the finding,
docs/conformance.md).
"""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.harness.observer import CHECKPOINT
from tests.scenarios.own_reading import read_its_own_way

pytestmark = pytest.mark.scenario

# 1,500 messages at 30/s still outlast its five kills (each waits for a commit) and keep
# the CI leg within its hour.
VARIABLES = {"count": 1500, "rate": 30}


def test_spark_sink_is_judged_by_its_own_commits_and_checkpoint(stack: Any) -> None:
    final = read_its_own_way(stack, "spark-sink", CHECKPOINT, VARIABLES)
    assert isinstance(final.get("batch"), int), final
