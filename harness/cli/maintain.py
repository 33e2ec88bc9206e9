"""`icefloe maintain optimize|expire-snapshots|remove-orphans|retention TABLE`: table upkeep.

Each runs the reference design's statement through Trino (`harness.maintenance`) and prints
it with the table's data files, delete files, snapshots, bytes and rows before and after. All
are safe while a loader writes the table: the loader plans a batch again when maintenance moved
the table between its plan and its commit. `--every 10m` repeats the operation on that schedule
until stopped (Ctrl-C), `--times N` stops after N runs.

    icefloe maintain optimize lake.demo.events
    icefloe maintain expire-snapshots lake.demo.events --older-than 7d
    icefloe maintain remove-orphans lake.demo.events --older-than 1h
    icefloe maintain retention lake.demo.events --older-than 30d
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
from collections.abc import Callable
from typing import Any

from icefloe.harness import maintenance
from icefloe.harness.console import print_table, say
from icefloe.publisher.topics import parse_duration_ms

_OPERATIONS = {
    "optimize": "compact small data files (ALTER TABLE ... EXECUTE optimize)",
    "expire-snapshots": "drop snapshots older than --older-than, and files only they use",
    "remove-orphans": "delete files no snapshot references, older than --older-than",
    "retention": "DELETE rows whose timestamp is older than --older-than",
}
_DEFAULT_OLDER_THAN = {"expire-snapshots": "7d", "remove-orphans": "7d"}


def _duration(text: str) -> dt.timedelta:
    try:
        ms = parse_duration_ms(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if ms < 0:
        raise argparse.ArgumentTypeError(f"expected a duration like 7d, 12h or 30m: {text!r}")
    return dt.timedelta(milliseconds=ms)


def operation(args: argparse.Namespace) -> Callable[[maintenance.Query, str], Any]:
    """The maintenance function the arguments name, with its options bound."""
    name = args.operation
    if name == "optimize":
        return lambda query, table: maintenance.optimize(
            query, table, file_size_threshold=args.file_size_threshold
        )
    older_than = args.older_than
    if older_than is None:
        older_than = _duration(_DEFAULT_OLDER_THAN[name])
    if name == "expire-snapshots":
        return lambda query, table: maintenance.expire_snapshots(query, table, retention=older_than)
    if name == "remove-orphans":
        return lambda query, table: maintenance.remove_orphan_files(
            query, table, retention=older_than
        )
    return lambda query, table: maintenance.retention_delete(
        query, table, older_than=older_than, column=args.column, whole_days=not args.exact
    )


def print_result(result: maintenance.MaintenanceResult) -> None:
    """The statement, then the footprint before and after, with the change."""
    say(f"[bold]{result.operation}[/] on {result.table} ({result.seconds:.1f} s)")
    say(f"  SQL> {result.statement}")
    before, after = result.before, result.after
    rows = []
    for label, attr in (
        ("data files", "data_files"),
        ("delete files", "delete_files"),
        ("snapshots", "snapshots"),
        ("bytes", "bytes"),
        ("rows", "rows"),
    ):
        old, new = getattr(before, attr), getattr(after, attr)
        rows.append((label, f"{old:,}", f"{new:,}", f"{new - old:+,}"))
    print_table(("", "before", "after", "change"), rows)


def run(args: argparse.Namespace) -> int:
    """Run the operation once, or on a schedule until stopped."""
    from icefloe.harness.cli.stack import open_stack

    if args.operation == "retention" and args.older_than is None:
        raise ValueError("retention needs --older-than (how much history to keep), e.g. 30d")
    stack = open_stack(args)
    run_once = operation(args)
    done = 0
    while True:
        print_result(run_once(stack.query, args.table))
        done += 1
        if args.every is None or (args.times is not None and done >= args.times):
            return 0
        say(f"  next run in {args.every}; Ctrl-C stops")
        time.sleep(args.every.total_seconds())


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``maintain`` and its operations on the entry point's sub-parsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "maintain",
        help="optimize, expire snapshots, remove orphan files, retention DELETE",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    operations = parser.add_subparsers(dest="operation", required=True)
    for name, help_ in _OPERATIONS.items():
        sub = operations.add_parser(name, help=help_, description=help_)
        sub.add_argument("table", help="catalog.schema.table")
        if name == "optimize":
            sub.add_argument(
                "--file-size-threshold", help="only rewrite files below this size, e.g. 128MB"
            )
        else:
            default = _DEFAULT_OLDER_THAN.get(name)
            sub.add_argument(
                "--older-than",
                type=_duration,
                required=default is None,
                help="e.g. 30d, 12h, 0s" + (f" (default {default})" if default else ""),
            )
        if name == "retention":
            sub.add_argument(
                "--column", default="timestamp", help="the event-time column (timestamp)"
            )
            sub.add_argument(
                "--exact",
                action="store_true",
                help="cut at now minus --older-than to the microsecond; by default the cutoff "
                "is rounded down to midnight UTC, so whole day partitions go and no delete "
                "files are written",
            )
        sub.add_argument("--every", type=_duration, help="repeat on this schedule, e.g. 10m")
        sub.add_argument("--times", type=int, help="with --every: stop after this many runs")
        sub.set_defaults(func=run)
    return parser
