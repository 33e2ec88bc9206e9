"""The compose file and the local-process stack come from one source, and a drift test says so.

The generated files (docker-compose.yml, docker-compose.local.yml, containers/trino-etc/) must
equal what the settings render now: editing either the files or a local service's settings
alone fails here. And the containers' settings must equal the local services' settings except
for the keys `settings.OVERRIDES` names.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from icefloe.harness.containers import compose, settings
from icefloe.harness.stack.config import StackConfig
from icefloe.harness.stack.kafka import Kafka
from icefloe.harness.stack.trino import Trino


def test_committed_files_are_what_the_settings_render() -> None:
    assert compose.stale_files() == [], "run `icefloe compose render` and commit the result"


@pytest.mark.parametrize("catalog", ["rest", "glue"])
def test_containers_differ_from_the_local_stack_only_where_declared(catalog: str) -> None:
    config = StackConfig(run_dir=Path("/unused"), cache_dir=Path("/unused"), catalog=catalog)
    credentials = settings.placeholder_credentials()
    local = settings.local_settings(config, credentials)
    specs = settings.container_specs(config, credentials, "9092")
    assert tuple(specs) == settings.services(config)
    for service, spec in specs.items():
        container = settings.spec_settings(spec)
        assert set(container) == set(local[service]), service
        differing = {k for k in container if container[k] != local[service][k]}
        assert differing == settings.overridden(service, catalog), service


def test_a_local_setting_changed_alone_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    original = Kafka.properties
    monkeypatch.setattr(
        Kafka, "properties", lambda self: {**original(self), "log.retention.hours": 1}
    )
    assert "docker-compose.yml" in compose.stale_files()

    original_catalog = Trino.catalog_properties
    monkeypatch.setattr(
        Trino,
        "catalog_properties",
        lambda self: {**original_catalog(self), "iceberg.file-format": "ORC"},
    )
    assert "containers/trino-etc/catalog/lake.properties" in compose.stale_files()


def test_the_compose_file_changed_alone_is_caught(tmp_path: Path) -> None:
    for path in compose.render():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(compose.compose_root() / path, tmp_path / path)
    assert compose.stale_files(tmp_path) == []
    edited = yaml.safe_load((tmp_path / "docker-compose.yml").read_text())
    edited["services"]["kafka"]["environment"]["KAFKA_NUM_PARTITIONS"] = "3"
    (tmp_path / "docker-compose.yml").write_text(yaml.safe_dump(edited))
    assert compose.stale_files(tmp_path) == ["docker-compose.yml"]


def test_compose_publishes_on_loopback_with_the_local_stacks_variables() -> None:
    data = yaml.safe_load(compose.render()["docker-compose.yml"])
    for name, service in data["services"].items():
        for port in service["ports"]:
            assert port.startswith("127.0.0.1:${ICEFLOE_STACK_"), (name, port)
        for value in service["environment"].values():
            assert "icefloe-" not in value  # no generated credential is ever written
    assert data["services"]["minio"]["environment"]["MINIO_ROOT_PASSWORD"].startswith(
        "${ICEFLOE_S3_SECRET_KEY"
    )


def test_official_images_are_pinned_to_the_versions_module() -> None:
    from icefloe.harness.provision import versions

    data = yaml.safe_load(compose.render()["docker-compose.yml"])
    images = {name: s["image"] for name, s in data["services"].items()}
    assert images["kafka"] == f"apache/kafka:{versions.KAFKA}"
    assert images["trino"] == f"trinodb/trino:{versions.TRINO}"
    assert images["catalog"] == f"apache/iceberg-rest-fixture:{versions.ICEBERG_REST_SERVER}"
    assert all(":latest" not in image for image in images.values())


def test_kafka_variable_names_round_trip() -> None:
    props = Kafka(StackConfig(run_dir=Path("/r"), cache_dir=Path("/c")), None).properties()  # type: ignore[arg-type]
    env = {settings.kafka_env_name(k): str(v) for k, v in props.items()}
    back = dict(line.split("=", 1) for line in settings._kafka_properties_lines(env))
    assert back == {k: str(v) for k, v in props.items()}
