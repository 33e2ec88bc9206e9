"""The soak's report: faults per minute, per kind, per service and where they landed, the
verdicts, the picture.

Faults are counted where they landed, from the history
(``harness.scenarios.checks.facts.landed``): a loader fault at a fault point by the point its
trace names (``kill planned``), grouped by where in a batch that is (inside a batch, during the
commit request, after a commit, at the start-up's take-over); one armed whose point never
fired as not landed; traffic as load. The reads of the live monitor that failed are counted per
read.

``report.md`` and ``timeline.png`` go into the soak's run folder next to its history, so the
verdicts can be recomputed there later (``icefloe scenario check`` works on chapters written
as scenario files; the soak's own checks are in its history as ``check`` events).
"""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path

from icefloe.harness.history import History
from icefloe.harness.scenarios.checks.facts.landed import BANDS, FaultCounts
from icefloe.harness.scenarios.checks.facts.reads import ledger_entries, read_errors
from icefloe.harness.scenarios.generative.soak import SoakResult
from icefloe.harness.scenarios.reports.timeline import draw

__all__ = ["landed_lines", "summary", "write"]

HEADLINE = ("lost", "duplicated", "misrouted", "undeleted", "unexpected")


def summary(result: SoakResult) -> list[str]:
    """Console lines: the outcome, the figures, faults per kind."""
    kills = result.faults.get("kill_loader", 0)
    zombies = result.faults.get("zombie_loader", 0)
    load = result.load or [0.0]
    counts = result.counts
    lines = [
        f"{'PASS' if result.passed else 'FAIL'} soak: {result.minutes:g} min asked, "
        f"{result.elapsed_s / 60:.1f} min in all, {result.chapters} chapters",
        f"faults: {result.total} in {result.fault_minutes:.1f} min = {result.per_minute:.1f}/min; "
        f"loader kills {kills}, zombie pauses {zombies}; load: {counts.load} traffic events",
        "anomalies: "
        + ", ".join(f"{result.anomalies.get(n, 0)} {n}" for n in HEADLINE)
        + f", {result.unhealed} unhealed",
        f"load average (1 min): {min(load):.1f}-{max(load):.1f}, median "
        f"{statistics.median(load):.1f}",
        _pacing(result),
        *landed_lines(counts),
    ]
    if result.failure:
        lines.append(f"failure: {result.failure}")
    if result.written:
        lines.append(f"failing chapter written to {result.written}")
    lines += [f"  {kind:<22} {n:5d}" for kind, n in result.faults.most_common()]
    return lines


def _points(counts: Counter[str]) -> str:
    return ", ".join(f"{n} {at}" for at, n in sorted(counts.items())) or "none"


_ORDER = {point: i for i, point in enumerate(BANDS)}


def _by_point(counts: Counter[tuple[str, str]], action: str) -> str:
    mine = sorted(
        ((point, n) for (act, point), n in counts.items() if act == action),
        key=lambda pn: _ORDER.get(pn[0], len(_ORDER)),
    )
    return ", ".join(f"{n} {point}" for point, n in mine) or "none"


def landed_lines(counts: FaultCounts) -> list[str]:
    """Console lines: loader faults where they landed, faults per service and per kind.

    Args:
        counts: The run's counts (``landed.fault_counts``).

    Returns:
        The lines (kills and zombies by band and by point, not landed, aimed from outside,
        per service, per kind).
    """
    kills, freezes = counts.bands("kill"), counts.bands("freeze")
    bands = ("inside a batch", "during the commit request", "after a commit", "start-up")
    outside = ", ".join(f"{n} {kind} {how}" for (kind, how), n in sorted(counts.outside.items()))
    not_landed = ", ".join(
        f"{n} {act} {point}" for (act, point), n in sorted(counts.not_landed.items())
    )
    return [
        "kills landed: " + ", ".join(f"{kills.get(b, 0)} {b}" for b in bands),
        "zombies frozen: " + ", ".join(f"{freezes.get(b, 0)} {b}" for b in bands),
        f"kills by point: {_by_point(counts.landed, 'kill')}",
        f"zombies by point: {_by_point(counts.landed, 'freeze')}",
        f"not landed (armed, never fired): {not_landed or 'none'}",
        f"aimed from outside (no trace): {outside or 'none'}",
        f"per service: {_points(counts.by_service)}",
        f"per kind: {_points(counts.by_kind)}",
    ]


def _pacing(result: SoakResult) -> str:
    waits = result.pace_waits or [0.0]
    return (
        f"loader faults paced by commits: {result.paced} after a commit, "
        f"{result.pace_timeouts} timed out; wait median {statistics.median(waits):.1f} s, "
        f"max {max(waits):.1f} s"
    )


def write(result: SoakResult) -> Path:
    """Draw the timeline and write ``report.md``; return the report's path."""
    run_dir = result.run_dir
    history = History.read(run_dir / "history.jsonl")
    picture = "timeline.png"
    try:
        draw(
            history,
            ledger_entries(run_dir),
            run_dir / picture,
            f"soak {result.minutes:g} min: {'PASS' if result.passed else 'FAIL'}",
        )
    except Exception as exc:  # a picture that cannot be drawn must not cost the report
        picture = ""
        (run_dir / "timeline.error").write_text(f"{type(exc).__name__}: {exc}\n")
    minutes = max(result.fault_minutes, 1e-9)
    lines = [
        f"# Soak: {result.minutes:g} minutes of generated faults",
        "",
        *[f"- {line}" for line in summary(result)[: 5 + len(landed_lines(result.counts))]],
        f"- history: `{run_dir / 'history.jsonl'}`",
        "",
    ]
    if picture:
        lines += [f"![timeline]({picture})", ""]
    lines += ["## Faults per kind", "", "| fault | injected | per minute |", "|---|---|---|"]
    lines += [f"| {k} | {n} | {n / minutes:.2f} |" for k, n in result.faults.most_common()]
    lines += [f"| **total** | **{result.total}** | **{result.per_minute:.1f}** |", ""]
    lines += [
        "## Final checks (last chapter, over the whole soak)",
        "",
        "| check | verdict | summary |",
        "|---|---|---|",
    ]
    lines += [f"| {c.check} | {c.verdict} | {c.summary} |" for c in result.checks]
    errors = read_errors(history)
    lines += ["", "## Reads that failed (the live monitor tries again next round)", ""]
    lines += [f"- {name}: {n}" for name, n in sorted(errors.items())] or ["- none"]
    if result.failure:
        lines += ["", f"**Failure:** {result.failure}"]
    if result.written:
        lines += ["", f"The failing chapter, as a scenario file: `{result.written}`"]
    path = run_dir / "report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
