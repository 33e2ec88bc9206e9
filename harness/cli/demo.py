"""`icefloe demo` (`make demo`): every promise of the kit, shown on the local stack, narrated.

The story is in `harness.demo.story`: the stack, a table and its topics, the loader, rows
visible while they are published, exactly once against the ledger, dead letters and offsets,
a column added, kill -9 mid-stream, a column dropped, compaction, snapshot expiry and
retention, a zombie writer fenced off, the loader's metrics. Non-interactive by default (CI
runs it); `--step` waits for Enter between steps. Library log lines go to a file, not the
output.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from icefloe.harness.cli.stack import add_catalog_option


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``demo`` on the entry point's sub-parsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "demo", help="walk through every promise of the kit", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--no-provision", action="store_true", help="do not check the cache first")
    parser.add_argument("--step", action="store_true", help="wait for Enter between steps")
    add_catalog_option(parser)
    parser.add_argument(
        "--record",
        type=Path,
        metavar="DIR",
        help="write the measurements the workshop's pictures are drawn from into DIR",
    )
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Provision (unless told not to), then run the walkthrough on the configured stack."""
    from icefloe.harness.cli.stack import prepared_stack
    from icefloe.harness.demo.narrator import Narrator, quiet_libraries
    from icefloe.harness.demo.story import STEPS, run_story

    stack = prepared_stack(args)
    work = Path(tempfile.mkdtemp(prefix="icefloe-demo-"))
    libraries = work / "libraries.log"
    with quiet_libraries(libraries) as terminal:
        out = Narrator(STEPS, pause=args.step, file=terminal)
        out.say(f"[bold]icefloe demo[/]: {STEPS} steps on the local stack. Ledgers, loader logs "
                f"and library output go to {work}")  # fmt: skip
        return run_story(stack, work, pause=args.step, record_dir=args.record, out=out)
