"""Scenario files: every file in scenarios/ parses for both profiles; the reader's rules."""

from __future__ import annotations

import functools
from pathlib import Path
from types import SimpleNamespace

import pytest

from icefloe.harness.history import History, select
from icefloe.harness.loaders.base import TestHooks
from icefloe.harness.loaders.icefloe import icefloe_config
from icefloe.harness.loaders.process import LoaderProcess
from icefloe.harness.provision import jdk, versions
from icefloe.harness.provision.layout import Layout
from icefloe.harness.scenarios.checks.verdict import CHECKERS, CheckResult
from icefloe.harness.scenarios.model import PROFILES, ScenarioError, discover, find, load, parse
from icefloe.harness.scenarios.reports import report
from icefloe.harness.scenarios.runner import RunResult, settle_at_the_end
from icefloe.loader.config import load_config
from icefloe.loader.secret import Secret
from icefloe.loader.testing.faultpoints import KILL_AFTER_COMMIT_ENV
from tests.harness.fakes import RestCatalog

MINIMAL = {"steps": [{"do": "start_loader"}], "checks": [{"check": "exactly_once"}]}


@pytest.mark.parametrize("profile", PROFILES)
def test_every_scenario_file_parses_and_names_known_checkers(profile: str) -> None:
    scenarios = discover(profile=profile)
    assert len(scenarios) >= 14
    for s in scenarios:
        assert s.title and s.description, s.name
        for check in s.checks:
            assert check.check in CHECKERS, (s.name, check.check)
        for brk in s.breaks.values():
            assert brk.expect_check in {c.check for c in s.checks}, (s.name, brk.name)


