"""`icefloe demo` (`make demo`): the kit end to end on the local stack, narrated.

1. start Kafka, MinIO, the Iceberg REST catalog and Trino;
2. create the reference table through Trino, and a topic with its dead-letter topic;
3. start the loader (PySpark, exactly-once, dead-letter topic);
4. publish synthetic rows with a few malformed messages, with a ledger of what was sent;
5. watch the rows become visible in Trino, and check them against the ledger;
6. show where the dead letters went and why, and the Kafka offsets stamped in each snapshot;
7. add a column in Trino while the loader runs, publish rows carrying it, and see them land.
"""

from __future__ import annotations

import argparse
import datetime as dt
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.markup import escape

from harness.console import say
from harness.stack import sql
from harness.stack.keys import TRINO_CATALOG as LAKE
from harness.stack.lakehouse import Stack
from harness.stack.tables import EVENT_ID_COLUMN, create_table_sql
from loader import keys

_SCHEMA = "demo"
_TABLE = f"{LAKE}.{_SCHEMA}.events"
_TOPIC = "demo.events"
_DLQ = "demo.events.dlq"
_COUNT = 2_000
_MALFORMED = 0.02


def _count(stack: Stack, where: str = "") -> int:
    rows = sql.run(stack.trino_connection(), f"SELECT count(*) FROM {_TABLE} {where}")[0][1]
    return int(rows[0][0])


def _wait_for_rows(stack: Stack, expected: int, where: str = "", timeout: float = 180.0) -> float:
    started = time.monotonic()
    seen = -1
    while time.monotonic() - started < timeout:
        count = _count(stack, where)
        if count != seen:
            say(f"   visible in Trino: {count:,} / {expected:,}")
            seen = count
        if count >= expected:
            return time.monotonic() - started
        time.sleep(1.0)
    raise TimeoutError(f"only {seen} of {expected} rows visible after {timeout:.0f} s")


def _recreate_topics(stack: Stack) -> None:
    from confluent_kafka.admin import NewTopic

    admin = stack.kafka_admin()
    existing = set(admin.list_topics(timeout=10).topics)
    stale = [t for t in (_TOPIC, _DLQ) if t in existing]
    if stale:
        for future in admin.delete_topics(stale, operation_timeout=30).values():
            future.result(timeout=30)
        time.sleep(2)  # deletion completes asynchronously in the broker
    futures = admin.create_topics([NewTopic(_TOPIC, 3, 1), NewTopic(_DLQ, 1, 1)])
    for future in futures.values():
        future.result(timeout=30)


def _dead_letters(stack: Stack, expected: int) -> list[dict[str, str]]:
    consumer = stack.kafka_consumer("demo")
    consumer.subscribe([_DLQ])
    found: list[dict[str, str]] = []
    deadline = time.monotonic() + 30
    try:
        while len(found) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            headers = msg.headers() or []
            items = headers.items() if isinstance(headers, dict) else headers
            found.append({k: _text(v) for k, v in items})
    finally:
        consumer.close()
    return found


def _text(value: str | bytes | None) -> str:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value or ""


