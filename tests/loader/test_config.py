"""Configuration: TOML, then environment, then flags; validation; secrets never shown."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import pytest

from icefloe.loader.cli import build_parser
from icefloe.loader.config import (
    REMOVED,
    CatalogConfig,
    KafkaConfig,
    LoaderConfig,
    Secret,
    SparkConfig,
    TableId,
    load_config,
)
from icefloe.loader.errors import ConfigError
from icefloe.loader.ext.transforms import CaseFormat, Projection
from icefloe.loader.settings import keys

EXAMPLE = Path(__file__).resolve().parents[2] / "loader" / "example.toml"
PASSWORD = 'pa$$w0rd-"quoted"'
MINIMAL = """
table = "lake.demo.events"
[kafka]
bootstrap = "localhost:9092"
topics = ["events"]
[catalog]
uri = "http://localhost:8181"
"""


def write(tmp_path: Path, text: str, name: str = "loader.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def load(
    tmp_path: Path,
    text: str = MINIMAL,
    env: dict[str, str] | None = None,
    argv: list[str] | None = None,
) -> LoaderConfig:
    return load_config(write(tmp_path, text), env=env or {}, argv=argv or [])


def test_minimal_file_and_defaults(tmp_path: Path) -> None:
    cfg = load(tmp_path)
    assert cfg.table == TableId("lake", "demo", "events")
    assert str(cfg.table) == "lake.demo.events"
    assert cfg.kafka.topics == ("events",)
    assert cfg.kafka.starting_offsets == "earliest"
    assert cfg.kafka.security_protocol == "PLAINTEXT"
    assert cfg.trigger_interval == 5.0
    assert cfg.spark_trigger == "5000 milliseconds"
    assert cfg.dead_letter_topic is None
    assert cfg.case_insensitive is True
    assert cfg.max_record_bytes == 1 << 20
    assert cfg.loader_id == "icefloe-loader"
    assert cfg.lease_ttl_s == 60.0


def test_example_file_loads(tmp_path: Path) -> None:
    secret = write(tmp_path, "minio-secret\n", "s3")
    cfg = load_config(EXAMPLE, env={"ICEFLOE_LOADER_CATALOG_S3_SECRET_KEY_FILE": str(secret)})
    assert cfg.dead_letter_topic == "events.dlq"
    assert cfg.catalog.s3_secret_key == Secret("minio-secret")


def test_env_overrides_file_and_flags_override_env(tmp_path: Path) -> None:
    env = {
        "ICEFLOE_LOADER_KAFKA_BOOTSTRAP": "env:9092",
        "ICEFLOE_LOADER_TRIGGER_INTERVAL": "500ms",
        "ICEFLOE_LOADER_CASE_INSENSITIVE": "false",
        "ICEFLOE_LOADER_KAFKA_TOPICS": "a, b",
    }
    cfg = load(tmp_path, env=env, argv=["--kafka-bootstrap", "cli:9092", "--metrics-port", "9999"])
    assert cfg.kafka.bootstrap == "cli:9092"
    assert cfg.trigger_interval == 0.5
    assert cfg.case_insensitive is False
    assert cfg.kafka.topics == ("a", "b")
    assert cfg.metrics_port == 9999


def test_config_path_from_flag_and_env(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL.replace("events", "from_flag"), "other.toml")
    cfg = load_config(None, env={}, argv=["--config", str(path)])
    assert cfg.table.name == "from_flag"
    cfg = load_config(None, env={"ICEFLOE_LOADER_CONFIG": str(path)})
    assert cfg.table.name == "from_flag"


def test_everything_from_env_without_file() -> None:
    env = {
        "ICEFLOE_LOADER_TABLE": "lake.s.t",
        "ICEFLOE_LOADER_KAFKA_BOOTSTRAP": "k:9092",
        "ICEFLOE_LOADER_KAFKA_PATTERN": "events\\..*",
        "ICEFLOE_LOADER_CATALOG_URI": "http://c",
        "ICEFLOE_LOADER_TRANSFORM_UNNEST": "/data",
        "ICEFLOE_LOADER_TRANSFORM_CASE_FROM": "lowerCamel",
        "ICEFLOE_LOADER_TRANSFORM_CASE_TO": "LOWER_UNDERSCORE",
        "ICEFLOE_LOADER_TRANSFORM_PROJECTIONS": '{"event_id": "/id", "off": "kafka:offset"}',
    }
    cfg = load_config(env=env)
    assert cfg.kafka.pattern == "events\\..*"
    assert cfg.transform.unnest == "/data"
    assert cfg.transform.case_to is CaseFormat.LOWER_UNDERSCORE
    assert cfg.transform.projections == (
        Projection("event_id", "/id"),
        Projection("off", "kafka:offset"),
    )


def test_transform_from_file(tmp_path: Path) -> None:
    cfg = load(
        tmp_path,
        MINIMAL
        + '[transform]\ncase_from = "UpperCamel"\ncase_to = "lower-hyphen"\n'
        + '[transform.projections]\nk = "kafka:key"\n',
    )
    assert cfg.transform.case_from is CaseFormat.UPPER_CAMEL
    assert cfg.decode.transform.projections == (Projection("k", "kafka:key"),)


@pytest.mark.parametrize(
    ("extra_toml", "env", "argv", "match"),
    [
        ("colour = 1\n", {}, [], "unknown setting 'colour'"),
        ("", {"ICEFLOE_LOADER_KAFKA_BOOTSTRAPS": "x"}, [], "ICEFLOE_LOADER_KAFKA_BOOTSTRAPS"),
        ("", {}, ["--nope", "1"], "command line"),
        ("", {}, ["--kafka-password", "x"], "command line"),
        ("", {}, ["--kafka-bootstrap"], "command line"),
        ("", {"ICEFLOE_LOADER_TABLE": "demo.events"}, [], "catalog.schema.table"),
        ("", {"ICEFLOE_LOADER_TRIGGER_INTERVAL": "soon"}, [], "trigger_interval"),
        ("", {"ICEFLOE_LOADER_TRIGGER_INTERVAL": "0s"}, [], "trigger_interval"),
        ("", {"ICEFLOE_LOADER_METRICS_PORT": "70000"}, [], "metrics_port"),
        ("", {"ICEFLOE_LOADER_METRICS_PORT": "x"}, [], "metrics_port"),
        ("", {"ICEFLOE_LOADER_CASE_INSENSITIVE": "maybe"}, [], "case_insensitive"),
        ("", {"ICEFLOE_LOADER_KAFKA_PATTERN": "x"}, [], "exactly one"),
        ("", {"ICEFLOE_LOADER_KAFKA_STARTING_OFFSETS": "now"}, [], "starting_offsets"),
        ("", {"ICEFLOE_LOADER_DEAD_LETTER_TOPIC": "events"}, [], "dead_letter_topic"),
        ("", {"ICEFLOE_LOADER_KAFKA_SECURITY_PROTOCOL": "TLS"}, [], "security_protocol"),
        ("", {"ICEFLOE_LOADER_KAFKA_USERNAME": "u"}, [], "SASL"),
        ("", {"ICEFLOE_LOADER_KAFKA_SSL_CA_FILE": "/x"}, [], "SSL"),
        ("", {"ICEFLOE_LOADER_TRANSFORM_CASE_FROM": "lowerCamel"}, [], "both"),
        ("", {"ICEFLOE_LOADER_TRANSFORM_UNNEST": "data"}, [], "pointer"),
        ("", {"ICEFLOE_LOADER_TRANSFORM_PROJECTIONS": "[1]"}, [], "projections"),
        ("", {"ICEFLOE_LOADER_LOADER_ID": "has space"}, [], "loader_id"),
        ("", {"ICEFLOE_LOADER_CATALOG_URI": ""}, [], "catalog.uri"),
        ("", {"ICEFLOE_LOADER_CATALOG_TYPE": "hive"}, [], "catalog.type"),
        ("[kafka.extra]\nx = 1\n", {}, [], "kafka.extra"),
    ],
)
def test_invalid_settings(
    tmp_path: Path, extra_toml: str, env: dict[str, str], argv: list[str], match: str
) -> None:
    # Top-level keys must precede the first [section]; sections go last.
    text = MINIMAL + extra_toml if extra_toml.startswith("[") else extra_toml + MINIMAL
    with pytest.raises(ConfigError, match=match):
        load(tmp_path, text, env, argv)


def test_wrong_toml_types(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"kafka\.topics"):
        load(tmp_path, MINIMAL.replace('["events"]', "7"))
    with pytest.raises(ConfigError, match="invalid TOML"):
        load(tmp_path, "table = ")


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "absent.toml", env={})


# --- security and secrets ------------------------------------------------------------

SASL_ENV = {
    "ICEFLOE_LOADER_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
    "ICEFLOE_LOADER_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
    "ICEFLOE_LOADER_KAFKA_USERNAME": "loader",
    "ICEFLOE_LOADER_KAFKA_PASSWORD": PASSWORD,
}


def test_sasl_ssl_passthrough(tmp_path: Path) -> None:
    ca, cert, key = (write(tmp_path, f"-----{n}-----\n", n) for n in ("ca", "cert", "key"))
    env = {
        **SASL_ENV,
        "ICEFLOE_LOADER_KAFKA_SSL_CA_FILE": str(ca),
        "ICEFLOE_LOADER_KAFKA_SSL_CERT_FILE": str(cert),
        "ICEFLOE_LOADER_KAFKA_SSL_KEY_FILE": str(key),
    }
    cfg = load(tmp_path, env=env)
    opts = cfg.kafka.spark_options()
    assert opts["kafka.security.protocol"] == "SASL_SSL"
    assert opts["kafka.sasl.mechanism"] == "SCRAM-SHA-512"
    assert opts["kafka.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="loader" password="pa$$w0rd-\\"quoted\\"";'
    )
    assert opts["kafka.ssl.truststore.location"] == str(ca)
    assert opts["kafka.ssl.keystore.key"] == "-----key-----\n"
    assert opts["subscribe"] == "events"
    assert opts["kafka.max.poll.records"] == "10000"  # the consumer tuning rides along
    producer = cfg.kafka.producer_config()
    assert producer["sasl.password"] == PASSWORD
    assert producer["ssl.key.location"] == str(key)


@pytest.mark.parametrize(
    "missing",
    [
        "ICEFLOE_LOADER_KAFKA_PASSWORD",
        "ICEFLOE_LOADER_KAFKA_USERNAME",
        "ICEFLOE_LOADER_KAFKA_SASL_MECHANISM",
    ],
)
def test_sasl_needs_mechanism_username_and_password(tmp_path: Path, missing: str) -> None:
    env = {k: v for k, v in SASL_ENV.items() if k != missing}
    with pytest.raises(ConfigError) as info:
        load(tmp_path, env=env)
    assert PASSWORD not in str(info.value)


def test_ssl_files_must_exist(tmp_path: Path) -> None:
    env = {
        "ICEFLOE_LOADER_KAFKA_SECURITY_PROTOCOL": "SSL",
        "ICEFLOE_LOADER_KAFKA_SSL_CA_FILE": str(tmp_path / "nope"),
    }
    with pytest.raises(ConfigError, match="ssl_ca_file"):
        load(tmp_path, env=env)


def test_cert_needs_key(tmp_path: Path) -> None:
    env = {
        "ICEFLOE_LOADER_KAFKA_SECURITY_PROTOCOL": "SSL",
        "ICEFLOE_LOADER_KAFKA_SSL_CERT_FILE": str(write(tmp_path, "c", "c")),
    }
    with pytest.raises(ConfigError, match="go together"):
        load(tmp_path, env=env)


def test_password_file(tmp_path: Path) -> None:
    secret = write(tmp_path, PASSWORD + "\n", "pw")
    env = {k: v for k, v in SASL_ENV.items() if k != "ICEFLOE_LOADER_KAFKA_PASSWORD"}
    cfg = load(tmp_path, env=env, argv=["--kafka-password-file", str(secret)])
    assert cfg.kafka.password is not None
    assert cfg.kafka.password.reveal() == PASSWORD


def test_later_layer_wins_between_secret_and_secret_file(tmp_path: Path) -> None:
    secret = write(tmp_path, "from-file", "pw")
    text = MINIMAL + f's3_secret_key_file = "{secret}"\n'
    cfg = load(tmp_path, text, env={"ICEFLOE_LOADER_CATALOG_S3_SECRET_KEY": "from-env"})
    assert cfg.catalog.s3_secret_key == Secret("from-env")
    text = MINIMAL + 's3_secret_key = "from-toml"\n'
    cfg = load(tmp_path, text, env={"ICEFLOE_LOADER_CATALOG_S3_SECRET_KEY_FILE": str(secret)})
    assert cfg.catalog.s3_secret_key == Secret("from-file")


def test_secret_and_secret_file_in_one_layer_is_an_error(tmp_path: Path) -> None:
    env = {
        "ICEFLOE_LOADER_CATALOG_S3_SECRET_KEY": "a",
        "ICEFLOE_LOADER_CATALOG_S3_SECRET_KEY_FILE": "/x",
    }
    with pytest.raises(ConfigError, match="not both"):
        load(tmp_path, env=env)


def test_unreadable_secret_file_names_only_the_path(tmp_path: Path) -> None:
    env = {"ICEFLOE_LOADER_CATALOG_S3_SECRET_KEY_FILE": str(tmp_path / "absent")}
    with pytest.raises(ConfigError, match="absent"):
        load(tmp_path, env=env)


def test_secrets_are_redacted_everywhere(tmp_path: Path) -> None:
    cfg = load(tmp_path, env={**SASL_ENV, "ICEFLOE_LOADER_CATALOG_S3_SECRET_KEY": "s3-secret"})
    secret = cfg.kafka.password
    assert secret is not None
    for text in (repr(secret), str(secret), f"{secret}", f"{secret!r}", repr(cfg), str(cfg)):
        assert PASSWORD not in text
        assert "s3-secret" not in text
    assert repr(secret) == "********"
    assert "********" in repr(cfg)


def test_secret_survives_pickling_for_spark_executors() -> None:
    assert pickle.loads(pickle.dumps(Secret("x"))).reveal() == "x"


def test_config_is_frozen(tmp_path: Path) -> None:
    cfg = load(tmp_path)
    with pytest.raises(AttributeError):
        cfg.loader_id = "other"  # type: ignore[misc]


def test_spark_settings(tmp_path: Path) -> None:
    cfg = load(tmp_path)
    assert (cfg.spark.master, cfg.spark.driver_memory, cfg.spark.shuffle_partitions) == (
        "local[2]",
        "1g",
        2,
    )
    text = MINIMAL.replace("[kafka]", '[spark]\nmaster = "local[1]"\n[kafka]')
    cfg = load(tmp_path, text, env={"ICEFLOE_LOADER_SPARK_JARS": "/a.jar,/b.jar"})
    assert cfg.spark.master == "local[1]"
    assert cfg.spark.jars == ("/a.jar", "/b.jar")
    with pytest.raises(ConfigError, match=r"spark\.log_level"):
        load(tmp_path, MINIMAL + '[spark]\nlog_level = "LOUD"\n')
    with pytest.raises(ConfigError, match=r"spark\.shuffle_partitions"):
        load(tmp_path, argv=["--spark-shuffle-partitions", "0"])


def test_the_jvm_logs_at_the_configured_level_from_its_first_line(tmp_path: Path) -> None:
    from icefloe.loader.run import spark

    cfg = load(tmp_path, MINIMAL + '[spark]\nlog_level = "warn"\n')
    options = spark._builder_options(cfg)["spark.driver.extraJavaOptions"].split()
    assert "-Dicefloe.spark.log.level=WARN" in options
    (config_file,) = (o.split("=", 1)[1] for o in options if o.startswith("-Dlog4j2.config"))
    text = spark.LOG4J2_PROPERTIES.read_text()
    assert config_file == spark.LOG4J2_PROPERTIES.as_uri()
    assert "rootLogger.level = ${sys:icefloe.spark.log.level:-ERROR}" in text


def test_in_local_mode_the_jars_go_on_the_class_path_not_through_spark_jars(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``spark.jars`` in local mode copies every jar into a temp folder a killed loader leaves."""
    from icefloe.loader.run import spark

    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    jars = {"ICEFLOE_LOADER_SPARK_JARS": "/a.jar,/b.jar"}
    local = spark._builder_options(load(tmp_path, env=jars))
    assert local["spark.driver.extraClassPath"] == "/a.jar:/b.jar"
    assert "spark.jars" not in local
    on_cluster = MINIMAL + '[spark]\nmaster = "spark://127.0.0.1:7077"\n'
    cluster = spark._builder_options(load(tmp_path, on_cluster, env=jars))
    assert cluster["spark.jars"] == "/a.jar,/b.jar"
    assert "spark.driver.extraClassPath" not in cluster


