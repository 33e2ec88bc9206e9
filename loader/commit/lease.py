"""The lease: which one loader process may commit to a table, as pure functions.

Table properties (``keys.TABLE_OWNER``, ``keys.TABLE_INSTANCE``,
``keys.TABLE_LEASE_EXPIRES_MS``) name the one loader process that may commit. A loader
starts only if no other loader id holds a live lease (``check_lease``); it then takes the
lease over in a commit that also moves the table's main branch
(``loader.commit.table.TableView.claim``), so every batch another process planned before the
takeover can no longer be published: each batch is published by a commit the catalog accepts
only while main still points at the snapshot the batch was planned from
(``TableView.publish``). Before planning, and after a refused publish, a loader checks it
still holds the lease (``check_owner``): a process that finds the lease taken over has been
fenced and steps down (``Fenced``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from icefloe.loader import keys
from icefloe.loader.errors import ConcurrentLoader, Fenced

__all__ = [
    "Lease",
    "check_lease",
    "check_owner",
    "lease_from_properties",
    "lease_properties",
    "live_foreign_lease",
]


@dataclass(frozen=True)
class Lease:
    """A loader's claim on a table until ``expires_ms`` (epoch milliseconds).

    Attributes:
        owner: the loader id (stable across the loader's restarts).
        expires_ms: when the claim ends unless renewed.
        instance: the token of the one process holding it (new at every start), or ``""``
            for a lease written without one.
    """

    owner: str
    expires_ms: int
    instance: str = ""


def lease_from_properties(properties: Mapping[str, str]) -> Lease | None:
    """The lease held in table properties, or ``None``."""
    owner = properties.get(keys.TABLE_OWNER)
    expires = properties.get(keys.TABLE_LEASE_EXPIRES_MS)
    if not owner or expires is None:
        return None
    try:
        return Lease(owner, int(expires), properties.get(keys.TABLE_INSTANCE, ""))
    except ValueError:
        return None


def live_foreign_lease(
    me: str, now_ms: int, leases: Iterable[Lease | None], *, skew_ms: int = 0
) -> Lease | None:
    """The longest-lived unexpired lease held by another loader, if any.

    Args:
        me: this loader's id.
        now_ms: the current time (epoch milliseconds).
        leases: the leases found (``None`` entries are ignored).
        skew_ms: clock skew to allow: a lease counts as live until
            ``expires_ms + skew_ms``.

    Returns:
        The other loader's lease, or ``None`` when this loader may proceed.
    """
    live = [
        lease
        for lease in leases
        if lease is not None and lease.owner != me and lease.expires_ms + skew_ms > now_ms
    ]
    return max(live, key=lambda lease: lease.expires_ms, default=None)


def check_lease(
    table: str, me: str, now_ms: int, leases: Iterable[Lease | None], *, skew_ms: int = 0
) -> None:
    """Refuse to start while another live loader owns the table.

    A lease of the same loader id never blocks: that is this loader restarting (after a kill,
    or while an earlier process of it is frozen: taking over fences that process off).

    Args:
        table: the table identifier, for the message.
        me, now_ms, leases, skew_ms: as for ``live_foreign_lease``.

    Raises:
        ConcurrentLoader: another loader's lease is live.
    """
    other = live_foreign_lease(me, now_ms, leases, skew_ms=skew_ms)
    if other is not None:
        raise ConcurrentLoader(table, other.owner, other.expires_ms)


def check_owner(table: str, me: str, instance: str, lease: Lease | None) -> None:
    """Step down unless this process still holds the table's lease.

    The lease changes hands only through a takeover commit, which also moves the table's main
    branch; so a lease that is still ``(me, instance)`` means nobody took over, even when it
    has expired meanwhile.

    Args:
        table: the table identifier, for the message.
        me: this loader's id.
        instance: this process's token.
        lease: the lease in the table properties now.

    Raises:
        Fenced: the lease is someone else's (another loader, or a newer process of this one).
    """
    if lease is None or lease.owner != me or lease.instance != instance:
        raise Fenced(table, me, lease)


def lease_properties(me: str, instance: str, now_ms: int, ttl_ms: int) -> dict[str, str]:
    """Table properties claiming (or, with ``ttl_ms=0``, releasing) the lease.

    Args:
        me: this loader's id.
        instance: this process's token.
        now_ms: the current time (epoch milliseconds).
        ttl_ms: how long the claim lasts.

    Returns:
        Owner, instance and expiry under ``keys.TABLE_OWNER``, ``keys.TABLE_INSTANCE`` and
        ``keys.TABLE_LEASE_EXPIRES_MS``.
    """
    return {
        keys.TABLE_OWNER: me,
        keys.TABLE_INSTANCE: instance,
        keys.TABLE_LEASE_EXPIRES_MS: str(now_ms + ttl_ms),
    }
