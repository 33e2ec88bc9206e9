"""icefloe's scenarios against this repository's loader.

`pytest` starts icefloe's stack when none is running (provisioning first) and stops it at the
end; with `icefloe up` beforehand it uses the running one. Reports go to reports/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icefloe import testing

pytestmark = pytest.mark.scenario

HERE = Path(__file__).resolve().parents[1]
LOADER = HERE / "loader.toml"
REPORTS = HERE / "reports"


@pytest.mark.parametrize(
    "scenario", testing.scenario_files(HERE / "scenarios"), ids=lambda p: p.stem
)
def test_scenarios_of_this_repository(stack: Any, scenario: Path) -> None:
    result = testing.run_scenario(scenario, stack, loader=LOADER, reports=REPORTS)
    testing.assert_passed(result, judged=("exactly_once",))


def test_a_built_in_scenario(stack: Any) -> None:
    # 02: malformed messages among good ones; needs the dead_letters capability.
    try:
        result = testing.run_scenario(
            "02_malformed_dead_letter", stack, loader=LOADER, reports=REPORTS
        )
    except testing.NotApplicable as why:
        pytest.skip(str(why))
    testing.assert_passed(result, judged=("exactly_once", "dead_letter"))
