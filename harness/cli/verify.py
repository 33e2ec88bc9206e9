"""`icefloe verify TABLE --topic T`: is every published message where it belongs, exactly once?

Reads the publisher's ledgers for the topic (`.run/ledgers/<topic>-*.jsonl`, or `--ledger`
files), the table's event ids through Trino and, with `--dead-letter-topic`, the dead letters'
headers from Kafka, and prints rows, distinct ids, lost, duplicated and unexpected ids, and
dead letters lost or misrouted. `--wait S` polls until nothing is lost (the loader catching
up) for at most S seconds. Exit code 0 when the table holds every valid message exactly once
(and the dead-letter topic every malformed one), else 1.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from icefloe.harness import verify
from icefloe.harness.console import print_table, say, shared_prefix
from icefloe.harness.waiting import poll
from icefloe.publisher.producer import DEFAULT_LEDGER_DIR


def _examples(ids: tuple[Any, ...], limit: int = 3) -> str:
    """A few of ``ids``, from where they differ when they share a long prefix."""
    texts = [str(i) for i in ids[:limit]]
    prefix = shared_prefix(texts)
    shown = ", ".join("…" + t[len(prefix) :] if prefix else t for t in texts)
    return (f"e.g. {shown}" + (f" (all {prefix}…)" if prefix else "")) if ids else ""


def run(args: argparse.Namespace) -> int:
    """Compare, wait if asked, print the verdict."""
    from icefloe.harness.cli.stack import open_stack

    stack = open_stack(args)
    every = verify.ledger_files(args.topic, args.ledger_dir)
    paths = [Path(p) for p in args.ledger] or every
    if not paths:
        raise FileNotFoundError(
            f"no ledger for topic {args.topic!r} in {args.ledger_dir}: publish with "
            "`icefloe publish --topic ...` from this folder, or name files with --ledger"
        )
    ledgers = verify.read_ledgers(paths)
    expected = set().union(*(ledger.valid_event_ids() for ledger in ledgers))
    published = set().union(expected, *(x.valid_event_ids() for x in verify.read_ledgers(every)))
    rows = poll(
        lambda: verify.compare_rows(
            verify.table_event_ids(stack.query, args.table), expected, published=published
        ),
        lambda rows: not rows.lost,
        timeout_s=args.wait,
        every_s=1.0,
    )
    say(f"{args.table} against {len(ledgers)} ledger(s): {', '.join(p.name for p in paths)}")
    checks = [
        ("rows in the table", f"{rows.rows:,}", ""),
        ("distinct event ids", f"{rows.distinct:,}", ""),
        ("valid messages that must be there", f"{rows.expected:,}", ""),
        ("lost", f"{len(rows.lost):,}", _examples(rows.lost)),
        ("duplicated", f"{len(rows.duplicated):,}", _examples(rows.duplicated)),
        ("unexpected", f"{len(rows.unexpected):,}", _examples(rows.unexpected)),
    ]
    ok = rows.exactly_once
    if args.dead_letter_topic:
        letters = verify.compare_dead_letters(
            verify.read_dead_letters(stack, args.dead_letter_topic), ledgers
        )
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(letters.kinds.items()))
        checks += [
            ("dead letters", f"{letters.letters:,}", kinds),
            ("malformed messages published", f"{letters.expected:,}", ""),
            ("malformed not dead-lettered", f"{len(letters.lost):,}", _examples(letters.lost)),
            ("valid but dead-lettered", f"{len(letters.misrouted):,}", ""),
            (
                "dead-lettered more than once",
                f"{len(letters.duplicated):,}",
                _examples(tuple(f"{c} x{n}" for c, n in letters.duplicated)),
            ),
        ]
        ok = ok and letters.complete and not letters.duplicated
    print_table(("check", "count", "detail"), checks)
    say("[green]exactly once[/]" if ok else "[red]NOT exactly once[/]")
    return 0 if ok else 1


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``verify`` on the entry point's sub-parsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "verify",
        help="check a table (and its dead-letter topic) against the publisher's ledgers",
        description=__doc__,
    )
    parser.add_argument("table", help="catalog.schema.table")
    parser.add_argument("--topic", required=True, help="the topic the ledgers are for")
    parser.add_argument("--dead-letter-topic", help="also check the dead letters")
    parser.add_argument(
        "--ledger",
        action="append",
        default=[],
        help="only these messages must be in the table (repeatable; default: every ledger of "
        "the topic); rows from the topic's other ledgers are not unexpected",
    )
    parser.add_argument("--ledger-dir", type=Path, default=DEFAULT_LEDGER_DIR)
    parser.add_argument(
        "--wait", type=float, default=0.0, help="poll up to SECONDS until nothing is lost"
    )
    parser.set_defaults(func=run)
    return parser
