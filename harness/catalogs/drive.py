"""Drive plain writers against one catalog under test and record what it answered and kept.

Writers are pyiceberg clients, each with a client of its own, that append one row per commit,
a token naming the commit (also in its snapshot's summary, ``TOKEN``). Their tables tell pyiceberg
not to retry a refused commit (``NO_RETRY``), so every answer a writer records is the catalog's.
Stages, each on tables of its own:

- the race: ``writers`` writers, released together by a barrier, each load the table and commit
  on what they loaded, ``rounds`` times per table (the first round is every table's first
  commit);
- the stale writer: a writer loads the table, another commits, then the first commits on what
  it loaded. pyiceberg's Glue client checks a commit's base against the table it loads just
  before committing, so on Glue's API the stale commit is sent directly (``UpdateTable`` with
  the version the stale writer read, putting back the metadata it read): what is judged is the
  catalog's answer, not the client's;
- the kill -9: commits acknowledged one after another, then the catalog is killed with SIGKILL
  and started again, and the lineage read.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from icefloe.harness.catalogs.verdicts import (
    ACKNOWLEDGED,
    KILL9,
    NO_ANSWER,
    RACE,
    REFUSED,
    STALE,
    Attempt,
)

TOKEN = "icefloe.catalog-check"
"""The snapshot summary property that names each commit a writer sent."""
NAMESPACE_PREFIX = "catalog_check"
NO_RETRY = {"commit.retry.num-retries": "0"}
"""pyiceberg (0.10 and later) retries a refused commit on the refreshed table by default, which
would hide the catalog's refusal: every writer's table says not to."""


@dataclass
class Target:
    """One catalog under test, as its writers reach it.

    Attributes:
        kind: The catalog kind's name.
        protocol: ``rest`` or ``glue``.
        client: Makes a new pyiceberg catalog client on it (each writer has its own).
        location: Where its tables' files go (``s3://bucket/prefix``).
        glue: Makes a boto3 Glue client on it, for the stale writer on Glue's API.
    """

    kind: str
    protocol: str
    client: Callable[[], Any]
    location: str
    glue: Callable[[], Any] | None = None
    namespace: str = field(default_factory=lambda: f"{NAMESPACE_PREFIX}_{uuid.uuid4().hex[:8]}")


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema([pa.field("token", pa.string())])


def create_table(target: Target, catalog: Any, name: str) -> tuple[str, str]:
    """Create an empty table ``name`` in the target's namespace; its identifier."""
    from pyiceberg.exceptions import NamespaceAlreadyExistsError

    with contextlib.suppress(NamespaceAlreadyExistsError):
        catalog.create_namespace(target.namespace)
    ident = (target.namespace, name)
    catalog.create_table(
        ident,
        schema=_schema(),
        location=f"{target.location}/{target.namespace}/{name}",
        properties=NO_RETRY,
    )
    return ident


def commit(
    catalog: Any, ident: tuple[str, str], writer: str, seq: int, stage: str, table: Any = None
) -> Attempt:
    """One append by ``writer`` on the table as it loads it (or on ``table``, loaded earlier)."""
    import pyarrow as pa
    from pyiceberg.exceptions import CommitFailedException

    loaded = table if table is not None else catalog.load_table(ident)
    base = loaded.metadata.current_snapshot_id
    token = f"{stage}/{ident[1]}/{writer}/{seq}"
    rows = pa.Table.from_pylist([{"token": token}], schema=_schema())
    try:
        loaded.append(rows, snapshot_properties={TOKEN: token})
    except CommitFailedException as exc:
        return Attempt(ident[1], writer, token, base, REFUSED, stage, str(exc)[:200])
    except Exception as exc:  # no answer, a 5xx: the commit may or may not have landed
        return Attempt(ident[1], writer, token, base, NO_ANSWER, stage, repr(exc)[:200])
    return Attempt(ident[1], writer, token, base, ACKNOWLEDGED, stage)


def lineage(catalog: Any, ident: tuple[str, str]) -> frozenset[str] | None:
    """The tokens of the commits the table holds now (``None``: the table is gone).

    Each commit appends one row, its token: the row is in the table exactly when the commit's
    snapshot is an ancestor of ``main``. Reading rows rather than the snapshot chain judges
    every catalog alike (Nessie's Iceberg metadata, for one, holds the current snapshot only).
    """
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    try:
        table = catalog.load_table(ident)
    except (NoSuchTableError, NoSuchNamespaceError):
        return None
    return frozenset(table.scan(selected_fields=("token",)).to_arrow().column("token").to_pylist())


