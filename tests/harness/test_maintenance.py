"""Maintenance statements run again when their commit loses a race, and only then."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pytest

from icefloe.harness import maintenance

TABLE = "lake.s.t"
# What Trino said when the REST catalog refused an optimize racing the loader's commit.
LOST_RACE = (
    'TrinoQueryError(type=INTERNAL_ERROR, name=GENERIC_INTERNAL_ERROR, message="Malformed '
    'request: Cannot add snapshot with sequence number 10 older than last sequence number 10")'
)


class _Trino:
    """Answers footprint queries; the maintenance statement fails with ``errors`` first."""

    def __init__(self, *errors: str) -> None:
        self.errors = list(errors)
        self.statements: list[str] = []

    def __call__(self, statement: str, session: Mapping[str, str] | None) -> list[Any]:
        if statement.startswith("SELECT count_if"):
            return [(3, 0, 100)]
        if statement.startswith("SELECT count(*)"):
            return [(1,)]
        self.statements.append(statement)
        if self.errors:
            raise RuntimeError(self.errors.pop(0))
        return []


def _optimize(trino: _Trino, monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waits: list[float] = []
    monkeypatch.setattr(maintenance.time, "sleep", waits.append)
    maintenance.optimize(trino, TABLE)
    return waits


def test_a_statement_whose_commit_lost_a_race_runs_again(monkeypatch: pytest.MonkeyPatch) -> None:
    trino = _Trino(LOST_RACE, "ICEBERG_COMMIT_ERROR: Failed to commit")
    assert _optimize(trino, monkeypatch) == [1.0, 2.0]
    assert len(trino.statements) == 3 and len(set(trino.statements)) == 1


def test_other_errors_and_a_race_lost_every_time_are_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trino = _Trino("TABLE_NOT_FOUND: no such table")
    with pytest.raises(RuntimeError, match="TABLE_NOT_FOUND"):
        _optimize(trino, monkeypatch)
    assert len(trino.statements) == 1
    always = _Trino(*[LOST_RACE] * maintenance.CONFLICT_ATTEMPTS)
    with pytest.raises(RuntimeError, match="sequence number"):
        _optimize(always, monkeypatch)
    assert len(always.statements) == maintenance.CONFLICT_ATTEMPTS


class _LostTrino:
    """Trino killed as it committed a retention DELETE: the DELETE landed (twice: a retry
    landed too), the client saw every try fail, and the first reads after it fail as well.
    Then another writer (a loader of no icefloe key, rewriting its own files) overwrote the
    table and "d" went: not retention's doing."""

    def __init__(self) -> None:
        self.down_reads = 2
        self.records: list[tuple[str, list[str]]] = []
        self.versions = {10: {"a", "b", "c", "d"}, 11: {"c", "d"}, 12: {"d"}, 13: set()}
        # snapshot, parent, summary
        self.snapshots = [
            (11, 10, {"trino_query_id": "q1"}),
            (12, 11, {"trino_query_id": "q2"}),
            (13, 12, {"kafka.connect.commit-id": "c"}),
        ]

    def query_fn(self, name: str, **data: Any) -> Any:
        def query(statement: str, session: Mapping[str, str] | None) -> list[Any]:
            raise ConnectionError("Trino restarting")

        return query

    def visible(self, name: str, table: str) -> None:
        pass

    def sql(self, name: str, statement: str, attempts: int = 1) -> list[Any]:
        if self.down_reads:
            self.down_reads -= 1
            raise ConnectionError("Trino restarting")
        if name == "retention_snapshot":
            return [
                (s, parent) for s, parent, summary in self.snapshots if _matches(statement, summary)
            ]
        version = int(statement.split("FOR VERSION AS OF ")[1].split()[0])
        return [(i,) for i in sorted(self.versions[version])]

    def record_read(self, name: str, values: list[str], **data: Any) -> None:
        self.records.append((name, values))


def _matches(statement: str, summary: Mapping[str, str]) -> bool:
    """Whether ``summary`` passes the ``element_at(summary, 'k') IS [NOT] NULL`` tests of
    ``statement`` (the only ones the snapshot read makes)."""
    for key, negated in re.findall(r"element_at\(summary, '([^']+)'\) IS (NOT )?NULL", statement):
        if (key in summary) != bool(negated):
            return False
    return True


def test_a_retention_delete_that_landed_while_trino_was_lost_still_says_what_it_removed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import random
    from types import SimpleNamespace

    from icefloe.harness.history import History
    from icefloe.harness.scenarios.faults import maintenance as faults

    monkeypatch.setattr(faults.time, "sleep", lambda s: None)
    client = _LostTrino()
    run = SimpleNamespace(
        client=client,
        names=SimpleNamespace(table=TABLE),
        workload=SimpleNamespace(anchor="2025-01-01T00:00:00+00:00"),
        history=History(),
    )
    delete = faults.RetentionDelete(faults.RetentionParams(attempts=2), random.Random(1))
    with pytest.raises(ConnectionError):
        delete.inject(run)
    # Both landed DELETEs count: a, b by the first, c by the retry; d went by another
    # writer's snapshot, which Trino did not write.
    assert client.records == [("retention_removed", ["a", "b", "c"])]
