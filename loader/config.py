"""Configuration: one TOML file, then environment overrides, then CLI flags.

Every setting has a dotted key (``kafka.bootstrap``); the TOML file nests it
(``[kafka] bootstrap = ...``), the environment spells it
``ICEFLOE_LOADER_KAFKA_BOOTSTRAP`` and the command line ``--kafka-bootstrap``.
Later layers win.  The file comes from ``--config``, else
``ICEFLOE_LOADER_CONFIG``, else the ``path`` argument; no file is fine.
Unknown keys and unknown ``ICEFLOE_LOADER_*`` variables are errors, so a typo
never silently falls back to a default.

The merged settings are validated once into frozen dataclasses
(``LoaderConfig``).  Secrets (Kafka password, TLS key password, S3 secret key)
are ``Secret`` objects that print as ``********``; each can be given directly
(file or environment, never on the command line, where ``ps`` would show it)
or as ``<name>_file``, a path whose content is the secret.  If both forms are
set, the one from the later layer wins; both in one layer is an error.

Environment and CLI values are strings: booleans are
``true/false/yes/no/1/0``, lists are comma-separated (or a JSON array),
``transform.projections`` is a JSON object ``{"column": "source"}``, durations
are ``500ms``, ``5s``, ``2m``, ``1h`` or a number of seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loader import keys
from loader.errors import ConfigError
from loader.parse import DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH
from loader.record import DecodeOptions
from loader.transforms import CaseFormat, Projection, Transform

__all__ = [
    "ENV_PREFIX",
    "CatalogConfig",
    "KafkaConfig",
    "KafkaSecurity",
    "LoaderConfig",
    "Secret",
    "SparkConfig",
    "TableId",
    "cli_flags",
    "load_config",
]

ENV_PREFIX = "ICEFLOE_LOADER_"
CONFIG_ENV = ENV_PREFIX + "CONFIG"
REDACTED = "********"


class Secret:
    """A secret value that never shows itself in ``repr``, ``str`` or f-strings.

    Args:
        value: the secret text.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Secret:
        """Read a secret from a file (one trailing newline is dropped).

        Raises:
            ConfigError: the file cannot be read (the message names the path only).
        """
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"cannot read secret file {os.fspath(path)!r}: {exc.__class__.__name__}"
            ) from None
        return cls(text.removesuffix("\n").removesuffix("\r"))

    def reveal(self) -> str:
        """The secret text; pass it straight to the client that needs it."""
        return self._value

    def __repr__(self) -> str:
        return REDACTED

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> tuple[Any, ...]:
        # Spark pickles the configuration to executors; keep it working.
        return (Secret, (self._value,))


# ---------------------------------------------------------------------------
# Validated configuration
# ---------------------------------------------------------------------------

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_JAAS_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


def _jaas_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class KafkaSecurity:
    """Kafka client security settings, passed through to Spark and to the producer."""

    protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    username: str | None = None
    password: Secret | None = None
    ssl_ca_file: str | None = None
    ssl_cert_file: str | None = None
    ssl_key_file: str | None = None
    ssl_key_password: Secret | None = None


