"""The loader stands alone: it imports, configures and decodes with no harness to import.

On a cluster there is no harness and no publisher; only the ``loader`` package and its
third-party libraries. A fresh interpreter with ``harness`` and ``publisher`` blocked imports
every loader module, builds a configuration from a file and the environment, runs the pure
pipeline the sink runs (decode, summarize, merge), and, asked to run without jars outside
spark-submit, stops with a message saying what to set.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = r"""
import importlib, io, json, pkgutil, sys
from contextlib import redirect_stderr

sys.modules["icefloe.harness"] = None  # `from icefloe import harness` now raises ImportError
sys.modules["icefloe.publisher"] = None
try:
    from icefloe import harness
    raise SystemExit("harness is importable")
except ImportError:
    pass

from icefloe import loader
for module in pkgutil.iter_modules(loader.__path__):
    importlib.import_module(f"icefloe.loader.{module.name}")

import pyarrow as pa
from pyiceberg import types as it
from pyiceberg.schema import Schema

from icefloe.loader.decode.batch import REJECT_COLUMN, decode_arrow, merge_side
from icefloe.loader.cli import main
from icefloe.loader.config import load_config
from icefloe.loader.decode.record import RecordDecoder

config = load_config(sys.argv[1])
schema = Schema(it.NestedField(1, "id", it.LongType(), required=False))
headers = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
records = pa.table({
    "key": pa.array([None, None], pa.binary()),
    "value": pa.array([b'{"id": 1}', b"{bad"], pa.binary()),
    "topic": ["t", "t"],
    "partition": pa.array([0, 0], pa.int32()),
    "offset": pa.array([10, 11], pa.int64()),
    "timestamp": pa.array([0, 1], pa.timestamp("ms", tz="UTC")),
    "headers": pa.array([None, None], headers),
})
decoded = decode_arrow(records, RecordDecoder(schema, config.decode))
summary = [{"topic": "t", "partition": 0, "lo": 10, "hi": 11, "n": 2, "timestamp_ms": 1}]
side = merge_side(summary, [r for r in decoded.column(REJECT_COLUMN).to_pylist() if r])
err = io.StringIO()
with redirect_stderr(err):
    code = main(["run", "--config", sys.argv[1]])
print(json.dumps({
    "table": str(config.table),
    "rows": [r["id"] for r in decoded.to_pylist() if r[REJECT_COLUMN] is None],
    "ranges": [list(r) for r in side.ranges],
    "rejects": [r.error.kind.value for r in side.rejects],
    "run": [code, err.getvalue()],
    "modules": sorted(
        m for m, mod in sys.modules.items()
        if m.split(".")[:2] in (["icefloe", "harness"], ["icefloe", "publisher"])
        and mod is not None
    ),
}))
"""

CONFIG = """
table = "lake.demo.events"
metrics_port = 0
[kafka]
bootstrap = "127.0.0.1:1"
topics = ["events"]
[catalog]
uri = "http://127.0.0.1:1"
"""


def test_the_loader_runs_with_the_harness_impossible_to_import(tmp_path: Path) -> None:
    config = tmp_path / "loader.toml"
    config.write_text(CONFIG)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ICEFLOE_", "PYSPARK_"))}
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(config)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.splitlines()[-1])
    assert got["table"] == "lake.demo.events"
    assert got["rows"] == [1]
    assert got["ranges"] == [["t", 0, 10, 12]]
    assert got["rejects"] == ["invalid_json"]
    code, message = got["run"]
    assert code == 1
    assert "no Spark jars: set [spark] jars (ICEFLOE_LOADER_SPARK_JARS, --spark-jars)" in message
    assert got["modules"] == []
