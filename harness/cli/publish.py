"""`icefloe publish ...`: the publisher's own command line, aimed at the local stack's broker.

The flags are the publisher's (`publisher.cli`); what the harness adds is the stack: without
`--bootstrap` or `$ICEFLOE_BOOTSTRAP`, messages go to the stack this run directory and these
ports describe, and `--table` without `--catalog-uri` or `--catalog-property` reads its schema
from the stack's catalog, REST or Glue. `python -m icefloe.publisher` is the same command
without the stack.
"""

from __future__ import annotations

import argparse
from typing import Any

from icefloe.publisher import cli as publisher_cli


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``publish`` on the entry point's sub-parsers."""
    parser = publisher_cli.add_parser(subparsers)
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Publish to the stack's broker, and read ``--table`` from its catalog, unless the command
    line names others."""
    from icefloe.harness.cli.stack import open_stack

    stack = open_stack(args)
    return publisher_cli.run(
        args,
        default_bootstrap=stack.bootstrap_servers,
        default_catalog=stack.pyiceberg_properties,
    )