@dataclass(frozen=True)
class KafkaConfig:
    """Where to read from."""

    bootstrap: str
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int | None = None
    security: KafkaSecurity = KafkaSecurity()

    def spark_options(self) -> dict[str, str]:
        """Options for Spark's Kafka source.

        Returns:
            ``kafka.*`` client options plus ``subscribe``/``subscribePattern``,
            ``startingOffsets``, ``includeHeaders`` and ``maxOffsetsPerTrigger``.
            CONTAINS SECRETS (JAAS config, key material): never log it.

        Raises:
            ConfigError: a TLS certificate or key file cannot be read.
        """
        opts = {
            "kafka.bootstrap.servers": self.bootstrap,
            "startingOffsets": self.starting_offsets,
            "includeHeaders": "true",
            **keys.KAFKA_CONSUMER_TUNING,
        }
        if self.topics:
            opts["subscribe"] = ",".join(self.topics)
        else:
            assert self.pattern is not None
            opts["subscribePattern"] = self.pattern
        if self.max_offsets_per_trigger is not None:
            opts["maxOffsetsPerTrigger"] = str(self.max_offsets_per_trigger)
        sec = self.security
        opts["kafka.security.protocol"] = sec.protocol
        if sec.sasl_mechanism is not None:
            assert sec.username is not None and sec.password is not None
            opts["kafka.sasl.mechanism"] = sec.sasl_mechanism
            opts["kafka.sasl.jaas.config"] = (
                f"{_JAAS_MODULES[sec.sasl_mechanism]} required "
                f"username={_jaas_quote(sec.username)} "
                f"password={_jaas_quote(sec.password.reveal())};"
            )
        if sec.ssl_ca_file:
            opts["kafka.ssl.truststore.type"] = "PEM"
            opts["kafka.ssl.truststore.location"] = sec.ssl_ca_file
        if sec.ssl_cert_file and sec.ssl_key_file:
            # The Java client takes separate PEM cert and key only inline.
            opts["kafka.ssl.keystore.type"] = "PEM"
            opts["kafka.ssl.keystore.certificate.chain"] = _read(sec.ssl_cert_file)
            opts["kafka.ssl.keystore.key"] = _read(sec.ssl_key_file)
            if sec.ssl_key_password is not None:
                opts["kafka.ssl.key.password"] = sec.ssl_key_password.reveal()
        return opts

    def producer_config(self) -> dict[str, str]:
        """``confluent_kafka.Producer`` settings for the dead-letter producer.

        Returns:
            librdkafka settings.  CONTAINS SECRETS: never log it.
        """
        sec = self.security
        conf = {"bootstrap.servers": self.bootstrap, "security.protocol": sec.protocol}
        optional = {
            "sasl.mechanism": sec.sasl_mechanism,
            "sasl.username": sec.username,
            "sasl.password": sec.password.reveal() if sec.password else None,
            "ssl.ca.location": sec.ssl_ca_file,
            "ssl.certificate.location": sec.ssl_cert_file,
            "ssl.key.location": sec.ssl_key_file,
            "ssl.key.password": sec.ssl_key_password.reveal() if sec.ssl_key_password else None,
        }
        conf.update({k: v for k, v in optional.items() if v is not None})
        return conf


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path!r}: {exc.__class__.__name__}") from None


@dataclass(frozen=True)
class CatalogConfig:
    """The Iceberg REST catalog and its S3 storage."""

    uri: str
    warehouse: str | None = None
    s3_endpoint: str | None = None
    s3_access_key: str | None = None
    s3_secret_key: Secret | None = None
    s3_region: str = "us-east-1"
    s3_path_style: bool = True


_IDENT_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_\-]*")


@dataclass(frozen=True)
class TableId:
    """``catalog.schema.table``, as Trino and Spark spell it."""

    catalog: str
    namespace: str
    name: str

    @classmethod
    def parse(cls, text: str) -> TableId:
        """Parse ``lake.schema.table``.

        Raises:
            ConfigError: not three dot-separated identifiers.
        """
        parts = text.split(".")
        if len(parts) != 3 or not all(_IDENT_PART.fullmatch(p) for p in parts):
            raise ConfigError(f"table {text!r} must be catalog.schema.table")
        return cls(*parts)

    def __str__(self) -> str:
        return f"{self.catalog}.{self.namespace}.{self.name}"


@dataclass(frozen=True)
class SparkConfig:
    """How the Spark session is built when the loader is not run by ``spark-submit``.

    Attributes:
        master: the Spark master URL (``local[2]``, ``spark://127.0.0.1:7077``).
        driver_memory: the driver JVM heap, e.g. ``1g``.
        shuffle_partitions: ``spark.sql.shuffle.partitions``; small on small machines.
        jars: extra jar paths (Iceberg runtime, Kafka source); empty means the
            jars provisioned by the harness.
    """

    master: str = "local[2]"
    driver_memory: str = "1g"
    shuffle_partitions: int = 2
    jars: tuple[str, ...] = ()


