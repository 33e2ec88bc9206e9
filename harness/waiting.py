"""Waiting for a condition: the harness's one polling loop.

``poll`` calls a probe until its value is what the caller waits for or the time is up, and
returns the last value either way: the caller decides what a timeout means (an error naming
what it waited for, a ``fail`` event, or nothing).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def poll(
    probe: Callable[[], T],
    until: Callable[[T], object] = bool,
    *,
    timeout_s: float,
    every_s: float,
    retry: type[BaseException] | tuple[type[BaseException], ...] = (),
) -> T:
    """Call ``probe`` every ``every_s`` seconds until ``until(value)`` holds or ``timeout_s`` ends.

    Args:
        probe: What to read; an exception it raises ends the wait unless listed in ``retry``.
        until: When to stop (default: the value is truthy).
        timeout_s: The longest wait; the probe runs at least once.
        every_s: The pause between two calls.
        retry: Exceptions that count as "not yet" until the time is up, then propagate.

    Returns:
        The probe's last value.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            value = probe()
        except retry:
            if time.monotonic() >= deadline:
                raise
        else:
            if until(value) or time.monotonic() >= deadline:
                return value
        time.sleep(every_s)
