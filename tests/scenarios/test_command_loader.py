"""A loader given as a command line runs scenario 01 (kill -9 and restart) and gets its verdict.

The "user's loader" is icefloe's own, started as any user's would be:
``python -m icefloe.loader run`` with a configuration file rendered from a template
(``harness.loaders.command``), its S3 secret in its environment. The harness knows nothing else
of it: it kills and restarts it from outside, and the checks judge the table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.loaders.capabilities import needs, not_applicable
from icefloe.harness.loaders.config import stack_loader_config
from icefloe.harness.loaders.kinds import resolve
from icefloe.harness.scenarios.model import find
from icefloe.harness.scenarios.reports import report
from icefloe.harness.scenarios.runner import RunOptions, run_scenario
from icefloe.loader.config import env_var

pytestmark = [pytest.mark.scenario, pytest.mark.slow]


def icefloe_as_a_command(stack: Any, folder: Path) -> Path:
    """A description of icefloe's loader as a command loader, its template made from a
    configuration for this stack with placeholders where the run's values go."""
    config = stack_loader_config(
        stack,
        "lake.placeholder.table",
        ["placeholder-topic"],
        loader_id="placeholder-id",
        dead_letter_topic="placeholder.dlq",
        checkpoint_location="placeholder-state/checkpoint",
        trigger_interval=2.0,
    )
    text = config.to_toml().replace("$", "$$")
    for value, name in (
        ("lake.placeholder.table", "table"),
        ("placeholder-topic", "topic"),
        ("placeholder-id", "loader_id"),
        ("placeholder.dlq", "dead_letter_topic"),
        ("placeholder-state", "state_dir"),
        (stack.bootstrap_servers, "bootstrap_servers"),
        (stack.catalog_uri, "catalog_uri"),
        (stack.s3_endpoint, "s3_endpoint"),
    ):
        assert value in text, value
        text = text.replace(f'"{value}', f'"${{{name}}}')
    (folder / "icefloe.toml.in").write_text(text)
    spec = folder / "icefloe-command.toml"
    spec.write_text(
        'name = "icefloe as a command"\n'
        'command = ["${python}", "-m", "icefloe.loader", "run", "--config", "${config_file}"]\n'
        'capabilities = ["kill", "freeze", "dead_letters"]\n'
        'ready_log = "icefloe.loader: starting "\n'
        'progress = "the table and ${state_dir}/checkpoint"\n'
        "settle_s = 4\n"
        '[config]\nname = "loader.toml"\nfile = "icefloe.toml.in"\n'
        f'[env]\n{env_var("catalog.s3_secret_key")} = "${{s3_secret_key}}"\n'
    )
    return spec


def test_a_loader_given_as_a_command_line_gets_scenario_01s_verdict(
    stack: Any, tmp_path: Path
) -> None:
    kind = resolve(f"command:{icefloe_as_a_command(stack, tmp_path)}")
    scenario = find("01_exactly_once_kill9")
    assert not_applicable(needs(scenario), kind.capabilities) == []
    result = run_scenario(scenario, stack, RunOptions(reports_dir=Path("reports"), loader=kind))
    path = report.write_markdown(result)
    kills = [c for c in result.checks if c.check == "faults_exercised"]
    assert kills and kills[0].ok, kills  # killed from outside, and started again, each time
    details = "\n".join(report.summary_lines([result]))
    assert result.passed, f"{details}\nreport: {path}"