@dataclass(frozen=True)
class LoaderConfig:
    """The whole, validated loader configuration."""

    loader_id: str
    table: TableId
    kafka: KafkaConfig
    catalog: CatalogConfig
    trigger_interval_s: float = 5.0
    dead_letter_topic: str | None = None
    metrics_port: int = 9400
    lease_ttl_s: float = 60.0
    checkpoint_location: str | None = None
    decode: DecodeOptions = field(default_factory=DecodeOptions)
    exactly_once: bool = True
    fencing: bool = True
    spark: SparkConfig = field(default_factory=SparkConfig)

    @property
    def case_insensitive(self) -> bool:
        return self.decode.case_insensitive

    @property
    def max_record_bytes(self) -> int:
        return self.decode.max_bytes

    @property
    def transform(self) -> Transform:
        return self.decode.transform

    @property
    def spark_trigger(self) -> str:
        """The trigger interval as Spark's ``processingTime`` string."""
        return f"{round(self.trigger_interval_s * 1000)} milliseconds"


# ---------------------------------------------------------------------------
# Settings registry and layering
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Setting:
    key: str
    kind: str  # str, int, bool, duration, list, mapping, secret, secret_file
    cli: bool = True

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.key.upper().replace(".", "_")

    @property
    def flag(self) -> str:
        return "--" + self.key.replace(".", "-").replace("_", "-")


_SETTINGS = {
    s.key: s
    for s in [
        _Setting("loader_id", "str"),
        _Setting("table", "str"),
        _Setting("trigger_interval", "duration"),
        _Setting("dead_letter_topic", "str"),
        _Setting("metrics_port", "int"),
        _Setting("lease_ttl", "duration"),
        _Setting("checkpoint_location", "str"),
        _Setting("exactly_once", "bool"),
        _Setting("fencing", "bool"),
        _Setting("spark.master", "str"),
        _Setting("spark.driver_memory", "str"),
        _Setting("spark.shuffle_partitions", "int"),
        _Setting("spark.jars", "list"),
        _Setting("case_insensitive", "bool"),
        _Setting("max_record_bytes", "int"),
        _Setting("max_depth", "int"),
        _Setting("kafka.bootstrap", "str"),
        _Setting("kafka.topics", "list"),
        _Setting("kafka.pattern", "str"),
        _Setting("kafka.starting_offsets", "str"),
        _Setting("kafka.max_offsets_per_trigger", "int"),
        _Setting("kafka.security_protocol", "str"),
        _Setting("kafka.sasl_mechanism", "str"),
        _Setting("kafka.username", "str"),
        _Setting("kafka.password", "secret", cli=False),
        _Setting("kafka.password_file", "secret_file"),
        _Setting("kafka.ssl_ca_file", "str"),
        _Setting("kafka.ssl_cert_file", "str"),
        _Setting("kafka.ssl_key_file", "str"),
        _Setting("kafka.ssl_key_password", "secret", cli=False),
        _Setting("kafka.ssl_key_password_file", "secret_file"),
        _Setting("catalog.uri", "str"),
        _Setting("catalog.warehouse", "str"),
        _Setting("catalog.s3_endpoint", "str"),
        _Setting("catalog.s3_access_key", "str"),
        _Setting("catalog.s3_secret_key", "secret", cli=False),
        _Setting("catalog.s3_secret_key_file", "secret_file"),
        _Setting("catalog.s3_region", "str"),
        _Setting("catalog.s3_path_style", "bool"),
        _Setting("transform.unnest", "str"),
        _Setting("transform.case_from", "str"),
        _Setting("transform.case_to", "str"),
        _Setting("transform.projections", "mapping"),
    ]
}


@dataclass(frozen=True)
class _Value:
    value: Any
    origin: str  # for messages: "file x.toml", "env ICEFLOE_LOADER_X", "flag --x"
    layer: int


def _where(key: str, v: _Value) -> str:
    return f"{key} (from {v.origin})"


