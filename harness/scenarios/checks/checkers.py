"""Checkers: pure verdicts over a run's history, its ledger and what Trino and Kafka returned.

A checker never talks to a service. The runner records a :class:`~harness.history.History`,
reads the table and the dead-letter topic once at the end into an :class:`Observed`, and then
every checker named by the scenario turns (history, ledger entries, observed, params) into a
:class:`CheckResult`: ``valid``, ``invalid`` (with named anomalies and examples) or
``unknown`` (the run did not exercise what the check is about, so it proves nothing).

Anomaly names are the vocabulary of the reports:

- ``lost``: a valid message is not in the table and the loader's committed position is past
  it, so it will never be loaded (or a malformed one is not in the dead-letter topic)
- ``pending``: a valid message is not in the table and the loader's position is before it
  (or unknown): not loaded by the end of the run's drain, not skipped
- ``duplicated``: a message is in the table more than once
- ``misrouted``: a valid message went to the dead-letter topic, or a malformed one to the table
- ``stale``: a message did not become visible within the bound
- ``wrong_value``: a row or dead letter is there, but with the wrong content
- ``unexpected``: a row the ledger never sent
- ``undeleted``: a row that retention deleted came back
- ``not_compacted``: compaction did not reduce the data file count
- ``not_halted``: the loader went on past a message it should have stopped at
- ``loader_error``: the loader exited when nothing should have stopped it
- ``duplicated_dead_letter``: a source message is in the dead-letter topic more than once
- ``two_writers``: a loader process committed after another had taken the table over from it
- ``taken_back``: a loader process that had lost the table took it over again
- ``unexplained_exit``: a loader exit no fault or harness action explains

The comparisons of the table, and of the dead letters, with the ledger are
:mod:`harness.scenarios.checks.compare`'s: every check of those properties goes through it.

A check that compared nothing (an empty read, no rows of a phase, no loader start) says
``unknown`` with the reason, never ``valid``. A check that cannot apply to the loader under
test (it stages no snapshots, names no process in its commits) says ``not_applicable`` with
the capability it lacks, read from the loader kind's observer (``harness.observer``).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from icefloe.harness.history import Event, History, select
from icefloe.harness.observer import NO_ID, Letter, observer_of
from icefloe.harness.scenarios.checks.compare import (
    DeadLetterVerdict,
    compare_dead_letters,
    coordinates,
    duplicated_dead_letters,
    rows_against_ledger,
)
from icefloe.harness.scenarios.checks.positions import (
    classify_missing,
    late_ids,
    summarise_position,
)
from icefloe.harness.scenarios.faults.timing import commits_struck
from icefloe.publisher.ledger import LedgerEntry
from icefloe.publisher.malformations import MALFORMATIONS

VALID, INVALID, UNKNOWN, NOT_APPLICABLE = "valid", "invalid", "unknown", "not_applicable"
_EXAMPLES = 5


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values`` by nearest rank.

    Nearest rank keeps a p99 an observed latency (no interpolation between two messages).

    Raises:
        ValueError: no values, or ``q`` outside 0-100.
    """
    if not values:
        raise ValueError("no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile outside 0-100: {q}")
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


DeadLetter = Letter
"""One record read back from a dead-letter topic, as the loader's observer reads it."""


@dataclass(frozen=True)
class Observed:
    """What the run read back from the services, gathered once after the timeline.

    Attributes:
        table_counts: For every event id in the table, how many rows carry it.
        dead_letters: Every record of the dead-letter topic (its source and reason as the
            loader's observer reads them).
        reads: Named reads taken during the run (e.g. ids visible before a DELETE).
        facts: What the runner knows from generation, e.g. event times by id.
    """

    table_counts: Mapping[str, int] = field(default_factory=dict)
    dead_letters: Sequence[DeadLetter] = ()
    reads: Mapping[str, Any] = field(default_factory=dict)
    facts: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class Anomaly:
    """One named kind of failure found by a check.

    Attributes:
        name: The anomaly's name (see the module docstring).
        count: How many instances were found.
        examples: A few instances, as short text.
        keys: What each instance is about (a message's event id), when it says: two checks
            that find the same message are counted once in a report.
    """

    name: str
    count: int = 0
    examples: list[str] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)

    def add(self, example: str, key: str | None = None) -> None:
        self.count += 1
        if key is not None:
            self.keys.add(key)
        if len(self.examples) < _EXAMPLES:
            self.examples.append(example)

    @property
    def keyed(self) -> bool:
        """Every instance names what it is about (an event id): counts can be merged."""
        return len(self.keys) == self.count