def test_spark_local_dir_is_set_only_when_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icefloe.loader.run import spark

    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    plain = spark._builder_options(load(tmp_path))
    assert "spark.local.dir" not in plain
    assert "java.io.tmpdir" not in plain["spark.driver.extraJavaOptions"]
    scratch = {"ICEFLOE_LOADER_SPARK_LOCAL_DIR": "/scratch/icefloe"}
    options = spark._builder_options(load(tmp_path, env=scratch))
    assert options["spark.local.dir"] == "/scratch/icefloe"
    java = options["spark.driver.extraJavaOptions"].split()
    assert "-Djava.io.tmpdir=/scratch/icefloe" in java
    assert any(o.startswith("-Dlog4j2.configurationFile=") for o in java)
    with pytest.raises(ConfigError, match="local_dir"):
        load(tmp_path, env={"ICEFLOE_LOADER_SPARK_LOCAL_DIR": "/my scratch"})


def test_the_class_data_options_follow_the_log_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icefloe.loader.run import spark

    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    options = spark._builder_options(load(tmp_path), "-XX:SharedArchiveFile=/c/l.jsa")
    java = options["spark.driver.extraJavaOptions"].split()
    assert java[-1] == "-XX:SharedArchiveFile=/c/l.jsa"
    assert any(o.startswith("-Dlog4j2.configurationFile=") for o in java)


