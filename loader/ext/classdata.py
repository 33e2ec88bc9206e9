"""Class data: a JVM class-data archive that shortens the start of Spark's JVM.

Spark's driver loads some twenty thousand classes (Spark, Iceberg, the AWS SDK, Kafka, Parquet)
before and during its first batches. Reading them from a class-data archive (the JVM's CDS),
mapped into memory already parsed and verified, is faster than loading each from its jar.
``[spark] class_data`` names the archive:

* when the file exists, the JVM maps it (``-XX:SharedArchiveFile``);
* when it does not, this run makes it: the JVM writes the classes it loaded to a file of its own
  beside it when it exits (``-XX:ArchiveClassesAtExit``), and the loader moves that file into
  place once the JVM is gone, if the run committed a batch (so the archive holds the classes of
  the write path, not only those of a start-up). Two loaders making it at once each write their
  own file; the last one moved in wins, whole. A file being made is named for the loader's
  process and host: the next start on that host removes it once that process is gone (a loader
  refused the table exits while its JVM is still starting, and that JVM writes the file after
  the loader is gone).

An archive belongs to one JDK and one class path: a JVM started with another Java or other
jars finds it does not match and runs without it, slower but otherwise the same. Delete the file
to make it again. The JVM's own notices about the archive are off (``-Xlog:cds*=off``), so a
mismatch is silent. Making the archive needs the JDK's base archive (``lib/server/classes.jsa``,
made by ``java -Xshare:dump``); without one the JVM runs without an archive.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ClassData", "remove_older"]

log = logging.getLogger("icefloe.loader")

QUIET = "-Xlog:cds*=off"
"""The JVM's notices about class-data archives (a mismatch, classes it skipped) are off."""

DUMP_SUFFIX = ".making"
"""The suffix of an archive a JVM is writing; moved into place when it is whole."""

STALE_DUMP_S = 3600.0
"""A file being made this long ago belongs to a JVM that was killed: it is removed (also when
its loader's process cannot be told from its name)."""

JVM_EXIT_WAIT_S = 60.0
"""How long the loader waits for its JVM to write the archive and exit."""


@dataclass(frozen=True)
class ClassData:
    """What this run does with the class-data archive ``[spark] class_data`` names.

    Attributes:
        archive: the archive, or None when none is configured.
        making: the file this run's JVM writes at exit, or None when it maps ``archive`` (or
            there is none).
    """

    archive: Path | None = None
    making: Path | None = None

    @classmethod
    def plan(cls, archive: str | None) -> ClassData:
        """Map ``archive`` if it exists, else make it in this run; first remove the files being
        made beside it that are left over (``_remove_stale``)."""
        if not archive:
            return cls()
        path = Path(archive)
        path.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale(path)  # also when the archive exists: files left by refused starts
        if path.is_file():
            return cls(path)
        making = f"{path.name}.{_owner()}-{uuid.uuid4().hex[:8]}{DUMP_SUFFIX}"
        return cls(path, path.with_name(making))

    def java_options(self) -> str:
        """The driver JVM's options for this plan ("" when there is no archive)."""
        if self.archive is None:
            return ""
        if self.making is not None:
            return f"-XX:ArchiveClassesAtExit={self.making} {QUIET}"
        return f"-XX:SharedArchiveFile={self.archive} {QUIET}"

    def finish(self, spark: Any, keep: bool) -> None:
        """After the run: when this run makes the archive, let the JVM write it and exit, then
        move it into place if ``keep`` (a batch was committed), else remove it.

        Args:
            spark: the run's session (None if Spark never started).
            keep: whether the archive is worth keeping.
        """
        if self.making is None or self.archive is None:
            return
        if spark is not None:
            _exit_jvm(spark)
        if not self.making.is_file():
            return  # the JVM wrote nothing: no base archive, or it was killed
        try:
            if keep:
                os.replace(self.making, self.archive)
                log.info("made the class-data archive %s for the next starts", self.archive)
            else:
                self.making.unlink(missing_ok=True)
        except OSError as exc:  # never worth failing a run for
            log.warning("class-data archive %s: %s", self.archive, exc)


def _exit_jvm(spark: Any) -> None:
    """Stop Spark and let its JVM exit, which writes the archive, and wait for it."""
    context = spark.sparkContext
    gateway: Any = getattr(context, "_gateway", None)
    proc = getattr(gateway, "proc", None)
    try:
        spark.stop()
    except Exception as exc:  # the JVM may be gone already: then there is nothing to wait for
        log.debug("stopping Spark before writing the class-data archive: %s", exc)
    if proc is None:
        return
    try:
        gateway.shutdown()
    except Exception as exc:
        log.debug("closing the JVM gateway: %s", exc)
    if proc.stdin is not None:
        proc.stdin.close()  # the gateway JVM exits when its stdin closes
    try:
        proc.wait(timeout=JVM_EXIT_WAIT_S)
    except Exception as exc:
        log.warning("Spark's JVM did not exit in %.0f s: %s", JVM_EXIT_WAIT_S, exc)


def _remove_stale(archive: Path) -> None:
    """Remove files being made beside ``archive`` whose loader is gone, or made long ago."""
    making = list(archive.parent.glob(f"{archive.name}.*{DUMP_SUFFIX}"))
    for path in making:
        owner = _maker(archive, path)
        if owner is not None and not _running(owner):
            path.unlink(missing_ok=True)  # the JVM may still be writing it: it goes when done
    remove_older(making, STALE_DUMP_S)


def _owner() -> str:
    """This process as the name of a file being made gives it: its id and its host (a
    container's host name is its own, so a process id of another pid namespace is never judged
    here)."""
    return f"{os.getpid()}@{_host()}"


def _host() -> str:
    return "".join(c for c in socket.gethostname() if c.isalnum())[:32]


def _maker(archive: Path, path: Path) -> int | None:
    """The process id of the loader on this host that makes ``path``, when its name tells."""
    middle = path.name[len(archive.name) + 1 : -len(DUMP_SUFFIX)]
    pid, _, host = middle.rpartition("-")[0].partition("@")
    return int(pid) if pid.isdigit() and host == _host() else None


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists (a process of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_older(paths: Iterable[Path], age_s: float) -> None:
    """Remove those of ``paths`` that are files last written more than ``age_s`` ago."""
    cutoff = time.time() - age_s
    for path in paths:
        try:
            if path.is_file() and path.stat().st_mtime < cutoff:
                path.unlink()
        except OSError:
            pass  # removed meanwhile by another process
