"""The Markdown block reader: fences, marks, and the errors that keep marks honest."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.markdown_blocks import FILES_OF_THE_REPO, blocks

DOC = """# Title

```bash
echo one
```

<!-- doc-test: skip runs for an hour -->
```bash
soak --minutes 60
```

<!-- doc-test: background -->
```sh
loader --forever
```

```python
print("not shell")
```

```
plain text
```
"""


def test_blocks_are_read_in_order_with_their_marks(tmp_path: Path) -> None:
    path = tmp_path / "doc.md"
    path.write_text(DOC)
    found = blocks(path)
    assert [(b.mode, b.first_command) for b in found] == [
        ("run", "echo one"),
        ("skip", "soak --minutes 60"),
        ("background", "loader --forever"),
    ]
    assert found[1].reason == "runs for an hour"
    assert found[0].line == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("<!-- doc-test: skip -->\n```bash\nx\n```\n", "must say why"),
        ("<!-- doc-test: background -->\ntext\n```bash\nx\n```\n", "right before a fence"),
        ("text\n<!-- doc-test: skip later -->\n", "end of the file"),
    ],
)
def test_marks_that_would_silently_do_nothing_are_errors(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "doc.md"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        blocks(path)


def test_every_mark_in_the_repository_is_well_formed() -> None:
    for path in FILES_OF_THE_REPO:
        blocks(path)
