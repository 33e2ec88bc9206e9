"""The walkthrough `make demo` runs: every promise of the kit, shown on the running stack.

1. the stack; 2. a table and its topics; 3. the loader starts; 4. rows published become
visible, and how fast; 5. exactly once against the ledger; 6. dead letters and the offsets in
each snapshot; 7. a column added while loading; 8. kill -9 mid-stream and a restart; 9. a
column dropped while loading; 10. compaction, snapshot expiry and retention; 11. a zombie
writer fenced off; 12. the loader's metrics. Each step checks what it shows; the exit code is
0 only if every check passed.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.markup import escape

from icefloe.harness import maintenance
from icefloe.harness.demo.lab import DEMO_TRIGGER_S, Lab, record
from icefloe.harness.demo.narrator import Narrator
from icefloe.harness.loaders.base import TestHooks
from icefloe.harness.machine import probe_line
from icefloe.loader import keys

TABLE = "lake.demo.events"
TOPIC = "demo.events"
STEPS = 12


@dataclass
class Story:
    """The walkthrough's state: the lab, the narrator, the checks so far."""

    lab: Lab
    out: Narrator
    record_dir: Path | None = None
    checks: list[tuple[str, bool]] = field(default_factory=list)
    measures: dict[str, str] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    seed: int = 7

    def check(self, ok: bool, text: str) -> bool:
        self.checks.append((text, ok))
        return self.out.check(ok, text)

    def next_seed(self) -> int:
        self.seed += 1
        return self.seed

    def sql(self, statement: str) -> list[Any]:
        """Print a statement, run it, return its rows."""
        self.out.sql(statement)
        return self.lab.query(statement)

    def show(self, statement: str, columns: tuple[str, ...]) -> list[Any]:
        """Print a query, run it, print its rows as a table (event ids from where they differ)."""
        rows = self.sql(statement)
        self.out.table(columns, rows, shorten=("event_id",))
        return rows

    def visible_within(self, label: str, expected: int, since: float, timeout_s: float) -> float:
        """Wait with a progress bar until ``expected`` rows are visible; seconds after ``since``."""
        self.out.wait(label, self.lab.count, total=expected, timeout_s=timeout_s, poll_s=0.25)
        return time.monotonic() - since

    def exactly_once(self, what: str) -> bool:
        """Compare the table with every ledger so far (less what retention deleted)."""
        verdict = self.lab.rows_verdict(may_be_absent=self.deleted)
        deleted = f" less {len(self.deleted):,} deleted by retention" if self.deleted else ""
        return self.check(
            verdict.exactly_once,
            f"{what}: {verdict.rows:,} rows, {verdict.distinct:,} distinct ids; the ledgers "
            f"sent {verdict.expected:,} valid{deleted}: {len(verdict.lost)} lost, "
            f"{len(verdict.duplicated)} duplicated, {len(verdict.unexpected)} unexpected",
        )


CATALOG_NAMES = {
    "rest": "the Iceberg REST catalog",
    "glue": "a Glue-compatible catalog (ministack's Glue)",
}
"""How the walkthrough names each kind of catalog the stack can run."""


def _stack_step(story: Story) -> None:
    out, stack = story.out, story.lab.stack
    out.step(
        "The stack",
        f"Kafka, MinIO (S3), {CATALOG_NAMES[stack.config.catalog]} and Trino running as local"
        " processes.",
        "every claim that follows is checked on real services, through the SQL a user runs.",
    )
    stack.up()
    rows = []
    for status in stack.status():
        state = "healthy" if status.healthy else "down"
        ports = ",".join(map(str, status.ports))
        rows.append((status.name, ports, state, f"{status.rss_bytes / 2**20:.0f} MiB"))
    out.table(("service", "ports (127.0.0.1)", "state", "memory"), rows)
    story.check(stack.healthy(), "all four services answer")


def _setup_step(story: Story) -> None:
    out, lab = story.out, story.lab
    out.step(
        "A table and its topics",
        f"the reference table {lab.table} made through Trino; topic {lab.topic} with "
        f"{lab.partitions} partitions and a dead-letter topic for what cannot be loaded.",
        "the loader writes into a table a user owns and reads from topics that exist: it "
        "creates neither, the same as in production.",
    )
    for statement in lab.setup_statements():
        out.sql(statement)
    out.say(
        f"$ icefloe topic create {lab.topic} --partitions {lab.partitions}\n"
        f"$ icefloe topic create {lab.dead_letter_topic} --max-message-bytes 16MiB"
    )
    lab.reset()
    story.check(lab.count() == 0, f"{lab.table} exists and is empty")


