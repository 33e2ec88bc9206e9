"""Stack configuration: file, then environment, then explicit arguments, validated once.

The file is `icefloe.toml` in the working directory (or $ICEFLOE_CONFIG), section [stack].
Environment variables are ICEFLOE_STACK_<FIELD> (upper case). Every service binds to `host`.
The catalog a running stack was brought up with (`icefloe up --catalog glue`) is recorded in
its run directory and applies where neither file, environment nor argument names one.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icefloe.harness.provision.layout import cache_dir
from icefloe.harness.stack import keys
from icefloe.loader.config import CATALOG_TYPES

CATALOG_RECORD = "stack-catalog"
"""The file in the run directory naming the catalog of the stack that runs there (written by
``up``, removed by ``down``): commands that name no catalog use that one."""

ENV_PREFIX = "ICEFLOE_STACK_"
"""Environment variables ICEFLOE_STACK_<FIELD> override the file (also read by compose)."""


def run_dir() -> Path:
    """Return the stack's run directory: $ICEFLOE_RUN_DIR, else the user's state directory.

    It holds the services' data, logs, pid files and generated credentials, outside the
    repository.
    """
    explicit = os.environ.get(keys.ENV_RUN_DIR)
    if explicit:
        return Path(explicit).expanduser().resolve()
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base).expanduser().resolve() / "icefloe" / "run"


ON_DEMAND_PORTS: dict[str, str] = {
    "loader_metrics_port": "a loader's /metrics (`icefloe loader start` takes the next free port)",
    "toxiproxy_port": "wire faults (Toxiproxy)",
    "toxiproxy_kafka_port": "wire faults (Toxiproxy)",
    "toxiproxy_minio_port": "wire faults (Toxiproxy)",
    "toxiproxy_catalog_port": "wire faults (Toxiproxy)",
    "tested_catalog_port": "`icefloe catalogs check`",
    "tested_glue_port": "`icefloe catalogs check`",
    "moto_port": "`icefloe catalogs check`",
    "nessie_port": "`icefloe catalogs check`",
    "nessie_management_port": "`icefloe catalogs check`",
}
"""The ports ``icefloe up`` does not bind, by setting, with what binds them when it runs."""


@dataclass(frozen=True)
class StackConfig:
    """Ports, heap sizes, timeouts and directories of one local stack."""

    host: str = "127.0.0.1"
    # Which catalog the stack runs: "rest" (the Iceberg REST server) or "glue" (the
    # Glue-compatible service). Trino's `lake`, the loaders and every check use that one.
    catalog: str = "rest"
    kafka_port: int = 9092
    kafka_controller_port: int = 9093
    kafka_proxied_port: int = 9094  # the broker's PROXIED listener, Toxiproxy's upstream
    minio_port: int = 9000
    minio_console_port: int = 9001
    catalog_port: int = 8181
    trino_port: int = 8080
    loader_metrics_port: int = 9400  # `icefloe load` and `icefloe loader` on this stack
    # Toxiproxy (optional): its HTTP API, and where its proxies to Kafka, MinIO and the catalog
    # listen (only the loader under test connects there).
    toxiproxy_port: int = 8474
    toxiproxy_kafka_port: int = 18092
    toxiproxy_minio_port: int = 18000
    toxiproxy_catalog_port: int = 18181
    # The Glue-compatible catalog (optional): started by who asks for a Glue catalog.
    glue_port: int = 4566
    # Catalogs under test (`icefloe catalogs check`), beside the stack's own and never its
    # catalog: second instances of the REST server and of the Glue-compatible service, moto's
    # Glue and Project Nessie.
    tested_catalog_port: int = 18281
    tested_glue_port: int = 14566
    moto_port: int = 4567
    nessie_port: int = 19120
    nessie_management_port: int = 19121  # its health and metrics
    kafka_heap: str = "512m"
    catalog_heap: str = "384m"
    trino_heap: str = "1280m"
    start_timeout: float = 180.0
    stop_timeout: float = 30.0
    run_dir: Path = field(default_factory=run_dir)
    cache_dir: Path = field(default_factory=cache_dir)

    def __post_init__(self) -> None:
        if self.host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"services listen on loopback only, not {self.host!r}")
        if self.catalog not in CATALOG_TYPES:
            raise ValueError(f"catalog {self.catalog!r}: one of {', '.join(CATALOG_TYPES)}")
        ports = [getattr(self, f.name) for f in dataclasses.fields(self) if f.name.endswith("port")]
        if len(set(ports)) != len(ports):
            raise ValueError(f"two services share a port: {ports}")

    @property
    def catalog_service_port(self) -> int:
        """The port of the catalog the stack runs."""
        return self.glue_port if self.catalog == "glue" else self.catalog_port

    def port_settings(self, ports: tuple[int, ...]) -> str:
        """The settings that hold ``ports``, to tell a user how to move them elsewhere."""
        fields = [f.name for f in dataclasses.fields(self) if f.name.endswith("port")]
        return ", ".join(
            f"{ENV_PREFIX}{f.upper()} (or {f} under [stack] in icefloe.toml)"
            for f in fields
            if getattr(self, f) in ports
        )


def _coerce(name: str, raw: Any) -> Any:
    kind = {f.name: f.type for f in dataclasses.fields(StackConfig)}[name]
    if kind in ("int", int):
        return int(raw)
    if kind in ("float", float):
        return float(raw)
    if kind in ("Path", Path):
        return Path(str(raw)).expanduser().resolve()
    return str(raw)


def load(config_file: Path | None = None, **overrides: Any) -> StackConfig:
    """Build the stack configuration from file, environment and `overrides`, in that order.

    Raises:
        ValueError: an unknown key or an invalid value.
    """
    names = {f.name for f in dataclasses.fields(StackConfig)}
    values: dict[str, Any] = {}
    path = config_file or Path(os.environ.get(keys.ENV_CONFIG, "icefloe.toml"))
    if path.exists():
        section = tomllib.loads(path.read_text()).get("stack", {})
        unknown = set(section) - names
        if unknown:
            raise ValueError(f"{path}: unknown [stack] keys {sorted(unknown)}")
        values.update(section)
    for name in names:
        env = os.environ.get(ENV_PREFIX + name.upper())
        if env is not None:
            values[name] = env
    values.update({k: v for k, v in overrides.items() if v is not None})
    if "catalog" not in values:
        where = _coerce("run_dir", values["run_dir"]) if "run_dir" in values else run_dir()
        record = where / CATALOG_RECORD
        if record.is_file():
            values["catalog"] = record.read_text().strip()
    unknown = set(values) - names
    if unknown:
        raise ValueError(f"unknown stack settings {sorted(unknown)}")
    return StackConfig(**{k: _coerce(k, v) for k, v in values.items()})
