"""Upstream threads whose mechanism a finding may share, each taken apart into what a run must
show for the thread to be its cause.

A thread is a loader project's issue or pull request that describes a mechanism (a sequence of
events ending in lost or doubled rows). Each part of that sequence is a question put to a run's
facts (``harness.conformance.findings.RunFacts``): the line that shows it, or None when the run
does not show it. A finding's page cites a thread as matching only when every part is seen;
a thread with its outcome seen and other parts not shown is listed as matching in part, with
what is missing, and is not named as the cause.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icefloe.harness.conformance.findings import RunFacts

__all__ = ["THREADS", "Thread", "weigh"]

Part = tuple[str, Callable[[RunFacts], str | None]]
"""What the mechanism needs, in words, and the question that finds it in a run."""


@dataclass(frozen=True)
class Thread:
    """One upstream thread.

    Attributes:
        ref: ``owner/repo#N``.
        title: Its title.
        state: What it is and where it stands (open, merged, the fix).
        loader: The loader kind it concerns.
        parts: Its mechanism, in order; the first is the outcome.
    """

    ref: str
    title: str
    state: str
    loader: str
    parts: tuple[Part, ...]


def _lost_behind_group(run: RunFacts) -> str | None:
    lost = run.count("lost")
    shown = [line for line in run.examples.get("lost", ()) if "consumer group" in line]
    return f"{lost:,} lost; e.g. {shown[0]}" if lost and shown else None


def _duplicated(run: RunFacts) -> str | None:
    doubled = run.count("duplicated")
    return f"{doubled:,} rows more than once" if doubled else None


def _files_handed_over(run: RunFacts) -> str | None:
    n = run.log_total("files handed over")
    return f"the tasks sent DATA_WRITTEN {n} times (the worker's log)" if n else None


def _restarted_before_first_table_commit(run: RunFacts) -> str | None:
    kills = [when for kind, _, when in run.struck if kind == "kill_loader"]
    if not kills:
        return None
    adding = [when for when, records in run.commits if records]
    if adding and adding[0] < kills[0]:
        return None
    first = f"the sink's first commit adding rows at {run.at(adding[0])}" if adding else "none"
    return f"the worker was first killed at {run.at(kills[0])}; {first}"


def _no_coordinator_offset(read: Mapping[str, Any]) -> str | None:
    """Why ``read`` (the sink's control-topic evidence) shows its coordinator's ``-coord`` group
    with no committed offset on a control topic that holds records (None: it has one, or the
    read says nothing of it)."""
    groups, ends = read.get("control_groups"), read.get("control_end")
    if not isinstance(groups, dict) or not isinstance(ends, dict):
        return None
    held = sum(int(v or 0) for v in ends.values())
    coord = {g: o for g, o in groups.items() if str(g).endswith("-coord")}
    if held and all(v is None for offsets in coord.values() for v in offsets.values()):
        if not coord:
            return f"the control topic held {held} records and no *-coord group an offset on it"
        return f"the control topic held {held} records and {next(iter(coord))} no offset on it"
    return None


def _coordinator_group_never_committed(run: RunFacts) -> str | None:
    for when, read in run.restarts:
        why = _no_coordinator_offset(read)
        if why is not None:
            return f"before the worker's start again at {run.at(when)}, {why}"
    why = _no_coordinator_offset(run.evidence)
    return None if why is None else f"at the end, {why} (so at every change before it)"


def _zero_table_commits(run: RunFacts) -> str | None:
    n = run.log_total("commits to no table")
    return f'the coordinator logged "committed to 0 table(s)" {n} times' if n else None


def _zombie(run: RunFacts) -> str | None:
    zombies = [when for kind, _, when in run.struck if kind == "zombie_loader"]
    return f"a frozen worker beside its successor at {run.at(zombies[0])}" if zombies else None


def _restarted(run: RunFacts) -> str | None:
    kills = [when for kind, _, when in run.struck if kind == "kill_loader"]
    return f"the loader was killed and started again {len(kills)} times" if kills else None


def _commit_answer_lost(run: RunFacts) -> str | None:
    hits = [when for kind, _, when in run.struck if kind == "catalog_http"]
    return f"a catalog HTTP fault at {run.at(hits[0])}" if hits else None


def _never(run: RunFacts) -> str | None:
    return None


THREADS: tuple[Thread, ...] = (
    Thread(
        "apache/iceberg#18006",
        "Kafka Connect: Read the control topic from earliest in the coordinator",
        "A pull request, open since 2026-09",
        "kafka-connect",
        (
            ("rows lost, the tasks' consumer group committed past them", _lost_behind_group),
            (
                "a task handed its data files to the coordinator (DATA_WRITTEN) in the "
                "transaction that committed its source offsets",
                _files_handed_over,
            ),
            (
                "the coordinator changed (the worker killed and started again) before the "
                "sink's first commit adding rows",
                _restarted_before_first_table_commit,
            ),
            (
                "the coordinator's control-topic group had no committed offset when it changed "
                "(its successor then reads the control topic from its end: "
                "auto.offset.reset=latest, the default, which the kit leaves)",
                _coordinator_group_never_committed,
            ),
        ),
    ),
    Thread(
        "apache/iceberg#17551",
        "kafka connect: data loss with default configs due to persistent zombie coordinators",
        "An issue, closed by the merged pull request apache/iceberg#17552 (2026-09)",
        "kafka-connect",
        (
            ("rows lost, the tasks' consumer group committed past them", _lost_behind_group),
            ("a coordinator that failed to exit ran beside its successor", _zombie),
            (
                "a coordinator committed control-topic offsets with no table commit",
                _zero_table_commits,
            ),
            ("the control-topic record at its old offset was removed by retention", _never),
        ),
    ),
    Thread(
        "apache/iceberg#16282",
        "[Kafka Connect] Duplicate file registration across snapshots during coordinator recovery",
        "An issue, open (2026-05)",
        "kafka-connect",
        (
            ("rows in the table more than once", _duplicated),
            ("a coordinator change (the worker's tasks crashed or it was killed)", _restarted),
            ("the same data file registered in two snapshots", _never),
        ),
    ),
    Thread(
        "apache/iceberg#14425",
        "Iceberg Flink sinks duplicate data during recovery when used with the REST catalog",
        "An issue, open (2025-10)",
        "flink",
        (
            ("rows in the table more than once", _duplicated),
            ("a commit request to the REST catalog failed or lost its answer", _commit_answer_lost),
            ("the job recovered (restarted) with that commit still in flight", _restarted),
            ("the sink is the DynamicIcebergSink (its DynamicCommitter)", _never),
        ),
    ),
    Thread(
        "apache/iceberg#16008",
        "DynamicCommitter dedup can allow duplicate commits after Flink job restart/rescale "
        "when a prior commit succeeded on the catalog but the response was lost",
        "An issue, open (2026-04)",
        "flink",
        (
            ("rows in the table more than once", _duplicated),
            ("a commit's answer from the catalog was lost", _commit_answer_lost),
            ("the job restarted with a new job id", _restarted),
            ("the sink is the DynamicIcebergSink (its DynamicCommitter)", _never),
        ),
    ),
)


def weigh(
    run: RunFacts, threads: Sequence[Thread] = THREADS
) -> list[tuple[Thread, list[tuple[str, str | None]]]]:
    """The threads of the run's loader whose outcome the run shows, each part with the line
    that shows it (None: not shown), the threads that match in full first."""
    out = []
    for thread in threads:
        if thread.loader != run.loader:
            continue
        parts = [(says, ask(run)) for says, ask in thread.parts]
        if parts[0][1] is None:
            continue  # not its outcome: the thread says nothing of this finding
        out.append((thread, parts))
    return sorted(out, key=lambda t: sum(line is None for _, line in t[1]))
