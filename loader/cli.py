"""Command line: ``icefloe load [run|status|config] --config FILE [--setting value ...]``.

``configure_parser(parser)`` adds the loader's arguments (every non-secret
setting is a flag, ``--kafka-bootstrap``, with its help line; see
``loader.config``) and ``run(args)`` executes them; ``python -m icefloe.loader`` and
``icefloe load`` (the harness's ``harness.cli.load``) use both. Spark is
imported only when the loader actually runs.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence

from icefloe.loader.config import LoaderConfig, add_flags, from_args
from icefloe.loader.errors import (
    EXIT_NOT_OWNER,
    EXIT_STALLED,
    CatalogUnavailable,
    ConcurrentLoader,
    LoaderError,
)
from icefloe.loader.settings import Defaults

__all__ = ["build_parser", "configure_parser", "main", "run"]


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
        choices=("run", "status", "config"),
        default="run",
        help="run the loader (default), print committed offsets, lag and freshness, or print "
        "the configuration as a TOML file (secrets only as their _file names)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log every batch")
    add_flags(parser.add_argument_group("settings (override the file and the environment)"))
    return parser


class Py4JRetryNotice(logging.Filter):
    """Drops py4j's INFO notice of a command it sends again, with its traceback.

    py4j logs it on the root logger, not its own, so the level set for ``py4j`` misses it. It
    comes when the JVM goes away first (a stop, the end of a run): the notice, a traceback, and
    nothing wrong. The same failure, when py4j gives up, is logged at ERROR and kept.
    """

    MESSAGE = "Exception while sending command."

    def filter(self, record: logging.LogRecord) -> bool:
        return not (
            record.name == "root"
            and record.levelno == logging.INFO
            and record.getMessage() == self.MESSAGE
        )


def run(
    args: argparse.Namespace,
    prepare: Callable[[LoaderConfig], LoaderConfig] | None = None,
    defaults: Defaults | None = None,
) -> int:
    """Execute ``load``, ``load status`` or ``load config``.

    Args:
        args: parsed by a parser set up with ``configure_parser``.
        prepare: completes the loaded configuration before the loader runs with it (the
            harness fills in the Spark runtime it provisioned).
        defaults: values for settings the file, environment and flags leave unset (the
            harness offers a local stack's endpoints and credentials).

    Returns:
        The exit code: 0 on a requested stop, ``EXIT_STALLED`` (4) when a service did not
        answer within ``progress_timeout``, ``EXIT_NOT_OWNER`` (3) when another loader owns
        the table (refused at start, or fenced off while running), 1 on any other error.
    """
    logging.basicConfig(
        level=logging.INFO if args.verbose or args.action == "run" else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for noisy in ("py4j", "py4j.clientserver", "py4j.java_gateway"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    root = logging.getLogger()
    if not any(isinstance(f, Py4JRetryNotice) for f in root.filters):
        root.addFilter(Py4JRetryNotice())
    try:
        config = from_args(args, defaults=defaults)
        if args.action == "status":
            from icefloe.loader.run.status import format_status, read_status

            print(format_status(read_status(config)))
            return 0
        if prepare is not None:
            config = prepare(config)
        if args.action == "config":
            print(config.to_toml(), end="")
            return 0
        from icefloe.loader.run.job import LoaderJob
        from icefloe.loader.run.spark import check_runtime

        check_runtime(config)
        return LoaderJob(config).run()
    except LoaderError as exc:
        print(f"icefloe load: {type(exc).__name__}: {exc}", file=sys.stderr)
        if isinstance(exc, ConcurrentLoader):
            return EXIT_NOT_OWNER
        return EXIT_STALLED if isinstance(exc, CatalogUnavailable) else 1


def build_parser() -> argparse.ArgumentParser:
    """The stand-alone parser of ``python -m icefloe.loader``."""
    return configure_parser(
        argparse.ArgumentParser(prog="python -m icefloe.loader", description=__doc__.split("\n")[0])
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m icefloe.loader``.

    Args:
        argv: arguments without the program name (defaults to ``sys.argv[1:]``).

    Returns:
        The exit code.
    """
    return run(build_parser().parse_args(argv))
