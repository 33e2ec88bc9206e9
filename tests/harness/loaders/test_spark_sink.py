"""Spark's own streaming sink as a loader kind, without a stack: its descriptions read as the
kit reads them, its committed position read from a Spark checkpoint folder (the newest batch
in ``commits/``, not the newest planned in ``offsets/``), refused when the folder is not
Spark's, and a loss judged by it names the batch that passed the row."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.history import History
from icefloe.harness.loaders import command
from icefloe.harness.loaders.base import Capability, LoaderTarget
from icefloe.harness.loaders.kinds import NAMES, resolve
from icefloe.harness.loaders.spark_sink import SPECS
from icefloe.harness.observer import (
    CHECKPOINT,
    Observer,
    batch_in_flight,
    checkpoint_position,
    observer_of,
)
from icefloe.harness.scenarios.checks.facts.reads import Observed
from icefloe.harness.scenarios.checks.verdict import run_check
from tests.harness.test_neutral_verdicts import LEDGER, TOPIC, observer_event, positions


def _batch(folder: Path, n: int, offsets: dict[str, dict[str, int]], committed: bool) -> None:
    (folder / "offsets").mkdir(parents=True, exist_ok=True)
    (folder / "commits").mkdir(parents=True, exist_ok=True)
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}}
    (folder / "offsets" / str(n)).write_text(f"v1\n{json.dumps(meta)}\n{json.dumps(offsets)}")
    if committed:
        (folder / "commits" / str(n)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def _target(tmp_path: Path) -> LoaderTarget:
    return LoaderTarget("l-1", "lake.s.t", (TOPIC,), None, tmp_path / "loader")


def test_the_position_is_the_newest_committed_batchs_end_offsets(tmp_path: Path) -> None:
    _batch(tmp_path, 0, {TOPIC: {"0": 3, "1": 2}}, committed=True)
    _batch(tmp_path, 1, {TOPIC: {"0": 7, "1": 5}}, committed=True)
    # Planned but not committed: Spark runs it again after a restart, from batch 1's end.
    _batch(tmp_path, 2, {TOPIC: {"0": 9, "1": 9}}, committed=False)
    (tmp_path / "commits" / ".2.crc").write_text("")
    assert checkpoint_position(tmp_path) == (1, {TOPIC: {0: 7, 1: 5}})


def test_a_batch_planned_and_not_committed_is_in_flight(tmp_path: Path) -> None:
    assert not batch_in_flight(tmp_path / "missing")
    _batch(tmp_path, 0, {TOPIC: {"0": 3}}, committed=True)
    assert not batch_in_flight(tmp_path)
    # Killed after its table commit, before Spark marked the batch done: a start runs it again.
    _batch(tmp_path, 1, {TOPIC: {"0": 7}}, committed=False)
    (tmp_path / "commits" / ".1.crc").write_text("")
    assert batch_in_flight(tmp_path)
    (tmp_path / "commits" / "1").write_text("v1\n{}")
    assert not batch_in_flight(tmp_path)


def test_no_committed_batch_is_no_position_and_a_foreign_file_is_refused(tmp_path: Path) -> None:
    assert checkpoint_position(tmp_path / "missing") == (None, {})
    _batch(tmp_path, 0, {TOPIC: {"0": 3}}, committed=False)
    assert checkpoint_position(tmp_path) == (None, {})
    (tmp_path / "commits" / "0").write_text("v1\n{}")
    (tmp_path / "offsets" / "0").write_text('v1\n{}\n["not", "offsets"]')
    with pytest.raises(ValueError, match="offsets/0"):
        checkpoint_position(tmp_path)


def test_a_checkpoint_position_needs_its_folder() -> None:
    with pytest.raises(ValueError, match="checkpoint_dir"):
        Observer(kind="k", position=CHECKPOINT)
    spec = "command = ['x']\n[observe]\n"
    for observe, error in (
        ('position = "checkpoint"', "checkpoint: required"),
        ('position = "summary"\nposition_key = "k"\ncheckpoint = "c"', "checkpoint: read only"),
        ('position = "checkpoint"\ncheckpoint = "${nowhere}"', "unknown placeholder"),
    ):
        with pytest.raises(command.SpecError, match=error):
            command._observe(tomllib.loads(spec + observe)["observe"])


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_shipped_descriptions_are_kinds_by_their_own_names(name: str, tmp_path: Path) -> None:
    assert name in NAMES
    kind = resolve(name)
    assert kind.name == name
    assert kind.capabilities == {
        Capability.KILL,
        Capability.FREEZE,
        Capability.SUPERVISED,
        Capability.GLUE,
    }
    target = _target(tmp_path)
    observer = kind.observer(target)
    assert observer.position == CHECKPOINT
    assert observer.checkpoint_dir == str(target.state_dir.resolve() / "checkpoint")
    assert observer.commit_key == "spark.sql.streaming.epochId" and observer.cadence_s == 1.0
    assert observer.letter_headers is None  # it sends no dead letters
    assert observer_of(History.of([observer_event(observer)]).events) == observer
    loader: Any = kind.make(target, None, History.of([]))
    argv = loader.argv()
    assert ("FAILFAST" in argv) == name.endswith("failfast")
    # Its configuration names the checkpoint the observer reads, and never a credential.
    rendered = loader._render(loader.spec.config_template)
    assert f'checkpoint = "{observer.checkpoint_dir}"' in rendered
    assert "secret" not in rendered.lower()


def test_spark_placeholders_are_looked_up_only_when_a_description_uses_them(
    tmp_path: Path,
) -> None:
    target = _target(tmp_path)

    class NoCache:  # a stack whose cache must not be read
        bootstrap_servers = catalog_uri = s3_endpoint = "x"

        @property
        def config(self) -> Any:
            raise AssertionError("the Spark runtime was looked up")

    mapping = command.values(target, NoCache(), tmp_path / "c")
    assert mapping["topic"] == TOPIC and "spark_jars" not in mapping
    with pytest.raises(AssertionError, match="Spark runtime"):
        mapping["spark_jars"]


def test_a_loss_judged_by_the_checkpoint_names_its_batch() -> None:
    observer = Observer(kind="spark-sink", position=CHECKPOINT, checkpoint_dir="/c", cadence_s=1.0)
    history = History.of(
        [
            observer_event(observer),
            positions({TOPIC: {"0": 4}}, 60.0, checkpoint="/c", batch=6),
        ]
    )
    result = run_check("exactly_once", history, LEDGER, Observed({"id-0-0": 1, "id-0-4": 1}))
    lost = result.anomalies["lost"]
    assert lost.keys == {"id-0-1", "id-0-2", "id-0-3"}
    assert "the checkpoint's committed batch 6 at offset 4" in lost.examples[0]
