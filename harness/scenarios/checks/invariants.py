"""Invariants of a generated run: pure checks over the history and the ledgers.

While the run goes (the monitor reads the table, its duplicates and the dead-letter topic
every few seconds through the recording client), :func:`live_anomalies` says whether what was
read so far breaks a rule: no id twice, no id that was not published, nothing valid in the
dead-letter topic. Ids of a publish phase still running are judged once its ledger is complete.

After everything is healed and the table has caught up, the final checks compare the whole:
``table_matches_ledger`` (the table holds each valid delivered message once, minus what a
retention DELETE removed, and nothing else) and ``dead_letters_match_ledger`` (the dead-letter
topic holds exactly the malformed messages, each once: letters are counted per source
topic/partition/offset, and a source sent twice is an anomaly, not a statistic).
``faults_healed`` says every injected fault was healed; ``live_invariants`` replays the live
rules over the whole history; ``one_owner`` says one loader process at a time committed to the
table (from the snapshots the commit reads recorded: process tokens, take-overs, parents);
``values_match_ledger`` compares every row's values, column by column, with its message as
sent, through the table's schema changes. All are registered as checkers, so scenario files
name them.

A message whose delivery the publisher could not confirm (a broker killed mid-send) may or may
not be in Kafka: it may be in the table once, or not at all, never twice.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from icefloe.harness.history import Event, History, select
from icefloe.harness.observer import Observer, observer_of
from icefloe.harness.scenarios.checks.checkers import (
    NOT_APPLICABLE,
    UNKNOWN,
    CheckResult,
    Found,
    Observed,
    checker,
    fault_windows,
    judge_rows,
    letter_anomalies,
)
from icefloe.harness.scenarios.checks.compare import compare_dead_letters, coordinates
from icefloe.harness.scenarios.checks.observe import dead_letters, read_errors, removed_by_retention
from icefloe.harness.scenarios.checks.schemahistory import SchemaChange, SchemaTimeline
from icefloe.publisher.ledger import LedgerEntry

__all__ = ["LedgerIndex", "LiveJudge", "live_anomalies", "main_commits", "recorded_snapshots"]

_PREFIX = 24  # event ids share a 24-character prefix per publish phase (publisher.messages)


@dataclass
class LedgerIndex:
    """The ledger as the invariants look things up.

    Attributes:
        entries: Ledger entries of finished phases.
        running: Event-id prefixes of phases still publishing (their ids are judged later).
    """

    entries: Sequence[LedgerEntry]
    running: frozenset[str] = frozenset()
    by_id: dict[str, LedgerEntry] = field(init=False)
    by_coords: dict[tuple[str, int, int], LedgerEntry] = field(init=False)
    prefixes: set[str] = field(init=False)

    def __post_init__(self) -> None:
        self.by_id = {e.event_id: e for e in self.entries}
        self.by_coords = {coordinates(e): e for e in self.entries if e.delivered}
        self.prefixes = {e.event_id[:_PREFIX] for e in self.entries}

    def pending(self, event_id: str) -> bool:
        return event_id[:_PREFIX] in self.running


def _judge_id(eid: str, index: LedgerIndex, found: Found, where: str) -> None:
    if index.pending(eid):
        return
    entry = index.by_id.get(eid)
    if entry is None:
        found.add("unexpected", f"{eid}: never published ({where})")
    elif entry.status == "malformed":
        found.add("misrouted", f"malformed {eid} ({entry.kind}) in the table ({where})")


class LiveJudge:
    """Judges a run's reads as they come in: each :meth:`update` looks at the reads recorded
    since the previous one, and again at ids (and dead letters) that belonged to a phase still
    publishing then."""

    def __init__(self) -> None:
        self.found = Found()
        self._next = 0
        self._pending_ids: set[str] = set()
        self._pending_letters: set[tuple[str, int, int]] = set()

    def update(self, history: History, index: LedgerIndex) -> dict[str, Any]:
        """Judge what is new; return every anomaly found so far (empty: all well)."""
        observer = observer_of(history.events)
        events = history.events[self._next :]
        self._next += len(events)
        ids = set(self._pending_ids)
        letters = set(self._pending_letters)
        for event in select(events, "read", phase="ok"):
            if event.name == "duplicates":
                for eid, n in event.data.get("values") or ():
                    self.found.add("duplicated", f"{eid} x{n} (read {event.index})")
            elif event.name == "ids":
                ids.update(event.data.get("added", ()))
            elif event.name == "dead_letters":
                for d in event.data.get("values") or ():
                    if (src := _source(observer, d)) is not None:
                        letters.add(src)
        self._pending_ids = {eid for eid in ids if index.pending(eid)}
        for eid in ids - self._pending_ids:
            _judge_id(eid, index, self.found, "live")
        self._pending_letters = set()
        for src in letters:
            entry = index.by_coords.get(src)
            if entry is None:
                self._pending_letters.add(src)
            elif entry.status == "valid":
                self.found.add("misrouted", f"valid {entry.event_id} at {src} dead-lettered")
        return {
            n: {"count": a.count, "examples": a.examples} for n, a in self.found.anomalies.items()
        }


def live_anomalies(events: Iterable[Event], index: LedgerIndex) -> dict[str, Any]:
    """What the reads among ``events`` show against the rules (empty: all well).

    Args:
        events: History events (only ``read`` events of ``ids``, ``duplicates`` and
            ``dead_letters`` count).
        index: The ledger of finished phases and the prefixes of running ones.

    Returns:
        Anomaly name to its examples and count, as ``CheckResult.anomalies`` holds them.
    """
    found = Found()
    events = list(events)
    observer = observer_of(events)
    for event in select(events, "read", phase="ok"):
        if event.name == "duplicates":
            for eid, n in event.data.get("values") or ():
                found.add("duplicated", f"{eid} x{n} at {event.index}")
        elif event.name == "ids":
            for eid in event.data.get("added", ()):
                _judge_id(eid, index, found, f"read {event.index}")
        elif event.name == "dead_letters":
            for d in event.data.get("values") or ():
                src = _source(observer, d)
                entry = index.by_coords.get(src) if src else None
                if entry is not None and entry.status == "valid":
                    found.add("misrouted", f"valid {entry.event_id} {src} dead-lettered")
    return {n: {"count": a.count, "examples": a.examples} for n, a in found.anomalies.items()}


def _source(observer: Observer, letter: Mapping[str, Any]) -> tuple[str, int, int] | None:
    """The source message a recorded dead letter names, as the loader's observer reads it."""
    return observer.letter(
        int(letter["partition"]), int(letter["offset"]), letter["headers"]
    ).source