def race(
    target: Target, tables: int, writers: int, rounds: int
) -> tuple[list[Attempt], dict[str, frozenset[str] | None]]:
    """``writers`` writers race ``rounds`` commits on each of ``tables`` new tables."""
    clients = [target.client() for _ in range(writers)]
    attempts: list[Attempt] = []
    kept: dict[str, frozenset[str] | None] = {}
    with ThreadPoolExecutor(max_workers=writers) as pool:
        for t in range(tables):
            ident = create_table(target, clients[0], f"race_{t}")
            for r in range(rounds):
                barrier = threading.Barrier(writers)

                def one(
                    w: int, ident: tuple[str, str] = ident, r: int = r, go: Any = barrier
                ) -> Attempt:
                    go.wait(timeout=60)  # every writer loads the table at once
                    return commit(clients[w], ident, f"w{w}", r, RACE)

                attempts.extend(pool.map(one, range(writers)))
            kept[ident[1]] = lineage(clients[0], ident)
    return attempts, kept


def _stale_glue(
    target: Target, ident: tuple[str, str], before: dict[str, Any], base: int | None
) -> Attempt:
    """Put back the metadata ``before`` pointed to, with the version read then."""
    from botocore.exceptions import ClientError

    table = before["Table"]
    stale_input = {
        "Name": table["Name"],
        "TableType": table.get("TableType", "EXTERNAL_TABLE"),
        "Parameters": table["Parameters"],
    }
    if "StorageDescriptor" in table:
        stale_input["StorageDescriptor"] = table["StorageDescriptor"]
    assert target.glue is not None
    token = ""  # it adds no snapshot: nothing of it to look for in the table
    try:
        target.glue().update_table(
            DatabaseName=ident[0], TableInput=stale_input, VersionId=table["VersionId"]
        )
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        return Attempt(ident[1], "stale", token, base, REFUSED, STALE, code)
    except Exception as exc:  # no answer: the outcome is unknown
        return Attempt(ident[1], "stale", token, base, NO_ANSWER, STALE, repr(exc)[:200])
    return Attempt(ident[1], "stale", token, base, ACKNOWLEDGED, STALE)


def stale(target: Target, rounds: int) -> tuple[list[Attempt], dict[str, frozenset[str] | None]]:
    """A writer behind the table commits ``rounds`` times, the first on the table's first
    commit, each after another writer's commit moved the table past what it loaded.

    A stale commit on Glue's API adds no snapshot (it puts the old metadata back): its token
    is not looked for in the lineage; the commit it overwrote is.
    """
    behind, ahead = target.client(), target.client()
    ident = create_table(target, ahead, "stale")
    attempts: list[Attempt] = []
    for seq in range(rounds):
        loaded = behind.load_table(ident)
        base = loaded.metadata.current_snapshot_id
        if target.protocol == "glue":
            assert target.glue is not None
            before = target.glue().get_table(DatabaseName=ident[0], Name=ident[1])
            fresh = commit(ahead, ident, "ahead", seq, STALE)
            late = _stale_glue(target, ident, before, base)
        else:
            fresh = commit(ahead, ident, "ahead", seq, STALE)
            late = commit(behind, ident, "stale", seq, STALE, table=loaded)
        if late.outcome == ACKNOWLEDGED:
            late = dataclasses.replace(late, detail=f"{fresh.token} was {fresh.outcome}")
        attempts += [fresh, late]
    return attempts, {ident[1]: lineage(ahead, ident)}


def kill9(
    target: Target, service: Any, commits: int
) -> tuple[
    list[Attempt], dict[str, frozenset[str] | None], dict[str, frozenset[str] | None], float
]:
    """``commits`` commits one after another, a kill -9 of the catalog, a restart; the lineage
    just before the kill and after the restart, and the seconds the restart took."""
    client = target.client()
    ident = create_table(target, client, "kill9")
    attempts = [commit(client, ident, "w0", seq, KILL9) for seq in range(commits)]
    before = {ident[1]: lineage(client, ident)}
    service.kill()
    began = time.monotonic()
    service.restart()
    took = time.monotonic() - began
    return attempts, before, {ident[1]: lineage(target.client(), ident)}, took


def drop_namespace(target: Target) -> None:
    """Drop what the checks made (best effort: a catalog that lost it has nothing to drop)."""
    catalog = target.client()
    try:
        for ident in catalog.list_tables(target.namespace):
            catalog.drop_table(ident)
        catalog.drop_namespace(target.namespace)
    except Exception:  # cleaning up after the verdicts, never part of them
        pass


__all__: Sequence[str] = ["TOKEN", "Target", "commit", "kill9", "lineage", "race", "stale"]