def _loader_step(story: Story) -> Any:
    out, lab = story.out, story.lab
    out.step(
        "The loader starts",
        "the PySpark streaming loader, configured from the stack: 2 s micro-batches, one "
        "Iceberg snapshot per batch, a dead-letter topic, a 10 s lease on the table.",
        "its whole configuration is one file generated from the stack's endpoints; the S3 "
        "secret reaches it through its environment, never a file or a command line.",
    )
    loader = lab.loader("demo-loader")
    _, took = out.run("starting Spark and the streaming query", loader.start)
    out.code(lab.loader_config_text(loader), "toml")
    out.say(f"started in {took:.0f} s; its log: {loader.process.log_file}")
    began = time.monotonic()
    warm = lab.publish(20, story.next_seed())
    first = story.visible_within("first batch (the JVM warms up)", warm.valid, began, 300)
    out.say(f"the first 20 rows were visible {first:.1f} s after they were sent")
    story.measures["first batch visible"] = f"{first:.1f} s"
    return loader


def _publish_step(story: Story) -> None:
    out, lab = story.out, story.lab
    count, rate = 2_000, 250.0
    out.step(
        "Rows arrive while they are published",
        f"{count:,} rows at {rate:.0f} msg/s, 2 % of them malformed; the bar counts the rows "
        "Trino can see while the publisher is still sending.",
        "near-real-time means a row is queryable seconds after it is published, not after a "
        "nightly job.",
    )
    before = lab.count()
    finished: list[float] = []
    future = lab.publish_later(count, story.next_seed(), rate=rate, malformed_fraction=0.02)
    future.add_done_callback(lambda _: finished.append(time.time()))
    samples: list[tuple[float, int]] = []

    def visible() -> int:
        seen = lab.count() - before
        samples.append((time.time(), seen))
        return seen

    def valid() -> int | None:
        return future.result().valid if future.done() else None

    out.wait("rows visible in Trino", visible, total=valid, timeout_s=300, poll_s=0.25)
    result = future.result()
    lag = samples[-1][0] - finished[0]
    out.say(
        f"sent {result.sent:,} in {result.elapsed:.1f} s: {result.valid:,} valid, "
        f"{result.malformed:,} malformed"
    )
    load = os.getloadavg()[0]
    out.say(
        f"[bold]every valid row visible {lag:.1f} s after the last was sent[/] "
        f"({DEMO_TRIGGER_S:g} s batches; load average {load:.1f} on {os.cpu_count()} cores)"
    )
    story.measures["visible after the last publish"] = f"{lag:.1f} s (load {load:.1f})"
    sent = sorted(
        e.timestamp / 1000 for e in lab.read_ledgers()[-1].valid() if e.timestamp is not None
    )
    start = sent[0] if sent else 0.0
    record(
        story.record_dir,
        "freshness",
        {
            "rate": rate,
            "valid": result.valid,
            "trigger_interval_s": DEMO_TRIGGER_S,
            "visible_after_last_publish_s": round(lag, 2),
            "load_average": round(load, 1),
            "published": [round(t - start, 3) for t in sent],
            "visible": [(round(t - start, 2), n) for t, n in samples],
        },
    )


def _exactly_once_step(story: Story) -> None:
    out, lab = story.out, story.lab
    out.step(
        "Exactly once, against the ledger",
        "the publisher kept a ledger of every message Kafka acknowledged; the table is "
        "compared with it id by id.",
        "'no row lost, none twice' is a claim that needs the list of what was sent to check.",
    )
    story.show(
        f"SELECT count(*) AS rows, count(DISTINCT event_id) AS ids FROM {lab.table}",
        ("rows", "distinct ids"),
    )
    story.exactly_once("table vs ledger")
    story.show(
        f'SELECT event_id, "integer", "string", "timestamp" FROM {lab.table} '
        'ORDER BY "timestamp" DESC LIMIT 5',
        ("event_id", "integer", "string", "timestamp"),
    )