def test_the_driver_jvm_runs_the_configured_collector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icefloe.loader.run import spark

    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)

    def java(text: str = MINIMAL) -> list[str]:
        options = spark._builder_options(load(tmp_path, text), "-XX:SharedArchiveFile=/c/l.jsa")
        return str(options["spark.driver.extraJavaOptions"]).split()

    assert "-XX:+UseG1GC" in java()
    chosen = java(MINIMAL + '[spark]\ngc = "Parallel"\n')
    assert "-XX:+UseParallelGC" in chosen
    assert "-XX:+UseG1GC" not in chosen
    assert chosen[-1] == "-XX:SharedArchiveFile=/c/l.jsa"
    with pytest.raises(ConfigError, match=r"spark\.gc"):
        load(tmp_path, MINIMAL + '[spark]\ngc = "zgc"\n')
    assert "-XX:TieredStopAtLevel=1" in java()  # the quick compiler unless set
    tiered = java(MINIMAL + '[spark]\njit = "tiered"\n')
    assert not any(o.startswith("-XX:TieredStopAtLevel") for o in tiered)
    assert tiered[-1] == "-XX:SharedArchiveFile=/c/l.jsa"
    with pytest.raises(ConfigError, match=r"spark\.jit"):
        load(tmp_path, MINIMAL + '[spark]\njit = "c2"\n')


