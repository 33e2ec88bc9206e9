"""Values compared column by column through a table's schema history: pure, no services.

A row's expected values are its message's fields under the names the columns had when it was
loaded; each rule (add, drop, widen, rename, a row on either side of a change) is shown to pass
on the right values and to name a wrong one.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from icefloe.harness.history import History
from icefloe.harness.scenarios.checks.facts.reads import Observed
from icefloe.harness.scenarios.checks.facts.schema import (
    SchemaChange,
    SchemaTimeline,
    names_over_time,
    schema_changes,
    states_of,
)
from icefloe.harness.scenarios.checks.verdict import INVALID, UNKNOWN, VALID, run_check
from icefloe.publisher.ledger import LedgerEntry

TABLE = "lake.s.t"


def alter(clause: str, name: str = "alter", ok: bool = True) -> list[tuple[str, str, str, dict]]:
    statement = f"ALTER TABLE {TABLE} {clause}"
    return [
        ("sql", "invoke", name, {"statement": statement, "attempt": 1}),
        ("sql", "ok" if ok else "fail", name, {"statement": statement}),
    ]


def hist(*events: tuple[str, str, str, dict[str, Any]]) -> History:
    # event i happens at time 10 * i
    return History.of([(10.0 * i, k, p, n, d) for i, (k, p, n, d) in enumerate(events)])


def test_schema_changes_are_read_from_the_statements() -> None:
    history = hist(
        *alter('ADD COLUMN "xi2" INTEGER', "add_column"),
        *alter('RENAME COLUMN "xi0" TO "xi0_r0"', "rename_column"),
        *alter('ALTER COLUMN "xi1" SET DATA TYPE BIGINT', "widen_column"),
        *alter("DROP COLUMN string"),
        ("sql", "ok", "select", {"statement": "SELECT 1"}),
    )
    assert schema_changes(history) == [
        SchemaChange("add", "xi2", None, 0.0, 10.0),
        SchemaChange("rename", "xi0", "xi0_r0", 20.0, 30.0),
        SchemaChange("widen", "xi1", None, 40.0, 50.0),
        SchemaChange("drop", "string", None, 60.0, 70.0),
    ]


def test_a_failed_try_counts_once_and_a_last_failure_is_uncertain() -> None:
    statement = f"ALTER TABLE {TABLE} DROP COLUMN xi1"
    history = hist(
        ("sql", "invoke", "drop_column", {"statement": statement, "attempt": 1}),
        ("sql", "fail", "drop_column", {"statement": statement}),
        ("sql", "invoke", "drop_column", {"statement": statement, "attempt": 2}),
        ("sql", "fail", "drop_column", {"statement": statement}),
    )
    assert schema_changes(history) == [SchemaChange("drop", "xi1", None, 0.0, None)]


CHANGES = [
    SchemaChange("add", "note", None, 100.0, 101.0),
    SchemaChange("rename", "xi0", "xi0_r0", 200.0, 201.0),
    SchemaChange("add", "xi0", None, 300.0, 301.0),  # the old name comes back: a new column
]


def test_names_over_time_follow_renames_back_to_the_first_name() -> None:
    assert names_over_time(CHANGES, "xi0_r0") == ["xi0", "xi0", "xi0_r0", "xi0_r0"]
    assert names_over_time(CHANGES, "xi0") == [None, None, None, "xi0"]
    assert names_over_time(CHANGES, "note") == [None, "note", "note", "note"]
    assert names_over_time(CHANGES, "integer") == ["integer"] * 4


def test_states_of_a_row_from_its_publish_and_first_sighting() -> None:
    assert states_of(CHANGES, 50.0, 60.0) == range(0, 1)  # loaded before every change
    assert states_of(CHANGES, 150.0, 190.0) == range(1, 2)
    assert states_of(CHANGES, 150.0, 250.0) == range(1, 3)  # either side of the rename
    assert states_of(CHANGES, 400.0, None) == range(3, 4)
    assert states_of(CHANGES, None, None) == range(0, 4)


def entry(seq: int, published_s: float) -> LedgerEntry:
    return LedgerEntry(
        seq=seq,
        topic="t",
        partition=0,
        offset=seq,
        timestamp=int(published_s * 1000),
        key=None,
        event_id=f"id-{seq}",
        status="valid",
        kind=None,
        error=None,
    )


SENT = {
    "id-0": {"integer": 1, "xi0": 10, "note": 7, "xf0": 0.1},
    "id-1": {"integer": 2, "xi0": 20, "note": 7, "xf0": 0.2},
    "id-2": {"integer": 3, "xi0": 30, "note": 7, "xf0": 0.3},
}
LEDGER = [entry(0, 50.0), entry(1, 150.0), entry(2, 400.0)]
SEEN = {"id-0": 60.0, "id-1": 250.0, "id-2": 410.0}


def values(rows: dict[str, dict[str, Any]], changes: list[SchemaChange] = CHANGES) -> Any:
    observed = Observed(
        reads={"row_values": rows, "first_seen": SEEN},
        facts={"sent_rows": SENT, "schema_changes": changes},
    )
    return run_check("values_match_ledger", History(), LEDGER, observed)


GOOD = {
    # before everything: no note yet, xi0 under its new name
    "id-0": {"integer": 1, "xi0_r0": 10, "xi0": None, "note": None, "xf0": 0.1},
    # either side of the rename: 20 or NULL
    "id-1": {"integer": 2, "xi0_r0": None, "xi0": None, "note": 7, "xf0": 0.2},
    # after all: the renamed column is NULL, the re-added xi0 is filled
    "id-2": {"integer": 3, "xi0_r0": None, "xi0": 30, "note": 7, "xf0": 0.30000001192},
}


def test_values_match_through_add_rename_and_a_name_reused() -> None:
    result = values(GOOD)
    assert result.verdict == VALID, result.anomalies
    assert result.stats["values"] == 15 and result.stats["either_side_of_a_change"] == 1


def test_a_wrong_value_is_named_with_what_was_expected() -> None:
    bad = {eid: dict(row) for eid, row in GOOD.items()}
    bad["id-2"]["xi0_r0"] = 30  # the message's xi0 written into the renamed column
    bad["id-0"]["note"] = 7  # filled before the column existed
    bad["id-1"]["integer"] = 5
    bad["id-0"]["xf0"] = 0.1001  # a float off by 1e-3
    result = values(bad)
    assert result.verdict == INVALID
    examples = result.anomalies["wrong_value"].examples
    assert result.anomalies["wrong_value"].count == 4
    assert "id-2: xi0_r0=30, expected None" in examples


def test_a_value_sent_that_reads_null_is_dropped_not_changed() -> None:
    """The column added (04) left unfilled by a loader that kept the schema it started with."""
    bad = {eid: dict(row) for eid, row in GOOD.items()}
    bad["id-2"]["note"] = None  # sent 7 after the column was added
    result = values(bad)
    assert result.verdict == INVALID
    assert "wrong_value" not in result.anomalies
    assert result.anomalies["dropped_value"].examples == ["id-2: note=NULL, sent 7 (dropped)"]


def test_a_large_integer_off_by_one_is_wrong() -> None:
    bad = {eid: dict(row) for eid, row in GOOD.items()}
    sent = {**SENT, "id-0": {**SENT["id-0"], "integer": 281507120}}
    bad["id-0"]["integer"] = 281507121
    observed = Observed(
        reads={"row_values": bad, "first_seen": SEEN},
        facts={"sent_rows": sent, "schema_changes": CHANGES},
    )
    result = run_check("values_match_ledger", History(), LEDGER, observed)
    assert result.anomalies["wrong_value"].examples == [
        "id-0: integer=281507121, expected 281507120"
    ]


def test_a_column_whose_change_failed_is_left_out() -> None:
    uncertain = [*CHANGES, SchemaChange("drop", "note", None, 500.0, None)]
    bad = {eid: {**row, "note": 99} for eid, row in GOOD.items()}
    result = values(bad, uncertain)
    assert result.verdict == VALID and result.stats["columns_left_out"] == 1


def test_nothing_read_or_nothing_comparable_is_unknown() -> None:
    assert values({}).verdict == UNKNOWN
    assert values({"id-9": {"integer": 1}}).verdict == UNKNOWN


def test_the_rows_compared_are_regenerated_with_the_phase_seed_and_the_runs_pools(
    tmp_path: Any,
) -> None:
    """A phase's messages are regenerated for the check from the seed and the pool seed its
    publish event names: the rows read back are compared with what was sent, not with rows of
    another run's pools."""
    import dataclasses as dc

    from icefloe.harness.scenarios.gather.observed import observed
    from icefloe.harness.scenarios.traffic import Workload, as_dict, generation
    from icefloe.publisher.ledger import LedgerWriter
    from icefloe.publisher.messages import generate

    workload = Workload(count=20)
    sent = list(generate(generation(workload, 5, pool_seed=77), 20))
    writer = LedgerWriter(tmp_path / "ledgers" / "p.jsonl", {"topic": "t"})
    for i, m in enumerate(sent):
        writer.message(i, "t", 0, i, 1000, None, m.event_id, m.kind, None, (), 1, None)
    writer.close({})
    history = hist(
        (
            "publish",
            "invoke",
            "publish",
            {
                "phase": "p",
                "seed": 5,
                "pool_seed": 77,
                "workload": as_dict(workload),
                "ledger": "ledgers/p.jsonl",
            },
        ),
        ("read", "ok", "row_values", {"values": {m.event_id: {} for m in sent}}),
    )
    facts = observed(history, tmp_path, [], [("values_match_ledger", {})]).facts
    assert facts["sent_rows"] == {m.event_id: json.loads(m.value) for m in sent if m.value}
    other = dc.replace(generation(workload, 5), pool_seed=None)
    assert facts["sent_rows"] != {
        m.event_id: json.loads(m.value) for m in generate(other, 20) if m.value
    }


