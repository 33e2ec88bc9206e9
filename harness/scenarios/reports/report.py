"""Reports: what a scenario run did and found, as Markdown, JUnit XML and a console summary.

Each run gets a Markdown report (the scenario, its seed and replay command, its timeline picture
(``timeline.png``, see ``harness.scenarios.reports.timeline``), the steps with timings, the
faults per kind and each one's window, where the run's time went
(``harness.scenarios.reports.spent``), the reads that failed, each check's verdict, anomalies
and numbers) next to its history. A set of runs gets one JUnit XML file, so CI shows each
scenario as a test case.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from xml.etree import ElementTree as ET

from icefloe.harness.history import select
from icefloe.harness.scenarios.checks.facts.faults import injections
from icefloe.harness.scenarios.checks.facts.reads import ledger_entries, read_errors
from icefloe.harness.scenarios.model import SCENARIO_DIR
from icefloe.harness.scenarios.reports.spent import spent
from icefloe.harness.scenarios.reports.timeline import draw
from icefloe.harness.scenarios.runner import RunResult

TIMELINE = "timeline.png"


def replay_command(result: RunResult) -> str:
    """The command that replays a run's decisions."""
    brk = f" --break {result.break_name}" if result.break_name else ""
    path = result.scenario.path
    target = str(path) if path is not None and path.parent != SCENARIO_DIR else result.scenario.name
    return (
        f"icefloe scenario run {target} --profile {result.scenario.profile} "
        f"--seed {result.seed}{brk}"
    )


def outcome(result: RunResult) -> str:
    """PASS/FAIL with what it means for plain and break runs."""
    if result.break_name:
        return "PASS (break caught)" if result.passed else "FAIL (break not caught)"
    return "PASS" if result.passed else f"FAIL ({result.error or result.verdict})"


def markdown(result: RunResult) -> str:
    """The run's Markdown report.

    Args:
        result: A finished run.

    Returns:
        The report text.
    """
    s = result.scenario
    lines = [
        f"# {s.title}",
        "",
        f"- scenario: `{s.name}` (profile `{s.profile}`)"
        + (f", break `{result.break_name}`" if result.break_name else ""),
        f"- outcome: **{outcome(result)}**, {result.elapsed_s:.1f} s",
        f"- seed: `{result.seed}`; replay: `{replay_command(result)}`",
        f"- topic `{result.names['topic']}`, table `{result.names['table']}`",
        f"- history: `{result.run_dir / 'history.jsonl'}`; recheck offline: "
        f"`icefloe scenario check {result.run_dir}`",
        "",
    ]
    if (result.run_dir / TIMELINE).exists():
        lines += [f"![timeline]({TIMELINE})", ""]
    if result.break_name:
        brk = s.breaks[result.break_name]
        lines += [
            f"Broken on purpose: {brk.description} The check `{brk.expect_check}` must report "
            f"`{brk.expect_anomaly or brk.expect_verdict}`.",
            "",
        ]
    if s.description:
        lines += [s.description, ""]
    if result.error:
        lines += [f"**The run failed:** `{result.error}`", ""]
    lines += ["## Checks", "", "| check | verdict | summary |", "|---|---|---|"]
    for r in result.checks:
        lines.append(f"| {r.check} | {r.verdict} | {r.summary} |")
    for r in result.checks:
        if r.anomalies or r.stats:
            lines += ["", f"### {r.check}", ""]
            for name, a in r.anomalies.items():
                lines.append(f"- **{name}**: {a.count}")
                lines += [f"  - `{ex}`" for ex in a.examples]
            for key, value in r.stats.items():
                lines.append(f"- {key}: {value}")
    lines += ["", "## Timeline", "", "| step | seconds |", "|---|---|"]
    lines += [f"| {label} | {took:.1f} |" for label, took in result.step_times]
    history = result.history
    if history is not None:
        lines += _time_split(result)
        windows = injections(history)
        kinds = Counter(name for name, _, _ in windows)
        if kinds:
            lines += ["", "## Faults per kind", "", "| fault | injected |", "|---|---|"]
            lines += [f"| {name} | {n} |" for name, n in sorted(kinds.items())]
        if windows:
            start = history.events[0].time
            lines += ["", "## Faults", "", "| fault | injected at (s) | healed after (s) |"]
            lines.append("|---|---|---|")
            for name, inject, heal in windows:
                healed = f"{heal - inject:.1f}" if heal is not None else "never"
                lines.append(f"| {name} | {inject - start:.1f} | {healed} |")
        errors = read_errors(history)
        if errors:
            lines += ["", "## Reads that failed", "", "| read | failures |", "|---|---|"]
            lines += [f"| {name} | {n} |" for name, n in sorted(errors.items())]
        exits = select(history, "loader", "exit")
        starts = select(history, "loader", "start", "ok")
        lines += [
            "",
            "## Loader",
            "",
            f"- starts: {len(starts)}, exits: {len(exits)} "
            f"({sum(1 for e in exits if not e.data.get('expected'))} unplanned)",
        ]
        if starts:
            took = [float(e.data.get("seconds", 0)) for e in starts]
            lines.append(f"- start-up: {min(took):.1f}-{max(took):.1f} s")
        for e in select(history, "info", "log_facts"):
            counts = ", ".join(f"{n} {k}" for k, n in dict(e.data.get("counts") or {}).items())
            lines.append(f"- its log ({e.data.get('loader_id')}): {counts}")
        publishes = select(history, "publish", "publish", "ok")
        for e in publishes:
            d = e.data
            lines.append(
                f"- publish {d.get('phase')}: {d.get('sent')} sent ({d.get('valid')} valid, "
                f"{d.get('malformed')} malformed, {d.get('failed')} failed) in {d.get('seconds')} s"
            )
    return "\n".join(lines) + "\n"


