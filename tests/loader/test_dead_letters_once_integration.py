"""Dead letters are sent once, also when the loader dies between their flush and the commit.

The loader runs as ``python -m icefloe.loader --config FILE``. The fault hook
``ICEFLOE_TEST_KILL_AT=dead_lettered`` makes it SIGKILL itself right after Kafka acknowledged
the first batch's dead letters, before the commit that records the batch: its restart finds
them in the dead-letter topic's tail (``DeadLetterProducer.recover``) and does not send them
again. With that read left out of the start-up, this test fails: the letters arrive twice.
"""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.stack.tables import EVENT_ID_COLUMN
from icefloe.loader import keys
from icefloe.loader.testing.faultpoints import KILL_AT_ENV, TRACE_ENV, read_trace
from tests.loader.conftest import reference_values
from tests.loader.processes import LoaderProcess, counts, load_all_then_stop
from tests.loader.test_loader_integration import MALFORMED, consume

pytestmark = pytest.mark.integration


def letter_sources(stack: Any, dlq: str, expected: int) -> Counter[tuple[bytes, bytes, bytes]]:
    letters = consume(stack, dlq, expected, timeout_s=30)
    return Counter(
        (
            dict(m.headers())[keys.DLQ_SOURCE_TOPIC],
            dict(m.headers())[keys.DLQ_SOURCE_PARTITION],
            dict(m.headers())[keys.DLQ_SOURCE_OFFSET],
        )
        for m in letters
    )


def test_a_kill_after_the_dead_letters_flush_does_not_send_them_twice(
    stack: Any,
    table_factory: Any,
    topic_factory: Any,
    produce: Any,
    loader_config: Any,
    tmp_path: Path,
) -> None:
    table, topic, dlq = (
        table_factory(extra_columns=EVENT_ID_COLUMN),
        topic_factory(partitions=2),
        topic_factory(partitions=2),
    )
    rows = [v for _, v in reference_values(600, seed=11)]
    produce(topic, rows[:300] + MALFORMED, partition=0)
    produce(topic, MALFORMED + rows[300:], partition=1)
    path, _ = loader_config(table, [topic], dead_letter_topic=dlq, kafka={"first_slice_records": 0})
    log, trace = tmp_path / "loader.log", tmp_path / "trace.jsonl"

    first = LoaderProcess(path, log, {KILL_AT_ENV: "dead_lettered", TRACE_ENV: str(trace)})
    assert first.wait(180) == -signal.SIGKILL, first.tail()
    assert [(f["point"], f["action"]) for f in read_trace(trace)] == [("dead_lettered", "kill")]
    assert counts(stack, table) == (0, 0), "the batch must not have committed"

    load_all_then_stop(stack, table, path, log, 600)
    assert counts(stack, table) == (600, 600)
    sources = letter_sources(stack, dlq, 2 * len(MALFORMED))
    assert sum(sources.values()) == 2 * len(MALFORMED), sources
    assert max(sources.values()) == 1, f"dead letters sent twice: {sources}"
    assert "were sent before this start" in log.read_text()
