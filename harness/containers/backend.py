"""The containers backend: the same stack, each service a testcontainers `DockerContainer`.

`ContainerStack` is a `harness.stack.Stack` whose four services are the local service classes
with their process swapped for a container: endpoints, readiness checks, the bucket MinIO needs,
clients and the fault hooks (stop, kill -9, pause, resume, restart) are the same code as the
local-process stack's. Containers are configured from `settings.container_specs`, publish their
ports on 127.0.0.1 (the same ports as the local stack, from the same StackConfig), share one
network where they reach each other by service name, and keep their state in the run directory
(bind mounts), so the harness reads MinIO's data folder as it does locally.

Containers and network are named like docker-compose names them for the project
`icefloe-<run-directory digest>`, so this backend and `icefloe compose up` manage the same
containers.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from pathlib import Path
from typing import Any

import psutil

from icefloe.harness.console import say
from icefloe.harness.containers.engine import Engine
from icefloe.harness.containers.images import LOCAL_IMAGES, OPTIONAL_IMAGES
from icefloe.harness.containers.settings import ContainerSpec, container_specs
from icefloe.harness.stack.catalog import Catalog
from icefloe.harness.stack.config import StackConfig
from icefloe.harness.stack.config import load as load_config
from icefloe.harness.stack.credentials import S3Credentials, load_or_create
from icefloe.harness.stack.glue import Glue
from icefloe.harness.stack.kafka import Kafka
from icefloe.harness.stack.lakehouse import Stack
from icefloe.harness.stack.minio import Minio
from icefloe.harness.stack.readiness import Readiness, ServiceStartTimeout, wait_ready
from icefloe.harness.stack.service import LocalService
from icefloe.harness.stack.trino import Trino
from icefloe.harness.waiting import poll

BACKEND_FILE = "backend"
SETTINGS_LABEL = "io.icefloe.settings"  # in the run directory: which backend started the stack


def project_name(run_dir: Path) -> str:
    """The compose project of a run directory (two run directories never share containers)."""
    return "icefloe-" + hashlib.sha1(str(run_dir).encode()).hexdigest()[:8]


def container_name(project: str, service: str) -> str:
    return f"{project}_{service}_1"


_CLIENTS: dict[str, Any] = {}


def docker_client(engine: Engine) -> Any:
    """A Docker API client on the engine (podman's socket is started if it is not serving)."""
    import docker

    if engine.docker_host not in _CLIENTS:
        engine.ensure_running()
        _CLIENTS[engine.docker_host] = docker.DockerClient(base_url=engine.docker_host, timeout=120)
    return _CLIENTS[engine.docker_host]


def _readiness_wait(readiness: Readiness, process: ContainerProcess, timeout: float) -> Any:
    """A testcontainers wait strategy that holds until the service's own readiness check does."""
    from testcontainers.core.waiting_utils import WaitStrategy

    class ServiceReady(WaitStrategy):
        def wait_until_ready(self, container: Any) -> None:
            wait_ready(process.name, readiness, process, timeout)

    return ServiceReady()


class ContainerProcess:
    """A service's container with the controls of `harness.stack.process.ManagedProcess`."""

    def __init__(self, name: str, project: str, state_dir: Path, engine: Engine) -> None:
        self.name = name
        self.engine = engine
        self.container_name = container_name(project, name)
        self.state_dir = state_dir
        self.log_file = f"`podman logs {self.container_name}`"

    def container(self) -> Any | None:
        import docker.errors

        try:
            return docker_client(self.engine).containers.get(self.container_name)
        except docker.errors.NotFound:
            return None

    def _status(self) -> str:
        c = self.container()
        return c.status if c is not None else "absent"

    @property
    def pid(self) -> int | None:
        c = self.container()
        if c is None or c.status not in ("running", "paused"):
            return None
        return int(c.attrs["State"]["Pid"]) or None

    def is_running(self) -> bool:
        return self._status() in ("running", "paused")

    def is_paused(self) -> bool:
        return self._status() == "paused"

    def stop(self, timeout: float = 30.0) -> None:
        c = self.container()
        if c is not None and c.status in ("running", "paused"):
            if c.status == "paused":
                c.unpause()
            c.stop(timeout=int(timeout))

    def kill(self) -> None:
        """kill -9 of the container's main process, as a crash would."""
        c = self.container()
        if c is not None and c.status in ("running", "paused"):
            c.kill(signal="SIGKILL")
            poll(lambda: not self.is_running(), timeout_s=10, every_s=0.1)

    def pause(self) -> None:
        """Freeze the container (cgroup freezer): it holds its ports but answers nothing."""
        c = self.container()
        if c is not None and c.status == "running":
            c.pause()

    def resume(self) -> None:
        c = self.container()
        if c is not None and c.status == "paused":
            c.unpause()

    def rss_bytes(self) -> int:
        pid = self.pid
        if pid is None:
            return 0
        total = 0
        try:
            proc = psutil.Process(pid)
            for p in [proc, *proc.children(recursive=True)]:
                total += p.memory_info().rss
        except psutil.Error:
            pass
        return total

    def log_tail(self, lines: int = 40) -> str:
        c = self.container()
        if c is None:
            return "(no container)"
        return str(c.logs(tail=lines).decode(errors="replace"))

    def remove(self) -> None:
        c = self.container()
        if c is not None:
            c.remove(force=True)


class ContainerService(LocalService):
    """Lifecycle of a service whose process is a container; the rest is the local class's."""

    spec: ContainerSpec
    image: str
    network: str

    def attach(self, spec: ContainerSpec, project: str, engine: Engine) -> None:
        self.spec = spec
        self.image = {**LOCAL_IMAGES, **OPTIONAL_IMAGES}[self.name]
        self.network = f"{project}_default"
        self.process = ContainerProcess(  # type: ignore[assignment]
            self.name, project, self.state_dir, engine
        )

    @property
    def container_process(self) -> ContainerProcess:
        assert isinstance(self.process, ContainerProcess)
        return self.process

    def start(self) -> float:
        """Create the container (or start the existing one), then wait for readiness."""
        proc = self.container_process
        started = time.monotonic()
        existing = proc.container()
        # Containers this backend made carry a digest of their settings; compose's do not and
        # are taken as they are.
        digest = existing.labels.get(SETTINGS_LABEL) if existing is not None else None
        if existing is not None and digest is not None and digest != self.settings_digest():
            say(f"{self.name}: settings or image changed, recreating its container")
            existing.remove(force=True)
            existing = None
        if existing is None:
            try:
                self._create().start()
            except ServiceStartTimeout:
                raise
            except Exception as error:
                # The engine timed out or failed between creating and starting the container.
                existing = proc.container()
                if existing is None:
                    raise
                say(f"{self.name}: {type(error).__name__} from the engine; starting it again")
        if existing is not None:
            if existing.status == "paused":
                existing.unpause()
            elif existing.status != "running":
                existing.start()
            wait_ready(self.name, self.readiness(), proc, self.config.start_timeout)
        self.after_start()
        return time.monotonic() - started

    def settings_digest(self) -> str:
        """A digest of the container's settings and its image, stored as a label."""
        image = docker_client(self.container_process.engine).images.get(self.image).id
        text = repr((image, sorted(self.spec.environment.items()), self.spec.command))
        text += repr((sorted(self.spec.ports.items()), sorted(self.spec.files.items())))
        return hashlib.sha256(text.encode()).hexdigest()[:24]

    def _create(self) -> Any:
        from testcontainers.core.container import DockerContainer
        from testcontainers.core.network import Network

        spec = self.spec
        self.state_dir.mkdir(parents=True, exist_ok=True)
        container = (
            DockerContainer(self.image)
            .with_name(self.container_process.container_name)
            .with_envs(**spec.environment)
            .with_volume_mapping(str(self.state_dir), str(spec.state_dir), mode="rw")
            .with_network_aliases(spec.hostname)
            .waiting_for(
                _readiness_wait(self.readiness(), self.container_process, self.config.start_timeout)
            )
        )
        network = Network()
        network.name = self.network
        container.with_network(network)
        for inside, outside in spec.ports.items():
            # Published on the host's loopback only (docker-py takes (address, port)).
            container.ports[f"{inside}/tcp"] = ("127.0.0.1", outside)  # type: ignore[assignment]
        if spec.command:
            container.with_command(list(spec.command))
        if spec.files and spec.files_target is not None:
            folder = self.state_dir / "etc"
            for name, text in spec.files.items():
                (folder / name).parent.mkdir(parents=True, exist_ok=True)
                (folder / name).write_text(text)
            container.with_volume_mapping(str(folder), str(spec.files_target), mode="ro")
        labels = {
            "com.docker.compose.project": self.network.removesuffix("_default"),
            "com.docker.compose.service": self.name,
            SETTINGS_LABEL: self.settings_digest(),
        }
        container.with_kwargs(labels=labels, hostname=spec.hostname)
        return container


class KafkaContainer(ContainerService, Kafka):
    """Kafka in a container."""


class MinioContainer(ContainerService, Minio):
    """MinIO in a container."""


class CatalogContainer(ContainerService, Catalog):
    """The Iceberg REST catalog in a container."""


class GlueContainer(ContainerService, Glue):
    """The Glue-compatible catalog (ministack) in a container, on a stack whose catalog is Glue."""


class TrinoContainer(ContainerService, Trino):
    """Trino in a container."""


class ContainerStack(Stack):
    """The stack with every service in a container, on the locally built images; its catalog
    is the REST server's container, or ministack's with ``[stack] catalog = "glue"``."""

    backend = "containers"
    # One container at a time, in the order the services need each other: podman's API, asked
    # to create and start four containers at once on a busy machine, has left some created and
    # never started.
    start_waves = (("minio",), ("kafka",), ("catalog",), ("trino",))

    def __init__(self, config: StackConfig | None = None) -> None:
        self.config = config or load_config()
        self.credentials: S3Credentials = load_or_create(self.config.run_dir)
        self.engine = Engine(self.config.run_dir)
        self.project = project_name(self.config.run_dir)
        self.own_containers = f"{self.project}_"
        specs = container_specs(self.config, self.credentials, str(self.config.kafka_port))
        self.kafka = KafkaContainer(self.config, self.credentials)
        self.minio = MinioContainer(self.config, self.credentials)
        catalog: GlueContainer | CatalogContainer = (
            GlueContainer(self.config, self.credentials)
            if self.config.catalog == Glue.kind
            else CatalogContainer(self.config, self.credentials)
        )
        self.catalog = catalog
        self.trino = TrinoContainer(self.config, self.credentials)
        for service in (self.kafka, self.minio, catalog, self.trino):
            service.attach(specs[service.name], self.project, self.engine)

    def up(self) -> float:
        self._ensure_network()
        took = super().up()
        (self.config.run_dir / BACKEND_FILE).write_text(self.backend + "\n")
        return took

    def _ensure_network(self) -> None:
        import docker.errors

        client = docker_client(self.engine)
        name = f"{self.project}_default"
        try:
            client.networks.get(name)
        except docker.errors.NotFound:
            labels = {"com.docker.compose.project": self.project}
            client.networks.create(name, driver="bridge", labels=labels)

    def down(self) -> None:
        """Stop every container (Trino first), remove them and their network, stop the socket.

        State stays in the run directory, as the local stack's does.
        """
        import docker.errors

        super().down()
        for service in self.services.values():
            assert isinstance(service, ContainerService)
            service.container_process.remove()
        with contextlib.suppress(docker.errors.NotFound):
            docker_client(self.engine).networks.get(f"{self.project}_default").remove()
        (self.config.run_dir / BACKEND_FILE).unlink(missing_ok=True)
        say(f"removed the containers of {self.project}")
        _CLIENTS.pop(self.engine.docker_host, None)
        self.engine.stop()  # the API service this run directory started, if any
