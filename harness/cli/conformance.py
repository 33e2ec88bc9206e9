"""``icefloe conformance``: run every applicable scenario against each loader, write the table.

    icefloe conformance [--loader NAME ...] [--scenario NAME ...] [--profile ci]
                        [--budget-minutes M] [--no-semantics] [--seed N] [--reports DIR]
    icefloe conformance --merge JSON ...      # one table from a run split into parts
    icefloe conformance --reproduce JSON      # each finding run again: does it show again?
    icefloe conformance --finding RUN_DIR ... # a finding's page from its run and runs again

By default the loaders are icefloe's and the Kafka Connect sink, the scenarios every file of
``scenarios/`` and the hostile inputs (``scenarios/semantics/hostile_inputs.toml``). A scenario
needing what a loader lacks is not applicable, with the reason; past the time budget the runs
left are "not run" (so the table stays honest about its coverage). The report goes to
``<reports>/conformance-<time>.md`` with the command and the commit; each finding names its
seed and the scenario file that reproduces it, and has a page of its own under
``<reports>/findings/`` (``harness.conformance.findings``: the mechanism as the loader's own
log, commits and positions show it, and the upstream threads it matches, as far as it does).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.markup import escape

from icefloe.harness.cli.scenario import add_scenarios_option
from icefloe.harness.console import say
from icefloe.harness.loaders.kinds import NAMES as LOADER_NAMES
from icefloe.harness.resources import commit, kit_file
from icefloe.loader.config import CATALOG_TYPES

DEFAULT_LOADERS = ("icefloe", "kafka-connect")
SEMANTICS = kit_file("scenarios", "semantics", "hostile_inputs.toml")
"""The hostile-inputs scenario, run against every loader."""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``conformance`` on the entry point's sub-parsers."""
    parser = subparsers.add_parser(
        "conformance", help="the scenarios against each loader: a scenario x loader table"
    )
    parser.add_argument(
        "--loader",
        action="append",
        metavar="NAME",
        help=f"a loader to test: {', '.join(LOADER_NAMES)} (repeat; default: "
        + " and ".join(DEFAULT_LOADERS) + ")",
    )  # fmt: skip
    parser.add_argument(
        "--scenario", action="append", metavar="NAME", help="only these scenarios (repeat)"
    )
    add_scenarios_option(parser)
    parser.add_argument("--profile", default="ci", choices=("ci", "full"))
    parser.add_argument("--seed", type=int, help="every run's seed (replays their decisions)")
    parser.add_argument(
        "--budget-minutes",
        type=float,
        default=45.0,
        help="start no run past this many minutes (the rest are reported as not run)",
    )
    parser.add_argument("--no-semantics", action="store_true", help="skip the hostile inputs")
    parser.add_argument(
        "--catalog",
        type=catalog_list,
        default=None,
        metavar="KINDS",
        help=f"the stack's catalog, or several ({','.join(CATALOG_TYPES)}): the table gains the "
        "catalog as an axis, the stack moving to each in turn (default: the running stack's)",
    )
    parser.add_argument(
        "--one-at-a-time",
        action="store_true",
        help="never run two loaders' runs of a scenario side by side (by default they share the "
        "machine when the scenario faults no shared service and judges no seconds)",
    )
    parser.add_argument("--reports", type=Path, default=Path("reports"), help="reports folder")
    parser.add_argument("--quiet", action="store_true", help="no live progress")
    parser.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        metavar="JSON",
        help="run nothing: one table from earlier runs' conformance-*.json (a run split into "
        "parts, each a short stack job); a later cell replaces an earlier one",
    )
    parser.add_argument(
        "--reproduce",
        type=Path,
        metavar="JSON",
        help="run each finding of an earlier conformance-*.json again (its scenario file, seed "
        "and loader) and report whether every anomaly it found shows again; exit 1 if not",
    )
    parser.add_argument(
        "--finding",
        nargs="+",
        type=Path,
        metavar="RUN_DIR",
        help="run nothing: write a finding's page from its run's folder, the runs made again "
        "with its scenario file and seed after it",
    )
    parser.set_defaults(func=run)
    return parser