def _flatten(table: Mapping[str, Any], prefix: str, origin: str, out: dict[str, _Value]) -> None:
    for name, value in table.items():
        key = prefix + name
        if key in _SETTINGS:
            out[key] = _Value(value, origin, 0)
        elif isinstance(value, dict) and any(k.startswith(key + ".") for k in _SETTINGS):
            _flatten(value, key + ".", origin, out)
        else:
            raise ConfigError(f"unknown setting {key!r} in {origin}")


_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off"}
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h)?", re.ASCII)
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def _coerce(key: str, v: _Value) -> Any:
    """Turn a raw layer value (TOML-typed or a string) into the setting's type."""
    kind = _SETTINGS[key].kind
    value, text = v.value, isinstance(v.value, str)
    where = _where(key, v)
    if kind in ("str", "secret", "secret_file"):
        if not text:
            raise ConfigError(f"{where} must be a string")
        return value
    if kind == "int":
        if text and re.fullmatch(r"-?[0-9]+", value.strip()):
            return int(value)
        if type(value) is int:
            return value
        raise ConfigError(f"{where} must be an integer")
    if kind == "bool":
        if type(value) is bool:
            return value
        if text and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise ConfigError(f"{where} must be true or false")
    if kind == "duration":
        if type(value) in (int, float):
            return float(value)
        m = _DURATION.fullmatch(value.strip()) if text else None
        if not m:
            raise ConfigError(f"{where} must be a duration like 500ms, 5s, 2m or 1h")
        return float(m[1]) * _DURATION_UNITS[m[2]]
    if kind == "list":
        if text:
            stripped = value.strip()
            if stripped.startswith("["):
                try:
                    value = json.loads(stripped)
                except ValueError:
                    raise ConfigError(f"{where} is not a JSON array") from None
            else:
                value = [part.strip() for part in stripped.split(",") if part.strip()]
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise ConfigError(f"{where} must be a list of strings")
        return tuple(value)
    if kind == "mapping":
        if text:
            try:
                value = json.loads(value)
            except ValueError:
                raise ConfigError(f"{where} must be a JSON object") from None
        if not isinstance(value, dict) or not all(isinstance(x, str) for x in value.values()):
            raise ConfigError(f"{where} must map names to strings")
        return dict(value)
    raise AssertionError(kind)


def cli_flags() -> list[tuple[str, str]]:
    """The settings accepted as command-line flags.

    Returns:
        ``(flag, dotted key)`` pairs, e.g. ``("--kafka-bootstrap", "kafka.bootstrap")``;
        secrets are never flags.
    """
    return [(s.flag, s.key) for s in _SETTINGS.values() if s.cli]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit the process
        raise ConfigError(f"command line: {message}")


def _cli_parser() -> _Parser:
    parser = _Parser(prog="icefloe-loader", add_help=False, allow_abbrev=False)
    parser.add_argument("--config")
    for setting in _SETTINGS.values():
        if setting.cli:
            parser.add_argument(setting.flag, dest=setting.key, default=None)
    return parser


def _layers(
    path: str | os.PathLike[str] | None, env: Mapping[str, str], argv: Sequence[str]
) -> dict[str, _Value]:
    args = vars(_cli_parser().parse_args(list(argv)))
    config_path = args.pop("config") or env.get(CONFIG_ENV) or path
    merged: dict[str, _Value] = {}
    if config_path is not None:
        origin = f"file {os.fspath(config_path)}"
        try:
            with open(config_path, "rb") as fh:
                document = tomllib.load(fh)
        except OSError as exc:
            raise ConfigError(f"cannot read config {origin}: {exc.__class__.__name__}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"invalid TOML in {origin}: {exc}") from None
        _flatten(document, "", origin, merged)
    by_env = {s.env: s for s in _SETTINGS.values()}
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX) or name == CONFIG_ENV:
            continue
        setting = by_env.get(name)
        if setting is None:
            raise ConfigError(f"unknown environment variable {name}")
        merged[setting.key] = _Value(env[name], f"env {name}", 1)
    for key, value in args.items():
        if value is not None:
            merged[key] = _Value(value, f"flag {_SETTINGS[key].flag}", 2)
    return merged


