"""MinIO's pre-start check: a drive too full for MinIO's writes stops the start, saying why."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from icefloe.harness.stack import minio


def _drive(monkeypatch: pytest.MonkeyPatch, total: int, free: int) -> None:
    usage = shutil._ntuple_diskusage(total, total - free, free)  # type: ignore[attr-defined]
    monkeypatch.setattr(minio.shutil, "disk_usage", lambda _: usage)


def test_a_drive_minio_would_call_full_stops_the_start_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gib = 1 << 30
    # 252 GiB with 1.7 GiB free: MinIO keeps 1 % (2.5 GiB) and refuses every write.
    _drive(monkeypatch, 252 * gib, int(1.7 * gib))
    with pytest.raises(minio.DiskTooFull, match=r"1\.7 GiB free of 252 GiB.*ICEFLOE_RUN_DIR"):
        minio.check_free_space(tmp_path)
    _drive(monkeypatch, 252 * gib, 4 * gib)  # above the limit but short of the headroom
    with pytest.raises(minio.DiskTooFull):
        minio.check_free_space(tmp_path)
    _drive(monkeypatch, 252 * gib, 5 * gib)
    minio.check_free_space(tmp_path)