def write_finding(run_dirs: list[Path], reports: Path) -> Path:
    """A finding's page (``harness.conformance.findings``) from its run and the runs made
    again after it, under ``<reports>/findings/``."""
    from icefloe.harness.conformance import findings, upstream

    first, *again = [findings.read_run(d) for d in run_dirs]
    text = findings.page(first, again, upstream.weigh(first))
    out = reports / "findings" / f"{first.scenario}--{first.loader}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out


def catalog_list(text: str) -> list[str]:
    """``rest,glue`` as a list of catalog kinds, each checked."""
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in CATALOG_TYPES]
    if unknown or not kinds:
        raise argparse.ArgumentTypeError(
            f"{text!r}: catalogs are one or more of {', '.join(CATALOG_TYPES)}, comma-separated"
        )
    return kinds


def _commit() -> str:
    """The kit's commit (``-dirty`` when its checkout has changes), or ``unknown`` installed."""
    return commit() or "unknown"


def read_fates(run_dir: Path) -> list[Any]:
    """What a loader did with each hostile input, from the folder of a run of the semantics
    scenario (its history and ledgers: no service is asked)."""
    from icefloe.harness.conformance.semantics import fates
    from icefloe.harness.history import History, select
    from icefloe.harness.observer import observer_of
    from icefloe.harness.scenarios.checks.facts.reads import dead_letters, ledger_entries, phases

    history = History.read(run_dir / "history.jsonl").events
    counts: dict[str, int] = {}
    for event in select(history, "read", "table", "ok")[-1:]:
        counts = {str(k): int(n) for k, n in event.data.get("values", [])}
    letters = dead_letters(history)
    rows: list[Any] = []
    for event in select(history, "sql", "hostile_rows", "ok")[-1:]:
        rows = list(event.data.get("values") or [])
    after = phases(run_dir).get("after", [])
    stopped_at = None
    observer = observer_of(history)
    for event in select(history, "loader", "exit"):
        named = observer.halted_at(str(event.data.get("message", "")))
        if not event.data.get("expected") and named:
            stopped_at = (named[0][1], named[0][2])
            break
    return fates(ledger_entries(run_dir), counts, letters, rows, after, stopped_at)


def merge(paths: list[Path], reports: Path) -> Path:
    """One report from the JSON of several conformance runs (their cells and hostile inputs).

    Args:
        paths: ``conformance-*.json`` files, oldest first (a later cell replaces an earlier).
        reports: Where the merged report goes.

    Returns:
        The merged Markdown report.
    """
    from icefloe.harness.conformance import semantics, table

    cells: dict[tuple[str, str], table.Cell] = {}
    fates: dict[str, list[Any]] = {}
    minutes = 0.0
    sources = []
    for path in paths:
        doc = json.loads(path.read_text())
        for raw in doc["cells"]:
            cell = table.Cell(**raw)
            cell = dataclasses.replace(cell, file=table.file_name(cell.file))
            cells[(cell.scenario, cell.loader)] = cell
        for name, found in doc.get("semantics", {}).items():
            fates[name] = [semantics.Fate(**{**f, "stored": tuple(f["stored"])}) for f in found]
        for name, run_dir in doc.get("semantics_runs", {}).items():
            if Path(run_dir, "history.jsonl").exists():  # read again, as this version reads it
                fates[name] = read_fates(Path(run_dir))
        minutes += float(doc.get("minutes", 0.0))
        sources.append(f"`{doc.get('command', '?')}` at {doc.get('commit', '?')}")
    loaders = list(dict.fromkeys(loader for _, loader in cells))
    order = sorted(cells.values(), key=lambda c: (c.scenario, loaders.index(c.loader)))
    text = [
        "# Conformance (merged)",
        "",
        f"From {len(paths)} runs, {minutes:.1f} minutes of runs in all: " + "; ".join(sources),
        "",
        table.markdown(order, loaders),
    ]
    if fates:
        text += ["## Hostile inputs", "", semantics.markdown(fates)]
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    reports.mkdir(parents=True, exist_ok=True)
    out = reports / f"conformance-merged-{stamp}.md"
    out.write_text("\n".join(text) + "\n")
    return out


