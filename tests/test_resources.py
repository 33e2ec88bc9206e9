"""The kit finds its own files as package data, never from where the checkout's root lies.

Two proofs: no shipped module computes a path above its own package folder from ``__file__``
(a new one fails here, by file and line), and a wheel built from this checkout, imported from
a folder outside it, finds every built-in scenario, the hostile inputs, the containers' build
files and the example loader, and knows it is not a checkout.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from icefloe.harness import resources
from tests.wheel import CHECKOUT, build_wheel

SHIPPED = ("harness", "loader", "publisher")
ALLOWED = {"harness/resources.py"}
"""The one module that may say where the kit lies (and the checkout, when it is one)."""
TEMPLATES = "harness/scaffold/templates/"
"""Files `icefloe init` copies into a user's repository: theirs to run there, not the kit's."""

_ABOVE = re.compile(
    r"__file__\)?[\w.()]*?\.(parents\[|parent\.parent)"  # Path(__file__).resolve().parents[2]
    r"|dirname\(\s*(os\.path\.)?dirname\(\s*(os\.path\.)?(abspath\()?__file__"
)


def reaches_above_its_package(source: str) -> list[int]:
    """The lines of ``source`` that compute a path above their own folder from ``__file__``."""
    return [n for n, line in enumerate(source.splitlines(), 1) if _ABOVE.search(line)]


def test_the_scan_finds_each_way_of_climbing_to_the_checkout() -> None:
    for line in (
        "ROOT = Path(__file__).resolve().parents[2]",
        'ROOT = Path(__file__).parents[1] / "scenarios"',
        "ROOT = Path(__file__).parent.parent",
        "ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))",
    ):
        assert reaches_above_its_package(line) == [1], line
    for line in (
        'SPEC = Path(__file__).with_name("flink.toml")',
        "HERE = Path(__file__).parent",
        "JARS = Path(pyspark.__file__).parent / 'jars'",
    ):
        assert reaches_above_its_package(line) == [], line


def test_no_shipped_module_computes_a_path_from_the_checkouts_root() -> None:
    sources = [p for folder in SHIPPED for p in sorted((CHECKOUT / folder).rglob("*.py"))]
    assert len(sources) > 200
    found = {
        f"{path.relative_to(CHECKOUT).as_posix()}:{line}"
        for path in sources
        if path.relative_to(CHECKOUT).as_posix() not in ALLOWED
        and not path.relative_to(CHECKOUT).as_posix().startswith(TEMPLATES)
        for line in reaches_above_its_package(path.read_text(encoding="utf-8"))
    }
    assert not found, f"read these through icefloe.harness.resources: {sorted(found)}"


def test_in_this_checkout_the_kit_knows_its_checkout() -> None:
    assert resources.checkout() == CHECKOUT
    assert resources.kit_file("scenarios") == (CHECKOUT / "scenarios").resolve()


_PROBE = """
import json, icefloe
from icefloe.harness import resources
from icefloe.harness.scenarios.model import SCENARIO_DIR, discover
from icefloe.harness.cli.conformance import SEMANTICS
from icefloe.harness.containers.engine import CONTAINERS_DIR
print(json.dumps({
    "package": icefloe.__file__,
    "scenarios": [s.name for s in discover()],
    "scenario_dir": str(SCENARIO_DIR),
    "semantics": SEMANTICS.is_file(),
    "containerfiles": len(list(CONTAINERS_DIR.glob("*/Containerfile"))),
    "example": resources.kit_file("examples", "loaders", "pyiceberg", "loader.toml").is_file(),
    "checkout": str(resources.checkout()),
    "commit": resources.commit(),
}))
"""


@pytest.mark.integration  # builds a wheel: pip fetches setuptools from PyPI
def test_a_wheel_imported_outside_the_checkout_finds_every_file_it_needs(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    work = tmp_path / "work"
    work.mkdir()
    (work / "loader.py").write_text("raise SystemExit('a user file, not the kit')\n")
    # PYTHONPATH comes before the virtualenv's entry for this checkout: the wheel's icefloe wins.
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=False, cwd=work,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        timeout=120,
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr
    seen = json.loads(probe.stdout)
    assert Path(seen["package"]).is_relative_to(site)
    assert Path(seen["scenario_dir"]).is_relative_to(site)
    builtin = sorted(p.stem for p in (CHECKOUT / "scenarios").glob("*.toml"))
    assert sorted(seen["scenarios"]) == builtin
    assert seen["semantics"] and seen["example"]
    assert seen["containerfiles"] == len(list((CHECKOUT / "containers").glob("*/Containerfile")))
    assert seen["checkout"] == "None" and seen["commit"] is None
    # The installed kit writes a loader's repository, and finds that repository's scenarios.
    cli = [sys.executable, "-m", "icefloe.harness.cli.main"]
    env = {
        "PYTHONPATH": str(site),
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "COLUMNS": "200",
    }
    init = subprocess.run(
        [*cli, "init", "--example", "pyiceberg", "proj"], capture_output=True, text=True,
        check=False, cwd=work, env=env, timeout=120,
    )  # fmt: skip
    assert init.returncode == 0, init.stdout + init.stderr
    assert (work / "proj" / "loader.py").is_file()
    listing = subprocess.run(
        [*cli, "scenario", "list"], capture_output=True, text=True, check=False,
        cwd=work / "proj", env=env, timeout=120,
    )  # fmt: skip
    assert listing.returncode == 0, listing.stdout + listing.stderr
    rows = {line.split("│")[1].strip(): line for line in listing.stdout.splitlines() if "│" in line}
    assert "restart_under_load" in rows and "│ scenarios " in rows["restart_under_load"]
    assert all(name in rows and "built-in" in rows[name] for name in builtin)
