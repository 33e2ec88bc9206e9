"""The `icefloe` command: provision, run and inspect the local stack, and the tools built on it.

    icefloe provision | up | down | status | logs SERVICE | sql "SELECT ..."
    icefloe stop|start|kill|pause|resume|restart SERVICE     (fault hooks)
    icefloe demo
    icefloe publish ...                                        (the synthetic publisher)

Heavy libraries (pyspark, pyiceberg) are imported only by the commands that need them.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness import config as stack_config
from harness.console import print_table, say

# Commands whose parsers live with their packages: each module has add_parser(sub) and run(args).
_PLUGGED = {
    "publish": "publisher.cli",
    "load": "loader.cli",
    "scenario": "harness.scenario_cli",
    "images": "harness.containers.images_cli",
    "compose": "harness.containers.compose",
}
_CONTROL = ("stop", "start", "kill", "pause", "resume", "restart")
_SERVICES = ("kafka", "minio", "catalog", "trino")
_BACKENDS = ("local", "containers")


def _stack(args: argparse.Namespace) -> Any:
    from harness.backends import make_stack

    return make_stack(stack_config.load(args.stack_config), args.backend)


def _provision(args: argparse.Namespace) -> int:
    from harness.layout import Layout
    from harness.provision import provision

    provision(Layout(stack_config.load(args.stack_config).cache_dir))
    return 0


def _up(args: argparse.Namespace) -> int:
    from harness.backends import prepare

    stack = _stack(args)
    if not args.no_provision:
        prepare(stack)
    stack.up()
    say("stop it with `icefloe down` (or `make down`)")
    return 0


def _down(args: argparse.Namespace) -> int:
    _stack(args).down()
    return 0


def _status(args: argparse.Namespace) -> int:
    stack = _stack(args)
    rows = []
    for s in stack.status():
        state = (
            "paused"
            if s.paused
            else ("healthy" if s.healthy else "down" if not s.pid else "unhealthy")
        )
        rss = f"{s.rss_bytes / 2**20:.0f} MiB" if s.pid else "-"
        rows.append((s.name, s.pid or "-", ",".join(map(str, s.ports)), state, rss))
    print_table(("service", "pid", "ports", "state", "memory (RSS)"), rows)
    return 0 if stack.healthy() else 1


def _logs(args: argparse.Namespace) -> int:
    print(_stack(args).service(args.service).logs(args.lines))
    return 0


def _sql(args: argparse.Namespace) -> int:
    from trino.exceptions import TrinoQueryError

    from harness.sql import run_and_print

    text = sys.stdin.read() if args.statement == "-" else args.statement
    try:
        run_and_print(_stack(args).trino_connection(), text)
    except TrinoQueryError as exc:
        say(f"[red]error[/] {exc.error_name}: {exc.message}")
        return 1
    return 0


def _control(args: argparse.Namespace) -> int:
    service = _stack(args).service(args.service)
    result = getattr(service, args.command)()
    took = f" ({result:.1f} s to ready)" if isinstance(result, float) else ""
    say(f"{args.command} {args.service}: done{took}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from harness.backends import prepare
    from harness.demo import run_demo

    stack = _stack(args)
    if not args.no_provision:
        prepare(stack)
    return run_demo(stack)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="icefloe", description=__doc__.split("\n")[0])
    parser.add_argument("--stack-config", type=Path, default=None, help="icefloe.toml with [stack]")
    parser.add_argument(
        "--backend",
        choices=_BACKENDS,
        default=None,
        help="local processes or containers (default: $ICEFLOE_BACKEND, else what is running)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    handlers: dict[str, Callable[[argparse.Namespace], int]] = {}

    def add(name: str, handler: Callable[[argparse.Namespace], int], help_: str) -> Any:
        handlers[name] = handler
        command = sub.add_parser(name, help=help_)
        # Also accepted after the command (`icefloe up --backend containers`).
        command.add_argument("--backend", choices=_BACKENDS, default=argparse.SUPPRESS)
        return command

    add("provision", _provision, "fetch every artifact into the cache (idempotent)")
    add("up", _up, "start the stack").add_argument("--no-provision", action="store_true")
    add("down", _down, "stop the stack")
    add("status", _status, "pid, ports, health and memory of each service")
    logs = add("logs", _logs, "the tail of a service's log")
    logs.add_argument("service", choices=_SERVICES)
    logs.add_argument("-n", "--lines", type=int, default=100)
    sql = add("sql", _sql, "run SQL on Trino and print the result ('-' reads stdin)")
    sql.add_argument("statement")
    for verb in _CONTROL:
        add(verb, _control, f"{verb} one service").add_argument("service", choices=_SERVICES)
    add("demo", _demo, "walk through the kit").add_argument("--no-provision", action="store_true")
    for command, module_name in _PLUGGED.items():
        module = importlib.import_module(module_name)
        module.add_parser(sub)
        handlers[command] = module.run
    parser.set_defaults(_handlers=handlers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args._handlers[args.command](args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the CLI's last line of defence: one clear line, exit 1
        say(f"[red]error[/] {type(exc).__name__}: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
