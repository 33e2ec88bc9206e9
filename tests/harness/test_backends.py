"""Which backend a command uses: --backend, else $ICEFLOE_BACKEND, else the run directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from icefloe.harness.stack import backends
from icefloe.harness.stack.config import StackConfig


def _config(tmp_path: Path) -> StackConfig:
    return StackConfig(run_dir=tmp_path, cache_dir=tmp_path / "cache")


def test_local_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(backends.ENV_BACKEND, raising=False)
    assert backends.choose(_config(tmp_path)) == "local"


def test_the_run_directory_remembers_a_container_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(backends.ENV_BACKEND, raising=False)
    (tmp_path / "backend").write_text("containers\n")
    assert backends.choose(_config(tmp_path)) == "containers"
    monkeypatch.setenv(backends.ENV_BACKEND, "local")
    assert backends.choose(_config(tmp_path)) == "local"
    assert backends.choose(_config(tmp_path), "containers") == "containers"


def test_an_unknown_backend_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown backend"):
        backends.choose(_config(tmp_path), "kubernetes")


def test_the_containers_stack_has_the_local_stacks_endpoints(tmp_path: Path) -> None:
    from icefloe.harness.containers.backend import ContainerStack, project_name
    from icefloe.harness.stack.lakehouse import Stack

    config = _config(tmp_path)
    containers = backends.make_stack(config, "containers")
    assert isinstance(containers, ContainerStack)
    local = Stack(config)
    for name in ("bootstrap_servers", "s3_endpoint", "catalog_uri", "trino_url"):
        assert getattr(containers, name) == getattr(local, name)
    assert containers.credentials == local.credentials
    assert containers.kafka.process.container_name == f"{project_name(tmp_path)}_kafka_1"
