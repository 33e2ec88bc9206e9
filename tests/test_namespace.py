"""The kit imports itself only as ``icefloe.*``, so a user's own ``loader``, ``harness`` or
``publisher`` (a ``loader.py`` beside their tests, say) can never stand in for a part of it.

In a checkout the three packages are top-level folders, importable under their bare names too;
one bare import would load a module twice under two names (two registries, two classes of one
name) and, installed from the wheel, fail outright.
"""

from __future__ import annotations

import ast
from pathlib import Path

import icefloe

CHECKOUT = Path(icefloe.__file__).resolve().parents[1]
BARE = ("loader", "harness", "publisher")
SOURCES = sorted(
    path
    for folder in (*BARE, "tests", "benchmarks", "examples")
    for path in (CHECKOUT / folder).rglob("*.py")
)


def _bare_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        found += [f"{n} (line {node.lineno})" for n in names if n.split(".")[0] in BARE]
    return found


def test_no_module_imports_a_part_of_the_kit_by_its_bare_name() -> None:
    assert len(SOURCES) > 300
    bare = {
        path.relative_to(CHECKOUT).as_posix(): found
        for path in SOURCES
        if (found := _bare_imports(path))
    }
    assert bare == {}


def test_a_bare_import_is_seen(tmp_path: Path) -> None:
    """The check above can fail."""
    bad = tmp_path / "bad.py"
    bad.write_text("import loader\nfrom harness.stack import kafka\nfrom icefloe import loader\n")
    assert _bare_imports(bad) == ["loader (line 1)", "harness.stack (line 2)"]
