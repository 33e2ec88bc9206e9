"""The loader kinds and what a scenario needs of them, without a stack: each kind is a
``Loader``, capabilities decide applicability, a command loader's description is checked when
read and never puts a credential on its command line."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from icefloe.harness.history import History, select
from icefloe.harness.loaders import command
from icefloe.harness.loaders.base import Capability, Loader, LoaderTarget
from icefloe.harness.loaders.capabilities import needs, not_applicable
from icefloe.harness.loaders.kafka_connect import KafkaConnectKind
from icefloe.harness.loaders.kinds import resolve
from icefloe.harness.scenarios import model
from tests.harness.fakes import RestCatalog


def _stack(tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(
        bootstrap_servers="127.0.0.1:9092",
        catalog_uri="http://127.0.0.1:8181",
        catalog=RestCatalog("http://127.0.0.1:8181"),
        s3_endpoint="http://127.0.0.1:9000",
        credentials=SimpleNamespace(
            access_key="AKID", secret_key=SimpleNamespace(reveal=lambda: "s3cr3t")
        ),
        config=SimpleNamespace(cache_dir=tmp_path / "cache", run_dir=tmp_path),
    )


def _target(tmp_path: Path, **changes: object) -> LoaderTarget:
    fields: dict[str, object] = {
        "loader_id": "l1",
        "table": "lake.s1.events",
        "topics": ("src",),
        "dead_letter_topic": "src.dlq",
        "state_dir": tmp_path / "loader",
    }
    fields.update(changes)
    return LoaderTarget(**fields)  # type: ignore[arg-type]


SPEC = """
name = "script"
command = ["${python}", "-c", "print('ready ${topic} ${table}')", "${config_file}"]
capabilities = ["kill", "freeze"]
ready_log = "ready"
progress = "its folder ${state_dir}"

[config]
name = "my.conf"
template = '''
bootstrap = "${bootstrap_servers}"
table = "${namespace}.${table_name}"
costs = "$$5"
'''

[env]
MY_SECRET = "${s3_secret_key}"
"""


def test_every_kind_is_a_loader(tmp_path: Path) -> None:
    spec_file = tmp_path / "script.toml"
    spec_file.write_text(SPEC)
    stack = _stack(tmp_path)
    for name in ("icefloe", "kafka-connect", f"command:{spec_file}"):
        kind = resolve(name)
        target = _target(tmp_path)
        if name == "icefloe":  # building its config needs the provisioned Spark runtime
            from icefloe.harness.loaders.process import LoaderProcess

            loader: object = LoaderProcess(
                SimpleNamespace(loader_id="l1", dead_letter_topic=None), stack, tmp_path, History()
            )
        else:
            loader = kind.make(target, stack, History())
        assert isinstance(loader, Loader), name
        assert kind.settle_s(target) > 0 and kind.describe()
    # The run's history, even while it is still empty (an empty history is falsy).
    history = History()
    sink = KafkaConnectKind().make(_target(tmp_path), stack, history)
    assert sink.sink.history is history
    with pytest.raises(ValueError, match="unknown loader"):
        resolve("no-such-loader")


def test_a_scenario_needing_what_a_loader_lacks_is_not_applicable_with_the_reason() -> None:
    by_name = {s.name: s for s in model.discover(profile="ci")}
    connect = KafkaConnectKind().capabilities
    icefloe = resolve("icefloe").capabilities
    for scenario in by_name.values():
        assert not_applicable(needs(scenario), icefloe) == [], scenario.name
    # Kills from outside, a dead-letter topic, a supervisor: the sink has them all.
    for name in ("01_exactly_once_kill9", "02_malformed_dead_letter", "09_broker_outage"):
        assert not_applicable(needs(by_name[name]), connect) == [], name
    zombie = not_applicable(needs(by_name["15_zombie_writer"]), connect)
    assert any(line.startswith("no fencing: zombie_loader") for line in zombie)
    assert any(line.startswith("no fault_points:") for line in zombie)
    wire = not_applicable(needs(by_name["17_wire_faults"]), connect)
    assert any("via" in line for line in wire)
    # A loader that can only be killed: scenario 01 still applies, 02 (dead letters) does not.
    only_kill = {Capability.KILL}
    assert not_applicable(needs(by_name["01_exactly_once_kill9"]), only_kill) == []
    assert not_applicable(needs(by_name["02_malformed_dead_letter"]), only_kill)


def test_a_break_only_step_is_not_needed_by_the_plain_run() -> None:
    """01's break kills at a fault point (kill_after_commit); its plain run kills from outside."""
    scenario = model.find("01_exactly_once_kill9", profile="ci")
    assert Capability.FAULT_POINTS not in needs(scenario)
    broken = scenario.with_break("no_guard")
    assert Capability.FAULT_POINTS in broken.needs()