def _dead_letter_step(story: Story) -> None:
    out, lab = story.out, story.lab
    out.step(
        "Where the malformed messages went, and why",
        f"every malformed message is in {lab.dead_letter_topic} with the reason, the JSON "
        "path and its source partition and offset; each snapshot records the next Kafka "
        "offset of every partition.",
        "bad input loses nothing and explains itself; the offsets in the table are what the "
        "loader resumes from after any crash.",
    )
    letters, verdict = lab.dead_letters()
    rows = []
    for headers in letters[:6]:
        source = f"{headers.get(keys.DLQ_SOURCE_PARTITION)}/{headers.get(keys.DLQ_SOURCE_OFFSET)}"
        rows.append(
            (
                source,
                headers.get(keys.DLQ_ERROR_KIND, ""),
                headers.get(keys.DLQ_ERROR_PATH, ""),
                headers.get(keys.DLQ_ERROR_REASON, "")[:48],
            )
        )
    out.table(("partition/offset", "kind", "path", "reason"), rows)
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(verdict.kinds.items()))
    out.say(f"by kind: {kinds}")
    story.check(
        verdict.complete,
        f"{verdict.distinct:,} dead letters for the {verdict.expected:,} malformed messages "
        f"sent: {len(verdict.lost)} missing, {len(verdict.misrouted)} valid among them",
    )
    schema, name = lab.table.split(".", 1)[1].split(".")
    story.show(
        f"SELECT snapshot_id, element_at(summary, '{keys.OFFSETS}') AS offsets "
        f'FROM lake.{schema}."{name}$snapshots" '
        f"WHERE element_at(summary, '{keys.OFFSETS}') IS NOT NULL "
        "ORDER BY committed_at DESC LIMIT 3",
        ("snapshot", "next offsets"),
    )


def _add_column_step(story: Story) -> None:
    out, lab = story.out, story.lab
    out.step(
        "A column added while the loader runs",
        "ALTER TABLE ... ADD COLUMN in Trino, then rows carrying the new field.",
        "schemas change under running pipelines; the loader reads the schema at every batch, "
        "so no restart and no lost field.",
    )
    story.sql(f"ALTER TABLE {lab.table} ADD COLUMN region VARCHAR")
    before = lab.count()
    result = lab.publish(500, story.next_seed(), extra_fields={"region": 'const:"eu"'})
    began = time.monotonic()
    story.visible_within("rows with region", before + result.valid, began, 240)
    rows = story.show(
        f"SELECT region, count(*) AS rows FROM {lab.table} GROUP BY region ORDER BY region",
        ("region", "rows"),
    )
    with_region = sum(n for region, n in rows if region == "eu")
    story.check(with_region == result.valid, f"{with_region} rows carry region = 'eu'")


def _kill_step(story: Story, loader: Any) -> Any:
    out, lab = story.out, story.lab
    count = 3_000
    out.step(
        "kill -9 in the middle of a stream",
        f"{count:,} rows at 300 msg/s; once some have landed the loader and its JVM get "
        "SIGKILL, with batches in flight; then it starts again.",
        "a crash must not lose the batch in flight nor load it twice: the offsets committed "
        "with the rows decide where it resumes, not Spark's checkpoint.",
    )
    before = lab.count()
    future = lab.publish_later(count, story.next_seed(), rate=300.0)
    out.wait("until a batch of the stream lands", lambda: 1 if lab.count() > before else None)
    pid = loader.kill()
    at_kill = lab.count() - before
    out.say(f"SIGKILL to pid {pid} (and its JVM) with {at_kill:,} of {count:,} rows visible")
    restarted = lab.loader("demo-loader")
    _, took = out.run("restarting the loader while the stream goes on", restarted.start)
    out.say(f"restarted in {took:.0f} s; it resumes from the offsets in the table")
    result = future.result()
    story.visible_within("rows after the restart", before + result.valid, time.monotonic(), 300)
    story.exactly_once("after kill -9 and restart")
    return restarted


def _drop_column_step(story: Story) -> None:
    out, lab = story.out, story.lab
    out.step(
        "A column dropped while rows stream in",
        "ALTER TABLE ... DROP COLUMN region in the middle of a stream of 1,000 rows.",
        "dropping a column must not stop loading, nor fail rows that still carry it.",
    )
    before = lab.count()
    future = lab.publish_later(
        1_000, story.next_seed(), rate=200.0, extra_fields={"region": 'const:"eu"'}
    )
    out.wait("until the stream is flowing", lambda: 1 if lab.count() > before else None)
    story.sql(f"ALTER TABLE {lab.table} DROP COLUMN region")
    result = future.result()
    story.visible_within("rows after the drop", before + result.valid, time.monotonic(), 240)
    columns = [row[0] for row in lab.query(f"SHOW COLUMNS FROM {lab.table}")]
    story.check("region" not in columns, "region is gone from the table")
    story.exactly_once("after the drop")