@dataclass
class CheckResult:
    """A checker's verdict.

    Attributes:
        check: The checker's name.
        verdict: ``valid``, ``invalid`` or ``unknown``.
        summary: One line for humans.
        anomalies: Named anomalies found (empty when valid).
        stats: Numbers worth reporting (counts, latencies).
    """

    check: str
    verdict: str
    summary: str
    anomalies: dict[str, Anomaly] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Valid, or not applicable to the loader under test."""
        return self.verdict in (VALID, NOT_APPLICABLE)

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "verdict": self.verdict,
            "summary": self.summary,
            "anomalies": {
                n: {"count": a.count, "examples": a.examples} for n, a in self.anomalies.items()
            },
            "stats": self.stats,
        }


class Found:
    """Collects anomalies while a checker works; ``result`` turns them into a verdict."""

    def __init__(self) -> None:
        self.anomalies: dict[str, Anomaly] = {}

    def add(self, name: str, example: str, key: str | None = None) -> None:
        self.anomalies.setdefault(name, Anomaly(name)).add(example, key)

    def result(self, check: str, ok_summary: str, stats: dict[str, Any]) -> CheckResult:
        if not self.anomalies:
            return CheckResult(check, VALID, ok_summary, {}, stats)
        parts = ", ".join(f"{a.count} {n}" for n, a in self.anomalies.items())
        return CheckResult(check, INVALID, parts, self.anomalies, stats)


Checker = Callable[[History, Sequence[LedgerEntry], Observed, Mapping[str, Any]], CheckResult]
CHECKERS: dict[str, Checker] = {}


def checker(name: str) -> Callable[[Checker], Checker]:
    """Register a checker under the name scenarios use."""

    def register(fn: Checker) -> Checker:
        CHECKERS[name] = fn
        return fn

    return register


def run_check(
    name: str,
    history: History,
    ledger: Sequence[LedgerEntry],
    observed: Observed,
    params: Mapping[str, Any] | None = None,
) -> CheckResult:
    """Run the named checker; a checker that raises yields ``unknown``, never a pass.

    Args:
        name: A key of :data:`CHECKERS`.
        history: The run's history.
        ledger: Every ledger entry of the run (all publish phases).
        observed: What was read back.
        params: The scenario's parameters for this check.

    Returns:
        The verdict.

    Raises:
        KeyError: For an unknown checker name.
    """
    fn = CHECKERS[name]
    try:
        return fn(history, ledger, observed, params or {})
    except Exception as exc:  # a broken checker must not turn into a pass
        return CheckResult(name, UNKNOWN, f"checker raised {type(exc).__name__}: {exc}")


def _valid(ledger: Sequence[LedgerEntry]) -> list[LedgerEntry]:
    return [e for e in ledger if e.delivered and e.status == "valid"]


def _malformed(ledger: Sequence[LedgerEntry]) -> list[LedgerEntry]:
    return [e for e in ledger if e.delivered and e.status == "malformed"]


def _where(e: LedgerEntry) -> str:
    return f"{e.event_id} ({e.topic}/{e.partition}@{e.offset})"


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
    is ``pending`` (``harness.scenarios.checks.positions``). A message that arrived only in
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
        return eid if e is None else _where(e)

    missing = classify_missing(history, [by_id[eid] for eid in verdict.lost])
    for e, evidence in missing.lost:
        found.add("lost", f"{_where(e)}: not in the table, {evidence}", e.event_id)
    for e, why in missing.pending:
        found.add("pending", f"{_where(e)}: not in the table, {why}", e.event_id)
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
    return found, stats


@checker("exactly_once")
def check_exactly_once(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Every valid delivered message is in the table exactly once, and nothing else is
    (:func:`judge_rows` over the final read-back).

    Returns:
        ``invalid`` with ``lost`` (the loader's committed position passed it), ``pending``
        (not loaded, the position before it or unknown), ``duplicated``, ``misrouted`` (a
        malformed message's id in the table) or ``unexpected`` (an id the ledger never sent);
        ``unknown`` when nothing valid was delivered. Rows that arrived only in the drain are
        counted ``late`` in the stats.
    """
    if not _valid(ledger):
        return CheckResult("exactly_once", UNKNOWN, "no valid message was delivered")
    found, stats = judge_rows(
        observed.table_counts, ledger, (), history.events, observed.reads.get("first_seen")
    )
    late = f" ({stats['late']} late, in the drain)" if stats["late"] else ""
    return found.result(
        "exactly_once",
        f"{stats['expected']} valid messages, {stats['rows']} rows, all exactly once{late}",
        stats,
    )


