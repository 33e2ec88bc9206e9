"""Loaders of the local stack that run in the background, by name, across commands.

`icefloe loader start` starts a loader (the supervised process of `harness.loaders.process`)
and returns once its query runs; later commands stop it, kill -9 it, freeze and thaw it, or
read its log, by name. Each one keeps its flags, configuration, checkpoint, pid and log in
`<run directory>/loaders/<name>/`. The flags are kept as given (dotted key -> text, its loader
id and metrics port among them) and its configuration is built from them at every open, with
the loader's own defaults (`harness.loaders.icefloe.icefloe_config`), so a restart runs what it
was started with. The workshop's exercises use these to crash and restart a loader, and to
freeze one past its lease.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from icefloe.harness.history import History
from icefloe.harness.loaders.icefloe import icefloe_config
from icefloe.harness.loaders.process import LoaderProcess
from icefloe.loader.config import LoaderConfig
from icefloe.loader.settings import STRINGS

DEFAULT_NAME = "loader"
_FLAGS_FILE = "flags.json"


def loaders_dir(stack: Any) -> Path:
    """Where the stack's background loaders keep their state."""
    return Path(stack.config.run_dir) / "loaders"


def names(stack: Any) -> list[str]:
    """The background loaders started on this stack (running or not)."""
    folder = loaders_dir(stack)
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if (p / _FLAGS_FILE).exists())


def saved_flags(stack: Any, name: str) -> dict[str, str] | None:
    """The flags loader ``name`` was last started with (dotted key -> text), if any."""
    path = loaders_dir(stack) / name / _FLAGS_FILE
    if not path.exists():
        return None
    flags: dict[str, str] = json.loads(path.read_text())
    return flags


def flags_config(stack: Any, flags: Mapping[str, str]) -> LoaderConfig:
    """The loader's configuration the flags of ``icefloe loader start`` give, on ``stack``.

    Args:
        stack: The stack it loads from and into.
        flags: Dotted key -> text; ``table``, ``kafka.topics`` and ``loader_id`` required.

    Raises:
        ValueError: No ``--table`` or no ``--kafka-topics``.
        loader.errors.ConfigError: A flag the loader refuses (named).
    """
    rest = dict(flags)
    table, topics = rest.pop("table", None), rest.pop("kafka.topics", None)
    if not (table and topics):
        raise ValueError("give --table and --kafka-topics (or no settings, to restart)")
    loader_id = rest.pop("loader_id")
    return icefloe_config(
        stack, table, STRINGS.parse(topics), rest, loader_id=loader_id, origin="the command line"
    )


def open_loader(stack: Any, name: str, flags: Mapping[str, str] | None = None) -> LoaderProcess:
    """Loader ``name`` of ``stack``, run with ``flags`` (saved for later commands), else with
    the saved ones.

    Raises:
        LookupError: no flags given and none saved (it was never started).
        ValueError, loader.errors.ConfigError: flags the loader refuses (then not saved).
    """
    chosen = flags if flags is not None else saved_flags(stack, name)
    if chosen is None:
        raise LookupError(
            f"no loader named {name!r} was started on this stack: "
            "start one with `icefloe loader start --table ... --kafka-topics ...`"
        )
    config = flags_config(stack, chosen)
    folder = loaders_dir(stack) / name
    folder.mkdir(parents=True, exist_ok=True)
    if flags is not None:
        (folder / _FLAGS_FILE).write_text(json.dumps(dict(flags), indent=1))
    return LoaderProcess(config, stack, folder, _history(folder / "history.jsonl"))


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
