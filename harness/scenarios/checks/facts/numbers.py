"""Numbers the checks report: percentiles by nearest rank."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["percentile"]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values`` by nearest rank.

    Nearest rank keeps a p99 an observed latency (no interpolation between two messages).

    Raises:
        ValueError: no values, or ``q`` outside 0-100.
    """
    if not values:
        raise ValueError("no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile outside 0-100: {q}")
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]
