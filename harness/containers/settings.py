"""Every container's settings, derived from the local-process services: one source for both.

The local services (harness/services/) say what each service is configured with: Kafka's
server.properties, the catalog's CATALOG_* environment, Trino's config, node and catalog
properties, MinIO's environment and command. Here the same objects are asked again, built on a
container's view of the stack (default ports inside the container, state under
/var/lib/icefloe/<service>), and only what a network of containers needs is overridden: listen on
every interface of the container, reach MinIO and the catalog by service name, and advertise
Kafka both to the host (the published port) and to the other containers. `OVERRIDES` names each
overridden key; the drift test checks that nothing else differs.

The compose file (`compose.py`) and the testcontainers backend (`backend.py`) both render these
specs, so neither can drift from the local stack without a test failing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from icefloe.harness.containers.images import GLUE_IMAGE
from icefloe.harness.provision import versions
from icefloe.harness.stack import catalog as catalog_module
from icefloe.harness.stack import kafka as kafka_module
from icefloe.harness.stack import keys
from icefloe.harness.stack.catalog import Catalog
from icefloe.harness.stack.config import StackConfig
from icefloe.harness.stack.credentials import S3Credentials
from icefloe.harness.stack.glue import Glue
from icefloe.harness.stack.kafka import Kafka
from icefloe.harness.stack.minio import Minio
from icefloe.harness.stack.trino import LOG_LEVELS, Trino
from icefloe.loader.secret import Secret

STATE_ROOT = PurePosixPath("/var/lib/icefloe")  # each service's state: STATE_ROOT/<service>
TRINO_ETC = PurePosixPath("/etc/trino")
TRINO_PLUGINS = PurePosixPath("/usr/lib/trino/plugin")
KAFKA_INTERNAL_PORT = 19092  # the listener other containers use: kafka:19092
HOSTNAMES = {
    "kafka": "kafka",
    "minio": "minio",
    "catalog": "catalog",
    "glue": "glue",
    "trino": "trino",
}
# A restarted container comes back with a new address on the network, and a JVM keeps a resolved
# name for 30 s by default (failures for 10 s): Trino and the catalog would keep calling the old
# address of the catalog or MinIO after a restart. The containers' JVMs resolve names afresh.
JVM_DNS_OPTIONS = ("-Dsun.net.inetaddr.ttl=1", "-Dsun.net.inetaddr.negative.ttl=0")
SERVICES = ("kafka", "minio", "catalog", "trino")
"""The services of the REST stack; a Glue stack runs ``glue`` (ministack) where ``catalog`` is."""


def services(config: StackConfig) -> tuple[str, ...]:
    """The containers of a stack with ``config``'s catalog, by service name."""
    return tuple(
        Glue.name if s == "catalog" and config.catalog == Glue.kind else s for s in SERVICES
    )


# The official image of each project, pinned to the versions the local stack provisions. MinIO
# publishes no images any more: its last published tag is older than the source build icefloe
# pins, so this is the nearest official image, not the same build.
MINIO_OFFICIAL_RELEASE = "RELEASE.2025-09-07T16-13-09Z"
OFFICIAL_IMAGES = {
    "kafka": f"apache/kafka:{versions.KAFKA}",
    "minio": f"minio/minio:{MINIO_OFFICIAL_RELEASE}",
    "catalog": f"apache/iceberg-rest-fixture:{versions.ICEBERG_REST_SERVER}",
    "trino": f"trinodb/trino:{versions.TRINO}",
    # ministack publishes no image of its own that this kit has pulled: the Glue stack runs
    # on the image `icefloe images build` makes (containers/glue/).
    "glue": GLUE_IMAGE,
}