def test_profiles_substitute_variables() -> None:
    doc = {
        "vars": {"count": 10},
        "profiles": {"full": {"vars": {"count": 1000}}},
        "steps": [{"do": "publish", "count": "$count"}],
        "checks": [{"check": "exactly_once"}],
    }
    assert parse(doc, profile="ci").steps[0].params.workload.count == 10
    assert parse(doc, profile="full").steps[0].params.workload.count == 1000


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({**MINIMAL, "steps": [{"do": "explode"}]}, "unknown action"),
        ({**MINIMAL, "steps": [{"do": "publish", "count": "$nope"}]}, "unknown variable"),
        ({**MINIMAL, "checks": []}, "no checks"),
        ({**MINIMAL, "steps": []}, "no steps"),
        ({**MINIMAL, "breaks": {"b": {"expect": {"check": "x"}}}}, "expect needs"),
        ({**MINIMAL, "steps": [{"do": "sleep", "only_in_break": "b"}]}, "unknown break"),
        ({**MINIMAL, "steps": [{"do": "sleep", "not_in_break": "b"}]}, "unknown break"),
        # Parameters are the step kind's dataclass: names, types and choices are checked.
        ({**MINIMAL, "steps": [{"do": "sleep", "secnds": 3}]}, "unknown parameter"),
        ({**MINIMAL, "steps": [{"do": "sleep", "seconds": "3"}]}, "is not float"),
        ({**MINIMAL, "steps": [{"do": "publish", "count": 1.5}]}, "is not int"),
        ({**MINIMAL, "steps": [{"do": "publish", "malformed_fraction": 2.0}]}, "within"),
        ({**MINIMAL, "steps": [{"do": "fault", "fault": "kill_loader", "at": "soon"}]}, "'now'"),
        ({**MINIMAL, "steps": [{"do": "fault", "fault": "kill_service"}]}, "missing parameter"),
        ({**MINIMAL, "steps": [{"do": "fault", "fault": "explode"}]}, "unknown fault"),
        (
            {
                **MINIMAL,
                "steps": [
                    {"do": "nemesis", "fault": "pause_service", "service": "kafka", "at": "mixed"}
                ],
            },
            "timed by",
        ),
        ({**MINIMAL, "steps": [{"do": "schedule", "events": [{"fault": "burst"}]}]}, "at_s"),
        ({**MINIMAL, "loader": {"trigger": 2}}, "unknown key 'trigger'"),
        # [loader] takes the loader's own keys, read by its codecs; old spellings name the new.
        ({**MINIMAL, "loader": {"trigger_interval_s": 2}}, "old name: write trigger_interval"),
        ({**MINIMAL, "loader": {"lease_ttl_s": 9}}, "old name: write lease_ttl"),
        (
            {**MINIMAL, "loader": {"max_offsets_per_trigger": 9}},
            "write kafka.max_offsets_per_trigger",
        ),
        ({**MINIMAL, "loader": {"settings": {"fencing": False}}}, "'settings' is an old name"),
        ({**MINIMAL, "loader": {"lease_ttl": "soon"}}, r"lease_ttl \(from : \[loader\]\) must"),
        ({**MINIMAL, "loader": {"kafka": {"max_offsets_per_trigger": 1.5}}}, "an integer"),
        ({**MINIMAL, "loader": {"pause_at": "later"}}, "'planned'"),
        ({**MINIMAL, "workload": {"key": "sideways"}}, "expected none"),
        ({**MINIMAL, "checks": [{"check": "exactly_twice"}]}, "unknown checker"),
        (
            {
                **MINIMAL,
                "breaks": {
                    "b": {
                        "loader": {"case_insensitive": "maybe"},
                        "expect": {"check": "x", "anomaly": "y"},
                    }
                },
            },
            r"case_insensitive \(from : break b\) must be true or false",
        ),
        # The protocol's switches are the test kit's hooks, not settings.
        (
            {**MINIMAL, "loader": {"fencing": False}},
            r"'fencing' is an old name: write disable = \[\"fencing\"\]",
        ),
        ({**MINIMAL, "loader": {"disable": ["guard"]}}, r"disable: unknown \['guard'\]"),
    ],
)
def test_invalid_documents_are_refused(doc: dict, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        parse(doc)


def test_breaks_replace_steps_with_only_and_not_in_break() -> None:
    doc = {
        **MINIMAL,
        "steps": [
            {"do": "start_loader"},
            {"do": "nemesis", "fault": "kill_loader", "not_in_break": "b"},
            {"do": "await_loader_exit", "only_in_break": "b"},
        ],
        "breaks": {"b": {"expect": {"check": "exactly_once", "anomaly": "duplicated"}}},
    }
    steps = parse(doc).steps
    assert [s.do for s in steps if s.runs_in(None)] == ["start_loader", "nemesis"]
    assert [s.do for s in steps if s.runs_in("b")] == ["start_loader", "await_loader_exit"]


def _provisioned_cache(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache laid out as `icefloe provision` leaves it: Spark jars, the loader's, a PyPI JDK."""
    cache = root / "cache"
    layout = Layout(cache)
    for jar in (layout.spark_jars / "iceberg-spark-runtime.jar", layout.loader_jar):
        jar.parent.mkdir(parents=True, exist_ok=True)
        jar.touch()
    home = jdk.pypi_jdk_home(cache, jdk.pypi_jdk_version(versions.JAVA_RANGES["spark"]))
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").touch()
    (home / "release").write_text('JAVA_VERSION="21.0.8"\n')
    monkeypatch.setenv(jdk.ENV_NO_SYSTEM_JDK, "1")
    return cache


def test_loader_self_kill_hook_reaches_only_the_first_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack = _FakeStack(config=SimpleNamespace(cache_dir=_provisioned_cache(tmp_path, monkeypatch)))
    config = icefloe_config(stack, "lake.s.t", ("t",), loader_id="l")
    hooks = TestHooks(kill_after_commit=1, self_kills=1)
    loader = LoaderProcess(config, stack, tmp_path, History(tmp_path / "h.jsonl"), hooks=hooks)
    envs: list[dict[str, str]] = []

    def fake_start(argv: list[str], env: dict[str, str], cwd: Path) -> int:
        envs.append(env)
        return 1

    loader.process.start = fake_start  # type: ignore[method-assign]
    loader._ensure_watcher = lambda: None  # type: ignore[method-assign]
    loader.start(wait=False)
    loader.start(wait=False)
    assert envs[0][KILL_AFTER_COMMIT_ENV] == "1"
    assert KILL_AFTER_COMMIT_ENV not in envs[1]
    starts = [e.data for e in loader.history if e.name == "start"]
    assert [d["kill_after_commit"] for d in starts] == [1, None]
    # The file names the provisioned runtime and loads back; the secret stays out of it.
    written = loader.config_file.read_text()
    assert "not-a-secret" not in written
    config = load_config(loader.config_file, env={})
    assert config.spark.jars and config.spark.java_home
    assert config.catalog.s3_secret_key is None


_FakeStack = functools.partial(
    SimpleNamespace,
    bootstrap_servers="localhost:1",
    catalog_uri="http://localhost:2",
    catalog=RestCatalog("http://localhost:2"),
    s3_endpoint="http://localhost:3",
    credentials=SimpleNamespace(access_key="a", secret_key=Secret("not-a-secret")),
)


def test_an_unknown_key_is_refused_naming_the_file_the_line_and_the_known_keys(
    tmp_path: Path,
) -> None:
    # Refused before anything else is read: a misspelt key never leaves a scenario doing less.
    for text, line, wrong, known in (
        ('title = "t"\nstepz = 3\n', 2, "'stepz'", "known: name, title"),
        ('title = "t"\n\n[topic]\npartitons = 2\n', 4, "'partitons' in [topic]", "partitions"),
    ):
        path = tmp_path / "mine.toml"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ScenarioError) as raised:
            load(path)
        message = str(raised.value)
        assert message.startswith(f"{path}: line {line}: unknown key {wrong}"), message
        assert known in message, message
    misspelt = {"title": "x", "breaks": {"b": {"expect": {"check": "c", "anomly": "a"}}}}
    with pytest.raises(ScenarioError, match=r"'anomly' in \[breaks.b.expect\]; known: check"):
        parse(misspelt, name="x")


def test_unknown_profile_is_refused() -> None:
    with pytest.raises(ScenarioError, match="profile"):
        parse(MINIMAL, profile="soak")


def test_only_the_last_wait_for_rows_settles_unless_a_step_says_otherwise() -> None:
    doc = {
        "steps": [
            {"do": "await_loaded"},
            {"do": "sleep", "seconds": 1},
            {"do": "await_loaded", "settle_s": 3},
            {"do": "await_loaded", "timeout_s": 9},
        ],
        "checks": [{"check": "exactly_once"}],
    }
    steps = parse(doc).steps
    timeline = settle_at_the_end(steps)
    assert [s.params.settle_s for s in timeline if s.do == "await_loaded"] == [0.0, 3, None]
    assert timeline[3].params.timeout_s == 9
    assert timeline[1] is steps[1]
    assert [s.params.settle_s for s in steps if s.do == "await_loaded"] == [None, 3, None]


def test_find_accepts_names_with_or_without_number() -> None:
    assert find("exactly_once_kill9").name == find("01_exactly_once_kill9").name
    with pytest.raises(ScenarioError, match="no single scenario"):
        find("nothing_like_this")


def test_history_round_trips_through_its_file(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    history = History(path)
    history.record("fault", "ok", "kill_loader.inject", pid=7, phase="x")
    history.record("loader", "info", "exit", code=1)
    again = History.read(path)
    assert [e.to_json() for e in again] == [e.to_json() for e in history]
    assert select(again, kind="fault")[0].data == {"pid": 7, "phase": "x"}
    with pytest.raises(ValueError):
        history.record("nonsense", "ok", "x")


def test_reports_render_markdown_and_junit(tmp_path: Path) -> None:
    scenario = load(Path(__file__).parents[2] / "scenarios" / "01_exactly_once_kill9.toml")
    history = History.of(
        [
            (1.0, "fault", "ok", "kill_loader.inject", {}),
            (3.0, "fault", "ok", "kill_loader.heal", {}),
        ]
    )
    check = CheckResult("exactly_once", "invalid", "1 lost")
    result = RunResult(
        scenario,
        42,
        None,
        [check],
        "invalid",
        12.0,
        [("publish", 3.0)],
        tmp_path,
        {"topic": "t", "table": "lake.s.t"},
        history=history,
    )
    text = report.markdown(result)
    assert "--seed 42" in text and "| exactly_once | invalid | 1 lost |" in text
    assert "kill_loader" in text
    xml = report.junit_xml([result])
    assert 'failures="1"' in xml and "replay: icefloe scenario run" in xml


def test_variables_given_override_the_files_and_the_profiles() -> None:
    smaller = {"count": 1500, "rate": 30}
    for profile in ("ci", "full"):
        publish = find("01_exactly_once_kill9", profile=profile, variables=smaller).steps[1]
        assert (publish.params.workload.count, publish.params.workload.rate) == (1500, 30.0)
    default = find("01_exactly_once_kill9").steps[1].params.workload
    assert (default.count, default.rate) == (2000, 20.0)
