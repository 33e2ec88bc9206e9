"""Background loaders: what one command records stays for the next one to read."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from icefloe.harness.loaders import config
from icefloe.harness.loaders.background import open_loader, saved_flags
from icefloe.loader.config import SparkConfig
from icefloe.loader.secret import Secret
from tests.harness.fakes import RestCatalog


def test_history_and_flags_are_kept_across_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No provisioned jars or JDK needed: the Spark settings pass through as given.
    monkeypatch.setattr(config, "provisioned_spark", lambda cache, spark: spark or SparkConfig())
    stack = SimpleNamespace(
        bootstrap_servers="127.0.0.1:59092",
        catalog_uri="http://127.0.0.1:58181",
        catalog=RestCatalog("http://127.0.0.1:58181"),
        s3_endpoint="http://127.0.0.1:59000",
        credentials=SimpleNamespace(access_key="a", secret_key=Secret("s")),
        config=SimpleNamespace(run_dir=tmp_path, cache_dir=tmp_path / "cache"),
    )
    flags = {"table": "lake.s.t", "kafka.topics": "t", "loader_id": "a", "lease_ttl": "15s"}
    open_loader(stack, "one", flags).history.record("loader", "info", "killed", pid=1)
    assert saved_flags(stack, "one") == flags  # as given: rebuilt into the config at every open
    again = open_loader(stack, "one")
    again.history.record("loader", "ok", "start", pid=2)
    assert (again.loader_id, again.settings.lease_ttl) == ("a", 15.0)
    path = tmp_path / "loaders" / "one" / "history.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(e["phase"], e["name"]) for e in events] == [("info", "killed"), ("ok", "start")]
