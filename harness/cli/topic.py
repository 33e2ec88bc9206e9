"""`icefloe topic create|list|describe|grow|read|delete`: Kafka topics on the local stack.

The broker does not create topics on first use, so a topic is created before anything is
published to it (or `icefloe publish --create-topic N` creates it). A dead-letter topic must
take records larger than the loader's own limit: give it `--max-message-bytes 16MiB`.
"""

from __future__ import annotations

import argparse
from typing import Any

from rich.markup import escape

from icefloe.harness.console import out, print_table, say
from icefloe.publisher import topics


def _bootstrap(args: argparse.Namespace) -> str:
    from icefloe.harness.cli.stack import open_stack

    return str(args.bootstrap or open_stack(args).bootstrap_servers)


def _create(args: argparse.Namespace) -> int:
    bootstrap = _bootstrap(args)
    if args.if_not_exists and topics.partition_count(bootstrap, args.topic) is not None:
        say(f"topic {args.topic} exists")
        return 0
    topics.create_topic(
        bootstrap,
        args.topic,
        args.partitions,
        retention_ms=args.retention,
        max_message_bytes=args.max_message_bytes,
    )
    say(f"created topic {args.topic} ({args.partitions} partition(s))")
    return 0


def _list(args: argparse.Namespace) -> int:
    bootstrap = _bootstrap(args)
    rows = [
        (name, topics.partition_count(bootstrap, name))
        for name in topics.list_topics(bootstrap, internal=args.all)
    ]
    print_table(("topic", "partitions"), rows)
    return 0


def _retention(ms: int) -> str:
    if ms < 0:
        return "forever"
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def _describe(args: argparse.Namespace) -> int:
    info = topics.describe_topic(_bootstrap(args), args.topic)
    print_table(
        ("topic", "partitions", "messages per partition", "retention", "max message bytes"),
        [
            (
                info.name,
                info.partitions,
                "; ".join(f"{p}: {n:,}" for p, n in enumerate(info.messages)),
                _retention(info.retention_ms),
                f"{info.max_message_bytes:,}",
            )
        ],
    )
    return 0


def _delete(args: argparse.Namespace) -> int:
    if topics.delete_topic(_bootstrap(args), args.topic):
        say(f"deleted topic {args.topic}")
    else:
        say(f"no topic {args.topic}")
    return 0


def _grow(args: argparse.Namespace) -> int:
    topics.add_partitions(_bootstrap(args), args.topic, args.partitions)
    say(f"topic {args.topic} now has {args.partitions} partitions")
    return 0


def _read(args: argparse.Namespace) -> int:
    records = topics.read_records(_bootstrap(args), args.topic, args.limit, args.partition)
    for record in records:
        value = (record.value or b"").decode(errors="replace")
        cut = value[: args.value_chars] + ("…" if len(value) > args.value_chars else "")
        out.print(f"[bold]{args.topic} partition {record.partition} offset {record.offset}[/]")
        for key, header in record.headers:
            out.print(f"  {key}: {escape(header)}", soft_wrap=True)
        out.print(f"  value ({len(value):,} characters): {escape(cut)!r}", soft_wrap=True)
    say(f"{len(records)} record(s)")
    return 0


def _size(text: str) -> int:
    try:
        return topics.parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _duration(text: str) -> int:
    try:
        return topics.parse_duration_ms(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``topic`` and its sub-commands on the entry point's sub-parsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "topic", help="create, list, describe and delete Kafka topics", description=__doc__
    )
    parser.add_argument("--bootstrap", help="another broker than the local stack's")
    verbs = parser.add_subparsers(dest="verb", required=True)
    create = verbs.add_parser("create", help="create a topic")
    create.add_argument("topic")
    create.add_argument("--partitions", type=int, default=1, help="how many (default 1)")
    create.add_argument(
        "--retention", type=_duration, help="keep records this long: 7d, 12h, 30m, forever"
    )
    create.add_argument(
        "--max-message-bytes", type=_size, help="largest record the topic takes: 16MiB, 2MB"
    )
    create.add_argument("--if-not-exists", action="store_true", help="no error if it exists")
    create.set_defaults(func=_create)
    listing = verbs.add_parser("list", help="list topics and their partition counts")
    listing.add_argument("--all", action="store_true", help="include Kafka's internal topics")
    listing.set_defaults(func=_list)
    describe = verbs.add_parser("describe", help="partitions, messages, retention, size limit")
    describe.add_argument("topic")
    describe.set_defaults(func=_describe)
    grow = verbs.add_parser("grow", help="add partitions (Kafka never removes them)")
    grow.add_argument("topic")
    grow.add_argument("--partitions", type=int, required=True, help="how many in all")
    grow.set_defaults(func=_grow)
    read = verbs.add_parser("read", help="print the first records: headers and value")
    read.add_argument("topic")
    read.add_argument("--limit", type=int, default=5, help="how many records (5)")
    read.add_argument("--partition", type=int, help="only this partition")
    read.add_argument("--value-chars", type=int, default=120, help="value characters shown")
    read.set_defaults(func=_read)
    delete = verbs.add_parser("delete", help="delete a topic and everything in it")
    delete.add_argument("topic")
    delete.set_defaults(func=_delete)
    return parser
