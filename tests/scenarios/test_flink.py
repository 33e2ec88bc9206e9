"""The reference design's Flink job (``--loader flink``) under scenario 01, as the kit reads it:
its commits found by their own summary key (``flink.max-committed-checkpoint-id``), its
committed position read from its consumer group, and exactly-once judged from those alone
(``own_reading``: the kit's reading, not Flink's merit; the verdicts are the finding,
docs/loaders.md).

Marked ``slow`` (by hand, not in CI): its first run provisions PyFlink and its jars (about 30 s
to a minute) and the scenario takes about three minutes on two cores, which the CI hour has no
room for.
"""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.harness.observer import GROUP
from tests.scenarios.own_reading import read_its_own_way

pytestmark = [pytest.mark.scenario, pytest.mark.slow]


def test_the_flink_job_is_judged_by_its_own_commits_and_group(stack: Any) -> None:
    read_its_own_way(stack, "flink", GROUP)