def _publish(stack: Stack, ledger_dir: Path, seed: int, **generation: Any) -> Any:
    from publisher.clock import ClockConfig
    from publisher.messages import GenerationConfig
    from publisher.producer import Publisher, PublisherConfig

    clock = ClockConfig(anchor=dt.datetime.now(dt.UTC), window_days=3)
    config = PublisherConfig(
        generation=GenerationConfig(seed=seed, clock=clock, **generation),
        ledger_dir=ledger_dir,
        progress=False,
    )
    return Publisher(stack.bootstrap_servers, _TOPIC, config).publish(_COUNT)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``demo`` on the entry point's sub-parsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "demo", help="walk through the kit", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--no-provision", action="store_true", help="do not check the cache first")
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Provision (unless told not to), then run the walkthrough on the configured stack."""
    from harness.cli.stack import prepared_stack

    return run_demo(prepared_stack(args))


def run_demo(stack: Stack) -> int:
    """Run the walkthrough on `stack`; returns the process exit code."""
    from harness.loader_process import LoaderProcess, LoaderSettings
    from harness.scenarios.history import History
    from publisher.ledger import Ledger

    say("[bold]1. Start Kafka, MinIO, the Iceberg REST catalog and Trino[/]")
    stack.up()
    conn = stack.trino_connection()

    say(f"\n[bold]2. Create the reference table {_TABLE} through Trino, and the topics[/]")
    sql.run(conn, f"CREATE SCHEMA IF NOT EXISTS {LAKE}.{_SCHEMA}")
    sql.run(conn, f"DROP TABLE IF EXISTS {_TABLE}")
    ddl = create_table_sql(_TABLE, EVENT_ID_COLUMN)
    say(ddl)
    sql.run(conn, ddl)
    _recreate_topics(stack)
    say(f"   topics: {_TOPIC} (3 partitions), dead letters to {_DLQ}")

    work = Path(tempfile.mkdtemp(prefix="icefloe-demo-"))
    settings = LoaderSettings(
        loader_id="demo-loader",
        table=_TABLE,
        topics=(_TOPIC,),
        dead_letter_topic=_DLQ,
        trigger_interval_s=2.0,
    )
    loader = LoaderProcess(settings, stack, work / "loader", History(work / "history.jsonl"))
    say("\n[bold]3. Start the loader (PySpark, 2 s micro-batches, exactly-once)[/]")
    took = loader.start()
    say(f"   streaming after {took:.0f} s; its log: {loader.process.log_file}")
    try:
        say(f"\n[bold]4. Publish {_COUNT:,} rows, {_MALFORMED:.0%} of them malformed[/]")
        result = _publish(stack, work, seed=7, malformed_fraction=_MALFORMED)
        ledger = Ledger.read(result.ledger_path)
        say(
            f"   sent {result.sent:,}: {result.valid:,} valid, {result.malformed:,} malformed "
            f"({result.rate:,.0f} msg/s); ledger {result.ledger_path}"
        )

        say("\n[bold]5. Watch them arrive in Trino[/]")
        seconds = _wait_for_rows(stack, result.valid)
        rows = sql.run(conn, f"SELECT count(*), count(DISTINCT event_id) FROM {_TABLE}")[0][1]
        total, distinct = rows[0]
        ok = total == distinct == len(ledger.valid_event_ids())
        say(
            f"   {total:,} rows, {distinct:,} distinct event ids, ledger says "
            f"{len(ledger.valid_event_ids()):,} valid: "
            + ("[green]exactly once[/]" if ok else "[red]MISMATCH[/]")
            + f" (all visible {seconds:.0f} s after the last publish)"
        )
        sql.run_and_print(
            conn,
            f'SELECT event_id, "integer", nested, "timestamp" '
            f'FROM {_TABLE} ORDER BY "timestamp" DESC LIMIT 5',
        )

        say("\n[bold]6. Where the malformed messages went, and why[/]")
        letters = _dead_letters(stack, result.malformed)
        say(f"   {len(letters)} dead letters in {_DLQ} (the ledger says {result.malformed})")
        for headers in letters[:8]:
            source = "/".join(
                headers.get(k, "?")
                for k in (keys.DLQ_SOURCE_TOPIC, keys.DLQ_SOURCE_PARTITION, keys.DLQ_SOURCE_OFFSET)
            )
            kind = headers.get(keys.DLQ_ERROR_KIND, "?")
            path = headers.get(keys.DLQ_ERROR_PATH, "?")
            reason = headers.get(keys.DLQ_ERROR_REASON, "?")[:70]
            say(escape(f"   {source:24s} {kind:14s} at {path:14s} {reason}"))
        say("   The Kafka offsets each snapshot committed (the loader resumes from these):")
        sql.run_and_print(
            conn,
            f"SELECT snapshot_id, operation, element_at(summary, '{keys.OFFSETS}') AS offsets "
            f'FROM {LAKE}.{_SCHEMA}."events$snapshots" '
            f"WHERE element_at(summary, '{keys.OFFSETS}') IS NOT NULL "
            "ORDER BY committed_at DESC LIMIT 3",
        )

        say("\n[bold]7. Add a column in Trino while the loader runs[/]")
        sql.run(conn, f"ALTER TABLE {_TABLE} ADD COLUMN region VARCHAR")
        say(f"   ALTER TABLE {_TABLE} ADD COLUMN region VARCHAR; now {_COUNT:,} rows with region")
        result = _publish(stack, work, seed=8, drift=_region_drift())
        _wait_for_rows(stack, result.valid, "WHERE region IS NOT NULL")
        sql.run_and_print(
            conn,
            f"SELECT region, count(*) AS rows FROM {_TABLE} GROUP BY region ORDER BY region",
        )
        ok = ok and len(letters) == ledger.counts().get("malformed", len(letters))
    finally:
        say("\n   stopping the loader")
        loader.close()
    say(
        '\nThe stack keeps running. Query it with `.venv/bin/icefloe sql "..."`, see it with '
        "`.venv/bin/icefloe status`, stop it with `make down`."
    )
    return 0 if ok else 1


def _region_drift() -> Any:
    from publisher.drift import DriftConfig, ExtraFieldSpec

    return DriftConfig(fraction=1.0, extra_field_specs=(ExtraFieldSpec.parse('region=const:"eu"'),))
