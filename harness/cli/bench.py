"""`icefloe bench`: the loader beside its bounds, baselines and a peer (harness/bench/).

Prints every figure as it is measured, then the Markdown tables and the command that made them;
writes bench.json, bench.md and bench.png into the output folder.
"""

from __future__ import annotations

import argparse
from typing import Any

from icefloe.harness.console import say


def _run(args: argparse.Namespace) -> int:
    from icefloe.harness.bench.options import from_args
    from icefloe.harness.bench.run import run_each_quota
    from icefloe.harness.cli.stack import open_stack
    from icefloe.harness.machine import SlowdownUnavailable

    try:
        done = run_each_quota(open_stack(args), from_args(args))
    except SlowdownUnavailable as exc:
        say(f"--cpu-quota: cannot slow this machine: {exc}")
        return 2
    for report, folder in done:
        print()
        print(report.to_markdown())
        say(f"wrote bench.json, bench.md and bench.png to {folder}")
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``bench`` on the entry point's sub-parsers."""
    from icefloe.harness.bench import __doc__ as overview
    from icefloe.harness.bench.options import add_arguments

    parser: argparse.ArgumentParser = subparsers.add_parser(
        "bench",
        help="throughput and freshness of the loader beside its bounds, baselines and a peer",
        description=(overview or "").split("\n")[0],
    )
    add_arguments(parser)
    parser.set_defaults(func=_run)
    return parser
