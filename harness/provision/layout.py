"""Where the cache is, and where each provisioned artifact lives inside it.

Provisioning writes these paths and the services read them, so both agree through this module.
Every path contains the pinned version, so a version bump provisions afresh beside the old one.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import loader
from harness.provision import versions

ENV_CACHE = "ICEFLOE_CACHE"
ECJ = versions.MavenArtifact("org.eclipse.jdt", "ecj", "3.40.0")


LOADER_JVM_SOURCES = Path(loader.__file__).parent / "jvm"
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
    def ecj_jar(self) -> Path:
        return self.downloads / ECJ.filename

    @property
    def kafka_lib(self) -> Path:
        return self.cache / "kafka" / versions.KAFKA / "lib"

    @property
    def spark_jars(self) -> Path:
        return self.cache / "spark-extras" / f"{versions.SPARK}-{versions.ICEBERG}" / "jars"

    @property
    def loader_jar(self) -> Path:
        from loader.plain import JAR_NAME

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
    def go_cache(self) -> Path:
        return self.cache / "go"
