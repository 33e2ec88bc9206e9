"""Command line: ``icefloe publish ...`` and ``python -m icefloe.publisher ...``.

:func:`add_parser` registers the ``publish`` sub-command on the project's one
entry point; :func:`run` executes parsed arguments. :func:`main` is the
standalone form used by ``python -m icefloe.publisher``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException

from icefloe.publisher.clock import DEFAULT_ANCHOR, ClockConfig
from icefloe.publisher.drift import DriftConfig, ExtraFieldSpec
from icefloe.publisher.malformations import DEFAULT_MAX_MESSAGE_BYTES, MALFORMATIONS, resolve_kinds
from icefloe.publisher.messages import GenerationConfig, KeySpec, generate
from icefloe.publisher.producer import DEFAULT_LEDGER_DIR, Publisher, PublisherConfig, PublishFailed

#: Environment variable consulted for ``--bootstrap`` when the flag is absent.
BOOTSTRAP_ENV = "ICEFLOE_BOOTSTRAP"
#: The broker ``python -m icefloe.publisher`` talks to when neither names one.
DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def _anchor(text: str) -> dt.datetime:
    if text == "now":
        return dt.datetime.now(dt.UTC)
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 time or 'now': {text!r}") from exc
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)


def _key(text: str) -> KeySpec:
    try:
        return KeySpec.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _extra_field(text: str) -> ExtraFieldSpec:
    try:
        return ExtraFieldSpec.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _csv(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _partitions(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in _csv(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"expected partition numbers like 0,1,2: {text!r}"
        ) from exc


class _RenamedPartitions(argparse.Action):
    """``--partitions`` read like a partition count and was not one: point to the right flags."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        parser.error(
            "--partitions is now --partition-ids (partition numbers to send to, e.g. 0,2); "
            "to create a topic with N partitions use `icefloe topic create TOPIC --partitions N` "
            "or `--create-topic N`"
        )


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a fraction within [0, 1], got {text}")
    return value


