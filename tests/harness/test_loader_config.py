"""The local stack as the loader configuration's lowest layer, and `icefloe maintain`'s flags."""

from __future__ import annotations

import datetime as dt
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.cli.main import build_parser
from harness.loaders.config import StackDefaults
from loader.secret import Secret


def _stack(tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(
        bootstrap_servers="127.0.0.1:59092",
        catalog_uri="http://127.0.0.1:58181",
        s3_endpoint="http://127.0.0.1:59000",
        credentials=SimpleNamespace(access_key="icefloe-ab", secret_key=Secret("s3cr3t")),
        config=SimpleNamespace(run_dir=tmp_path, loader_metrics_port=59400),
    )


def test_the_stack_fills_what_is_not_configured(tmp_path: Path) -> None:
    offered = StackDefaults(_stack(tmp_path)).values(frozenset({"table", "kafka.topics"}))
    assert offered["kafka.bootstrap"] == "127.0.0.1:59092"
    assert offered["catalog.uri"] == "http://127.0.0.1:58181"
    assert offered["metrics_port"] == 59400
    secret_file = Path(offered["catalog.s3_secret_key_file"])
    assert secret_file.read_text() == "s3cr3t"
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    assert "s3cr3t" not in repr(offered)


def test_a_configured_catalog_gets_nothing_of_the_stacks_store(tmp_path: Path) -> None:
    configured = frozenset({"kafka.bootstrap", "catalog.uri", "metrics_port"})
    assert StackDefaults(_stack(tmp_path)).values(configured) == {}


def test_maintain_reads_durations_and_keeps_zero() -> None:
    args = build_parser().parse_args(
        ["maintain", "expire-snapshots", "lake.s.t", "--older-than", "0s"]
    )
    assert args.older_than == dt.timedelta(0)
    args = build_parser().parse_args(["maintain", "retention", "lake.s.t", "--older-than", "30d"])
    assert args.older_than == dt.timedelta(days=30) and not args.exact
    default = build_parser().parse_args(["maintain", "remove-orphans", "lake.s.t"])
    assert default.older_than is None  # the operation's own default (7 d) applies


def test_a_supervised_loader_keeps_sparks_scratch_beside_its_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loader the harness kills with kill -9 leaves its spark-* folder in the run's folder."""
    from harness.loaders import config, process
    from loader.config import SparkConfig

    # No provisioned jars or JDK needed: the settings pass through as given.
    monkeypatch.setattr(config, "provisioned_spark", lambda cache, spark: spark or SparkConfig())
    stack = _stack(tmp_path)
    stack.config.cache_dir = tmp_path / "cache"
    settings = process.LoaderSettings("l1", "lake.s.t", ("t",))
    cfg = process.loader_config(settings, stack, tmp_path / "loader" / "checkpoint")
    assert cfg.spark.local_dir == str(tmp_path / "loader" / "spark-local")
    own = process.LoaderSettings("l1", "lake.s.t", ("t",), extra={"spark": SparkConfig()})
    assert process.loader_config(own, stack, tmp_path / "c").spark.local_dir is None
    # [spark] settings given as a mapping (the bench's jit) keep the scratch folder.
    tiered = process.LoaderSettings("l1", "lake.s.t", ("t",), extra={"spark": {"jit": "tiered"}})
    cfg = process.loader_config(tiered, stack, tmp_path / "loader" / "checkpoint")
    assert (cfg.spark.jit, cfg.spark.local_dir) == (
        "tiered",
        str(tmp_path / "loader" / "spark-local"),
    )
    # [kafka] settings given as a mapping (the bench's first slice) join the scenario's.
    sliced = process.LoaderSettings(
        "l1",
        "lake.s.t",
        ("t",),
        max_offsets_per_trigger=500,
        extra={"kafka": {"first_slice_records": 0}},
    )
    cfg = process.loader_config(sliced, stack, tmp_path / "c")
    assert (cfg.kafka.max_offsets_per_trigger, cfg.kafka.first_slice_records) == (500, 0)
