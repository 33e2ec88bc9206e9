"""Publisher throughput: messages per second for generation alone and for produce.

Prints numbers; asserts nothing about timing. Examples::

    python benchmarks/bench_publisher.py --count 500000
    python benchmarks/bench_publisher.py --count 1000000 --bootstrap 127.0.0.1:9092 --topic bench
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from icefloe.publisher.messages import GenerationConfig, generate
from icefloe.publisher.producer import Publisher, PublisherConfig
from icefloe.publisher.rows import ReferencePools


def bench_generation(count: int, seed: int, malformed: float) -> float:
    """Return messages/s for generating ``count`` reference messages."""
    ReferencePools.for_seed(seed)  # pools are a one-off cost per seed; time the stream
    config = GenerationConfig(seed=seed, malformed_fraction=malformed)
    start = time.perf_counter()
    for _ in generate(config, count):
        pass
    return count / (time.perf_counter() - start)


def bench_produce(count: int, seed: int, bootstrap: str, topic: str) -> tuple[float, int]:
    """Return messages/s and failures for generate+produce+ledger into a broker."""
    ReferencePools.for_seed(seed)
    with tempfile.TemporaryDirectory() as tmp:
        config = PublisherConfig(
            generation=GenerationConfig(seed=seed), ledger_dir=Path(tmp), progress=False
        )
        result = Publisher(bootstrap, topic, config).publish(count)
    return result.rate, result.failed


def main() -> None:
    """Parse arguments and print the measurements."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=500_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bootstrap", help="broker to produce to; skip produce if absent")
    parser.add_argument("--topic", default="icefloe-bench")
    args = parser.parse_args()
    rate = bench_generation(args.count, args.seed, 0.0)
    print(f"generation only (reference rows): {rate:,.0f} msg/s over {args.count:,}")
    rate = bench_generation(args.count // 5, args.seed, 0.05)
    label = "generation only (5% malformed, all kinds incl. 1 MiB oversized)"
    print(f"{label}: {rate:,.0f} msg/s over {args.count // 5:,}")
    if args.bootstrap:
        rate, failed = bench_produce(args.count, args.seed, args.bootstrap, args.topic)
        print(f"generation + produce + ledger:    {rate:,.0f} msg/s ({failed} failed)")
    else:
        print("generation + produce: skipped (no --bootstrap)")


if __name__ == "__main__":
    main()