@checker("dead_letter")
def check_dead_letter(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Every malformed message is in the dead-letter topic with its source and a reason.

    The letters against the ledger come from
    :func:`~harness.scenarios.checks.compare.compare_dead_letters` (per source message); this
    check adds each letter's content, as the loader's observer reads it: a source and a
    reason from any loader; the error kind and field path too from a loader whose letters
    name the kit's error kinds (``error_kinds``), since another loader's words for an error
    are its own, not wrong. A malformed message in the table is ``exactly_once``'s finding
    (misrouted); here it is a letter that is missing.

    Params:
        kinds: malformation names that must each have been sent (else ``unknown``).
        check_path: also compare the reported field path with the ledger's target.
        max_copies: letters allowed per source message (default 1: each sent once); a second
            copy may only come from another loader id.

    Returns:
        ``invalid`` with ``lost`` (a malformed message the loader went past without a letter),
        ``pending`` (one it has not got to), ``misrouted`` (valid
        message dead-lettered), ``wrong_value`` (no source or no reason; for a loader of the
        kit's error kinds also a wrong kind or path), ``duplicated_dead_letter`` (a source
        message dead-lettered more than ``max_copies`` times, with the count), ``unexpected``
        (a letter whose source was never published); ``unknown`` when a required kind was
        never sent; ``not_applicable`` when the loader sends no dead letters the kit can read.
    """
    observer = observer_of(history)
    if observer.letter_headers is None:
        return CheckResult(
            "dead_letter", NOT_APPLICABLE,
            f"{observer.kind} declares no dead letters the kit can read (their source and reason)",
        )  # fmt: skip
    malformed = _malformed(ledger)
    letters = list(observed.dead_letters)
    by_source: dict[tuple[str, int, int], list[DeadLetter]] = defaultdict(list)
    found = Found()
    for letter in letters:
        src = letter.source
        if src is None:
            found.add("wrong_value", f"dead letter {letter.partition}@{letter.offset}: no source")
        else:
            by_source[src].append(letter)
    verdict = compare_dead_letters(letters, ledger, int(params.get("max_copies", 1)))
    letter_anomalies(verdict, ledger, found, history.events)
    check_path = bool(params.get("check_path", True)) and observer.error_kinds
    for e in malformed:
        got_letters = by_source.get(coordinates(e))
        if not got_letters:
            continue
        letter = got_letters[0]
        want = MALFORMATIONS[e.kind].loader_kind if e.kind in MALFORMATIONS else None
        if observer.error_kinds and want is not None and letter.kind != want:
            found.add(
                "wrong_value",
                f"{_where(e)} {e.kind}: kind {letter.kind!r}, expected {want!r}",
                e.event_id,
            )
        elif check_path and e.target and letter.path != e.target:
            found.add(
                "wrong_value",
                f"{_where(e)} {e.kind}: path {letter.path!r}, expected {e.target!r}",
                e.event_id,
            )
        elif not letter.reason:
            found.add("wrong_value", f"{_where(e)} {e.kind}: no reason", e.event_id)
    sent_kinds = Counter(e.kind for e in malformed)
    stats: dict[str, Any] = {
        "malformed": len(malformed),
        "dead_letters": len(letters),
        "redelivered": sum(len(v) - 1 for v in by_source.values()),
        "duplicated_sources": len(verdict.duplicated),
        "kinds": dict(sorted(sent_kinds.items())),
        "error_kinds_compared": observer.error_kinds,
    }
    required = set(params.get("kinds", ()))
    missing = sorted(required - set(sent_kinds))
    result = found.result(
        "dead_letter",
        f"{len(malformed)} malformed messages of {len(sent_kinds)} kinds, all dead-lettered",
        stats,
    )
    if result.ok and missing:
        return CheckResult(
            "dead_letter", UNKNOWN, f"kinds never sent: {', '.join(missing)}", {}, stats
        )
    if result.ok and not malformed:
        return CheckResult("dead_letter", UNKNOWN, "no malformed message was sent", {}, stats)
    return result


def letter_anomalies(
    verdict: DeadLetterVerdict,
    ledger: Sequence[LedgerEntry],
    found: Found,
    history: Sequence[Event] = (),
) -> None:
    """A dead-letter verdict's findings as named anomalies, each message with its id.

    A malformed message with no letter is ``lost`` only when the loader's committed position is
    past it (it went on without sending one); before it, or unknown, it is ``pending``: the
    loader has not got to it (``harness.scenarios.checks.positions``, as for rows).
    """
    by_coords = {coordinates(e): e for e in ledger if e.delivered}
    missing = classify_missing(history, [by_coords[src] for src in verdict.lost])
    for e, evidence in missing.lost:
        found.add(
            "lost", f"{_where(e)} kind {e.kind}: not in the dead-letter topic, {evidence}",
            e.event_id,
        )  # fmt: skip
    for e, why in missing.pending:
        found.add(
            "pending", f"{_where(e)} kind {e.kind}: not in the dead-letter topic, {why}",
            e.event_id,
        )  # fmt: skip
    for src in verdict.misrouted:
        e = by_coords[src]
        found.add("misrouted", f"valid {_where(e)} in the dead-letter topic", e.event_id)
    for src in verdict.unexpected:
        found.add("unexpected", f"dead letter from {src}: never published")
    for (topic, partition, offset), n in verdict.duplicated:
        found.add("duplicated_dead_letter", f"{topic}/{partition}@{offset} x{n}")


@checker("retention")
def check_retention(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """After a DELETE of old rows: retained rows exactly once, deleted rows stay gone.

    Uses the ``delete`` SQL event's ``cutoff_micros``, ``facts["event_times"]`` (event id to
    event time in epoch microseconds) and ``reads["before_delete"]`` (ids visible just before
    the DELETE ran). An old message loaded only after the DELETE may be present, once.

    Returns:
        ``invalid`` with ``lost``/``pending``/``duplicated`` (retained rows; lost and pending
        as ``exactly_once`` tells them apart), ``undeleted`` (an old row
        that was visible before the DELETE is still there), ``duplicated`` (old rows);
        ``unknown`` when no DELETE ran or no old/new rows were sent.
    """
    deletes = [e for e in select(history, kind="sql", phase="ok") if "cutoff_micros" in e.data]
    if not deletes:
        return CheckResult("retention", UNKNOWN, "no retention DELETE ran")
    cutoff = int(deletes[-1].data["cutoff_micros"])
    times: Mapping[str, int] = observed.facts["event_times"]
    before = set(observed.reads.get("before_delete", ()))
    found = Found()
    old = new = 0
    absent: list[LedgerEntry] = []
    for e in _valid(ledger):
        n = observed.table_counts.get(e.event_id, 0)
        if times[e.event_id] >= cutoff:
            new += 1
            if n == 0:
                absent.append(e)
            elif n > 1:
                found.add("duplicated", f"{_where(e)} x{n}", e.event_id)
        else:
            old += 1
            if n and e.event_id in before:
                found.add(
                    "undeleted",
                    f"{_where(e)} visible before the DELETE and still there",
                    e.event_id,
                )
            elif n > 1:
                found.add("duplicated", f"old {_where(e)} x{n}", e.event_id)
    missing = classify_missing(history.events, absent)
    for e, evidence in missing.lost:
        found.add("lost", f"{_where(e)}: not in the table, {evidence}", e.event_id)
    for e, why in missing.pending:
        found.add("pending", f"{_where(e)}: not in the table, {why}", e.event_id)
    stats = {"retained_expected": new, "old": old, "old_visible_before_delete": len(before)}
    if not old or not new:
        return CheckResult("retention", UNKNOWN, f"{old} old and {new} new rows sent", {}, stats)
    return found.result(
        "retention", f"{new} retained rows exactly once, {old} old rows deleted or late", stats
    )


@checker("halted")
def check_halted(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Without a dead-letter topic the loader stops at the first malformed message, naming it.

    Reads the first unplanned loader exit in the history (``loader``/``exit`` with
    ``expected`` false) and its ``message`` (the log tail); the message it names is read with
    the loader's own ``halt_pattern`` (``harness.observer``). A loader that declares none is
    judged on stopping alone, and the stats say its naming was not compared.

    Returns:
        ``invalid`` with ``not_halted`` (no exit, or a valid row past the first malformed
        message was loaded before the exit) or ``wrong_value`` (the exit names another
        message, or none); ``unknown`` when no malformed message was sent.
    """
    malformed = sorted(_malformed(ledger), key=lambda e: (e.partition, e.offset or 0))
    if not malformed:
        return CheckResult("halted", UNKNOWN, "no malformed message was sent")
    observer = observer_of(history)
    first_by_partition: dict[int, LedgerEntry] = {}
    for e in malformed:
        first_by_partition.setdefault(e.partition, e)
    exits = [e for e in select(history, "loader", "exit") if not e.data.get("expected")]
    found = Found()
    if not exits:
        found.add("not_halted", "the loader never stopped")
        return found.result("halted", "", {})
    text = str(exits[0].data.get("message", ""))
    named = observer.halted_at(text)
    firsts = {(e.topic, e.partition, e.offset) for e in first_by_partition.values()}
    if observer.halt_pattern is None:
        pass  # naming not declared: judged on stopping alone (stats)
    elif not named:
        found.add("wrong_value", "the loader's exit names no topic/partition/offset")
    elif not any(n in firsts for n in named):
        found.add("wrong_value", f"the loader named {named[0]}, first malformed: {sorted(firsts)}")
    past = observed.reads.get("visible_at_halt", ())
    limits = {p: e.offset or 0 for p, e in first_by_partition.items()}
    by_id = {e.event_id: e for e in _valid(ledger)}
    for eid in past:
        loaded = by_id.get(eid)
        if loaded is not None and (loaded.offset or 0) > limits.get(loaded.partition, 2**63):
            found.add(
                "not_halted", f"{_where(loaded)} loaded past the first malformed message", eid
            )
    stats = {
        "exit_code": exits[0].data.get("code"),
        "naming_compared": observer.halt_pattern is not None,
    }
    return found.result(
        "halted",
        f"halted at {named[0][0]}/{named[0][1]}@{named[0][2]}" if named else "halted",
        stats,
    )


