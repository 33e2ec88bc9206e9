"""Background loaders: what one command records stays for the next one to read."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from harness.loaders.background import open_loader, saved_settings
from harness.loaders.process import LoaderSettings


def test_history_is_kept_across_commands(tmp_path: Path) -> None:
    stack = SimpleNamespace(config=SimpleNamespace(run_dir=tmp_path))
    settings = LoaderSettings(loader_id="a", table="lake.s.t", topics=("t",))
    open_loader(stack, "one", settings).history.record("loader", "info", "killed", pid=1)
    assert saved_settings(stack, "one") == settings
    open_loader(stack, "one").history.record("loader", "ok", "start", pid=2)
    path = tmp_path / "loaders" / "one" / "history.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(e["phase"], e["name"]) for e in events] == [("info", "killed"), ("ok", "start")]
