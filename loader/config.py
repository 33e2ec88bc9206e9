"""Configuration: the loader's settings as one typed model, and how it is loaded.

``LoaderConfig`` and its sections (``KafkaConfig``, ``SparkConfig``, ``CatalogConfig`` and
``Transform``) are frozen dataclasses whose fields are the settings: each default is written
once, on its field, with a line saying what the setting does. From the fields come the TOML
keys (``[kafka] bootstrap``), the environment variables (``ICEFLOE_LOADER_KAFKA_BOOTSTRAP``) and
the flags (``--kafka-bootstrap``); see ``loader.settings``.

``load_config`` layers a TOML file, then the environment, then flags; later layers win. The
file comes from ``--config``, else ``ICEFLOE_LOADER_CONFIG``, else the ``path`` argument; no
file is fine. Unknown keys and unknown ``ICEFLOE_LOADER_*`` variables are errors, so a typo
never silently falls back to a default. Programs (the harness, tests, benchmarks) build the
model directly and write it with ``to_toml()`` when a loader process needs a file.

Secrets (Kafka password, TLS key password, S3 secret key) are ``Secret`` objects that print as
``********``; each can be given directly (file or environment, never on the command line,
where ``ps`` would show it) or as ``<name>_file``, a path whose content is the secret. If both
forms are set, the one from the later layer wins; both in one layer is an error.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from icefloe.loader import keys, settings
from icefloe.loader.decode.parse import DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH
from icefloe.loader.errors import ConfigError
from icefloe.loader.secret import Secret
from icefloe.loader.settings import (
    BOOLEAN,
    DURATION,
    INTEGER,
    MAPPING,
    STRINGS,
    Codec,
    Invalid,
    section,
    setting,
)

if TYPE_CHECKING:
    from icefloe.loader.ext.transforms import CaseFormat, JsonPointer, Projection

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_S3_REGION",
    "CatalogConfig",
    "DecodeOptions",
    "KafkaConfig",
    "LoaderConfig",
    "Secret",
    "SparkConfig",
    "TableId",
    "Transform",
    "add_flags",
    "env_var",
    "flag_values",
    "from_args",
    "load_config",
]

CONFIG_ENV = settings.ENV_PREFIX + "CONFIG"

REMOVED = {
    key: "it switched off a part of the exactly-once protocol to prove the checks catch what "
    "then goes wrong, and is now the test kit's hook ICEFLOE_TEST_DISABLE "
    "(loader/testing/faultpoints.py); remove the line"
    for key in ("exactly_once", "fencing", "resolve_lost_commits")
}
"""Settings there were once -> why a file or variable naming one is refused (docs/loader.md)."""
DEFAULT_S3_REGION = "us-east-1"
"""The region S3 clients sign for unless told otherwise (AWS's default, and MinIO's)."""

CATALOG_TYPES = ("rest", "glue")
"""The kinds of Iceberg catalog ``[catalog] type`` names (``loader.catalogs`` has each one's
clients)."""

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_JAAS_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


def _jaas_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path!r}: {exc.__class__.__name__}") from None


def _check(ok: bool, field: str, message: str) -> None:
    if not ok:
        raise Invalid(field, message)


DEFAULT_MAX_OFFSETS_PER_TRIGGER = 500_000
"""Records per batch unless set. A batch of plain records is written in one pass and holds
little memory whatever its size, so a backlog is read in few large commits: 1,000,000
reference rows over 30 days were all visible in 28.7 s with 500,000 per batch against 47.7 s
with 400,000 and 70.7 s with 200,000 (one machine, one hour, ``docs/benchmarks.md``). A batch
with records the JVM path declines is cached while it is written; 500,000 reference rows
fit the default 1 GiB driver, 1,000,000 did not."""

DEFAULT_CONNECT_TIMEOUT_S = 5.0
"""``[catalog] connect_timeout`` unless set: a local or regional catalog opens a connection in
milliseconds; five seconds tells a dead address from a slow one."""

DEFAULT_READ_TIMEOUT_S = 30.0
"""``[catalog] read_timeout`` unless set: the longest a catalog commit or an S3 request took on
a busy 2-core machine was a few seconds; an answer 30 s late is treated as lost (the commit's
outcome is then read back from the table)."""

DEFAULT_PROGRESS_TIMEOUT_S = 300.0
"""``progress_timeout`` unless set: long enough to ride out a catalog or storage restart and a
network fault of minutes, short enough that a supervisor hears of an outage."""

DEFAULT_FIRST_SLICE_RECORDS = 5_000
"""Records in the first commit of a backlog waiting at start (``loader.ext.firstslice``): the first
rows of 1,000,000 were visible 3-4 s sooner (5.2-6.9 s from the process start), and the whole
backlog about 1 s later over one day, 4 s over 30; 20,000 was as soon and later done
(``docs/benchmarks.md``)."""


@dataclass(frozen=True, kw_only=True)
class KafkaConfig:
    """``[kafka]``: where to read from, and the client's security settings."""

    bootstrap: str = setting(help="Kafka bootstrap servers, host:port[,host:port...]")
    topics: tuple[str, ...] = setting((), codec=STRINGS, help="the topics to load (or pattern)")
    pattern: str | None = setting(None, help="a regular expression naming the topics to load")
    starting_offsets: str = setting(
        "earliest",
        help="where a table with nothing committed starts: earliest, latest or Spark JSON offsets",
    )
    max_offsets_per_trigger: int | None = setting(
        DEFAULT_MAX_OFFSETS_PER_TRIGGER,
        codec=INTEGER,
        unset=0,
        help="at most this many records per micro-batch, 0 for no limit (a batch with records "
        "that are not plain JSON is held in memory while it is written: a large backlog in one "
        "batch can exhaust the driver's heap)",
    )
    first_slice_records: int = setting(
        DEFAULT_FIRST_SLICE_RECORDS,
        codec=INTEGER,
        help="a backlog waiting at start is committed first in a slice of at most this many "
        "records, so its first rows are visible while the JVM warms up; 0 turns it off",
    )
    security_protocol: str = setting("PLAINTEXT", help="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
    sasl_mechanism: str | None = setting(
        None, help="PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (with a SASL protocol)"
    )
    username: str | None = setting(None, help="the SASL user name")
    password: Secret | None = setting(None, secret=True, help="The SASL password")
    ssl_ca_file: str | None = setting(None, help="PEM file of the CAs to trust (with SSL)")
    ssl_cert_file: str | None = setting(None, help="PEM client certificate (with ssl_key_file)")
    ssl_key_file: str | None = setting(None, help="PEM client key (with ssl_cert_file)")
    ssl_key_password: Secret | None = setting(
        None, secret=True, help="The password of the client key"
    )

    def __post_init__(self) -> None:
        _check(
            bool(self.topics) != bool(self.pattern), "topics", "or kafka.pattern: set exactly one"
        )
        if self.pattern:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise Invalid("pattern", f"is not a regular expression: {exc}") from None
        if self.starting_offsets not in ("earliest", "latest"):
            try:
                ok = isinstance(json.loads(self.starting_offsets), dict)
            except ValueError:
                ok = False
            _check(ok, "starting_offsets", "must be earliest, latest or a JSON object")
        limit = self.max_offsets_per_trigger
        if limit == 0:  # the file's spelling of no limit (TOML has no null)
            object.__setattr__(self, "max_offsets_per_trigger", None)
        _check(
            limit is None or limit >= 0,
            "max_offsets_per_trigger",
            "must be positive, or 0 for no limit",
        )
        _check(self.first_slice_records >= 0, "first_slice_records", "must be 0 or more")
        protocol = self.security_protocol.upper()
        object.__setattr__(self, "security_protocol", protocol)
        _check(
            protocol in SECURITY_PROTOCOLS,
            "security_protocol",
            f"must be one of {SECURITY_PROTOCOLS}",
        )
        if protocol.startswith("SASL_"):
            mechanism = (self.sasl_mechanism or "").upper()
            object.__setattr__(self, "sasl_mechanism", mechanism)
            _check(
                mechanism in SASL_MECHANISMS, "sasl_mechanism", f"must be one of {SASL_MECHANISMS}"
            )
            _check(bool(self.username), "username", f"is required with {protocol}")
            _check(
                self.password is not None,
                "password",
                f"(or kafka.password_file) is required with {protocol}",
            )
        else:
            for name in ("sasl_mechanism", "username", "password"):
                _check(
                    getattr(self, name) is None,
                    name,
                    f"needs a SASL security_protocol, not {protocol}",
                )
        for name in ("ssl_ca_file", "ssl_cert_file", "ssl_key_file"):
            path = getattr(self, name)
            if path is not None:
                _check(
                    protocol.endswith("SSL"),
                    name,
                    f"needs an SSL security_protocol, not {protocol}",
                )
                _check(Path(path).is_file(), name, "is not a readable file")
        _check(
            (self.ssl_cert_file is None) == (self.ssl_key_file is None),
            "ssl_cert_file",
            "and kafka.ssl_key_file go together",
        )

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
        opts["kafka.security.protocol"] = self.security_protocol
        if self.sasl_mechanism:
            assert self.username is not None and self.password is not None
            opts["kafka.sasl.mechanism"] = self.sasl_mechanism
            opts["kafka.sasl.jaas.config"] = (
                f"{_JAAS_MODULES[self.sasl_mechanism]} required "
                f"username={_jaas_quote(self.username)} "
                f"password={_jaas_quote(self.password.reveal())};"
            )
        if self.ssl_ca_file:
            opts["kafka.ssl.truststore.type"] = "PEM"
            opts["kafka.ssl.truststore.location"] = self.ssl_ca_file
        if self.ssl_cert_file and self.ssl_key_file:
            # The Java client takes separate PEM cert and key only inline.
            opts["kafka.ssl.keystore.type"] = "PEM"
            opts["kafka.ssl.keystore.certificate.chain"] = _read(self.ssl_cert_file)
            opts["kafka.ssl.keystore.key"] = _read(self.ssl_key_file)
            if self.ssl_key_password is not None:
                opts["kafka.ssl.key.password"] = self.ssl_key_password.reveal()
        return opts

    def producer_config(self) -> dict[str, str]:
        """``confluent_kafka.Producer`` settings for the dead-letter producer.

        Returns:
            librdkafka settings.  CONTAINS SECRETS: never log it.
        """
        conf = {"bootstrap.servers": self.bootstrap, "security.protocol": self.security_protocol}
        optional = {
            "sasl.mechanism": self.sasl_mechanism,
            "sasl.username": self.username,
            "sasl.password": self.password.reveal() if self.password else None,
            "ssl.ca.location": self.ssl_ca_file,
            "ssl.certificate.location": self.ssl_cert_file,
            "ssl.key.location": self.ssl_key_file,
            "ssl.key.password": self.ssl_key_password.reveal() if self.ssl_key_password else None,
        }
        conf.update({k: v for k, v in optional.items() if v is not None})
        return conf


@dataclass(frozen=True, kw_only=True)
class CatalogConfig:
    """``[catalog]``: the Iceberg catalog (REST or Glue) and its S3 storage."""

    type: str = setting(
        "rest",
        help="the catalog's kind: rest (an Iceberg REST catalog at uri) or glue (AWS Glue, or a "
        "Glue-compatible endpoint at glue_endpoint; its requests are signed with the AWS default "
        "credentials: the environment's AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile "
        "or a role)",
    )
    uri: str | None = setting(None, help="the Iceberg REST catalog's URL (type rest)")
    glue_endpoint: str | None = setting(
        None, help="a Glue-compatible endpoint's URL (type glue); unset means AWS Glue"
    )
    warehouse: str | None = setting(None, help="the warehouse to ask the catalog for")
    s3_endpoint: str | None = setting(None, help="the S3 endpoint (MinIO); unset means AWS")
    s3_access_key: str | None = setting(None, help="the S3 access key id")
    s3_secret_key: Secret | None = setting(None, secret=True, help="The S3 secret access key")
    s3_region: str = setting(
        DEFAULT_S3_REGION, help="the region S3 and Glue requests are signed for"
    )
    s3_path_style: bool = setting(
        True, codec=BOOLEAN, help="path-style S3 URLs (MinIO) instead of virtual hosts"
    )
    connect_timeout: float = setting(
        DEFAULT_CONNECT_TIMEOUT_S,
        codec=DURATION,
        help="how long a connection to the catalog or to S3 may take to open (every client: "
        "the driver's and Spark's)",
    )
    read_timeout: float = setting(
        DEFAULT_READ_TIMEOUT_S,
        codec=DURATION,
        help="how long a catalog or S3 call may wait for its answer before it counts as lost "
        "(a half-open connection otherwise holds the loader for ever)",
    )

    def __post_init__(self) -> None:
        _check(self.type in CATALOG_TYPES, "type", f"must be one of {', '.join(CATALOG_TYPES)}")
        _check(self.type != "rest" or bool(self.uri), "uri", "is required when type is rest")
        _check(self.connect_timeout > 0, "connect_timeout", "must be positive")
        _check(self.read_timeout > 0, "read_timeout", "must be positive")


SPARK_LOG_LEVELS = ("ALL", "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF")
"""What ``SparkContext.setLogLevel`` takes."""

JVM_COLLECTORS = {
    "g1": "-XX:+UseG1GC",
    "parallel": "-XX:+UseParallelGC",
    "serial": "-XX:+UseSerialGC",
}
"""The driver JVM's option for each garbage collector ``[spark] gc`` names. G1 is the default:
Parallel catches up a backlog faster and G1 gives the shorter tail of freshness; both measured
in docs/benchmarks.md."""

JVM_COMPILERS = {
    "quick": "-XX:TieredStopAtLevel=1",
    "tiered": "",
}
"""The driver JVM's option for each ``[spark] jit``. ``tiered`` (Java's own default) compiles
hot code twice, quickly and then for speed; ``quick`` stops at the quick compiler, whose code
runs slower. Measured on a quiet 2-core machine, three runs each beside the Kafka Connect sink
(docs/benchmarks.md, run 5): ``quick`` made every row of a 1,000,000-row backlog visible as
soon or sooner (32.7 s against 34.3 s within one day, 52.1 s against 56.0 s over 30 days), its
first rows about 7 s sooner, and kept the freshness tail short (p99 2.29-2.43 s at 1,000 msg/s
and 1 s batches, against 3.91-6.39 s with ``tiered``, whose optimizing compiler takes one of the
two cores while the first minutes of batches run); ``tiered`` moved a backlog's rows faster
once they were flowing (25,121 against 23,461 rows/s over 30 days)."""

DEFAULT_JIT = "quick"
"""``[spark] jit`` unless set: the choice measured best on the 2-core machine the kit targets."""


@dataclass(frozen=True, kw_only=True)
class SparkConfig:
    """``[spark]``: how the Spark session is built when the loader is not run by spark-submit.

    Under ``spark-submit`` the master, jars, memory and Java come from the submit command and
    these settings are ignored.
    """

    master: str = setting("local[2]", help="the Spark master URL, e.g. local[2] or spark://h:7077")
    driver_memory: str = setting("1g", help="the driver JVM's heap, e.g. 1g")
    gc: str = setting(
        "g1",
        help="the driver JVM's garbage collector: g1 (Java's own default), parallel or serial. "
        "Parallel loaded a 1,000,000-row backlog about a tenth sooner on two cores and a 1 GiB "
        "heap, with a longer tail of publish-to-visible times; g1 keeps the tail short",
    )
    jit: str = setting(
        DEFAULT_JIT,
        help="the driver JVM's compilers: quick (the quick compiler only) or tiered (Java's "
        "own default: quick, then optimizing). On two cores quick made a backlog's first rows "
        "about 7 s sooner, every row as soon or sooner and the freshness tail shorter; tiered "
        "moved big batches about a sixth faster once warm; with cores to spare, measure tiered",
    )
    shuffle_partitions: int = setting(
        2, codec=INTEGER, help="spark.sql.shuffle.partitions; small on small machines"
    )
    jars: tuple[str, ...] = setting(
        (),
        codec=STRINGS,
        help="jar paths Spark loads: the Iceberg Spark runtime, iceberg-aws-bundle, "
        "spark-sql-kafka and the loader's icefloe-loader-jvm.jar (required unless run by "
        "spark-submit)",
    )
    java_home: str | None = setting(
        None, help="the Java home Spark's JVM runs on (Java 17 or 21); unset keeps $JAVA_HOME"
    )
    local_dir: str | None = setting(
        None,
        help="Spark's scratch folder (spark.local.dir) and its JVM's temp folder, made if "
        "missing, no spaces; unset: the system's temp folder. A loader killed with kill -9 "
        "leaves its scratch files there",
    )

    class_data: str | None = setting(
        None,
        help="a JVM class-data archive that shortens Spark's start: mapped when the file "
        "exists, else made by this run when its JVM exits (after a committed batch); one per "
        "JDK and set of jars, no spaces",
    )

    log_level: str = setting(
        "ERROR",
        help="the level of Spark's own log (also under spark-submit): WARN shows its "
        "per-batch notices such as 'Current batch is falling behind'; the loader logs one "
        "line per batch itself",
    )

    def __post_init__(self) -> None:
        _check(self.shuffle_partitions > 0, "shuffle_partitions", "must be positive")
        _check(
            not self.local_dir or not any(c.isspace() for c in self.local_dir),
            "local_dir",
            "must not contain spaces (it is passed to the JVM as -Djava.io.tmpdir)",
        )
        _check(
            not self.class_data or not any(c.isspace() for c in self.class_data),
            "class_data",
            "must not contain spaces (it is passed to the JVM as an option)",
        )
        _check(
            self.gc.lower() in JVM_COLLECTORS,
            "gc",
            f"must be one of {', '.join(JVM_COLLECTORS)}",
        )
        _check(
            self.jit.lower() in JVM_COMPILERS,
            "jit",
            f"must be one of {', '.join(JVM_COMPILERS)}",
        )
        _check(
            self.log_level.upper() in SPARK_LOG_LEVELS,
            "log_level",
            f"must be one of {', '.join(SPARK_LOG_LEVELS)}",
        )


# ---------------------------------------------------------------------------
# [transform]: the settings of an extension, read only when set
# ---------------------------------------------------------------------------

CASE_FORMATS = ("lowerCamel", "UpperCamel", "lower_underscore", "UPPER_UNDERSCORE", "lower-hyphen")
"""The names of ``loader.ext.transforms.CaseFormat``, for the help lines."""


def _case_format(value: Any) -> CaseFormat:
    from icefloe.loader.ext.transforms import CaseFormat

    return CaseFormat.parse(value)


def _projections(value: Any) -> tuple[Projection, ...]:
    from icefloe.loader.ext.transforms import Projection

    return tuple(Projection(c, s) for c, s in MAPPING.parse(value).items())


CASE_FORMAT = Codec("a case format", _case_format, lambda c: c.value, metavar="FORMAT")

PROJECTIONS = Codec(
    MAPPING.expected,
    _projections,
    lambda projections: {p.column: p.source for p in projections},
    metavar=MAPPING.metavar,
)


@dataclass(frozen=True, slots=True)
class Transform:
    """``[transform]``: how to reshape a message before parsing; the default changes nothing.

    The transforms themselves are an extension (``loader.ext.transforms``), imported when a
    setting here is given (its codec reads it) and when records are decoded with one.

    Attributes:
        unnest: a JSON pointer selecting the object to load, or ``None``.
        projections: columns filled from the original message or Kafka metadata.
        case_from, case_to: convert keys between these formats; both or neither.

    Raises:
        ConfigError: an invalid pointer, a half-specified case conversion or
            two projections into one column.
    """

    unnest: str | None = setting(
        None, help="a JSON pointer to the object to load as the row, e.g. /data"
    )
    projections: tuple[Projection, ...] = setting(
        (),
        codec=PROJECTIONS,
        help="columns filled from the message: {column: pointer or kafka:...}",
    )
    case_from: CaseFormat | None = setting(
        None,
        codec=CASE_FORMAT,
        help=f"convert keys from this case format ({', '.join(CASE_FORMATS)}), with case_to",
    )
    case_to: CaseFormat | None = setting(
        None,
        codec=CASE_FORMAT,
        help=f"convert keys to this case format ({', '.join(CASE_FORMATS)}), with case_from",
    )
    unnest_pointer: JsonPointer | None = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.unnest is not None:
            from icefloe.loader.ext.transforms import JsonPointer

            object.__setattr__(self, "unnest_pointer", JsonPointer.parse(self.unnest))
        if (self.case_from is None) != (self.case_to is None):
            raise ConfigError("case conversion needs both case_from and case_to")
        columns = [p.column for p in self.projections]
        duplicates = sorted({c for c in columns if columns.count(c) > 1})
        if duplicates:
            raise ConfigError(f"several projections into column(s) {duplicates}")

    @property
    def is_identity(self) -> bool:
        """True when the transform returns the message unchanged."""
        return (
            self.unnest_pointer is None
            and not self.projections
            and (self.case_from is None or self.case_from is self.case_to)
        )


@dataclass(frozen=True, slots=True)
class DecodeOptions:
    """How records are decoded: what the settings say of it (``LoaderConfig.decode``).

    Attributes:
        transform: unnest / projections / case conversion.
        case_insensitive: match JSON keys to column names ignoring case.
        max_bytes: larger payloads are ``too_large``.
        max_depth: deeper nesting is ``too_deep``.
    """

    transform: Transform = field(default_factory=Transform)
    case_insensitive: bool = True
    max_bytes: int = DEFAULT_MAX_BYTES
    max_depth: int = DEFAULT_MAX_DEPTH


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
        parts = text.split(".") if isinstance(text, str) else []
        if len(parts) != 3 or not all(_IDENT_PART.fullmatch(p) for p in parts):
            raise ConfigError(f"table {text!r} must be catalog.schema.table")
        return cls(*parts)

    def __str__(self) -> str:
        return f"{self.catalog}.{self.namespace}.{self.name}"


_TABLE = Codec("catalog.schema.table", TableId.parse, str, metavar="CATALOG.SCHEMA.TABLE")


@dataclass(frozen=True, kw_only=True)
class LoaderConfig:
    """The whole, validated loader configuration (the top level of the TOML file)."""

    loader_id: str = setting(
        "icefloe-loader", help="unique per running loader; names its lease on the table"
    )
    table: TableId = setting(codec=_TABLE, help="the Iceberg table to load, catalog.schema.table")
    trigger_interval: float = setting(
        5.0, codec=DURATION, help="one micro-batch, one snapshot, per interval"
    )
    dead_letter_topic: str | None = setting(
        None, help="where malformed records go; unset stops the loader at the first one"
    )
    metrics_port: int = setting(9400, codec=INTEGER, help="Prometheus /metrics port; 0 disables")
    lease_ttl: float | None = setting(
        None,
        codec=DURATION,
        help="how long a silent loader keeps the table; unset: max(60 s, 10 trigger intervals)",
    )
    checkpoint_location: str | None = setting(
        None, help="Spark's checkpoint, disposable: the table's offsets rule (default: a temp dir)"
    )
    progress_timeout: float = setting(
        DEFAULT_PROGRESS_TIMEOUT_S,
        codec=DURATION,
        help="how long the loader keeps retrying a catalog, storage or Kafka that does not "
        "answer before it exits non-zero naming the service and the fault",
    )
    case_insensitive: bool = setting(
        True, codec=BOOLEAN, help="match JSON keys to column names ignoring case"
    )
    max_record_bytes: int = setting(
        DEFAULT_MAX_BYTES, codec=INTEGER, help="larger records are malformed (too_large)"
    )
    max_depth: int = setting(
        DEFAULT_MAX_DEPTH, codec=INTEGER, help="deeper nesting is malformed (too_deep)"
    )
    jvm_decode: bool = setting(
        True,
        codec=BOOLEAN,
        help="decode plain records in Spark's JVM (needs the loader's jar among the Spark "
        "jars); false decodes every record in Python",
    )
    kafka: KafkaConfig = section(KafkaConfig, required=True)
    spark: SparkConfig = section(SparkConfig)
    catalog: CatalogConfig = section(CatalogConfig, required=True)
    transform: Transform = section(Transform)

    def __post_init__(self) -> None:
        _check(
            bool(re.fullmatch(r"[A-Za-z0-9._\-]+", self.loader_id)),
            "loader_id",
            "must be letters, digits, '.', '_' or '-'",
        )
        _check(self.trigger_interval > 0, "trigger_interval", "must be positive")
        _check(
            self.lease_ttl_s > self.trigger_interval,
            "lease_ttl",
            "must be longer than trigger_interval",
        )
        _check(
            0 <= self.metrics_port <= 65535, "metrics_port", "must be 0..65535 (0 disables metrics)"
        )
        _check(self.progress_timeout > 0, "progress_timeout", "must be positive")
        _check(self.max_record_bytes > 0, "max_record_bytes", "must be positive")
        _check(self.max_depth > 0, "max_depth", "must be positive")
        if not self.dead_letter_topic:
            object.__setattr__(self, "dead_letter_topic", None)
        else:
            topic, kafka = self.dead_letter_topic, self.kafka
            loops = topic in kafka.topics or (
                kafka.pattern is not None and re.fullmatch(kafka.pattern, topic) is not None
            )
            _check(not loops, "dead_letter_topic", "must not be one of the topics the loader reads")

    @property
    def lease_ttl_s(self) -> float:
        """The lease in seconds: ``lease_ttl``, else max(60 s, 10 trigger intervals)."""
        if self.lease_ttl is not None:
            return self.lease_ttl
        return max(60.0, 10 * self.trigger_interval)

    @functools.cached_property
    def decode(self) -> DecodeOptions:
        """The decoding options the settings describe."""
        return DecodeOptions(
            transform=self.transform,
            case_insensitive=self.case_insensitive,
            max_bytes=self.max_record_bytes,
            max_depth=self.max_depth,
        )

    @property
    def spark_trigger(self) -> str:
        """The trigger interval as Spark's ``processingTime`` string."""
        return f"{round(self.trigger_interval * 1000)} milliseconds"

    def to_toml(self) -> str:
        """The TOML file that loads back into this configuration (secrets only as ``_file``)."""
        return settings.to_toml(self)


# ---------------------------------------------------------------------------
# Loading: file, then environment, then flags
# ---------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit the process
        raise ConfigError(f"command line: {message}")


def add_flags(parser: Any) -> None:
    """Add ``--config`` and one flag per setting (each with its help line) to ``parser``."""
    parser.add_argument("--config", metavar="FILE", help=f"the loader's TOML file [{CONFIG_ENV}]")
    settings.add_flags(parser, LoaderConfig)


def env_var(key: str) -> str:
    """The environment variable that sets ``key``, e.g. ``catalog.s3_secret_key``."""
    return settings.env_var(LoaderConfig, key)


def flag_values(args: argparse.Namespace) -> dict[str, str]:
    """The settings given as flags in ``args`` (parsed by a parser set up with ``add_flags``)."""
    return settings.flag_values(LoaderConfig, args)


def from_args(
    args: argparse.Namespace,
    *,
    env: Mapping[str, str] | None = None,
    path: str | os.PathLike[str] | None = None,
    defaults: settings.Defaults | None = None,
) -> LoaderConfig:
    """The configuration a command line names (parsed by a parser set up with ``add_flags``).

    Args:
        args: the parsed command line: ``--config`` and the setting flags.
        env: the environment (defaults to ``os.environ``).
        path: the TOML file when neither ``--config`` nor ``ICEFLOE_LOADER_CONFIG`` names one.
        defaults: values for settings no layer sets, from the program running the loader.

    Raises:
        ConfigError: the first problem found, naming the setting and where it came from
            (secret values are never included).
    """
    env = os.environ if env is None else env
    source = args.config or env.get(CONFIG_ENV) or path
    values = settings.gather(
        LoaderConfig,
        source,
        env,
        flag_values(args),
        ignore_env=frozenset({CONFIG_ENV}),
        defaults=defaults,
        removed=REMOVED,
    )
    config: LoaderConfig = settings.build(LoaderConfig, values)
    return config


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
        argv: command-line arguments without the program name: ``--config`` and setting flags.

    Returns:
        The validated ``LoaderConfig``.

    Raises:
        ConfigError: the first problem found, naming the setting and where it
            came from (secret values are never included).
    """
    parser = _Parser(prog="icefloe-loader", add_help=False, allow_abbrev=False)
    add_flags(parser)
    return from_args(parser.parse_args(list(argv or [])), env=env, path=path)
