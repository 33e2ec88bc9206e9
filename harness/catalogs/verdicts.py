"""The catalog checks' verdicts: pure functions of what writers were told and what the table kept.

Every commit a writer sends is an :class:`Attempt`: its table, the snapshot it was made on (its
base), a token naming it (the one row it appends), and what the catalog answered. After a stage
the harness reads each table's lineage: the tokens of the commits whose rows the table holds
now, which are the appends whose snapshots are ancestors of ``main``. The checks:

- ``acknowledged_kept``: every commit the catalog acknowledged is in its table's lineage
  (anomalies ``acknowledged_lost``, ``table_gone``);
- ``one_winner_per_base``: of the commits raced on one base, at most one is acknowledged
  (``two_winners``; the base is "none" for a table's first commit);
- ``stale_writer_refused``: a commit made on a base the table has moved past is refused
  (``stale_accepted``);
- ``kept_across_kill9``: the acknowledged commits the lineage showed just before a kill -9 of
  the catalog are in it after the catalog restarts (``lost_on_kill9``, ``table_gone``); where
  the catalog's own documentation says it keeps state only on a clean stop, the finding says
  so.

A check that compared nothing (no acknowledged commit, no base raced by two writers, no stale
commit answered) is ``unknown``, never ``valid``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from icefloe.harness.scenarios.checks.verdict import UNKNOWN, CheckResult, Found

ACKNOWLEDGED, REFUSED, NO_ANSWER = "acknowledged", "refused", "no_answer"
RACE, STALE, KILL9 = "race", "stale", "kill9"

Lineage = Mapping[str, frozenset[str] | None]
"""Each table's lineage as the tokens of the commits it holds (``None``: the table is gone)."""


@dataclass(frozen=True)
class Attempt:
    """One commit a writer sent, and what the catalog answered.

    Attributes:
        table: The table's name.
        writer: Which writer sent it.
        token: The commit's name, its one row (empty: a commit that adds no snapshot, as a
            stale writer's pointer put back).
        base: The snapshot it was made on (``None``: the table had none).
        outcome: ``acknowledged``, ``refused`` or ``no_answer`` (outcome unknown).
        stage: ``race``, ``stale`` or ``kill9``.
        detail: The error, or what the commit raced.
    """

    table: str
    writer: str
    token: str
    base: int | None
    outcome: str
    stage: str
    detail: str = ""


def _base(base: int | None) -> str:
    return "no snapshot (the table's first commit)" if base is None else f"snapshot {base}"


def _counts(attempts: Sequence[Attempt]) -> dict[str, int]:
    return {o: sum(a.outcome == o for a in attempts) for o in (ACKNOWLEDGED, REFUSED, NO_ANSWER)}


def _missing(found: Found, acked: Sequence[Attempt], lineage: Lineage, anomaly: str) -> None:
    for a in acked:
        tokens = lineage.get(a.table)
        if tokens is None:
            found.add("table_gone", f"{a.table}: gone, with {a.writer}'s acknowledged {a.token}")
        elif a.token not in tokens:
            found.add(
                anomaly,
                f"{a.table}: {a.writer}'s commit {a.token} on {_base(a.base)} was acknowledged "
                f"and is not in the table ({len(tokens)} commits are)",
                key=a.token,
            )


def acknowledged_kept(attempts: Sequence[Attempt], lineage: Lineage) -> CheckResult:
    """Every acknowledged commit that adds a snapshot is in its table's lineage."""
    name = "acknowledged_kept"
    acked = [a for a in attempts if a.outcome == ACKNOWLEDGED and a.token]
    stats = {**_counts(attempts), "tables": len(lineage)}
    if not acked:
        return CheckResult(name, UNKNOWN, "no commit was acknowledged: nothing compared", {}, stats)
    found = Found()
    _missing(found, acked, lineage, "acknowledged_lost")
    return found.result(name, f"{len(acked)} acknowledged commits, all in the lineage", stats)


def one_winner_per_base(attempts: Sequence[Attempt]) -> CheckResult:
    """Of the race's commits on one base of one table, at most one is acknowledged."""
    name = "one_winner_per_base"
    on: dict[tuple[str, int | None], list[Attempt]] = defaultdict(list)
    for a in attempts:
        if a.stage == RACE:
            on[(a.table, a.base)].append(a)
    raced = {key: group for key, group in on.items() if len(group) > 1}
    stats = {
        "bases_raced": len(raced),
        "first_commits_raced": sum(base is None for _, base in raced),
        "commits_raced": sum(len(g) for g in raced.values()),
    }
    if not raced:
        return CheckResult(name, UNKNOWN, "no two writers raced on one base", {}, stats)
    found = Found()
    for (table, base), group in raced.items():
        won = [a for a in group if a.outcome == ACKNOWLEDGED]
        if len(won) > 1:
            found.add(
                "two_winners",
                f"{table}: {len(won)} commits on {_base(base)} all acknowledged "
                f"({', '.join(a.token for a in won)})",
            )
    summary = f"{len(raced)} bases raced by two writers or more, one winner at most on each"
    return found.result(name, summary, stats)


def stale_writer_refused(attempts: Sequence[Attempt]) -> CheckResult:
    """A commit made on a base another acknowledged commit has moved past is refused."""
    name = "stale_writer_refused"
    stale = [a for a in attempts if a.stage == STALE and a.writer == "stale"]
    answered = [a for a in stale if a.outcome != NO_ANSWER]
    stats = _counts(stale)
    if not answered:
        return CheckResult(name, UNKNOWN, "no stale commit was answered", {}, stats)
    found = Found()
    for a in answered:
        if a.outcome == ACKNOWLEDGED:
            found.add(
                "stale_accepted",
                f"{a.table}: a commit on {_base(a.base)} was acknowledged after {a.detail}",
            )
    return found.result(name, f"{len(answered)} stale commits, every one refused", stats)


def kept_across_kill9(
    attempts: Sequence[Attempt],
    before: Lineage,
    after: Lineage,
    durability: str,
    keeps_state: bool,
) -> CheckResult:
    """The commits in the lineage before a kill -9 of the catalog are in it after the restart.

    Only acknowledged commits the lineage showed before the kill count: one missing already
    (a catalog that lost it earlier) is ``acknowledged_kept``'s finding, not the kill's.

    Args:
        attempts: The commits sent before the kill.
        before: The tables' lineages read just before the kill.
        after: The tables' lineages read after the catalog restarted.
        durability: What the catalog's own documentation says of its state on a kill -9.
        keeps_state: Whether it promises to keep acknowledged commits across one.
    """
    name = "kept_across_kill9"
    acked = [
        a
        for a in attempts
        if a.stage == KILL9 and a.outcome == ACKNOWLEDGED and a.token in (before.get(a.table) or ())
    ]
    stats = _counts([a for a in attempts if a.stage == KILL9])
    if not acked:
        summary = "no acknowledged commit was in the lineage before the kill"
        return CheckResult(name, UNKNOWN, summary, {}, stats)
    found = Found()
    _missing(found, acked, after, "lost_on_kill9")
    result = found.result(name, f"{len(acked)} acknowledged commits kept across a kill -9", stats)
    if found.anomalies and not keeps_state:
        result.summary += f"; as documented: {durability}"
    return result


__all__ = [
    "ACKNOWLEDGED",
    "KILL9",
    "NO_ANSWER",
    "RACE",
    "REFUSED",
    "STALE",
    "Attempt",
    "Lineage",
    "acknowledged_kept",
    "kept_across_kill9",
    "one_winner_per_base",
    "stale_writer_refused",
]
