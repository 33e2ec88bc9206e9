"""The loader behind a catalog that loses answers, refuses, stalls and black-holes.

The loader runs as ``python -m icefloe.loader --config FILE`` with its catalog URL pointed at an
HTTP-aware fault proxy (``harness.stack.catalogproxy``); Trino and the checks read the catalog
directly. Three promises are checked on the real stack:

- commits whose answer is lost after they applied (a dropped connection, 500/502/504, a 504 now
  and the commit seconds later), refusals and delays, on a quarter of all commits, leave every
  row in the table once, no data file added by two snapshots, and the loader running;
- a catalog that black-holes every request makes the loader exit non-zero within its
  ``progress_timeout``, naming the catalog and the fault; it never hangs;
- a black hole shorter than that is ridden out: the loader commits again within seconds of
  the heal, without a restart.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.scenarios.checks.facts.storage import files_added_twice
from icefloe.harness.scenarios.gather.storage import entries_from_manifests
from icefloe.harness.stack.catalogproxy import CatalogProxy, Rule
from icefloe.harness.stack.tables import EVENT_ID_COLUMN
from tests.loader.conftest import reference_values, wait_until
from tests.loader.processes import LoaderProcess, counts, kill_if_running, loader_snapshots

pytestmark = pytest.mark.integration

EXIT_STALLED = 4

# Short bounds so a test sees each outcome in seconds; the defaults are 5 s, 30 s and 300 s.
FAST = {"connect_timeout": 2.0, "read_timeout": 4.0}


def added_twice(iceberg_catalog: Any, table: str) -> dict[str, list[int]]:
    """Data files that more than one snapshot added, read from every snapshot's manifests."""
    _, namespace, name = table.split(".")
    entries = entries_from_manifests(iceberg_catalog.load_table((namespace, name)))
    return files_added_twice((path, snapshot) for path, snapshot, _ in entries)


@pytest.fixture
def proxy(stack: Any) -> Any:
    with CatalogProxy(stack.catalog_uri, seed=28) as running:
        yield running


