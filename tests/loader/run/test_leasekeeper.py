"""``LeaseKeeper``: renewals from a thread for the length of a start-up (a fake table view)."""

from __future__ import annotations

import threading
import time

from icefloe.loader.errors import Fenced
from icefloe.loader.run.leasekeeper import LeaseKeeper


class View:
    """Counts renewals; raises what it is told to from the n-th call on."""

    def __init__(self, fail_from: int | None = None, error: Exception | None = None) -> None:
        self.calls: list[tuple[str, int]] = []
        self.fail_from = fail_from
        self.error = error
        self.lock = threading.Lock()

    def renew(self, instance: str, ttl_ms: int) -> bool:
        with self.lock:
            self.calls.append((instance, ttl_ms))
            n = len(self.calls)
        if self.fail_from is not None and n >= self.fail_from and self.error is not None:
            raise self.error
        return True


def test_it_renews_every_third_of_the_lease_until_stopped() -> None:
    view = View()
    with LeaseKeeper(view, "me", 300, renewed_ms=0) as keeper:
        time.sleep(0.65)
    made = len(view.calls)
    time.sleep(0.3)
    assert 3 <= made <= 8, made  # one renewal per 0.1 s (the floor), give or take scheduling
    assert len(view.calls) == made  # none after the start-up
    assert set(view.calls) == {("me", 300)}
    assert keeper.renewed_ms > 0 and keeper.fenced is None


def test_a_fenced_renewal_is_kept_and_ends_the_renewals() -> None:
    fenced = Fenced("lake.db.t", "me", None)
    view = View(fail_from=2, error=fenced)
    with LeaseKeeper(view, "me", 300, renewed_ms=0) as keeper:
        time.sleep(0.6)
    assert keeper.fenced is fenced
    assert len(view.calls) == 2


def test_a_failing_catalog_is_tried_again() -> None:
    view = View(fail_from=1, error=ConnectionError("catalog down"))
    with LeaseKeeper(view, "me", 300, renewed_ms=7) as keeper:
        time.sleep(0.45)
    assert len(view.calls) >= 3
    assert keeper.fenced is None and keeper.renewed_ms == 7
