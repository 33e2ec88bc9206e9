"""Each checker's declared parameters: what a scenario may give it, checked before a run."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from icefloe.harness.history import History
from icefloe.harness.scenarios.checks.facts.reads import Observed
from icefloe.harness.scenarios.checks.verdict import (
    CHECKERS,
    PARAMS,
    REQUIRED,
    UNKNOWN,
    CheckResult,
    check_params,
    run_check,
)
from icefloe.harness.scenarios.generative.generate import CHECK_PARAMS
from icefloe.harness.scenarios.params import ParamError

ROOT = Path(__file__).resolve().parents[2]
_READ = re.compile(r"""params(?:\[|\.get\()\s*["'](\w+)["']|["'](\w+)["'] in params""")


def test_an_unknown_parameter_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ParamError) as caught:
        check_params("liveness", {"bound": 60}, "01_x: check 3 (liveness)")
    text = str(caught.value)
    assert text.startswith("01_x: check 3 (liveness): liveness: unknown parameter(s) ['bound']")
    assert "known: bound_s, faults, ignore_lanes" in text
    with pytest.raises(ParamError, match="known: none"):
        check_params("exactly_once", {"max_copies": 2})
    with pytest.raises(ParamError, match="unknown checker 'exactly_twice'"):
        check_params("exactly_twice", {})


def test_a_missing_required_parameter_or_a_wrong_type_is_refused() -> None:
    with pytest.raises(ParamError, match=r"missing parameter\(s\) \['from_partition'\]"):
        check_params("partitions_loaded", {})
    with pytest.raises(ParamError, match=r"liveness\.bound_s: 'long' is not float"):
        check_params("liveness", {"bound_s": "long"})


def test_parameters_come_back_as_their_declared_types() -> None:
    got = check_params("liveness", {"bound_s": 60, "faults": ["kill_loader"]})
    assert got == {"bound_s": 60.0, "faults": ("kill_loader",)}
    assert isinstance(got["bound_s"], float)


def test_every_parameter_a_checker_reads_is_declared() -> None:
    """A checker reading a name its declaration lacks would be refused that name in a file."""
    for name, fn in CHECKERS.items():
        read = {a or b for a, b in _READ.findall(inspect.getsource(fn))}
        declared = {p.name for p in PARAMS[name]}
        assert read <= declared, f"{name} reads {sorted(read - declared)} undeclared"


@pytest.mark.parametrize("profile", ["ci", "full"])
def test_every_scenario_files_parameters_fit_their_declarations(profile: str) -> None:
    from icefloe.harness.scenarios import model

    files = sorted((ROOT / "scenarios").glob("**/*.toml"))
    assert files
    for path in files:
        for i, check in enumerate(model.load(path, profile).checks):
            check_params(check.check, check.params, f"{path.name}: check {i}")
    for name, params in CHECK_PARAMS.items():
        check_params(name, params)


def test_declared_defaults_fill_in_what_a_scenario_leaves_out() -> None:
    """run_check gives a checker its declared defaults: the one place each is written."""
    seen: dict[str, object] = {}

    def spy(history, ledger, observed, params):  # type: ignore[no-untyped-def]
        seen.clear()
        seen.update(params)
        return CheckResult("spy", UNKNOWN, "")

    real = CHECKERS["staged_snapshots_bounded"]
    CHECKERS["staged_snapshots_bounded"] = spy
    try:
        run_check("staged_snapshots_bounded", History(), [], Observed(), {})
        assert seen == {"max_staged": 10}
        run_check("staged_snapshots_bounded", History(), [], Observed(), {"max_staged": 3})
        assert seen == {"max_staged": 3}
    finally:
        CHECKERS["staged_snapshots_bounded"] = real


def test_a_reference_of_every_check_can_be_made_from_the_declarations() -> None:
    rows = {
        name: [(p.name, p.type_text, p.default_text, p.meaning) for p in params]
        for name, params in PARAMS.items()
    }
    assert set(rows) == set(CHECKERS)
    assert rows["liveness"][0][:3] == ("bound_s", "float", "120.0")
    assert rows["liveness"][1][:3] == ("faults", "tuple[str, ...]", "none")
    assert rows["column_absent"][0][:3] == ("column", "str", "required")
    assert all(p.meaning and "\n" not in p.meaning for ps in PARAMS.values() for p in ps)
    assert all(p.required == (p.default is REQUIRED) for ps in PARAMS.values() for p in ps)
