"""Benchmark: warm `up` time to all-healthy, and each service's resident memory when idle.

Runs a stack in a throw-away run directory (so a running dev stack's data is untouched, though
its ports must be free), starts it `--rounds` times from stopped, waits `--idle` seconds, and
prints the numbers. Nothing is asserted: this reports, it does not judge.

    python benchmarks/bench_stack.py --rounds 3 --idle 30
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from icefloe.harness.stack import config
from icefloe.harness.stack.lakehouse import Stack


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--idle", type=float, default=30.0, help="seconds idle before measuring")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="icefloe-bench-") as tmp:
        stack = Stack(config.load(run_dir=Path(tmp) / "run"))
        stack.down()
        first = stack.up()  # formats Kafka storage and creates the bucket: not a warm start
        stack.down()
        times = []
        for _ in range(args.rounds):
            times.append(stack.up())
            stack.down()
        stack.up()
        time.sleep(args.idle)
        rss = {s.name: s.rss_bytes for s in stack.status()}
        stack.down()
    print(f"first up (empty run dir): {first:.1f} s")
    rounds = ", ".join(f"{t:.1f}" for t in times)
    median = statistics.median(times)
    print(f"warm up to all-healthy, {args.rounds} rounds: median {median:.1f} s ({rounds})")
    print(f"idle resident memory after {args.idle:.0f} s:")
    for name, value in rss.items():
        print(f"  {name:8s} {value / 2**20:8.0f} MiB")
    print(f"  {'total':8s} {sum(rss.values()) / 2**20:8.0f} MiB")


if __name__ == "__main__":
    main()
