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
    own = process.LoaderSettings("l1", "lake.s.t", ("t",), extra={"spark.local_dir": "/x"})
    assert process.loader_config(own, stack, tmp_path / "c").spark.local_dir == "/x"
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


def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """The stub stack, with the Spark settings passed through (no provisioned jars needed)."""
    from harness.loaders import config
    from loader.config import SparkConfig

    monkeypatch.setattr(config, "provisioned_spark", lambda cache, spark: spark or SparkConfig())
    stack = _stack(tmp_path)
    stack.config.cache_dir = tmp_path / "cache"
    return stack


def test_a_harness_loader_takes_the_loaders_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.loaders import process
    from harness.scenarios.loaders import LoaderOptions
    from loader.config import LoaderConfig
    from loader.settings import default

    settings = process.LoaderSettings("l1", "lake.s.t", ("t",))
    cfg = process.loader_config(settings, _offline(tmp_path, monkeypatch), tmp_path / "c")
    for key in ("trigger_interval", "lease_ttl", "exactly_once", "fencing", "dead_letter_topic"):
        assert getattr(cfg, key) == default(LoaderConfig, key), key
    assert settings.trigger_interval_s == cfg.trigger_interval
    options = LoaderOptions()
    assert options.loader_settings() == {}  # nothing set: the loader's own defaults apply
    assert options.trigger_s == cfg.trigger_interval
    # The one harness default of its own: no batch limit (NO_BATCH_LIMIT says why).
    assert settings.max_offsets_per_trigger is None and options.max_rate is None
    for name, key in process.LOADER_KEYS.items():
        own = getattr(process.LoaderSettings, name)
        assert own == (None if name == "max_offsets_per_trigger" else default(LoaderConfig, key))


