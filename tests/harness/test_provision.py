"""Provisioning runs only the steps not yet done, and says so when there is nothing to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.provision import steps as provision
from harness.provision.layout import Layout, cache_dir


def test_second_run_does_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "artifact"
    runs: list[str] = []

    def fake_steps(_layout: Layout) -> list[provision.Step]:
        def run() -> None:
            runs.append("fetch")
            marker.write_text("x")

        return [provision.Step("artifact", marker.exists, run)]

    monkeypatch.setattr(provision, "steps", fake_steps)
    assert provision.provision(Layout(tmp_path)) == 1
    assert provision.provision(Layout(tmp_path)) == 0
    assert runs == ["fetch"]
    assert "nothing to do" in capsys.readouterr().err


def test_every_real_step_is_cached_after_provisioning() -> None:
    """On a provisioned machine every step reports done (no network is touched)."""
    layout = Layout(cache_dir())
    if not layout.trino_home.is_dir():
        pytest.skip("cache not provisioned (make provision)")
    assert all(step.done() for step in provision.steps(layout))
