"""The loader's layout holds: the core imports no extension, and a plain loader runs without any.

``loader/commit/`` is the exactly-once protocol; the extensions (``loader/ext/``) and the test
kit's hooks (``loader/testing/``) import the core, never the other way round. Outside the
extensions, an extension is imported only where the configuration plugs it in, inside the
function that does so (``PLUG_POINTS``), never when a module is imported. So a loader
configured without transforms, without the fast path and the first slice, and with no test
variable set, runs without their code: checked in a fresh interpreter, by what it imported.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from icefloe import loader

ROOT = Path(loader.__file__).parent

OPT_IN = ("icefloe.loader.ext", "icefloe.loader.testing")
"""The packages imported only when the configuration (or the test kit) asks for them."""

PLUG_POINTS = {
    # reads [transform] settings when set
    "icefloe.loader.config": {"icefloe.loader.ext.transforms"},
    "icefloe.loader.decode.record": {"icefloe.loader.ext.transforms"},  # applies them when set
    "icefloe.loader.run.job": {
        "icefloe.loader.ext.classdata",
        "icefloe.loader.ext.fastpath.onepass",
        "icefloe.loader.ext.firstslice",
        "icefloe.loader.testing.faultpoints",
    },
}
"""Where an extension is plugged in, and which: inside a function, when configured."""


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT.parents[1]).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


EAGER, LAZY, TYPING = "when imported", "inside a function", "for type checkers"


def _imports(path: Path) -> list[tuple[str, str]]:
    """Every ``loader.*`` module ``path`` imports, and when: ``EAGER`` (when the module is
    imported), ``LAZY`` (inside a function) or ``TYPING`` (under ``if TYPE_CHECKING:``)."""
    found: list[tuple[str, str]] = []

    def visit(node: ast.AST, when: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                found.extend(
                    (a.name, when) for a in child.names if a.name.startswith("icefloe.loader")
                )
            elif isinstance(child, ast.ImportFrom) and (child.module or "").startswith(
                "icefloe.loader"
            ):
                assert child.module is not None
                found.append((child.module, when))
                found.extend((f"{child.module}.{a.name}", when) for a in child.names)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                visit(child, TYPING if when == TYPING else LAZY)
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                visit(child, TYPING)
            else:
                visit(child, when)

    visit(ast.parse(path.read_text(encoding="utf-8")), EAGER)
    return found


def _within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


SOURCES = sorted(ROOT.rglob("*.py"))


def test_the_core_imports_no_extension_nor_what_runs_it() -> None:
    """``loader/commit/`` names neither an extension nor the test kit's hooks, not even for
    type checkers or inside a function; nor the job that drives it."""
    core = [p for p in SOURCES if _module(p).startswith("icefloe.loader.commit")]
    assert len(core) >= 5
    wrong = [
        f"{_module(path)} imports {name} {when}"
        for path in core
        for name, when in _imports(path)
        if _within(name, (*OPT_IN, "icefloe.loader.run", "icefloe.loader.cli"))
    ]
    assert wrong == []


def test_extensions_are_imported_only_where_they_are_plugged_in() -> None:
    """Outside ``loader/ext/`` and ``loader/testing/`` an extension is imported inside a
    function of its plug point, or named for type checkers only; the extensions themselves
    build on the core."""
    wrong = []
    for path in SOURCES:
        module = _module(path)
        if _within(module, OPT_IN):
            continue
        for name, when in _imports(path):
            if not _within(name, OPT_IN) or when == TYPING:
                continue
            plugged = PLUG_POINTS.get(module, set())
            # ``from loader.ext import transforms`` names the package too.
            allowed = _within(name, tuple(plugged)) or any(
                p.startswith(name + ".") for p in plugged
            )
            if when == EAGER or not allowed:
                wrong.append(f"{module} imports {name} {when}")
    assert wrong == []
    onepass = _imports(ROOT / "ext" / "fastpath" / "onepass.py")
    assert any(_within(name, ("icefloe.loader.commit",)) for name, _ in onepass)


PROBE = """
import json, sys
from pathlib import Path

from icefloe.loader import cli
from icefloe.loader.commit import sink
from icefloe.loader.config import load_config
from icefloe.loader.decode.batch import decode_arrow
from icefloe.loader.decode.record import KafkaMeta, RecordDecoder
from icefloe.loader.run.job import LoaderJob
from icefloe.loader.run import status
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField
import pyarrow as pa

config = load_config(sys.argv[1], env={})
job = LoaderJob(config)  # plugs in what the configuration asks for
schema = Schema(NestedField(1, "a", LongType(), required=False))
decoder = RecordDecoder(schema, config.decode)
decoder.decode(b'{"data": {"a": 1}, "a": 1}', KafkaMeta("t", 0, 0))
records = pa.table({
    "key": pa.array([None], pa.binary()), "value": pa.array([b'{"data": {"a": 1}}'], pa.binary()),
    "topic": ["t"], "partition": pa.array([0], pa.int32()), "offset": pa.array([0], pa.int64()),
    "timestamp": pa.array([0], pa.timestamp("ms")),
    "headers": pa.array([[]], pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
})
decode_arrow(records, decoder)
print(json.dumps(sorted(m for m in sys.modules if m.startswith("icefloe.loader"))))
"""

PLAIN = """
table = "lake.s.t"
jvm_decode = false
metrics_port = 0
[kafka]
bootstrap = "127.0.0.1:1"
topics = ["t"]
first_slice_records = 0
[catalog]
uri = "http://127.0.0.1:1"
"""

EVERYTHING = (
    PLAIN.replace("jvm_decode = false", "jvm_decode = true").replace(
        "first_slice_records = 0", "first_slice_records = 10"
    )
    + '[transform]\nunnest = "/data"\n[spark]\nclass_data = "{class_data}"\n'
)


def _imported(tmp_path: Path, config: str, env: dict[str, str]) -> list[str]:
    path = tmp_path / "loader.toml"
    path.write_text(config)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ICEFLOE_", "PYSPARK_"))}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(path)],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    modules: list[str] = json.loads(done.stdout.splitlines()[-1])
    return modules


def test_a_plain_configuration_never_imports_the_extensions(tmp_path: Path) -> None:
    """No transforms, no fast path, no first slice, no class-data archive, no test variable:
    the configuration is read, the job built with its plug-ins, a record decoded, and not one
    module of ``loader/ext/`` or ``loader/testing/`` is imported."""
    modules = _imported(tmp_path, PLAIN, {})
    assert "icefloe.loader.commit.sink" in modules and "icefloe.loader.run.job" in modules
    assert [m for m in modules if _within(m, OPT_IN)] == []


@pytest.mark.parametrize(
    ("config", "env", "expected"),
    [
        pytest.param(
            EVERYTHING,
            {},
            {
                "icefloe.loader.ext.transforms",
                "icefloe.loader.ext.fastpath.onepass",
                "icefloe.loader.ext.firstslice",
                "icefloe.loader.ext.classdata",
            },
            id="configured",
        ),
        pytest.param(
            PLAIN,
            {"ICEFLOE_TEST_TRACE": "trace"},
            {"icefloe.loader.testing.faultpoints"},
            id="test-kit",
        ),
    ],
)
def test_what_is_configured_is_imported(
    tmp_path: Path, config: str, env: dict[str, str], expected: set[str]
) -> None:
    """The probe above sees an extension when one is there to see."""
    config = config.replace("{class_data}", str(tmp_path / "loader.jsa"))
    modules = set(_imported(tmp_path, config, env))
    assert expected <= modules