def test_a_harness_loader_without_a_batch_limit_runs_without_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the harness believes is what the loader process reads from the file."""
    from harness.loaders import process
    from loader.config import load_config

    stack = _offline(tmp_path, monkeypatch)
    for cap in (None, 300):
        settings = process.LoaderSettings("l1", "lake.s.t", ("t",), max_offsets_per_trigger=cap)
        cfg = process.loader_config(settings, stack, tmp_path / "c")
        path = tmp_path / "loader.toml"
        path.write_text(cfg.to_toml())
        again = load_config(path, env={process.SECRET_ENV: "s3cr3t"})
        assert again == cfg and again.kafka.max_offsets_per_trigger == cap


def test_extra_settings_are_read_as_the_loader_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.loaders import process
    from loader.errors import ConfigError

    stack = _offline(tmp_path, monkeypatch)
    extra = {"trigger_interval": "2s", "max_record_bytes": 10, "kafka.max_offsets_per_trigger": "0"}
    settings = process.LoaderSettings(
        "l1", "lake.s.t", ("t",), max_offsets_per_trigger=9, extra=extra
    )
    cfg = process.loader_config(settings, stack, tmp_path / "c")
    assert (cfg.trigger_interval, cfg.max_record_bytes) == (2.0, 10)
    assert cfg.kafka.max_offsets_per_trigger is None  # extra wins over the field
    assert cfg.catalog.s3_secret_key is not None and cfg.catalog.s3_secret_key.reveal() == "s3cr3t"
    bad = process.LoaderSettings("l1", "lake.s.t", ("t",), extra={"trigger_interval": "soon"})
    with pytest.raises(ConfigError, match=r"trigger_interval \(from the loader's extra"):
        process.loader_config(bad, stack, tmp_path / "c")
    with pytest.raises(ConfigError, match="unknown setting 'trigger_intervall'"):
        process.loader_config(
            process.LoaderSettings("l1", "lake.s.t", ("t",), extra={"trigger_intervall": 1}),
            stack,
            tmp_path / "c",
        )


def _options(parser: object, *path: str) -> set[str]:
    """The option strings of the sub-command at ``path`` of ``parser``."""
    import argparse

    for name in path:
        assert isinstance(parser, argparse.ArgumentParser)
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    assert isinstance(parser, argparse.ArgumentParser)
    return {o for a in parser._actions for o in a.option_strings}


def test_loader_start_takes_the_setting_flags_of_load() -> None:
    parser = build_parser()
    load = _options(parser, "load") - {"-h", "--help", "-v", "--verbose", "--config", "--backend"}
    start = _options(parser, "loader", "start") - {"-h", "--help", "--name", "--no-wait"}
    assert load == start and "--kafka-max-offsets-per-trigger" in start


def test_loader_start_flags_become_the_loaders_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.cli.loader import settings_from_flags
    from harness.loaders import process
    from loader.config import LoaderConfig
    from loader.errors import ConfigError
    from loader.settings import default, flag_values

    argv = ["loader", "start", "--name", "w", "--table", "lake.s.t", "--kafka-topics", "a,b"]
    argv += ["--lease-ttl", "15s", "--kafka-max-offsets-per-trigger", "0"]
    flags = flag_values(LoaderConfig, build_parser().parse_args(argv))
    settings = settings_from_flags("w", flags, lambda: 59401)
    assert (settings.loader_id, settings.topics) == ("icefloe-w", ("a", "b"))
    # Its own fields say what runs (they are saved for the next start and read by status).
    assert (settings.lease_ttl_s, settings.max_offsets_per_trigger) == (15.0, None)
    assert settings.extra == {"metrics_port": "59401"}
    cfg = process.loader_config(settings, _offline(tmp_path, monkeypatch), tmp_path / "c")
    assert (cfg.lease_ttl, cfg.metrics_port) == (15.0, 59401)
    assert cfg.trigger_interval == default(LoaderConfig, "trigger_interval")  # not 3 s
    assert cfg.kafka.max_offsets_per_trigger is None
    with pytest.raises(ValueError, match="--kafka-topics"):
        settings_from_flags("w", {"table": "lake.s.t"}, lambda: 1)
    with pytest.raises(ConfigError, match=r"trigger_interval \(from the command line\)"):
        settings_from_flags("w", {**flags, "trigger_interval": "soon"}, lambda: 1)


def test_a_scenario_loader_is_the_loaders_own_config_with_its_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scenario's [loader] table becomes the loader's own model: what it leaves out is the
    loader's default, what it sets is read by the loader's codecs, and the file says so."""
    from harness.loaders.base import LoaderTarget
    from harness.loaders.icefloe import IcefloeKind
    from harness.loaders.process import SECRET_ENV, placed
    from harness.scenarios.loaders import LoaderOptions
    from loader.config import LoaderConfig, load_config
    from loader.settings import default

    stack = _offline(tmp_path, monkeypatch)
    kind = IcefloeKind()

    def config(options: LoaderOptions) -> LoaderConfig:
        target = LoaderTarget(
            "l1", "lake.s.t", ("t",), "t.dlq", tmp_path, settings=options.loader_settings()
        )
        return placed(kind.config(target, stack), tmp_path / "checkpoint")

    plain = config(LoaderOptions())
    for key in ("trigger_interval", "lease_ttl", "exactly_once", "fencing", "max_record_bytes"):
        assert getattr(plain, key) == default(LoaderConfig, key), key
    assert plain.kafka.max_offsets_per_trigger is None  # the harness's own: no cap
    assert plain.dead_letter_topic == "t.dlq" and plain.checkpoint_location.endswith("checkpoint")
    tuned = config(
        LoaderOptions(
            trigger_interval_s=2.0, max_offsets_per_trigger=300, lease_ttl_s=8.0,
            exactly_once=False, transform={"unnest": "/data"},
            settings={"catalog.read_timeout": "4s"},
        )
    )  # fmt: skip
    assert (tuned.trigger_interval, tuned.lease_ttl, tuned.exactly_once) == (2.0, 8.0, False)
    assert tuned.kafka.max_offsets_per_trigger == 300 and tuned.catalog.read_timeout == 4.0
    assert tuned.transform.unnest == "/data"
    for cfg in (plain, tuned):
        path = tmp_path / "loader.toml"
        path.write_text(cfg.to_toml())
        assert load_config(path, env={SECRET_ENV: "s3cr3t"}) == cfg
    trigger = default(LoaderConfig, "trigger_interval")
    assert kind.settle_s(LoaderTarget("l", "t", ("t",), None, tmp_path)) == 2 * trigger
