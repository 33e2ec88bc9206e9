"""Event clock: seeded event instants inside a window, and their JSON text forms.

Rows carry event times spread over ``window_days`` back from an ``anchor`` so that
retention and partition-pruning scenarios see both old and new data. Formatting
goes through precomputed day and time-of-day tables because ``datetime.isoformat``
per message would dominate the cost of generating a reference row.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from dataclasses import dataclass

MICROS_PER_SECOND = 1_000_000
MICROS_PER_DAY = 86_400 * MICROS_PER_SECOND
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_ORDINAL = _EPOCH.date().toordinal()

#: Fixed default anchor so that the same seed reproduces byte-identical payloads
#: on any day; pass an explicit anchor (``now`` on the CLI) for wall-clock data.
DEFAULT_ANCHOR = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)

#: Offsets used for ``timestamptz`` text; minutes east of UTC. ``0`` renders as
#: ``+00:00`` for the reference row and as ``Z`` where the generic generator wants
#: to exercise both spellings.
DEFAULT_OFFSETS_MINUTES: tuple[int, ...] = (-420, -300, 0, 60, 330, 540, 0, -180)


def to_micros(moment: dt.datetime) -> int:
    """Return microseconds since the Unix epoch for an aware datetime.

    Args:
        moment: A timezone-aware datetime.

    Returns:
        Integer microseconds since 1970-01-01T00:00:00Z.

    Raises:
        ValueError: If ``moment`` is naive.
    """
    if moment.tzinfo is None:
        raise ValueError(f"anchor must be timezone-aware, got {moment.isoformat()}")
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * MICROS_PER_SECOND + delta.microseconds


def format_offset(minutes: int, *, zulu: bool = False) -> str:
    """Render a UTC offset as ``+hh:mm`` (or ``Z`` for zero when ``zulu``).

    Args:
        minutes: Minutes east of UTC.
        zulu: Spell a zero offset as ``Z``.

    Returns:
        The offset suffix of an ISO-8601 timestamp.
    """
    if minutes == 0 and zulu:
        return "Z"
    sign = "-" if minutes < 0 else "+"
    hours, mins = divmod(abs(minutes), 60)
    return f"{sign}{hours:02d}:{mins:02d}"


@functools.cache
def _time_of_day_table() -> tuple[str, ...]:
    # 86,400 short strings (~5 MB) built once per process; indexing beats divmod
    # and three format calls per message.
    return tuple(
        f"{h:02d}:{m:02d}:{s:02d}" for h in range(24) for m in range(60) for s in range(60)
    )


def format_date(days_since_epoch: int) -> str:
    """Render a day number as ``YYYY-MM-DD``.

    Args:
        days_since_epoch: Days since 1970-01-01.

    Returns:
        The ISO date text.
    """
    return dt.date.fromordinal(_EPOCH_ORDINAL + days_since_epoch).isoformat()


def format_time(micros_of_day: int) -> str:
    """Render a time of day as ``HH:MM:SS.ffffff``.

    Args:
        micros_of_day: Microseconds since midnight, ``0 <= x < 86_400_000_000``.

    Returns:
        The ISO time text, always with six fractional digits.
    """
    seconds, micros = divmod(micros_of_day, MICROS_PER_SECOND)
    return f"{_time_of_day_table()[seconds]}.{micros:06d}"


def format_timestamp(micros: int) -> str:
    """Render epoch microseconds as a zone-less ``YYYY-MM-DDTHH:MM:SS.ffffff``.

    Args:
        micros: Microseconds since the epoch.

    Returns:
        The ISO local timestamp text.
    """
    days, rem = divmod(micros, MICROS_PER_DAY)
    return f"{format_date(days)}T{format_time(rem)}"


def format_timestamptz(micros: int, offset_minutes: int, *, zulu: bool = False) -> str:
    """Render an instant as local time at ``offset_minutes`` with the offset suffix.

    Args:
        micros: The instant, microseconds since the epoch (UTC).
        offset_minutes: The offset to render the wall-clock time in.
        zulu: Spell a zero offset as ``Z``.

    Returns:
        ISO-8601 text such as ``2022-07-26T00:41:48.046773-07:00``.
    """
    local = micros + offset_minutes * 60 * MICROS_PER_SECOND
    return format_timestamp(local) + format_offset(offset_minutes, zulu=zulu)


@dataclass(frozen=True)
class ClockConfig:
    """Where event times fall.

    Attributes:
        anchor: The newest possible event time (timezone-aware).
        window_days: How far back from ``anchor`` event times spread; 0 pins every
            event to the anchor.
        offsets_minutes: UTC offsets that ``timestamptz`` values are rendered in.
    """

    anchor: dt.datetime = DEFAULT_ANCHOR
    window_days: float = 30.0
    offsets_minutes: tuple[int, ...] = DEFAULT_OFFSETS_MINUTES

    def __post_init__(self) -> None:
        if self.anchor.tzinfo is None:
            raise ValueError("ClockConfig.anchor must be timezone-aware")
        if self.window_days < 0:
            raise ValueError(f"window_days must be >= 0, got {self.window_days}")
        if not self.offsets_minutes:
            raise ValueError("offsets_minutes must not be empty")
        if any(abs(m) > 18 * 60 for m in self.offsets_minutes):
            raise ValueError("offsets must lie within +/-18 hours")


class EventClock:
    """Draws event instants uniformly from the window and renders them fast.

    Args:
        config: Anchor, window and offsets.
    """

    def __init__(self, config: ClockConfig) -> None:
        self.config = config
        self.end_us = to_micros(config.anchor)
        self.span_us = int(config.window_days * MICROS_PER_DAY)
        self.start_us = self.end_us - self.span_us
        self._offsets = tuple(
            (m * 60 * MICROS_PER_SECOND, format_offset(m)) for m in config.offsets_minutes
        )
        lo = min(config.offsets_minutes) * 60 * MICROS_PER_SECOND
        hi = max(config.offsets_minutes) * 60 * MICROS_PER_SECOND
        self._day0 = (self.start_us + lo) // MICROS_PER_DAY
        last_day = (self.end_us + hi) // MICROS_PER_DAY
        self._days = tuple(format_date(d) + "T" for d in range(self._day0, last_day + 1))
        self._tod = _time_of_day_table()

    def render(self, instant_us: int, offset_index: int) -> str:
        """Render an instant at one of the configured offsets.

        Args:
            instant_us: Epoch microseconds inside the window.
            offset_index: Index into ``offsets_minutes``.

        Returns:
            Text such as ``2022-07-26T00:41:48.046773-07:00``.
        """
        off_us, off_text = self._offsets[offset_index]
        day, rem = divmod(instant_us + off_us, MICROS_PER_DAY)
        seconds, micros = divmod(rem, MICROS_PER_SECOND)
        return f"{self._days[day - self._day0]}{self._tod[seconds]}.{micros:06d}{off_text}"

    def tables(self) -> tuple[tuple[tuple[int, str], ...], int, tuple[str, ...], tuple[str, ...]]:
        """The lookup tables behind :meth:`render`, for inlined hot loops.

        Returns:
            ``(offsets as (micros, text), first day number, day prefixes,
            time-of-day texts)``.
        """
        return self._offsets, self._day0, self._days, self._tod

    def instant(self, rng: random.Random) -> int:
        """Draw an instant (epoch microseconds) in ``[anchor - window, anchor]``.

        Args:
            rng: The seeded source.

        Returns:
            Epoch microseconds.
        """
        # random() * span is exact enough: spans below 2**53 us (~285 years).
        return self.end_us - int(rng.random() * (self.span_us + 1))

    def timestamptz(self, rng: random.Random) -> str:
        """Draw an instant and render it with a drawn offset, always with micros.

        Args:
            rng: The seeded source.

        Returns:
            Text such as ``2022-07-26T00:41:48.046773-07:00``.
        """
        offsets = self._offsets
        off_us, off_text = offsets[int(rng.random() * len(offsets))]
        local = self.end_us - int(rng.random() * (self.span_us + 1)) + off_us
        day, rem = divmod(local, MICROS_PER_DAY)
        seconds, micros = divmod(rem, MICROS_PER_SECOND)
        return f"{self._days[day - self._day0]}{self._tod[seconds]}.{micros:06d}{off_text}"
