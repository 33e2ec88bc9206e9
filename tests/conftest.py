"""Test configuration: Hypothesis profiles chosen by environment (ci by default, soak on demand),
and how two pytest workers share the suite (``tests/schedule.py``)."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("ci", max_examples=200, deadline=None, print_blob=True)
settings.register_profile(
    "soak", max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


def pytest_xdist_make_scheduler(config: Any, log: Any) -> Any:
    """``--dist loadgroup``: the suite's own units (``tests/schedule.py``); else xdist's."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from tests.schedule import make

    return make(config, log)
