"""Command line: ``icefloe load [run|status] --config FILE [--setting value ...]``.

``add_parser(subparsers)`` registers the ``load`` sub-command on the
``icefloe`` entry point and ``run(args)`` executes it; ``python -m loader``
accepts the same arguments.  Every non-secret setting is also a flag
(``--kafka-bootstrap``); see ``loader.config``.  Spark is imported only when
the loader actually runs.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any

from loader.config import cli_flags, load_config
from loader.errors import ConcurrentLoader, LoaderError

__all__ = ["EXIT_NOT_OWNER", "add_parser", "build_parser", "configure_parser", "main", "run"]

_DEST = "loader_setting__"

EXIT_NOT_OWNER = 3
"""Exit code of a loader that does not own its table: another loader's lease was live at
start (``ConcurrentLoader``), or another loader took the table over while it ran (``Fenced``).
A supervisor need not restart it at once: the owner is loading."""


def configure_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the loader's arguments to ``parser``.

    Args:
        parser: an empty parser or sub-parser.

    Returns:
        The same parser.
    """
    parser.add_argument(
        "action",
        nargs="?",
        choices=("run", "status"),
        default="run",
        help="run the loader (default) or print committed offsets, lag and freshness",
    )
    parser.add_argument("--config", help="the loader's TOML file (else ICEFLOE_LOADER_CONFIG)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every batch")
    group = parser.add_argument_group("settings (override the file and the environment)")
    for flag, key in cli_flags():
        group.add_argument(flag, dest=_DEST + key, default=None, metavar="VALUE")
    return parser


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``load`` on the entry point's sub-parsers.

    Args:
        subparsers: the object returned by ``ArgumentParser.add_subparsers()``.

    Returns:
        The new sub-parser (its default ``func`` is ``run``).
    """
    parser = subparsers.add_parser(
        "load",
        help="load Kafka JSON into an Iceberg table (Spark streaming), or show its status",
        description="Stream JSON from Kafka into an Iceberg table, exactly once.",
    )
    configure_parser(parser)
    parser.set_defaults(func=run)
    return parser


def _argv(args: argparse.Namespace) -> list[str]:
    argv: list[str] = []
    if args.config:
        argv += ["--config", args.config]
    for flag, key in cli_flags():
        value = getattr(args, _DEST + key, None)
        if value is not None:
            argv += [flag, value]
    return argv


def run(args: argparse.Namespace) -> int:
    """Execute ``load`` or ``load status``.

    Args:
        args: parsed by a parser set up with ``configure_parser``.

    Returns:
        The exit code: 0 on a requested stop, ``EXIT_NOT_OWNER`` (3) when another loader owns
        the table (refused at start, or fenced off while running), 1 on any other error.
    """
    logging.basicConfig(
        level=logging.INFO if args.verbose or args.action == "run" else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for noisy in ("py4j", "py4j.clientserver", "py4j.java_gateway"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        config = load_config(argv=_argv(args))
        if args.action == "status":
            from loader.status import format_status, read_status

            print(format_status(read_status(config)))
            return 0
        from loader.job import LoaderJob

        return LoaderJob(config).run()
    except LoaderError as exc:
        print(f"icefloe load: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_NOT_OWNER if isinstance(exc, ConcurrentLoader) else 1


def build_parser() -> argparse.ArgumentParser:
    """The stand-alone parser of ``python -m loader``."""
    return configure_parser(
        argparse.ArgumentParser(prog="python -m loader", description=__doc__.split("\n")[0])
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m loader``.

    Args:
        argv: arguments without the program name (defaults to ``sys.argv[1:]``).

    Returns:
        The exit code.
    """
    return run(build_parser().parse_args(argv))
