"""The workshop runs as written: every module's check fails before its exercises, passes after.

The exercises are the shell blocks of `docs/workshop/NN-*.md`, run in order as a trainee would
type them (`tests/docs/markdown_blocks.py`), module after module on one stack, from
`icefloe workshop reset` on. Before a module's blocks run its check must find something
missing; after them (the module's last block is `icefloe workshop check N` itself) it must find
everything. Background loaders the exercises started are stopped by a final reset.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.docs.markdown_blocks import ROOT, WORKSHOP, Runner, blocks

pytestmark = pytest.mark.integration


class _Progress:
    """Which module failed, so later modules (which build on it) are skipped, not failed."""

    failed: str | None = None


@pytest.fixture(scope="module")
def workshop(stack: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Progress]:
    from icefloe.harness.workshop.reset import reset

    ledgers = ROOT / ".run" / "ledgers"
    reset(stack, ledgers)
    yield _Progress()
    reset(stack, ledgers)


def _findings(stack: Any, number: int) -> list[Any]:
    from icefloe.harness.workshop.checks import Workbench, run_check

    return run_check(number, Workbench(stack, ROOT / ".run" / "ledgers"))


def test_every_module_has_a_check() -> None:
    from icefloe.harness.workshop import MODULES
    from icefloe.harness.workshop.checks import CHECKS

    assert len(WORKSHOP) == MODULES == len(CHECKS)
    for number, path in enumerate(WORKSHOP, 1):
        assert path.name.startswith(f"{number:02d}-")
        assert f"icefloe workshop check {number}" in blocks(path)[-1].text


@pytest.mark.parametrize("path", WORKSHOP, ids=[p.stem for p in WORKSHOP])
def test_module_exercises_satisfy_its_check(
    path: Path, stack: Any, workshop: _Progress, tmp_path: Path
) -> None:
    if workshop.failed:
        pytest.skip(f"module {workshop.failed} failed; this one builds on it")
    number = int(path.name[:2])
    workshop.failed = path.stem
    before = _findings(stack, number)
    assert not all(f.ok for f in before), f"check {number} passes before its exercises"
    runner = Runner(tmp_path)
    try:
        for block in blocks(path):
            if block.mode == "skip":
                continue
            outcome = runner.run(block)
            assert outcome.code == 0, (
                f"{block.name} exited with {outcome.code} after {outcome.seconds:.0f} s:\n"
                f"{block.text}\n--- output ---\n{outcome.output[-4000:]}"
            )
    finally:
        runner.close()
    after = _findings(stack, number)
    missing = [f.what for f in after if not f.ok]
    assert not missing, f"check {number} still misses: {missing}"
    workshop.failed = None
