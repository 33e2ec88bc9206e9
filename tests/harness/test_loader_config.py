"""The local stack as the loader configuration's lowest layer, and `icefloe maintain`'s flags."""

from __future__ import annotations

import datetime as dt
import stat
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.harness.cli.main import build_parser
from icefloe.harness.loaders.config import StackDefaults
from icefloe.loader.secret import Secret
from tests.harness.fakes import RestCatalog


def _stack(tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(
        bootstrap_servers="127.0.0.1:59092",
        catalog_uri="http://127.0.0.1:58181",
        catalog=RestCatalog("http://127.0.0.1:58181"),
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


def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """The stub stack, with the Spark settings passed through (no provisioned jars needed)."""
    from icefloe.harness.loaders import config
    from icefloe.loader.config import SparkConfig

    monkeypatch.setattr(config, "provisioned_spark", lambda cache, spark: spark or SparkConfig())
    stack = _stack(tmp_path)
    stack.config.cache_dir = tmp_path / "cache"
    return stack


def test_a_supervised_loader_keeps_sparks_scratch_beside_its_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loader the harness kills with kill -9 leaves its spark-* folder in the run's folder."""
    from icefloe.harness.loaders.icefloe import icefloe_config
    from icefloe.harness.loaders.process import placed

    stack = _offline(tmp_path, monkeypatch)
    checkpoint = tmp_path / "loader" / "checkpoint"
    cfg = placed(icefloe_config(stack, "lake.s.t", ("t",), loader_id="l1"), checkpoint)
    assert cfg.spark.local_dir == str(tmp_path / "loader" / "spark-local")
    assert cfg.checkpoint_location == str(checkpoint)
    # A scratch folder or checkpoint given as a setting wins.
    own = icefloe_config(stack, "lake.s.t", ("t",), {"spark.local_dir": "/x"}, loader_id="l1")
    assert placed(own, tmp_path / "c").spark.local_dir == "/x"
    # [spark] settings given as a section's table (the bench's jit) keep the scratch folder.
    tiered = icefloe_config(stack, "lake.s.t", ("t",), {"spark": {"jit": "quick"}}, loader_id="l")
    cfg = placed(tiered, checkpoint)
    assert (cfg.spark.jit, cfg.spark.local_dir) == (
        "quick",
        str(tmp_path / "loader" / "spark-local"),
    )
    # [kafka] settings as a section's table (the bench's first slice) join those by dotted key.
    settings = {"kafka.max_offsets_per_trigger": 500, "kafka": {"first_slice_records": 0}}
    cfg = icefloe_config(stack, "lake.s.t", ("t",), settings, loader_id="l1")
    assert (cfg.kafka.max_offsets_per_trigger, cfg.kafka.first_slice_records) == (500, 0)


def test_a_harness_loader_takes_the_loaders_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One record, one default: what a harness loader leaves out is the loader's own, and the
    harness means something else in one setting only (``HARNESS_SETTINGS``, which says why)."""
    from icefloe.harness.loaders.icefloe import HARNESS_SETTINGS, icefloe_config
    from icefloe.harness.scenarios.loaders import LoaderOptions
    from icefloe.loader.config import LoaderConfig
    from icefloe.loader.settings import default, keys

    cfg = icefloe_config(_offline(tmp_path, monkeypatch), "lake.s.t", ("t",), loader_id="l1")
    stacks = {"table", "loader_id", "metrics_port", "spark.jars", "spark.java_home"}
    for key in keys(LoaderConfig):
        if key.key in stacks or key.key.startswith(("kafka.bootstrap", "kafka.topics", "catalog.")):
            continue
        if not key.from_file and not key.setting.secret:
            value = cfg
            for part in key.key.split("."):
                value = getattr(value, part)
            assert value == default(LoaderConfig, key.key), key.key
    assert cfg.kafka.max_offsets_per_trigger == 500_000  # the loader's, not "no limit"
    options = LoaderOptions()
    assert options.loader_settings() == {}  # nothing set: the loader's own defaults apply
    assert options.trigger_s == cfg.trigger_interval
    assert options.max_rate is None  # the harness's own: no cap
    assert HARNESS_SETTINGS == {"kafka.max_offsets_per_trigger": 0}


def test_a_harness_loader_without_a_batch_limit_runs_without_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the harness believes is what the loader process reads from the file."""
    from icefloe.harness.loaders.base import LoaderTarget
    from icefloe.harness.loaders.icefloe import IcefloeKind
    from icefloe.harness.loaders.process import SECRET_ENV
    from icefloe.harness.scenarios.loaders import LoaderOptions
    from icefloe.loader.config import load_config

    stack = _offline(tmp_path, monkeypatch)
    for table, cap in (({}, None), ({"kafka.max_offsets_per_trigger": 300}, 300)):
        options = LoaderOptions.read(table, "t")
        settings = options.loader_settings()
        target = LoaderTarget("l1", "lake.s.t", ("t",), None, tmp_path, settings=settings)
        cfg = IcefloeKind().config(target, stack)
        path = tmp_path / "loader.toml"
        path.write_text(cfg.to_toml())
        again = load_config(path, env={SECRET_ENV: "s3cr3t"})
        assert again == cfg and again.kafka.max_offsets_per_trigger == cap
        assert options.max_rate == (None if cap is None else cap / options.trigger_s)


def test_settings_are_read_as_the_loader_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icefloe.harness.loaders.icefloe import icefloe_config
    from icefloe.loader.errors import ConfigError

    stack = _offline(tmp_path, monkeypatch)
    settings = {
        "trigger_interval": "2s",
        "max_record_bytes": 10,
        "kafka.max_offsets_per_trigger": "0",
    }
    cfg = icefloe_config(stack, "lake.s.t", ("t",), settings, loader_id="l1", origin="the test")
    assert (cfg.trigger_interval, cfg.max_record_bytes) == (2.0, 10)
    assert cfg.kafka.max_offsets_per_trigger is None
    assert cfg.catalog.s3_secret_key is not None and cfg.catalog.s3_secret_key.reveal() == "s3cr3t"
    with pytest.raises(ConfigError, match=r"trigger_interval \(from the test\)"):
        icefloe_config(
            stack,
            "lake.s.t",
            ("t",),
            {"trigger_interval": "soon"},
            loader_id="l1",
            origin="the test",
        )
    with pytest.raises(ConfigError, match="unknown setting 'trigger_intervall'"):
        icefloe_config(stack, "lake.s.t", ("t",), {"trigger_intervall": 1}, loader_id="l1")


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
    """``icefloe loader start`` runs the loader's own defaults (its batch cap included), but
    for its loader id and metrics port."""
    from icefloe.harness.cli.loader import start_flags
    from icefloe.harness.loaders.background import flags_config
    from icefloe.loader.config import LoaderConfig
    from icefloe.loader.errors import ConfigError
    from icefloe.loader.settings import default, flag_values

    stack = _offline(tmp_path, monkeypatch)
    argv = ["loader", "start", "--name", "w", "--table", "lake.s.t", "--kafka-topics", "a,b"]
    flags = start_flags(
        "w", flag_values(LoaderConfig, build_parser().parse_args(argv)), lambda: 59401
    )
    assert flags == {
        "table": "lake.s.t",
        "kafka.topics": "a,b",
        "loader_id": "icefloe-w",
        "metrics_port": "59401",
    }
    cfg = flags_config(stack, flags)
    assert (cfg.loader_id, cfg.kafka.topics, cfg.metrics_port) == ("icefloe-w", ("a", "b"), 59401)
    for key in ("trigger_interval", "lease_ttl", "kafka.max_offsets_per_trigger"):
        section = cfg.kafka if key.startswith("kafka.") else cfg
        assert getattr(section, key.rsplit(".", 1)[-1]) == default(LoaderConfig, key), key
    argv += ["--lease-ttl", "15s", "--kafka-max-offsets-per-trigger", "0", "--loader-id", "x"]
    flags = start_flags("w", flag_values(LoaderConfig, build_parser().parse_args(argv)), lambda: 1)
    cfg = flags_config(stack, flags)
    assert (cfg.lease_ttl, cfg.kafka.max_offsets_per_trigger, cfg.loader_id) == (15.0, None, "x")
    with pytest.raises(ValueError, match="--kafka-topics"):
        flags_config(stack, {"table": "lake.s.t", "loader_id": "x"})
    with pytest.raises(ConfigError, match=r"trigger_interval \(from the command line\)"):
        flags_config(stack, {**flags, "trigger_interval": "soon"})


def test_a_scenario_loader_is_the_loaders_own_config_with_its_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scenario's [loader] table becomes the loader's own model: what it leaves out is the
    loader's default, what it sets is read by the loader's codecs, and the file says so."""
    from icefloe.harness.loaders.base import LoaderTarget
    from icefloe.harness.loaders.icefloe import IcefloeKind
    from icefloe.harness.loaders.process import SECRET_ENV, placed
    from icefloe.harness.scenarios.loaders import LoaderOptions
    from icefloe.loader.config import LoaderConfig, load_config
    from icefloe.loader.settings import default

    stack = _offline(tmp_path, monkeypatch)
    kind = IcefloeKind()

    def config(options: LoaderOptions) -> LoaderConfig:
        target = LoaderTarget(
            "l1", "lake.s.t", ("t",), "t.dlq", tmp_path, settings=options.loader_settings()
        )
        return placed(kind.config(target, stack), tmp_path / "checkpoint")

    plain = config(LoaderOptions())
    for key in ("trigger_interval", "lease_ttl", "case_insensitive", "max_record_bytes"):
        assert getattr(plain, key) == default(LoaderConfig, key), key
    assert plain.kafka.max_offsets_per_trigger is None  # the harness's own: no cap
    assert plain.dead_letter_topic == "t.dlq" and plain.checkpoint_location.endswith("checkpoint")
    # As a file reads: TOML dotted keys are nested tables, a quoted dotted key is one key.
    table = tomllib.loads(
        """
        trigger_interval = 2.0
        lease_ttl = "8s"
        case_insensitive = false
        kafka.max_offsets_per_trigger = 300
        "catalog.read_timeout" = "4s"
        transform = { unnest = "/data" }
        kill_after_commit = 1
        """
    )
    options = LoaderOptions.read(table, "t: [loader]")
    assert options.kill_after_commit == 1 and "kill_after_commit" not in options.settings
    tuned = config(options)
    assert (tuned.trigger_interval, tuned.lease_ttl, tuned.case_insensitive) == (2.0, 8.0, False)
    assert tuned.kafka.max_offsets_per_trigger == 300 and tuned.catalog.read_timeout == 4.0
    assert tuned.transform.unnest == "/data"
    assert options.loader_settings(tuning=False).keys() == {
        "lease_ttl", "case_insensitive", "catalog.read_timeout", "transform.unnest"
    }  # fmt: skip
    for cfg in (plain, tuned):
        path = tmp_path / "loader.toml"
        path.write_text(cfg.to_toml())
        assert load_config(path, env={SECRET_ENV: "s3cr3t"}) == cfg
    trigger = default(LoaderConfig, "trigger_interval")
    assert kind.settle_s(LoaderTarget("l", "t", ("t",), None, tmp_path)) == 2 * trigger
    # A break or a configure_loader step changes what it names; an empty section's table
    # drops that section's settings.
    changed = options.updated({"kafka": {"first_slice_records": 0}, "transform": {}}, "b")
    assert changed.settings["kafka.max_offsets_per_trigger"] == 300
    assert changed.settings["kafka.first_slice_records"] == 0
    assert not any(k.startswith("transform.") for k in changed.settings)
    assert options.settings["transform.unnest"] == "/data"  # frozen: a new one is made


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    trigger=st.floats(0.01, 3600.0, allow_nan=False) | st.sampled_from(["500ms", "2s", "1m"]),
    cap=st.none() | st.integers(0, 2**40),
    lease=st.none() | st.floats(3601.0, 10**6, allow_nan=False),
    flags=st.fixed_dictionaries(
        {},
        optional={
            "case_insensitive": st.booleans(),
            "jvm_decode": st.booleans(),
            "max_record_bytes": st.integers(1, 2**40),
            "catalog.read_timeout": st.sampled_from(["4s", 8.5, "1m"]),
            "spark.jit": st.sampled_from(["quick", "tiered"]),
            "kafka.first_slice_records": st.integers(0, 2**20),
        },
    ),
)
def test_generated_scenario_loaders_round_trip_through_their_file(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    trigger: float | str,
    cap: int | None,
    lease: float | None,
    flags: dict[str, object],
) -> None:
    """Generated [loader] tables (no limit included: a cap of 0, or none given) through the
    harness's path into the loader's file and back: the loader reads what the harness built."""
    from icefloe.harness.loaders.base import LoaderTarget
    from icefloe.harness.loaders.icefloe import IcefloeKind
    from icefloe.harness.loaders.process import SECRET_ENV, placed
    from icefloe.harness.scenarios.loaders import LoaderOptions
    from icefloe.loader.config import load_config

    table: dict[str, object] = {"trigger_interval": trigger, **flags}
    if cap is not None:
        table["kafka.max_offsets_per_trigger"] = cap
    if lease is not None:
        table["lease_ttl"] = lease
    options = LoaderOptions.read(table, "generated")
    target = LoaderTarget("l1", "lake.s.t", ("t",), "t.dlq", tmp_path, settings=options.settings)
    cfg = placed(IcefloeKind().config(target, _offline(tmp_path, monkeypatch)), tmp_path / "c")
    path = tmp_path / "loader.toml"
    path.write_text(cfg.to_toml())
    again = load_config(path, env={SECRET_ENV: "s3cr3t"})
    assert again == cfg
    assert again.kafka.max_offsets_per_trigger == (cap or None)  # 0 and none: no limit
    assert again.trigger_interval == options.trigger_s
    limit = again.kafka.max_offsets_per_trigger
    assert options.max_rate == (None if limit is None else limit / again.trigger_interval)