def test_a_batch_is_capped_unless_set(tmp_path: Path) -> None:
    assert load(tmp_path).kafka.max_offsets_per_trigger == 500_000
    assert load(tmp_path).kafka.spark_options()["maxOffsetsPerTrigger"] == "500000"


def test_a_backlog_is_sliced_unless_turned_off(tmp_path: Path) -> None:
    assert load(tmp_path).kafka.first_slice_records == 5_000
    off = MINIMAL.replace("[kafka]\n", "[kafka]\nfirst_slice_records = 0\n")
    assert load(tmp_path, off).kafka.first_slice_records == 0
    bad = MINIMAL.replace("[kafka]\n", "[kafka]\nfirst_slice_records = -1\n")
    with pytest.raises(ConfigError, match=r"kafka\.first_slice_records"):
        load(tmp_path, bad)


# --- one model: names derived from fields, help for every flag, TOML written back ---------

# Every key the loader has ever read, but the removed ones (REMOVED); users' files and
# environments keep working.
KNOWN_KEYS = [
    "loader_id",
    "table",
    "trigger_interval",
    "dead_letter_topic",
    "metrics_port",
    "lease_ttl",
    "checkpoint_location",
    "case_insensitive",
    "max_record_bytes",
    "max_depth",
    "jvm_decode",
    "progress_timeout",
    "kafka.bootstrap",
    "kafka.topics",
    "kafka.pattern",
    "kafka.starting_offsets",
    "kafka.max_offsets_per_trigger",
    "kafka.first_slice_records",
    "kafka.security_protocol",
    "kafka.sasl_mechanism",
    "kafka.username",
    "kafka.password",
    "kafka.password_file",
    "kafka.ssl_ca_file",
    "kafka.ssl_cert_file",
    "kafka.ssl_key_file",
    "kafka.ssl_key_password",
    "kafka.ssl_key_password_file",
    "spark.master",
    "spark.driver_memory",
    "spark.gc",
    "spark.jit",
    "spark.shuffle_partitions",
    "spark.jars",
    "spark.log_level",
    "spark.local_dir",
    "spark.class_data",
    "catalog.type",
    "catalog.uri",
    "catalog.glue_endpoint",
    "catalog.warehouse",
    "catalog.s3_endpoint",
    "catalog.s3_access_key",
    "catalog.s3_secret_key",
    "catalog.s3_secret_key_file",
    "catalog.s3_region",
    "catalog.s3_path_style",
    "catalog.connect_timeout",
    "catalog.read_timeout",
    "transform.unnest",
    "transform.case_from",
    "transform.case_to",
    "transform.projections",
]