def _secret(settings: dict[str, _Value], key: str) -> Secret | None:
    direct, from_file = settings.get(key), settings.get(key + "_file")
    if direct is not None and from_file is not None and direct.layer == from_file.layer:
        raise ConfigError(f"set either {key} or {key}_file, not both ({direct.origin})")
    if from_file is not None and (direct is None or from_file.layer > direct.layer):
        return Secret.from_file(_coerce(key + "_file", from_file))
    if direct is not None:
        return Secret(_coerce(key, direct))
    return None


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    argv: Sequence[str] | None = None,
) -> LoaderConfig:
    """Load, layer and validate the loader configuration.

    Args:
        path: the TOML file, unless ``--config`` or ``ICEFLOE_LOADER_CONFIG`` names another.
        env: the environment (defaults to ``os.environ``).
        argv: command-line arguments without the program name (defaults to none).

    Returns:
        The validated ``LoaderConfig``.

    Raises:
        ConfigError: the first problem found, naming the setting and where it
            came from (secret values are never included).
    """
    settings = _layers(path, os.environ if env is None else env, argv or [])

    def get(key: str, default: Any = None) -> Any:
        v = settings.get(key)
        return default if v is None else _coerce(key, v)

    def need(key: str) -> Any:
        value = get(key)
        if value in (None, "", ()):
            raise ConfigError(
                f"{key} is required (file, {_SETTINGS[key].env} or {_SETTINGS[key].flag})"
            )
        return value

    def check(ok: bool, key: str, message: str) -> None:
        if not ok:
            v = settings.get(key)
            raise ConfigError(f"{_where(key, v) if v else key} {message}")

    loader_id = get("loader_id", "icefloe-loader")
    check(
        bool(re.fullmatch(r"[A-Za-z0-9._\-]+", loader_id)),
        "loader_id",
        "must be letters, digits, '.', '_' or '-'",
    )
    table = TableId.parse(need("table"))

    kafka = _kafka(get, need, check, settings)
    catalog = CatalogConfig(
        uri=need("catalog.uri"),
        warehouse=get("catalog.warehouse"),
        s3_endpoint=get("catalog.s3_endpoint"),
        s3_access_key=get("catalog.s3_access_key"),
        s3_secret_key=_secret(settings, "catalog.s3_secret_key"),
        s3_region=get("catalog.s3_region", "us-east-1"),
        s3_path_style=get("catalog.s3_path_style", True),
    )

    trigger = get("trigger_interval", 5.0)
    check(trigger > 0, "trigger_interval", "must be positive")
    lease_ttl = get("lease_ttl", max(60.0, 10 * trigger))
    check(lease_ttl > trigger, "lease_ttl", "must be longer than trigger_interval")
    metrics_port = get("metrics_port", 9400)
    check(0 <= metrics_port <= 65535, "metrics_port", "must be 0..65535 (0 disables metrics)")
    max_bytes = get("max_record_bytes", DEFAULT_MAX_BYTES)
    check(max_bytes > 0, "max_record_bytes", "must be positive")
    max_depth = get("max_depth", DEFAULT_MAX_DEPTH)
    check(max_depth > 0, "max_depth", "must be positive")

    dead_letter = get("dead_letter_topic") or None
    if dead_letter is not None:
        loops = dead_letter in kafka.topics or (
            kafka.pattern is not None and re.fullmatch(kafka.pattern, dead_letter) is not None
        )
        check(not loops, "dead_letter_topic", "must not be one of the topics the loader reads")

    case_from, case_to = get("transform.case_from"), get("transform.case_to")
    try:
        transform = Transform(
            unnest=get("transform.unnest"),
            projections=tuple(
                Projection(column, source)
                for column, source in get("transform.projections", {}).items()
            ),
            case_from=CaseFormat.parse(case_from) if case_from else None,
            case_to=CaseFormat.parse(case_to) if case_to else None,
        )
    except ConfigError as exc:
        raise ConfigError(f"transform: {exc}") from None

    shuffle_partitions = get("spark.shuffle_partitions", 2)
    check(shuffle_partitions > 0, "spark.shuffle_partitions", "must be positive")
    spark = SparkConfig(
        master=get("spark.master", "local[2]"),
        driver_memory=get("spark.driver_memory", "1g"),
        shuffle_partitions=shuffle_partitions,
        jars=get("spark.jars", ()),
    )

    return LoaderConfig(
        loader_id=loader_id,
        table=table,
        kafka=kafka,
        catalog=catalog,
        trigger_interval_s=trigger,
        dead_letter_topic=dead_letter,
        metrics_port=metrics_port,
        lease_ttl_s=lease_ttl,
        checkpoint_location=get("checkpoint_location"),
        exactly_once=get("exactly_once", True),
        fencing=get("fencing", True),
        spark=spark,
        decode=DecodeOptions(
            transform=transform,
            case_insensitive=get("case_insensitive", True),
            max_bytes=max_bytes,
            max_depth=max_depth,
        ),
    )


