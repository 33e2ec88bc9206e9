"""The ``icefloe scenario`` and ``icefloe soak`` commands: list scenarios, run one, some or all,
with live progress; check finished runs; generate fault schedules; soak.

    icefloe scenario list [--profile ci|full] [--scenarios DIR] [--loader NAME]
    icefloe scenario run NAME|FILE [...] | --all  [--profile ci] [--seed N] [--break NAME]
                                                   [--scenarios DIR]
                                                   [--breaks] [--reports DIR] [--keep]
                                                   [--loader NAME]
    icefloe scenario reference               every key, step, fault and check, as Markdown
    icefloe scenario check RUN_DIR [...]      recompute verdicts from a run's folder, offline
    icefloe scenario generate [--profile ci|break] [--loader KEY=VALUE] [--seed N] [--found F]
                              [--shrink-minutes M]
    icefloe soak [--minutes N] [--loader KEY=VALUE] [--loader NAME] [--seed N]

``--loader NAME`` puts another loader under test (``harness.loaders.kinds``); a scenario that
needs what it lacks is reported "not applicable", with the reason, and not run.

Each run prints its seed first (replay with ``--seed``), then one line per history event,
then a summary. Reports go under ``reports/``: a Markdown report and the history per run,
and one JUnit XML file per invocation.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import sys
from pathlib import Path
from typing import Any

from rich.markup import escape

from icefloe.harness.cli.stack import add_catalog_option, healthy_stack, open_stack
from icefloe.harness.console import print_table, say
from icefloe.harness.loaders.kinds import NAMES as LOADER_NAMES

_QUIET = {"step"}  # step boundaries are implied by the events they cause
_POLLED = {"duplicates", "commits", "dead_letters"}


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
    listing = sub.add_parser("list", help="the scenarios, where each comes from, and their breaks")
    listing.add_argument("--profile", default="ci", choices=("ci", "full"))
    add_scenarios_option(listing)
    listing.add_argument(
        "--loader", dest="loader_kind", metavar="NAME", help="also say which apply to this loader"
    )
    runs = sub.add_parser("run", help="run scenarios on the running stack")
    runs.add_argument("names", nargs="*", help="scenario names (file stems) or .toml files")
    runs.add_argument("--all", action="store_true", help="every scenario (yours and the kit's)")
    add_scenarios_option(runs)
    runs.add_argument("--profile", default="ci", choices=("ci", "full"))
    runs.add_argument("--seed", type=int, help="replay a run's decisions")
    runs.add_argument("--break", dest="break_name", help="run the named break of the scenario")
    runs.add_argument("--breaks", action="store_true", help="also run every scenario's breaks")
    runs.add_argument("--reports", type=Path, default=Path("reports"), help="reports folder")
    runs.add_argument("--keep", action="store_true", help="keep topics and tables afterwards")
    runs.add_argument("--quiet", action="store_true", help="no live progress")
    runs.add_argument("--loader", dest="loader_kind", metavar="NAME", help=_LOADER_HELP)
    runs.add_argument(
        "--allow-none-applicable",
        action="store_true",
        help="exit 0 when no named scenario applies (by default that fails: nothing was tested)",
    )
    add_catalog_option(runs)
    sub.add_parser(
        "reference", help="every key, step, fault and check of a scenario file, as Markdown"
    )
    check = sub.add_parser(
        "check", help="recompute a finished run's verdicts from its folder (no services)"
    )
    check.add_argument("run_dirs", nargs="+", type=Path, help="reports/runs/<run> folders")
    gen = sub.add_parser(
        "generate", help="fault schedules drawn by Hypothesis; a failure is shrunk and written"
    )
    gen.add_argument("--profile", default="ci", choices=("ci", "break"))
    _world_arguments(gen)
    gen.add_argument("--found", type=Path, help="where a failing schedule is written")
    gen.add_argument(
        "--shrink-minutes",
        type=float,
        help="time for shrinking a failure (each try is a run of minutes); the profile's "
        "own budget when unset. The smallest failure found by then is written",
    )
    parser.set_defaults(func=run)
    return parser


def add_scenarios_option(parser: argparse.ArgumentParser) -> None:
    """``--scenarios DIR``: a folder of a user's own scenarios (``model.folders``)."""
    parser.add_argument(
        "--scenarios",
        dest="scenario_dirs",
        action="append",
        type=Path,
        default=[],
        metavar="DIR",
        help="a folder of your own scenarios, looked in before the kit's (default: ./scenarios"
        " when there is one)",
    )


_LOADER_HELP = (
    f"the loader under test: {', '.join(LOADER_NAMES)} (icefloe by default; command:FILE is a "
    "loader described by a command line and a configuration template; docs/loaders.md)"
)


def _world_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--loader",
        action="append",
        default=[],
        metavar="KEY=VALUE|NAME",
        help="a [loader] key of the generated world (e.g. kafka.first_slice_records=0, or a "
        "break: 'disable=[\"fencing\"]'); "
        "or, without '=', " + _LOADER_HELP,
    )
    parser.add_argument("--seed", type=int, help="Hypothesis's seed (replays a search)")
    parser.add_argument("--reports", type=Path, default=Path("reports"), help="reports folder")
    parser.add_argument("--quiet", action="store_true", help="no live progress")


