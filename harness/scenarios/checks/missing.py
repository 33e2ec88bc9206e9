"""Missing messages told apart: lost, pending or late, from the loader's committed position.

A row that is not in the table when a run ends is not always lost. What decides is the
loader's committed position (``harness.observer``), where it resumes after any restart:

- **lost**: the position is past the row's offset, so the loader will never read it again
  (it committed past a row it never wrote). Each lost row names its evidence: the commit
  that carried the position past it (a snapshot of the table) or the first read of the
  consumer group that showed it past;
- **pending**: the position is before it (or the loader keeps none for its partition, or
  declares no position at all): the loader has not got to it yet, and may still; or the
  position is past it but the loader holds rows in a checkpoint newer than the one its last
  commit names (``held_checkpoints``: a Flink job whose source committed the group at the
  checkpoint, whose sink commits that checkpoint's files when it restores): *in its
  checkpoint*;
- **late**: it is in the table, but arrived only in the run's drain (``info``/``drain``):
  after every fault healed, with the loader running, past the scenario's own wait.

Only *lost* breaks exactly-once. The same judgement serves every check of rows
(:func:`judge_rows`) and of dead letters (:func:`letter_anomalies`); the facts it rests on are
``harness.scenarios.checks.facts.positions``'.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icefloe.harness.history import Event
from icefloe.harness.observer import NO_ID, SUMMARY, observer_of
from icefloe.harness.scenarios.checks.compare import DeadLetterVerdict, rows_against_ledger
from icefloe.harness.scenarios.checks.facts.commits import committed_checkpoint
from icefloe.harness.scenarios.checks.facts.ledger import coordinates, describe, policy_entries
from icefloe.harness.scenarios.checks.facts.positions import (
    PositionRead,
    final_position,
    late_ids,
    position_reads,
    stamp,
    summarise_position,
    summary_evidence,
)
from icefloe.harness.scenarios.checks.verdict import Found
from icefloe.publisher.ledger import LedgerEntry

__all__ = ["Verdicts", "classify_missing", "judge_rows", "letter_anomalies"]


@dataclass(frozen=True)
class Verdicts:
    """Missing rows, each with why.

    Attributes:
        lost: (entry, evidence): the committed position is past it.
        pending: (entry, why): the position is before it, or unknown.
        position: The final position read, if any.
    """

    lost: tuple[tuple[LedgerEntry, str], ...]
    pending: tuple[tuple[LedgerEntry, str], ...]
    position: PositionRead | None


def classify_missing(history: Sequence[Event], missing: Sequence[LedgerEntry]) -> Verdicts:
    """Lost or pending, for each message missing from the table at the end of a run.

    Args:
        history: The run's events (its ``positions`` and ``commits`` reads).
        missing: The ledger entries of the rows not in the table.

    Returns:
        The verdicts, each with its evidence or reason.
    """
    final = final_position(history)
    if not missing:
        return Verdicts((), (), final)
    observer = observer_of(history)
    if final is None:
        why = (
            "the loader declares no committed position"
            if observer.position is None
            else "its committed position was never read"
        )
        return Verdicts((), tuple((e, why) for e in missing), None)
    reads = position_reads(history)
    commits = summary_evidence(history, observer) if observer.position == SUMMARY else []
    held = _held_in_checkpoint(history, final)
    lost: list[tuple[LedgerEntry, str]] = []
    pending: list[tuple[LedgerEntry, str]] = []
    for e in missing:
        offset = -1 if e.offset is None else e.offset
        at = final.values.get(e.topic, {}).get(e.partition)
        if at is None:
            pending.append((e, f"{final.held_by} holds no position for partition {e.partition}"))
            continue
        if at <= offset:
            pending.append((e, f"{final.held_by} is at offset {at}, before it"))
            continue
        if held is not None:
            pending.append((e, f"{final.held_by} is at offset {at}, past it; {held}"))
            continue
        lost.append((e, _passed_by(e, offset, reads, commits)))
    return Verdicts(tuple(lost), tuple(pending), final)


def _held_in_checkpoint(history: Sequence[Event], final: PositionRead) -> str | None:
    """Why rows behind the position may still be in a checkpoint a restore commits (None: the
    loader holds none newer than its last commit's)."""
    if final.held_checkpoint is None:
        return None
    committed = committed_checkpoint(history)
    if committed is not None and committed >= final.held_checkpoint:
        return None
    return (
        f"in its checkpoint {final.held_checkpoint}, newer than "
        + ("any the table's commits name" if committed is None else f"checkpoint {committed}")
        + ", the newest its commits name: a restore commits it"
    )


def _passed_by(
    e: LedgerEntry,
    offset: int,
    reads: Sequence[PositionRead],
    commits: Sequence[tuple[float, int, Mapping[str, Mapping[int, int]]]],
) -> str:
    """What first carried the committed position past ``e``: the evidence of its loss."""
    for when, snapshot, position in commits:
        at = position.get(e.topic, {}).get(e.partition)
        if at is not None and at > offset:
            return f"snapshot {snapshot} (committed {stamp(when)}) carries position {at}"
    for read in reads:
        at = read.values.get(e.topic, {}).get(e.partition)
        if at is not None and at > offset:
            return f"{read.held_by} at offset {at} (read {stamp(read.time)})"
    return "the committed position is past it"


def judge_rows(
    counts: Mapping[str, int],
    ledger: Sequence[LedgerEntry],
    removed: Iterable[str] = (),
    history: Sequence[Event] = (),
    first_seen: Mapping[str, float] | None = None,
) -> tuple[Found, dict[str, Any]]:
    """The table against the ledger (:func:`~harness.scenarios.checks.compare.rows_against_ledger`),
    as named anomalies with each message's coordinates, and the numbers worth reporting.

    A message missing from the table is ``lost`` only when the loader's committed position is
    past it (the anomaly names the commit or read that showed it); before it, or unknown, it
    is ``pending`` (:func:`classify_missing`). A message that arrived only in
    the run's drain is counted ``late`` in the stats: it is there, once.

    Args:
        counts: Rows per event id.
        ledger: Every ledger entry of the run.
        removed: Ids a retention DELETE removed.
        history: The run's events (its position reads and its drain).
        first_seen: When each id was first seen visible (for ``late``).

    Returns:
        The anomalies (``lost``, ``pending``, ``duplicated``, ``misrouted``, ``undeleted``,
        ``unexpected``), each keyed by event id, and the stats.
    """
    verdict = rows_against_ledger(counts, ledger, removed)
    by_id = {e.event_id: e for e in ledger}
    found = Found()

    def where(eid: str) -> str:
        e = by_id.get(eid)
        return eid if e is None else describe(e)

    missing = classify_missing(history, [by_id[eid] for eid in verdict.lost])
    for e, evidence in missing.lost:
        found.add("lost", f"{describe(e)}: not in the table, {evidence}", e.event_id)
    for e, why in missing.pending:
        found.add("pending", f"{describe(e)}: not in the table, {why}", e.event_id)
    for eid in verdict.duplicated:
        unsure = "" if by_id[eid].delivered else " (delivery unconfirmed)"
        found.add("duplicated", f"{where(eid)} x{counts[eid]}{unsure}", eid)
    for eid in verdict.misrouted:
        found.add("misrouted", f"malformed {where(eid)} ({by_id[eid].kind}) in the table", eid)
    for eid in verdict.undeleted:
        found.add("undeleted", f"{where(eid)} removed by retention, back x{counts[eid]}", eid)
    for eid in verdict.unexpected:
        if eid == NO_ID:  # rows whose id did not survive: each row counts, none names a message
            nameless = counts[eid]
            for n in range(nameless):
                found.add("unexpected", f"a row with no event_id ({nameless} such)", f"no-id-{n}")
        else:
            found.add("unexpected", f"{eid}: never published", eid)
    late: set[str] = late_ids(history, first_seen or {}) & set(counts) if history else set()
    stats = {
        "expected": verdict.expected,
        "rows": verdict.rows,
        "distinct": verdict.distinct,
        "unconfirmed": sum(1 for e in ledger if e.status == "valid" and not e.delivered),
        "lost": len(missing.lost),
        "pending": len(missing.pending),
        "late": len(late & {e.event_id for e in ledger if e.status == "valid"}),
        **summarise_position(missing.position),
    }
    policy = policy_entries(ledger)
    if policy:  # what the loader chose for malformations of icefloe's policy: no anomaly
        loaded = Counter(str(e.kind) for e in policy if counts.get(e.event_id))
        kinds = sorted({str(e.kind) for e in policy})
        stats["policy_loaded"] = {k: loaded.get(k, 0) for k in kinds}
    return found, stats


def letter_anomalies(
    verdict: DeadLetterVerdict,
    ledger: Sequence[LedgerEntry],
    found: Found,
    history: Sequence[Event] = (),
) -> None:
    """A dead-letter verdict's findings as named anomalies, each message with its id.

    A malformed message with no letter is ``lost`` only when the loader's committed position is
    past it (it went on without sending one); before it, or unknown, it is ``pending``: the
    loader has not got to it (:func:`classify_missing`, as for rows).
    """
    by_coords = {coordinates(e): e for e in ledger if e.delivered}
    missing = classify_missing(history, [by_coords[src] for src in verdict.lost])
    for e, evidence in missing.lost:
        found.add(
            "lost", f"{describe(e)} kind {e.kind}: not in the dead-letter topic, {evidence}",
            e.event_id,
        )  # fmt: skip
    for e, why in missing.pending:
        found.add(
            "pending", f"{describe(e)} kind {e.kind}: not in the dead-letter topic, {why}",
            e.event_id,
        )  # fmt: skip
    for src in verdict.misrouted:
        e = by_coords[src]
        found.add("misrouted", f"valid {describe(e)} in the dead-letter topic", e.event_id)
    for src in verdict.unexpected:
        found.add("unexpected", f"dead letter from {src}: never published")
    for (topic, partition, offset), n in verdict.duplicated:
        found.add("duplicated_dead_letter", f"{topic}/{partition}@{offset} x{n}")
