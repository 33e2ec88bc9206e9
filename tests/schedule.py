"""How two pytest workers share the suite (``tests/streams.py``): which tests go together, and
in what order the rest are handed out.

A work unit is one test, except :data:`TOGETHER`: tests that share state outside their own
names run as one unit, in their order, on one worker. The docs' blocks and the workshop start
and stop the command line's background loaders by name (``icefloe loader start``, the default
``loader``) and keep ledgers in the checkout's ``.run/``; a file's blocks also build on each
other. The catalog checks each start the catalogs under test on the ports the stack keeps for
them. Units are handed out longest kind first (the shared unit, the scenarios, the integration
tests), the unit tests last, so that the last minutes of a run are many short tests on both
workers rather than one long one on one.

pytest-xdist's own ``loadgroup`` (``xdist_group`` marks) names its units through the test ids,
which pytest 9 no longer lets a plugin change; this scheduler groups by path instead.
"""

from __future__ import annotations

from typing import Any

from xdist.scheduler import LoadScopeScheduling

TOGETHER: dict[str, tuple[str, ...]] = {
    "cli": ("tests/docs/test_documented_commands.py::", "tests/workshop/"),
    # Each starts the catalogs under test on the stack's ports for them (tested_catalog_port...).
    "tested-catalogs": ("tests/harness/test_catalog_checks_integration.py::",),
}
"""Units of several tests, by the paths of their ids."""


def _rank(scope: str) -> int:
    if scope in TOGETHER:
        return 0
    path = scope.split("::", 1)[0]
    if path.startswith(("tests/scenarios/", "tests/docs/")):
        return 1
    if path.endswith("_integration.py"):
        return 2
    return 3


class Grouped(LoadScopeScheduling):
    """One unit per test but for :data:`TOGETHER`; the longest kinds handed out first."""

    def _split_scope(self, nodeid: str) -> str:
        for unit, prefixes in TOGETHER.items():
            if nodeid.startswith(prefixes):
                return unit
        return nodeid

    def _assign_work_unit(self, node: Any) -> None:
        # The base class hands out the unit at the front of its queue: bring the first unit
        # of the longest kind there.
        first = min(self.workqueue, key=_rank)
        self.workqueue.move_to_end(first, last=False)
        super()._assign_work_unit(node)


def make(config: Any, log: Any) -> Grouped:
    """The scheduler of a run with ``--dist loadgroup`` (``tests/conftest.py``)."""
    return Grouped(config, log)
