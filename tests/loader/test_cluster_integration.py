"""Cluster mode: the loader alone, submitted with spark-submit to a standalone Spark cluster.

A standalone master and one worker (1 core, 1 GiB) are started from the
pyspark package's own launch scripts, on loopback and fresh ports.  The loader
is submitted as ``spark-submit --master spark://... --jars <provisioned jars>
--py-files loader.zip run_loader.py run --config FILE``: the same entry point
(a copy of ``loader/__main__.py``) and configuration file as in local mode,
with master and jars taken from the submit command.

The loader ships alone, as it would to a cluster whose machines do not have the
project installed: a zip of ``loader/`` and nothing else. The third-party
libraries (pyarrow, pyiceberg) come from the interpreter named by
``PYSPARK_PYTHON``, the project's virtualenv, whose own view of the project is
switched off for every Python process of the run (driver, executors' workers)
by a ``sitecustomize`` on ``PYTHONPATH``: ``harness``, ``publisher`` and the
working copy's ``loader`` cannot be imported, so the loader that runs is the
one in the zip, and it runs without the harness.

The S3 secret stays in the 0600 file the configuration names; nothing secret
is on any command line.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.loaders.cluster import (
    Cluster,
    Daemon,
    master_state,
    python_children,
    spark_env,
    standalone_cluster,
    submit_argv,
)
from icefloe.harness.stack.tables import EVENT_ID_COLUMN
from tests.loader.conftest import loader_env, reference_values, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def loader_zip(dest: Path) -> Path:
    """The ``loader`` package, and nothing else, as a zip for ``--py-files``."""
    with zipfile.ZipFile(dest, "w") as zf:
        for path in sorted((ROOT / "loader").rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                zf.write(path, path.relative_to(ROOT).as_posix())
    return dest


# Run by every Python process of the cluster run (site imports it after the virtualenv's .pth
# files): the editable install's finders go, and the project's packages become unimportable.
_WITHOUT_PROJECT = """
import sys
def project(hook):
    return getattr(hook, "__module__", "").startswith("__editable__")
sys.meta_path[:] = [f for f in sys.meta_path if not project(f)]
sys.path_hooks[:] = [h for h in sys.path_hooks if not project(h)]
for name in ("harness", "publisher", "tests"):
    sys.modules[name] = None
"""


def without_project(folder: Path) -> Path:
    """A folder for ``PYTHONPATH`` whose ``sitecustomize`` hides the project's own packages."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(_WITHOUT_PROJECT)
    return folder


@pytest.fixture
def cluster(stack: Any, tmp_path: Path) -> Iterator[Cluster]:
    """A standalone master and one worker (1 core, 1 GiB), no project on any ``PYTHONPATH``."""
    pythonpath = str(without_project(tmp_path / "without-project"))
    env = spark_env(tmp_path, stack.config.cache_dir, loader_env(), pythonpath)
    with standalone_cluster(tmp_path, env) as running:
        yield running


def test_spark_submit_on_a_standalone_cluster_loads_exactly_once(
    stack: Any,
    cluster: Cluster,
    table_factory: Any,
    topic_factory: Any,
    produce: Any,
    loader_config: Any,
    tmp_path: Path,
) -> None:
    env = cluster.env
    shipped = loader_zip(tmp_path / "loader.zip")
    entry = tmp_path / "run_loader.py"
    entry.write_text((ROOT / "loader" / "__main__.py").read_text())
    # What every process of the run sees: no harness, and the loader only from the zip.
    probe = "import importlib.util as u, loader; print(loader.__file__, u.find_spec('harness'))"
    seen = subprocess.run(
        [sys.executable, "-c", probe],
        env={**env, "PYTHONPATH": f"{shipped}:{env['PYTHONPATH']}"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert seen.stdout.split() == [f"{shipped}/loader/__init__.py", "None"], seen.stderr
    table, topic = table_factory(extra_columns=EVENT_ID_COLUMN), topic_factory(partitions=2)
    rows = [v for _, v in reference_values(400, seed=21)]
    produce(topic, rows[:150], partition=0)
    produce(topic, rows[150:300], partition=1)
    loader_id = f"cluster-{time.monotonic_ns()}"
    path, _ = loader_config(table, [topic], loader_id=loader_id)
    submit = Daemon(
        submit_argv(
            cluster,
            stack.config.cache_dir,
            entry,
            ["run", "--config", str(path)],
            py_files=shipped,
        ),
        env,
        tmp_path / "submit.log",
        tmp_path,
    )
    try:

        def loaded(n: int) -> bool:
            if submit.proc.poll() is not None:
                pytest.fail(f"loader exited with {submit.proc.returncode}:\n{submit.tail()}")
            ((count,),) = stack.query(f"SELECT count(*) FROM {table}")
            return bool(count >= n)

        wait_until(lambda: loaded(300), 300, "300 rows via the cluster", step_s=2)
        # The application ran on the standalone master, not in a local Spark.
        apps = [a["name"] for a in master_state(cluster.ui_port).get("activeapps", [])]
        assert f"icefloe-loader-{loader_id}" in apps, apps
        produce(topic, rows[300:], partition=0)
        wait_until(lambda: loaded(400), 180, "the next 100 rows", step_s=2)
        # A graceful stop as an operator would: SIGTERM to the driver's Python
        # (the loader's handler), which ends the application and spark-submit.
        (driver,) = python_children(submit.proc.pid)
        os.kill(driver, signal.SIGTERM)
        assert submit.proc.wait(120) == 0, submit.tail()
    finally:
        submit.stop(signal.SIGKILL, timeout_s=10)
    ((total, distinct),) = stack.query(f"SELECT count(*), count(DISTINCT event_id) FROM {table}")
    assert (total, distinct) == (400, 400)
