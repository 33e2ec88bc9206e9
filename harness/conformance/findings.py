"""A finding as the maintainers of the loader would want it: one page per finding.

A page rests on the runs' own folders alone (history and ledgers, judged again as ``icefloe
scenario check`` does): what the checks found, each with its evidence line; what the loader
wrote itself, in each of its processes (its log's counts, its kind's ``log_facts``), on the
table (its commits, the first and the last) and in its committed position; what its kind reads
of its own state at the end (``info``/``evidence``: the sink's control topic and the groups on
it); the run's faults, and when. Then how often the same classes came back in the
runs made again with the same scenario file and seed (count and range), and each upstream
thread whose mechanism the evidence matches, each part of that mechanism marked *seen* with the
line that shows it, or *not shown* (``harness.conformance.upstream``): a thread is cited as
matching only when every part is seen.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icefloe.harness.conformance.table import file_name
from icefloe.harness.history import History, select
from icefloe.harness.observer import observer_of
from icefloe.harness.scenarios.checks.facts.commits import main_commits
from icefloe.harness.scenarios.checks.facts.faults import fault_windows
from icefloe.harness.scenarios.checks.facts.positions import final_position

__all__ = ["RunFacts", "page", "read_run", "reproductions"]


@dataclass(frozen=True)
class RunFacts:
    """One run of a finding, read from its folder.

    Attributes:
        run_dir: The run's folder.
        scenario: The scenario's name.
        seed: Its seed.
        loader: The loader kind (its observer's).
        anomalies: ``check: anomaly`` -> count, of the checks that failed.
        examples: Anomaly name -> its first evidence lines, whichever check named them.
        processes: Per loader of the run (a successor is another), in order: its log's counts
            over every start of it (``log_facts``).
        struck: (fault kind, lane, time) of each fault of the run, in order.
        commits: (time, records) of each of the loader's commits that reached main.
        position: The final committed position: what holds it and where it stood.
        evidence: What the loader's kind read of its own state at the end.
        restarts: (time, evidence) read before each start of the loader again.
        began: When the run began (epoch seconds).
        replay: The command that runs it again (its scenario file, profile, seed, loader).
    """

    run_dir: Path
    scenario: str
    seed: int
    loader: str
    anomalies: Mapping[str, int]
    examples: Mapping[str, tuple[str, ...]]
    processes: tuple[Mapping[str, int], ...] = ()
    struck: tuple[tuple[str, str, float], ...] = ()
    commits: tuple[tuple[float, int | None], ...] = ()
    position: str = ""
    evidence: Mapping[str, Any] = field(default_factory=dict)
    restarts: tuple[tuple[float, Mapping[str, Any]], ...] = ()
    began: float = 0.0
    replay: str = ""

    def classes(self) -> set[str]:
        """The anomaly names found (``lost``, ``duplicated``...), whichever check found them."""
        return {name.rpartition(": ")[2] for name in self.anomalies}

    def count(self, anomaly: str) -> int:
        """The most messages any check found with ``anomaly``."""
        return max((n for k, n in self.anomalies.items() if k.endswith(f": {anomaly}")), default=0)

    def log_total(self, fact: str) -> int:
        """A ``log_facts`` count over every process of the loader."""
        return sum(int(p.get(fact, 0)) for p in self.processes)

    def at(self, when: float) -> str:
        """A time of the run, as seconds from its start."""
        return f"{when - self.began:.1f} s"


def read_run(run_dir: Path) -> RunFacts:
    """Judge a saved run again and read what its loader wrote (no service is asked)."""
    from icefloe.harness.scenarios.runner import judge, saved_run

    scenario, history, brk, seed = saved_run(run_dir)
    saved = json.loads((run_dir / "scenario.json").read_text(encoding="utf-8"))
    kind = observer_of(history).kind
    target = file_name(saved["path"]) if saved.get("path") else scenario.name
    replay = (
        f"icefloe scenario run {target} --profile {scenario.profile} --seed {seed} "
        f"--loader {kind}" + (f" --break {brk}" if brk else "")
    )
    results = judge(scenario, history, run_dir, brk)
    anomalies: dict[str, int] = {}
    examples: dict[str, tuple[str, ...]] = {}
    for r in results:
        if r.verdict != "invalid":
            continue
        for name, found in r.anomalies.items():
            anomalies[f"{r.check}: {name}"] = found.count
            examples.setdefault(name, tuple(found.examples[:3]))
    return RunFacts(
        run_dir=run_dir,
        scenario=scenario.name,
        seed=seed,
        loader=kind,
        anomalies=anomalies,
        examples=examples,
        processes=tuple(
            dict(e.data.get("counts") or {}) for e in select(history, "info", "log_facts")
        ),
        struck=tuple((w.kind, w.lane, w.start) for w in fault_windows(history)),
        commits=tuple(
            (float(c["time"]), c.get("records")) for c in main_commits(history) if c["mine"]
        ),
        position=_position(history),
        evidence=next(
            (
                _evidence(e.data)
                for e in reversed(select(history, "info", "evidence", "info"))
                if e.data.get("moment", "end") == "end"
            ),
            {},
        ),
        restarts=tuple(
            (e.time, _evidence(e.data))
            for e in select(history, "info", "evidence", "info")
            if e.data.get("moment") == "start"
        ),
        began=history.events[0].time if history.events else 0.0,
        replay=replay,
    )


def _evidence(data: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != "moment"}


def _position(history: History) -> str:
    final = final_position(history)
    if final is None:
        return "never read"
    at = "; ".join(
        f"{topic} " + ", ".join(f"{p}@{o}" for p, o in sorted(parts.items()))
        for topic, parts in sorted(final.values.items())
    )
    return f"{final.held_by}: {at or 'no offsets'}"


def reproductions(first: RunFacts, again: Sequence[RunFacts]) -> str:
    """How often the finding's classes came back in the runs made again: a line."""
    wanted = first.classes()
    shown = [r for r in again if wanted <= r.classes()]
    counts = {
        name: sorted(r.count(name) for r in [first, *again] if r.count(name))
        for name in sorted(wanted)
    }
    ranges = "; ".join(
        f"{name} {c[0]:,}-{c[-1]:,}" if len(c) > 1 else f"{name} {c[0]:,}"
        for name, c in counts.items()
        if c
    )
    return (
        f"{len(shown) + 1} of {len(again) + 1} runs with the same file and seed showed "
        f"{', '.join(sorted(wanted)) or 'nothing'} ({ranges or 'no counts'})"
    )


def page(
    first: RunFacts,
    again: Sequence[RunFacts],
    threads: Sequence[tuple[Any, Sequence[tuple[str, str | None]]]],
) -> str:
    """The finding's page (Markdown).

    Args:
        first: The run that found it.
        again: The runs made again with its scenario file and seed.
        threads: Each upstream thread of its loader's project with each part of its mechanism
            and the evidence line that shows it (None: not shown), as
            ``harness.conformance.upstream.weigh`` gives them.
    """
    lines = [
        f"# {first.loader} on {first.scenario}: {', '.join(sorted(first.classes()))}",
        "",
        f"- reproduce: `{first.replay}`",
        f"- how often: {reproductions(first, again)}",
        f"- runs: `{first.run_dir.name}`" + "".join(f", `{r.run_dir.name}`" for r in again),
        "",
        "## What the checks found",
        "",
    ]
    for name, count in sorted(first.anomalies.items()):
        lines.append(f"- {name} x{count:,}")
    for name, shown in sorted(first.examples.items()):
        lines += [f"  - e.g. ({name}) {line}" for line in shown]
    lines += ["", "## What the loader wrote", ""]
    lines.append(f"- its committed position at the end: {first.position}")
    if first.commits:
        adding = [c for c in first.commits if c[1]]
        lines.append(
            f"- its commits on the table's main branch: {len(first.commits)}, "
            f"{len(adding)} adding rows; the first at {first.at(first.commits[0][0])}, the last "
            f"at {first.at(first.commits[-1][0])}"
        )
    else:
        lines.append("- its commits on the table's main branch: none")
    for i, counts in enumerate(first.processes, 1):
        said = ", ".join(f"{k} {v}" for k, v in counts.items())
        whose = "its log" if len(first.processes) == 1 else f"loader {i}'s log"
        lines.append(f"- {whose}, every start of it: {said or 'nothing counted'}")
    for when, read in first.restarts:
        said = ", ".join(f"{k.replace('_', ' ')} `{v}`" for k, v in read.items())
        lines.append(f"- before its start again at {first.at(when)}: {said}")
    for key, value in first.evidence.items():
        lines.append(f"- {key.replace('_', ' ')} at the end: `{value}`")
    if first.struck:
        lines.append(
            "- the run's faults: "
            + ", ".join(f"{kind} at {first.at(when)}" for kind, _, when in first.struck)
        )
    lines += ["", "## Upstream", ""]
    if not threads:
        lines.append("No upstream thread known to the kit has this mechanism.")
    for thread, parts in threads:
        seen = sum(1 for _, line in parts if line is not None)
        verdict = (
            "It matches: every part of its mechanism is seen here"
            if seen == len(parts)
            else f"It matches in part ({seen} of {len(parts)} parts seen): not cited as this "
            "finding's cause"
        )
        lines += [f"### {thread.ref}: {thread.title}", "", f"{thread.state}. {verdict}.", ""]
        for says, line in parts:
            lines.append(f"- {says}: " + (f"seen: {line}" if line else "**not shown** by this run"))
        lines.append("")
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%MZ")
    lines += ["", f"Written {stamp} from the runs' folders (`icefloe conformance --finding`)."]
    return "\n".join(lines).rstrip() + "\n"
