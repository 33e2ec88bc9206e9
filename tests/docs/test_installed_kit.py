"""The kit as a user installs it, in a repository of their own: the pages' commands run with a
fresh virtualenv's ``icefloe`` and ``python``, not the checkout's.

A virtualenv made outside the checkout gets this checkout's wheel with its ``testing`` extra
(``pip install 'icefloe-*.whl[testing]'``, the dependencies from PyPI); then, with its ``bin``
first on PATH and the running stack's run folder, the blocks that set up a loader's repository
run as the pages show them: docs/testing-your-loader.md's (``icefloe init --example pyiceberg``,
``icefloe doctor``, ``icefloe up``, ``icefloe scenario list``, then ``icefloe scenario run`` of
the scenario init wrote, in the same shell and folder) and docs/ci.md's (the pytest file init
wrote, on the kit's fixtures, and the job summary the workflow writes from its reports). Those
blocks carry ``doc-test: skip`` for ``test_documented_commands.py``, which runs the checkout's
kit: they run here, once, as installed.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.docs.markdown_blocks import ROOT, Block, Runner, blocks
from tests.wheel import build_wheel

pytestmark = pytest.mark.integration

TESTING_YOUR_LOADER = ROOT / "docs" / "testing-your-loader.md"
CI = ROOT / "docs" / "ci.md"


def _block(path: Path, *words: str) -> Block:
    """The one shell block of ``path`` holding every one of ``words``."""
    (found,) = [b for b in blocks(path) if all(w in b.text for w in words)]
    return found


def _run(runner: Runner, block: Block) -> str:
    outcome = runner.run(block)
    assert outcome.code == 0, (
        f"{block.name} exited with {outcome.code} after {outcome.seconds:.0f} s:\n{block.text}\n"
        f"--- output ---\n{outcome.output[-6000:]}"
    )
    return outcome.output


def test_the_pages_commands_run_with_the_kit_installed_from_its_wheel(
    stack: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = build_wheel(tmp_path / "build")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile",
         f"{wheel}[testing]"],
        capture_output=True, text=True, check=False, timeout=900,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    monkeypatch.setenv("ICEFLOE_RUN_DIR", str(stack.config.run_dir))
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    where = tmp_path / "work"
    where.mkdir()
    runner = Runner(tmp_path / "logs", bin_dir=venv / "bin", cwd=where)
    first = _block(TESTING_YOUR_LOADER, "icefloe init --example pyiceberg", "icefloe doctor")
    scenario = _block(TESTING_YOUR_LOADER, "icefloe scenario run scenarios/")
    # The scenario run follows the set-up in its folder, as a user types them one after the other.
    output = _run(runner, Block(first.path, first.line, first.text + "\n" + scenario.text))
    kit = next(line for line in output.splitlines() if line.startswith("ok") and " kit " in line)
    assert "a checkout" not in kit, f"the kit ran from the checkout, not the wheel: {kit}"
    # `icefloe scenario list` there: the user's scenario from their folder, and the kit's 18.
    built_in = set(re.findall(r"\b(\d\d_[a-z0-9_]+)\s+\S\s+built-in\b", output))
    assert len(built_in) == 18, output[-3000:]
    assert re.search(r"\brestart_under_load\s+\S\s+scenarios\b", output), output[-3000:]
    assert "1/1 passed" in output, output[-3000:]
    _run(runner, _block(CI, "python -m pytest tests/test_icefloe.py"))
