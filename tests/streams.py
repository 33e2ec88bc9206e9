"""The test suite in two parts on one stack: shared by two pytest workers at once, then alone.

Most tests use the stack only through topics, tables and loaders of their own, and mostly wait
(paced publishes, a loader's triggers, leases, faults' windows): two of them at once on two
cores take little longer each than one alone. A test that strikes what every test on the stack
shares (a service killed or paused, Toxiproxy's proxies: ``FaultKind.shared``) is marked
``exclusive`` and runs after the others, with the stack to itself.

``python -m tests.streams [--streams N] [--backend B] [-m EXPR] -- PYTEST_ARGS...``:

1. starts the stack (``--backend``) if it is not running, so that both workers find it up and
   neither stops it;
2. runs ``pytest -n N`` on the tests that match ``EXPR and not exclusive`` (tests of one
   ``xdist_group`` go to one worker, in their order: the docs' blocks and the workshop, which
   share the command line's named loaders);
3. runs ``pytest`` on ``EXPR and exclusive``;
4. stops the stack if it started it (``ICEFLOE_KEEP_STACK=1`` leaves it running).

A ``--junitxml=PATH`` among the arguments becomes ``PATH`` with ``-shared`` and ``-alone``
before its suffix, one file per part. The exit code is the first part's failure, else the
second's; a part that selects nothing is not a failure. ``--streams 1`` runs the first part
without workers.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

NO_TESTS = 5
"""pytest's exit code when nothing was selected."""


def _junit(args: list[str], part: str) -> list[str]:
    out = []
    for arg in args:
        if arg.startswith("--junitxml="):
            path = Path(arg.removeprefix("--junitxml="))
            arg = f"--junitxml={path.with_name(f'{path.stem}-{part}{path.suffix}')}"
        out.append(arg)
    return out


def _pytest(markers: str, args: list[str], workers: int) -> int:
    command = [sys.executable, "-m", "pytest", "-m", markers]
    if workers > 1:
        command += ["-n", str(workers), "--dist", "loadgroup"]
    print("+", " ".join(command + args), flush=True)
    code = subprocess.run(command + args, check=False).returncode
    return 0 if code == NO_TESTS else code


def _icefloe(*argv: str) -> None:
    print("+ icefloe", " ".join(argv), flush=True)
    subprocess.run([sys.executable, "-m", "icefloe.harness.cli.main", *argv], check=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.streams", description=__doc__)
    parser.add_argument("--streams", type=int, default=2, help="pytest workers (default 2)")
    parser.add_argument("--backend", default=None, help="local or containers")
    parser.add_argument("-m", dest="markers", default="not slow", help="marker expression")
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args(argv)
    from icefloe.harness.stack.backends import make_stack
    from icefloe.harness.stack.config import load as load_config

    backend = args.backend or os.environ.get("ICEFLOE_BACKEND") or "local"
    extra = [f"--backend={backend}"] if args.backend else []
    config = load_config()
    started = False
    if not make_stack(config, backend).healthy():
        # Through the command line, in a process of its own: the services outlive it, and a
        # service a test kills is no child of this process, left unreaped.
        _icefloe("up", "--no-provision", f"--catalog={config.catalog}", f"--backend={backend}")
        started = True
    try:
        shared = _pytest(
            f"({args.markers}) and not exclusive",
            extra + _junit(args.pytest_args, "shared"),
            args.streams,
        )
        alone = _pytest(
            f"({args.markers}) and exclusive", extra + _junit(args.pytest_args, "alone"), 1
        )
    finally:
        if started and os.environ.get("ICEFLOE_KEEP_STACK") != "1":
            _icefloe("down", f"--backend={backend}")
    return shared or alone


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
