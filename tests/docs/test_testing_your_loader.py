"""docs/testing-your-loader.md: its reference is what the code says, and its test file is the
one `icefloe init` writes."""

from __future__ import annotations

from icefloe.harness.loaders.reference import BEGIN, END, markdown
from icefloe.harness.resources import kit_file
from tests.docs.markdown_blocks import ROOT

PAGE = ROOT / "docs" / "testing-your-loader.md"


def test_the_reference_is_the_generated_one() -> None:
    text = PAGE.read_text(encoding="utf-8")
    generated = text[text.index(BEGIN) : text.index(END) + len(END)] + "\n"
    assert generated == markdown(), (
        "regenerate it: replace the page's text between its two marks with "
        "icefloe.harness.loaders.reference.markdown()"
    )


def test_the_page_shows_the_test_file_init_writes() -> None:
    template = kit_file("harness", "scaffold", "templates", "tests", "test_icefloe.py")
    assert f"```python\n{template.read_text(encoding='utf-8')}```" in PAGE.read_text(
        encoding="utf-8"
    )