def _setting(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError("expected KEY=VALUE, got a value without '='")
    return name, value


def configure_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the publisher's options to ``parser``.

    Args:
        parser: A parser or sub-parser.

    Returns:
        The same parser.
    """
    target = parser.add_argument_group("target")
    target.add_argument(
        "--bootstrap",
        default=None,
        help=f"Kafka bootstrap servers (default: ${BOOTSTRAP_ENV}, else the local stack's broker)",
    )
    target.add_argument("--topic", help="topic to publish to (required unless --dry-run)")
    target.add_argument(
        "--create-topic",
        type=int,
        metavar="PARTITIONS",
        help="create the topic with this many partitions if it does not exist",
    )
    target.add_argument(
        "--dry-run",
        action="store_true",
        help="write messages as JSON Lines to stdout instead of Kafka",
    )

    amount = parser.add_argument_group("how much")
    bound = amount.add_mutually_exclusive_group()
    bound.add_argument("--count", type=int, help="number of messages")
    bound.add_argument("--one", action="store_true", help="publish exactly one row")
    amount.add_argument("--rate", type=float, help="messages per second (default: unpaced)")
    amount.add_argument("--duration", type=float, help="stop after SECONDS")

    content = parser.add_argument_group("content")
    content.add_argument("--seed", type=int, help="seed; the same seed and anchor replay a run")
    content.add_argument(
        "--anchor",
        type=_anchor,
        default=DEFAULT_ANCHOR,
        help=f"newest event time, ISO-8601 or 'now' (default: {DEFAULT_ANCHOR.isoformat()})",
    )
    content.add_argument(
        "--window-days", type=float, default=30.0, help="spread event times this far back"
    )
    content.add_argument(
        "--schema-file",
        type=Path,
        help="Iceberg schema JSON (as in table metadata) instead of the reference table",
    )
    content.add_argument("--catalog-uri", help="REST catalog URI to read --table's schema from")
    content.add_argument(
        "--catalog-property",
        type=_catalog_property,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a pyiceberg catalog property to read --table's schema with, repeatable (e.g."
        " type=glue, glue.endpoint=URL; AWS keys come from the environment, never from here)",
    )
    content.add_argument("--table", help="namespace.table whose schema rows follow")
    content.add_argument(
        "--null-fraction",
        type=_fraction,
        default=0.0,
        help="share of nulls in optional fields (non-reference schemas)",
    )
    content.add_argument(
        "--key",
        type=_key,
        default=KeySpec(),
        help="none | event-id | random:N | fixed:VALUE (default: none)",
    )
    content.add_argument(
        "--partition-ids",
        type=_partitions,
        metavar="0,1,...",
        help="send only to these partition numbers, e.g. 0,2 (default: the key decides)",
    )
    content.add_argument(
        "--partitions", action=_RenamedPartitions, help=argparse.SUPPRESS, metavar="IDS"
    )
    content.add_argument(
        "--headers", action="store_true", help="attach icefloe-event-id/icefloe-kind headers"
    )

    bad = parser.add_argument_group("malformed messages")
    bad.add_argument("--malformed-fraction", type=_fraction, default=0.0)
    bad.add_argument(
        "--malformed-kinds", type=_csv, default=(), help="comma-separated catalog names"
    )
    bad.add_argument(
        "--max-message-bytes",
        type=int,
        default=DEFAULT_MAX_MESSAGE_BYTES,
        help="the loader's payload limit; 'oversized' goes one byte over",
    )
    bad.add_argument("--list-malformations", action="store_true", help="print the catalog and exit")

    drift = parser.add_argument_group("schema drift")
    drift.add_argument("--drift-fraction", type=_fraction, default=1.0)
    drift.add_argument("--extra-fields", type=int, default=0, help="add N unknown fields")
    drift.add_argument("--missing-fields", type=int, default=0, help="leave out N columns")
    drift.add_argument("--camel-case", action="store_true", help="camelCase field names")
    drift.add_argument("--envelope", action="store_true", help="wrap rows in a CloudEvent")
    drift.add_argument(
        "--extra-field",
        type=_extra_field,
        action="append",
        default=[],
        metavar="NAME=GENERATOR",
        help="add a field: an Iceberg type (long, decimal(10,2)...), faker:PROVIDER, "
        "const:JSON or seq; repeatable",
    )

    producer = parser.add_argument_group("producer")
    producer.add_argument("--ledger", type=Path, help="ledger file (default: a new file)")
    producer.add_argument("--ledger-dir", type=Path, default=DEFAULT_LEDGER_DIR)
    producer.add_argument("--linger-ms", type=int, default=20)
    producer.add_argument("--compression", default="lz4")
    producer.add_argument("--max-resends", type=int, default=2)
    producer.add_argument(
        "--producer-config",
        type=_setting,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra librdkafka setting; repeatable; never echoed",
    )
    producer.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``publish`` on the entry point's sub-parsers.

    Args:
        subparsers: The object returned by ``ArgumentParser.add_subparsers()``.

    Returns:
        The new sub-parser (its default ``func`` is :func:`run`).
    """
    parser = subparsers.add_parser(
        "publish",
        help="publish generated JSON rows to Kafka",
        description="Publish seeded JSON rows (valid, malformed, drifted) to Kafka with a ledger.",
    )
    configure_parser(parser)
    parser.set_defaults(func=run)
    return parser


def _catalog_property(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: give KEY=VALUE")
    return key.strip(), value


def catalog_properties(
    args: argparse.Namespace, default: Callable[[], dict[str, str]] | None = None
) -> dict[str, str]:
    """pyiceberg's properties for the catalog ``--table`` is read from: ``--catalog-uri`` (a
    REST catalog) and ``--catalog-property`` pairs, else ``default()`` (``icefloe publish``
    gives the local stack's catalog, REST or Glue).

    Raises:
        ValueError: neither names a catalog.
    """
    given = dict(args.catalog_property)
    if args.catalog_uri is not None:
        given = {"type": "rest", "uri": args.catalog_uri, **given}
    if given:
        return given
    if default is None:
        raise ValueError("--table needs --catalog-uri or --catalog-property KEY=VALUE")
    return default()


def _schema(args: argparse.Namespace, default_catalog: Callable[[], dict[str, str]] | None) -> Any:
    if args.schema_file is not None:
        from pyiceberg.schema import Schema

        return Schema.model_validate_json(args.schema_file.read_text(encoding="utf-8"))
    if args.table is not None:
        from pyiceberg.catalog import load_catalog

        catalog = load_catalog("icefloe", **catalog_properties(args, default_catalog))
        return catalog.load_table(args.table).schema()
    return None


def generation_config(
    args: argparse.Namespace, default_catalog: Callable[[], dict[str, str]] | None = None
) -> GenerationConfig:
    """Build the generation config from parsed arguments.

    Args:
        args: Parsed ``publish`` arguments.
        default_catalog: The catalog ``--table`` is read from when the arguments name none
            (:func:`catalog_properties`).

    Returns:
        The config (seed unresolved when ``--seed`` is absent).

    Raises:
        ValueError: For inconsistent options.
    """
    from icefloe.publisher.schema_rows import SchemaRowsConfig

    return GenerationConfig(
        seed=args.seed,
        clock=ClockConfig(anchor=args.anchor, window_days=args.window_days),
        schema=_schema(args, default_catalog),
        rows=SchemaRowsConfig(null_fraction=args.null_fraction),
        key=args.key,
        partitions=args.partition_ids,
        malformed_fraction=args.malformed_fraction,
        malformed_kinds=args.malformed_kinds,
        max_message_bytes=args.max_message_bytes,
        drift=DriftConfig(
            fraction=args.drift_fraction,
            extra_fields=args.extra_fields,
            missing_fields=args.missing_fields,
            camel_case=args.camel_case,
            envelope=args.envelope,
            extra_field_specs=tuple(args.extra_field),
        ),
        headers=args.headers,
    )


def _print_catalog() -> None:
    for entry in MALFORMATIONS.values():
        print(f"{entry.name:<22} {entry.loader_kind:<14} {entry.target:<40} {entry.reason}")


def _dry_run(generation: GenerationConfig, count: int | None) -> int:
    out = sys.stdout
    for m in generate(generation, count):
        value = None if m.value is None else m.value.decode("utf-8", "backslashreplace")
        doc = {
            "seq": m.seq,
            "key": None if m.key is None else m.key.decode("utf-8", "backslashreplace"),
            "partition": m.partition,
            "event_id": m.event_id,
            "status": m.status,
            "kind": m.kind,
            "target": m.target,
            "drift": list(m.drift),
            "value": value,
        }
        out.write(json.dumps(doc, ensure_ascii=False) + "\n")
    return 0


def _check_topic(bootstrap: str, args: argparse.Namespace) -> str | None:
    """None if the topic can take the run (creating it if asked), else what is wrong."""
    from icefloe.publisher.topics import TopicMissing, create_topic, require_topic

    try:
        partitions = require_topic(bootstrap, args.topic)
    except TopicMissing as missing:
        if args.create_topic is None:
            return str(missing)
        create_topic(bootstrap, args.topic, args.create_topic)
        print(f"created topic {args.topic} ({args.create_topic} partitions)", file=sys.stderr)
        partitions = args.create_topic
    beyond = sorted(p for p in args.partition_ids or () if p >= partitions)
    if beyond:
        return (
            f"topic {args.topic!r} has {partitions} partition(s), numbered 0-{partitions - 1}; "
            f"--partition-ids names {', '.join(map(str, beyond))}"
        )
    return None


def run(
    args: argparse.Namespace,
    default_bootstrap: str = DEFAULT_BOOTSTRAP,
    default_catalog: Callable[[], dict[str, str]] | None = None,
) -> int:
    """Execute a parsed ``publish`` command.

    Args:
        args: Arguments parsed by a parser set up with :func:`configure_parser`.
        default_bootstrap: The broker when neither ``--bootstrap`` nor ``$ICEFLOE_BOOTSTRAP``
            names one (``icefloe publish`` passes the local stack's).
        default_catalog: The pyiceberg properties of the catalog ``--table`` is read from when
            the arguments name none (``icefloe publish`` passes the local stack's).

    Returns:
        Process exit code: 0 on success, 1 if any message failed to deliver,
        2 for invalid options or a topic that does not exist (and was not to be created).
    """
    if args.list_malformations:
        _print_catalog()
        return 0
    count = 1 if args.one else args.count
    if count is None and args.duration is None and args.rate is None and not args.dry_run:
        print("publish: give --count N, --one, --duration SECONDS or --rate R", file=sys.stderr)
        return 2
    try:
        generation = generation_config(args, default_catalog).resolved()
        if generation.malformed_fraction > 0:  # unknown names fail here, before any broker
            resolve_kinds(generation.malformed_kinds, generation.table_schema())
    except (ValueError, OSError) as exc:
        print(f"publish: {exc}", file=sys.stderr)
        return 2
    if args.dry_run:
        return _dry_run(generation, count if count is not None else 10)
    if not args.topic:
        print("publish: --topic is required", file=sys.stderr)
        return 2
    bootstrap = args.bootstrap or os.environ.get(BOOTSTRAP_ENV) or default_bootstrap
    try:
        problem = _check_topic(bootstrap, args)
    except KafkaException as exc:
        print(f"publish: cannot reach Kafka at {bootstrap}: {exc}", file=sys.stderr)
        return 1
    if problem is not None:
        print(f"publish: {problem}", file=sys.stderr)
        return 2
    config = PublisherConfig(
        generation=generation,
        ledger_dir=args.ledger_dir,
        linger_ms=args.linger_ms,
        compression=args.compression,
        max_resends=args.max_resends,
        producer_overrides=dict(args.producer_config),
        progress=False if args.no_progress else None,
    )
    publisher = Publisher(bootstrap, args.topic, config)
    try:
        result = publisher.publish(
            count, rate=args.rate, duration=args.duration, ledger_path=args.ledger
        )
    except PublishFailed as exc:
        result = exc.result
        print(f"publish: {exc}", file=sys.stderr)
        code = 1
    except ValueError as exc:
        print(f"publish: {exc}", file=sys.stderr)
        return 2
    else:
        code = 0
    print(
        f"sent {result.sent} to {args.topic} (valid {result.valid}, malformed "
        f"{result.malformed}, failed {result.failed}) in {result.elapsed:.2f}s "
        f"= {result.rate:,.0f} msg/s; seed {result.seed}; ledger {result.ledger_path}"
    )
    return code


def build_parser() -> argparse.ArgumentParser:
    """The standalone parser of ``python -m icefloe.publisher``.

    Returns:
        A parser with the publisher's options at top level.
    """
    parser = argparse.ArgumentParser(
        prog="python -m icefloe.publisher",
        description="Publish seeded JSON rows (valid, malformed, drifted) to Kafka with a ledger.",
    )
    return configure_parser(parser)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the standalone command.

    Args:
        argv: Arguments without the program name; ``None`` reads ``sys.argv``.

    Returns:
        The process exit code.
    """
    return run(build_parser().parse_args(argv))
