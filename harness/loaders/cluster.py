"""A local Spark standalone cluster: a master and N workers from the pyspark package's own scripts.

The cluster test (`tests/loader/test_cluster_integration.py`) and `icefloe bench` submit the
loader to it with ``spark-submit --master spark://...``. Every daemon listens on loopback and on
fresh ports, runs the provisioned JDK, and keeps its log in the cluster's folder; each one runs
in its own process group, so stopping it also ends the executors and Python workers it started.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from icefloe.harness.loaders.config import provisioned_spark
from icefloe.harness.waiting import poll

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def free_port() -> int:
    """A port nothing listens on now (the kernel's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pyspark_home() -> Path:
    """The installed pyspark package: its ``bin/`` holds spark-class and spark-submit."""
    import pyspark

    return Path(pyspark.__file__).parent


def spark_env(
    folder: Path, cache: Path, base: Mapping[str, str], pythonpath: str | None = None
) -> dict[str, str]:
    """Environment for the cluster daemons and spark-submit: loopback, our JDK and Python.

    Args:
        folder: the cluster's folder (local dirs and logs go below it).
        cache: the provisioning cache (the JDK).
        base: the environment to start from.
        pythonpath: ``PYTHONPATH`` for every process of the run, if any.
    """
    env = dict(base)
    env.update(
        {
            "JAVA_HOME": str(provisioned_spark(cache).java_home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOCAL_DIRS": str(folder / "local"),
            "SPARK_LOG_DIR": str(folder / "logs"),
            "SPARK_DAEMON_MEMORY": "256m",
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
        }
    )
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    env.pop("SPARK_HOME", None)  # the pyspark package's scripts find their own
    env.pop("PYSPARK_GATEWAY_PORT", None)
    return env


class Daemon:
    """A process started in its own process group, output in a log file."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], log: Path, cwd: Path) -> None:
        self.log = log
        self._out = log.open("ab")
        self.proc = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 60) -> int | None:
        """Signal the whole group, then SIGKILL it if it outlives ``timeout_s``."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait(30)
        finally:
            # Children (executors, Python workers) may outlive the leader.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self._out.close()

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def python_children(pid: int) -> list[int]:
    """Python processes started by ``pid`` (spark-submit's JVM starts the driver's Python)."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            if cmdline and Path(os.fsdecode(cmdline[0])).name.startswith("python"):
                out.append(int(child))
    return out


def master_state(ui_port: int) -> dict[str, Any]:
    """The master's state as its web UI serves it (``/json/``): workers, applications."""
    with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as resp:
        state: dict[str, Any] = json.load(resp)
    return state


@dataclass(frozen=True)
class Cluster:
    """A running standalone cluster.

    Attributes:
        url: the master's ``spark://`` URL.
        ui_port: the master's web UI port (``master_state``).
        env: the environment its daemons run with (spark-submit should use it too).
        folder: where its logs and work directories are.
    """

    url: str
    ui_port: int
    env: dict[str, str]
    folder: Path


@contextlib.contextmanager
def standalone_cluster(
    folder: Path,
    env: Mapping[str, str],
    *,
    workers: int = 1,
    worker_cores: int = 1,
    worker_memory: str = "1g",
    timeout_s: float = 120,
) -> Iterator[Cluster]:
    """Start a master and ``workers`` workers; yield once every worker registered; stop them.

    Args:
        folder: the cluster's folder (made if missing).
        env: from ``spark_env``.
        workers: how many workers.
        worker_cores: cores each worker offers.
        worker_memory: memory each worker offers.
        timeout_s: how long the workers may take to register.

    Raises:
        TimeoutError: not every worker registered in time (with the tail of the logs).
    """
    for sub in ("local", "logs", "work"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    port, ui = free_port(), free_port()
    spark_class = str(pyspark_home() / "bin" / "spark-class")
    url = f"spark://127.0.0.1:{port}"
    daemons: list[Daemon] = []
    try:
        master_argv = [spark_class, MASTER_CLASS, "--host", "127.0.0.1"]
        master_argv += ["--port", str(port), "--webui-port", str(ui)]
        daemons.append(Daemon(master_argv, env, folder / "master.log", folder))
        for n in range(workers):
            worker_argv = [spark_class, WORKER_CLASS, url, "--host", "127.0.0.1"]
            worker_argv += ["--webui-port", str(free_port()), "--cores", str(worker_cores)]
            worker_argv += ["--memory", worker_memory, "--work-dir", str(folder / "work")]
            daemons.append(Daemon(worker_argv, env, folder / f"worker-{n}.log", folder))
        alive = poll(
            lambda: _alive_workers(ui), lambda n: n >= workers, timeout_s=timeout_s, every_s=1
        )
        if alive < workers:
            logs = "\n".join(d.tail(10) for d in daemons)
            raise TimeoutError(f"{workers} Spark workers did not register:\n{logs}")
        yield Cluster(url, ui, dict(env), folder)
    finally:
        for daemon in reversed(daemons):
            daemon.stop()


def _alive_workers(ui_port: int) -> int:
    try:
        return int(master_state(ui_port).get("aliveworkers", 0))
    except OSError:
        return 0


def submit_argv(
    cluster: Cluster,
    cache: Path,
    entry: Path,
    args: Sequence[str],
    *,
    py_files: Path | None = None,
    executor_memory: str = "512m",
    driver_memory: str = "768m",
) -> list[str]:
    """spark-submit running ``entry args...`` on ``cluster`` with the provisioned jars.

    Args:
        cluster: where to run.
        cache: the provisioning cache (the jars).
        entry: the driver's script.
        args: its arguments.
        py_files: a zip for ``--py-files``, if any.
        executor_memory: each executor's heap.
        driver_memory: the driver's heap.
    """
    argv = [str(pyspark_home() / "bin" / "spark-submit"), "--master", cluster.url]
    argv += ["--jars", ",".join(provisioned_spark(cache).jars)]
    if py_files is not None:
        argv += ["--py-files", str(py_files)]
    argv += ["--executor-memory", executor_memory, "--driver-memory", driver_memory]
    return [*argv, str(entry), *args]