@checker("column_values")
def check_column_values(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """A column is NULL for rows of some publish phases and holds a value for others.

    Params:
        column: the column name; ``reads["column:<name>"]`` maps event id to its value.
        null_phases: phases whose rows must read NULL.
        filled_phases: phases whose rows must hold ``value``.
        value: the expected value.

    Returns:
        ``invalid`` with ``wrong_value``; ``unknown`` if a phase sent no valid rows, the
        column was not read, or no row of a phase was found in the read.
    """
    column = params["column"]
    values: Mapping[str, Any] = observed.reads.get(f"column:{column}", {})
    phases: Mapping[str, Sequence[str]] = observed.facts.get("phases", {})
    valid_ids = {e.event_id for e in _valid(ledger)}
    found = Found()
    stats: dict[str, Any] = {}
    for phase_list, want_null in (
        (params.get("null_phases", ()), True),
        (params["filled_phases"], False),
    ):
        for phase in phase_list:
            ids = [i for i in phases.get(phase, ()) if i in valid_ids]
            stats[f"{phase}_rows"] = len(ids)
            if not ids:
                return CheckResult("column_values", UNKNOWN, f"phase {phase} sent no rows")
            compared = sum(1 for eid in ids if eid in values)
            stats[f"{phase}_compared"] = compared
            if not compared:
                return CheckResult(
                    "column_values", UNKNOWN,
                    f"no row of phase {phase} was in the read of {column} "
                    f"({len(values)} rows read)", {}, stats,
                )  # fmt: skip
            for eid in ids:
                if eid not in values:
                    continue  # absence is the exactly_once checker's business
                got = values[eid]
                if want_null and got is not None:
                    found.add(
                        "wrong_value",
                        f"{eid} ({phase}): {column}={got!r}, expected NULL",
                        key=f"{eid}:{column}",
                    )
                elif not want_null and got != params["value"]:
                    found.add(
                        "wrong_value",
                        f"{eid} ({phase}): {column}={got!r}, expected {params['value']!r}",
                        key=f"{eid}:{column}",
                    )
    return found.result("column_values", f"{column} NULL before, filled after", stats)


@checker("column_absent")
def check_column_absent(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """A dropped column is gone from the table (``reads["columns"]``)."""
    columns = list(observed.reads.get("columns", ()))
    found = Found()
    if not columns:
        return CheckResult("column_absent", UNKNOWN, "the table's columns were not read")
    if params["column"] in columns:
        found.add("wrong_value", f"column {params['column']} still in the table")
    return found.result("column_absent", f"column {params['column']} is gone", {})


@checker("loader_steady")
def check_loader_steady(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """The loader never exited on its own (kills and stops by the harness do not count).

    Returns:
        ``invalid`` with ``loader_error`` for each unplanned exit; ``unknown`` when the loader
        never started.
    """
    found = Found()
    for e in select(history, "loader", "exit"):
        if not e.data.get("expected"):
            found.add(
                "loader_error",
                f"exit code {e.data.get('code')}: {e.data.get('message', '')[-300:]}",
            )
    starts = len(select(history, "loader", "start", "ok"))
    if not starts and not found.anomalies:
        return CheckResult("loader_steady", UNKNOWN, "the loader never started", {}, {"starts": 0})
    return found.result("loader_steady", "the loader never stopped by itself", {"starts": starts})


@checker("compaction")
def check_compaction(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Compaction lowers the data file count and leaves the rows unchanged.

    ``reads["compaction"]`` holds ``before`` and ``after``: the snapshot before the rewrite
    (its parent) and the rewrite snapshot itself, each with ``files`` and ``rows`` (a tuple
    of aggregates over the rows as of that snapshot).

    Returns:
        ``invalid`` with ``not_compacted`` or ``wrong_value``; ``unknown`` without a rewrite.
    """
    read = observed.reads.get("compaction")
    if not read:
        return CheckResult("compaction", UNKNOWN, "no rewrite snapshot was found")
    before, after = read["before"], read["after"]
    found = Found()
    if not after["files"] < before["files"]:
        found.add("not_compacted", f"data files {before['files']} -> {after['files']}")
    if list(before["rows"]) != list(after["rows"]):
        found.add("wrong_value", f"rows {before['rows']} -> {after['rows']}")
    stats = {"files_before": before["files"], "files_after": after["files"], "rows": before["rows"]}
    return found.result(
        "compaction", f"data files {before['files']} -> {after['files']}, rows unchanged", stats
    )


@checker("partitions_loaded")
def check_partitions_loaded(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Partitions added mid-run are read: each new partition's valid messages reach the table.

    Judged per partition, so its rows are not counted twice beside ``exactly_once`` (which
    counts each missing row once, lost or pending): a new partition none of whose messages is
    in the table is ``unread_partition``, one with only some of them ``partly_read``.

    Params:
        from_partition: the first partition number that was added.

    Returns:
        ``invalid`` with ``unread_partition`` or ``partly_read`` (each partition with its
        counts); ``unknown`` when no message landed in a new partition.
    """
    first = int(params["from_partition"])
    per: dict[int, list[LedgerEntry]] = defaultdict(list)
    for e in _valid(ledger):
        per[e.partition].append(e)
    new = {p: es for p, es in per.items() if p >= first}
    if not new:
        return CheckResult("partitions_loaded", UNKNOWN, "no message landed in a new partition")
    found = Found()
    for p, es in sorted(new.items()):
        loaded = sum(1 for e in es if observed.table_counts.get(e.event_id))
        if not loaded:
            found.add("unread_partition", f"partition {p}: none of its {len(es)} messages loaded")
        elif loaded < len(es):
            found.add("partly_read", f"partition {p}: {loaded} of {len(es)} messages loaded")
    stats = {f"partition_{p}": len(es) for p, es in sorted(per.items())}
    return found.result("partitions_loaded", f"new partitions {sorted(new)} loaded", stats)


def _trigger_interval(history: History) -> float | None:
    """How often the loader under test commits while it has rows: its observer's cadence
    (icefloe's trigger interval, the sink's commit interval), else its start's record."""
    cadence = observer_of(history.events).cadence_s
    if cadence is not None and any(
        e.kind == "info" and e.name == "observer" for e in history.events
    ):
        return float(cadence)
    starts = select(history, "loader", "start", "invoke")
    interval = starts[0].data.get("trigger_interval_s") if starts else None
    return float(interval) if interval is not None else None


@checker("freshness")
def check_freshness(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Publish-to-visible latency: p50 and p99 against bounds taken from the trigger interval.

    ``reads["first_seen"]`` maps event id to the wall time (epoch seconds) a poll of Trino
    first saw it; the ledger's Kafka timestamp is the publish time. The bound is
    ``triggers * trigger_interval + slack_s`` for each of p50 and p99.

    Params:
        p50_triggers, p99_triggers, slack_s: the bounds.
        phase: measure only this publish phase (``facts["phases"]``).

    Returns:
        ``invalid`` with ``stale`` (a percentile over its bound, or a message never seen);
        ``unknown`` without a trigger interval or samples.
    """
    trigger = _trigger_interval(history)
    seen: Mapping[str, float] = observed.reads.get("first_seen", {})
    valid = [e for e in _valid(ledger) if e.timestamp is not None]
    if "phase" in params:
        # Only messages published while the probe ran are measured.
        in_phase = set(observed.facts.get("phases", {}).get(params["phase"], ()))
        valid = [e for e in valid if e.event_id in in_phase]
    if trigger is None or not valid:
        return CheckResult("freshness", UNKNOWN, "no loader start or no timestamped messages")
    found = Found()
    latencies = []
    for e in valid:
        if e.event_id not in seen:
            found.add("stale", f"{_where(e)} never seen by the probe")
            continue
        latencies.append(seen[e.event_id] - (e.timestamp or 0) / 1000)
    if not latencies:
        return CheckResult("freshness", UNKNOWN, "the probe saw nothing")
    slack = float(params.get("slack_s", 5.0))
    bounds = {
        "p50": float(params.get("p50_triggers", 2)) * trigger + slack,
        "p99": float(params.get("p99_triggers", 4)) * trigger + slack,
    }
    stats: dict[str, Any] = {"samples": len(latencies), "trigger_interval_s": trigger}
    for name, q in (("p50", 50), ("p99", 99)):
        value = percentile(latencies, q)
        stats[f"{name}_s"] = round(value, 3)
        stats[f"{name}_bound_s"] = round(bounds[name], 3)
        if value > bounds[name]:
            found.add("stale", f"{name} {value:.2f} s over its bound {bounds[name]:.2f} s")
    stats["max_s"] = round(max(latencies), 3)
    return found.result(
        "freshness",
        f"p50 {stats['p50_s']:.2f} s (bound {bounds['p50']:.1f}), "
        f"p99 {stats['p99_s']:.2f} s (bound {bounds['p99']:.1f})",
        stats,
    )


@checker("values")
def check_values(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Rows hold the values generated for them, in the expected (renamed) columns.

    ``facts["expected_rows"]`` maps event id to expected column values and
    ``reads["rows"]`` maps event id to what Trino returned for the same columns. Kafka
    metadata columns are compared with the ledger (``kafka_partition``, ``kafka_offset``).
    What counts is values compared, not rows: a row whose columns were all left out of the
    read compares nothing.

    Returns:
        ``invalid`` with ``wrong_value``; ``unknown`` if no value could be compared.
    """
    expected: Mapping[str, Mapping[str, Any]] = observed.facts.get("expected_rows", {})
    rows: Mapping[str, Mapping[str, Any]] = observed.reads.get("rows", {})
    by_id = {e.event_id: e for e in _valid(ledger)}
    found = Found()
    compared = values = 0
    for eid, want in expected.items():
        got = rows.get(eid)
        if got is None:
            continue
        entry = by_id.get(eid)
        full = dict(want)
        if entry is not None:
            full.setdefault("kafka_partition", entry.partition)
            full.setdefault("kafka_offset", entry.offset)
        columns = [c for c in full if c in got]
        compared += bool(columns)
        for column in columns:
            values += 1
            if not _same(got[column], full[column]):
                found.add(
                    "wrong_value",
                    f"{eid}: {column}={got[column]!r}, expected {full[column]!r}",
                    eid,
                )
    stats = {"rows": compared, "values": values}
    if not values:
        return CheckResult(
            "values", UNKNOWN, f"no value could be compared ({len(rows)} rows read)", {}, stats
        )
    return found.result("values", f"{values} values of {compared} rows as generated", stats)


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, float) and isinstance(got, int | float):
        return math.isclose(got, want, rel_tol=1e-12, abs_tol=0.0) or got == want
    return bool(got == want)


@checker("faults_exercised")
def check_faults_exercised(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """The run injected the faults it claims to test (so a pass means something).

    Params:
        fault: the fault name to count (``inject`` events of kind ``fault``).
        min_injections: at least this many injections.
        min_during_commit: at least this many with ``during_commit`` true.
        min_healed: every injection healed (default) unless set lower.

    Returns:
        ``unknown`` if fewer faults happened than required, else ``valid``.
    """
    name = params["fault"]
    injected = [e for e in select(history, "fault", phase="ok") if e.name == f"{name}.inject"]
    healed = [e for e in select(history, "fault", phase="ok") if e.name == f"{name}.heal"]
    commits = sum(commits_struck(history, name))
    stats = {"injected": len(injected), "healed": len(healed), "during_commit": commits}
    need = int(params.get("min_injections", 1))
    need_commit = int(params.get("min_during_commit", 0))
    if len(injected) < need or commits < need_commit or len(healed) < len(injected):
        return CheckResult(
            "faults_exercised",
            UNKNOWN,
            f"{name}: {len(injected)} injected (need {need}), {commits} during a commit "
            f"(need {need_commit}), {len(healed)} healed",
            {},
            stats,
        )
    return CheckResult(
        "faults_exercised",
        VALID,
        f"{name}: {len(injected)} injected, {commits} during a commit, all healed",
        {},
        stats,
    )


@checker("snapshots_expired")
def check_snapshots_expired(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Snapshot expiry really removed snapshots (so a pass of the other checks means something).

    Reads the ``read``/``snapshots`` events the runner records around ``expire_snapshots``
    (table snapshot count ``before`` and ``after``).

    Returns:
        ``valid`` when an expiry left fewer snapshots than it found, else ``unknown``.
    """
    reads = [e for e in select(history, "read", phase="ok") if e.name == "snapshots"]
    stats = {"expiries": len(reads)}
    for e in reads:
        before, after = int(e.data.get("before", 0)), int(e.data.get("after", 0))
        if after < before:
            stats.update(before=before, after=after)
            return CheckResult(
                "snapshots_expired", VALID, f"snapshots {before} -> {after}", {}, stats
            )
    counts = ", ".join(f"{e.data.get('before')} -> {e.data.get('after')}" for e in reads)
    return CheckResult(
        "snapshots_expired", UNKNOWN, f"no expiry removed a snapshot ({counts or 'none ran'})",
        {}, stats,
    )  # fmt: skip


def fault_windows(history: History) -> list[tuple[str, float, float | None]]:
    """(fault name, inject time, heal time or None) for every injection, for reports.

    Args:
        history: The run's history.

    Returns:
        One tuple per injection, in order.
    """
    windows: list[tuple[str, float, float | None]] = []
    open_: dict[str, list[int]] = defaultdict(list)
    for e in select(history, "fault", phase="ok"):
        base, _, what = e.name.rpartition(".")
        if what == "inject":
            open_[base].append(len(windows))
            windows.append((base, e.time, None))
        elif what == "heal" and open_[base]:
            i = open_[base].pop(0)
            windows[i] = (windows[i][0], windows[i][1], e.time)
    return windows


def summarize(results: Sequence[CheckResult]) -> str:
    """``invalid`` if any result is; else ``valid`` if every result is valid or not
    applicable and one at least is valid; else ``unknown``."""
    verdicts = {r.verdict for r in results}
    if INVALID in verdicts:
        return INVALID
    if verdicts <= {VALID, NOT_APPLICABLE} and VALID in verdicts:
        return VALID
    return UNKNOWN


__all__ = [
    "CHECKERS",
    "INVALID",
    "NOT_APPLICABLE",
    "UNKNOWN",
    "VALID",
    "Anomaly",
    "CheckResult",
    "DeadLetter",
    "Event",
    "Found",
    "Observed",
    "duplicated_dead_letters",
    "fault_windows",
    "judge_rows",
    "letter_anomalies",
    "percentile",
    "run_check",
    "summarize",
]
