"""Freshness: publish-to-visible latency at a steady rate, and the data files it leaves behind.

For one setting (rate, trigger), a loader process (local mode) loads a fresh one-partition
topic into a fresh table. Once it has started and made one warm-up row visible, a thread
publishes ``rate`` messages per second for ``seconds``; each message carries its sequence number
in the ``integer`` column. The bench polls Trino for ``max(integer)`` (one partition keeps the
order, so every message up to it is visible); a message's latency is the first poll that sees
it minus the moment it was handed to the producer. It includes Trino's query time (about
0.1-0.3 s) and the polling interval.

Beside it, from what the table itself recorded, with no poll in it: when main moved to the first
snapshot holding each message (``committed_at``: the table's ``$history``, whose
``made_current_at`` is the catalog's clock as it built the commit, a few milliseconds before the
commit landed). The gap between the two is the observer's: how long a poll took to see a commit.

The data files are counted from the table's ``$files`` metadata table before and after, and
scaled to an hour of the same load.

Beside the percentiles, each setting says where its time went: the p99 of each ``WINDOW_S`` of
publishing (a tail from the loader's first, cold batches shows in the first windows only), the
loader's batches while it was published to and their median time (from its own log lines,
``harness.bench.profile``), and the cores each process used meanwhile
(``harness.bench.cores``): on a small machine the bench's own polling, answered by Trino, takes
a share of the cores the loader runs on, the same share for any loader measured.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import psutil

from icefloe.harness.bench.cores import CoreMeter
from icefloe.harness.bench.figures import Freshness
from icefloe.harness.bench.loaders import local_loader
from icefloe.harness.bench.profile import steps_from_log
from icefloe.harness.bench.stats import median_low, per_hour
from icefloe.harness.bench.workload import (
    BenchSchema,
    create_topic,
    data_files,
    metadata_table,
    producer,
    reference_values,
    visible,
)
from icefloe.harness.scenarios.checks.facts.numbers import percentile
from icefloe.harness.waiting import poll

POLL_S = 0.1
WINDOW_S = 10.0
"""The span of publishing each of a setting's ``p99_by_window`` covers."""
LOG_LINES = 5_000
"""The loader's last log lines read for its batch times (one line a batch)."""
# How long after the last publish the bench keeps waiting for the last messages.
DRAIN_S = 60.0


def latencies(sent: list[float], seen_at: dict[int, float]) -> list[float]:
    """Publish-to-visible seconds of every message seen (``sent[i]``: when ``i`` was published)."""
    return [seen_at[i] - sent[i] for i in sorted(seen_at) if i < len(sent)]


def committed_at(stack: Any, table: str) -> dict[int, float]:
    """When main first pointed at a snapshot holding each sequence number of ``table``
    (``time.monotonic()`` values), from the table's own history.

    Walks main's snapshots in the order they were made current (``$history``, current
    ancestors) and asks each, by time travel, for ``max(integer)``: every number up to it is in
    that snapshot (one partition keeps the order). ``made_current_at`` is the catalog's wall clock;
    it is put on this process's monotonic clock, the same machine's.
    """
    history = stack.query(
        f"SELECT snapshot_id, made_current_at FROM {metadata_table(table, 'history')} "
        "WHERE is_current_ancestor ORDER BY made_current_at, snapshot_id"
    )
    wall_to_mono = time.monotonic() - time.time()
    at: dict[int, float] = {}
    highest = -1
    for snapshot_id, made_current in history:
        ((top,),) = stack.query(
            f"SELECT max(integer) FROM {table} FOR VERSION AS OF {int(snapshot_id)}"
        )
        if top is not None and top > highest:
            moment = made_current.timestamp() + wall_to_mono
            for seq in range(highest + 1, int(top) + 1):
                at[seq] = moment
            highest = int(top)
    return at