def _maintenance_step(story: Story) -> None:
    out, lab = story.out, story.lab
    out.step(
        "Compaction, snapshot expiry and retention",
        "`icefloe maintain` runs the reference design's SQL through Trino while the loader "
        "keeps running: data files, snapshots and rows before and after.",
        "one snapshot per micro-batch means many small files and a long history; without "
        "upkeep reads slow down and storage grows.",
    )
    steps: list[tuple[str, Callable[..., maintenance.MaintenanceResult], dict[str, Any]]] = [
        ("optimize", maintenance.optimize, {}),
        ("expire_snapshots", maintenance.expire_snapshots, {"retention": dt.timedelta(0)}),
        (
            "retention",
            maintenance.retention_delete,
            {"older_than": dt.timedelta(days=2), "whole_days": True},
        ),
    ]
    recorded = []
    for label, operation, options in steps:
        if label == "retention":
            cutoff = _cutoff(options["older_than"])
            keep = lab.count(f"WHERE \"timestamp\" >= TIMESTAMP '{cutoff}'")
            story.deleted |= {
                row[0]
                for row in lab.query(
                    f"SELECT event_id FROM {lab.table} WHERE \"timestamp\" < TIMESTAMP '{cutoff}'"
                )
            }
        result = lab.maintain(operation, **options)
        out.sql(result.statement)
        before, after = result.before, result.after
        out.table(
            ("", "data files", "delete files", "snapshots", "bytes", "rows"),
            [
                ("before", before.data_files, before.delete_files, before.snapshots,
                 f"{before.bytes:,}", f"{before.rows:,}"),
                ("after", after.data_files, after.delete_files, after.snapshots,
                 f"{after.bytes:,}", f"{after.rows:,}"),
            ],
        )  # fmt: skip
        recorded.append({"operation": label, "before": vars(before), "after": vars(after)})
        if label == "optimize":
            story.check(
                after.data_files < before.data_files and after.rows == before.rows,
                f"optimize: {before.data_files} data files -> {after.data_files}, same rows",
            )
        elif label == "expire_snapshots":
            story.check(
                after.snapshots < before.snapshots,
                f"expire_snapshots: {before.snapshots} snapshots -> {after.snapshots}",
            )
        else:
            old = lab.count(f"WHERE \"timestamp\" < TIMESTAMP '{cutoff}'")
            story.check(
                old == 0 and after.rows == keep,
                f"retention: rows before {cutoff} deleted ({before.rows - after.rows:,}), "
                f"the {keep:,} newer ones kept",
            )
    record(story.record_dir, "maintenance", recorded)
    rows_now = lab.count()
    more = lab.publish(300, story.next_seed())
    story.visible_within("the loader carries on", rows_now + more.valid, time.monotonic(), 240)
    story.exactly_once("after maintenance, 300 more rows")


def _cutoff(older_than: dt.timedelta) -> str:
    moment = (dt.datetime.now(dt.UTC) - older_than).replace(hour=0, minute=0, second=0)
    return moment.strftime("%Y-%m-%d 00:00:00.000000 UTC")


def _zombie_step(story: Story, loader: Any) -> Any:
    out, lab = story.out, story.lab
    out.step(
        "A zombie writer is fenced off",
        "the loader freezes itself (SIGSTOP) holding a written batch it has not published; its "
        "lease runs out, a second loader takes the table over; then the first is thawed.",
        "a long GC pause or a frozen VM wakes a writer that still believes it owns the table: "
        "the catalog must refuse its stale commit, or rows land twice.",
    )
    out.run("stopping the loader (SIGTERM: the batch in progress finishes)", loader.stop)
    zombie = lab.loader("demo-loader", TestHooks(pause_at="publish", pause_after_commits=0))
    out.run("starting loader A, set to freeze before its first publish", zombie.start)
    before = lab.count()
    future = lab.publish_later(1_000, story.next_seed(), rate=250.0, malformed_fraction=0.02)
    out.wait("until A freezes with its batch staged", lambda: 1 if zombie.frozen() else None)
    out.say(
        f"loader A (pid {zombie.process.pid}) is frozen; {lab.count() - before} new rows visible"
    )
    expires = lab.lease_expires()
    out.wait(
        "A's lease runs out",
        lambda: 1 if time.time() > expires + 1.5 else None,
        timeout_s=120,
    )
    successor = lab.loader("demo-loader-b")
    out.run("starting loader B (another loader id)", successor.start)
    result = future.result()
    story.visible_within("B loads the stream", before + result.valid, time.monotonic(), 300)
    code, _ = out.run("thawing A: it must step down", zombie.retire)
    tail = zombie.log_tail(40)
    fenced = next((line for line in tail.splitlines() if "Fenced" in line), "")
    out.say(f"[dim]{escape(fenced.strip())}[/]")
    story.check(code == 3, f"A exited with code {code} (3: fenced, another loader owns the table)")
    story.check(successor.is_running(), "B is still loading")
    story.exactly_once("after the zombie woke")
    return successor


