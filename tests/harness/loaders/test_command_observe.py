"""A command loader's ``[observe]`` table, without a stack: read into an ``ObserveSpec``,
refused when wrong (naming the file and the key), its consumer group rendered for a target,
and the example loader's description (``examples/loaders/pyiceberg``) read as the kit reads it."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from icefloe.harness.history import History
from icefloe.harness.loaders import command
from icefloe.harness.loaders.base import LoaderTarget
from icefloe.harness.loaders.kinds import resolve
from tests.harness.fakes import RestCatalog

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "loaders" / "pyiceberg"

HALT = r"topic (?P<topic>\S+) partition (?P<partition>\d+) offset (?P<offset>\d+)"

HEAD = 'command = ["${python}", "-c", "pass"]\n'


def _stack() -> SimpleNamespace:
    return SimpleNamespace(
        bootstrap_servers="127.0.0.1:9092",
        catalog_uri="http://127.0.0.1:8181",
        catalog=RestCatalog("http://127.0.0.1:8181"),
        s3_endpoint="http://127.0.0.1:9000",
        credentials=SimpleNamespace(access_key="AKID", secret_key=SimpleNamespace(reveal=str)),
    )


def _target(tmp_path: Path) -> LoaderTarget:
    return LoaderTarget(
        loader_id="orders-1",
        table="lake.s1.orders",
        topics=("orders",),
        dead_letter_topic=None,
        state_dir=tmp_path / "loader",
    )


def _spec(tmp_path: Path, observe: str) -> command.CommandSpec:
    path = tmp_path / "mine.toml"
    path.write_text(HEAD + "[observe]\n" + observe + "\n")
    return command.load_spec(path)


def test_a_description_without_observe_declares_nothing(tmp_path: Path) -> None:
    path = tmp_path / "plain.toml"
    path.write_text(HEAD)
    observe = command.load_spec(path).observe
    assert observe == command.ObserveSpec()
    assert all(value is None for key, value in vars(observe).items() if key != "refuses")
    assert observe.refuses == (), "no policy of icefloe's is held against it"


def test_a_summary_position_and_its_halts_are_read(tmp_path: Path) -> None:
    spec = _spec(
        tmp_path,
        'commit_key = "my.offsets"\nposition = "summary"\nposition_key = "my.offsets"\n'
        f"commit_interval_s = 2\nhalt_pattern = '{HALT}'",
    )
    assert spec.observe == command.ObserveSpec(
        commit_key="my.offsets",
        position="summary",
        position_key="my.offsets",
        commit_interval_s=2.0,
        halt_pattern=HALT,
    )
    assert isinstance(spec.observe.commit_interval_s, float)


def test_a_group_position_is_rendered_for_its_target(tmp_path: Path) -> None:
    spec = _spec(tmp_path, 'position = "group"\nconsumer_group = "connect-${loader_id}"')
    assert spec.observe.consumer_group == "connect-${loader_id}"  # kept as written
    target = _target(tmp_path)
    assert command.consumer_group(spec, target, _stack()) == "connect-orders-1"
    assert command.consumer_group(spec, target) == "connect-orders-1"  # no stack needed
    loader = command.CommandKind(spec).make(target, _stack(), History())
    assert loader.consumer_group() == "connect-orders-1"
    # A loader that keeps its position elsewhere has no group.
    other = _spec(tmp_path, 'position = "summary"\nposition_key = "k"')
    assert command.consumer_group(other, target, _stack()) is None


def test_the_kind_tells_the_checks_what_it_declares(tmp_path: Path) -> None:
    spec = _spec(
        tmp_path,
        'position = "group"\nconsumer_group = "g-${table_name}"\ncommit_interval_s = 4\n'
        f"partition_discovery_s = 300\nhalt_pattern = '{HALT}'",
    )
    observer = command.CommandKind(spec).observer(_target(tmp_path))
    assert observer.discovery_s == 300.0  # the drain after the topic grew waits that too
    assert observer.commit_key is None  # every snapshot not made through Trino
    assert (observer.position, observer.consumer_group) == ("group", "g-orders")
    assert observer.cadence_s == 4.0 and observer.drain_s == 50.0
    assert observer.halted_at("stopped at topic t partition 2 offset 17: why") == [("t", 2, 17)]
    assert observer.letter_headers is None  # [observe] names no dead-letter headers
    bare = tmp_path / "bare.toml"
    bare.write_text(HEAD)
    plain = command.CommandKind(command.load_spec(bare)).observer(_target(tmp_path))
    assert plain.position is None and plain.cadence_s is None and plain.halt_pattern is None
    assert plain.discovery_s == 0.0


@pytest.mark.parametrize(
    ("observe", "key"),
    [
        ('commit_keys = "x"', "unknown key"),
        ('position = "summary"', "position_key"),
        ('position = "group"', "consumer_group"),
        ('position = "checkpoint"', "position"),
        ('position = "group"\nconsumer_group = "g"\nposition_key = "k"', "position_key"),
        ('position_key = "k"', "position_key"),
        ('consumer_group = "g"', "consumer_group"),
        ('position = "group"\nconsumer_group = "${group_id}"', "consumer_group"),
        ('position = "group"\nconsumer_group = "${s3_secret_key}"', "consumer_group"),
        ('commit_key = ""', "commit_key"),
        ("commit_key = 3", "commit_key"),
        ("commit_interval_s = 0", "commit_interval_s"),
        ('commit_interval_s = "2s"', "commit_interval_s"),
        ("commit_interval_s = true", "commit_interval_s"),
        ("partition_discovery_s = -1", "partition_discovery_s"),
        ('partition_discovery_s = "5m"', "partition_discovery_s"),
        ("halt_pattern = 'topic (?P<topic>\\S+'", "halt_pattern"),
        ("halt_pattern = 'topic (\\S+) partition (\\d+) offset (\\d+)'", "halt_pattern"),
        ("halt_pattern = 'topic (?P<topic>\\S+) offset (?P<offset>\\d+)'", "partition"),
        ("restart_pattern = 'to RESTARTING ('", "restart_pattern"),
        ("drain_s = 0", "drain_s"),
        ('refuses = ["truncated_json"]', "refuses"),
        ('refuses = "oversized"', "refuses"),
    ],
)
def test_a_wrong_observe_table_is_refused_naming_the_file_and_the_key(
    tmp_path: Path, observe: str, key: str
) -> None:
    with pytest.raises(command.SpecError) as raised:
        _spec(tmp_path, observe)
    message = str(raised.value)
    assert str(tmp_path / "mine.toml") in message
    assert "[observe]" in message and re.search(re.escape(key), message), message


def test_the_policy_a_loader_refuses_reaches_its_observer(tmp_path: Path) -> None:
    spec = _spec(tmp_path, 'refuses = ["oversized"]')
    assert spec.observe.refuses == ("oversized",)
    assert command.CommandKind(spec).observer(_target(tmp_path)).refuses == ("oversized",)
    assert _spec(tmp_path, "").observe.refuses == ()


def test_observe_must_be_a_table(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('observe = "summary"\n' + HEAD)
    with pytest.raises(command.SpecError, match=r"mine\.toml: \[observe\]: expected a table"):
        command.load_spec(path)


def test_spec_dir_names_the_descriptions_folder(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    path = folder / "mine.toml"
    path.write_text('command = ["${python}", "${spec_dir}/run.py", "--config", "${config_file}"]\n')
    loader = command.CommandKind(command.load_spec(path)).make(
        _target(tmp_path), _stack(), History()
    )
    # The command runs in the loader's own folder: the script's path must not depend on it.
    assert loader.argv()[1] == str(folder.resolve() / "run.py")


def test_the_example_loaders_description_is_read_as_the_kit_reads_it(tmp_path: Path) -> None:
    spec_file = EXAMPLE / "loader.toml"
    kind = resolve(f"command:{spec_file}")
    assert isinstance(kind, command.CommandKind)
    observe = kind.spec.observe
    assert observe.commit_key == observe.position_key == "example.offsets"
    assert observe.position == "summary" and observe.commit_interval_s is not None
    assert observe.halt_pattern is not None
    line = "stopped at topic orders partition 1 offset 41: integer: expected an integer"
    assert kind.observer(_target(tmp_path)).halted_at(line) == [("orders", 1, 41)]
    target = LoaderTarget("l1", "lake.s1.orders", ("orders",), "orders.dlq", tmp_path / "l1")
    loader = kind.make(target, _stack(), History())
    script = Path(loader.argv()[1])
    assert script == EXAMPLE / "loader.py" and script.is_file()
    text = command.values(target, _stack(), loader.config_file)
    assert "AKID" not in " ".join(loader.argv()) and "AKID" not in str(text)
    assert loader.environment()["AWS_ACCESS_KEY_ID"] == "AKID"
    # The example imports nothing of the kit: it runs with its two packages alone.
    source = (EXAMPLE / "loader.py").read_text()
    assert not re.search(r"^\s*(from|import) (harness|loader|publisher)\b", source, re.M)


def test_dead_letter_headers_let_the_checks_read_its_letters(tmp_path: Path) -> None:
    spec = _spec(
        tmp_path,
        "[observe.dead_letter_headers]\n"
        'topic = "x.topic"\npartition = "x.partition"\noffset = "x.offset"\nreason = "x.why"',
    )
    observer = command.CommandKind(spec).observer(_target(tmp_path))
    letter = observer.letter(
        0, 9, {"x.topic": "orders", "x.partition": "1", "x.offset": "7", "x.why": "not JSON"}
    )
    assert letter.source == ("orders", 1, 7) and letter.reason == "not JSON"
    assert letter.kind is None  # its words are its own: no kit error kind is compared
    # Without the table, the kit cannot read its letters.
    assert (
        command.CommandKind(_spec(tmp_path, "")).observer(_target(tmp_path)).letter_headers is None
    )


@pytest.mark.parametrize(
    "headers",
    ['topic = "t"\npartition = "p"', 'topic = "t"\npartition = "p"\noffset = "o"\nkind = "k"'],
)
def test_dead_letter_headers_name_the_source_and_nothing_else(tmp_path: Path, headers: str) -> None:
    with pytest.raises(command.SpecError, match="dead_letter_headers"):
        _spec(tmp_path, "[observe.dead_letter_headers]\n" + headers)


def test_a_declared_restart_pattern_and_drain_reach_the_observer(tmp_path: Path) -> None:
    spec = _spec(
        tmp_path, "restart_pattern = 'switched from state \\w+ to RESTARTING'\ndrain_s = 12"
    )
    observer = command.CommandKind(spec).observer(_target(tmp_path))
    assert observer.restart_pattern == r"switched from state \w+ to RESTARTING"
    assert observer.drain_s == 12.0
