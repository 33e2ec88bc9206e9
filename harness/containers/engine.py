"""The container engine: podman serving the Docker API on a socket, configured by the project.

podman reads its settings from `containers/containers.conf` (through CONTAINERS_CONF), never from
edits to the machine's /etc. When DOCKER_HOST is already set (a machine with Docker), that engine
is used as it is. Otherwise `podman system service` is started on a socket in the run directory,
as a managed process, and every client (docker-compose, testcontainers, docker-py) is pointed at
it through the environment that `client_environment()` returns.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from icefloe.harness.console import say
from icefloe.harness.resources import kit_file
from icefloe.harness.stack.process import ManagedProcess

CONTAINERS_DIR = kit_file("containers")
CONTAINERS_CONF = CONTAINERS_DIR / "containers.conf"
INSTALL_SCRIPT = CONTAINERS_DIR / "install-engine.sh"

# testcontainers: no reaper container (it would need an image from a registry), and talk to the
# socket directly (with /.dockerenv present it otherwise looks for a gateway and fails).
_TESTCONTAINERS_ENV = {
    "TESTCONTAINERS_RYUK_DISABLED": "true",
    "TESTCONTAINERS_CONNECTION_MODE": "docker_host",
}


class EngineUnavailable(RuntimeError):
    """No container engine: neither DOCKER_HOST nor podman."""


def _ping(path: Path) -> bool:
    """True when a Docker API answers on the unix socket at `path`."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(2)
            s.connect(str(path))
            s.sendall(b"GET /_ping HTTP/1.0\r\nHost: d\r\n\r\n")
            return b" 200 " in s.recv(256)
    except OSError:
        return False


@dataclass(frozen=True)
class Engine:
    """The engine of one run directory."""

    run_dir: Path

    @property
    def state_dir(self) -> Path:
        return self.run_dir / "podman"

    @property
    def socket(self) -> Path:
        return self.state_dir / "podman.sock"

    @property
    def external(self) -> str | None:
        """DOCKER_HOST when the user has an engine of their own (not this run's socket)."""
        host = os.environ.get("DOCKER_HOST") or None
        return None if host == f"unix://{self.socket}" else host

    @property
    def docker_host(self) -> str:
        return self.external or f"unix://{self.socket}"

    @property
    def cli(self) -> str:
        """The command-line client used for building and importing images."""
        if shutil.which("podman"):
            return "podman"
        if self.external and shutil.which("docker"):
            return "docker"
        raise EngineUnavailable(
            f"no podman on this machine: install it with `bash {INSTALL_SCRIPT}`"
            " (or `make container-engine`)"
        )

    def cli_environment(self) -> dict[str, str]:
        """Environment for podman (or docker) commands."""
        env = dict(os.environ)
        env["CONTAINERS_CONF"] = str(CONTAINERS_CONF)
        return env

    def client_environment(self) -> dict[str, str]:
        """The variables Docker API clients need (DOCKER_HOST, testcontainers' settings)."""
        return {"DOCKER_HOST": self.docker_host, **_TESTCONTAINERS_ENV}

    def process(self) -> ManagedProcess:
        return ManagedProcess("podman", self.state_dir)

    def ensure_running(self, timeout: float = 30.0) -> None:
        """Serve the Docker API (podman) unless an engine answers already; export its settings.

        Raises:
            EngineUnavailable: no podman and no DOCKER_HOST, or the socket never answered.
        """
        answering = bool(self.external) or _ping(self.socket)
        os.environ.update(self.client_environment())
        os.environ["CONTAINERS_CONF"] = str(CONTAINERS_CONF)
        if answering:
            return
        cli = self.cli
        if cli != "podman":
            raise EngineUnavailable(f"DOCKER_HOST={self.external} does not answer")
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.socket.unlink(missing_ok=True)
        proc = self.process()
        argv = ["podman", "system", "service", "--time=0", f"unix://{self.socket}"]
        proc.start(argv, self.cli_environment(), cwd=self.state_dir)
        deadline = time.monotonic() + timeout
        while not _ping(self.socket):
            if not proc.is_running() or time.monotonic() > deadline:
                raise EngineUnavailable(f"podman's API socket did not answer:\n{proc.log_tail()}")
            time.sleep(0.2)
        say(f"podman serves the Docker API on {self.socket}")

    def stop(self) -> None:
        """Stop the podman API service this run directory started (containers keep running)."""
        self.process().stop(10)

    def run(self, *args: str, check: bool = True, capture: bool = True) -> str:
        """Run the engine's command-line client with the project's settings; return stdout."""
        result = subprocess.run(
            [self.cli, *args],
            env=self.cli_environment(),
            check=False,
            capture_output=capture,
            text=True,
        )
        if check and result.returncode != 0:
            raise RuntimeError(f"{self.cli} {' '.join(args)} failed:\n{result.stderr}")
        return result.stdout or ""