def test_every_known_key_is_a_setting_with_derived_names() -> None:
    found = {k.key: k for k in keys(LoaderConfig)}
    assert set(KNOWN_KEYS) <= set(found)
    assert set(found) - set(KNOWN_KEYS) == {"spark.java_home"}
    for key, k in found.items():
        assert k.env == "ICEFLOE_LOADER_" + key.upper().replace(".", "_")
        assert k.flag == "--" + key.replace(".", "-").replace("_", "-")
    secrets = {k.key for k in found.values() if not k.on_command_line}
    assert secrets == {"kafka.password", "kafka.ssl_key_password", "catalog.s3_secret_key"}


@pytest.mark.parametrize("key", ["exactly_once", "fencing", "resolve_lost_commits"])
def test_the_protocols_switches_are_no_settings_and_say_so(tmp_path: Path, key: str) -> None:
    """They were settings once; a file or variable naming one is refused with the reason
    (they are the test kit's hooks now, loader/testing/faultpoints.py)."""
    assert key in REMOVED and key not in {k.key for k in keys(LoaderConfig)}
    with pytest.raises(ConfigError, match=f"'{key}' in file .* no longer a setting.*DISABLE"):
        load(tmp_path, f"{key} = true\n" + MINIMAL)
    env = {"ICEFLOE_LOADER_" + key.upper(): "false"}
    with pytest.raises(ConfigError, match=f"'{key}' in env .* no longer a setting"):
        load(tmp_path, env=env)


