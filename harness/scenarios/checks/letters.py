"""Checks of the dead-letter topic against the ledger: every malformed message there once,
with its source and a reason (as the loader's observer reads its letters)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from icefloe.harness.history import History, select
from icefloe.harness.observer import observer_of
from icefloe.harness.scenarios.checks.compare import compare_dead_letters
from icefloe.harness.scenarios.checks.facts.ledger import (
    coordinates,
    describe,
    malformed_entries,
    policy_entries,
)
from icefloe.harness.scenarios.checks.facts.reads import DeadLetter, Observed, dead_letters
from icefloe.harness.scenarios.checks.missing import letter_anomalies
from icefloe.harness.scenarios.checks.verdict import (
    NOT_APPLICABLE,
    UNKNOWN,
    CheckResult,
    Found,
    Param,
    checker,
)
from icefloe.publisher.ledger import LedgerEntry
from icefloe.publisher.malformations import MALFORMATIONS, POLICY

__all__ = ["check_dead_letter", "check_dead_letters_match_ledger"]

MAX_COPIES = Param(
    "max_copies", int, "letters allowed per source message (a second only from another loader)", 1
)
KINDS_SENT = Param("kinds", tuple[str, ...], "malformation kinds that must each have been sent", ())
CHECK_PATH = Param("check_path", bool, "compare each letter's field path (kit's error kinds)", True)


@checker("dead_letter", KINDS_SENT, MAX_COPIES, CHECK_PATH)
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
    malformed = malformed_entries(ledger)
    letters = list(observed.dead_letters)
    by_source: dict[tuple[str, int, int], list[DeadLetter]] = defaultdict(list)
    found = Found()
    for letter in letters:
        src = letter.source
        if src is None:
            found.add("wrong_value", f"dead letter {letter.partition}@{letter.offset}: no source")
        else:
            by_source[src].append(letter)
    verdict = compare_dead_letters(letters, ledger, int(params["max_copies"]))
    letter_anomalies(verdict, ledger, found, history.events)
    check_path = bool(params["check_path"]) and observer.error_kinds
    for e in malformed:
        got_letters = by_source.get(coordinates(e))
        if not got_letters:
            continue
        letter = got_letters[0]
        want = MALFORMATIONS[e.kind].loader_kind if e.kind in MALFORMATIONS else None
        if observer.error_kinds and want is not None and letter.kind != want:
            found.add(
                "wrong_value",
                f"{describe(e)} {e.kind}: kind {letter.kind!r}, expected {want!r}",
                e.event_id,
            )
        elif check_path and e.target and letter.path != e.target:
            found.add(
                "wrong_value",
                f"{describe(e)} {e.kind}: path {letter.path!r}, expected {e.target!r}",
                e.event_id,
            )
        elif not letter.reason:
            found.add("wrong_value", f"{describe(e)} {e.kind}: no reason", e.event_id)
    sent_kinds = Counter(e.kind for e in malformed)
    stats: dict[str, Any] = {
        "malformed": len(malformed),
        "dead_letters": len(letters),
        "redelivered": sum(len(v) - 1 for v in by_source.values()),
        "duplicated_sources": len(verdict.duplicated),
        "kinds": dict(sorted(sent_kinds.items())),
        "error_kinds_compared": observer.error_kinds,
    }
    policy = policy_entries(ledger)
    if policy:  # what the loader chose for malformations of icefloe's policy: no anomaly
        lettered = Counter(str(e.kind) for e in policy if coordinates(e) in by_source)
        kinds = sorted({str(e.kind) for e in policy})
        stats["policy_dead_lettered"] = {k: lettered.get(k, 0) for k in kinds}
    # A kind of icefloe's policy the loader does not declare it refuses is not required of it.
    required = set(params["kinds"]) - (set(POLICY) - set(observer.refuses))
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


@checker("dead_letters_match_ledger", MAX_COPIES)
def check_dead_letters_match_ledger(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """The dead-letter topic holds every malformed delivered message once, and nothing else
    (:func:`~harness.scenarios.checks.compare.compare_dead_letters`, per source message).

    Returns:
        ``invalid`` with ``lost`` (a malformed message not dead-lettered), ``misrouted`` (a
        valid one dead-lettered), ``unexpected`` (a letter whose source was never sent) or
        ``duplicated_dead_letter`` (a source dead-lettered more than ``max_copies`` times,
        with the count); ``unknown`` when no malformed message was delivered and no letter
        was read (nothing was compared).
    """
    letters = observed.dead_letters or dead_letters(history)
    verdict = compare_dead_letters(letters, ledger, int(params["max_copies"]))
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
