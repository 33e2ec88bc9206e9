"""`icefloe load [run|status]`: the loader's own command line, on the provisioned Spark runtime.

The flags, the configuration file and the environment are the loader's (`loader.cli`); the
harness adds what it knows, wherever the configuration names nothing: the local stack's broker,
catalog, object store and generated credentials (`harness.loaders.config.StackDefaults`), and the
Spark jars and Java home `icefloe provision` fetched. So on the local stack

    icefloe load --table lake.demo.events --kafka-topics events

needs no file. `python -m icefloe.loader` is the same command without that help: there the
configuration (or spark-submit) must name the endpoints and the jars.
"""

from __future__ import annotations

import argparse
from typing import Any

from icefloe.loader import cli as loader_cli


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``load`` on the entry point's sub-parsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "load",
        help="load Kafka JSON into an Iceberg table (Spark streaming), or show its status",
        description="Stream JSON from Kafka into an Iceberg table, exactly once.",
    )
    loader_cli.configure_parser(parser)
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Run the loader with the stack's endpoints and the provisioned Spark runtime filled in."""
    from icefloe.harness.cli.stack import open_stack
    from icefloe.harness.loaders.config import StackDefaults, with_provisioned_spark

    stack = open_stack(args)
    cache = stack.config.cache_dir
    return loader_cli.run(
        args,
        prepare=lambda config: with_provisioned_spark(config, cache),
        defaults=StackDefaults(stack),
    )
