"""The live rules of a generated run: judged while it goes, and replayed over its history.

While the run goes (the monitor reads the table, its duplicates and the dead-letter topic
every few seconds through the recording client), :class:`LiveJudge` and
:func:`live_anomalies` say whether what was read so far breaks a rule: no id twice, no id that
was not published, nothing valid in the dead-letter topic. Ids of a publish phase still
running are judged once its ledger is complete. ``live_invariants`` replays the same rules
over the whole history afterwards.

A message whose delivery the publisher could not confirm (a broker killed mid-send) may or may
not be in Kafka: it may be in the table once, or not at all, never twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from icefloe.harness.history import Event, History, select
from icefloe.harness.observer import Observer, observer_of
from icefloe.harness.scenarios.checks.facts.ledger import LedgerIndex
from icefloe.harness.scenarios.checks.facts.reads import Observed, read_errors
from icefloe.harness.scenarios.checks.verdict import UNKNOWN, CheckResult, Found, checker
from icefloe.publisher.ledger import LedgerEntry

__all__ = ["LiveJudge", "check_live_invariants", "live_anomalies"]


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
