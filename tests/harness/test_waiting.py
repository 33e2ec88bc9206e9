"""The harness's one polling loop: what it returns, when it stops, which errors it rides out."""

from __future__ import annotations

import itertools

import pytest

from icefloe.harness.waiting import poll


def test_it_returns_the_first_value_that_satisfies_the_condition() -> None:
    counter = itertools.count()
    assert poll(lambda: next(counter), lambda n: n >= 3, timeout_s=5, every_s=0) == 3


def test_after_the_timeout_it_returns_the_last_value_read() -> None:
    counter = itertools.count()
    last = poll(lambda: next(counter), lambda n: n < 0, timeout_s=0.05, every_s=0.01)
    assert last >= 1  # read more than once, never satisfied


def test_the_probe_runs_once_even_with_no_time() -> None:
    calls = itertools.count(1)
    assert poll(lambda: next(calls), lambda n: False, timeout_s=0, every_s=0) == 1


def test_listed_errors_are_retried_until_the_time_is_up_then_raised() -> None:
    attempts = itertools.count(1)

    def flaky() -> int:
        n = next(attempts)
        if n < 3:
            raise ConnectionError(f"attempt {n}")
        return n

    assert poll(flaky, timeout_s=5, every_s=0, retry=ConnectionError) == 3

    def down() -> int:
        raise ConnectionError("down")

    with pytest.raises(ConnectionError, match="down"):
        poll(down, timeout_s=0.05, every_s=0.01, retry=ConnectionError)


def test_an_error_not_listed_ends_the_wait_at_once() -> None:
    calls = itertools.count(1)

    def broken() -> int:
        next(calls)
        raise ValueError("broken")

    with pytest.raises(ValueError, match="broken"):
        poll(broken, timeout_s=5, every_s=0, retry=ConnectionError)
    assert next(calls) == 2
