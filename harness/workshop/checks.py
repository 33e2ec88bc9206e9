"""One check per workshop module: were its exercises done, on the running stack?

A check reads what the exercises leave behind (topics, the table's columns and snapshots, the
publisher's ledgers, the dead-letter topic, the background loaders' histories and logs) and
returns findings: each says what it looked for and, when it is missing, what to do. A check
passes when every finding is ok. `icefloe workshop check N` prints them; the workshop test
runs every module's commands and requires its check to fail before and pass after.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from icefloe.harness import verify
from icefloe.harness.workshop import DEAD_LETTER_TOPIC, LOADER, SUCCESSOR, TABLE, TOPIC
from icefloe.loader import keys
from icefloe.loader.io.deadletter import DEAD_LETTER_MAX_BYTES
from icefloe.publisher import topics
from icefloe.publisher.producer import DEFAULT_LEDGER_DIR

__all__ = ["CHECKS", "Finding", "Workbench", "run_check"]


@dataclass(frozen=True)
class Finding:
    """One thing a check looked for.

    Attributes:
        ok: whether it is there.
        what: what was looked for, and what was found.
        todo: what to do when it is not there (the module's exercise that makes it).
    """

    ok: bool
    what: str
    todo: str = ""


@dataclass
class Workbench:
    """What the checks read: the stack, and the folder the trainee runs commands from.

    Attributes:
        stack: the running stack.
        ledger_dir: where `icefloe publish` wrote its ledgers (`.run/ledgers` of that folder).
    """

    stack: Any
    ledger_dir: Path = DEFAULT_LEDGER_DIR

    def query(self, statement: str) -> list[Any]:
        return list(self.stack.query(statement))

    def table_exists(self) -> bool:
        catalog, schema, name = TABLE.split(".")
        rows = self.query(
            f"SELECT count(*) FROM {catalog}.information_schema.tables "
            f"WHERE table_schema = '{schema}' AND table_name = '{name}'"
        )
        return bool(rows[0][0])

    def columns(self) -> list[str]:
        catalog, schema, name = TABLE.split(".")
        return [
            row[0]
            for row in self.query(
                f"SELECT column_name FROM {catalog}.information_schema.columns "
                f"WHERE table_schema = '{schema}' AND table_name = '{name}'"
            )
        ]

    def snapshots(self) -> list[tuple[dt.datetime, str, dict[str, str]]]:
        """(committed at, operation, summary) of every snapshot the table keeps, oldest first."""
        catalog, schema, name = TABLE.split(".")
        rows = self.query(
            f'SELECT committed_at, operation, summary FROM {catalog}.{schema}."{name}$snapshots" '
            "ORDER BY committed_at"
        )
        return [(row[0], row[1], dict(row[2] or {})) for row in rows]

    def ledgers(self) -> list[Any]:
        return verify.read_ledgers(verify.ledger_files(TOPIC, self.ledger_dir))

    def rows(self, ledgers: list[Any]) -> verify.RowVerdict:
        expected = set().union(*(ledger.valid_event_ids() for ledger in ledgers))
        found = verify.table_event_ids(self.stack.query, TABLE)
        return verify.compare_rows(found, expected)

    def lease(self) -> Any:
        from icefloe.loader.commit.lease import lease_from_properties

        name = TABLE.split(".", 1)[1]
        table = self.stack.pyiceberg_catalog().load_table(name)
        return lease_from_properties(table.properties)

    def loader_dir(self, name: str) -> Path:
        from icefloe.harness.loaders.background import loaders_dir

        return loaders_dir(self.stack) / name


def _published(bench: Workbench) -> tuple[list[Any], Finding]:
    ledgers = bench.ledgers()
    return ledgers, Finding(
        bool(ledgers),
        f"{len(ledgers)} ledger(s) of {TOPIC} in {bench.ledger_dir}",
        f"publish to {TOPIC} with `icefloe publish` from the repository's folder (module 2)",
    )


def _exactly_once(bench: Workbench, ledgers: list[Any]) -> Finding:
    verdict = bench.rows(ledgers)
    return Finding(
        bool(ledgers) and verdict.exactly_once,
        f"{TABLE} holds every valid message published exactly once: {verdict.rows:,} rows, "
        f"{len(verdict.lost)} lost, {len(verdict.duplicated)} duplicated, "
        f"{len(verdict.unexpected)} unexpected",
        "wait for the loader to catch up (`icefloe verify ... --wait 300`); if rows are lost, "
        "is a loader running (`icefloe loader status`)?",
    )


def check_stack(bench: Workbench) -> list[Finding]:
    """Module 1: the stack answers; the topics and the table exist as the module made them."""
    findings = [
        Finding(bench.stack.healthy(), "all four services are healthy", "`make up`"),
    ]
    bootstrap = bench.stack.bootstrap_servers
    partitions = topics.partition_count(bootstrap, TOPIC)
    findings.append(
        Finding(
            partitions == 3,
            f"topic {TOPIC} with 3 partitions (found: {partitions or 'no topic'})",
            f"`icefloe topic create {TOPIC} --partitions 3`",
        )
    )
    limit = None
    if topics.partition_count(bootstrap, DEAD_LETTER_TOPIC) is not None:
        limit = topics.describe_topic(bootstrap, DEAD_LETTER_TOPIC).max_message_bytes
    findings.append(
        Finding(
            limit is not None and limit >= DEAD_LETTER_MAX_BYTES,
            f"topic {DEAD_LETTER_TOPIC} taking records of 16 MiB (found: "
            f"{'no topic' if limit is None else f'{limit:,} bytes'})",
            f"`icefloe topic create {DEAD_LETTER_TOPIC} --max-message-bytes 16MiB`",
        )
    )
    exists = bench.table_exists()
    findings.append(
        Finding(
            exists and "event_id" in bench.columns(),
            f"table {TABLE} of the reference shape, with event_id",
            f"`icefloe table create {TABLE}`",
        )
    )
    return findings


def check_loader(bench: Workbench) -> list[Finding]:
    """Module 2: rows published, a loader holding the table, every row loaded once."""
    if not bench.table_exists():
        return [Finding(False, f"table {TABLE}", "do module 1 first")]
    ledgers, published = _published(bench)
    lease = bench.lease()
    now_ms = dt.datetime.now(dt.UTC).timestamp() * 1000
    live = lease is not None and lease.expires_ms > now_ms
    offsets = [s for s in bench.snapshots() if keys.OFFSETS in s[2]]
    return [
        published,
        Finding(
            live,
            f"a loader holds the table's lease ({lease.owner if lease else 'none'})",
            f"`icefloe loader start --table {TABLE} --kafka-topics {TOPIC} ...` (module 2)",
        ),
        Finding(
            bool(offsets),
            f"{len(offsets)} snapshot(s) carry the Kafka offsets they load up to",
            "wait for the loader's first batch",
        ),
        _exactly_once(bench, ledgers),
    ]


def check_schema(bench: Workbench) -> list[Finding]:
    """Module 3: region added and carried by rows; floatings dropped; loading went on."""
    if not bench.table_exists():
        return [Finding(False, f"table {TABLE}", "do modules 1 and 2 first")]
    columns = bench.columns()
    carried = 0
    if "region" in columns:
        carried = int(bench.query(f"SELECT count(*) FROM {TABLE} WHERE region = 'eu'")[0][0])
    ledgers = bench.ledgers()
    return [
        Finding(
            "region" in columns,
            "column region in the table",
            f'`icefloe sql "ALTER TABLE {TABLE} ADD COLUMN region VARCHAR"`',
        ),
        Finding(
            carried > 0,
            f"{carried} rows carry region = 'eu'",
            "publish rows with `--extra-field 'region=const:\"eu\"'` once the column exists",
        ),
        Finding(
            "floatings" not in columns,
            "column floatings dropped",
            f'`icefloe sql "ALTER TABLE {TABLE} DROP COLUMN floatings"`',
        ),
        _exactly_once(bench, ledgers),
    ]


DEAD_LETTER_KINDS = ("invalid_json", "type_mismatch", "out_of_range")
"""The error kinds module 4's malformations make the loader report."""


def check_bad_data(bench: Workbench) -> list[Finding]:
    """Module 4: dead letters of the asked kinds, every malformed message among them."""
    ledgers = bench.ledgers()
    try:
        letters = verify.read_dead_letters(bench.stack, DEAD_LETTER_TOPIC)
    except LookupError:
        return [Finding(False, f"topic {DEAD_LETTER_TOPIC}", "do module 1 first")]
    verdict = verify.compare_dead_letters(letters, ledgers)
    findings = [
        Finding(
            verdict.kinds.get(kind, 0) > 0,
            f"dead letters of kind {kind}: {verdict.kinds.get(kind, 0)}",
            "publish with `--malformed-fraction 0.2 --malformed-kinds "
            "truncated_json,bool_as_string,bigint_out_of_range` (module 4)",
        )
        for kind in DEAD_LETTER_KINDS
    ]
    findings.append(
        Finding(
            verdict.complete,
            f"every malformed message published is in {DEAD_LETTER_TOPIC}: "
            f"{len(verdict.lost)} missing, {len(verdict.misrouted)} valid among them",
            "is the loader running with `--dead-letter-topic`? wait for it to catch up",
        )
    )
    findings.append(_exactly_once(bench, ledgers))
    return findings


def _history(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def check_faults(bench: Workbench) -> list[Finding]:
    """Module 5: a kill -9 and a restart; a zombie fenced off; nothing lost or doubled."""
    events = _history(bench.loader_dir(LOADER) / "history.jsonl")
    names = [(e["kind"], e["phase"], e["name"]) for e in events]
    killed = [i for i, n in enumerate(names) if n == ("loader", "info", "killed")]
    restarted = bool(killed) and ("loader", "ok", "start") in names[killed[0] + 1 :]
    log = bench.loader_dir(LOADER) / "loader.log"
    fenced = log.exists() and "fenced off" in log.read_text(errors="replace")
    lease = bench.lease() if bench.table_exists() else None
    ledgers = bench.ledgers()
    return [
        Finding(
            bool(killed),
            f"loader {LOADER!r} was killed with kill -9 ({len(killed)} time(s))",
            "`icefloe loader kill` while rows are being published (module 5)",
        ),
        Finding(restarted, "and started again after it", "`icefloe loader start`"),
        Finding(
            fenced,
            f"loader {LOADER!r} was fenced off after a freeze past its lease",
            "`icefloe loader freeze`, wait for the lease, start a second loader, "
            "`icefloe loader thaw` (module 5)",
        ),
        Finding(
            lease is not None and lease.owner != "icefloe-" + LOADER,
            f"another loader owns the table now ({lease.owner if lease else 'nobody'})",
            f"`icefloe loader start --name {SUCCESSOR} --loader-id workshop-{SUCCESSOR} ...`",
        ),
        _exactly_once(bench, ledgers),
    ]


def check_maintenance(bench: Workbench) -> list[Finding]:
    """Module 6: compaction, snapshots older than it expired, a retention DELETE, no doubles."""
    if not bench.table_exists():
        return [Finding(False, f"table {TABLE}", "do modules 1 and 2 first")]
    snapshots = bench.snapshots()
    replaced = [s for s in snapshots if s[1] == "replace"]
    older = [s for s in snapshots if replaced and s[0] < replaced[0][0]]
    deleted = [s for s in snapshots if s[1] in ("delete", "overwrite")]
    cutoff = (dt.datetime.now(dt.UTC) - dt.timedelta(days=2)).strftime("%Y-%m-%d")
    old = int(
        bench.query(
            f"SELECT count(*) FROM {TABLE} WHERE \"timestamp\" < TIMESTAMP '{cutoff} 00:00:00 UTC'"
        )[0][0]
    )
    rows, distinct = bench.query(f"SELECT count(*), count(DISTINCT event_id) FROM {TABLE}")[0]
    return [
        Finding(
            bool(replaced),
            f"a compaction snapshot (operation replace): {len(replaced)}",
            f"`icefloe maintain optimize {TABLE}`",
        ),
        Finding(
            bool(replaced) and not older,
            f"no snapshot older than the first compaction ({len(older)} left)",
            f"`icefloe maintain expire-snapshots {TABLE} --older-than 0s` after optimize",
        ),
        Finding(
            bool(deleted) and old == 0,
            f"a retention DELETE: {len(deleted)} delete snapshot(s), {old} rows before {cutoff}",
            f"`icefloe maintain retention {TABLE} --older-than 2d`",
        ),
        Finding(
            rows == distinct,
            f"no event id twice after maintenance ({rows:,} rows, {distinct:,} ids)",
            "",
        ),
    ]


def check_scale(bench: Workbench) -> list[Finding]:
    """Module 7: the topic grown to 6 partitions, their rows loaded, the loader caught up."""
    from icefloe.harness.loaders.config import stack_loader_config
    from icefloe.loader.run.status import read_status

    partitions = topics.partition_count(bench.stack.bootstrap_servers, TOPIC) or 0
    ledgers = bench.ledgers()
    new = {entry.event_id for ledger in ledgers for entry in ledger.valid() if entry.partition >= 3}
    found = set(verify.table_event_ids(bench.stack.query, TABLE)) if bench.table_exists() else set()
    status = read_status(stack_loader_config(bench.stack, TABLE, (TOPIC,)))
    lag = sum(p.lag or 0 for p in status.partitions)
    loaded = {p.partition for p in status.partitions if p.committed}
    return [
        Finding(
            partitions == 6,
            f"topic {TOPIC} has 6 partitions (found {partitions})",
            f"`icefloe topic grow {TOPIC} --partitions 6`",
        ),
        Finding(
            bool(new) and new <= found,
            f"rows sent to partitions 3-5 are in the table: {len(new & found)} of {len(new)}",
            "publish with `--partition-ids 3,4,5`; the loader finds new partitions by itself",
        ),
        Finding(
            partitions == 6 and loaded >= set(range(partitions)) and lag == 0,
            f"the loader committed offsets on {len(loaded)} partitions, lag {lag}",
            f"wait; `icefloe load status --table {TABLE} --kafka-topics {TOPIC}`",
        ),
    ]


CHECKS: dict[int, tuple[str, Callable[[Workbench], list[Finding]]]] = {
    1: ("the stack", check_stack),
    2: ("the loader and its configuration", check_loader),
    3: ("schema changes", check_schema),
    4: ("bad data and the dead-letter topic", check_bad_data),
    5: ("faults and exactly-once", check_faults),
    6: ("maintenance", check_maintenance),
    7: ("freshness and scaling out", check_scale),
}


def run_check(number: int, bench: Workbench) -> list[Finding]:
    """The findings of module ``number``'s check.

    Raises:
        KeyError: no such module.
    """
    return CHECKS[number][1](bench)
