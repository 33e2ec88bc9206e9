"""The walkthrough's narrator times each step it opens, for the demo's closing line."""

from __future__ import annotations

import io
from typing import Any

from icefloe.harness.demo import narrator
from icefloe.harness.demo.narrator import Narrator


def test_each_step_lasts_until_the_next_opens_and_the_last_until_now(monkeypatch: Any) -> None:
    clock = iter([10.0, 13.5, 20.0])
    monkeypatch.setattr(narrator.time, "monotonic", lambda: next(clock))
    out = io.StringIO()
    said = Narrator(2, file=out)
    said.step("The stack", "shows", "why")
    said.step("A table", "shows", "why")
    assert said.step_times() == [("The stack", 3.5), ("A table", 6.5)]
    assert "1/2  The stack" in out.getvalue()