def _run(
    scenario: Any,
    stack: Any,
    kind: Any,
    seed: int | None,
    args: argparse.Namespace,
    label: str = "",
) -> Any:
    """One run of ``scenario`` against loader ``kind``, with the command's reports folder and
    live progress (unless ``--quiet``; each line starts with ``label`` when given)."""
    from icefloe.harness.cli.scenario import progress
    from icefloe.harness.scenarios.runner import RunOptions, run_scenario

    start: list[float] = []
    options = RunOptions(
        seed=seed, reports_dir=args.reports, loader=kind,
        listener=None if args.quiet else progress(start, label),
    )  # fmt: skip
    return run_scenario(scenario, stack, options)


def _cells(
    scenario: Any, kinds: list[Any], stack: Any, args: argparse.Namespace, together: bool
) -> list[tuple[Any, Any]]:
    """Run ``scenario`` against each of ``kinds``, all at once when ``together``, else one
    after the other; return each loader's (cell, result) in the order of ``kinds``."""
    from concurrent.futures import ThreadPoolExecutor

    from icefloe.harness.conformance import table
    from icefloe.harness.scenarios.reports import report

    def one(kind: Any) -> tuple[Any, Any]:
        result = _run(scenario, stack, kind, args.seed, args, f"{kind.name} " if together else "")
        replay = f"{report.replay_command(result)} --loader {kind.name}"
        if stack.config.catalog != "rest":
            replay += f" --catalog {stack.config.catalog}"
        cell = table.from_result(result, kind.name, replay)
        report.write_markdown(result)
        on = f" on {kind.name}" if together else ""
        say(f"  {escape(cell.text())}{on} in {result.elapsed_s:.0f} s; {result.run_dir}")
        return cell, result

    if not together:
        return [one(kind) for kind in kinds]
    with ThreadPoolExecutor(max_workers=len(kinds), thread_name_prefix="cell") as pool:
        return list(pool.map(one, kinds))


def reproduce(path: Path, args: argparse.Namespace) -> int:
    """Run each finding of an earlier table again and write whether it showed again.

    A finding is reproduced when every anomaly it named (``check: anomaly``) is found again by
    the run of its scenario file, with its seed, against its loader; the counts may differ (a
    fault lands at another instant of a batch), and anomalies the first run did not find are
    listed too.

    Args:
        path: A ``conformance-*.json``.
        args: The command's options (``--reports``, ``--quiet``, the stack's).

    Returns:
        0 when every finding was reproduced, else 1.
    """
    from icefloe.harness.cli.stack import open_stack
    from icefloe.harness.conformance import table
    from icefloe.harness.loaders.kinds import resolve
    from icefloe.harness.scenarios import model

    doc = json.loads(path.read_text())
    profile = doc.get("profile", args.profile)
    findings = [table.Cell(**c) for c in doc["cells"] if c["outcome"] == table.ANOMALIES]
    began = time.monotonic()
    rows = []
    failed = 0
    for cell in findings:
        file = table.file_path(cell.file)
        say(f"[bold]{cell.scenario}[/] on [bold]{cell.loader}[/], seed {cell.seed}")
        scenario = model.find(str(file), profile=profile)
        # A table of several catalogs names each column "<loader> on <catalog>".
        loader, _, catalog = cell.loader.partition(" on ")
        stack = open_stack(argparse.Namespace(**{**vars(args), "catalog": catalog or None}))
        if not stack.healthy():
            stack.up()
        result = _run(scenario, stack, resolve(loader), cell.seed, args)
        again = table.from_result(result, cell.loader, "")
        shown, verdict = reproduced(cell.anomalies, again.anomalies)
        failed += not shown
        say(f"  {escape(verdict)} in {result.elapsed_s:.0f} s; {result.run_dir}")
        rows.append(
            f"| {cell.scenario} | {cell.loader} | {cell.seed} | {_counts(cell.anomalies)} | "
            f"{_counts(again.anomalies)} | {verdict} |"
        )
        if not stack.healthy():
            stack.up()
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    text = [
        f"# Conformance findings run again, {stamp}",
        "",
        f"`icefloe conformance --reproduce {path.name}` at commit {_commit()}, profile {profile},"
        f" {(time.monotonic() - began) / 60:.1f} minutes; the table was made at commit "
        f"{doc.get('commit', '?')}.",
        "",
        "| scenario | loader | seed | found | found again | |",
        "|---|---|---|---|---|---|",
        *rows,
    ]
    args.reports.mkdir(parents=True, exist_ok=True)
    out = args.reports / f"conformance-reproduced-{stamp}.md"
    out.write_text("\n".join(text) + "\n")
    say(f"conformance: {out}")
    return 1 if failed else 0