# The keys whose container value differs from the local one, per service, and why.
OVERRIDES: dict[str, dict[str, str]] = {
    "kafka": {
        keys.KAFKA_LISTENERS: "every interface, plus a listener for other containers",
        keys.KAFKA_ADVERTISED_LISTENERS: "the published port for the host, kafka:19092 inside",
        keys.KAFKA_LISTENER_PROTOCOL_MAP: "the extra INTERNAL listener",
        keys.KAFKA_INTER_BROKER_LISTENER: "the broker reaches itself by service name",
    },
    "minio": {
        "--address": "every interface of the container",
        "--console-address": "every interface of the container",
    },
    "catalog": {
        keys.CATALOG_S3_ENDPOINT: "MinIO by service name",
        keys.CATALOG_REST_HOST: "every interface of the container",
    },
    "glue": {
        "BIND_HOST": "every interface of the container",
    },
    "trino": {
        "catalog.config-dir": "the image's /etc/trino",
        "plugin.dir": "the image's plugin folder",
        keys.TRINO_NODE_BIND_IP: "every interface of the container",
        keys.TRINO_ICEBERG_REST_URI: "the catalog by service name",
        keys.TRINO_S3_ENDPOINT: "MinIO by service name",
    },
}
# On a Glue stack, Trino reaches the catalog through Glue's endpoint instead of the REST URI.
_CATALOG_ADDRESS = {Catalog.kind: keys.TRINO_ICEBERG_REST_URI, Glue.kind: keys.TRINO_GLUE_ENDPOINT}


def overridden(service: str, catalog: str) -> set[str]:
    """The keys `OVERRIDES` declares for ``service`` on a stack whose catalog is ``catalog``."""
    declared = set(OVERRIDES[service])
    if service == "trino":
        declared = declared - {keys.TRINO_ICEBERG_REST_URI} | {_CATALOG_ADDRESS[catalog]}
    return declared


@dataclass(frozen=True)
class Healthcheck:
    """A command run inside the container, and how often."""

    command: str
    interval_s: int = 5
    retries: int = 60


@dataclass(frozen=True)
class ContainerSpec:
    """What one service's container is: image, environment, command, ports, state, files."""

    service: str
    official_image: str
    environment: dict[str, str]
    ports: dict[int, int]  # port inside the container -> port published on the host's loopback
    state_dir: PurePosixPath  # the service's state inside the container (a volume)
    healthcheck: Healthcheck
    command: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)  # folder-relative path -> content
    files_target: PurePosixPath | None = None  # where `files` are mounted (read-only)

    @property
    def hostname(self) -> str:
        return HOSTNAMES[self.service]


def container_view(config: StackConfig) -> StackConfig:
    """The stack as a container sees it: default ports, state under STATE_ROOT, same heaps."""
    defaults = StackConfig(run_dir=Path(STATE_ROOT), cache_dir=Path("/nonexistent"))
    return dataclasses.replace(
        defaults,
        catalog=config.catalog,
        kafka_heap=config.kafka_heap,
        catalog_heap=config.catalog_heap,
        trino_heap=config.trino_heap,
    )


def placeholder_credentials() -> S3Credentials:
    """Credentials that compose fills in from the environment (never written to a file)."""
    access = f"${{{keys.TRINO_ENV_S3_ACCESS_KEY}:?set {keys.TRINO_ENV_S3_ACCESS_KEY}}}"
    secret = f"${{{keys.TRINO_ENV_S3_SECRET_KEY}:?set {keys.TRINO_ENV_S3_SECRET_KEY}}}"
    return S3Credentials(access, Secret(secret))


def properties_text(props: Mapping[str, object]) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())


def kafka_env_name(key: str) -> str:
    """A server.properties key as a KAFKA_* variable (the convention of Kafka's own image)."""
    return "KAFKA_" + key.replace("-", "___").replace("_", "__").replace(".", "_").upper()


def local_settings(config: StackConfig, credentials: S3Credentials) -> dict[str, dict[str, str]]:
    """Each service's settings as the local stack has them, on the container view."""
    view = container_view(config)
    trino = Trino(view, credentials)
    minio = Minio(view, credentials)
    argv = minio.command()[1:]
    minio_args = {argv[i]: argv[i + 1] for i in range(2, len(argv) - 1, 2)}
    return {
        "kafka": _strings(Kafka(view, credentials).properties()),
        "minio": {**_strings(minio.environment()), "data": argv[1], **minio_args},
        "catalog": _strings(Catalog(view, credentials).environment()),
        "glue": _strings(Glue(view, credentials).environment()),
        "trino": _strings(
            {
                **trino.config_properties(),
                **trino.node_properties(),
                **trino.catalog_properties(),
            }
        ),
    }


