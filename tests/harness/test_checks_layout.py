"""The checks' layers: facts below, verdicts above, imports in one direction only.

Every import of every module under ``harness/scenarios/checks/`` is read with ``ast``, the ones
inside functions included, and held to the layers the package's docstring names: ``facts``
imports only other facts; ``compare`` facts; ``verdict`` facts and ``compare``; ``missing``
those three; a checker module those four, never another checker module; the package imports
its checker modules. Nothing under ``checks/`` imports the kit outside the few modules a
fact may rest on (the history, the observer, the publisher's ledger and catalog, the fault
points, the parameter reader): never the recording client, the engine, the runner, the steps,
the gathering or the stack.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CHECKS = Path(__file__).resolve().parents[2] / "harness" / "scenarios" / "checks"
PACKAGE = "icefloe.harness.scenarios.checks"

CHECKER_MODULES = (
    "freshness",
    "letters",
    "live",
    "liveness",
    "premises",
    "process",
    "rows",
    "storage",
    "values",
)
LAYER = {"facts": 0, "compare": 1, "verdict": 2, "missing": 3, **dict.fromkeys(CHECKER_MODULES, 4)}
"""Each module of the package (``facts`` for every module under ``facts/``) and its layer."""

OUTSIDE = (
    "icefloe.harness.history",
    "icefloe.harness.observer",
    "icefloe.harness.scenarios.params",
    "icefloe.loader.testing.faultpoints",
    "icefloe.publisher.ledger",
    "icefloe.publisher.malformations",
    "icefloe.publisher.rows",
)
"""The only modules of the kit outside the package that a module in it may import."""


def _modules() -> list[Path]:
    return sorted(CHECKS.rglob("*.py"))


def _name(path: Path, root: Path = CHECKS) -> str:
    rel = path.relative_to(root).with_suffix("")
    return ".".join(rel.parts)


def _unit(name: str) -> str:
    """The layer unit of a module named relative to the package (``facts.ledger`` -> facts)."""
    return name.split(".")[0]


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in the file, nested ones included."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}:{node.lineno}: a relative import"
            module = node.module or ""
            if module == PACKAGE:  # from the package import its modules
                out.extend((node.lineno, f"{PACKAGE}.{a.name}") for a in node.names)
            else:
                out.append((node.lineno, module))
    return out


def test_every_module_of_the_checks_has_a_layer() -> None:
    names = {_unit(_name(p)) for p in _modules() if _name(p) != "__init__"}
    assert names == set(LAYER), f"give these a layer: {sorted(names ^ set(LAYER))}"


def _violations(path: Path, root: Path = CHECKS) -> list[str]:
    me = _name(path, root)
    wrong = []
    for line, module in _imports(path):
        where = f"{me}:{line} imports {module}"
        if module.startswith(PACKAGE + "."):
            other = _unit(module[len(PACKAGE) + 1 :])
            if me == "__init__":
                if other not in CHECKER_MODULES:
                    wrong.append(f"{where}: the package imports only its checker modules")
                continue
            mine = LAYER[_unit(me)]
            if other not in LAYER:
                wrong.append(f"{where}: not a module of the package")
            elif mine == 0 and LAYER[other] != 0:
                wrong.append(f"{where}: a fact imports only facts")
            elif 0 < mine < 4 and LAYER[other] >= mine:
                wrong.append(f"{where}: a layer imports only those below it")
            elif mine == 4 and LAYER[other] == 4:
                wrong.append(f"{where}: a checker module imports no other")
        elif module.startswith("icefloe.") and module not in OUTSIDE:
            wrong.append(f"{where}: outside what the checks may rest on")
        elif module.split(".")[0] in ("loader", "harness", "publisher"):
            wrong.append(f"{where}: a bare import of the kit")
    return wrong


@pytest.mark.parametrize("path", _modules(), ids=_name)
def test_imports_point_down_only(path: Path) -> None:
    wrong = _violations(path)
    assert not wrong, "\n".join(wrong)


def test_the_layout_test_sees_a_wrong_import(tmp_path: Path) -> None:
    """The rules catch what they are for: a fact that imports a checker, a checker module that
    imports another, a check that imports the runner."""
    fact = tmp_path / "facts" / "bad.py"
    fact.parent.mkdir()
    fact.write_text(f"def f():\n    from {PACKAGE}.rows import check_exactly_once\n")
    rows = tmp_path / "rows.py"
    rows.write_text(
        f"from {PACKAGE}.values import same_value\nimport icefloe.harness.scenarios.runner\n"
    )
    assert [w.split(": ")[-1] for w in _violations(fact, tmp_path)] == ["a fact imports only facts"]
    assert [w.split(": ")[-1] for w in _violations(rows, tmp_path)] == [
        "a checker module imports no other",
        "outside what the checks may rest on",
    ]
