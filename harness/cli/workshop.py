"""`icefloe workshop check N | reset | pictures`: the workshop of docs/workshop/.

`check N` looks at the running stack for what module N's exercises leave behind and prints
each finding, with what to do when it is missing; exit code 0 when all are there. `reset`
puts the stack back to the start of module 1. `pictures` draws the workshop's figures from the
measurements `icefloe demo --record` wrote. Run these from the repository's folder: the checks
read the publisher's ledgers from `.run/ledgers`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from icefloe.harness.console import say
from icefloe.harness.workshop import MODULES


def _check(args: argparse.Namespace) -> int:
    from icefloe.harness.cli.stack import open_stack
    from icefloe.harness.workshop.checks import CHECKS, Workbench, run_check

    title = CHECKS[args.module][0]
    findings = run_check(args.module, Workbench(open_stack(args)))
    say(f"[bold]module {args.module}: {title}[/]")
    for finding in findings:
        mark = "[green]✔[/]" if finding.ok else "[red]✘[/]"
        say(f"{mark} {finding.what}")
        if not finding.ok and finding.todo:
            say(f"    to do: {finding.todo}")
    missing = sum(not f.ok for f in findings)
    if missing:
        say(f"[red]{missing} of {len(findings)} missing[/]")
        return 1
    say(f"[green]module {args.module} done[/]")
    return 0


def _reset(args: argparse.Namespace) -> int:
    from icefloe.harness.cli.stack import open_stack
    from icefloe.harness.workshop.reset import reset

    for line in reset(open_stack(args)):
        say(line)
    say("ready for module 1")
    return 0


def _pictures(args: argparse.Namespace) -> int:
    from icefloe.harness.workshop.pictures import draw_all

    for path in draw_all(args.data, args.out):
        say(f"wrote {path}")
    return 0


def _module(text: str) -> int:
    number = int(text)
    if not 1 <= number <= MODULES:
        raise argparse.ArgumentTypeError(f"modules are 1 to {MODULES}")
    return number


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``workshop`` and its sub-commands on the entry point's sub-parsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "workshop", help="check a workshop module's exercises, or start over", description=__doc__
    )
    verbs = parser.add_subparsers(dest="verb", required=True)
    check = verbs.add_parser("check", help="were module N's exercises done?")
    check.add_argument("module", type=_module, help=f"1 to {MODULES}")
    check.set_defaults(func=_check)
    verbs.add_parser("reset", help="back to the start of module 1").set_defaults(func=_reset)
    pictures = verbs.add_parser("pictures", help="draw the workshop's figures (matplotlib)")
    pictures.add_argument("--data", type=Path, default=Path("docs/workshop/data"))
    pictures.add_argument("--out", type=Path, default=Path("docs/workshop/img"))
    pictures.set_defaults(func=_pictures)
    return parser
