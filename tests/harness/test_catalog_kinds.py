"""The catalogs under test run beside the stack: their own ports and state, never the stack's."""

from __future__ import annotations

from pathlib import Path

import pytest

from icefloe.harness.catalogs import kinds
from icefloe.harness.stack.config import StackConfig
from icefloe.harness.stack.credentials import load_or_create
from icefloe.harness.stack.lakehouse import Stack


def test_every_kind_has_ports_and_state_of_its_own(tmp_path: Path) -> None:
    config = StackConfig(run_dir=tmp_path / "run", cache_dir=tmp_path / "cache")
    stack = Stack(config)
    taken = {p for s in [*stack.services.values(), *stack.optional_services().values()]
             for p in s.ports}  # fmt: skip
    seen: set[int] = set()
    for kind in kinds.KINDS:
        service = kinds.service(kind, config, stack.credentials)
        assert not set(service.ports) & taken, kind
        assert not set(service.ports) & seen, kind
        seen |= set(service.ports)
        assert service.state_dir.parent == config.run_dir / kinds.STATE_DIR
        assert all(p.startswith("http://127.0.0.1:") for p in [service.uri])
    assert kinds.left_running(config, load_or_create(config.run_dir)) == []


def test_an_unknown_kind_is_refused_with_the_known_ones(tmp_path: Path) -> None:
    config = StackConfig(run_dir=tmp_path / "run", cache_dir=tmp_path / "cache")
    with pytest.raises(ValueError, match="rest, glue, moto, nessie"):
        kinds.service("polaris", config, load_or_create(config.run_dir))
