"""MinIO: the S3-compatible object store, with generated root credentials and a warehouse bucket."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from icefloe.harness.stack import keys
from icefloe.harness.stack.readiness import HttpOk, Readiness
from icefloe.harness.stack.service import LocalService

FILL_FRACTION = 0.99
"""MinIO refuses a write that would leave less than 1 % of its drive free ("storage full")."""
HEADROOM = 2 << 30
"""Free space a run needs beyond MinIO's limit (bytes): tables, topics, logs, Spark scratch."""


class DiskTooFull(RuntimeError):
    """The drive under MinIO's data is too full for MinIO to accept writes."""


def check_free_space(folder: Path) -> None:
    """Fail before MinIO starts on a drive where its writes would fail.

    On such a drive MinIO starts and answers reads, but rejects every write, and what the user
    sees is Trino's ``HIVE_WRITER_CLOSE_ERROR`` or the loader's failed commit, far from the cause.

    Raises:
        DiskTooFull: saying how much is free, how much MinIO needs, and where.
    """
    usage = shutil.disk_usage(folder)
    needed = int(usage.total * (1 - FILL_FRACTION)) + HEADROOM
    if usage.free < needed:
        raise DiskTooFull(
            f"the drive holding {folder} has {usage.free / 2**30:.1f} GiB free of "
            f"{usage.total / 2**30:.0f} GiB; MinIO rejects writes below "
            f"{(1 - FILL_FRACTION):.0%} free and a run needs {HEADROOM >> 30} GiB more "
            f"({needed / 2**30:.1f} GiB in all): free some space or set ICEFLOE_RUN_DIR "
            "to a folder on another drive"
        )


class Minio(LocalService):
    """MinIO built from source by provisioning, serving one directory."""

    name = "minio"

    @property
    def s3_endpoint(self) -> str:
        return f"http://{self.config.host}:{self.config.minio_port}"

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.config.minio_port, self.config.minio_console_port)

    def prepare(self) -> None:
        (self.state_dir / "data").mkdir(parents=True, exist_ok=True)
        check_free_space(self.state_dir / "data")

    def command(self) -> list[str]:
        c = self.config
        return [
            str(self.layout.minio_bin),
            "server",
            str(self.state_dir / "data"),
            "--address",
            f"{c.host}:{c.minio_port}",
            "--console-address",
            f"{c.host}:{c.minio_console_port}",
        ]

    def environment(self) -> dict[str, str]:
        return {
            keys.MINIO_ROOT_USER: self.credentials.access_key,
            keys.MINIO_ROOT_PASSWORD: self.credentials.secret_key.reveal(),
            keys.MINIO_UPDATE: "off",
        }

    def readiness(self) -> Readiness:
        return HttpOk(f"{self.s3_endpoint}/minio/health/ready")

    def after_start(self) -> None:
        self.ensure_bucket(keys.WAREHOUSE_BUCKET)

    def filesystem(self) -> Any:
        """A pyarrow S3 filesystem on this MinIO."""
        from pyarrow import fs

        return fs.S3FileSystem(
            access_key=self.credentials.access_key,
            secret_key=self.credentials.secret_key.reveal(),
            endpoint_override=f"{self.config.host}:{self.config.minio_port}",
            scheme="http",
            region=keys.S3_REGION,
            allow_bucket_creation=True,
        )

    def ensure_bucket(self, bucket: str) -> None:
        """Create the bucket if it does not exist."""
        from pyarrow import fs

        s3 = self.filesystem()
        if s3.get_file_info(bucket).type == fs.FileType.NotFound:
            s3.create_dir(bucket)
