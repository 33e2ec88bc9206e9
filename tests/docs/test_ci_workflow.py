"""The CI workflow a user copies (examples/ci/) is the one docs/ci.md shows, and its commands
are ones the doc tests run: docs/ci.md has the file verbatim, and every `run:` of it in a shell
block."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.docs.markdown_blocks import ROOT, blocks

WORKFLOW = ROOT / "examples" / "ci" / "icefloe-conformance.yml"
PAGE = ROOT / "docs" / "ci.md"


def _runs(path: Path) -> list[str]:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [step["run"] for job in doc["jobs"].values() for step in job["steps"] if "run" in step]


def test_the_page_shows_the_workflow_file_verbatim() -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    assert f"```yaml\n{text}```\n" in PAGE.read_text(encoding="utf-8")


def test_every_command_of_the_workflow_is_in_a_block_of_the_page() -> None:
    shown = [block.text for block in blocks(PAGE)]
    runs = _runs(WORKFLOW)
    assert runs
    for run in runs:
        assert any(run.strip() in text for text in shown), f"not in a block of {PAGE.name}: {run}"
