"""Property tests: random schemas and values round-trip; mutations fail at their path."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from icefloe.loader.decode.parse import parse_row
from icefloe.loader.errors import MalformedRecord
from tests.loader.strategies import Document, documents, mutated

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _same(actual: Any, expected: Any) -> None:
    """Equality that also insists on the Python type and on UTC for aware datetimes."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict)
        assert actual.keys() == expected.keys()
        for key in expected:
            _same(actual[key], expected[key])
    elif isinstance(expected, list):
        assert isinstance(actual, list)
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            _same(a, e)
    else:
        assert type(actual) is type(expected), (actual, expected)
        assert actual == expected
        if isinstance(expected, datetime) and expected.tzinfo is not None:
            assert actual.tzinfo is UTC
        if isinstance(expected, Decimal):
            assert actual.as_tuple().exponent == expected.as_tuple().exponent


@SETTINGS
@given(documents())
def test_round_trip(doc: Document) -> None:
    _same(parse_row(doc.payload, doc.schema), doc.expected)


@SETTINGS
@given(documents(), st.data())
def test_mutation_fails_at_its_path(doc: Document, data: st.DataObject) -> None:
    assume(doc.sites)
    payload, kind, site = mutated(doc, data)
    with pytest.raises(MalformedRecord) as info:
        parse_row(payload, doc.schema)
    assert (info.value.kind, info.value.path) == (kind, site.path), info.value
