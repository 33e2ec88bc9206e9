"""Ledger: the run's record of what was sent, from Kafka's delivery reports.

One JSON Lines file per run. The first line describes the run (``"record":
"run"``: topic, seed, anchor and the generation config), then one line per
message (``"record": "message"``) in delivery-report order, then a closing
summary (``"record": "summary"``). A message line says where Kafka put the
message (topic, partition, offset, timestamp), its key and event id, whether it
is ``valid`` or ``malformed`` (with the malformation ``kind`` and the field
``target`` the loader should report), the drifts applied, the number of
delivery attempts and, for a message that finally failed, the ``error``.

Scenario checkers read a ledger back with :meth:`Ledger.read`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

LEDGER_VERSION = 1


@dataclass(frozen=True)
class LedgerEntry:
    """One message as delivered (or finally not delivered).

    Attributes:
        seq: Position in the run.
        topic: Kafka topic.
        partition: Partition the message landed in (or was aimed at when failed;
            ``-1`` if the partitioner never chose one).
        offset: Offset in that partition; ``None`` if delivery failed.
        timestamp: Kafka message timestamp in epoch milliseconds, if known.
        key: The key as text (UTF-8, undecodable bytes escaped), or ``None``.
        event_id: The message's event id.
        status: ``"valid"`` or ``"malformed"``.
        kind: Malformation name for malformed messages.
        target: Field path the loader should report for malformed messages.
        drift: Drifts applied to a valid row.
        attempts: Produce attempts, including resends after failed deliveries.
        error: Final delivery error, ``None`` when delivered.
    """

    seq: int
    topic: str
    partition: int
    offset: int | None
    timestamp: int | None
    key: str | None
    event_id: str
    status: str
    kind: str | None = None
    target: str | None = None
    drift: tuple[str, ...] = ()
    attempts: int = 1
    error: str | None = None

    @property
    def delivered(self) -> bool:
        """Whether Kafka acknowledged the message."""
        return self.error is None and self.offset is not None

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> LedgerEntry:
        """Build an entry from a decoded ``message`` line.

        Args:
            doc: The decoded JSON object.

        Returns:
            The entry.
        """
        return cls(
            seq=doc["seq"],
            topic=doc["topic"],
            partition=doc["partition"],
            offset=doc.get("offset"),
            timestamp=doc.get("timestamp"),
            key=doc.get("key"),
            event_id=doc["event_id"],
            status=doc["status"],
            kind=doc.get("kind"),
            target=doc.get("target"),
            drift=tuple(doc.get("drift") or ()),
            attempts=doc.get("attempts", 1),
            error=doc.get("error"),
        )


@dataclass(frozen=True)
class Ledger:
    """A run's ledger loaded back into Python objects.

    Attributes:
        path: Where it was read from.
        run: The header record (topic, seed, anchor, config...).
        entries: Message entries in file (delivery-report) order.
        summary: The closing record, or ``None`` if the run did not finish writing.
    """

    path: Path
    run: dict[str, Any]
    entries: tuple[LedgerEntry, ...]
    summary: dict[str, Any] | None = field(default=None)

    @classmethod
    def read(cls, path: str | Path) -> Ledger:
        """Load a ledger file.

        Args:
            path: A ledger written by :class:`LedgerWriter`.

        Returns:
            The ledger.

        Raises:
            ValueError: If the file is not a ledger (no run header first) or a
                line is not JSON.
            OSError: If the file cannot be read.
        """
        path = Path(path)
        run: dict[str, Any] | None = None
        summary: dict[str, Any] | None = None
        entries: list[LedgerEntry] = []
        with path.open(encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    doc = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{number}: not JSON: {exc}") from exc
                record = doc.get("record")
                if number == 1 and record != "run":
                    raise ValueError(f"{path}: not a ledger (first line is not a run header)")
                if record == "message":
                    entries.append(LedgerEntry.from_json(doc))
                elif record == "run":
                    run = doc
                elif record == "summary":
                    summary = doc
        if run is None:
            raise ValueError(f"{path}: empty ledger")
        return cls(path, run, tuple(entries), summary)

    def __iter__(self) -> Iterator[LedgerEntry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def in_seq_order(self) -> list[LedgerEntry]:
        """Entries sorted by ``seq`` (generation order)."""
        return sorted(self.entries, key=lambda e: e.seq)

    def delivered(self) -> list[LedgerEntry]:
        """Entries Kafka acknowledged."""
        return [e for e in self.entries if e.delivered]

    def failed(self) -> list[LedgerEntry]:
        """Entries that finally failed to deliver."""
        return [e for e in self.entries if not e.delivered]

    def valid(self) -> list[LedgerEntry]:
        """Delivered entries whose payload is a valid row."""
        return [e for e in self.entries if e.delivered and e.status == "valid"]

    def malformed(self, kind: str | None = None) -> list[LedgerEntry]:
        """Delivered malformed entries, optionally of one malformation ``kind``."""
        return [
            e
            for e in self.entries
            if e.delivered and e.status == "malformed" and (kind is None or e.kind == kind)
        ]

    def valid_event_ids(self) -> set[str]:
        """Event ids of delivered valid rows: what the table should end up holding."""
        return {e.event_id for e in self.valid()}

    def malformed_event_ids(self) -> set[str]:
        """Event ids of delivered malformed messages: what the dead-letter topic should hold."""
        return {e.event_id for e in self.malformed()}

    def counts(self) -> Counter[str]:
        """Counts of ``valid``, ``malformed`` (delivered) and ``failed`` messages."""
        counter: Counter[str] = Counter()
        for e in self.entries:
            counter[e.status if e.delivered else "failed"] += 1
        return counter

    def kinds(self) -> Counter[str]:
        """Delivered malformed messages counted by malformation name."""
        return Counter(e.kind for e in self.malformed() if e.kind is not None)

    def offsets(self) -> dict[tuple[str, int], list[int]]:
        """Delivered offsets per ``(topic, partition)``, ascending."""
        out: dict[tuple[str, int], list[int]] = {}
        for e in self.delivered():
            assert e.offset is not None
            out.setdefault((e.topic, e.partition), []).append(e.offset)
        for offsets in out.values():
            offsets.sort()
        return out


def _json_str(text: str | None) -> str:
    # Event ids, generated keys and kind names are plain ASCII; skip json.dumps
    # for them because this runs once per delivered message.
    if text is None:
        return "null"
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    return json.dumps(text)


class LedgerWriter:
    """Writes a ledger, buffering message lines between flushes.

    Args:
        path: The file to create (parents are created).
        run: Header fields (topic, seed, config...); ``record`` and ``version``
            are added.

    Raises:
        OSError: If the file cannot be created.
    """

    def __init__(self, path: str | Path, run: dict[str, Any]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[str] = self.path.open("w", encoding="utf-8")
        self._buffer: list[str] = []
        header = {"record": "run", "version": LEDGER_VERSION, **run}
        self._fh.write(json.dumps(header, sort_keys=False) + "\n")

    def message(
        self,
        seq: int,
        topic: str,
        partition: int | None,
        offset: int | None,
        timestamp: int | None,
        key: bytes | None,
        event_id: str,
        kind: str | None,
        target: str | None,
        drift: tuple[str, ...],
        attempts: int,
        error: str | None,
    ) -> None:
        """Record one message outcome (see :class:`LedgerEntry` for the fields)."""
        key_text = None if key is None else key.decode("utf-8", "backslashreplace")
        if partition is None:  # failed reports may carry no partition
            partition = -1
        self._buffer.append(
            f'{{"record":"message","seq":{seq},"topic":{_json_str(topic)}'
            f',"partition":{partition},"offset":{"null" if offset is None else offset}'
            f',"timestamp":{"null" if timestamp is None else timestamp}'
            f',"key":{_json_str(key_text)},"event_id":{_json_str(event_id)}'
            f',"status":"{"valid" if kind is None else "malformed"}"'
            f',"kind":{_json_str(kind)},"target":{_json_str(target)}'
            f',"drift":[{",".join(_json_str(d) for d in drift)}]'
            f',"attempts":{attempts},"error":{_json_str(error)}}}\n'
        )
        if len(self._buffer) >= 8192:
            self.flush()

    def flush(self) -> None:
        """Write buffered lines through to the file."""
        if self._buffer:
            self._fh.write("".join(self._buffer))
            self._buffer.clear()
        self._fh.flush()

    def close(self, summary: dict[str, Any]) -> None:
        """Write the summary record and close the file.

        Args:
            summary: Counts and timings of the run.
        """
        self.flush()
        self._fh.write(json.dumps({"record": "summary", **summary}) + "\n")
        self._fh.close()