def test_a_command_loader_renders_its_template_and_keeps_credentials_in_its_environment(
    tmp_path: Path,
) -> None:
    spec_file = tmp_path / "script.toml"
    spec_file.write_text(SPEC)
    kind = resolve(f"command:{spec_file}")
    loader = kind.make(_target(tmp_path), _stack(tmp_path), History())
    assert isinstance(loader, command.CommandLoader)
    argv = loader.argv()
    assert argv[0] == sys.executable and "ready src lake.s1.events" in argv[2]
    assert not any("s3cr3t" in part for part in argv)
    assert loader.environment()["MY_SECRET"] == "s3cr3t"
    assert loader.progress() == f"its folder {tmp_path.resolve() / 'loader'}"
    # A relative folder (a run's, under reports/) is made absolute: the command runs in it.
    relative = kind.make(_target(Path("reports/x")), _stack(tmp_path), History())
    assert Path(relative.argv()[3]).is_absolute()
    assert kind.capabilities == {Capability.KILL, Capability.FREEZE}


def test_a_command_loader_starts_is_killed_and_its_own_exit_is_recorded(tmp_path: Path) -> None:
    """A real child process: ready by its log line, kill -9 is expected, an exit by itself
    is not (with its log tail)."""
    spec_file = tmp_path / "sleeper.toml"
    spec_file.write_text(
        'command = ["${python}", "-c", "import sys, time; print(open(sys.argv[1]).read(), '
        'flush=True); time.sleep(float(sys.argv[2]))", "${config_file}", "60"]\n'
        'ready_log = "bootstrap = 127"\n'
        '[config]\ntemplate = "bootstrap = ${bootstrap_servers}"\n'
    )
    history = History()
    loader = resolve(f"command:{spec_file}").make(_target(tmp_path), _stack(tmp_path), history)
    assert loader.start() < 30
    assert loader.health().healthy and "127.0.0.1:9092" in loader.configuration()["config"]
    loader.freeze()
    assert loader.frozen() and not loader.health().healthy
    loader.thaw()
    killed = loader.kill()
    assert killed is not None and loader.wait_exit(10)
    spec_file.write_text(spec_file.read_text().replace('"60"', '"0.5"'))
    loader = resolve(f"command:{spec_file}").make(_target(tmp_path), _stack(tmp_path), history)
    loader.start()
    assert loader.wait_exit(10)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and len(select(history, "loader", "exit")) < 2:
        time.sleep(0.1)
    exits = {e.data["pid"]: e.data for e in select(history, "loader", "exit")}
    assert exits.pop(killed)["expected"] is True
    ((own,),) = [exits.values()]
    assert own["expected"] is False and own["code"] == 0
    loader.close()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ('command = ["run", "--key", "${s3_secret_key}"]', "only in \\[env\\]"),
        ('command = ["run", "${tabel}"]', "unknown placeholder"),
        ('command = ["run"]\ncapabilities = ["teleport"]', "teleport"),
        ('command = ["run"]\nretries = 3', "unknown key"),
        ("command = []", "command"),
    ],
)
def test_a_wrong_command_loader_description_is_refused(
    tmp_path: Path, change: str, message: str
) -> None:
    spec_file = tmp_path / "bad.toml"
    spec_file.write_text(change + "\n")
    with pytest.raises(command.SpecError, match=message):
        command.load_spec(spec_file)


