"""The `icefloe` command: provision, run and inspect the local stack, and the tools built on it.

    icefloe provision | up | down | status | logs SERVICE | sql "SELECT ..."   (cli/stack.py)
    icefloe stop|start|kill|pause|resume|restart SERVICE       (fault hooks, cli/stack.py)
    icefloe doctor        what is provisioned where, the ports, the disk (cli/stack.py)
    icefloe init [DIR]    a loader's repository: loader.toml, a scenario, a test, CI (cli/init.py)
    icefloe demo                                               (cli/demo.py)
    icefloe load ...      the loader, with the provisioned Spark runtime (cli/load.py)
    icefloe loader start|stop|kill|freeze|thaw|status|logs   background loaders (cli/loader.py)
    icefloe publish ...   the synthetic publisher                (cli/publish.py, publisher/cli.py)
    icefloe topic create|list|describe|grow|read|delete        (cli/topic.py)
    icefloe table create|drop|show                             (cli/table.py)
    icefloe maintain optimize|expire-snapshots|remove-orphans|retention TABLE (cli/maintain.py)
    icefloe verify TABLE --topic T   the table against the publisher's ledgers (cli/verify.py)
    icefloe workshop check N | reset | pictures  the workshop's checks (cli/workshop.py)
    icefloe bench         the loader beside its ceiling and a baseline (cli/bench.py)
    icefloe scenario ...  list, run, check and generate scenarios (cli/scenario.py)
    icefloe soak ...      generated fault schedules for N minutes (cli/scenario.py)
    icefloe conformance   the scenarios against each loader, one table (cli/conformance.py)
    icefloe images ...    the container images (cli/images.py)
    icefloe compose ...   the compose stack (containers/compose.py)

Every command that opens the stack takes ``--backend local|containers`` (default:
$ICEFLOE_BACKEND, else the backend that brought the run directory's stack up, else local).

Heavy libraries (pyspark, pyiceberg) are imported only by the commands that need them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.markup import escape

from icefloe.harness.cli import (
    bench,
    catalogs,
    conformance,
    demo,
    images,
    init,
    load,
    loader,
    maintain,
    publish,
    scenario,
    stack,
    table,
    topic,
    verify,
    workshop,
)
from icefloe.harness.console import say
from icefloe.harness.containers import compose
from icefloe.harness.stack.backends import BACKENDS


def build_parser() -> argparse.ArgumentParser:
    """The whole command line; each command group registers its own sub-commands."""
    parser = argparse.ArgumentParser(prog="icefloe", description=__doc__.split("\n")[0])
    parser.add_argument("--stack-config", type=Path, default=None, help="icefloe.toml with [stack]")
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default=None,
        help="local processes or containers (default: $ICEFLOE_BACKEND, else what is running)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    stack.add_parsers(sub)
    init.add_parser(sub)
    demo.add_parser(sub)
    load.add_parser(sub)
    loader.add_parser(sub)
    publish.add_parser(sub)
    topic.add_parser(sub)
    table.add_parser(sub)
    maintain.add_parser(sub)
    verify.add_parser(sub)
    workshop.add_parser(sub)
    bench.add_parser(sub)
    scenario.add_parser(sub)
    scenario.add_soak_parser(sub)
    conformance.add_parser(sub)
    catalogs.add_parser(sub)
    images.add_parser(sub)
    compose.add_parser(sub)
    for command in sub.choices.values():
        # Also accepted after the command (`icefloe up --backend containers`).
        command.add_argument("--backend", choices=BACKENDS, default=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code (1 with one clear line on any error)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the CLI's last line of defence: one clear line, exit 1
        # The message is text, not markup: "[stack]" or a list in it is shown as written.
        say(f"[red]error[/] {type(exc).__name__}: {escape(str(exc))}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
