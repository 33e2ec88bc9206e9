"""The stack's catalog choice (``[stack] catalog``): which service plays the catalog's role,
what Trino's ``lake`` and the loader are given, and what scenarios a catalog cannot promise."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from icefloe.harness.loaders.base import Capability
from icefloe.harness.loaders.capabilities import catalog_limits, needs, not_applicable
from icefloe.harness.loaders.config import StackDefaults
from icefloe.harness.scenarios import model
from icefloe.harness.stack import config as stack_config
from icefloe.harness.stack import keys
from icefloe.harness.stack.catalog import Catalog
from icefloe.harness.stack.config import CATALOG_RECORD, StackConfig
from icefloe.harness.stack.glue import Glue
from icefloe.harness.stack.lakehouse import Stack
from icefloe.harness.stack.trino import Trino


def _config(tmp_path: Path, **settings: object) -> StackConfig:
    return StackConfig(run_dir=tmp_path / "run", cache_dir=tmp_path / "cache", **settings)  # type: ignore[arg-type]


def test_an_unknown_catalog_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="one of rest, glue"):
        _config(tmp_path, catalog="hive")


def test_the_running_stacks_catalog_applies_unless_one_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ICEFLOE_STACK_CATALOG", raising=False)
    monkeypatch.setenv(keys.ENV_CONFIG, str(tmp_path / "none.toml"))
    run = tmp_path / "run"
    assert stack_config.load(run_dir=run).catalog == "rest"
    run.mkdir()
    (run / CATALOG_RECORD).write_text("glue\n")
    assert stack_config.load(run_dir=run).catalog == "glue"
    assert stack_config.load(run_dir=run, catalog="rest").catalog == "rest"
    monkeypatch.setenv("ICEFLOE_STACK_CATALOG", "rest")
    assert stack_config.load(run_dir=run).catalog == "rest"


def test_on_glue_the_glue_service_plays_the_catalog(tmp_path: Path) -> None:
    stack = Stack(_config(tmp_path, catalog="glue"))
    assert isinstance(stack.catalog, Glue)
    assert stack.service("catalog") is stack.catalog is stack.service("glue")
    assert stack.glue is None and "glue" not in stack.optional_services()
    assert stack.catalog_uri == f"http://127.0.0.1:{stack.config.glue_port}"
    assert stack.config.catalog_service_port == stack.config.glue_port
    rest = Stack(_config(tmp_path))
    assert isinstance(rest.catalog, Catalog) and isinstance(rest.glue, Glue)
    assert rest.service("glue") is rest.glue


def test_trinos_lake_follows_the_stacks_catalog(tmp_path: Path) -> None:
    config = _config(tmp_path, catalog="glue")
    lake = Trino(config, Stack(config).credentials).catalog_properties()
    assert lake[keys.TRINO_ICEBERG_CATALOG_TYPE] == "glue"
    assert lake[keys.TRINO_GLUE_ENDPOINT] == f"http://127.0.0.1:{config.glue_port}"
    assert lake[keys.TRINO_GLUE_WAREHOUSE] == f"s3://{keys.WAREHOUSE_BUCKET}/"
    assert keys.TRINO_ICEBERG_REST_URI not in lake
    assert "${ENV:" in str(lake[keys.TRINO_GLUE_SECRET_KEY])  # read from its environment
    rest = _config(tmp_path)
    lake = Trino(rest, Stack(rest).credentials).catalog_properties()
    assert lake[keys.TRINO_ICEBERG_CATALOG_TYPE] == "rest"


def test_on_glue_the_loader_is_given_the_glue_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    stack = Stack(_config(tmp_path, catalog="glue"))
    offered = StackDefaults(stack).values(frozenset({"table", "kafka.topics"}))
    assert offered["catalog.type"] == "glue"
    assert offered["catalog.glue_endpoint"] == stack.catalog_uri
    assert "catalog.uri" not in offered
    import os

    assert os.environ["AWS_ACCESS_KEY_ID"] == stack.credentials.access_key  # it signs with it
    named = StackDefaults(stack).values(frozenset({"catalog.type", "catalog.uri"}))
    assert not any(key.startswith("catalog.") for key in named)  # its own catalog: nothing


def test_on_glue_a_loader_must_commit_through_glue() -> None:
    scenario = model.find("01_exactly_once_kill9")
    sink = SimpleNamespace(capabilities=frozenset(Capability) - {Capability.GLUE})
    assert not not_applicable(needs(scenario), sink.capabilities)
    (why,) = not_applicable(needs(scenario, "glue"), sink.capabilities)
    assert why.startswith("no glue:")


def test_a_catalog_kill_does_not_apply_to_a_catalog_that_forgets_on_kill(tmp_path: Path) -> None:
    outage = model.find("11_catalog_outage")
    glue = Stack(_config(tmp_path, catalog="glue")).catalog
    (why,) = catalog_limits(outage, glue)
    assert "only when it stops cleanly" in why
    assert catalog_limits(outage, Stack(_config(tmp_path)).catalog) == []
    assert catalog_limits(model.find("01_exactly_once_kill9"), glue) == []


def test_the_record_of_the_catalog_is_no_services_folder(tmp_path: Path) -> None:
    for catalog in ("rest", "glue"):
        stack = Stack(_config(tmp_path, catalog=catalog))
        services = [*stack.services.values(), *stack.optional_services().values()]
        folders = {service.state_dir.name for service in services} | {"catalog", "glue"}
        assert CATALOG_RECORD not in folders
