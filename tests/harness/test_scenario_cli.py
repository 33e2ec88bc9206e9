"""``icefloe scenario run`` refuses to call a run that tested nothing a success."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from icefloe.harness.cli import main, scenario
from icefloe.harness.loaders.capabilities import Capability


def test_a_run_where_no_named_scenario_applies_fails_unless_allowed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = SimpleNamespace(catalog=SimpleNamespace(kind="rest"))
    monkeypatch.setattr(scenario, "open_stack", lambda args: stack)
    bare = SimpleNamespace(name="bare", capabilities=frozenset[Capability]())
    monkeypatch.setattr(scenario, "_loader_kind", lambda args: bare)
    ran: list[object] = []
    monkeypatch.setattr(scenario, "run_plan", lambda plan, args: ran.append(plan) or 0)
    command = ["scenario", "run", "15_zombie_writer"]
    assert main.main(command) == 1
    assert "nothing was tested" in capsys.readouterr().err
    assert main.main([*command, "--allow-none-applicable"]) == 0
    assert ran == [[]]
