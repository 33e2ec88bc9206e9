"""The publisher's ledger as the checks look it up: valid and malformed messages, where each
went, and the ledger indexed by id and by coordinates."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from icefloe.harness.observer import Observer
from icefloe.publisher.ledger import LedgerEntry
from icefloe.publisher.malformations import POLICY

__all__ = [
    "Coordinates",
    "LedgerIndex",
    "coordinates",
    "describe",
    "malformed_entries",
    "policy_entries",
    "under_contract",
    "valid_entries",
]

POLICY_STATUS = "policy"
"""The status `under_contract` gives a message whose handling is the loader's own choice."""

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


def under_contract(ledger: Sequence[LedgerEntry], observer: Observer) -> list[LedgerEntry]:
    """The ledger as the loader ``observer`` describes is held to it: a malformation of
    icefloe's policy (``POLICY``) that the loader does not declare it refuses is neither
    malformed nor valid for it (status ``policy``): it may load it or dead-letter it, once."""
    lenient = set(POLICY) - set(observer.refuses)
    if not lenient:
        return list(ledger)
    return [
        dataclasses.replace(e, status=POLICY_STATUS)
        if e.status == "malformed" and e.kind in lenient
        else e
        for e in ledger
    ]


def policy_entries(ledger: Sequence[LedgerEntry]) -> list[LedgerEntry]:
    """The delivered messages `under_contract` left to the loader's own policy."""
    return [e for e in ledger if e.delivered and e.status == POLICY_STATUS]


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
