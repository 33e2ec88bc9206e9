"""A loss is shown through each kind of committed position a loader may declare.

The toy is the pyiceberg example (``examples/loaders/pyiceberg``) copied and changed the way a
buggy loader is: before each append it commits its position to all three places a loader may
keep one (the append's own summary key, a Kafka consumer group, a Spark-format checkpoint), and
every second batch it loses the batch's rows while the position moves on. Its description
declares one of the three as its position; for each, the run must come out ``lost`` with the
evidence line naming that position (a commit's summary, the group, the checkpoint). Its honest
twin (the same toy, no rows lost) must pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.loaders.kinds import resolve
from icefloe.harness.resources import kit_file
from icefloe.harness.scenarios.model import parse
from icefloe.harness.scenarios.reports import report
from icefloe.harness.scenarios.runner import RunOptions, run_scenario

pytestmark = pytest.mark.scenario

EXAMPLE = kit_file("examples", "loaders", "pyiceberg")

_SETTINGS = """    max_message_bytes: int = 1 << 20
"""
_TOY_SETTINGS = """    max_message_bytes: int = 1 << 20
    group_id: str = ""
    checkpoint: str = ""
    lose_every: int = 0
"""
_BEFORE_APPEND = (
    "        # Without rows the append still commits: it moves the position past dead letters.\n"
)
_TOY_BEFORE_APPEND = """        self.batches = getattr(self, "batches", 0) + 1
        commit_position_first(self.settings, self.consumer, position, self.batches)
        if self.settings.lose_every and self.batches % self.settings.lose_every == 0:
            log.info("toy: batch %d's %d rows are lost", self.batches, len(rows))
            rows = []
        # Without rows the append still commits: it moves the position past dead letters.
"""
_HELPER = '''

def commit_position_first(settings, consumer, position, batch):
    """The toy's position, committed before its write: a consumer group and a checkpoint."""
    from pathlib import Path

    from confluent_kafka import TopicPartition

    parts = position.get(settings.topic, {})
    if settings.group_id:
        offsets = [TopicPartition(settings.topic, int(p), o) for p, o in parts.items()]
        committer = Consumer({"bootstrap.servers": settings.bootstrap_servers,
                              "group.id": settings.group_id, "enable.auto.commit": False})
        committer.commit(offsets=offsets, asynchronous=False)
        committer.close()
    if settings.checkpoint:
        folder = Path(settings.checkpoint)
        for log_name in ("offsets", "commits"):
            (folder / log_name).mkdir(parents=True, exist_ok=True)
        (folder / "offsets" / str(batch)).write_text(
            "v1\\n{}\\n" + json.dumps({settings.topic: parts}) + "\\n")
        (folder / "commits" / str(batch)).write_text("v1\\n{}\\n")
'''

_OBSERVE = {
    "summary": 'position = "summary"\nposition_key = "example.offsets"',
    "group": 'position = "group"\nconsumer_group = "${loader_id}"',
    "checkpoint": 'position = "checkpoint"\ncheckpoint = "${state_dir}/checkpoint"',
}
_EVIDENCE = {
    "summary": "carries position",
    "group": "consumer group",
    "checkpoint": "the checkpoint's committed batch",
}

TOY_DRAIN_S = 10.0
"""The toy's declared drain (``[observe] drain_s``): it starts in about two seconds and writes
a batch within 1.5 s of committing its position, so a row behind its position for 10 s is one it
dropped; the kit's default for a loader declaring only its commit interval (30 s + 5 intervals)
would hold each losing run about 30 s longer to show the same."""

SCENARIO = {
    "title": "A steady publish, no fault",
    "description": "600 messages at 100/s into a topic of two partitions.",
    "topic": {"partitions": 2},
    "workload": {"rate": 100, "key": "event-id"},
    "steps": [
        {"do": "start_loader"},
        {"do": "publish", "phase": "steady", "count": 600},
        {"do": "await_loaded", "timeout_s": 90},
        {"do": "stop_loader"},
    ],
    "checks": [{"check": "exactly_once"}],
}


def toy(folder: Path, position: str, lose_every: int) -> Path:
    """The toy's program and its description (``loader.toml``) in ``folder``."""
    folder.mkdir(parents=True)
    source = (EXAMPLE / "loader.py").read_text(encoding="utf-8")
    for old, new in ((_SETTINGS, _TOY_SETTINGS), (_BEFORE_APPEND, _TOY_BEFORE_APPEND)):
        assert source.count(old) == 1, f"the example changed: {old!r}"
        source = source.replace(old, new)
    main = "\ndef main("
    assert source.count(main) == 1, "the example changed: its main"
    source = source.replace(main, _HELPER + "\n" + main)
    (folder / "loader.py").write_text(source, encoding="utf-8")
    description = (EXAMPLE / "loader.toml").read_text(encoding="utf-8")
    head, observe = description.split("[observe]\n", 1)
    kept = [line for line in observe.split("\n[observe.")[0].splitlines()
            if not line.startswith(("position", "consumer_group", "checkpoint"))]  # fmt: skip
    head = head.replace(
        "'''\n\n[env]",
        f'group_id = "${{loader_id}}"\ncheckpoint = "${{state_dir}}/checkpoint"\n'
        f"lose_every = {lose_every}\n'''\n\n[env]",
    )
    text = (
        head + "[observe]\n" + _OBSERVE[position] + "\n" + f"drain_s = {TOY_DRAIN_S}\n"
        + "\n".join(kept) + "\n"
    )  # fmt: skip
    (folder / "loader.toml").write_text(text, encoding="utf-8")
    return folder / "loader.toml"


# The honest twin runs with one declaration: it shows the toy loses nothing by its own changes
# (its group and checkpoint commits included); an honest reading of a summary key, a group and a
# checkpoint is what the other loaders' scenario tests pass on (the example, Flink and the Kafka
# Connect sink, Spark's own sink).
CASES = [*((p, 2) for p in sorted(_OBSERVE)), ("group", 0)]


@pytest.mark.parametrize(
    ("position", "lose_every"), CASES, ids=[f"{'losing' if n else 'honest'}-{p}" for p, n in CASES]
)
def test_a_loss_is_shown_through_the_declared_position(
    stack: Any, tmp_path: Path, position: str, lose_every: int
) -> None:
    kind = resolve(f"command:{toy(tmp_path / 'toy', position, lose_every)}")
    scenario = parse(SCENARIO, name=f"position_{position}")
    result = run_scenario(scenario, stack, RunOptions(reports_dir=Path("reports"), loader=kind))
    path = report.write_markdown(result)
    details = "\n".join(report.summary_lines([result])) + f"\nreport: {path}"
    (check,) = [c for c in result.checks if c.check == "exactly_once"]
    if not lose_every:
        assert check.verdict == "valid", details
        return
    assert check.verdict == "invalid" and set(check.anomalies) == {"lost"}, details
    examples = check.anomalies["lost"].examples
    assert all(_EVIDENCE[position] in line for line in examples), (examples, details)
