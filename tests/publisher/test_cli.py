"""CLI: sub-command wiring, dry runs, the catalog listing and option errors."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from icefloe.publisher import cli


def test_add_parser_wires_publish_into_an_entry_point() -> None:
    parser = argparse.ArgumentParser(prog="icefloe")
    sub = parser.add_subparsers(dest="command")
    cli.add_parser(sub)
    args = parser.parse_args(
        ["publish", "--topic", "t", "--count", "5", "--seed", "3", "--key", "random:4",
         "--partition-ids", "0,2", "--malformed-fraction", "0.5",
         "--malformed-kinds", "tombstone,oversized", "--extra-field", "x=long", "--envelope"]
    )  # fmt: skip
    assert args.func is cli.run and args.count == 5
    config = cli.generation_config(args)
    assert config.seed == 3 and config.key.space == 4 and config.partitions == (0, 2)
    assert config.malformed_kinds == ("tombstone", "oversized")
    assert config.drift.envelope and config.drift.extra_field_specs[0].name == "x"


def test_dry_run_prints_reproducible_messages(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--dry-run", "--count", "4", "--seed", "9", "--malformed-fraction", "0.5"]
    assert cli.main(argv) == 0
    first = capsys.readouterr().out
    assert cli.main(argv) == 0
    assert capsys.readouterr().out == first
    docs = [json.loads(line) for line in first.splitlines()]
    assert [d["seq"] for d in docs] == [0, 1, 2, 3]
    assert {d["status"] for d in docs} <= {"valid", "malformed"}


def test_list_malformations(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--list-malformations"]) == 0
    out = capsys.readouterr().out
    assert "oversized" in out and "too_large" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--topic", "t"], "give --count"),
        (["--count", "1"], "--topic is required"),
        (
            [
                "--count",
                "1",
                "--topic",
                "t",
                "--malformed-fraction",
                "0.1",
                "--malformed-kinds",
                "bogus",
            ],
            "unknown malformation",
        ),
        (["--count", "1", "--topic", "t", "--table", "ns.t"], "--catalog-uri"),
    ],
)
def test_option_errors_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


def test_bad_values_are_rejected_by_argparse() -> None:
    for argv in (["--key", "weird"], ["--malformed-fraction", "2"], ["--extra-field", "x"]):
        with pytest.raises(SystemExit):
            cli.main(argv)


def test_schema_file(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    from pathlib import Path

    from tests.publisher.schemas import all_types_schema

    path = Path(str(tmp_path)) / "schema.json"
    path.write_text(all_types_schema().model_dump_json())
    assert cli.main(["--dry-run", "--count", "2", "--seed", "1", "--schema-file", str(path)]) == 0
    doc = json.loads(json.loads(capsys.readouterr().out.splitlines()[0])["value"])
    assert "hash" in doc and "outer" in doc


def test_python_dash_m_runs_standalone() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "icefloe.publisher", "--one", "--dry-run", "--seed", "1"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert len(done.stdout.splitlines()) == 1


def test_partitions_is_refused_with_the_names_that_replace_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.build_parser().parse_args(["--topic", "t", "--count", "1", "--partitions", "2"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--partition-ids" in err and "icefloe topic create" in err


def test_table_reads_its_catalog_from_the_flags_else_from_the_default() -> None:
    parser = cli.build_parser()
    rest = parser.parse_args(["--table", "ns.t", "--catalog-uri", "http://127.0.0.1:1"])
    assert cli.catalog_properties(rest) == {"type": "rest", "uri": "http://127.0.0.1:1"}
    pairs = ["--catalog-property", "type=glue", "--catalog-property", "glue.region=x"]
    glue = parser.parse_args(["--table", "ns.t", *pairs])
    assert cli.catalog_properties(glue, lambda: {"type": "rest"}) == {
        "type": "glue",
        "glue.region": "x",
    }
    neither = parser.parse_args(["--table", "ns.t"])
    assert cli.catalog_properties(neither, lambda: {"type": "glue"}) == {"type": "glue"}
    with pytest.raises(ValueError, match="--catalog-uri or --catalog-property"):
        cli.catalog_properties(neither)
    with pytest.raises(SystemExit):
        parser.parse_args(["--catalog-property", "no-equals-sign"])
