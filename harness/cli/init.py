"""`icefloe init [DIR] [--example pyiceberg] [--force]`: the kit's files for a loader's repository.

Writes a loader description, a scenario, a pytest file and a CI workflow into DIR (the current
folder by default), then says what to run next (`harness.scaffold`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.markup import escape

from icefloe.harness.console import say


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``init`` on the entry point's sub-parsers."""
    from icefloe.harness.scaffold import EXAMPLES

    help_ = "write loader.toml, a scenario, a pytest file and a CI workflow into a repository"
    parser: argparse.ArgumentParser = subparsers.add_parser("init", help=help_, description=help_)
    parser.add_argument("dir", nargs="?", type=Path, default=Path("."), help="where (default: .)")
    parser.add_argument(
        "--example",
        choices=EXAMPLES,
        help="the kit's example loader instead of the skeleton (runs as written)",
    )
    parser.add_argument("--force", action="store_true", help="replace files already there")
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Write the files; 1 (nothing written) when some are already there and not ``--force``."""
    from icefloe.harness.scaffold import plan, write

    target: Path = args.dir
    try:
        written = write(target, plan(args.example), force=args.force)
    except FileExistsError as exc:
        say(f"[red]error[/] {escape(str(exc))}")
        return 1
    for path in written:
        say(f"wrote {escape(str(path))}")
    where = "" if target.resolve() == Path.cwd().resolve() else f"cd {target} && "
    fill = (
        "" if args.example else "fill in loader.toml (the command that starts your loader), then: "
    )
    say(
        f"next: {fill}{where}icefloe up && icefloe scenario run "
        "scenarios/restart_under_load.toml --loader command:loader.toml; or `pytest`"
    )
    return 0