def test_lost_commit_answers_on_a_quarter_of_commits_lose_and_duplicate_nothing(
    stack: Any,
    iceberg_catalog: Any,
    table_factory: Any,
    topic_factory: Any,
    produce: Any,
    loader_config: Any,
    proxy: CatalogProxy,
    tmp_path: Path,
) -> None:
    table, topic = table_factory(extra_columns=EVENT_ID_COLUMN), topic_factory(partitions=2)
    path, _ = loader_config(
        table, [topic], catalog={"uri": proxy.url, **FAST}, progress_timeout=120.0
    )
    log = tmp_path / "loader.log"
    commits = r"/v1/(?:[^/]+/)?namespaces/[^/]+/tables/[^/]+"
    faults = [
        Rule("drop_after_forward", path=commits, times=None, probability=0.06),
        Rule("status_after_forward", path=commits, times=None, probability=0.04, status=500),
        Rule("status_after_forward", path=commits, times=None, probability=0.04, status=502),
        Rule("status_after_forward", path=commits, times=None, probability=0.04, status=504),
        Rule("refuse", path=commits, times=None, probability=0.03, retry_after_s=1),
        Rule("refuse", path=commits, times=None, probability=0.02, drop=True),
        Rule("deliver_late", path=commits, times=None, probability=0.02, late_s=2.0),
        Rule("delay", path=commits, times=None, probability=0.02, answer_delay_ms=6_000),
        Rule("black_hole", path=commits, times=None, probability=0.01, hold_s=40.0),
    ]
    # 100 rows every half second: a minute in CI; ICEFLOE_WIRE_SECONDS=240 for four minutes.
    seconds = float(os.environ.get("ICEFLOE_WIRE_SECONDS", "60"))
    total = 100 * int(seconds * 2)
    rows = [v for _, v in reference_values(total, seed=28)]
    produce(topic, rows[:100], partition=0)
    loader = LoaderProcess(path, log)
    try:
        wait_until(lambda: counts(stack, table)[0] > 0, 180, "the first commit")
        for rule in faults:
            proxy.add(rule)
        for i in range(100, len(rows), 100):
            produce(topic, rows[i : i + 100], partition=(i // 100) % 2)
            time.sleep(0.5)
        wait_until(lambda: counts(stack, table)[0] >= total, 240, f"all {total} rows")
        time.sleep(3)
        assert loader.proc.poll() is None, f"the loader exited:\n{loader.tail()}"
    finally:
        proxy.heal()
        kill_if_running(loader)
    fired = Counter(f.mode for f in proxy.fired)
    applied = sum(1 for f in proxy.fired if f.applied)
    assert sum(fired.values()) >= 5, f"too few faults landed to prove anything: {fired}"
    assert counts(stack, table) == (total, total), f"faults: {fired}, applied {applied}"
    assert added_twice(iceberg_catalog, table) == {}
    text = log.read_text()
    print(
        f"{total} rows, {text.count(': committed ')} commits, "
        f"faults {dict(fired)}, applied {applied}"
    )
    if any(f.applied for f in proxy.fired if f.mode != "delay"):
        assert "the answer was lost" in text or "trying again" in text, text[-3000:]


def test_a_catalog_black_hole_ends_the_loader_within_its_bound_naming_the_catalog(
    stack: Any,
    table_factory: Any,
    topic_factory: Any,
    produce: Any,
    loader_config: Any,
    proxy: CatalogProxy,
    tmp_path: Path,
) -> None:
    table, topic = table_factory(extra_columns=EVENT_ID_COLUMN), topic_factory()
    bound = 25.0
    path, _ = loader_config(
        table, [topic], catalog={"uri": proxy.url, **FAST}, progress_timeout=bound
    )
    log = tmp_path / "loader.log"
    produce(topic, [v for _, v in reference_values(100, seed=3)])
    loader = LoaderProcess(path, log)
    try:
        wait_until(lambda: counts(stack, table)[0] >= 100, 180, "the first rows")
        proxy.add(Rule("black_hole", method=".*", path=".*", times=None))
        started = time.monotonic()
        produce(topic, [v for _, v in reference_values(50, seed=4)])
        code = loader.wait(bound + 120)
        took = time.monotonic() - started
    finally:
        proxy.heal()
        kill_if_running(loader)
    assert code == EXIT_STALLED, loader.tail()
    # The bound counts from the first failed call: a read timeout after the black hole began.
    assert took < bound + 60, f"exited after {took:.0f} s"
    assert f"catalog at {proxy.url} did not answer" in log.read_text(), loader.tail()


def test_a_black_hole_shorter_than_the_bound_is_ridden_out(
    stack: Any,
    iceberg_catalog: Any,
    table_factory: Any,
    topic_factory: Any,
    produce: Any,
    loader_config: Any,
    proxy: CatalogProxy,
    tmp_path: Path,
) -> None:
    table, topic = table_factory(extra_columns=EVENT_ID_COLUMN), topic_factory()
    path, _ = loader_config(
        table, [topic], catalog={"uri": proxy.url, **FAST}, progress_timeout=120.0
    )
    log = tmp_path / "loader.log"
    produce(topic, [v for _, v in reference_values(100, seed=5)])
    loader = LoaderProcess(path, log)
    try:
        wait_until(lambda: counts(stack, table)[0] >= 100, 180, "the first rows")
        rule = proxy.add(Rule("black_hole", method=".*", path=".*", times=None))
        produce(topic, [v for _, v in reference_values(200, seed=6)][100:])
        time.sleep(15)  # longer than the read timeout: every call in flight times out
        assert counts(stack, table)[0] == 100
        proxy.remove(rule.name)
        healed = time.monotonic()
        wait_until(lambda: counts(stack, table)[0] >= 200, 60, "the rows after the heal")
        resumed = time.monotonic() - healed
        assert loader.proc.poll() is None, loader.tail()
    finally:
        proxy.heal()
        kill_if_running(loader)
    assert counts(stack, table) == (200, 200)
    assert resumed < 20, f"first commit {resumed:.1f} s after the heal"
    assert len(loader_snapshots(iceberg_catalog, table)) >= 2
