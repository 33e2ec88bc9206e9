"""Where the cache is, and where each provisioned artifact lives inside it.

Provisioning writes these paths and the services read them, so both agree through this module.
Every path contains the pinned version, so a version bump provisions afresh beside the old one.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from icefloe import loader
from icefloe.harness.provision import versions
from icefloe.loader.ext.classdata import remove_older

ENV_CACHE = "ICEFLOE_CACHE"
CLASS_DATA_KEEP_S = 14 * 86400
"""Class-data archives older than this are removed when a new one is about to be made."""
ECJ = versions.MavenArtifact("org.eclipse.jdt", "ecj", "3.40.0")


LOADER_JVM_SOURCES = Path(loader.__file__).parent / "ext" / "fastpath" / "jvm"
"""The loader's Java sources (its JVM decoder), compiled into the loader's jar at provisioning."""


@functools.cache
def loader_jvm_digest() -> str:
    """A short digest of the loader's Java sources: a changed source builds a new jar."""
    digest = hashlib.sha256()
    for path in sorted(LOADER_JVM_SOURCES.rglob("*.java")):
        digest.update(path.relative_to(LOADER_JVM_SOURCES).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def cache_dir() -> Path:
    """Return the provisioning cache: $ICEFLOE_CACHE, else the user's cache directory.

    It lives outside the repository and is shared by every run directory and checkout.
    """
    explicit = os.environ.get(ENV_CACHE)
    if explicit:
        return Path(explicit).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser().resolve() / "icefloe"


@dataclass(frozen=True)
class Layout:
    """Paths of every artifact in one cache directory."""

    cache: Path

    @property
    def downloads(self) -> Path:
        return self.cache / "downloads"

    @property
    def ivy_jar(self) -> Path:
        return self.downloads / versions.IVY_JAR.filename

    @property
    def kafka_lib(self) -> Path:
        return self.cache / "kafka" / versions.KAFKA / "lib"

    @property
    def spark_jars(self) -> Path:
        return self.cache / "spark-extras" / f"{versions.SPARK}-{versions.ICEBERG}" / "jars"

    @property
    def loader_jar(self) -> Path:
        from icefloe.loader.ext.fastpath.plain import JAR_NAME

        folder = f"{versions.SPARK}-{loader_jvm_digest()}"
        return self.cache / "loader-jvm" / folder / JAR_NAME

    @property
    def catalog_jar(self) -> Path:
        return self.downloads / versions.REST_CATALOG_JAR.filename

    @property
    def catalog_classes(self) -> Path:
        return self.cache / "catalog" / versions.ICEBERG_REST_SERVER / "classes"

    @property
    def trino_home(self) -> Path:
        return self.cache / "trino" / versions.TRINO / f"trino-server-core-{versions.TRINO}"

    @property
    def minio_bin(self) -> Path:
        return self.cache / "minio" / versions.MINIO / "bin" / "minio"

    @property
    def toxiproxy_bin(self) -> Path:
        # `go install` names the command after its package folder (cmd/server).
        return self.cache / "toxiproxy" / versions.TOXIPROXY / "bin" / "server"

    @property
    def ministack_venv(self) -> Path:
        return self.cache / "ministack" / versions.MINISTACK / "venv"

    def ministack_wheels(self, python_version: str) -> Path:
        """ministack's wheels for an image's CPython ``python_version`` (the Glue image)."""
        return self.cache / "ministack" / versions.MINISTACK / f"wheels-cp{python_version}"

    @property
    def moto_venv(self) -> Path:
        return self.cache / "moto" / versions.MOTO / "venv"

    @property
    def go_cache(self) -> Path:
        return self.cache / "go"

    @property
    def class_data(self) -> Path:
        return self.cache / "class-data"

    def loader_class_data(self, java_home: str, jars: Sequence[str]) -> Path:
        """The loader JVM's class-data archive for this Java and class path (``[spark]
        class_data``).

        The JVM uses an archive only with the Java and the class path it was made with (jar
        paths, sizes and times), so its name is a digest of them and of pyspark's own jars: a
        new JDK, new jars or another checkout's virtualenv gets an archive of its own, made by
        its first loader. Archives older than ``CLASS_DATA_KEEP_S`` are removed before a new one
        is made.
        """
        digest = hashlib.sha256(str(Path(java_home).resolve()).encode())
        release = Path(java_home) / "release"
        if release.is_file():
            digest.update(release.read_bytes())
        spec = importlib.util.find_spec("pyspark")
        pyspark_jars = Path(spec.origin).parent / "jars" if spec and spec.origin else None
        entries = [Path(j) for j in jars]
        if pyspark_jars is not None and pyspark_jars.is_dir():
            entries += sorted(pyspark_jars.glob("*.jar"))
        for entry in entries:
            try:
                st = entry.stat()
            except OSError:
                continue
            digest.update(f"{entry}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        archive = self.class_data / f"loader-{digest.hexdigest()[:16]}.jsa"
        if not archive.exists() and self.class_data.is_dir():
            remove_older(self.class_data.iterdir(), CLASS_DATA_KEEP_S)
        return archive
