"""`icefloe catalogs check [KIND ...]`: the catalog table, each catalog kind's promises checked.

Each kind (``rest``, ``glue``, ``moto``; all by default) is started beside the running stack from
empty state, on the stack's object store, and checked with plain pyiceberg writers: acknowledged
commits kept (across racing writers), one winner per base, the stale writer refused, and
acknowledged commits kept across a kill -9 of the catalog. The table says which catalog broke
which promise, with the evidence; ``--break ack_unapplied`` puts a proxy in front of each that
acknowledges commits it drops, which the checks must catch. ``--report`` writes the verdicts as
JSON.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from icefloe.harness.console import print_table, say


def _cell(check: Any) -> str:
    return f"{check.verdict}: {check.summary}"


def _check(args: argparse.Namespace) -> int:
    from icefloe.harness.catalogs import check, kinds
    from icefloe.harness.cli.stack import open_stack

    stack = open_stack(args)
    if not stack.minio.health():
        raise RuntimeError("the stack's object store does not answer; start it with `icefloe up`")
    chosen = args.kinds or list(kinds.KINDS)
    unknown = [k for k in chosen if k not in kinds.KINDS]
    if unknown:
        raise ValueError(f"no catalog kind {', '.join(unknown)}; one of {', '.join(kinds.KINDS)}")
    runs = []
    for kind in chosen:
        broken = f", under the break {args.broken}" if args.broken else ""
        say(f"checking {kind}: {kinds.KINDS[kind].what}{broken}")
        runs.append(check.run(stack, kind, broken=args.broken or ""))
        say(f"{kind}: {runs[-1].verdict} in {runs[-1].seconds:.0f} s")
    names = [c.check for c in runs[0].checks]
    print_table(
        ("catalog", *names),
        [(r.kind, *(_cell(c) for c in r.checks)) for r in runs],
        title="catalogs under test" + (f" (break {args.broken})" if args.broken else ""),
    )
    for r in runs:
        for c in r.checks:
            for anomaly in c.anomalies.values():
                for example in anomaly.examples:
                    say(f"{r.kind} {c.check} {anomaly.name}: {example}")
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps([r.to_json() for r in runs], indent=2) + "\n")
        say(f"report: {args.report}")
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``catalogs`` and its sub-commands on the entry point's sub-parsers."""
    from icefloe.harness.catalogs import check, kinds

    parser: argparse.ArgumentParser = subparsers.add_parser(
        "catalogs", help="check the promises of Iceberg catalogs", description=__doc__
    )
    verbs = parser.add_subparsers(dest="verb", required=True)
    run = verbs.add_parser("check", help="the catalog table: each kind's promises, checked")
    run.add_argument(
        "kinds", nargs="*", metavar="KIND",
        help=f"catalog kinds to check: {', '.join(kinds.KINDS)} (default: all)",
    )  # fmt: skip
    run.add_argument(
        "--break", dest="broken", choices=list(check.BREAKS),
        help="run each behind a proxy that breaks it (the checks must catch it)",
    )  # fmt: skip
    run.add_argument("--report", type=Path, help="write the verdicts as JSON here")
    run.set_defaults(func=_check)
    return parser
