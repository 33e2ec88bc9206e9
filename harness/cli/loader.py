"""`icefloe loader start|stop|kill|freeze|thaw|status|logs|metrics`: background loaders, by name.

`icefloe load` runs the loader in the foreground of a terminal; `icefloe loader start` runs the
same loader in the background on the local stack and returns once its query runs, so one shell
can start it, crash it (`kill`: kill -9 of the loader and its JVM), freeze it past its lease
(`freeze`, `thaw`) and start it again (`start --name N` with no settings reuses the last ones).
`start` takes the setting flags of `icefloe load` (generated from the loader's configuration,
`loader.settings.add_flags`), with the loader's defaults but for two: the loader id is
`icefloe-NAME` and the metrics port the stack's loader port (or the next free one) unless given.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any

from icefloe.harness.console import print_table, say

_VERBS = {
    "stop": "stop gracefully (the batch in progress finishes)",
    "kill": "kill -9 the loader and its JVM, as a crash would",
    "freeze": "SIGSTOP: the loader holds its lease but does nothing (a long GC pause)",
    "thaw": "SIGCONT a frozen loader",
}


def _stack(args: argparse.Namespace) -> Any:
    from icefloe.harness.cli.stack import open_stack

    return open_stack(args)


def start_flags(
    name: str, flags: Mapping[str, str], metrics_port: Callable[[], int]
) -> dict[str, str]:
    """The flags background loader ``name`` runs with: those of ``loader start``, and its
    loader id and metrics port unless they name them.

    Args:
        name: the loader's name (``--name``).
        flags: dotted key -> text, as ``loader.settings.flag_values`` gives them.
        metrics_port: gives the port for metrics when no flag sets one.

    Returns:
        dotted key -> text, as saved for its next start.
    """
    chosen = dict(flags)
    # A loader id per name: two background loaders on one table would be two owners.
    chosen.setdefault("loader_id", f"icefloe-{name}")
    # The stack's port for loader metrics (or the next free one), not the loader's own
    # default: several stacks, and several background loaders, share one machine.
    chosen.setdefault("metrics_port", str(metrics_port()))
    return chosen


def _start(args: argparse.Namespace) -> int:
    from icefloe.harness.loaders.background import open_loader, saved_flags
    from icefloe.harness.stack.ports import free_port
    from icefloe.loader import settings as loader_settings
    from icefloe.loader.config import LoaderConfig

    stack = _stack(args)
    given = loader_settings.flag_values(LoaderConfig, args)
    flags = None  # none given: the saved ones, as last time
    if given:
        port = stack.config.loader_metrics_port
        flags = start_flags(args.name, given, lambda: free_port(port))
    elif saved_flags(stack, args.name) is None:
        raise ValueError("give --table and --kafka-topics: no loader of this name ran before")
    # Flags the loader refuses raise here (ConfigError), before they are saved.
    loader = open_loader(stack, args.name, flags)
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
    metrics = loader.settings.metrics_port
    served = f", metrics on 127.0.0.1:{metrics}" if metrics else ""
    say(f"loader {args.name} running (pid {loader.process.pid}, {took:.0f} s to start{served})")
    return 0


def _control(args: argparse.Namespace) -> int:
    from icefloe.harness.loaders.background import open_loader

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
    from icefloe.harness.loaders.background import names, open_loader

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
    from icefloe.harness.loaders.background import open_loader, scrape_metrics

    loader = open_loader(_stack(args), args.name)
    port = loader.settings.metrics_port
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
    from icefloe.harness.loaders.background import open_loader

    print(open_loader(_stack(args), args.name).log_tail(args.lines))
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``loader`` and its sub-commands on the entry point's sub-parsers."""
    from icefloe.harness.loaders.background import DEFAULT_NAME
    from icefloe.loader import settings as loader_settings
    from icefloe.loader.config import LoaderConfig

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
    start.add_argument("--no-wait", action="store_true", help="return before its query runs")
    loader_settings.add_flags(
        start.add_argument_group(
            "settings (those of icefloe load; --table and --kafka-topics are required, the "
            "loader id is icefloe-NAME and the metrics port the stack's loader port, or the "
            "next free one, unless given)"
        ),
        LoaderConfig,
    )
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
