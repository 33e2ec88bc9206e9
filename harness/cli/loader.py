"""`icefloe loader start|stop|kill|freeze|thaw|status|logs|metrics`: background loaders, by name.

`icefloe load` runs the loader in the foreground of a terminal; `icefloe loader start` runs the
same loader in the background on the local stack and returns once its query runs, so one shell
can start it, crash it (`kill`: kill -9 of the loader and its JVM), freeze it past its lease
(`freeze`, `thaw`) and start it again (`start --name N` with no settings reuses the last ones).
"""

from __future__ import annotations

import argparse
from typing import Any

from harness.console import print_table, say

_VERBS = {
    "stop": "stop gracefully (the batch in progress finishes)",
    "kill": "kill -9 the loader and its JVM, as a crash would",
    "freeze": "SIGSTOP: the loader holds its lease but does nothing (a long GC pause)",
    "thaw": "SIGCONT a frozen loader",
}


def _duration(text: str) -> float:
    from loader.settings import DURATION

    try:
        return float(DURATION.parse(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a duration like 500ms, 5s or 2m: {text!r}"
        ) from None


def _stack(args: argparse.Namespace) -> Any:
    from harness.cli.stack import open_stack

    return open_stack(args)


def _start(args: argparse.Namespace) -> int:
    from harness.loaders.background import open_loader, saved_settings
    from harness.loaders.process import LoaderSettings
    from harness.stack.ports import free_port

    stack = _stack(args)
    settings: LoaderSettings | None = None
    if args.table or args.kafka_topics:
        if not (args.table and args.kafka_topics):
            raise ValueError("give both --table and --kafka-topics (or neither, to restart)")
        metrics = args.metrics_port
        if metrics is None:
            metrics = free_port(stack.config.loader_metrics_port)
        settings = LoaderSettings(
            loader_id=args.loader_id or f"icefloe-{args.name}",
            table=args.table,
            topics=tuple(t for t in args.kafka_topics.split(",") if t),
            dead_letter_topic=args.dead_letter_topic,
            trigger_interval_s=args.trigger_interval,
            lease_ttl_s=args.lease_ttl,
            extra={"metrics_port": metrics},
        )
    elif saved_settings(stack, args.name) is None:
        raise ValueError("give --table and --kafka-topics: no loader of this name ran before")
    loader = open_loader(stack, args.name, settings)
    if loader.is_running():
        say(f"loader {args.name} is running already (pid {loader.process.pid})")
        return 0
    say(f"starting loader {args.name} on {loader.settings.table}")
    say(f"its log: {loader.process.log_file}")
    try:
        took = loader.start(wait=not args.no_wait)
    except RuntimeError as exc:
        say(f"[red]loader {args.name} did not start[/]: {exc}")
        return 1
    metrics = loader.settings.extra.get("metrics_port")
    served = f", metrics on 127.0.0.1:{metrics}" if metrics else ""
    say(f"loader {args.name} running (pid {loader.process.pid}, {took:.0f} s to start{served})")
    return 0


def _control(args: argparse.Namespace) -> int:
    from harness.loaders.background import open_loader

    loader = open_loader(_stack(args), args.name)
    pid = loader.process.pid
    if pid is None:
        say(f"loader {args.name} is not running")
        return 1
    action = {
        "stop": loader.stop,
        "kill": loader.kill,
        "freeze": loader.freeze,
        "thaw": loader.process.resume,
    }[args.command_verb]
    action()
    say(f"{args.command_verb} loader {args.name} (pid {pid}): done")
    return 0


def _status(args: argparse.Namespace) -> int:
    from harness.loaders.background import names, open_loader

    stack = _stack(args)
    rows = []
    for name in [args.name] if args.name else names(stack):
        loader = open_loader(stack, name)
        pid = loader.process.pid
        state = "frozen" if loader.frozen() else "running" if pid else "stopped"
        last = loader.log_tail(1).strip()[-70:]
        rows.append(
            (name, loader.settings.loader_id, loader.settings.table, pid or "-", state, last)
        )
    print_table(("name", "loader id", "table", "pid", "state", "last log line"), rows)
    return 0


def _metrics(args: argparse.Namespace) -> int:
    from harness.loaders.background import open_loader, scrape_metrics

    loader = open_loader(_stack(args), args.name)
    port = int(loader.settings.extra.get("metrics_port") or 0)
    if not port:
        say(f"loader {args.name} serves no metrics (started with metrics port 0)")
        return 1
    rows = [
        (name.removeprefix("icefloe_loader_"), ", ".join(f"{k}={v}" for k, v in labels.items()),
         f"{value:g}")
        for name, labels, value in scrape_metrics(port)
        if not name.endswith(("_bucket", "_created"))
    ]  # fmt: skip
    print_table((f"icefloe_loader_... (127.0.0.1:{port}/metrics)", "labels", "value"), rows)
    return 0


def _logs(args: argparse.Namespace) -> int:
    from harness.loaders.background import open_loader

    print(open_loader(_stack(args), args.name).log_tail(args.lines))
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``loader`` and its sub-commands on the entry point's sub-parsers."""
    from harness.loaders.background import DEFAULT_NAME

    parser: argparse.ArgumentParser = subparsers.add_parser(
        "loader",
        help="run loaders in the background: start, stop, kill -9, freeze",
        description=__doc__,
    )
    verbs = parser.add_subparsers(dest="verb", required=True)

    def verb(name: str, help_: str) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = verbs.add_parser(name, help=help_, description=help_)
        sub.add_argument("--name", default=DEFAULT_NAME, help=f"which loader ({DEFAULT_NAME})")
        return sub

    start = verb("start", "start a loader in the background (no settings: as last time)")
    start.add_argument("--table", help="catalog.schema.table")
    start.add_argument("--kafka-topics", help="topics to load, comma-separated")
    start.add_argument("--dead-letter-topic", help="where malformed records go")
    start.add_argument("--loader-id", help="names its lease on the table (icefloe-NAME)")
    start.add_argument(
        "--trigger-interval", type=_duration, default=3.0, help="one batch per interval (3s)"
    )
    start.add_argument("--lease-ttl", type=_duration, default=60.0, help="the lease (60s)")
    start.add_argument(
        "--metrics-port",
        type=int,
        help="Prometheus port (default: the stack's loader port, or the next free one; 0: none)",
    )
    start.add_argument("--no-wait", action="store_true", help="return before its query runs")
    start.set_defaults(func=_start)
    for name, help_ in _VERBS.items():
        verb(name, help_).set_defaults(func=_control, command_verb=name)
    status = verbs.add_parser("status", help="the background loaders and their state")
    status.add_argument("--name", help="only this one")
    status.set_defaults(func=_status)
    verb("logs", "the tail of a loader's log").add_argument("-n", "--lines", type=int, default=40)
    verbs.choices["logs"].set_defaults(func=_logs)
    verb("metrics", "its Prometheus metrics: lag, freshness, rows, dead letters").set_defaults(
        func=_metrics
    )
    return parser
