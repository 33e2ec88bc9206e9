"""Observers: what a loader writes, read as facts every check shares, whatever the loader.

A loader shows what it did only through what it writes: snapshots and their summaries, the
committed offsets of a consumer group, dead letters and their headers, its log and its exit
codes. Each loader kind declares how to read those as an :class:`Observer`, plain data that a
run records in its history when it makes a loader (``info``/``observer``), so every check
judges every loader by the same facts, and a saved history is judged again without the
loader's code:

- its **commits**: the snapshots that carry ``commit_key`` in their summary or, with none
  declared, every snapshot not written through Trino (the kit makes its tables, schema
  changes and maintenance through Trino, whose snapshots carry :data:`TRINO_QUERY_KEY`);
- its **committed position**, where it resumes after a restart: the offsets in
  ``position_key`` of its newest commit on main (``position = "summary"``), or the committed
  offsets of ``consumer_group`` (``"group"``), or the end offsets of the newest micro-batch
  a Spark streaming query's checkpoint marks committed (``"checkpoint"``); a row before the
  position that is not in the table will never be read again;
- its **cadence** (how often it commits while it has rows) and how long a run's drain waits
  for it (``drain_s``, and ``discovery_s`` after a topic grew);
- a **dead letter**'s source message and reason (``letter_headers``), and whether its error
  kinds and field paths are the kit's vocabulary (``error_kinds``);
- the message a **halt** names (``halt_pattern``) and what its **exit codes** mean; what its
  log says of its own state, counted as evidence beside the verdicts (``log_facts``);
- for a loader that fences: the process that made a commit and a take-over's claim
  (``process_key``, ``claim_key``); whether it **stages** snapshots before publishing them.

What a kind does not declare is not a fact about it: a check that needs it is not applicable.
Histories recorded before observers existed are icefloe's loader's: :data:`ICEFLOE` reads them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from icefloe.loader import errors as loader_errors
from icefloe.loader import keys as loader_keys
from icefloe.publisher.malformations import POLICY

__all__ = [
    "CHECKPOINT",
    "GROUP",
    "ICEFLOE",
    "NO_ID",
    "SUMMARY",
    "TRINO_QUERY_KEY",
    "WAP_ID_KEY",
    "Letter",
    "Observer",
    "Positions",
    "checkpoint_position",
    "decode_positions",
    "observer_of",
]

NO_ID = "(no event_id)"
"""How a read of the table names rows whose ``event_id`` is null: a loader kept the row but not
its id (a permissive parser turns what it cannot read into nulls). Such a row names no message;
no published id looks like this."""

TRINO_QUERY_KEY = "trino_query_id"
"""Summary key of every snapshot Trino writes (the kit's table creation and maintenance)."""

WAP_ID_KEY = "wap.id"
"""Iceberg's summary key of a snapshot staged by write-audit-publish."""

SUMMARY = "summary"
GROUP = "group"
CHECKPOINT = "checkpoint"
POSITION_SOURCES = (SUMMARY, GROUP, CHECKPOINT)

LETTER_FIELDS = ("topic", "partition", "offset", "reason", "kind", "path", "loader")
"""What a dead letter may say: its source message's coordinates, why, the kit's error kind
and field path (``error_kinds``), and the loader that sent it."""

HALT_GROUPS = ("topic", "partition", "offset")
"""The named groups a ``halt_pattern`` has."""

Positions = dict[str, dict[int, int]]
"""A committed position: topic -> partition -> the next offset the loader reads."""


def decode_positions(text: Any) -> Positions | None:
    """A position written as JSON ``{"topic": {"0": 42}}`` (None when absent or not that).

    Args:
        text: A summary value (or an already decoded mapping).

    Returns:
        Topic -> partition -> next offset.
    """
    if text is None:
        return None
    try:
        doc = json.loads(text) if isinstance(text, str | bytes) else text
        return {
            str(topic): {int(p): int(o) for p, o in partitions.items()}
            for topic, partitions in doc.items()
        }
    except (ValueError, TypeError, AttributeError):
        return None


def checkpoint_position(folder: Path) -> tuple[int | None, Positions]:
    """Where a Spark streaming query resumes: the end offsets of the newest micro-batch its
    checkpoint marks committed (``commits/<N>``), as ``offsets/<N>`` holds them.

    Spark starts again after that batch (a batch planned in ``offsets/`` but not in
    ``commits/`` is run again with the same offsets), so a message before this position is
    never read again. The file's lines are a version, the batch's metadata, then one line
    per source: the Kafka source's is JSON ``{"topic": {"0": next}}``.

    Args:
        folder: The query's checkpoint folder.

    Returns:
        The batch (None: none is committed yet) and its end offsets: topic -> partition ->
        next offset (empty with no batch).

    Raises:
        OSError: the folder or a batch's offsets cannot be read.
        ValueError: a batch's offsets file is not Spark's.
    """
    done = _batches(folder, "commits")
    if not done:
        return None, {}
    lines = (folder / "offsets" / str(done[-1])).read_text().splitlines()
    out: Positions = {}
    for line in lines[2:]:
        decoded = decode_positions(line)
        if decoded is None:
            raise ValueError(f"offsets/{done[-1]}: not a Kafka source's offsets: {line[:80]!r}")
        for topic, partitions in decoded.items():
            out.setdefault(topic, {}).update(partitions)
    return done[-1], out


_FLINK_CHECKPOINT = re.compile(r"chk-(\d+)")


def newest_held_checkpoint(folder: Path) -> int | None:
    """The number of the newest complete checkpoint in a Flink checkpoint folder
    (``<job id>/chk-<N>/_metadata``; a start restored from one numbers its own after it), None
    when it holds none. Its Kafka source commits the group at a checkpoint's completion, and its
    Iceberg sink commits that checkpoint's files at the same moment or, after a failure in
    between, when the job restores from it: until then the checkpoint holds rows already behind
    the group.
    """
    numbers = [
        int(m.group(1))
        for meta in folder.glob("*/chk-*/_metadata")
        if (m := _FLINK_CHECKPOINT.fullmatch(meta.parent.name))
    ]
    return max(numbers, default=None)


def _batches(folder: Path, log: str) -> list[int]:
    """The batch numbers a Spark checkpoint's ``offsets/`` or ``commits/`` log holds, in order
    (none when the log is not there)."""
    where = folder / log
    names = [p.name for p in where.iterdir()] if where.is_dir() else []
    return sorted(int(name) for name in names if name.isdigit())


def batch_in_flight(folder: Path) -> bool:
    """Whether a Spark streaming query's checkpoint holds a batch planned (``offsets/<N>``)
    and not marked committed (``commits/<N>``): the query's next start runs that batch first,
    with the same offsets (a folder that is not a checkpoint holds none).
    """
    planned, done = _batches(folder, "offsets"), _batches(folder, "commits")
    return bool(planned) and (not done or planned[-1] > done[-1])


def encode_positions(positions: Mapping[str, Mapping[int, int]]) -> dict[str, dict[str, int]]:
    """A position as JSON-ready data (partitions as text keys)."""
    return {
        t: {str(p): int(o) for p, o in sorted(ps.items())} for t, ps in sorted(positions.items())
    }


@dataclass(frozen=True)
class Letter:
    """One dead letter, as the checks read it whatever loader sent it.

    Attributes:
        partition: Its partition in the dead-letter topic.
        offset: Its offset there.
        source: (topic, partition, offset) of the message it stands for, if it says.
        reason: Why the loader could not load it, if it says.
        kind: The kit's error kind (``error_kinds`` loaders only).
        path: The field it failed at (``error_kinds`` loaders only).
        loader: The loader id that sent it, if it says.
    """

    partition: int
    offset: int
    source: tuple[str, int, int] | None = None
    reason: str | None = None
    kind: str | None = None
    path: str | None = None
    loader: str | None = None


@dataclass(frozen=True)
class Observer:
    """How the checks read one loader kind's writing (see the module's docstring).

    Attributes:
        kind: The loader kind's name (``icefloe``, ``kafka-connect``, ``command:FILE``).
        commit_key: A summary key every commit of the loader carries (None: every snapshot
            not written through Trino).
        loader_key: A summary key naming which loader (its id) made a commit, if any.
        position: Where its committed position is: ``summary``, ``group``, ``checkpoint`` or
            None (unknown).
        position_key: With ``summary``: the key holding JSON ``{"topic": {"0": next}}``.
        consumer_group: With ``group``: the group whose committed offsets are its position.
        checkpoint_dir: With ``checkpoint``: the Spark streaming checkpoint folder.
        held_checkpoints: A Flink checkpoint folder (:func:`newest_held_checkpoint`) whose
            newest complete checkpoint, numbered above the ``commit_key`` of the table's
            newest commit, holds rows a restore commits: a missing row behind its position is
            *pending* then, not lost. ``commit_key`` must be that checkpoint number.
        cadence_s: How often it commits while it has rows (None: not declared).
        drain_s: How long a run's drain waits after the last disturbance (a heal, a publish,
            a start) for rows still missing.
        discovery_s: How long it may take to see partitions added to its topic (the drain
            waits this much longer after a topic grew).
        halt_pattern: A regular expression of its log naming the message it stopped at, with
            the named groups ``topic``, ``partition`` and ``offset``.
        restart_pattern: A regular expression of its log marking a failure it recovered from
            inside its own process (a Flink job's restart): what an exit shows for a loader that
            fails by exiting, counted the same way (``loader_steady``).
        exit_codes: What its exit codes mean: ``not_owner`` (it stepped down for another
            loader), ``stalled`` (it gave up waiting on a service).
        process_key: A summary key naming the process (a token per start) that committed.
        claim_key: A summary key set on the commit by which a process took the table over.
        stages: It stages snapshots (write-audit-publish) before publishing them to main.
        letter_headers: For each of :data:`LETTER_FIELDS`, the header names that carry it, the
            first present wins (None: it sends no dead letters the kit can read).
        error_kinds: Its dead letters name the kit's error kinds and field paths
            (``publisher.malformations``), so a wrong kind is a wrong letter.
        log_facts: What its log says of its own state, counted at the end of a run and
            reported beside the verdicts (name -> a regular expression): evidence for a
            finding, never a verdict.
        refuses: The malformations of icefloe's policy (``publisher.malformations.POLICY``)
            it declares it refuses: it is held to dead-lettering those; any other it may load.
    """

    kind: str
    commit_key: str | None = None
    loader_key: str | None = None
    position: str | None = None
    position_key: str | None = None
    consumer_group: str | None = None
    checkpoint_dir: str | None = None
    held_checkpoints: str | None = None
    cadence_s: float | None = None
    drain_s: float = 60.0
    discovery_s: float = 0.0
    halt_pattern: str | None = None
    restart_pattern: str | None = None
    exit_codes: Mapping[str, int] = field(default_factory=dict)
    process_key: str | None = None
    claim_key: str | None = None
    stages: bool = False
    letter_headers: Mapping[str, tuple[str, ...]] | None = None
    error_kinds: bool = False
    log_facts: Mapping[str, str] = field(default_factory=dict)
    refuses: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.position not in (None, *POSITION_SOURCES):
            raise ValueError(f"position: {self.position!r}, expected one of {POSITION_SOURCES}")
        if self.position == SUMMARY and not self.position_key:
            raise ValueError("position = 'summary' needs position_key")
        if self.position == GROUP and not self.consumer_group:
            raise ValueError("position = 'group' needs consumer_group")
        if self.position == CHECKPOINT and not self.checkpoint_dir:
            raise ValueError("position = 'checkpoint' needs checkpoint_dir")
        if self.held_checkpoints and not self.commit_key:
            raise ValueError("held_checkpoints needs commit_key (the committed checkpoint)")
        if self.halt_pattern is not None:
            missing = set(HALT_GROUPS) - set(re.compile(self.halt_pattern).groupindex)
            if missing:
                raise ValueError(f"halt_pattern lacks the named groups {sorted(missing)}")
        if self.restart_pattern is not None:
            re.compile(self.restart_pattern)
        unknown = set(self.letter_headers or {}) - set(LETTER_FIELDS)
        if unknown:
            raise ValueError(f"letter_headers: unknown fields {sorted(unknown)}")
        beyond = set(self.refuses) - set(POLICY)
        if beyond:
            raise ValueError(f"refuses: {sorted(beyond)} are not policy; one of {sorted(POLICY)}")

    # -- the record in a history -------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The declaration as JSON-ready data (what a run records)."""
        doc = asdict(self)
        doc["exit_codes"] = dict(self.exit_codes)
        doc["log_facts"] = dict(self.log_facts)
        if self.letter_headers is not None:
            doc["letter_headers"] = {k: list(v) for k, v in self.letter_headers.items()}
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Observer:
        """The declaration :meth:`to_json` wrote (unknown keys ignored)."""
        known = {f for f in cls.__dataclass_fields__}
        fields = {k: v for k, v in doc.items() if k in known}
        if fields.get("letter_headers") is not None:
            fields["letter_headers"] = {k: tuple(v) for k, v in fields["letter_headers"].items()}
        if "refuses" in fields:
            fields["refuses"] = tuple(fields["refuses"])
        return cls(**fields)

    # -- commits --------------------------------------------------------------------------------

    def is_commit(self, summary: Mapping[str, Any]) -> bool:
        """Whether a snapshot with this summary is one of the loader's commits."""
        if self.commit_key is not None:
            return self.commit_key in summary
        return TRINO_QUERY_KEY not in summary

    def commit(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """A recorded snapshot (``read``/``commits``) as neutral facts.

        Args:
            record: The snapshot as the recording client wrote it: ``snapshot``, ``time``,
                ``operation``, ``parent``, ``records`` and its ``summary``.

        Returns:
            Its id, time, parent and operation, and: ``mine`` (the loader's commit),
            ``loader`` (the loader id it names, or the kind's name), ``process`` and
            ``claim`` (fencing loaders), ``staged`` (its ``wap.id``), ``position``.
        """
        summary = summary_of(record)
        mine = self.is_commit(summary)
        named = summary.get(self.loader_key) if self.loader_key else None
        position = (
            decode_positions(summary.get(self.position_key))
            if self.position == SUMMARY and self.position_key
            else None
        )
        return {
            "snapshot": int(record["snapshot"]),
            "time": float(record["time"]),
            "parent": record.get("parent"),
            "operation": record.get("operation"),
            "records": record.get("records"),
            "mine": mine,
            "loader": (named or self.kind) if mine else None,
            "process": summary.get(self.process_key) if self.process_key else None,
            "claim": summary.get(self.claim_key) if self.claim_key else None,
            "staged": summary.get(WAP_ID_KEY),
            "position": position,
        }

    # -- dead letters ------------------------------------------------------------------------------

    def letter(self, partition: int, offset: int, headers: Mapping[str, str]) -> Letter:
        """A dead letter's headers as a :class:`Letter` (nothing read without a scheme)."""
        if not self.letter_headers:
            return Letter(partition, offset)

        def get(name: str) -> str | None:
            for header in self.letter_headers.get(name, ()) if self.letter_headers else ():
                value = headers.get(header)
                if value not in (None, ""):
                    return str(value)
            return None

        source = None
        topic, part, off = get("topic"), get("partition"), get("offset")
        try:
            if topic is not None and part is not None and off is not None:
                source = (topic, int(part), int(off))
        except ValueError:
            source = None
        return Letter(
            partition,
            offset,
            source,
            get("reason"),
            get("kind") if self.error_kinds else None,
            get("path") if self.error_kinds else None,
            get("loader"),
        )

    # -- halts -----------------------------------------------------------------------------------

    def halted_at(self, text: str) -> list[tuple[str, int, int]]:
        """The messages a halt's log text names (empty without a ``halt_pattern``)."""
        if self.halt_pattern is None:
            return []
        return [
            (m.group("topic"), int(m.group("partition")), int(m.group("offset")))
            for m in re.finditer(self.halt_pattern, text)
        ]


def summary_of(record: Mapping[str, Any]) -> dict[str, Any]:
    """A recorded snapshot's summary; for a record written before summaries were recorded,
    the icefloe keys it held as fields."""
    summary = record.get("summary")
    if summary is not None:
        return dict(summary)
    legacy = {
        loader_keys.LOADER_ID: record.get("loader"),
        loader_keys.INSTANCE: record.get("instance"),
        loader_keys.CLAIM: record.get("claim"),
        WAP_ID_KEY: record.get("staged"),
    }
    out = {k: v for k, v in legacy.items() if v is not None}
    if not out:  # no loader named: the kit's own snapshot (maintenance, table creation)
        out[TRINO_QUERY_KEY] = "?"
    return out


_ICEFLOE_HALT = r"topic '?(?P<topic>[^' ]+)'? partition (?P<partition>\d+) offset (?P<offset>\d+)"
"""How icefloe's loader names a poison message (``loader.errors.PoisonMessage``)."""

ICEFLOE_LETTERS: Mapping[str, tuple[str, ...]] = {
    "topic": (loader_keys.DLQ_SOURCE_TOPIC,),
    "partition": (loader_keys.DLQ_SOURCE_PARTITION,),
    "offset": (loader_keys.DLQ_SOURCE_OFFSET,),
    "reason": (loader_keys.DLQ_ERROR_REASON,),
    "kind": (loader_keys.DLQ_ERROR_KIND,),
    "path": (loader_keys.DLQ_ERROR_PATH,),
    "loader": (loader_keys.DLQ_LOADER_ID,),
}
"""The headers icefloe's loader puts on a dead letter (``loader.keys``)."""


def icefloe_observer(trigger_s: float = 2.0) -> Observer:
    """icefloe's loader as the checks read it (``loader.keys``, ``loader.errors``).

    Args:
        trigger_s: Its trigger interval: it commits once per trigger while it has rows.
    """
    return Observer(
        kind="icefloe",
        commit_key=loader_keys.LOADER_ID,
        loader_key=loader_keys.LOADER_ID,
        position=SUMMARY,
        position_key=loader_keys.OFFSETS,
        cadence_s=trigger_s,
        # A restart's JVM and first batch (about 20 s on two cores), then a few triggers.
        drain_s=30.0 + 5 * trigger_s,
        halt_pattern=_ICEFLOE_HALT,
        exit_codes={
            "not_owner": loader_errors.EXIT_NOT_OWNER,
            "stalled": loader_errors.EXIT_STALLED,
        },
        process_key=loader_keys.INSTANCE,
        claim_key=loader_keys.CLAIM,
        stages=True,
        letter_headers=ICEFLOE_LETTERS,
        error_kinds=True,
        refuses=tuple(POLICY),
    )


ICEFLOE = icefloe_observer()
"""icefloe's loader at its scenarios' usual trigger: how a history without an ``observer``
event (recorded before observers existed, or made by hand in a test) is read."""


def observer_of(events: Iterable[Any]) -> Observer:
    """The observer a run recorded (its first ``info``/``observer`` event), else :data:`ICEFLOE`.

    Args:
        events: The run's history (or its events).
    """
    for e in events:
        if e.kind == "info" and e.name == "observer":
            return Observer.from_json(e.data.get("observer") or {})
    return ICEFLOE
