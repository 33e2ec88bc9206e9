"""The catalog checks' verdicts, each seen valid, invalid and unknown on made-up attempts."""

from __future__ import annotations

from icefloe.harness.catalogs.verdicts import (
    ACKNOWLEDGED,
    KILL9,
    NO_ANSWER,
    RACE,
    REFUSED,
    STALE,
    Attempt,
    acknowledged_kept,
    kept_across_kill9,
    one_winner_per_base,
    stale_writer_refused,
)


def attempt(
    token: str, outcome: str, base: int | None = 1, stage: str = RACE, **kw: str
) -> Attempt:
    return Attempt(kw.get("table", "t"), kw.get("writer", "w0"), token, base, outcome, stage)


def test_acknowledged_kept_finds_an_acknowledged_commit_missing_from_the_lineage() -> None:
    attempts = [attempt("a", ACKNOWLEDGED), attempt("b", ACKNOWLEDGED), attempt("c", REFUSED)]
    assert acknowledged_kept(attempts, {"t": frozenset({"a", "b"})}).verdict == "valid"
    lost = acknowledged_kept(attempts, {"t": frozenset({"a", "c"})})
    assert lost.verdict == "invalid"
    assert lost.anomalies["acknowledged_lost"].count == 1
    assert "b" in lost.anomalies["acknowledged_lost"].examples[0]


def test_acknowledged_kept_names_a_table_that_is_gone() -> None:
    gone = acknowledged_kept([attempt("a", ACKNOWLEDGED)], {"t": None})
    assert gone.verdict == "invalid" and "table_gone" in gone.anomalies


def test_acknowledged_kept_is_unknown_when_nothing_was_acknowledged() -> None:
    result = acknowledged_kept([attempt("a", REFUSED), attempt("b", NO_ANSWER)], {"t": frozenset()})
    assert result.verdict == "unknown"


def test_a_stale_commit_that_adds_no_snapshot_is_not_looked_for_in_the_lineage() -> None:
    result = acknowledged_kept(
        [attempt("a", ACKNOWLEDGED), attempt("", ACKNOWLEDGED, stage=STALE)], {"t": frozenset("a")}
    )
    assert result.verdict == "valid"


def test_two_acknowledged_commits_on_one_base_are_two_winners() -> None:
    one = [attempt("a", ACKNOWLEDGED), attempt("b", REFUSED), attempt("c", REFUSED)]
    assert one_winner_per_base(one).verdict == "valid"
    two = [
        attempt("a", ACKNOWLEDGED),
        attempt("b", ACKNOWLEDGED, base=None),
        attempt("c", ACKNOWLEDGED, base=None),
    ]
    result = one_winner_per_base(two)
    assert result.verdict == "invalid"
    assert result.stats["first_commits_raced"] == 1
    assert "first commit" in result.anomalies["two_winners"].examples[0]


def test_one_winner_per_base_is_unknown_when_no_base_was_raced() -> None:
    apart = [attempt("a", ACKNOWLEDGED, base=1), attempt("b", ACKNOWLEDGED, base=2)]
    assert one_winner_per_base(apart).verdict == "unknown"
    other_tables = [attempt("a", ACKNOWLEDGED, table="x"), attempt("b", ACKNOWLEDGED, table="y")]
    assert one_winner_per_base(other_tables).verdict == "unknown"


def test_a_stale_commit_acknowledged_is_caught_and_an_unanswered_one_proves_nothing() -> None:
    refused = [attempt("s", REFUSED, stage=STALE, writer="stale")]
    assert stale_writer_refused(refused).verdict == "valid"
    accepted = [attempt("s", ACKNOWLEDGED, stage=STALE, writer="stale")]
    assert stale_writer_refused(accepted).verdict == "invalid"
    unanswered = [attempt("s", NO_ANSWER, stage=STALE, writer="stale")]
    assert stale_writer_refused(unanswered).verdict == "unknown"
    ahead_only = [attempt("a", ACKNOWLEDGED, stage=STALE, writer="ahead")]
    assert stale_writer_refused(ahead_only).verdict == "unknown"


def test_a_kill9_finding_cites_the_catalogs_own_documentation_when_it_promised_nothing() -> None:
    acked = [attempt(t, ACKNOWLEDGED, stage=KILL9) for t in "abc"]
    before = {"t": frozenset("abc")}
    kept = kept_across_kill9(acked, before, {"t": frozenset("abc")}, "clean stop only", False)
    assert kept.verdict == "valid"
    lost = kept_across_kill9(acked, before, {"t": frozenset("a")}, "clean stop only", False)
    assert lost.verdict == "invalid" and lost.anomalies["lost_on_kill9"].count == 2
    assert lost.summary.endswith("as documented: clean stop only")
    promised = kept_across_kill9(acked, before, {"t": None}, "clean stop only", True)
    assert promised.verdict == "invalid" and "documented" not in promised.summary
    assert kept_across_kill9([], before, {"t": None}, "", True).verdict == "unknown"


def test_a_commit_missing_before_the_kill_is_not_blamed_on_the_kill() -> None:
    acked = [attempt(t, ACKNOWLEDGED, stage=KILL9) for t in "ab"]
    result = kept_across_kill9(acked, {"t": frozenset("a")}, {"t": frozenset("a")}, "", True)
    assert result.verdict == "valid" and "1 acknowledged" in result.summary
    nothing_before = kept_across_kill9(acked, {"t": frozenset()}, {"t": None}, "", True)
    assert nothing_before.verdict == "unknown"