def _time_split(result: RunResult) -> list[str]:
    """The report's section on where the run's time went (``harness.scenarios.reports.spent``)."""
    split = spent(result.history, result.elapsed_s) if result.history is not None else None
    if split is None:
        return []
    lines = ["", "## Where the time went", "", "| part | whose | seconds |", "|---|---|---|"]
    lines += [f"| {p.name} | {p.whose} | {p.seconds:.1f} |" for p in split.parts]
    lines += [
        "",
        f"- {split.line()}",
        f"- inside those: the loader's start-ups {split.loader_starts_s:.1f} s, "
        f"some fault active {split.faults_s:.1f} s",
    ]
    return lines


def write_markdown(result: RunResult) -> Path:
    """Draw the run's timeline and write its report into its folder; return the report."""
    path = result.run_dir / "report.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    if result.history is not None and len(result.history):
        try:
            title = f"{result.scenario.name}: {outcome(result)}"[:100]
            draw(result.history, ledger_entries(result.run_dir), result.run_dir / TIMELINE, title)
        except Exception as exc:  # a picture that cannot be drawn must not cost the report
            (result.run_dir / "timeline.error").write_text(f"{type(exc).__name__}: {exc}\n")
    path.write_text(markdown(result), encoding="utf-8")
    return path


def junit_xml(results: Sequence[RunResult], suite: str = "icefloe-scenarios") -> str:
    """JUnit XML for a set of runs: one test case per run.

    Args:
        results: Finished runs.
        suite: The test suite's name.

    Returns:
        The XML document.
    """
    failures = sum(1 for r in results if not r.passed)
    root = ET.Element(
        "testsuite",
        name=suite,
        tests=str(len(results)),
        failures=str(failures),
        time=f"{sum(r.elapsed_s for r in results):.3f}",
        timestamp=dt.datetime.now(dt.UTC).isoformat(),
    )
    for r in results:
        name = r.scenario.name + (f"[break={r.break_name}]" if r.break_name else "")
        case = ET.SubElement(
            root, "testcase", classname="scenarios", name=name, time=f"{r.elapsed_s:.3f}"
        )
        details = "\n".join(f"{c.check}: {c.verdict}: {c.summary}" for c in r.checks)
        if not r.passed:
            failure = ET.SubElement(case, "failure", message=outcome(r))
            failure.text = f"{r.error or ''}\n{details}\nreplay: {replay_command(r)}"
        out = ET.SubElement(case, "system-out")
        out.text = f"seed {r.seed}\n{details}\nreport: {r.run_dir / 'report.md'}"
    return ET.tostring(root, encoding="unicode")


def summary_lines(results: Sequence[RunResult]) -> list[str]:
    """One line per run for the console, then the total time."""
    lines = []
    for r in results:
        label = r.scenario.name + (f" --break {r.break_name}" if r.break_name else "")
        lines.append(f"{outcome(r):<24} {label:<40} {r.elapsed_s:6.1f} s  seed {r.seed}")
        split = spent(r.history, r.elapsed_s) if r.history is not None else None
        if split is not None:
            lines.append(f"    {split.line()}")
        for c in r.checks:
            lines.append(f"    {c.verdict:<8} {c.check}: {c.summary}")
    total = sum(r.elapsed_s for r in results)
    passed = sum(1 for r in results if r.passed)
    lines.append(f"{passed}/{len(results)} passed in {total:.1f} s ({total / 60:.1f} min)")
    return lines
