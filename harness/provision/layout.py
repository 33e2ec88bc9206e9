"""Where the cache is, and where each provisioned artifact lives inside it.

Provisioning writes these paths and the services read them, so both agree through this module.
Every path contains the pinned version, so a version bump provisions afresh beside the old one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from harness.provision import versions

ENV_CACHE = "ICEFLOE_CACHE"
ECJ = versions.MavenArtifact("org.eclipse.jdt", "ecj", "3.40.0")


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
