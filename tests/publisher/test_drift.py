"""Schema drift: extra, missing, camelCase, envelope and named extra fields."""

from __future__ import annotations

import json

import pytest

from icefloe.loader.decode.parse import parse_row
from icefloe.publisher.drift import DriftConfig, ExtraFieldSpec, camel_case
from icefloe.publisher.messages import GenerationConfig, generate
from icefloe.publisher.rows import REFERENCE_COLUMNS, reference_schema


def drifted(count: int = 50, **drift: object) -> list[dict[str, object]]:
    config = GenerationConfig(seed=2, drift=DriftConfig(**drift))  # type: ignore[arg-type]
    return [json.loads(m.value or b"") for m in generate(config, count)]


def test_camel_case() -> None:
    assert camel_case("string_map") == "stringMap"
    assert camel_case("event_id") == "eventId"
    assert camel_case("nested") == "nested"


def test_extra_and_missing_fields_still_load() -> None:
    schema = reference_schema()
    for doc in drifted(extra_fields=2, missing_fields=3):
        assert "extra_1" in doc and "extra_2" in doc
        assert len(set(REFERENCE_COLUMNS) - set(doc)) == 3
        assert "event_id" in doc
        parse_row(json.dumps(doc).encode(), schema)


def test_camel_case_renames_struct_fields_not_map_keys() -> None:
    config = GenerationConfig(seed=2, drift=DriftConfig(camel_case=True))
    plain = GenerationConfig(seed=2)
    for m, p in zip(generate(config, 50), generate(plain, 50), strict=True):
        doc, orig = json.loads(m.value or b""), json.loads(p.value or b"")
        assert "stringMap" in doc and "string_map" not in doc and "eventId" in doc
        assert doc["stringMap"] == orig["string_map"]
        assert m.drift == ("camel_case",)


def test_envelope_wraps_the_row() -> None:
    config = GenerationConfig(seed=2, drift=DriftConfig(envelope=True))
    plain = GenerationConfig(seed=2)
    for m, p in zip(generate(config, 20), generate(plain, 20), strict=True):
        doc = json.loads(m.value or b"")
        assert doc["specversion"] == "1.0" and doc["id"] == m.event_id and doc["type"]
        assert doc["data"] == json.loads(p.value or b"")
        parse_row(json.dumps(doc["data"]).encode(), reference_schema())


def test_named_extra_fields() -> None:
    specs = tuple(
        ExtraFieldSpec.parse(s)
        for s in ("amount=decimal(10, 2)", "who=faker:name", "n=seq", 'tag=const:"x"', "d=date")
    )
    docs = drifted(5, extra_field_specs=specs)
    assert [d["n"] for d in docs] == [1, 2, 3, 4, 5]
    assert all(d["tag"] == "x" and isinstance(d["who"], str) for d in docs)
    assert all(isinstance(d["amount"], str) and len(str(d["d"])) == 10 for d in docs)


@pytest.mark.parametrize("text", ["noequals", "=long", "x="])
def test_extra_field_spec_rejects_bad_forms(text: str) -> None:
    with pytest.raises(ValueError):
        ExtraFieldSpec.parse(text)


@pytest.mark.parametrize("generator", ["nope", "faker:no_such_provider", "list<long>"])
def test_unknown_generators_are_named(generator: str) -> None:
    config = GenerationConfig(
        seed=1, drift=DriftConfig(extra_field_specs=(ExtraFieldSpec("x", generator),))
    )
    with pytest.raises(ValueError, match="x"):
        next(generate(config, 1))


def test_drift_fraction_applies_to_a_share() -> None:
    config = GenerationConfig(seed=2, drift=DriftConfig(fraction=0.3, envelope=True))
    share = sum(bool(m.drift) for m in generate(config, 2000)) / 2000
    assert 0.25 < share < 0.35
