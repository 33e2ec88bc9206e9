"""docs/scenario-reference.md is what the code that reads scenario files says of itself."""

from __future__ import annotations

from icefloe.harness.scenarios import model
from icefloe.harness.scenarios.checks.verdict import CHECKERS
from icefloe.harness.scenarios.faults import FAULTS
from icefloe.harness.scenarios.reference import COMMAND, markdown
from icefloe.harness.scenarios.steps import STEPS
from tests.docs.markdown_blocks import ROOT

PAGE = ROOT / "docs" / "scenario-reference.md"


def test_the_page_is_the_generated_reference() -> None:
    assert PAGE.read_text(encoding="utf-8") == markdown(), f"regenerate it: {COMMAND}"


def test_it_names_every_step_fault_check_and_key() -> None:
    text = markdown()
    for name in (*STEPS, *FAULTS, *CHECKERS):
        assert f"### `{name}`" in text, name
    for keys in model.KNOWN_KEYS.values():
        for key in keys:
            assert f"`{key}`" in text, key


def test_the_annotated_example_is_the_scenario_init_writes() -> None:
    from icefloe.harness.resources import kit_file

    template = kit_file("harness", "scaffold", "templates", "scenarios", "restart_under_load.toml")
    page = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    assert f"```toml\n{template.read_text(encoding='utf-8')}```" in page