def test_every_flag_says_what_it_does() -> None:
    text = build_parser().format_help()
    flags = [k for k in keys(LoaderConfig) if k.on_command_line]
    for k in flags:
        assert k.flag in text
        assert k.setting.help and k.env in k.help
    parser = build_parser()
    for action in parser._actions:
        if action.option_strings:
            assert action.help, action.option_strings


def test_to_toml_loads_back_into_the_same_configuration(tmp_path: Path) -> None:
    secret = write(tmp_path, "s3-secret\n", "s3")
    env = {**SASL_ENV, "ICEFLOE_LOADER_CATALOG_S3_SECRET_KEY_FILE": str(secret)}
    text = MINIMAL + (
        '[transform]\nunnest = "/data"\ncase_from = "lowerCamel"\ncase_to = "lower_underscore"\n'
        '[transform.projections]\nevent_id = "/id"\n"odd key" = "kafka:offset"\n'
    )
    argv = ["--trigger-interval", "750ms", "--spark-jars", "/a.jar,/b.jar"]
    cfg = load(tmp_path, text, env=env, argv=argv)
    written = cfg.to_toml()
    assert "s3-secret" not in written and PASSWORD not in written
    # The SASL password came from the environment, not a file: it is left out of the file.
    again = load_config(
        write(tmp_path, written, "again.toml"), env={"ICEFLOE_LOADER_KAFKA_PASSWORD": PASSWORD}
    )
    assert again == cfg
    assert again.catalog.s3_secret_key == Secret("s3-secret")


