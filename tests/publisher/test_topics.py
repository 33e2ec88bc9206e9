"""Topic settings as a user types them: sizes and durations."""

from __future__ import annotations

import pytest

from icefloe.publisher.topics import parse_duration_ms, parse_size


@pytest.mark.parametrize(
    ("text", "size"),
    [("16MiB", 16 * 1024 * 1024), ("1MB", 1_000_000), ("2048", 2048), ("4 kib", 4096)],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize(
    ("text", "ms"),
    [("7d", 604_800_000), ("12h", 43_200_000), ("30m", 1_800_000), ("90", 90_000),
     ("500ms", 500), ("0s", 0), ("forever", -1)],
)  # fmt: skip
def test_durations(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("text", ["", "7 days", "-3d", "1.5MiB", "lots"])
def test_nonsense_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_size(text) if "MiB" in text else parse_duration_ms(text)