def _metrics_step(story: Story, loader: Any) -> None:
    out, lab = story.out, story.lab
    out.step(
        "The loader's metrics",
        f"its Prometheus endpoint, 127.0.0.1:{lab.metrics_port(loader)}/metrics: lag per "
        "partition, freshness, rows written, dead letters by reason.",
        "an operator sees lag and freshness on a dashboard long before a user notices stale data.",
    )
    out.wait(
        "lag and freshness refresh every 5 s",
        lambda: 1 if _caught_up(lab, loader) else None,
        timeout_s=60,
    )
    wanted = (
        "icefloe_loader_consumer_lag",
        "icefloe_loader_freshness_seconds",
        "icefloe_loader_rows_written_total",
        "icefloe_loader_dead_lettered_total",
    )
    rows = [
        (name.removeprefix("icefloe_loader_"), ", ".join(f"{k}={v}" for k, v in labels.items()),
         f"{value:g}")
        for name, labels, value in lab.metrics(loader)
        if name in wanted
    ]  # fmt: skip
    out.table(("icefloe_loader_...", "labels", "value"), rows)
    lags = [value for name, _, value in lab.metrics(loader) if name == wanted[0]]
    story.check(bool(lags) and max(lags) == 0, "lag is 0 on every partition: caught up")


def _caught_up(lab: Lab, loader: Any) -> bool:
    try:
        lags = [v for name, _, v in lab.metrics(loader) if name == "icefloe_loader_consumer_lag"]
    except OSError:
        return False
    return bool(lags) and max(lags) == 0


def run_story(
    stack: Any, work: Path, *, pause: bool, record_dir: Path | None, out: Narrator
) -> int:
    """Run every step on ``stack``; returns 0 when every check passed.

    Args:
        stack: the stack (brought up by the first step).
        work: where ledgers and loader state go.
        pause: wait for Enter between steps.
        record_dir: where to write the measurements the workshop's pictures are drawn from.
        out: the narrator.
    """
    lab = Lab(stack, work, TABLE, TOPIC)
    story = Story(lab, out, record_dir)
    out.say(probe_line())  # the machine's speed today, beside every time below
    began = time.monotonic()
    try:
        _stack_step(story)
        _setup_step(story)
        loader = _loader_step(story)
        _publish_step(story)
        _exactly_once_step(story)
        _dead_letter_step(story)
        _add_column_step(story)
        loader = _kill_step(story, loader)
        _drop_column_step(story)
        _maintenance_step(story)
        loader = _zombie_step(story, loader)
        _metrics_step(story, loader)
    finally:
        lab.close()
    failed = [text for text, ok in story.checks if not ok]
    out.say("")
    out.say(
        f"[bold]{len(story.checks) - len(failed)} of {len(story.checks)} checks passed[/] "
        f"in {time.monotonic() - began:.0f} s."
    )
    out.say(
        "time per step: "
        + ", ".join(f"{i} {seconds:.0f} s" for i, (_, seconds) in enumerate(out.step_times(), 1))
    )
    out.say(probe_line("probe at the end"))
    for text in failed:
        out.say(f"[red]failed:[/] {text}")
    for name, value in story.measures.items():
        out.say(f"measured: {name}: {value}")
    out.say(
        f'The stack keeps running: query the table with `.venv/bin/icefloe sql "SELECT ... '
        f'FROM {TABLE}"`; stop everything with `make down`.'
    )
    return 0 if not failed else 1
