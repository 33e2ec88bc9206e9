"""Console helpers: ids shown from where they differ."""

from __future__ import annotations

from icefloe.harness.console import shared_prefix


def test_a_long_shared_prefix_is_cut_leaving_context() -> None:
    ids = ["3095b331-4220-4ceb-af82-000000000043", "3095b331-4220-4ceb-af82-000000000149"]
    prefix = shared_prefix(ids)
    assert prefix == "3095b331-4220-4ceb-af82-00000"
    assert [i[len(prefix) :] for i in ids] == ["0000043", "0000149"]


def test_short_or_absent_prefixes_are_kept() -> None:
    assert shared_prefix(["abc1", "abc2"]) == ""
    assert shared_prefix(["x"]) == ""
    assert shared_prefix(["alpha", "beta"]) == ""