def test_the_soak_does_not_apply_to_a_loader_without_fault_points() -> None:
    from icefloe.harness.scenarios.generative.soak import NotApplicable, soak

    with pytest.raises(NotApplicable, match="no fault_points: its loader lane"):
        soak(None, 1.0, loader=KafkaConnectKind())


def test_a_loader_that_stopped_loading_for_good_has_exited_and_is_stopped(tmp_path: Path) -> None:
    """A Kafka Connect worker whose tasks failed lives on: that is its exit (unexpected, its
    traces as Connect wrote them, which the sink's observer reads the record from), and the
    worker is stopped so a later start works."""
    from icefloe.harness.loaders import kafka_connect
    from icefloe.harness.loaders.base import ExitWatch
    from icefloe.harness.stack.process import ManagedProcess

    process = ManagedProcess("worker", tmp_path)
    process.start([sys.executable, "-c", "import time; time.sleep(60)"], {}, tmp_path)
    history = History()
    trace = (
        "DataException: An error occurred converting record, topic: src, partition, 0, offset: 56"
    )
    sink = SimpleNamespace(
        health=lambda: kafka_connect.ConnectorHealth(True, "RUNNING", {0: "FAILED"}, 1, {0: trace})
    )
    loader = SimpleNamespace(sink=sink)
    why = kafka_connect.KafkaConnectLoader._failed(loader)  # type: ignore[arg-type]
    assert why == trace
    observer = kafka_connect.KafkaConnectKind().observer(
        LoaderTarget("sink", "lake.s.t", ("src",), None, tmp_path)
    )
    assert observer.halted_at(why) == [("src", 0, 56)]
    watch = ExitWatch(process, history, lambda: None, process.log_tail, lambda: why, process.kill)
    watch.started()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and process.is_running():
        time.sleep(0.1)
    watch.close()
    (exit_,) = select(history, "loader", "exit")
    assert exit_.data["expected"] is False and exit_.data["message"] == trace
    assert not process.is_running()


def test_a_supervised_loader_that_stopped_loading_for_good_is_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its failed tasks are its exit, for its supervisor as for the checks: it is started
    again, as icefloe's loader is after it exits."""
    from icefloe.harness.loaders import base
    from icefloe.harness.stack.process import ManagedProcess

    monkeypatch.setattr(base, "SUPERVISOR_DELAY_S", 0.0)
    process = ManagedProcess("worker", tmp_path)
    process.start([sys.executable, "-c", "import time; time.sleep(60)"], {}, tmp_path)
    history = History()
    restarts: list[int] = []
    watch = base.ExitWatch(
        process, history, lambda: restarts.append(1), process.log_tail,
        lambda: "task 0 failed", process.kill,
    )  # fmt: skip
    watch.restart_on_exit = True
    watch.started()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not restarts:
        time.sleep(0.1)
    watch.close()
    assert restarts == [1]
    assert [e.name for e in select(history, "loader")][-3:] == [
        "stopped_failed",
        "exit",
        "supervisor_restart",
    ]


def test_a_failed_loader_is_gone_by_the_time_its_exit_is_recorded(tmp_path: Path) -> None:
    """Whoever waits for its exit (a scenario's next start) must find the worker stopped: a
    start racing the stop found it running ("runs already")."""
    from icefloe.harness.loaders.base import ExitWatch
    from icefloe.harness.stack.process import ManagedProcess

    process = ManagedProcess("worker", tmp_path)
    process.start([sys.executable, "-c", "import time; time.sleep(60)"], {}, tmp_path)
    running_at_exit: list[bool] = []

    def listen(event: Any) -> None:
        if event.name == "exit":
            running_at_exit.append(process.is_running())

    history = History(listener=listen)
    slow_stop = lambda: (time.sleep(0.5), process.kill())  # noqa: E731
    watch = ExitWatch(process, history, lambda: None, process.log_tail, lambda: "failed", slow_stop)
    watch.started()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not running_at_exit:
        time.sleep(0.1)
    watch.close()
    assert running_at_exit == [False]
