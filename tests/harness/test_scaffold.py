"""`icefloe init`: the files it writes are valid as written, it overwrites nothing unasked, and
a user's scenarios are found beside the kit's, theirs first."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from icefloe import testing
from icefloe.harness.cli.main import main
from icefloe.harness.loaders.command import load_spec
from icefloe.harness.scaffold import plan, write
from icefloe.harness.scenarios import model


@pytest.mark.parametrize("example", [None, "pyiceberg"])
def test_what_init_writes_reads_as_written(tmp_path: Path, example: str | None) -> None:
    written = write(tmp_path, plan(example))
    names = {p.relative_to(tmp_path).as_posix() for p in written}
    assert {"loader.toml", "scenarios/restart_under_load.toml", "tests/test_icefloe.py",
            ".github/workflows/icefloe.yml"} <= names  # fmt: skip
    assert ("loader.py" in names) == (example is not None)
    spec = load_spec(tmp_path / "loader.toml")
    assert spec.observe.position == "summary", "the kit can judge a row lost"
    scenario = model.load(tmp_path / "scenarios" / "restart_under_load.toml")
    assert {c.check for c in scenario.checks} >= {"exactly_once", "liveness"}
    compile((tmp_path / "tests" / "test_icefloe.py").read_text(), "test_icefloe.py", "exec")


def test_init_overwrites_nothing_unless_forced(tmp_path: Path) -> None:
    (tmp_path / "loader.toml").write_text("# mine\n")
    with pytest.raises(FileExistsError, match=r"loader\.toml"):
        write(tmp_path, plan())
    assert (tmp_path / "loader.toml").read_text() == "# mine\n"
    assert not (tmp_path / "scenarios").exists(), "nothing is written when something is there"
    write(tmp_path, plan(), force=True)
    assert (tmp_path / "loader.toml").read_text() != "# mine\n"


def test_an_unknown_example_is_refused() -> None:
    with pytest.raises(ValueError, match="pyiceberg"):
        plan("flink")


def test_the_command_exits_1_over_existing_files(tmp_path: Path) -> None:
    assert main(["init", str(tmp_path)]) == 0
    assert main(["init", str(tmp_path)]) == 1
    assert main(["init", str(tmp_path), "--force"]) == 0


def test_a_users_scenarios_come_first_and_say_where_they_are_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, plan())
    mine = tmp_path / "scenarios" / "01_exactly_once_kill9.toml"  # same name as a built-in
    mine.write_text((tmp_path / "scenarios" / "restart_under_load.toml").read_text())
    monkeypatch.chdir(tmp_path)
    found = model.discover_all()
    assert [s.name for s in found[:2]] == ["01_exactly_once_kill9", "restart_under_load"]
    assert model.source(found[0]) == "scenarios"
    assert len([s for s in found if model.source(s) == "built-in"]) == len(
        list(model.SCENARIO_DIR.glob("*.toml"))
    )
    chosen = model.find_in("exactly_once_kill9").path
    assert chosen is not None and chosen.resolve() == mine.resolve()
    builtin = model.find_in("02_malformed_dead_letter").path
    assert builtin is not None and builtin.parent == model.SCENARIO_DIR
    with pytest.raises(model.ScenarioError, match="restart_under_load"):
        model.find_in("no_such_one")
    with pytest.raises(model.ScenarioError, match="no such folder"):
        model.folders([tmp_path / "nowhere"])


def test_in_the_kits_checkout_its_own_folder_is_not_a_users(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(model.SCENARIO_DIR.parent)
    assert model.folders() == [model.SCENARIO_DIR]
    assert os.path.samefile(model.USER_FOLDER, model.SCENARIO_DIR)


def _result(verdicts: dict[str, str], passed: bool = True) -> SimpleNamespace:
    checks = [
        SimpleNamespace(check=c, verdict=v, summary="", anomalies={}) for c, v in verdicts.items()
    ]
    return SimpleNamespace(passed=passed, checks=checks, run_dir=Path("reports/runs/x"))


def test_assert_passed_wants_each_named_check_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(testing.report, "summary_lines", lambda results: ["summary"])
    testing.assert_passed(_result({"exactly_once": "valid"}), judged=("exactly_once",))  # type: ignore[arg-type]
    with pytest.raises(AssertionError, match=r"not proven.*unknown"):
        testing.assert_passed(_result({"exactly_once": "unknown"}), judged=("exactly_once",))  # type: ignore[arg-type]
    with pytest.raises(AssertionError, match="not run"):
        testing.assert_passed(_result({}), judged=("dead_letter",))  # type: ignore[arg-type]
    with pytest.raises(AssertionError, match="summary"):
        testing.assert_passed(_result({}, passed=False))  # type: ignore[arg-type]


def test_a_scenario_the_loader_cannot_run_is_a_failure_not_a_pass(tmp_path: Path) -> None:
    write(tmp_path, plan())
    spec = tmp_path / "loader.toml"
    spec.write_text(spec.read_text().replace('["kill", "freeze"]', '["freeze"]'))
    stack = SimpleNamespace(catalog=SimpleNamespace(kind="rest", keeps_state_on_kill=True))
    with pytest.raises(testing.NotApplicable, match="kill"):
        testing.run_scenario(tmp_path / "scenarios" / "restart_under_load.toml", stack, loader=spec)
