"""Two take-overs racing on the real catalog: the slower one must read the lease again.

Loader A reads the table and finds it free; before A's commit lands, loader B takes the table
over. A's commit is refused (main moved), and A must then read B's live lease and refuse with
``ConcurrentLoader``, never overwrite it. A soak found pyiceberg's own commit retry doing
exactly that: it rebased A's claim onto B's and committed it without reading the lease again,
so a loader thawed during its start-up took the table from a live successor.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icefloe.loader.commit import table as table_module
from icefloe.loader.commit.lease import lease_from_properties
from icefloe.loader.commit.table import TableView
from icefloe.loader.errors import ConcurrentLoader
from tests.loader.conftest import make_config

pytestmark = pytest.mark.integration


def test_a_take_over_overtaken_by_another_reads_again_and_refuses(
    stack: Any,
    table_factory: Any,
    s3_secret_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table = table_factory()

    def view(loader_id: str) -> TableView:
        config = make_config(
            stack, s3_secret_file, table, ["t"], tmp_path / loader_id, loader_id=loader_id
        )
        return TableView(config)

    a, b = view("loader-a"), view("loader-b")
    build_props = table_module.lease_properties
    overtaken: list[str] = []

    def b_takes_over_first(me: str, instance: str, now: int, ttl_ms: int) -> dict[str, str]:
        if me == "loader-a" and not overtaken:  # A has read the lease; B's commit lands first
            overtaken.append(me)
            b.claim("b-process", 60_000)
        return build_props(me, instance, now, ttl_ms)

    monkeypatch.setattr(table_module, "lease_properties", b_takes_over_first)
    with pytest.raises(ConcurrentLoader, match="loader-b"):
        a.claim("a-process", 60_000)
    assert overtaken == ["loader-a"]
    lease = lease_from_properties(b.load().properties)
    assert lease is not None and (lease.owner, lease.instance) == ("loader-b", "b-process")
