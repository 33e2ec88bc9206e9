"""``icefloe init``: what the kit writes into a user's repository to test their loader there.

Four things, each a file to edit: ``loader.toml`` (the loader's description for the kit, every
key commented), ``scenarios/restart_under_load.toml`` (a scenario of their own), a pytest file
that runs it with the kit's fixtures (``tests/test_icefloe.py``), and the CI workflow
(``.github/workflows/icefloe.yml``). ``--example pyiceberg`` writes the kit's example loader
(``examples/loaders/pyiceberg``: ``loader.py`` and its description) instead of the skeleton, so
that the result runs as written.

Nothing is overwritten: a file already there is left alone and named, and ``init`` fails
unless ``--force`` says to replace it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from icefloe.harness.resources import kit_file

__all__ = ["EXAMPLES", "Planned", "plan", "write"]

_TEMPLATES = kit_file("harness", "scaffold", "templates")

EXAMPLES = ("pyiceberg",)
"""What ``--example`` may name: the kit's example loaders (``examples/loaders/<name>``)."""

WORKFLOW = ".github/workflows/icefloe.yml"

_EXAMPLE_HEADER = """\
# The kit's pyiceberg example loader (loader.py beside this file), as icefloe runs it:
#   icefloe scenario run scenarios/restart_under_load.toml --loader command:loader.toml
# Every key and placeholder: icefloe's docs/testing-your-loader.md.
"""


@dataclass(frozen=True)
class Planned:
    """One file ``init`` writes.

    Attributes:
        path: Where, relative to the target folder.
        source: The kit's file it copies.
        header: Text put before the copy (the example's description gets its own).
        drop_comment_head: Leave out the copy's leading comment lines (replaced by ``header``).
    """

    path: str
    source: Path
    header: str = ""
    drop_comment_head: bool = False

    def text(self) -> str:
        body = self.source.read_text(encoding="utf-8")
        if self.drop_comment_head:
            lines = body.splitlines(keepends=True)
            while lines and lines[0].startswith("#"):
                lines.pop(0)
            body = "".join(lines)
        return self.header + body


def plan(example: str | None = None) -> list[Planned]:
    """The files ``init`` writes, for the skeleton (``example=None``) or an example loader.

    Raises:
        ValueError: an example the kit does not have.
    """
    common = [
        Planned(
            "scenarios/restart_under_load.toml",
            _TEMPLATES / "scenarios" / "restart_under_load.toml",
        ),
        Planned("tests/test_icefloe.py", _TEMPLATES / "tests" / "test_icefloe.py"),
        Planned(WORKFLOW, kit_file("examples", "ci", "icefloe-conformance.yml")),
    ]
    if example is None:
        return [Planned("loader.toml", _TEMPLATES / "loader.toml"), *common]
    if example not in EXAMPLES:
        raise ValueError(f"no example loader {example!r}; the kit has {', '.join(EXAMPLES)}")
    folder = kit_file("examples", "loaders", example)
    return [
        Planned("loader.toml", folder / "loader.toml", _EXAMPLE_HEADER, drop_comment_head=True),
        Planned("loader.py", folder / "loader.py"),
        *common,
    ]


def write(target: Path, planned: Sequence[Planned], force: bool = False) -> list[Path]:
    """Write ``planned`` under ``target`` (created when missing); return what was written.

    Raises:
        FileExistsError: a file is already there and ``force`` is false (nothing is written,
            and every such file is named).
    """
    there = [target / p.path for p in planned if (target / p.path).exists()]
    if there and not force:
        names = ", ".join(str(p.relative_to(target)) for p in there)
        raise FileExistsError(
            f"{target}: already there, left alone: {names} (--force replaces them)"
        )
    written = []
    for p in planned:
        path = target / p.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(p.text(), encoding="utf-8")
        written.append(path)
    return written
