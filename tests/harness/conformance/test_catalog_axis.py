"""``icefloe conformance --catalog rest,glue``: the catalogs a table runs on, each checked."""

from __future__ import annotations

import argparse

import pytest

from icefloe.harness.cli import conformance
from icefloe.harness.cli.main import build_parser


def test_a_comma_separated_list_of_catalogs_is_read_in_order() -> None:
    assert conformance.catalog_list("glue, rest") == ["glue", "rest"]
    args = build_parser().parse_args(["conformance", "--catalog", "rest,glue"])
    assert args.catalog == ["rest", "glue"]
    assert build_parser().parse_args(["conformance"]).catalog is None


@pytest.mark.parametrize("text", ["nessie", "rest,moto", ","])
def test_a_catalog_the_stack_cannot_run_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="one or more of rest, glue"):
        conformance.catalog_list(text)
