"""Every break of the scenarios in its cheapest form, and where CI sees each one caught.

A break that changes the loader runs its scenario file as written, with only its ``[vars]``
made smaller where fewer messages still show the anomaly (:data:`BREAKS`). CI sees each caught
in one of two places:

- **live** (:data:`LIVE`, ``test_breaks_ci.py``): the run itself, on the stack, every CI run.
  Kept live: what the kit exists to prove and no recording can stand in for, the loader's
  offset guard (01 ``no_guard``: a replayed batch is duplicated) and its fence (15
  ``no_fencing``: a thawed zombie appends again), each also re-judged under the mutation breaks
  of :data:`JUDGED_AGAIN`;
- **recorded** (``test_breaks_recorded.py``, no service): the history and ledgers of a live run
  of the break, kept in ``recorded/`` and judged again by today's checkers, so a change to a
  checker that stops it from seeing the anomaly fails in seconds. Every break, live ones
  included, has a recording. ``make record-breaks`` runs every break live and writes them anew.

A break that mutates what a run read back or recorded (``mutate``,
``harness.scenarios.mutations``) needs no run of its own: it is judged on a recorded run of its
scenario (:data:`JUDGED_AGAIN`), a loader break's or a plain run's (:data:`PLAIN_RUNS`), and must
report its anomaly more often than the verdict on that run without the mutation (a premise: say
the run proved nothing, where without the mutation it did), so what it shows is the mutation's
doing. A plain run's recording must itself pass today's checks.

A break's run can prove more than the check its scenario file names: :data:`ALSO` lists further
checks that must report an anomaly in the same run (the thawed, unfenced zombie's batch is both
rows twice and a commit by a loader that no longer held the table: ``one_owner``).
"""

from __future__ import annotations

from typing import Any

from icefloe.harness.scenarios.model import find
from icefloe.harness.scenarios.runner import CheckResult, demonstrated

BREAKS: dict[tuple[str, str], dict[str, Any]] = {
    # One commit, a self-kill right after it, a restart: 300 messages are a batch or two.
    ("01_exactly_once_kill9", "no_guard"): {"count": 300, "rate": 100},
    # The zombie freezes after its first commit, so the publish must outlast the loader's
    # start and first batch (30 s at 100 msg/s).
    ("15_zombie_writer", "no_fencing"): {"count": 3000},
    # A fifth malformed, every kind of the catalog among them, oversized ones included.
    ("02_malformed_dead_letter", "size_limit"): {"count": 600},
    # Two phases of 300 over 30 days of event time: the DELETE takes whole days.
    ("06_retention", "resurrect"): {"count": 300},
    # Values read back changed: two phases of 100 give the check rows on both sides of the ALTER.
    ("04_add_column", "wrong_values"): {"count": 100},
    # 100 envelopes; the rows never come, so the wait for them is cut to a minute.
    ("14_json_tweaks", "no_unnest"): {"count": 100, "await_s": 60},
    # A commit's answer lost while it applied: the publish must outlast the faults.
    ("16_lost_commit_answers", "blind_retry"): {},
    # The first reset on the wire ends an impatient loader; the rows after it never come, so
    # the wait for them is cut to 20 s (150 s in the scenario).
    ("17_wire_faults", "no_patience"): {"await_s": 20},
}
"""The loader breaks, each with the ``[vars]`` of its cheapest form."""

LIVE: frozenset[tuple[str, str]] = frozenset(
    {("01_exactly_once_kill9", "no_guard"), ("15_zombie_writer", "no_fencing")}
)
"""The loader breaks every CI run plays on the stack (the others: ``pytest -m slow``)."""

PLAIN = "plain"
"""The recording of a plain run (no break) of a scenario, in place of a break's name."""

PLAIN_RUNS: tuple[str, ...] = (
    "03_no_dead_letter_topic",
    "05_drop_column",
    "07_compaction",
    "08_snapshot_expiry",
    "09_broker_outage",
    "12_scale_out",
    "13_freshness",
    "14_json_tweaks",
)
"""Scenarios with a recording of a plain, passing run, whose mutation breaks are judged on it."""

