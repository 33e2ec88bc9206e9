"""The class-data archive: mapped when it exists, else made by the run and moved into place
whole, only after a run that committed a batch.

The JVM is a stand-in here (a child process that exits when its stdin closes, as Spark's gateway
JVM does, writing a file as the JVM writes its archive); a real loader makes and maps one in
every integration run the harness starts (`harness.loaders.config` names the archive).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from icefloe.loader.config import SparkConfig
from icefloe.loader.errors import ConfigError
from icefloe.loader.ext.classdata import DUMP_SUFFIX, STALE_DUMP_S, ClassData


class FakeGateway:
    """Spark's gateway: its JVM (``proc``) exits when its stdin closes, writing ``path``."""

    def __init__(self, path: Path) -> None:
        script = (
            "import sys, pathlib; sys.stdin.read(); "
            f"pathlib.Path({str(path)!r}).write_bytes(b'archive')"
        )
        self.proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE)
        self.shut = False

    def shutdown(self) -> None:
        self.shut = True


class FakeSession:
    def __init__(self, gateway: FakeGateway) -> None:
        self.sparkContext: Any = type("Context", (), {"_gateway": gateway})()
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True


def test_no_archive_configured_changes_nothing() -> None:
    plan = ClassData.plan(None)
    assert plan.java_options() == ""
    plan.finish(None, keep=True)  # nothing to do


def test_an_existing_archive_is_mapped_quietly(tmp_path: Path) -> None:
    archive = tmp_path / "loader.jsa"
    archive.write_bytes(b"x")
    plan = ClassData.plan(str(archive))
    assert plan.making is None
    assert plan.java_options() == f"-XX:SharedArchiveFile={archive} -Xlog:cds*=off"


def test_a_missing_archive_is_made_in_a_file_of_its_own(tmp_path: Path) -> None:
    archive = tmp_path / "sub" / "loader.jsa"
    first, second = ClassData.plan(str(archive)), ClassData.plan(str(archive))
    assert first.making is not None and second.making is not None
    assert first.making != second.making  # two loaders making it at once do not share a file
    assert first.making.parent == archive.parent and first.making.name.endswith(DUMP_SUFFIX)
    assert first.java_options() == f"-XX:ArchiveClassesAtExit={first.making} -Xlog:cds*=off"


@pytest.mark.parametrize("keep", [True, False])
def test_the_jvm_writes_it_at_exit_and_it_is_kept_only_after_a_commit(
    tmp_path: Path, keep: bool
) -> None:
    archive = tmp_path / "loader.jsa"
    plan = ClassData.plan(str(archive))
    assert plan.making is not None
    gateway = FakeGateway(plan.making)
    spark = FakeSession(gateway)
    plan.finish(spark, keep=keep)
    assert spark.stopped and gateway.shut and gateway.proc.returncode == 0
    assert archive.exists() is keep
    assert not plan.making.exists()


def test_a_jvm_that_wrote_nothing_leaves_nothing(tmp_path: Path) -> None:
    archive = tmp_path / "loader.jsa"
    plan = ClassData.plan(str(archive))
    plan.finish(None, keep=True)  # Spark never started
    assert not archive.exists()


def test_files_left_by_killed_jvms_are_removed_when_old(tmp_path: Path) -> None:
    archive = tmp_path / "loader.jsa"
    old = tmp_path / f"loader.jsa.dead0001{DUMP_SUFFIX}"
    recent = tmp_path / f"loader.jsa.busy0002{DUMP_SUFFIX}"
    for path in (old, recent):
        path.write_bytes(b"x")
    past = time.time() - STALE_DUMP_S - 60
    os.utime(old, (past, past))
    ClassData.plan(str(archive))
    assert not old.exists() and recent.exists()


def test_files_left_by_loaders_that_are_gone_are_removed_at_the_next_start(
    tmp_path: Path,
) -> None:
    """A loader refused the table exits while its JVM starts; the JVM writes its file later."""
    archive = tmp_path / "loader.jsa"
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    host = "".join(c for c in socket.gethostname() if c.isalnum())[:32]
    left = tmp_path / f"loader.jsa.{int(gone.stdout)}@{host}-0a1b2c3d{DUMP_SUFFIX}"
    alive = tmp_path / f"loader.jsa.{os.getpid()}@{host}-0a1b2c3d{DUMP_SUFFIX}"
    # A loader on another host (a container sharing the folder): its process ids are not ours.
    elsewhere = tmp_path / f"loader.jsa.{int(gone.stdout)}@{host}x-0a1b2c3d{DUMP_SUFFIX}"
    for path in (left, alive, elsewhere):
        path.write_bytes(b"x")
    plan = ClassData.plan(str(archive))
    assert not left.exists() and alive.exists() and elsewhere.exists()
    assert plan.making is not None
    assert plan.making.name.startswith(f"loader.jsa.{os.getpid()}@{host}-")
    # Once the archive exists, a start maps it and still clears what a refused start left.
    archive.write_bytes(b"archive")
    left.write_bytes(b"x")
    assert ClassData.plan(str(archive)).making is None
    assert not left.exists() and alive.exists()


def test_a_path_with_spaces_is_refused() -> None:
    with pytest.raises(ConfigError, match="class_data"):
        SparkConfig(class_data="/tmp/a b.jsa")
