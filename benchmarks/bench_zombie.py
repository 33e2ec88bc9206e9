"""Zombie-writer trials: a loader frozen at a random moment past its lease, a successor, a thaw.

Repeats the case that broke exactly-once before commits were fenced, on the running stack
(``icefloe up``, same ``ICEFLOE_RUN_DIR``/``ICEFLOE_STACK_*``): loader A (lease 10 s,
trigger 2 s) loads a topic of 2 partitions published at ``--rate`` msg/s; after a random
delay it is frozen (SIGSTOP of its process group) wherever it happens to be; once its lease
has run out loader B (another loader id, its own checkpoint) starts; ``--run-s`` later A is
thawed (A stays frozen for about 35-45 s in all). Each trial is a run of the scenario engine
built from ``scenarios/15_zombie_writer.toml`` with those settings, judged by its checkers
against the publisher's ledger. Prints one line per trial and the totals; asserts nothing::

    python benchmarks/bench_zombie.py --trials 10 --rate 3000 --seconds 60
"""

from __future__ import annotations

import argparse
import random
import time
import tomllib
from pathlib import Path
from typing import Any

from icefloe.harness.scenarios.model import SCENARIO_DIR, parse
from icefloe.harness.scenarios.runner import RunOptions, run_scenario
from icefloe.harness.stack.lakehouse import Stack


def trial_doc(
    template: dict[str, Any], rate: int, seconds: int, delay_s: float, run_s: float
) -> dict[str, Any]:
    """The zombie scenario with an outside freeze after ``delay_s`` and the given load."""
    doc = dict(template)
    doc.pop("breaks", None)
    doc["vars"] = {"count": rate * seconds, "rate": rate}
    doc["profiles"] = {}
    doc["loader"] = {"trigger_interval": 2.0, "lease_ttl": 10.0}
    doc["steps"] = [
        {"do": "start_loader"},
        {"do": "publish", "phase": "steady", "count": "$count", "background": True},
        {"do": "sleep", "seconds": delay_s},
        {"do": "fault", "fault": "zombie_loader", "freeze": "now", "run_s": run_s},
        {"do": "await_loaded", "timeout_s": 900},
        {"do": "stop_loader"},
    ]
    doc["checks"] = [
        {"check": "exactly_once"},
        {"check": "dead_letter"},
        {"check": "faults_exercised", "fault": "zombie_loader", "min_injections": 1},
        {"check": "loader_steady"},
    ]
    return doc


def _data(result: Any, name: str) -> dict[str, Any]:
    for event in result.history or []:
        if event.name == name and event.phase == "ok":
            return dict(event.data)
    return {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--rate", type=int, default=3000, help="messages per second")
    parser.add_argument("--seconds", type=int, default=60, help="how long to publish")
    parser.add_argument("--run-s", type=float, default=12.0, help="B alone before A thaws")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--reports", type=Path, default=Path("reports"))
    args = parser.parse_args()

    template = tomllib.loads((SCENARIO_DIR / "15_zombie_writer.toml").read_text())
    rng = random.Random(args.seed)
    stack = Stack()
    print(f"{'trial':>5} {'delay s':>8} {'frozen s':>9} {'A exit':>6} {'rows':>8} "
          f"{'expected':>9} {'dup':>5} {'lost':>5} {'B steady':>8}  verdict")  # fmt: skip
    totals = {"trials": 0, "passed": 0, "duplicated": 0, "lost": 0, "fenced": 0}
    for trial in range(1, args.trials + 1):
        delay = round(rng.uniform(4.0, 30.0), 1)
        doc = trial_doc(template, args.rate, args.seconds, delay, args.run_s)
        scenario = parse(doc, name="15_zombie_writer_trial")
        began = time.monotonic()
        result = run_scenario(
            scenario, stack, RunOptions(seed=rng.randrange(2**31), reports_dir=args.reports)
        )
        checks = {c.check: c for c in result.checks}
        once = checks.get("exactly_once")
        stats = dict(once.stats) if once else {}
        anomalies = dict(once.anomalies) if once else {}
        dup = anomalies["duplicated"].count if "duplicated" in anomalies else 0
        lost = anomalies["lost"].count if "lost" in anomalies else 0
        inject, heal = _data(result, "zombie_loader.inject"), _data(result, "zombie_loader.heal")
        frozen = "?"
        events = list(result.history or [])
        frozen_at = [e.time for e in events if e.name == "frozen"]
        thawed_at = [e.time for e in events if e.name == "thawed"]
        if frozen_at and thawed_at:
            frozen = f"{thawed_at[0] - frozen_at[0]:.1f}"
        steady = checks.get("loader_steady")
        totals["trials"] += 1
        totals["passed"] += int(result.passed)
        totals["duplicated"] += dup
        totals["lost"] += lost
        totals["fenced"] += int(heal.get("zombie_exit_code") == 3)
        print(
            f"{trial:>5} {delay:>8} {frozen:>9} {heal.get('zombie_exit_code')!s:>6} "
            f"{stats.get('rows', '?')!s:>8} {stats.get('expected', '?')!s:>9} {dup:>5} {lost:>5} "
            f"{steady.verdict if steady else '?':>8}  {result.verdict}"
            f"{' ' + result.error if result.error else ''} ({time.monotonic() - began:.0f} s, "
            f"B started in {inject.get('successor_start_s', '?')} s)",
            flush=True,
        )
    print(
        f"{totals['passed']}/{totals['trials']} trials valid; {totals['duplicated']} duplicated, "
        f"{totals['lost']} lost; A stepped down (exit 3) in {totals['fenced']}"
    )


if __name__ == "__main__":
    main()
