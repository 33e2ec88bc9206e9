"""Loaders of the local stack that run in the background, by name, across commands.

`icefloe loader start` starts a loader (the supervised process of `harness.loaders.process`)
and returns once its query runs; later commands stop it, kill -9 it, freeze and thaw it, or
read its log, by name. Each one keeps its settings, configuration, checkpoint, pid and log in
`<run directory>/loaders/<name>/`, so a restart reuses the settings it was started with. The
workshop's exercises use these to crash and restart a loader, and to freeze one past its lease.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from harness.history import History
from harness.loaders.process import LoaderProcess, LoaderSettings

DEFAULT_NAME = "loader"
_SETTINGS_FILE = "settings.json"


def loaders_dir(stack: Any) -> Path:
    """Where the stack's background loaders keep their state."""
    return Path(stack.config.run_dir) / "loaders"


def names(stack: Any) -> list[str]:
    """The background loaders started on this stack (running or not)."""
    folder = loaders_dir(stack)
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if (p / _SETTINGS_FILE).exists())


def saved_settings(stack: Any, name: str) -> LoaderSettings | None:
    """The settings loader ``name`` was last started with, if any."""
    path = loaders_dir(stack) / name / _SETTINGS_FILE
    if not path.exists():
        return None
    doc = json.loads(path.read_text())
    doc["topics"] = tuple(doc["topics"])
    return LoaderSettings(**doc)


def open_loader(stack: Any, name: str, settings: LoaderSettings | None = None) -> LoaderProcess:
    """Loader ``name`` of ``stack``: its settings are ``settings``, else the saved ones.

    Raises:
        LookupError: no settings given and none saved (it was never started).
    """
    chosen = settings or saved_settings(stack, name)
    if chosen is None:
        raise LookupError(
            f"no loader named {name!r} was started on this stack: "
            "start one with `icefloe loader start --table ... --kafka-topics ...`"
        )
    folder = loaders_dir(stack) / name
    folder.mkdir(parents=True, exist_ok=True)
    if settings is not None:
        (folder / _SETTINGS_FILE).write_text(json.dumps(asdict(settings), indent=1))
    return LoaderProcess(chosen, stack, folder, _history(folder / "history.jsonl"))


def _history(path: Path) -> History:
    """The loader's history, kept across commands (``History`` starts its file afresh).

    Each `icefloe loader ...` command opens the loader anew; the events earlier commands
    recorded (a kill, a start) stay in the file, so a check can read what was done in order.
    """
    earlier = path.read_text() if path.exists() else ""
    history = History(path)
    path.write_text(earlier)
    return history


def scrape_metrics(port: int) -> list[tuple[str, dict[str, str], float]]:
    """A loader's Prometheus samples (name, labels, value), the ``icefloe_`` ones only.

    Raises:
        OSError: nothing answers on ``port``.
    """
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return [
        (sample.name, dict(sample.labels), float(sample.value))
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name.startswith("icefloe_")
    ]
