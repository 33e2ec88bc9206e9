"""Hooks: where a test may reach into the protocol; a loader's own hooks do nothing.

The core calls ``reached(point, commits)`` as a batch passes each ``Point`` and
``committed(commits)`` once a commit has landed. A loader runs with ``Hooks()``: nothing
happens, and every part of the protocol is on. The test kit's hooks
(``loader/testing/faultpoints.py``, imported only when an ``ICEFLOE_TEST_*`` variable is set:
``loader.run.job.hooks_from_env``) kill or freeze the process at a point, to prove what happens
in the dangerous windows of a commit, and can switch a part of the protocol off, to prove the
checks catch what then goes wrong:

* ``exactly_once``: the guard. Off, a batch's records are not filtered against the table's
  offsets, and the loader resumes from the Spark checkpoint, not from the table's offsets, so
  every record Spark replays is written again;
* ``fencing``: off, a batch is one plain append to main instead of a staged snapshot
  published on the condition that main has not moved, as before fencing existed;
* ``resolve_lost_commits``: off, a commit whose answer was lost is taken as not landed
  without reading the table (with ``exactly_once`` off too, its batch is written twice).

The points of a start and its batches, in order:

* ``take_over``: the take-over's commit has landed; the query has not started;
* ``planned``: the table state is read and the lease checked, before decoding;
* ``decoded``: the records are decoded and the commit planned, before any dead letter is sent;
* ``dead_lettered``: the batch's dead letters are acknowledged by Kafka, before the write;
* ``write``: the Spark write of the batch's data files is about to start;
* ``publish``: the batch's data files and staged snapshot are written, before the commit
  that publishes them;
* ``commit_sent``: the publishing commit's request is about to be sent: it may or may not land;
* ``committed``: the publishing commit has landed, before Spark writes its checkpoint: the
  worst moment for exactly-once.

A batch written in one pass (``loader/ext/fastpath/onepass.py``) decodes while it writes: it
passes ``planned``, ``write``, then ``decoded`` and ``dead_lettered`` once its snapshot is
staged (it has no dead letters), then ``publish``, ``commit_sent`` and ``committed``.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["Hooks", "Point"]

Point = Literal[
    "take_over",
    "planned",
    "decoded",
    "dead_lettered",
    "write",
    "publish",
    "commit_sent",
    "committed",
]
"""A point of a start or a batch, in order."""


class Hooks:
    """The points the core calls, doing nothing, and the protocol with every part on.

    Attributes:
        exactly_once: filter each batch against the table's offsets and start from them.
        fencing: stage each batch's snapshot and publish it only while main has not moved.
        resolve_lost_commits: read the table to learn whether a commit whose answer was lost
            landed.
    """

    exactly_once: bool = True
    fencing: bool = True
    resolve_lost_commits: bool = True

    def reached(self, point: Point, commits: int) -> None:
        """A batch (or the start, at ``take_over``) reached ``point`` after ``commits`` commits
        of this process."""

    def committed(self, commits: int) -> None:
        """A commit landed (``commits`` counts it); Spark has not written its checkpoint."""