def test_example_file_round_trips(tmp_path: Path) -> None:
    secret = write(tmp_path, "minio-secret\n", "s3")
    env = {"ICEFLOE_LOADER_CATALOG_S3_SECRET_KEY_FILE": str(secret)}
    cfg = load_config(EXAMPLE, env=env)
    assert load_config(write(tmp_path, cfg.to_toml(), "again.toml"), env={}) == cfg


def test_programs_build_the_model_directly() -> None:
    cfg = LoaderConfig(
        table=TableId.parse("lake.s.t"),
        kafka=KafkaConfig(bootstrap="k:1", topics=("t",)),
        catalog=CatalogConfig(uri="http://c"),
        trigger_interval=10.0,
    )
    assert cfg.lease_ttl_s == 100.0  # the derived default: ten trigger intervals
    assert cfg.spark == SparkConfig() and cfg.decode.max_bytes == 1 << 20
    with pytest.raises(ConfigError, match="dead_letter_topic must not be"):
        dataclasses.replace(cfg, dead_letter_topic="t")
    with pytest.raises(ConfigError, match=r"topics or kafka\.pattern"):
        KafkaConfig(bootstrap="k:1")


def test_without_jars_and_outside_spark_submit_the_session_says_what_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icefloe.loader.run.spark import session

    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    with pytest.raises(ConfigError, match=r"\[spark\] jars.*ICEFLOE_LOADER_SPARK_JARS"):
        session(load(tmp_path))


class _Offered:
    """A ``Defaults`` layer that offers fixed values and records what it was told."""

    origin = "the test's stack"

    def __init__(self, offered: dict[str, object]) -> None:
        self.offered = offered
        self.configured: frozenset[str] = frozenset()

    def values(self, configured: frozenset[str]) -> dict[str, object]:
        self.configured = configured
        return self.offered


