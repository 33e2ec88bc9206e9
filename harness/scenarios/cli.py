"""The ``icefloe scenario`` command: list scenarios, run one, some or all, with live progress.

    icefloe scenario list [--profile ci|full]
    icefloe scenario run NAME [NAME ...] | --all  [--profile ci] [--seed N] [--break NAME]
                                                   [--breaks] [--reports DIR] [--keep]

Each run prints its seed first (replay with ``--seed``), then one line per history event,
then a summary. Reports go under ``reports/``: a Markdown report and the history per run,
and one JUnit XML file per invocation.
"""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path
from typing import Any

from harness.console import print_table, say

_QUIET = {"step"}  # step boundaries are implied by the events they cause


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``scenario`` on the entry point's sub-parsers.

    Args:
        subparsers: The object returned by ``ArgumentParser.add_subparsers()``.

    Returns:
        The new sub-parser.
    """
    parser = subparsers.add_parser(
        "scenario", help="list or run end-to-end scenarios (scenarios/*.toml)"
    )
    sub = parser.add_subparsers(dest="scenario_command", required=True)
    listing = sub.add_parser("list", help="the scenarios and their breaks")
    listing.add_argument("--profile", default="ci", choices=("ci", "full"))
    runs = sub.add_parser("run", help="run scenarios on the running stack")
    runs.add_argument("names", nargs="*", help="scenario names (file stems)")
    runs.add_argument("--all", action="store_true", help="every scenario")
    runs.add_argument("--profile", default="ci", choices=("ci", "full"))
    runs.add_argument("--seed", type=int, help="replay a run's decisions")
    runs.add_argument("--break", dest="break_name", help="run the named break of the scenario")
    runs.add_argument("--breaks", action="store_true", help="also run every scenario's breaks")
    runs.add_argument("--reports", type=Path, default=Path("reports"), help="reports folder")
    runs.add_argument("--keep", action="store_true", help="keep topics and tables afterwards")
    runs.add_argument("--quiet", action="store_true", help="no live progress")
    parser.set_defaults(func=run)
    return parser


def _progress(start: list[float]) -> Any:
    def show(event: Any) -> None:
        if not start:
            start.append(event.time)
        if event.kind in _QUIET:
            return
        data = ", ".join(
            f"{k}={v}" for k, v in event.data.items() if k not in ("message", "log", "statement")
        )
        if "statement" in event.data:
            data = f"{event.data['statement'][:80]} {data}"
        colour = {"fail": "red", "ok": "green"}.get(event.phase, "cyan")
        say(
            f"  {event.time - start[0]:7.1f}s [{colour}]{event.kind:<7}[/] "
            f"{event.name} {event.phase} {data[:160]}"
        )

    return show


def run(args: argparse.Namespace) -> int:
    """Execute ``scenario list`` or ``scenario run``.

    Args:
        args: Parsed arguments.

    Returns:
        0 when every run passed, 1 otherwise, 2 for bad arguments.
    """
    from harness.scenarios import model as scenarios

    if args.scenario_command == "list":
        rows = []
        for s in scenarios.discover(profile=args.profile):
            rows.append((s.name, s.title, ", ".join(sorted(s.breaks)) or "-"))
        print_table(("scenario", "title", "breaks"), rows)
        return 0
    if args.all:
        chosen = scenarios.discover(profile=args.profile)
    elif args.names:
        chosen = [scenarios.find(n, profile=args.profile) for n in args.names]
    else:
        say("[red]error[/] name scenarios or give --all")
        return 2
    plan: list[tuple[Any, str | None]] = []
    for s in chosen:
        if args.break_name:
            if args.break_name not in s.breaks:
                say(f"[red]error[/] {s.name} has no break {args.break_name!r}")
                return 2
            plan.append((s, args.break_name))
            continue
        plan.append((s, None))
        if args.breaks:
            plan += [(s, b) for b in sorted(s.breaks)]
    return run_plan(plan, args)


def run_plan(plan: list[tuple[Any, str | None]], args: argparse.Namespace) -> int:
    """Run (scenario, break) pairs on the stack and write the reports."""
    from harness.scenarios import report
    from harness.scenarios.runner import RunOptions, run_scenario
    from harness.stack.backends import make_stack
    from harness.stack.config import load as load_config

    stack = make_stack(
        load_config(getattr(args, "stack_config", None)), getattr(args, "backend", None)
    )
    if not stack.healthy():
        say("[red]error[/] the stack is not healthy; start it with `icefloe up`")
        return 1
    results = []
    for s, brk in plan:
        label = s.name + (f" (break {brk})" if brk else "")
        start: list[float] = []
        options = RunOptions(
            seed=args.seed,
            break_name=brk,
            reports_dir=args.reports,
            keep=args.keep,
            listener=None if args.quiet else _progress(start),
        )
        say(f"[bold]scenario {label}[/]: {s.title}")
        result = run_scenario(s, stack, options)
        path = report.write_markdown(result)
        say(f"[bold]{report.outcome(result)}[/] {label}: seed {result.seed}, report {path}")
        results.append(result)
        if not stack.healthy():
            # A failed outage scenario must not take the next ones down with it.
            stack.up()
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    junit = args.reports / f"scenarios-{stamp}.xml"
    junit.parent.mkdir(parents=True, exist_ok=True)
    junit.write_text(report.junit_xml(results), encoding="utf-8")
    for line in report.summary_lines(results):
        print(line)
    print(f"JUnit XML: {junit}")
    return 0 if all(r.passed for r in results) else 1
