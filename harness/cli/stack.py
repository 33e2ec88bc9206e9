"""`icefloe provision | doctor | up | down | status | logs | sql` and the fault hooks on a service.

icefloe provision | doctor | up | down | status | logs SERVICE | sql "SELECT ..."
icefloe stop|start|kill|pause|resume|restart SERVICE
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.markup import escape

from icefloe.harness.console import print_table, say
from icefloe.harness.stack import config as stack_config
from icefloe.loader.config import CATALOG_TYPES

CONTROL = ("stop", "start", "kill", "pause", "resume", "restart")
OPTIONAL_ARTIFACTS = ("toxiproxy",)  # harness.provision.steps.OPTIONAL, without importing it
SERVICES = ("kafka", "minio", "catalog", "trino", "toxiproxy", "glue")  # the last two: optional


def open_stack(args: argparse.Namespace) -> Any:
    """The stack the command line names (``--stack-config``, ``--catalog``, ``--backend``, the
    environment, the catalog the running stack was brought up with)."""
    from icefloe.harness.stack.backends import make_stack

    config = stack_config.load(args.stack_config, catalog=getattr(args, "catalog", None))
    return make_stack(config, getattr(args, "backend", None))


def healthy_stack(args: argparse.Namespace) -> Any:
    """``open_stack``, refused unless every service answers (runs need the stack up)."""
    stack = open_stack(args)
    if not stack.healthy():
        up = "icefloe up" + ("" if stack.config.catalog == "rest" else " --catalog glue")
        raise RuntimeError(f"the stack is not healthy; start it with `{up}`")
    return stack


def add_catalog_option(parser: argparse.ArgumentParser) -> None:
    """``--catalog``: which catalog the stack runs (default: the running stack's, else the
    configured one, else rest)."""
    parser.add_argument(
        "--catalog",
        choices=CATALOG_TYPES,
        default=None,
        help="the stack's catalog: rest (the Iceberg REST server) or glue (Glue-compatible);"
        " default: the running stack's, else [stack] catalog, else rest",
    )


def provision(args: argparse.Namespace) -> int:
    """Fetch every artifact into the cache (idempotent)."""
    from icefloe.harness.provision.layout import Layout
    from icefloe.harness.provision.steps import provision as run_steps

    run_steps(Layout(stack_config.load(args.stack_config).cache_dir), args.extras)
    return 0


def prepared_stack(args: argparse.Namespace) -> Any:
    """The stack, after provisioning (and, for containers, building images) unless told not to."""
    from icefloe.harness.stack.backends import prepare

    running = open_stack(args)
    if not args.no_provision:
        prepare(running)
    return running


def _up(args: argparse.Namespace) -> int:
    prepared_stack(args).up()
    say("stop it with `icefloe down` (or `make down`)")
    return 0


def _down(args: argparse.Namespace) -> int:
    run_dir = stack_config.load(args.stack_config).run_dir
    if not run_dir.exists():  # opening the stack would create it, credentials and all
        say(f"no stack to stop: {run_dir} does not exist")
        return 0
    stack = open_stack(args)
    stack.down()
    from icefloe.harness.catalogs.kinds import left_running

    for service in left_running(stack.config, stack.credentials):  # a check cut short
        service.stop()
        say(f"stopped {service.name} (a catalog under test)")
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from icefloe.harness import doctor

    config = stack_config.load(args.stack_config)
    running: frozenset[int] = frozenset()
    if config.run_dir.exists():  # opening the stack would create it, credentials and all
        services = open_stack(args).status()
        running = frozenset(p for s in services if s.pid for p in s.ports)
    found = doctor.findings(config, running)
    for f in found:  # lines, not a table: paths are long and a table would cut them
        colour = {doctor.OK: "green", doctor.OPTIONAL: "yellow", doctor.BUSY: "yellow"}.get(
            f.state, "red"
        )
        fix = f"  [bold]fix:[/] {escape(f.fix)}" if f.fix else ""
        say(f"[{colour}]{f.state:8}[/] {f.area:5} {escape(f.name)}: {escape(f.detail)}{fix}")
    wrong = doctor.problems(found)
    if wrong:
        say(
            f"[red]{len(wrong)} problem(s)[/]: "
            + escape("; ".join(f"{f.name}: {f.fix}" for f in wrong))
        )
        return 1
    say("nothing missing: `icefloe up` starts the stack")
    return 0


def _status(args: argparse.Namespace) -> int:
    stack = open_stack(args)
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
    print(open_stack(args).service(args.service).logs(args.lines))
    return 0


def _sql(args: argparse.Namespace) -> int:
    from trino.exceptions import TrinoQueryError

    from icefloe.harness.stack.sql import run_and_print

    text = sys.stdin.read() if args.statement == "-" else args.statement
    try:
        run_and_print(open_stack(args).trino_connection(), text)
    except TrinoQueryError as exc:
        # Text, not markup: Trino's messages hold brackets ("[/127.0.0.1]").
        say(f"[red]error[/] {exc.error_name}: {escape(exc.message)}")
        return 1
    return 0


def _control(args: argparse.Namespace) -> int:
    service = open_stack(args).service(args.service)
    result = getattr(service, args.command)()
    took = f" ({result:.1f} s to ready)" if isinstance(result, float) else ""
    say(f"{args.command} {args.service}: done{took}")
    return 0


def add_parsers(sub: Any) -> None:
    """Register the stack's commands on the entry point's sub-parsers."""

    def add(name: str, handler: Any, help_: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = sub.add_parser(name, help=help_, description=help_)
        parser.set_defaults(func=handler)
        return parser

    add("provision", provision, "fetch every artifact into the cache (idempotent)").add_argument(
        "--with",
        dest="extras",
        action="append",
        default=[],
        choices=OPTIONAL_ARTIFACTS,
        help="also build an optional artifact (toxiproxy: network faults on the wire)",
    )
    add(
        "doctor",
        _doctor,
        "what is provisioned where, the ports, the disk; what fixes what is missing",
    )
    up = add("up", _up, "start the stack")
    up.add_argument("--no-provision", action="store_true", help="do not check the cache first")
    add_catalog_option(up)
    add("down", _down, "stop the stack")
    add("status", _status, "pid, ports, health and memory of each service")
    logs = add("logs", _logs, "the tail of a service's log")
    logs.add_argument("service", choices=SERVICES, help="whose log")
    logs.add_argument("-n", "--lines", type=int, default=100, help="how many lines")
    sql = add("sql", _sql, "run SQL on Trino and print the result ('-' reads stdin)")
    sql.add_argument("statement", help="one or more statements separated by ';', or '-'")
    for verb in CONTROL:
        add(verb, _control, f"{verb} one service").add_argument(
            "service", choices=SERVICES, help="which service"
        )