def _strings(values: Mapping[str, object]) -> dict[str, str]:
    return {k: str(v) for k, v in values.items()}


def container_specs(
    config: StackConfig, credentials: S3Credentials, kafka_host_port: str
) -> dict[str, ContainerSpec]:
    """The four containers' specs, by service name (``glue`` in place of ``catalog`` when
    ``config``'s catalog is Glue).

    Args:
        config: the stack's settings (heaps; published ports are `config`'s ports).
        credentials: real credentials (backend) or `placeholder_credentials()` (compose).
        kafka_host_port: the port the host reaches Kafka on, as text (compose passes a variable).
    """
    view = container_view(config)
    published = {
        "kafka": {view.kafka_port: config.kafka_port},
        "minio": {
            view.minio_port: config.minio_port,
            view.minio_console_port: config.minio_console_port,
        },
        "catalog": {view.catalog_port: config.catalog_port},
        "glue": {view.glue_port: config.glue_port},
        "trino": {view.trino_port: config.trino_port},
    }
    minio_url = f"http://{HOSTNAMES['minio']}:{view.minio_port}"
    catalog_url = f"http://{HOSTNAMES['catalog']}:{view.catalog_port}"
    glue_url = f"http://{HOSTNAMES['glue']}:{view.glue_port}"

    kafka = Kafka(view, credentials)
    internal = f"INTERNAL://{HOSTNAMES['kafka']}:{KAFKA_INTERNAL_PORT}"
    kafka_props = {
        **kafka.properties(),
        keys.KAFKA_LISTENERS: (
            f"PLAINTEXT://0.0.0.0:{view.kafka_port},INTERNAL://0.0.0.0:{KAFKA_INTERNAL_PORT},"
            f"CONTROLLER://{view.host}:{view.kafka_controller_port}"
        ),
        keys.KAFKA_ADVERTISED_LISTENERS: f"PLAINTEXT://{view.host}:{kafka_host_port},{internal}",
        keys.KAFKA_LISTENER_PROTOCOL_MAP: (
            "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT"
        ),
        keys.KAFKA_INTER_BROKER_LISTENER: "INTERNAL",
    }
    kafka_env = {kafka_env_name(k): str(v) for k, v in kafka_props.items()}
    kafka_env["KAFKA_HEAP_OPTS"] = f"-Xmx{view.kafka_heap} -Xms{view.kafka_heap}"
    kafka_env["KAFKA_JVM_PERFORMANCE_OPTS"] = " ".join(kafka_module.JVM_FLAGS)

    minio = Minio(view, credentials)
    minio_argv = minio.command()[1:]
    minio_argv[minio_argv.index("--address") + 1] = f":{view.minio_port}"
    minio_argv[minio_argv.index("--console-address") + 1] = f":{view.minio_console_port}"

    catalog = Catalog(view, credentials)
    catalog_env = {
        **catalog.environment(),
        keys.CATALOG_S3_ENDPOINT: minio_url,
        keys.CATALOG_REST_HOST: "0.0.0.0",
        "JAVA_TOOL_OPTIONS": " ".join(
            [f"-Xmx{view.catalog_heap}", *catalog_module.JVM_FLAGS, *JVM_DNS_OPTIONS]
        ),
    }

    trino = Trino(view, credentials)
    trino_files = {
        "config.properties": properties_text(
            {
                **trino.config_properties(),
                "catalog.config-dir": TRINO_ETC / "catalog",
                "plugin.dir": TRINO_PLUGINS,
            }
        ),
        "node.properties": properties_text(
            {**trino.node_properties(), keys.TRINO_NODE_BIND_IP: "0.0.0.0"}
        ),
        "jvm.config": "".join(
            f"{o}\n" for o in [*trino.jvm_options(vector=False), *JVM_DNS_OPTIONS]
        ),
        "log.properties": properties_text(LOG_LEVELS),
        f"catalog/{keys.TRINO_CATALOG}.properties": properties_text(
            {
                **trino.catalog_properties(),
                # The stack's catalog by service name: the REST server's URI or Glue's endpoint.
                _CATALOG_ADDRESS[view.catalog]: {Catalog.kind: catalog_url, Glue.kind: glue_url}[
                    view.catalog
                ],
                keys.TRINO_S3_ENDPOINT: minio_url,
            }
        ),
    }

    def state(service: str) -> PurePosixPath:
        return STATE_ROOT / service

    def http(port: int, path: str) -> Healthcheck:
        return Healthcheck(f"curl -fsS -o /dev/null http://127.0.0.1:{port}{path}")

    glue = Glue(view, credentials)
    the_catalog = (
        ContainerSpec(
            "glue",
            OFFICIAL_IMAGES["glue"],
            {**glue.environment(), "BIND_HOST": "0.0.0.0"},
            published["glue"],
            state("glue"),
            http(view.glue_port, "/_ministack/health"),
        )
        if view.catalog == Glue.kind
        else ContainerSpec(
            "catalog",
            OFFICIAL_IMAGES["catalog"],
            _strings(catalog_env),
            published["catalog"],
            state("catalog"),
            http(view.catalog_port, "/v1/config"),
        )
    )
    return {
        "kafka": ContainerSpec(
            "kafka",
            OFFICIAL_IMAGES["kafka"],
            kafka_env,
            published["kafka"],
            state("kafka"),
            Healthcheck(f"bash -c '</dev/tcp/127.0.0.1/{view.kafka_port}'"),
        ),
        "minio": ContainerSpec(
            "minio",
            OFFICIAL_IMAGES["minio"],
            _strings(minio.environment()),
            published["minio"],
            state("minio"),
            http(view.minio_port, "/minio/health/ready"),
            command=tuple(minio_argv),
        ),
        the_catalog.service: the_catalog,
        "trino": ContainerSpec(
            "trino",
            OFFICIAL_IMAGES["trino"],
            _strings(trino.environment()),
            published["trino"],
            state("trino"),
            Healthcheck(
                f"curl -fsS http://127.0.0.1:{view.trino_port}/v1/info"
                " | grep -q '\"starting\":false'"
            ),
            files=trino_files,
            files_target=TRINO_ETC,
        ),
    }


