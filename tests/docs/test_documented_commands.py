"""Every shell block of README.md and docs/*.md runs, in order, against the stack.

A documented command that stops working fails here. Blocks that cannot run in a test (a
60-minute soak, a container set-up, `make test` itself) carry a `doc-test: skip` mark with a
reason and are reported as skipped with it (`make test` prints the reasons); a command that
runs in the foreground until stopped (the loader) carries `doc-test: background`. The workshop's
modules are run by `tests/workshop/`, with their checks. See `tests/docs/markdown_blocks.py`.

Before a file's blocks run, the topics and tables they create are removed, and the ledgers of
those topics, so a file runs as on a fresh stack.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.docs.markdown_blocks import DOCS, ROOT, Block, Runner, blocks

pytestmark = pytest.mark.integration

BLOCKS = [block for path in DOCS for block in blocks(path)]
_CREATES = re.compile(r"icefloe (topic|table) create (\S+)")


def _created(path: Path) -> tuple[set[str], set[str]]:
    topics, tables = set(), set()
    for block in blocks(path):
        if block.mode == "skip":
            continue
        for kind, name in _CREATES.findall(block.text):
            (topics if kind == "topic" else tables).add(name)
    return topics, tables


def _fresh(stack: Any, path: Path) -> None:
    """Remove what the file's blocks create, so they run as on a fresh stack."""
    from icefloe.publisher.producer import DEFAULT_LEDGER_DIR
    from icefloe.publisher.topics import delete_topic

    topics, tables = _created(path)
    for table in tables:
        stack.query(f"DROP TABLE IF EXISTS {table}")
    for topic in topics:
        delete_topic(stack.bootstrap_servers, topic)
        for ledger in (ROOT / DEFAULT_LEDGER_DIR).glob(f"{topic}-*.jsonl"):
            ledger.unlink()


class _Files:
    """The runner of the file in progress; a file's background blocks stop when it is done."""

    def __init__(self, stack: Any, log_dir: Path) -> None:
        self.stack = stack
        self.log_dir = log_dir
        self.path: Path | None = None
        self.runner: Runner | None = None
        self.failed: Block | None = None

    def runner_for(self, block: Block) -> Runner:
        if block.path != self.path:
            self.close()
            self.path, self.failed = block.path, None
            self.runner = Runner(self.log_dir / block.path.stem)
            _fresh(self.stack, block.path)
        assert self.runner is not None
        return self.runner

    def close(self) -> None:
        if self.runner is not None:
            self.runner.close()
        self.runner = None


@pytest.fixture(scope="module")
def files(stack: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Files]:
    state = _Files(stack, tmp_path_factory.mktemp("doc-blocks"))
    yield state
    state.close()


_DISTURBS = re.compile(r"icefloe (kill|stop|restart|pause) (kafka|minio|catalog|trino)\b")
"""A block that strikes one of the stack's services: it runs alone (``exclusive``)."""


def _marks(block: Block) -> list[Any]:
    """A block that strikes one of the stack's services runs alone, after the others; the rest
    run on one worker, in order, with the workshop (``tests/schedule.py``)."""
    return [pytest.mark.exclusive] if _DISTURBS.search(block.text) else []


@pytest.mark.parametrize(
    "block", [pytest.param(b, marks=_marks(b)) for b in BLOCKS], ids=[b.name for b in BLOCKS]
)
def test_documented_block_runs(block: Block, files: _Files) -> None:
    runner = files.runner_for(block)
    if block.mode == "skip":
        pytest.skip(f"{block.reason} [{block.first_command}]")
    if files.failed is not None:
        pytest.skip(f"an earlier block of this file failed ({files.failed.name})")
    outcome = runner.run(block)
    problems = runner.background_failures()
    if outcome.code != 0 or problems:
        files.failed = block
        pytest.fail(
            f"{block.name} exited with {outcome.code} after {outcome.seconds:.0f} s:\n"
            f"{block.text}\n--- output ---\n{outcome.output[-4000:]}\n" + "\n".join(problems),
            pytrace=False,
        )