def _kafka(
    get: Callable[..., Any],
    need: Callable[[str], Any],
    check: Callable[[bool, str, str], None],
    settings: dict[str, _Value],
) -> KafkaConfig:
    topics, pattern = get("kafka.topics", ()), get("kafka.pattern")
    check(bool(topics) != bool(pattern), "kafka.topics", "or kafka.pattern: set exactly one")
    if pattern:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"kafka.pattern is not a regular expression: {exc}") from None
    starting = get("kafka.starting_offsets", "earliest")
    if starting not in ("earliest", "latest"):
        try:
            ok = isinstance(json.loads(starting), dict)
        except ValueError:
            ok = False
        check(ok, "kafka.starting_offsets", "must be earliest, latest or a JSON object")
    max_per_trigger = get("kafka.max_offsets_per_trigger")
    check(
        max_per_trigger is None or max_per_trigger > 0,
        "kafka.max_offsets_per_trigger",
        "must be positive",
    )

    protocol = get("kafka.security_protocol", "PLAINTEXT").upper()
    check(
        protocol in SECURITY_PROTOCOLS,
        "kafka.security_protocol",
        f"must be one of {SECURITY_PROTOCOLS}",
    )
    sasl = protocol.startswith("SASL_")
    tls = protocol.endswith("SSL")
    mechanism = get("kafka.sasl_mechanism")
    username = get("kafka.username")
    password = _secret(settings, "kafka.password")
    if sasl:
        mechanism = (mechanism or "").upper()
        check(
            mechanism in SASL_MECHANISMS,
            "kafka.sasl_mechanism",
            f"must be one of {SASL_MECHANISMS}",
        )
        check(bool(username), "kafka.username", f"is required with {protocol}")
        check(
            password is not None,
            "kafka.password",
            f"(or kafka.password_file) is required with {protocol}",
        )
    else:
        for key, value in (
            ("kafka.sasl_mechanism", mechanism),
            ("kafka.username", username),
            ("kafka.password", password),
        ):
            check(value is None, key, f"needs a SASL security_protocol, not {protocol}")
    files = {k: get(k) for k in ("kafka.ssl_ca_file", "kafka.ssl_cert_file", "kafka.ssl_key_file")}
    key_password = _secret(settings, "kafka.ssl_key_password")
    for key, value in files.items():
        if value is not None:
            check(tls, key, f"needs an SSL security_protocol, not {protocol}")
            check(Path(value).is_file(), key, "is not a readable file")
    check(
        (files["kafka.ssl_cert_file"] is None) == (files["kafka.ssl_key_file"] is None),
        "kafka.ssl_cert_file",
        "and kafka.ssl_key_file go together",
    )
    return KafkaConfig(
        bootstrap=need("kafka.bootstrap"),
        topics=topics,
        pattern=pattern,
        starting_offsets=starting,
        max_offsets_per_trigger=max_per_trigger,
        security=KafkaSecurity(
            protocol=protocol,
            sasl_mechanism=mechanism if sasl else None,
            username=username,
            password=password,
            ssl_ca_file=files["kafka.ssl_ca_file"],
            ssl_cert_file=files["kafka.ssl_cert_file"],
            ssl_key_file=files["kafka.ssl_key_file"],
            ssl_key_password=key_password,
        ),
    )