def test_defaults_fill_only_what_no_layer_sets(tmp_path: Path) -> None:
    from icefloe.loader.config import from_args

    offered = _Offered(
        {
            "kafka.bootstrap": "stack:9092",
            "catalog.uri": "http://stack:8181",
            "catalog.s3_secret_key": "from-the-stack",
            "trigger_interval": "9s",
        }
    )
    args = build_parser().parse_args(
        ["--table", "lake.s.t", "--kafka-topics", "t", "--trigger-interval", "2s"]
    )
    cfg = from_args(args, env={}, defaults=offered)
    assert offered.configured == {"table", "kafka.topics", "trigger_interval"}
    assert cfg.kafka.bootstrap == "stack:9092"
    assert cfg.catalog.uri == "http://stack:8181"
    assert cfg.catalog.s3_secret_key == Secret("from-the-stack")
    assert cfg.trigger_interval == 2.0  # the flag wins over the default layer
    secret = write(tmp_path, "from-a-file", "s3")
    file_cfg = from_args(
        args, env={"ICEFLOE_LOADER_CATALOG_S3_SECRET_KEY_FILE": str(secret)}, defaults=offered
    )
    assert file_cfg.catalog.s3_secret_key == Secret("from-a-file")


def test_a_default_for_an_unknown_setting_is_an_error() -> None:
    from icefloe.loader.config import from_args

    args = build_parser().parse_args(["--table", "lake.s.t", "--kafka-topics", "t"])
    with pytest.raises(ConfigError, match=r"unknown setting 'kafka\.bootstrp' in the test's stack"):
        from_args(args, env={}, defaults=_Offered({"kafka.bootstrp": "x"}))


def test_config_action_prints_a_file_that_loads_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from icefloe.loader.cli import run

    path = write(tmp_path, MINIMAL)
    assert run(build_parser().parse_args(["config", "--config", str(path)])) == 0
    printed = write(tmp_path, capsys.readouterr().out, "printed.toml")
    assert load_config(printed, env={}) == load_config(path, env={})


def test_spark_catalog_sends_no_metrics_reports_and_holds_the_secret_only_when_asked() -> None:
    from icefloe.loader import keys as loader_keys
    from icefloe.loader.config import Secret
    from icefloe.loader.run.spark import catalog_options

    cfg = LoaderConfig(
        table=TableId.parse("lake.s.t"),
        kafka=KafkaConfig(bootstrap="k:1", topics=("t",)),
        catalog=CatalogConfig(uri="http://c", s3_secret_key=Secret("hidden")),
    )
    opts = catalog_options(cfg, secrets=False)
    assert opts["spark.sql.catalog.lake." + loader_keys.REST_METRICS_REPORTING] == "false"
    assert "hidden" not in opts.values()
    assert catalog_options(cfg, secrets=True)["spark.sql.catalog.lake.s3.secret-access-key"] == (
        "hidden"
    )


def test_a_glue_catalog_needs_no_uri_and_gives_spark_the_glue_catalog_without_a_lock() -> None:
    from icefloe.loader import catalogs
    from icefloe.loader.run.spark import catalog_options

    cat = CatalogConfig(type="glue", glue_endpoint="http://127.0.0.1:4566", s3_region="eu-west-1")
    cfg = LoaderConfig(
        table=TableId.parse("lake.s.t"),
        kafka=KafkaConfig(bootstrap="k:1", topics=("t",)),
        catalog=cat,
    )
    opts = catalog_options(cfg, secrets=False)
    base = "spark.sql.catalog.lake."
    assert opts[base + "catalog-impl"] == "org.apache.iceberg.aws.glue.GlueCatalog"
    assert opts[base + "glue.endpoint"] == "http://127.0.0.1:4566"
    assert opts[base + "client.region"] == "eu-west-1"
    # A lock manager would turn Glue's VersionId check off; nor is the REST client's setting
    # given to another kind.
    assert not [k for k in opts if "lock" in k or k.startswith(base + "rest")]
    assert base + "type" not in opts and base + "uri" not in opts
    assert catalogs.endpoint(cat) == "http://127.0.0.1:4566"
    assert catalogs.endpoint(CatalogConfig(type="glue")) == "AWS Glue (us-east-1)"
    rest = catalog_options(
        dataclasses.replace(cfg, catalog=CatalogConfig(uri="http://c")), secrets=False
    )
    assert rest[base + "type"] == "rest" and base + "catalog-impl" not in rest


def test_a_rest_catalog_needs_its_uri() -> None:
    with pytest.raises(ConfigError, match="uri"):
        CatalogConfig()