def add_soak_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``soak`` (generated chapters against one world until the time is up)."""
    parser = subparsers.add_parser(
        "soak", help="generated fault schedules against one long-lived world for N minutes"
    )
    parser.add_argument("--minutes", type=float, default=60.0, help="how long to inject faults")
    parser.add_argument(
        "--without",
        default="",
        metavar="LANE[,LANE]",
        help="lanes left out: loader,infra for a soak whose loader no fault stops "
        "(lanes: loader, infra, maintenance, schema, topic, traffic)",
    )
    _world_arguments(parser)
    parser.set_defaults(func=run_soak)
    return parser


def _world(args: argparse.Namespace) -> Any:
    import tomllib

    from icefloe.harness.scenarios.generative.generate import WorldOptions

    loader = {}
    for item in args.loader:
        key, sep, value = item.partition("=")
        if sep:
            loader[key.strip()] = tomllib.loads(f"v = {value.strip()}")["v"]
    return WorldOptions(loader=loader)


def _loader_kind(args: argparse.Namespace) -> Any:
    """The loader kind named by ``--loader NAME`` (None: icefloe's own).

    Raises:
        ValueError: more than one kind, or an unknown one.
    """
    from icefloe.harness.loaders.kinds import resolve

    named = getattr(args, "loader_kind", None)
    names = [named] if named else [i for i in getattr(args, "loader", []) if "=" not in i]
    if len(names) > 1:
        raise ValueError(f"--loader: one loader at a time, got {names}")
    return resolve(names[0]) if names else None


def run_generate(args: argparse.Namespace) -> int:
    """``scenario generate``: search a profile's schedules; 0 when none failed."""
    from icefloe.harness.scenarios.generative.explore import explore
    from icefloe.harness.scenarios.generative.generate import PROFILES
    from icefloe.harness.scenarios.reports import report

    if _loader_kind(args) is not None:
        say("[red]error[/] generated schedules drive icefloe's loader only (its fault points)")
        return 2
    stack = healthy_stack(args)
    profile = PROFILES[args.profile]
    if args.shrink_minutes is not None:
        profile = dataclasses.replace(profile, shrink_seconds=args.shrink_minutes * 60)
    start: list[float] = []
    found = explore(
        stack, profile, world=_world(args), reports_dir=args.reports,
        found_path=args.found, seed=args.seed, listener=None if args.quiet else progress(start),
        on_run=lambda r, s: say(f"[bold]{report.outcome(r)}[/] {len(s.faults)} faults, "
                                f"{r.elapsed_s:.0f} s: {r.run_dir / 'report.md'}"),
    )  # fmt: skip
    for line in report.summary_lines(found.runs):
        print(line)
    if found.hypothesis_error:
        say(f"[yellow]hypothesis[/] {escape(found.hypothesis_error)}")
    if found.written is not None:
        faults = len(found.smallest_schedule.faults) if found.smallest_schedule else "?"
        say(
            f"[red]failed[/]: the smallest failing schedule ({faults} faults) is in "
            f"{found.written}; run it again: icefloe scenario run {found.written}"
        )
        return 1
    return 0


def run_soak(args: argparse.Namespace) -> int:
    """``soak``: 0 when nothing was lost, duplicated, misrouted or left unhealed."""
    from icefloe.harness.scenarios.generative.soak import NotApplicable, soak
    from icefloe.harness.scenarios.generative.soakreport import summary, write

    interrupt_on_sigterm()
    start: list[float] = []
    try:
        result = soak(
            healthy_stack(args), args.minutes, reports_dir=args.reports, seed=args.seed,
            world=_world(args), listener=None if args.quiet else progress(start),
            loader=_loader_kind(args), without=[n for n in args.without.split(",") if n],
        )  # fmt: skip
    except NotApplicable as exc:
        say(f"[yellow]not applicable[/] {escape(str(exc))}")
        return 2
    path = write(result)
    for line in summary(result):
        say(escape(line))
    say(f"report: {path}")
    return 0 if result.passed else 1


def _quiet(event: Any) -> bool:
    """Steps, and repeated reads that found nothing new, make no line."""
    if event.kind in _QUIET:
        return True
    data = event.data
    return (
        event.kind == "read"
        and not (data.get("added") or data.get("removed"))
        and (event.name == "ids" or (event.name in _POLLED and not data.get("values")))
    )


def _shown(value: Any) -> Any:
    return f"<{len(value)}>" if isinstance(value, list | dict) and len(str(value)) > 60 else value


def progress(start: list[float], label: str = "") -> Any:
    """A listener that prints a run's events as they are recorded, timed from the first (each
    line after ``label``: whose run it is, when several print at once)."""

    def show(event: Any) -> None:
        if not start:
            start.append(event.time)
        if _quiet(event):
            return
        data = ", ".join(
            f"{k}={_shown(v)}"
            for k, v in event.data.items()
            if k not in ("message", "log", "statement")
        )
        if "statement" in event.data:
            data = f"{event.data['statement'][:80]} {data}"
        colour = {"fail": "red", "ok": "green"}.get(event.phase, "cyan")
        say(
            f"  {escape(label)}{event.time - start[0]:7.1f}s [{colour}]{event.kind:<7}[/] "
            f"{event.name} {event.phase} {data[:160]}"
        )

    return show


def interrupt_on_sigterm() -> None:
    """SIGTERM ends a run like Ctrl-C: its ``finally`` blocks heal the faults still injected
    (a paused catalog, a frozen loader) and stop its loaders, instead of leaving them so."""
    import signal

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


def run(args: argparse.Namespace) -> int:
    """Execute ``scenario list`` or ``scenario run``.

    Args:
        args: Parsed arguments.

    Returns:
        0 when every run passed, 1 otherwise, 2 for bad arguments.
    """
    from icefloe.harness.scenarios import model as scenarios

    interrupt_on_sigterm()
    if args.scenario_command == "check":
        return check_runs(args.run_dirs)
    if args.scenario_command == "generate":
        return run_generate(args)
    if args.scenario_command == "list":
        return _list(args)
    if args.scenario_command == "reference":
        from icefloe.harness.scenarios.reference import markdown

        sys.stdout.write(markdown())
        return 0
    if args.all:
        chosen = scenarios.discover_all(args.scenario_dirs, profile=args.profile)
    elif args.names:
        chosen = [scenarios.find_in(n, args.scenario_dirs, args.profile) for n in args.names]
    else:
        say("[red]error[/] name scenarios or give --all")
        return 2
    kind = _loader_kind(args)
    catalog = open_stack(args).catalog
    named = len(chosen)
    chosen = [s for s in chosen if _applies(s, kind, catalog)]
    if named and not chosen and not args.allow_none_applicable:
        say(
            f"[red]error[/] nothing was tested: none of the {named} scenario(s) applies"
            " (--allow-none-applicable makes that a success)"
        )
        return 1
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


def _list(args: argparse.Namespace) -> int:
    from icefloe.harness.loaders.capabilities import needs, not_applicable
    from icefloe.harness.scenarios import model as scenarios

    kind = _loader_kind(args)
    rows = []
    for s in scenarios.discover_all(args.scenario_dirs, profile=args.profile):
        row = [s.name, scenarios.source(s), s.title, ", ".join(sorted(s.breaks)) or "-"]
        if kind is not None:
            missing = not_applicable(needs(s), kind.capabilities)
            row.append("yes" if not missing else "no: " + "; ".join(missing))
        rows.append(tuple(row))
    header = ["scenario", "from", "title", "breaks"]
    if kind is not None:
        header.append(f"applies to {kind.name}")
    print_table(tuple(header), rows)
    return 0


def _applies(scenario: Any, kind: Any, catalog: Any) -> bool:
    """Whether ``scenario`` applies to loader ``kind`` (icefloe's when ``None``) on the stack's
    ``catalog``; says why not when it does not."""
    from icefloe.harness.loaders.capabilities import why_not

    missing = why_not(scenario, kind, catalog)
    if missing:
        on = f" on the {catalog.kind} catalog" if catalog.kind != "rest" else ""
        to = f" to {kind.name}" if kind is not None else ""
        say(f"[yellow]not applicable[/] {scenario.name}{to}{on}: {escape('; '.join(missing))}")
    return not missing


def check_runs(run_dirs: list[Path]) -> int:
    """Recompute each run's verdicts from its history and ledgers; 0 when all pass again."""
    from icefloe.harness.scenarios.checks.verdict import summarize
    from icefloe.harness.scenarios.runner import demonstrated, judge, saved_run

    passed = True
    for run_dir in run_dirs:
        scenario, history, brk, seed = saved_run(run_dir)
        results = judge(scenario, history, run_dir, brk)
        verdict = summarize(results) if results else "unknown"
        ok = verdict == "valid" if brk is None else demonstrated(scenario, brk, results)
        passed = passed and ok
        label = scenario.name + (f" --break {brk}" if brk else "")
        say(f"[bold]{'PASS' if ok else 'FAIL'}[/] {label} (seed {seed}): {verdict}, from {run_dir}")
        for r in results:
            say(escape(f"    {r.verdict:<8} {r.check}: {r.summary}"))
    return 0 if passed else 1


def run_plan(plan: list[tuple[Any, str | None]], args: argparse.Namespace) -> int:
    """Run (scenario, break) pairs on the stack and write the reports."""
    from icefloe.harness.scenarios.reports import report
    from icefloe.harness.scenarios.runner import RunOptions, run_scenario

    stack = healthy_stack(args)
    results = []
    for s, brk in plan:
        label = s.name + (f" (break {brk})" if brk else "")
        start: list[float] = []
        options = RunOptions(
            seed=args.seed,
            break_name=brk,
            reports_dir=args.reports,
            keep=args.keep,
            listener=None if args.quiet else progress(start),
            loader=_loader_kind(args),
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