def spec_settings(spec: ContainerSpec) -> dict[str, str]:
    """A spec's settings in the shape of `local_settings`, for the drift test."""
    if spec.service == "kafka":
        props = {}
        for line in _kafka_properties_lines(spec.environment):
            key, _, value = line.partition("=")
            props[key] = value
        return props
    if spec.service == "minio":
        argv = list(spec.command)
        args = {argv[i]: argv[i + 1] for i in range(2, len(argv) - 1, 2)}
        return {**spec.environment, "data": argv[1], **args}
    if spec.service == "catalog":
        return {k: v for k, v in spec.environment.items() if k != "JAVA_TOOL_OPTIONS"}
    if spec.service == "glue":
        return dict(spec.environment)
    merged: dict[str, str] = {}
    for name in (
        "config.properties",
        "node.properties",
        f"catalog/{keys.TRINO_CATALOG}.properties",
    ):
        for line in spec.files[name].splitlines():
            key, _, value = line.partition("=")
            merged[key] = value
    return merged


def _kafka_properties_lines(environment: Mapping[str, str]) -> list[str]:
    """What the Kafka image's entrypoint writes from KAFKA_* variables (same convention)."""
    skip = {"KAFKA_HEAP_OPTS", "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_OPTS", "KAFKA_LOG4J_OPTS"}
    lines = []
    for name, value in environment.items():
        if name.startswith("KAFKA_") and name not in skip:
            key = name.removeprefix("KAFKA_").lower()
            key = key.replace("___", "-").replace("__", "\0").replace("_", ".").replace("\0", "_")
            lines.append(f"{key}={value}")
    return lines