def p99_by_window(
    sent: list[float], seen_at: dict[int, float], window_s: float = WINDOW_S
) -> tuple[float | None, ...]:
    """The p99 latency of the messages published in each ``window_s`` from the first publish
    (None: a window none of whose messages was seen)."""
    if not sent:
        return ()
    first = sent[0]
    windows: list[list[float]] = [[] for _ in range(int((sent[-1] - first) // window_s) + 1)]
    for i, published in enumerate(sent):
        if i in seen_at:
            windows[int((published - first) // window_s)].append(seen_at[i] - published)
    return tuple(percentile(w, 99) if w else None for w in windows)


def batch_times(log: str, since_wall: float) -> list[float]:
    """Seconds of each batch a loader's log says it committed after ``since_wall`` (epoch)."""
    return [
        s.seconds
        for s in steps_from_log(log, since_wall, 0.0)
        if s.name.startswith("batch") and s.start_s >= 0
    ]


def summarize(
    rate: int, trigger_s: float, seconds: float, sent: list[float], seen_at: dict[int, float],
    files: int, batches: list[float] | None = None, cores: Mapping[str, float] | None = None,
    answers: list[float] | None = None, committed: dict[int, float] | None = None,
) -> Freshness:  # fmt: skip
    """One setting's figures from what was published, what was seen when, the files, and (when
    known) the loader's batch times, the cores used, how long Trino took to answer each poll,
    and when the table's history says each message was committed (``committed_at``).

    The figures from the history are None (unknown) unless it holds every message a poll saw.
    """
    lat = latencies(sent, seen_at)
    from_history = (
        latencies(sent, committed) if committed and set(seen_at) <= set(committed) else []
    )
    p50, p95, p99, top = (
        (percentile(lat, 50), percentile(lat, 95), percentile(lat, 99), max(lat))
        if lat
        else (None, None, None, None)
    )
    return Freshness(
        rate=rate,
        trigger_s=trigger_s,
        seconds=seconds,
        published=len(sent),
        seen=len(lat),
        p50=p50,
        p95=p95,
        p99=p99,
        max=top,
        files=files,
        files_per_hour=per_hour(files, seconds),
        p99_by_window=p99_by_window(sent, seen_at),
        batches=None if batches is None else len(batches),
        batch_median_s=median_low(batches) if batches else None,
        cores=dict(cores or {}),
        poll_median_s=median_low(answers) if answers else None,
        poll_p99_s=percentile(answers, 99) if answers else None,
        committed_p50=percentile(from_history, 50) if from_history else None,
        committed_p99=percentile(from_history, 99) if from_history else None,
    )


def publish_numbered(
    out: Any, topic: str, body: dict[str, Any], rate: float, total: int, sent: list[float]
) -> None:
    """Publish ``total`` copies of ``body`` at ``rate`` msg/s, the i-th with ``integer`` = i.

    Appends to ``sent`` the moment each message was handed to the producer ``out``.
    """
    start = time.monotonic()
    for seq in range(total):
        pause = start + seq / rate - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        body["integer"] = seq
        out.produce(topic, json.dumps(body).encode())
        out.poll(0)
        sent.append(time.monotonic())
    out.flush(60)


def watch_sequence(
    stack: Any, table: str, total: int, until: float, answers: list[float] | None = None
) -> dict[int, float]:
    """When each of the sequence numbers 0..total-1 was first visible in ``table`` through Trino.

    Polls ``max(integer)`` (one partition keeps the order) until all are seen or ``until``
    (a ``time.monotonic()`` value) passes. Appends to ``answers``, when given, the seconds each
    poll took to be answered: a part of every latency measured.
    """
    seen_at: dict[int, float] = {}
    highest = -1
    while highest < total - 1 and time.monotonic() < until:
        asked = time.monotonic()
        ((top,),) = stack.query(f"SELECT max(integer) FROM {table}")
        now = time.monotonic()
        if answers is not None:
            answers.append(now - asked)
        if top is not None and top > highest:
            for seq in range(highest + 1, int(top) + 1):
                seen_at[seq] = now
            highest = int(top)
        time.sleep(POLL_S)
    return seen_at


def run_setting(
    stack: Any,
    folder: Path,
    schema: BenchSchema,
    rate: int,
    trigger_s: float,
    seconds: float,
    window_days: float,
    tuning: Mapping[str, Any] | None = None,
) -> Freshness:
    """Measure one setting: ``rate`` msg/s for ``seconds`` into a loader with ``trigger_s`` and
    the settings of ``tuning`` (``BenchOptions.tuning``).

    Raises:
        RuntimeError: the loader did not start, or the warm-up row never became visible.
    """
    table = schema.table("fresh")
    topic = create_topic(stack, 1)
    loader = local_loader(stack, folder, table, topic, trigger_s, None, tuning)
    loader.start(wait=True)
    try:
        out = producer(stack, linger_ms=5)
        body = json.loads(reference_values(1, window_days)[0])
        body["integer"] = -1
        out.produce(topic, json.dumps(body).encode())
        out.flush(30)
        shown = poll(
            lambda: visible(stack, table),
            lambda shown: shown or not loader.is_running(),
            timeout_s=120,
            every_s=0.5,
        )
        if not shown:
            raise RuntimeError(f"the warm-up row did not appear:\n{loader.log_tail(20)}")
        files_before = data_files(stack, table)
        meter = core_meter(stack, loader)
        total = int(rate * seconds)
        sent: list[float] = []
        thread = threading.Thread(
            target=publish_numbered,
            args=(out, topic, body, rate, total, sent),
            name="bench-publish",
            daemon=True,
        )
        began_wall = time.time()
        meter.start()
        thread.start()
        answers: list[float] = []
        until = time.monotonic() + seconds + DRAIN_S
        seen_at = watch_sequence(stack, table, total, until, answers)
        cores = meter.cores()
        thread.join(60)
        files = data_files(stack, table) - files_before
        batches = batch_times(loader.log_tail(LOG_LINES), began_wall)
    finally:
        loader.close()
    committed = committed_at(stack, table)
    return summarize(
        rate, trigger_s, seconds, sent, seen_at, files, batches, cores, answers, committed
    )


def core_meter(stack: Any, loader: Any) -> CoreMeter:
    """A meter of the loader, each of the stack's services that runs here as a process, and
    the bench's own process (the publisher and the polls; its child, the loader, apart)."""
    processes = {"loader": _live(loader.process), "bench": psutil.Process}
    for role, service in stack.services.items():
        processes[role] = _live(service.process)
    return CoreMeter(processes, own=frozenset({"bench"}))


def _live(owner: Any) -> Callable[[], psutil.Process | None]:
    """The live process of a service's or a loader's ``process`` (its ``pid``: a local
    process's, or a container's main process as the host sees it), or None."""

    def live() -> psutil.Process | None:
        pid = owner.pid
        return None if pid is None else psutil.Process(pid)

    return live
