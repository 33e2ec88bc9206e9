"""Schema changes while the loader loads: add, drop, widen and rename a column through Trino.

They act on the run's extra columns (a generated world adds ``INTEGER``/``REAL`` ones its
messages carry); one whose column is not in the state it needs is skipped, not failed. The
loader reads the table's schema at every batch: these must cost it nothing but a re-plan.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from icefloe.harness.scenarios.faults import FaultSkipped, Over, fault_kind
from icefloe.harness.stack.tables import quote

__all__ = ["AddColumnParams", "ColumnParams", "RenameParams", "WidenParams"]


@dataclass(frozen=True)
class AddColumnParams:
    """Parameters of ``add_column``: its name and Trino type."""

    column: str
    type: Literal["INTEGER", "BIGINT", "REAL", "DOUBLE", "VARCHAR"] = "BIGINT"


class _Schema(Over):
    lane = "schema"
    name = "schema"

    def _columns(self, run: Any) -> list[str]:
        return list(run.client.columns(run.names.table))

    def _alter(self, run: Any, clause: str) -> Mapping[str, Any]:
        statement = f"ALTER TABLE {run.names.table} {clause}"
        run.client.sql(self.name, statement, attempts=3)
        return {"statement": statement}


@fault_kind("add_column", "schema", AddColumnParams)
class AddColumn(_Schema):
    """``ALTER TABLE ... ADD COLUMN`` while the loader writes."""

    kind = name = "add_column"

    def __init__(self, params: AddColumnParams, rng: random.Random) -> None:
        self.params = params

    def inject(self, run: Any) -> Mapping[str, Any]:
        if self.params.column in self._columns(run):
            raise FaultSkipped(f"column {self.params.column} is already there")
        return self._alter(run, f"ADD COLUMN {quote(self.params.column)} {self.params.type}")


@dataclass(frozen=True)
class ColumnParams:
    """Parameters of ``drop_column``: the column."""

    column: str


@fault_kind("drop_column", "schema", ColumnParams)
class DropColumn(_Schema):
    """``ALTER TABLE ... DROP COLUMN`` while the loader writes."""

    kind = name = "drop_column"

    def __init__(self, params: ColumnParams, rng: random.Random) -> None:
        self.params = params

    def inject(self, run: Any) -> Mapping[str, Any]:
        if self.params.column not in self._columns(run):
            raise FaultSkipped(f"no column {self.params.column}")
        return self._alter(run, f"DROP COLUMN {quote(self.params.column)}")


_NARROWER = {"BIGINT": "integer", "DOUBLE": "real"}


@dataclass(frozen=True)
class WidenParams:
    """Parameters of ``widen_column``: the column and its wider type (INTEGER to BIGINT,
    REAL to DOUBLE)."""

    column: str
    to: Literal["BIGINT", "DOUBLE"] = "BIGINT"


@fault_kind("widen_column", "schema", WidenParams)
class WidenColumn(_Schema):
    """``ALTER TABLE ... ALTER COLUMN ... SET DATA TYPE`` (a widening) while the loader writes."""

    kind = name = "widen_column"

    def __init__(self, params: WidenParams, rng: random.Random) -> None:
        self.params = params

    def inject(self, run: Any) -> Mapping[str, Any]:
        p = self.params
        catalog, schema, name = run.names.table.split(".")
        rows = run.client.sql(
            "column_type",
            f"SELECT data_type FROM {catalog}.information_schema.columns WHERE table_schema = "
            f"'{schema}' AND table_name = '{name}' AND column_name = '{p.column}'",
            attempts=10,
        )
        narrow = _NARROWER[p.to]
        if not rows or rows[0][0] != narrow:
            raise FaultSkipped(f"column {p.column} is not {narrow}")
        return self._alter(run, f"ALTER COLUMN {quote(p.column)} SET DATA TYPE {p.to}")


@dataclass(frozen=True)
class RenameParams:
    """Parameters of ``rename_column``: the column and its new name."""

    column: str
    to: str


@fault_kind("rename_column", "schema", RenameParams)
class RenameColumn(_Schema):
    """``ALTER TABLE ... RENAME COLUMN`` while the loader writes (messages keep the old name,
    now an unknown field)."""

    kind = name = "rename_column"

    def __init__(self, params: RenameParams, rng: random.Random) -> None:
        self.params = params

    def inject(self, run: Any) -> Mapping[str, Any]:
        columns = self._columns(run)
        if self.params.column not in columns or self.params.to in columns:
            raise FaultSkipped(f"cannot rename {self.params.column} to {self.params.to}")
        return self._alter(
            run, f"RENAME COLUMN {quote(self.params.column)} TO {quote(self.params.to)}"
        )
