"""Message stream: reproducible, unique event ids, keys, partitions, headers, fractions."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections import Counter

import pytest

from icefloe.publisher.clock import ClockConfig
from icefloe.publisher.messages import (
    HEADER_EVENT_ID,
    HEADER_KIND,
    GenerationConfig,
    KeySpec,
    event_id_prefix,
    generate,
)


def test_same_seed_gives_byte_identical_messages() -> None:
    config = GenerationConfig(seed=42, malformed_fraction=0.2, key=KeySpec("random", 50))
    assert list(generate(config, 500)) == list(generate(config, 500))


def test_different_seeds_differ() -> None:
    a = [m.value for m in generate(GenerationConfig(seed=1), 20)]
    b = [m.value for m in generate(GenerationConfig(seed=2), 20)]
    assert a != b
    assert event_id_prefix(1) != event_id_prefix(2)


def test_unset_seed_is_resolved() -> None:
    config = GenerationConfig().resolved()
    assert isinstance(config.seed, int)
    assert config.resolved() is config


def test_event_ids_are_unique_uuids_embedded_in_payload() -> None:
    messages = list(generate(GenerationConfig(seed=3), 5000))
    ids = [m.event_id for m in messages]
    assert len(set(ids)) == len(ids)
    assert all(uuid.UUID(i).version == 4 and str(uuid.UUID(i)) == i for i in ids[:50])
    assert all(json.loads(m.value or b"")["event_id"] == m.event_id for m in messages[:50])
    assert [m.seq for m in messages] == list(range(5000))


def test_valid_rows_do_not_change_when_malformations_are_mixed_in() -> None:
    plain = list(generate(GenerationConfig(seed=8), 300))
    mixed = list(generate(GenerationConfig(seed=8, malformed_fraction=0.5), 300))
    valid = [m for m in mixed if m.kind is None]
    assert 100 < len(valid) < 200
    for m in valid:
        assert m.value == plain[m.seq].value


def test_malformed_fraction_and_kinds() -> None:
    config = GenerationConfig(
        seed=5, malformed_fraction=0.25, malformed_kinds=("tombstone", "null_root")
    )
    kinds = Counter(m.kind for m in generate(config, 4000))
    assert set(kinds) == {None, "tombstone", "null_root"}
    assert 0.22 < (kinds["tombstone"] + kinds["null_root"]) / 4000 < 0.28


@pytest.mark.parametrize(
    ("spec", "check"),
    [
        ("none", lambda ks, ids: all(k is None for k in ks)),
        ("event-id", lambda ks, ids: ks == [i.encode() for i in ids]),
        ("fixed:abc", lambda ks, ids: set(ks) == {b"abc"}),
        ("random:7", lambda ks, ids: set(ks) == {f"key-{i}".encode() for i in range(7)}),
    ],
)
def test_key_modes(spec: str, check: object) -> None:
    messages = list(generate(GenerationConfig(seed=1, key=KeySpec.parse(spec)), 300))
    assert check([m.key for m in messages], [m.event_id for m in messages])  # type: ignore[operator]


@pytest.mark.parametrize("text", ["random", "random:x", "fixed:", "sometimes"])
def test_key_spec_rejects_bad_forms(text: str) -> None:
    with pytest.raises(ValueError):
        KeySpec.parse(text)


def test_partitions_and_headers() -> None:
    config = GenerationConfig(seed=1, partitions=(0, 2), headers=True, malformed_fraction=0.5)
    messages = list(generate(config, 400))
    assert {m.partition for m in messages} == {0, 2}
    for m in messages:
        assert m.headers == (
            (HEADER_EVENT_ID, m.event_id.encode()),
            (HEADER_KIND, (m.kind or "valid").encode()),
        )
    assert all(m.partition == -1 for m in generate(GenerationConfig(seed=1), 10))


def test_anchor_and_window_reach_the_rows() -> None:
    anchor = dt.datetime(2020, 3, 1, tzinfo=dt.UTC)
    config = GenerationConfig(seed=1, clock=ClockConfig(anchor=anchor, window_days=2))
    times = [
        dt.datetime.fromisoformat(json.loads(m.value or b"")["timestamp"])
        for m in generate(config, 500)
    ]
    assert all(anchor - dt.timedelta(days=2) <= t <= anchor for t in times)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"malformed_fraction": 1.5},
        {"partitions": ()},
        {"partitions": (-1,)},
        {"max_message_bytes": 0},
    ],
)
def test_config_rejects_nonsense(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        GenerationConfig(**kwargs)  # type: ignore[arg-type]


def test_describe_is_json() -> None:
    json.dumps(GenerationConfig(seed=1).describe())


def test_phases_sharing_a_pool_seed_draw_from_one_set_of_pools() -> None:
    """``pool_seed`` seeds the value pools in place of ``seed``: two phases of one run build
    them once, their rows still differ, and a phase regenerates exactly as it was sent."""
    from icefloe.publisher.rows import ReferencePools

    def values(config: GenerationConfig) -> list[str | None]:
        return [m.value for m in generate(config, 50)]

    shared = [GenerationConfig(seed=s, pool_seed=99) for s in (1, 2)]
    assert values(shared[0]) == values(GenerationConfig(seed=1, pool_seed=99))
    assert values(shared[0]) != values(shared[1])
    assert values(shared[0]) != values(GenerationConfig(seed=1))
    pools = ReferencePools.for_seed(99)
    strings = {json.loads(v)["string"] for c in shared for v in values(c) if v is not None}
    assert strings - {None} <= set(pools.string.values)
