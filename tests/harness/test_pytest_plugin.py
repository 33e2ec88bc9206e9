"""The pytest plugin refuses an unmarked test that asks for the stack, before any stack starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = """
import pytest

def test_unmarked_asks_for_the_stack(stack):
    pass

def test_unmarked_asks_through_a_factory(topic_factory):
    pass

@pytest.mark.integration
def test_marked(stack):
    pass

def test_needs_no_stack():
    pass
"""


def test_an_unmarked_test_that_asks_for_the_stack_fails_loudly(tmp_path: Path) -> None:
    (tmp_path / "test_inner.py").write_text(TESTS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ICEFLOE_")}
    # Should the guard ever let a test through, the stack refuses to start at once.
    env.update(ICEFLOE_RUN_DIR=str(tmp_path / "run"), ICEFLOE_STACK_HOST="0.0.0.0")
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfE", "test_inner.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = out.stdout + out.stderr
    for name in ("test_unmarked_asks_for_the_stack", "test_unmarked_asks_through_a_factory"):
        assert f"{name} uses the stack but is not marked integration or scenario" in report
    # The marked test reached the stack fixture, which refused the non-loopback host.
    assert "loopback only" in report
    assert "1 passed" in report and "3 error" in report, report
    assert not (tmp_path / "run").exists()
