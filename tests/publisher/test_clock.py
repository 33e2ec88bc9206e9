"""Event clock: window bounds and text forms agree with ``datetime``."""

from __future__ import annotations

import datetime as dt
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icefloe.publisher.clock import (
    ClockConfig,
    EventClock,
    format_date,
    format_offset,
    format_time,
    format_timestamp,
    format_timestamptz,
    to_micros,
)

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
instants = st.integers(
    min_value=to_micros(dt.datetime(1900, 1, 1, tzinfo=dt.UTC)),
    max_value=to_micros(dt.datetime(2200, 1, 1, tzinfo=dt.UTC)),
)
offsets = st.integers(min_value=-18 * 60, max_value=18 * 60)


@given(instants, offsets)
def test_timestamptz_text_denotes_the_instant(micros: int, offset: int) -> None:
    text = format_timestamptz(micros, offset)
    parsed = dt.datetime.fromisoformat(text)
    assert parsed == EPOCH + dt.timedelta(microseconds=micros)
    assert parsed.utcoffset() == dt.timedelta(minutes=offset)
    assert len(text.split(".")[1]) == 6 + 6  # micros + "+hh:mm"


@given(instants)
def test_timestamp_date_and_time_text(micros: int) -> None:
    moment = (EPOCH + dt.timedelta(microseconds=micros)).replace(tzinfo=None)
    assert format_timestamp(micros) == moment.isoformat(timespec="microseconds")
    assert format_date(micros // 86_400_000_000) == moment.date().isoformat()
    assert format_time(micros % 86_400_000_000) == moment.time().isoformat("microseconds")


def test_offsets_and_zulu() -> None:
    assert format_offset(-420) == "-07:00"
    assert format_offset(330) == "+05:30"
    assert format_offset(0) == "+00:00"
    assert format_offset(0, zulu=True) == "Z"
    assert format_timestamptz(0, 0, zulu=True) == "1970-01-01T00:00:00.000000Z"


@given(st.integers(min_value=0, max_value=2**32), st.floats(min_value=0, max_value=400))
def test_clock_stays_in_window(seed: int, window_days: float) -> None:
    anchor = dt.datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=dt.UTC)
    clock = EventClock(ClockConfig(anchor=anchor, window_days=window_days))
    rng = random.Random(seed)
    low = anchor - dt.timedelta(days=window_days) - dt.timedelta(microseconds=1)
    for _ in range(50):
        moment = dt.datetime.fromisoformat(clock.timestamptz(rng))
        assert low <= moment <= anchor
        micros = clock.instant(rng)
        assert clock.start_us <= micros <= clock.end_us


def test_window_spreads_old_and_new() -> None:
    anchor = dt.datetime(2025, 6, 1, tzinfo=dt.UTC)
    clock = EventClock(ClockConfig(anchor=anchor, window_days=10))
    rng = random.Random(1)
    moments = [dt.datetime.fromisoformat(clock.timestamptz(rng)) for _ in range(2000)]
    assert min(moments) < anchor - dt.timedelta(days=9)
    assert max(moments) > anchor - dt.timedelta(days=1)


def test_zero_window_pins_to_anchor() -> None:
    anchor = dt.datetime(2025, 6, 1, 12, tzinfo=dt.UTC)
    clock = EventClock(ClockConfig(anchor=anchor, window_days=0))
    assert dt.datetime.fromisoformat(clock.timestamptz(random.Random(3))) == anchor


@pytest.mark.parametrize(
    "kwargs",
    [
        {"anchor": dt.datetime(2025, 1, 1)},
        {"window_days": -1},
        {"offsets_minutes": ()},
        {"offsets_minutes": (19 * 60,)},
    ],
)
def test_clock_config_rejects_nonsense(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        ClockConfig(**kwargs)  # type: ignore[arg-type]