_COLUMNS = ("a", "b", "c")


@st.composite
def _changes(draw: Any) -> list[SchemaChange]:
    out: list[SchemaChange] = []
    t = 0.0
    for _ in range(draw(st.integers(0, 12))):
        op = draw(st.sampled_from(["add", "drop", "rename", "widen"]))
        t += draw(st.floats(0.1, 5.0))
        end = None if draw(st.booleans()) and draw(st.booleans()) else t + draw(st.floats(0, 9))
        to = draw(st.sampled_from(_COLUMNS)) if op == "rename" else None
        out.append(SchemaChange(op, draw(st.sampled_from(_COLUMNS)), to, t, end))
    return out


@given(_changes(), st.none() | st.floats(0, 80), st.none() | st.floats(0, 80), st.data())
def test_the_timeline_gives_each_rows_states_and_names_as_the_definitions_do(
    changes: list[SchemaChange], published: float | None, seen: float | None, data: Any
) -> None:
    """The indexed form the value check uses over a soak's 130,000 rows gives what the plain
    definitions give: the states by counting changes, the names state by state."""
    low = (
        0
        if published is None
        else sum(1 for c in changes if c.end is not None and c.end <= published)
    )
    high = len(changes) if seen is None else sum(1 for c in changes if c.start < seen)
    timeline = SchemaTimeline(changes)
    states = timeline.states(published, seen)
    assert states == range(min(low, high), high + 1)
    column = data.draw(st.sampled_from(_COLUMNS))
    each = [names_over_time(changes, column)[k] for k in states]
    assert timeline.names(column, states) == [
        n for i, n in enumerate(each) if i == 0 or n != each[i - 1]
    ]
