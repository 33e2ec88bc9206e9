"""The publisher's ledger as the checks look it up: valid and malformed messages, where each
went, and the ledger indexed by id and by coordinates."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from icefloe.publisher.ledger import LedgerEntry

__all__ = [
    "Coordinates",
    "LedgerIndex",
    "coordinates",
    "describe",
    "malformed_entries",
    "valid_entries",
]

_PREFIX = 24  # event ids share a 24-character prefix per publish phase (publisher.messages)


Coordinates = tuple[str, int, int]
"""A Kafka message's (topic, partition, offset)."""


def coordinates(e: LedgerEntry) -> Coordinates:
    """Where the ledger says a message went (offset -1: delivery unconfirmed)."""
    return (e.topic, e.partition, -1 if e.offset is None else e.offset)


def valid_entries(ledger: Sequence[LedgerEntry]) -> list[LedgerEntry]:
    """The valid messages whose delivery the publisher confirmed."""
    return [e for e in ledger if e.delivered and e.status == "valid"]


def malformed_entries(ledger: Sequence[LedgerEntry]) -> list[LedgerEntry]:
    """The malformed messages whose delivery the publisher confirmed."""
    return [e for e in ledger if e.delivered and e.status == "malformed"]


def describe(e: LedgerEntry) -> str:
    """A message as anomalies name it: its id and coordinates."""
    return f"{e.event_id} ({e.topic}/{e.partition}@{e.offset})"


@dataclass
class LedgerIndex:
    """The ledger as the invariants look things up.

    Attributes:
        entries: Ledger entries of finished phases.
        running: Event-id prefixes of phases still publishing (their ids are judged later).
    """

    entries: Sequence[LedgerEntry]
    running: frozenset[str] = frozenset()
    by_id: dict[str, LedgerEntry] = field(init=False)
    by_coords: dict[tuple[str, int, int], LedgerEntry] = field(init=False)
    prefixes: set[str] = field(init=False)

    def __post_init__(self) -> None:
        self.by_id = {e.event_id: e for e in self.entries}
        self.by_coords = {coordinates(e): e for e in self.entries if e.delivered}
        self.prefixes = {e.event_id[:_PREFIX] for e in self.entries}

    def pending(self, event_id: str) -> bool:
        return event_id[:_PREFIX] in self.running
