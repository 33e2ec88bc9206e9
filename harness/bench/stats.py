"""Rates, ratios and medians of a bench run: pure functions (its percentile is the checkers',
``harness.scenarios.checks.facts.numbers.percentile``)."""

from __future__ import annotations

from collections.abc import Sequence

MEDIAN_RUNS = 3
"""The fewest runs of a system whose median the bench's headline reports: one or two runs are
shown as what they are, never as a median."""


def rate(count: float, seconds: float) -> float | None:
    """``count`` per second, or None when no time passed."""
    return count / seconds if seconds > 0 else None


def ratio(value: float | None, base: float | None) -> float | None:
    """``value / base``, or None when either is missing or the base is zero."""
    if value is None or not base:
        return None
    return value / base


def median_low(values: Sequence[float]) -> float:
    """The median of ``values``, the lower middle one of an even count (an observed value).

    Raises:
        ValueError: no values.
    """
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]


def per_hour(count: float, seconds: float) -> float | None:
    """``count`` in ``seconds`` scaled to one hour."""
    return count * 3600 / seconds if seconds > 0 else None
