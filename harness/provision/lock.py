"""One provisioning at a time per artifact: processes that share the cache wait for each other.

The cache is shared by every checkout, run directory and process of a user (a test run, a bench,
a second terminal). Two processes fetching the same artifact at once would write the same
``.part`` file, the same Ivy cache and the same staging folder, and one of them fails on the
other's half-written files. ``held(path)`` takes an exclusive lock on ``path`` (an empty file made
for it) for as long as its body runs; whoever comes second waits, then finds the artifact there.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def held(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` while the body runs (waiting for another holder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
