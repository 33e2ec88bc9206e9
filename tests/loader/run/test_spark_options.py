"""The Spark session options the loader chooses from its configuration (no Spark started)."""

from __future__ import annotations

import pytest

from icefloe.loader import keys
from icefloe.loader.run.spark import LOCAL_CHECKPOINT_MANAGER, checkpoint_options


@pytest.mark.parametrize("location", [None, "/var/lib/icefloe/cp", "file:///tmp/cp", "cp"])
def test_a_local_checkpoint_is_written_through_hadoops_file_system(location: str | None) -> None:
    assert checkpoint_options(location) == {keys.SPARK_CHECKPOINT_MANAGER: LOCAL_CHECKPOINT_MANAGER}


@pytest.mark.parametrize("location", ["hdfs://nn:8020/cp", "s3a://bucket/cp", "abfs://c@a/cp"])
def test_a_checkpoint_elsewhere_keeps_sparks_default(location: str) -> None:
    assert checkpoint_options(location) == {}
