"""Stack configuration: file, environment and arguments layer in that order; bad values fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from icefloe.harness.stack import config


@pytest.fixture(autouse=True)
def _no_stack_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests define the environment they read; a developer's own settings stay out."""
    import os

    for name in list(os.environ):
        if name.startswith("ICEFLOE_STACK_") or name == "ICEFLOE_CONFIG":
            monkeypatch.delenv(name)


def test_defaults_bind_loopback(tmp_path: Path) -> None:
    cfg = config.load(tmp_path / "absent.toml")
    assert cfg.host == "127.0.0.1"
    assert cfg.trino_port == 8080


def test_file_then_env_then_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "icefloe.toml"
    path.write_text('[stack]\ntrino_port = 18080\nkafka_port = 19092\ntrino_heap = "2g"\n')
    monkeypatch.setenv("ICEFLOE_STACK_KAFKA_PORT", "29092")
    cfg = config.load(path, trino_heap="3g")
    assert (cfg.trino_port, cfg.kafka_port, cfg.trino_heap) == (18080, 29092, "3g")


def test_unknown_key_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "icefloe.toml"
    path.write_text("[stack]\ntrino_prot = 1\n")
    with pytest.raises(ValueError, match="trino_prot"):
        config.load(path)


def test_non_loopback_host_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="loopback"):
        config.load(tmp_path / "absent.toml", host="0.0.0.0")


def test_port_clash_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="share a port"):
        config.load(tmp_path / "absent.toml", trino_port=9092)


def test_the_cli_shows_an_error_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from icefloe.harness.cli.main import main

    path = tmp_path / "icefloe.toml"
    path.write_text("[stack]\ntrino_prot = 1\n")
    monkeypatch.setenv("ICEFLOE_CONFIG", str(path))
    monkeypatch.setenv("ICEFLOE_RUN_DIR", str(tmp_path / "run"))
    assert main(["status"]) == 1
    shown = " ".join(capsys.readouterr().err.split())
    assert "unknown [stack] keys ['trino_prot']" in shown  # brackets are text, not markup


def test_a_taken_port_names_the_setting_that_moves_it(tmp_path: Path) -> None:
    cfg = config.load(tmp_path / "absent.toml")
    assert cfg.port_settings((8080, 9093)) == (
        "ICEFLOE_STACK_KAFKA_CONTROLLER_PORT (or kafka_controller_port under [stack] in "
        "icefloe.toml), ICEFLOE_STACK_TRINO_PORT (or trino_port under [stack] in icefloe.toml)"
    )