@checker("live_invariants")
def check_live_invariants(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """The live rules replayed over the whole run: no read ever saw an id twice, an id that was
    not published, or a valid message in the dead-letter topic.

    Reads that failed (``read_errors``, per read) are counted and named in the summary: a run
    whose monitor could not read judged less than its rounds suggest.

    Returns:
        ``invalid`` with ``duplicated``, ``unexpected`` or ``misrouted``; ``unknown`` when no
        read of the table succeeded during the run.
    """
    reads = [e for e in select(history, "read", phase="ok") if e.name in ("ids", "duplicates")]
    errors = read_errors(history)
    failed = sum(errors.values())
    failures = ", ".join(f"{n} {name}" for name, n in sorted(errors.items()))
    stats = {"reads": len(reads), "read_errors": failed}
    stats.update({f"failed_{k}": n for k, n in sorted(errors.items())})
    if not reads:
        why = f" ({failed} reads failed: {failures})" if failed else ""
        summary = f"the table was never read during the run{why}"
        return CheckResult("live_invariants", UNKNOWN, summary, {}, stats)
    found = Found()
    for name, a in live_anomalies(history, LedgerIndex(ledger)).items():
        for example in a["examples"]:
            found.add(name, example)
        found.anomalies[name].count = a["count"]
    return found.result(
        "live_invariants",
        f"{len(reads)} reads during the run, none broke a rule"
        + (f"; {failed} reads failed ({failures})" if failed else ""),
        stats,
    )


@checker("table_matches_ledger")
def check_table_matches_ledger(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """The table holds every valid delivered message once, except those a retention DELETE
    removed (which must stay gone), and nothing else (:func:`judge_rows`, the same verdict as
    ``exactly_once`` with retention's removals).

    Returns:
        ``invalid`` with ``lost``, ``duplicated``, ``undeleted``, ``misrouted`` or
        ``unexpected``; ``unknown`` when nothing valid was delivered or the table never read.
    """
    if not select(history, "read", "table", "ok"):
        return CheckResult("table_matches_ledger", UNKNOWN, "the table was not read back")
    if not any(e.delivered and e.status == "valid" for e in ledger):
        return CheckResult("table_matches_ledger", UNKNOWN, "no valid message was delivered")
    removed = removed_by_retention(history)
    found, stats = judge_rows(
        observed.table_counts, ledger, removed, history.events, observed.reads.get("first_seen")
    )
    stats["removed_by_retention"] = len(removed)
    return found.result(
        "table_matches_ledger",
        f"{stats['expected']} valid messages exactly once, {len(removed)} removed by retention, "
        f"{stats['rows']} rows",
        stats,
    )


@checker("dead_letters_match_ledger")
def check_dead_letters_match_ledger(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """The dead-letter topic holds every malformed delivered message once, and nothing else
    (:func:`~harness.scenarios.checks.compare.compare_dead_letters`, per source message).

    Params:
        max_copies: letters allowed per source message (default 1); a second copy may only
            come from another loader id (a zombie's letters sent again by its successor).

    Returns:
        ``invalid`` with ``lost`` (a malformed message not dead-lettered), ``misrouted`` (a
        valid one dead-lettered), ``unexpected`` (a letter whose source was never sent) or
        ``duplicated_dead_letter`` (a source dead-lettered more than ``max_copies`` times,
        with the count); ``unknown`` when no malformed message was delivered and no letter
        was read (nothing was compared).
    """
    letters = observed.dead_letters or dead_letters(history)
    verdict = compare_dead_letters(letters, ledger, int(params.get("max_copies", 1)))
    found = Found()
    letter_anomalies(verdict, ledger, found, history.events)
    if not verdict.expected and not found.anomalies:
        read = bool(select(history, "read", "dead_letters", "ok"))
        return CheckResult(
            "dead_letters_match_ledger", UNKNOWN, "no malformed message was sent and "
            + ("the dead-letter topic holds none" if read else "the topic was never read"),
            {}, {"malformed": 0, "letters": len(letters)},
        )  # fmt: skip
    stats = {
        "malformed": verdict.expected,
        "letters": verdict.letters,
        "redelivered": verdict.letters - verdict.distinct - verdict.unsourced,
        "duplicated_sources": len(verdict.duplicated),
    }
    return found.result(
        "dead_letters_match_ledger",
        f"{verdict.expected} malformed messages dead-lettered, each once",
        stats,
    )


@checker("faults_healed")
def check_faults_healed(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Every fault injected (or half-injected) was healed.

    Returns:
        ``invalid`` with ``unhealed``; ``unknown`` when no fault was injected.
    """
    windows = fault_windows(history)
    failed = [e for e in select(history, "fault", phase="fail") if e.name.endswith(".inject")]
    found = Found()
    for name, _inject, heal in windows:
        if heal is None:
            found.add("unhealed", name)
    heals = [e for e in select(history, "fault", phase="ok") if e.name.endswith(".heal")]
    for e in failed:
        base = e.name.rpartition(".")[0]
        if not any(h.name == f"{base}.heal" and h.index > e.index for h in heals):
            found.add("unhealed", f"{base} (its injection failed)")
    if not windows and not failed:
        return CheckResult("faults_healed", UNKNOWN, "no fault was injected")
    stats = {"injected": len(windows), "healed": len(heals), "failed_injections": len(failed)}
    return found.result("faults_healed", f"{len(windows)} faults injected, all healed", stats)


def recorded_snapshots(history: Iterable[Event]) -> dict[int, Mapping[str, Any]]:
    """Every snapshot the run's commit reads recorded, by id (each is recorded once, when
    first read; a later expiry does not take it out of the history)."""
    snaps: dict[int, Mapping[str, Any]] = {}
    for e in select(history, "read", "commits", "ok"):
        for c in e.data.get("values") or ():
            snaps.setdefault(int(c["snapshot"]), c)
    return snaps


def main_commits(
    history: Iterable[Event], observer: Observer | None = None
) -> list[dict[str, Any]]:
    """The snapshots that reached the table's main branch, in commit order, as the loader's
    observer reads them (``harness.observer.Observer.commit``: ``mine``, ``loader``,
    ``process``, ``claim``, ``staged``, ``position``).

    A staged snapshot (write-audit-publish: ``staged`` names its id) reached main only if it
    was published: then a later snapshot has it as parent, or it is the last one published,
    staged on top of the newest snapshot that reached main. One never published (a fenced
    zombie's batch) has no child (nothing is planned or written on top of a snapshot main
    never pointed at) and was staged on a snapshot that main had moved past.

    Args:
        history: The run's events.
        observer: How to read the loader's summaries (default: the one the run recorded).

    Returns:
        The commits, oldest first.
    """
    events = list(history)
    read = observer or observer_of(events)
    snaps = {s: read.commit(c) for s, c in recorded_snapshots(events).items()}
    parents = {c.get("parent") for c in snaps.values()}
    main = {s: c for s, c in snaps.items() if not c.get("staged") or s in parents}
    leaves = [c for s, c in snaps.items() if s not in main]
    if leaves:
        last = max(leaves, key=lambda c: float(c["time"]))
        head = max(main.values(), key=lambda c: float(c["time"]), default=None)
        if head is None or last.get("parent") == head["snapshot"]:
            main[int(last["snapshot"])] = last
    return sorted(main.values(), key=lambda c: float(c["time"]))


@checker("one_owner")
def check_one_owner(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """One loader process at a time commits to the table.

    A loader process (the token its observer's ``process_key`` names) holds the table from
    its take-over (the empty snapshot carrying the ``claim_key``) until another process's
    take-over. Walking main's commits in order:

    - a batch committed by a process whose hold ended (another took the table over since) is
      ``two_writers``: two loaders' commits interleaved outside a take-over (a thawed zombie
      writing what it planned before its successor took over);
    - a take-over by a process whose hold had ended, or a thawed zombie the harness found
      holding the table again (``loader``/``holds_table``), is ``taken_back``.

    A process whose batch comes with no take-over read before it (its claim expired before a
    commit read saw it) is taken to hold the table from that batch on (``claims_unseen``).

    Returns:
        ``invalid`` with ``two_writers`` or ``taken_back``; ``unknown`` when no loader commit
        with a process token was read (nothing was compared); ``not_applicable`` for a loader
        whose commits name no process.
    """
    observer = observer_of(history.events)
    if observer.process_key is None:
        return CheckResult(
            "one_owner", NOT_APPLICABLE,
            f"{observer.kind} names no process in its commits: its take-overs cannot be read",
        )  # fmt: skip
    found = Found()
    for e in select(history, "loader", "holds_table"):
        found.add("taken_back", f"pid {e.data.get('pid')} held the table again after its thaw")
    commits = [c for c in main_commits(history.events, observer) if c["mine"] and c["process"]]
    if not commits:
        if found.anomalies:
            return found.result("one_owner", "", {})
        return CheckResult("one_owner", UNKNOWN, "no loader commit naming its process was read")
    holder: Mapping[str, Any] | None = None
    ended: set[str] = set()
    claims = batches = unseen = 0

    def who(c: Mapping[str, Any]) -> str:
        return f"{c['loader']} (process {str(c['process'])[:8]})"

    for c in commits:
        process = str(c["process"])
        if c.get("claim"):
            claims += 1
            if process in ended:
                found.add("taken_back", f"snapshot {c['snapshot']}: {who(c)} took the table back")
        else:
            batches += 1
            if holder is not None and process == holder["process"]:
                continue
            if process in ended:
                assert holder is not None
                found.add(
                    "two_writers",
                    f"snapshot {c['snapshot']} by {who(c)}, committed after {who(holder)} "
                    "took the table over",
                )
                continue
            unseen += 1
        # from here on c's process holds the table
        if holder is not None and holder["process"] != process:
            ended.add(str(holder["process"]))
        holder = c
    writers = len({str(c["process"]) for c in commits})
    stats = {"commits": len(commits), "take_overs": claims, "batches": batches,
             "processes": writers, "claims_unseen": unseen}  # fmt: skip
    return found.result(
        "one_owner",
        f"{len(commits)} commits of {writers} loader processes, {claims} take-overs, "
        "each process wrote only while it held the table",
        stats,
    )


@checker("values_match_ledger")
def check_values_match_ledger(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Every row holds, column by column, the values its message was sent with, mapped through
    the table's schema history (``harness.scenarios.checks.schemahistory``): a column added holds
    NULL for rows loaded before it, a renamed one the old field's value for rows loaded before
    the rename and NULL after, a widened one the same value, a dropped one is not compared.

    Reads ``reads["row_values"]`` (event id to the final table's value columns, read after
    everything healed) and ``facts["sent_rows"]`` (each valid message as sent, regenerated
    from its phase's seed). A row that may have been loaded on either side of a change (its
    message published before the change ended, its id first seen after it began) may hold
    either value. A column whose change failed (it may or may not have applied) is left out.

    Returns:
        ``invalid`` with ``wrong_value`` (the row, the column, the value read and the ones
        expected); ``unknown`` when the values were not read or no row could be compared.
    """
    rows: Mapping[str, Mapping[str, Any]] = observed.reads.get("row_values") or {}
    sent: Mapping[str, Mapping[str, Any]] = observed.facts.get("sent_rows") or {}
    if not rows:
        return CheckResult("values_match_ledger", UNKNOWN, "the rows' values were not read")
    changes: Sequence[SchemaChange] = observed.facts.get("schema_changes") or ()
    seen: Mapping[str, float] = observed.reads.get("first_seen") or {}
    columns = sorted({c for values in rows.values() for c in values})
    uncertain = {n for c in changes if c.end is None for n in (c.column, c.to) if n}
    timeline = SchemaTimeline(changes)
    every_state = range(len(changes) + 1)
    compared = [
        c for c in columns if not uncertain & set(filter(None, timeline.names(c, every_state)))
    ]
    entries = {e.event_id: e for e in ledger if e.delivered and e.status == "valid"}
    found = Found()
    checked = values = either = 0
    for eid, got in rows.items():
        message, entry = sent.get(eid), entries.get(eid)
        if message is None or entry is None:
            continue
        checked += 1
        published = entry.timestamp / 1000 if entry.timestamp is not None else None
        states = timeline.states(published, seen.get(eid))
        for column in compared:
            wants: list[Any] = []
            for name in timeline.names(column, states):
                want = message.get(name) if name is not None else None
                if not any(_same_value(want, w) for w in wants):
                    wants.append(want)
            values += 1
            either += len(wants) > 1
            if not any(_same_value(got.get(column), w) for w in wants):
                expected = " or ".join(repr(w) for w in wants)
                found.add(
                    "wrong_value",
                    f"{eid}: {column}={got.get(column)!r}, expected {expected}",
                    key=f"{eid}:{column}",
                )
    stats = {
        "rows": checked,
        "values": values,
        "either_side_of_a_change": either,
        "columns": len(compared),
        "columns_left_out": len(columns) - len(compared),
        "schema_changes": len(changes),
    }
    if not values:
        return CheckResult(
            "values_match_ledger", UNKNOWN,
            f"no value could be compared ({len(rows)} rows read, {checked} with a message "
            "regenerated)", {}, stats,
        )  # fmt: skip
    return found.result(
        "values_match_ledger",
        f"{values} values of {checked} rows in {len(compared)} columns as sent, through "
        f"{len(changes)} schema changes",
        stats,
    )


def _same_value(got: Any, want: Any) -> bool:
    """Equal; a float by value within 1e-6 relative (a REAL column holds a float32)."""
    if isinstance(got, bool) or isinstance(want, bool) or got is None or want is None:
        return bool(got == want)
    numbers = isinstance(got, int | float) and isinstance(want, int | float)
    if numbers and (isinstance(got, float) or isinstance(want, float)):
        return math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-30)
    return bool(got == want)