def reproduced(found: Mapping[str, int], again: Mapping[str, int]) -> tuple[bool, str]:
    """Whether every anomaly of a finding (``check: anomaly`` -> count) shows again, and the
    verdict in words (what is missing, what is new); counts may differ."""
    missing = sorted(set(found) - set(again))
    new = sorted(set(again) - set(found))
    text = "reproduced" if not missing else "**not reproduced**: " + ", ".join(missing)
    if new:
        text += " (also " + ", ".join(new) + ")"
    return not missing, text


def _counts(anomalies: Mapping[str, int]) -> str:
    return ", ".join(f"{name} x{n}" for name, n in sorted(anomalies.items())) or "none"


def run(args: argparse.Namespace) -> int:
    """Run the conformance table; 0 unless a run itself failed (an error, not a finding)."""
    if args.merge:
        say(f"conformance: {merge(args.merge, args.reports)}")
        return 0
    if args.reproduce:
        return reproduce(args.reproduce, args)
    if args.finding:
        say(f"finding: {write_finding(args.finding, args.reports)}")
        return 0
    from icefloe.harness.cli.scenario import interrupt_on_sigterm
    from icefloe.harness.cli.stack import open_stack
    from icefloe.harness.conformance import semantics, table
    from icefloe.harness.conformance.pairing import must_run_alone
    from icefloe.harness.loaders.capabilities import (
        catalog_limits,
        catalog_needs,
        needs,
        not_applicable,
    )
    from icefloe.harness.loaders.kinds import resolve
    from icefloe.harness.scenarios import model

    interrupt_on_sigterm()
    kinds = [resolve(name) for name in (args.loader or DEFAULT_LOADERS)]
    if args.scenario:
        chosen = [model.find_in(n, args.scenario_dirs, args.profile) for n in args.scenario]
    else:
        chosen = model.discover_all(args.scenario_dirs, profile=args.profile)
    # The hostile inputs are run last, unless skipped or named among the scenarios.
    named = [s for s in chosen if s.path is not None and s.path.resolve() == SEMANTICS]
    semantic = named[0] if named else None
    if semantic is None and not args.no_semantics:
        semantic = model.load(SEMANTICS, args.profile)
        chosen.append(semantic)
    plan = chosen
    catalogs = args.catalog or [None]
    began = time.monotonic()
    budget_s = args.budget_minutes * 60
    cells: list[table.Cell] = []
    fates: dict[str, list[Any]] = {}
    semantic_runs: dict[str, str] = {}
    side_by_side: list[str] = []
    names: list[str] = []
    for chosen_catalog in catalogs:
        on_catalog = argparse.Namespace(**{**vars(args), "catalog": chosen_catalog})
        stack = open_stack(on_catalog)
        if not stack.healthy():
            say(f"the stack moves to the {stack.config.catalog} catalog")
            stack.up()
        # With several catalogs, each loader's column is the loader on one catalog.
        suffix = f" on {stack.config.catalog}" if len(catalogs) > 1 else ""

        def label(name: str, suffix: str = suffix) -> str:
            return name + suffix

        names += [label(k.name) for k in kinds]
        for scenario in plan:
            runnable = []
            for kind in kinds:
                catalog = stack.catalog
                # The hostile inputs are a record of what each loader does: run against every one.
                missing = (
                    not_applicable(catalog_needs(catalog.kind), kind.capabilities)
                    if scenario is semantic
                    else catalog_limits(scenario, catalog)
                    + not_applicable(needs(scenario, catalog.kind), kind.capabilities)
                )
                if missing:
                    cells.append(table.not_applicable(scenario, label(kind.name), missing))
                    why = escape("; ".join(missing))
                    say(f"[yellow]not applicable[/] {scenario.name} on {label(kind.name)}: {why}")
                elif time.monotonic() - began > budget_s:
                    cells.append(table.Cell(
                        scenario.name, label(kind.name), table.NOT_RUN,
                        file=table.scenario_file(scenario),
                        reason=f"past the {args.budget_minutes:g}-minute budget",
                    ))  # fmt: skip
                else:
                    runnable.append(kind)
            if not runnable:
                continue
            alone = "--one-at-a-time" if args.one_at_a_time else must_run_alone(scenario)
            together = len(runnable) > 1 and alone is None
            if together:
                side_by_side.append(label(scenario.name))
            on = " and ".join(f"[bold]{label(k.name)}[/]" for k in runnable)
            say(f"[bold]{scenario.name}[/] on {on}" + (", side by side" if together else ""))
            for cell, result in _cells(scenario, runnable, stack, on_catalog, together):
                cell = dataclasses.replace(cell, loader=label(cell.loader))
                cells.append(cell)
                if cell.outcome == table.ANOMALIES and result is not None:
                    say(f"  finding: {write_finding([result.run_dir], args.reports)}")
                if scenario is semantic:
                    fates[cell.loader] = read_fates(result.run_dir)
                    semantic_runs[cell.loader] = str(result.run_dir)
            if not stack.healthy():  # an outage run that failed must not sink the next
                stack.up()
    ran_on = ", ".join(c or stack.config.catalog for c in catalogs)
    elapsed = time.monotonic() - began
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    command = (
        "icefloe conformance " + " ".join(sys.argv[2:])
        if sys.argv[1:2] == ["conformance"]
        else "icefloe conformance"
    )
    text = [
        f"# Conformance, {stamp}",
        "",
        f"`{command}` at commit {_commit()}, profile {args.profile}, on the"
        f" {ran_on} catalog{'s' if len(catalogs) > 1 else ''}, {elapsed / 60:.1f} minutes.",
        "",
        table.markdown(cells, names),
        "Run side by side (the loaders' runs of the scenario at the same time): "
        + (", ".join(side_by_side) or "none")
        + ". The others ran one loader at a time.",
        "",
    ]
    if fates:
        text += ["## Hostile inputs", "", semantics.markdown(fates)]
    text += ["## The loaders", ""]
    text += [f"- {k.name}: {json.dumps(k.describe())}" for k in kinds]
    args.reports.mkdir(parents=True, exist_ok=True)
    path = args.reports / f"conformance-{stamp}.md"
    path.write_text("\n".join(text) + "\n")
    (args.reports / f"conformance-{stamp}.json").write_text(json.dumps(
        {"cells": [vars(c) | {"anomalies": dict(c.anomalies)} for c in cells],
         "semantics": {n: [vars(f) for f in fs] for n, fs in fates.items()},
         "semantics_runs": semantic_runs,
         "minutes": round(elapsed / 60, 1), "command": command, "commit": _commit(),
         "profile": args.profile, "catalog": ran_on,
         "side_by_side": side_by_side},
        indent=1, default=str))  # fmt: skip
    say(f"conformance: {path} ({elapsed / 60:.1f} min)")
    return 1 if any(c.outcome == table.ERROR for c in cells) else 0