JUDGED_AGAIN: dict[tuple[str, str], tuple[str, ...]] = {
    ("01_exactly_once_kill9", "no_guard"): ("forgotten_kills",),
    ("02_malformed_dead_letter", "size_limit"): ("lost_letters", "twice_sent"),
    ("04_add_column", "wrong_values"): ("unwritten_column", "crashed"),
    ("15_zombie_writer", "no_fencing"): ("taken_back",),
    ("16_lost_commit_answers", "blind_retry"): ("faults_missed",),
    ("03_no_dead_letter_topic", PLAIN): ("went_on",),
    ("05_drop_column", PLAIN): ("column_kept",),
    ("07_compaction", PLAIN): ("not_compacted",),
    ("08_snapshot_expiry", PLAIN): ("nothing_expired",),
    ("09_broker_outage", PLAIN): ("no_fault",),
    ("12_scale_out", PLAIN): ("partition_unread",),
    ("13_freshness", PLAIN): ("fell_behind",),
    ("14_json_tweaks", PLAIN): ("wrong_values",),
}
"""The mutation breaks, each judged on a recorded run of its scenario: a loader break's (whose
own mutation, if it has one, is the base it must beat) or a plain run's."""

ALSO: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    ("15_zombie_writer", "no_fencing"): (("one_owner", "two_writers"),),
    ("14_json_tweaks", "no_unnest"): (("exactly_once", "unexpected"),),
}
"""Further (check, anomaly) a loader break's run must show."""


def cheap(name: str, brk: str) -> Any:
    """The scenario ``name`` with its ``[vars]`` overridden for ``brk``, profile ``ci`` (a
    plain run's: as the file says)."""
    return find(name, variables=BREAKS.get((name, brk)))


def count(checks: list[CheckResult], check: str, anomaly: str) -> int:
    """How often ``check`` reported ``anomaly`` in ``checks`` (0: not at all)."""
    found = next((r for r in checks if r.check == check), None)
    return found.anomalies[anomaly].count if found and anomaly in found.anomalies else 0


def missing_also(name: str, brk: str, checks: list[CheckResult]) -> list[str]:
    """The :data:`ALSO` anomalies ``checks`` do not show."""
    return [
        f"{c} did not report {a}" for c, a in ALSO.get((name, brk), ()) if not count(checks, c, a)
    ]


def judged_again(
    scenario: Any, mutation: str, base: list[CheckResult], mutated: list[CheckResult]
) -> str | None:
    """What is wrong with mutation break ``mutation`` judged on a history whose own verdict was
    ``base`` (``mutated``: the same history judged under the mutation), if anything."""
    expected = scenario.breaks[mutation]
    assert expected.mutate, f"{mutation} is not a mutation"
    if expected.expect_anomaly is None:  # a premise must say the run proved nothing
        if demonstrated(scenario, mutation, mutated) and not demonstrated(scenario, mutation, base):
            return None
        verdicts = [(r.verdict, m.verdict) for r in base for m in mutated if r.check == m.check]
        return f"{mutation}: {expected.expected} not reported (before, after: {verdicts})"
    before = count(base, expected.expect_check, expected.expect_anomaly)
    after = count(mutated, expected.expect_check, expected.expect_anomaly)
    if after > before:
        return None
    return (
        f"{mutation}: {expected.expect_check} reported {after} {expected.expect_anomaly} "
        f"(without the mutation: {before})"
    )


SEEN_FAILING_LIVE: dict[str, str] = {
    "no_file_added_twice": "tests/harness/test_storage_checks_integration.py",
    "files_exist": "tests/harness/test_storage_checks_integration.py",
    "staged_snapshots_bounded": "tests/harness/test_storage_checks_integration.py",
    "liveness": "tests/harness/test_storage_checks_integration.py",
}
"""Checkers a scenario uses that no break of a scenario file breaks, each with the test that
shows it failing on the stack: a writer of the test's own that commits a data file twice,
deletes one from storage, stages snapshots it never publishes, or freezes after a heal."""
