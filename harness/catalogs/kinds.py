"""The catalog kinds ``icefloe catalogs check`` runs, each as a service beside the stack's own.

Every kind is a stack service class (start, stop, kill -9, SIGSTOP, health; its pyiceberg
properties; whether it ``keeps_state_on_kill``), run on its own ports and with its state under
``<run dir>/catalogs-under-test``, so a check never touches the stack's catalog, and on the
stack's object store, where the tables' files go. A new catalog kind is one service module and
one entry here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from icefloe.harness.stack.catalog import Catalog
from icefloe.harness.stack.config import StackConfig
from icefloe.harness.stack.credentials import S3Credentials
from icefloe.harness.stack.glue import Glue
from icefloe.harness.stack.moto import Moto
from icefloe.harness.stack.nessie import Nessie

STATE_DIR = "catalogs-under-test"
"""Where, under the run directory, the catalogs under test keep their state."""


@dataclass(frozen=True)
class Kind:
    """A catalog kind under test.

    Attributes:
        name: What the command line and the table call it.
        service: Its service class.
        protocol: The API its clients speak: ``rest`` (Iceberg REST) or ``glue`` (Glue's).
        what: What it is, for the table's legend.
        durability: What its own documentation says of its state on a kill -9.
    """

    name: str
    service: type[Catalog | Glue]
    protocol: str
    what: str
    durability: str


KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind(
            "rest",
            Catalog,
            "rest",
            "Iceberg's REST server (JDBC catalog on SQLite, write-ahead log)",
            "every commit is in SQLite before it is answered",
        ),
        Kind(
            "glue",
            Glue,
            "glue",
            "ministack's Glue (the stack's Glue-compatible catalog)",
            "ministack saves its state only when it stops cleanly (PERSIST_STATE)",
        ),
        Kind(
            "moto",
            Moto,
            "glue",
            "moto's Glue (moto_server)",
            "moto keeps everything in memory: any restart starts empty",
        ),
        Kind(
            "nessie",
            Nessie,
            "rest",
            "Project Nessie 0.99 (Iceberg REST at /iceberg/main, RocksDB store)",
            "its RocksDB store writes each commit before it is answered",
        ),
    )
}


def checked_config(config: StackConfig) -> StackConfig:
    """The stack's settings for the catalogs under test: their own state directory, and the
    REST server and ministack on their second ports (the stack's own keep theirs; the two port
    settings trade places so that every port stays distinct)."""
    return dataclasses.replace(
        config,
        run_dir=config.run_dir / STATE_DIR,
        catalog_port=config.tested_catalog_port,
        tested_catalog_port=config.catalog_port,
        glue_port=config.tested_glue_port,
        tested_glue_port=config.glue_port,
    )


def service(kind: str, config: StackConfig, credentials: S3Credentials) -> Catalog | Glue:
    """The service of catalog kind ``kind`` under test, beside a stack of ``config``.

    Raises:
        ValueError: an unknown kind.
    """
    if kind not in KINDS:
        raise ValueError(f"no catalog kind {kind!r}; one of {', '.join(KINDS)}")
    return KINDS[kind].service(checked_config(config), credentials)


def left_running(config: StackConfig, credentials: S3Credentials) -> list[Catalog | Glue]:
    """The catalogs under test still running beside a stack of ``config`` (a check that was
    cut short leaves its catalog running; ``icefloe down`` stops it)."""
    running = (service(kind, config, credentials) for kind in KINDS)
    return [s for s in running if s.process.is_running()]
