"""Generated credentials: stable per run directory, private on disk, never printed."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from icefloe.harness.stack.credentials import load_or_create
from icefloe.loader.secret import Secret


def test_generated_once_and_private(tmp_path: Path) -> None:
    first = load_or_create(tmp_path)
    second = load_or_create(tmp_path)
    assert first == second
    assert first.access_key not in ("minioadmin", "admin")
    assert len(first.secret_key.reveal()) >= 30
    mode = stat.S_IMODE((tmp_path / "secrets.json").stat().st_mode)
    assert mode == 0o600


def test_each_run_directory_gets_its_own(tmp_path: Path) -> None:
    assert load_or_create(tmp_path / "a") != load_or_create(tmp_path / "b")


def test_secret_never_shows_its_value() -> None:
    secret = Secret("hunter2-very-secret")
    assert "hunter2" not in repr(secret)
    assert "hunter2" not in str(secret)
    assert "hunter2" not in f"{secret} {secret!r}"
    assert secret.reveal() == "hunter2-very-secret"


def test_down_without_a_run_directory_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icefloe.harness.cli.main import main

    missing = tmp_path / "never-up"
    monkeypatch.setenv("ICEFLOE_RUN_DIR", str(missing))
    assert main(["down"]) == 0
    assert not missing.exists()
