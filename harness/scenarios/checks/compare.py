"""The two comparisons with the publisher's ledger: the table's rows, and the dead letters.

Every verdict on "is each valid message in the table once" and "is each malformed message in
the dead-letter topic once" comes from here: the scenario checks (``exactly_once``,
``table_matches_ledger``, ``dead_letter``, ``dead_letters_match_ledger``), generated
schedules and the soak through them, and what a user runs (``icefloe verify``, the demo, the
workshop's checks, through ``harness.verify``). They are pure functions over what was read
(event ids with their row counts; each dead letter's headers) and what was sent.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from icefloe.harness.observer import ICEFLOE, Letter, Observer
from icefloe.harness.scenarios.checks.facts.ledger import POLICY_STATUS, Coordinates
from icefloe.publisher.ledger import LedgerEntry

__all__ = [
    "DeadLetterVerdict",
    "RowVerdict",
    "compare_dead_letters",
    "compare_rows",
    "duplicated_dead_letters",
    "letters_of",
    "rows_against_ledger",
]


@dataclass(frozen=True)
class RowVerdict:
    """The table's event ids against the ids it should hold (each tuple sorted).

    Attributes:
        rows: Rows in the table.
        distinct: Distinct event ids among them.
        expected: Ids that must be there exactly once.
        lost: Expected ids missing from the table.
        duplicated: Ids sent once (expected, or allowed) present more than once.
        unexpected: Ids nobody sent.
        misrouted: Ids of malformed messages present in the table.
        undeleted: Ids a retention DELETE removed, present again.
        counts: Rows per id, as read.
    """

    rows: int
    distinct: int
    expected: int
    lost: tuple[str, ...]
    duplicated: tuple[str, ...]
    unexpected: tuple[str, ...]
    misrouted: tuple[str, ...] = ()
    undeleted: tuple[str, ...] = ()
    counts: Mapping[str, int] = field(default_factory=dict, repr=False)

    @property
    def exactly_once(self) -> bool:
        """Every expected id once, nothing else."""
        return not (
            self.lost or self.duplicated or self.unexpected or self.misrouted or self.undeleted
        )


def compare_rows(
    found: Iterable[str] | Mapping[str, int],
    expected: Iterable[str],
    *,
    may_be_absent: Iterable[str] = (),
    published: Iterable[str] | None = None,
    malformed: Iterable[str] = (),
    removed: Iterable[str] = (),
) -> RowVerdict:
    """Compare the ids a table holds with the ids it should hold.

    Args:
        found: The table's event ids, one per row, or rows per id.
        expected: The valid ids that must be in the table once.
        may_be_absent: Expected ids allowed to be missing (still never twice).
        published: Every valid id sent, when more than ``expected`` (a check of one ledger
            among several, or deliveries the publisher could not confirm): each may be there
            once or not at all; an id outside it and ``expected`` is unexpected.
        malformed: Ids of malformed messages: present, they are misrouted.
        removed: Ids a retention DELETE removed: present, they are undeleted.

    Returns:
        The verdict.
    """
    counts = dict(found) if isinstance(found, Mapping) else dict(Counter(found))
    wanted, gone, bad = set(expected), set(removed), set(malformed)
    sent = wanted | (set(published) if published is not None else set())
    present = counts.keys()
    return RowVerdict(
        rows=sum(counts.values()),
        distinct=len(counts),
        expected=len(wanted - gone),
        lost=tuple(sorted(wanted - set(may_be_absent) - gone - present)),
        duplicated=tuple(sorted(i for i in sent - gone - bad if counts.get(i, 0) > 1)),
        unexpected=tuple(sorted(present - sent - bad - gone)),
        misrouted=tuple(sorted(present & (bad - sent))),
        undeleted=tuple(sorted(present & gone)),
        counts=counts,
    )


def rows_against_ledger(
    counts: Mapping[str, int], ledger: Sequence[LedgerEntry], removed: Iterable[str] = ()
) -> RowVerdict:
    """The table (rows per event id) against a run's ledger entries: every valid delivered
    message once, a valid one whose delivery was not confirmed once or not at all, nothing
    malformed, nothing a retention DELETE removed (``removed``), nothing else."""
    valid = [e for e in ledger if e.status == "valid"]
    return compare_rows(
        counts,
        (e.event_id for e in valid if e.delivered),
        published=(e.event_id for e in ledger if e.status in ("valid", POLICY_STATUS)),
        malformed=(e.event_id for e in ledger if e.status == "malformed"),
        removed=removed,
    )


@dataclass(frozen=True)
class DeadLetterVerdict:
    """The dead-letter topic against the ledger's malformed messages (tuples sorted).

    Attributes:
        letters: Records in the dead-letter topic.
        distinct: Distinct source coordinates among them.
        expected: Malformed messages delivered to Kafka.
        lost: Coordinates of malformed messages with no letter.
        misrouted: Coordinates of valid messages with a letter.
        kinds: Letters per error kind (or reason, for a loader that names no kinds).
        duplicated: (coordinates, letters) of each source dead-lettered more often than
            allowed: an anomaly per source message, not a statistic.
        unexpected: Sources of letters no ledger entry has (and no unconfirmed delivery to
            that topic could explain).
        unsourced: Letters whose headers name no source.
    """

    letters: int
    distinct: int
    expected: int
    lost: tuple[Coordinates, ...]
    misrouted: tuple[Coordinates, ...]
    kinds: Mapping[str, int]
    duplicated: tuple[tuple[Coordinates, int], ...] = ()
    unexpected: tuple[Coordinates, ...] = ()
    unsourced: int = 0

    @property
    def complete(self) -> bool:
        """Every malformed message dead-lettered, nothing valid among them."""
        return not (self.lost or self.misrouted)

    @property
    def exactly_once(self) -> bool:
        """Complete, and no source sent more often than allowed, nothing unknown."""
        return self.complete and not (self.duplicated or self.unexpected or self.unsourced)


def letters_of(
    letters: Sequence[Letter | Mapping[str, str]], observer: Observer = ICEFLOE
) -> list[Letter]:
    """Dead letters as :class:`~harness.observer.Letter`: those given as headers read by
    ``observer`` (icefloe's loader's by default)."""
    return [
        x if isinstance(x, Letter) else observer.letter(-1, i, x) for i, x in enumerate(letters)
    ]


def duplicated_dead_letters(
    per_source: Mapping[Coordinates, Sequence[str | None]], max_copies: int = 1
) -> dict[Coordinates, int]:
    """Source messages dead-lettered more often than allowed.

    A source is over when it has more than ``max_copies`` letters, or when one loader id sent
    it twice: a second copy is only ever allowed from another loader (a frozen loader's letters
    sent again by its successor), never from a loader repeating itself.

    Args:
        per_source: The loader id of each letter (``None`` when unnamed), per source.
        max_copies: Letters allowed per source.

    Returns:
        Source to its letter count, for those over, sorted.
    """
    return {
        s: len(ids)
        for s, ids in sorted(per_source.items())
        if len(ids) > max_copies or len(set(ids)) < len(ids)
    }


def compare_dead_letters(
    letters: Sequence[Letter | Mapping[str, str]],
    ledger: Sequence[LedgerEntry],
    max_copies: int = 1,
    observer: Observer = ICEFLOE,
) -> DeadLetterVerdict:
    """Compare dead letters with the ledger's messages, per source message.

    Args:
        letters: The dead letters, or each one's headers (read by ``observer``).
        ledger: The ledger entries of what was published.
        max_copies: Letters allowed per source (see :func:`duplicated_dead_letters`).
        observer: How the loader that sent them names their source (for headers).

    Returns:
        The verdict.
    """
    read = letters_of(letters, observer)
    per_source: dict[Coordinates, list[str | None]] = defaultdict(list)
    unsourced = 0
    for letter in read:
        if letter.source is None:
            unsourced += 1
        else:
            per_source[letter.source].append(letter.loader)
    malformed: set[Coordinates] = set()
    valid: set[Coordinates] = set()
    either: set[Coordinates] = set()  # the loader's own policy: a letter or a row
    unconfirmed_topics: set[str] = set()
    for e in ledger:
        if e.offset is None or not e.delivered:
            unconfirmed_topics.add(e.topic)
            continue
        where = {"malformed": malformed, POLICY_STATUS: either}.get(e.status, valid)
        where.add((e.topic, e.partition, e.offset))
    found = set(per_source)
    strays = found - malformed - valid - either
    return DeadLetterVerdict(
        letters=len(read),
        distinct=len(found),
        expected=len(malformed),
        lost=tuple(sorted(malformed - found)),
        misrouted=tuple(sorted(found & valid)),
        kinds=dict(Counter(letter.kind or letter.reason or "?" for letter in read)),
        duplicated=tuple(duplicated_dead_letters(per_source, max_copies).items()),
        unexpected=tuple(sorted(s for s in strays if s[0] not in unconfirmed_topics)),
        unsourced=unsourced,
    )
