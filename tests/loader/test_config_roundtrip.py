"""The configuration's TOML round trip: ``to_toml()`` then ``load_config()`` gives it back exactly.

Generated configurations cover every section and every setting, optional ones set and unset
("no limit" included), odd strings (quotes, backslashes, DEL, characters beyond the BMP) and
secrets read from files (written back as ``<key>_file``). Each setting gets its values from
its codec, or from a strategy of its own where the loader constrains it; a setting with a codec
no strategy knows fails ``test_every_setting_has_a_strategy`` instead of going untested.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from icefloe.loader import settings
from icefloe.loader.config import (
    CATALOG_TYPES,
    JVM_COLLECTORS,
    JVM_COMPILERS,
    SASL_MECHANISMS,
    SECURITY_PROTOCOLS,
    SPARK_LOG_LEVELS,
    CatalogConfig,
    KafkaConfig,
    LoaderConfig,
    TableId,
    load_config,
)
from icefloe.loader.errors import ConfigError
from icefloe.loader.ext.transforms import CaseFormat, JsonPointer, Projection
from icefloe.loader.secret import Secret

# -- values ------------------------------------------------------------------------------

# Any text a TOML file can hold: no surrogate halves (not UTF-8), everything else, DEL and
# control characters included.
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
WORD = st.text("abcdefghij0123456789_-", min_size=1, max_size=8)
SPACELESS = st.text(st.characters(exclude_categories=("Cs", "Zs", "Zl", "Zp", "Cc")), max_size=12)
DURATIONS = st.one_of(
    st.sampled_from([0.001, 0.5, 1.0, 2.0, 5.0, 60.0, 90.0, 3600.0]),
    st.floats(min_value=1e-6, max_value=1e7, allow_nan=False, allow_infinity=False),
)
# Odd file names (the SSL files must exist: they are made in the test's folder).
FILE_NAMES = st.sampled_from(["ca.pem", 'q"uote.pem', "back\\slash.pem", "sp ace.pem", "é😀.pem"])
SECRET_FILE_NAMES = st.sampled_from(["pw", "pw\x7fdel", "pw ü"])

BY_CODEC: dict[int, st.SearchStrategy[Any]] = {
    id(settings.STRING): TEXT,
    id(settings.INTEGER): st.integers(min_value=1, max_value=2**53),
    id(settings.BOOLEAN): st.booleans(),
    id(settings.DURATION): DURATIONS,
    id(settings.STRINGS): st.lists(TEXT, max_size=3).map(tuple),
}
"""Values by codec, for settings the loader does not constrain beyond 'positive'."""


@dataclasses.dataclass(frozen=True)
class SecretFile:
    """A secret to be read from a file of this name holding this text."""

    name: str
    text: str


@dataclasses.dataclass(frozen=True)
class FileName:
    """A path setting: the name of a file made in the test's folder."""

    name: str


def _cases(names: typing.Iterable[str]) -> st.SearchStrategy[str]:
    return st.sampled_from(sorted(names)).flatmap(
        lambda n: st.sampled_from([n, n.lower(), n.upper()])
    )


OWN: dict[str, st.SearchStrategy[Any]] = {
    "loader_id": st.text("abcXYZ019._-", min_size=1, max_size=12),
    "table": st.tuples(WORD, WORD, WORD).map(lambda p: TableId.parse(".".join("t" + w for w in p))),
    "metrics_port": st.integers(0, 65535),
    "spark.gc": _cases(JVM_COLLECTORS),
    "spark.jit": _cases(JVM_COMPILERS),
    "spark.log_level": _cases(SPARK_LOG_LEVELS),
    "spark.local_dir": st.none() | SPACELESS,
    "spark.class_data": st.none() | SPACELESS,
    "kafka.bootstrap": TEXT.filter(bool),
    "kafka.starting_offsets": st.sampled_from(["earliest", "latest", '{"t":{"0":5}}']),
    "kafka.max_offsets_per_trigger": st.none() | st.integers(1, 2**40),
    "kafka.first_slice_records": st.integers(0, 2**40),
    "transform.unnest": st.none() | st.sampled_from(["", "/data", "/a~1b/~0c", "/ü/0"]),
    "transform.projections": st.dictionaries(
        TEXT.filter(bool),
        st.sampled_from(["/id", "", "/a/b", "kafka:offset", "kafka:header:x", "kafka:key"]),
        max_size=3,
    ).map(lambda d: tuple(Projection(c, s) for c, s in d.items())),
}
"""Settings with a strategy of their own: constrained values, or a codec of their own."""

TOGETHER = {
    "kafka.topics",
    "kafka.pattern",
    "dead_letter_topic",
    "trigger_interval",
    "lease_ttl",
    "kafka.security_protocol",
    "kafka.sasl_mechanism",
    "kafka.username",
    "kafka.password",
    "kafka.ssl_ca_file",
    "kafka.ssl_cert_file",
    "kafka.ssl_key_file",
    "kafka.ssl_key_password",
    "catalog.s3_secret_key",
    "catalog.type",
    "catalog.uri",
    "transform.case_from",
    "transform.case_to",
}
"""Settings drawn together in ``plans`` because the loader checks them against each other."""


def _optional(key: settings.Key) -> bool:
    return key.default is None


def _strategy(key: settings.Key) -> st.SearchStrategy[Any] | None:
    own = OWN.get(key.key)
    if own is not None:
        return own
    generic = BY_CODEC.get(id(key.setting.codec))
    if generic is None:
        return None
    return st.none() | generic if _optional(key) else generic


@st.composite
def plans(draw: st.DrawFn) -> dict[str, Any]:
    """Dotted key -> value for a valid configuration; a key left out takes its default."""
    plan: dict[str, Any] = {}
    for key in settings.keys(LoaderConfig):
        if key.from_file or key.key in TOGETHER:
            continue
        strategy = _strategy(key)
        assert strategy is not None, key.key
        if key.setting.required or draw(st.booleans()):
            plan[key.key] = draw(strategy)
    # Topics or a pattern, and a dead-letter topic that is neither.
    if draw(st.booleans()):
        plan["kafka.topics"] = tuple(draw(st.lists(WORD, min_size=1, max_size=3, unique=True)))
    else:
        plan["kafka.pattern"] = draw(st.sampled_from(["events-.*", "a|b", r"t\d+", "ü+"]))
    if draw(st.booleans()):
        plan["dead_letter_topic"] = draw(st.sampled_from(["", "dlq", "dead letters ü"]))
    # A lease longer than the trigger interval.
    if draw(st.booleans()):
        plan["trigger_interval"] = draw(DURATIONS)
    if draw(st.booleans()):
        trigger = plan.get("trigger_interval", settings.default(LoaderConfig, "trigger_interval"))
        plan["lease_ttl"] = draw(st.none() | DURATIONS.map(lambda d: trigger + d))
    # The security settings fit the protocol.
    protocol = draw(_cases(SECURITY_PROTOCOLS))
    if protocol != "PLAINTEXT" or draw(st.booleans()):
        plan["kafka.security_protocol"] = protocol
    if protocol.upper().startswith("SASL_"):
        plan["kafka.sasl_mechanism"] = draw(_cases(SASL_MECHANISMS))
        plan["kafka.username"] = draw(TEXT.filter(bool))
        plan["kafka.password"] = SecretFile(draw(SECRET_FILE_NAMES), draw(TEXT))
    if protocol.upper().endswith("SSL"):
        for name in ("ssl_ca_file", "ssl_cert_file"):
            plan[f"kafka.{name}"] = draw(st.none() | FILE_NAMES.map(FileName))
        if plan["kafka.ssl_cert_file"] is not None:
            plan["kafka.ssl_key_file"] = FileName(draw(FILE_NAMES))
            if draw(st.booleans()):
                text = draw(TEXT)
                plan["kafka.ssl_key_password"] = SecretFile("key-" + draw(SECRET_FILE_NAMES), text)
    # A catalog of a known kind; REST needs its URI.
    kind = draw(st.sampled_from(CATALOG_TYPES))
    if kind != "rest" or draw(st.booleans()):
        plan["catalog.type"] = kind
    if kind == "rest" or draw(st.booleans()):
        plan["catalog.uri"] = draw(TEXT.filter(bool))
    if draw(st.booleans()):
        plan["catalog.s3_secret_key"] = SecretFile("s3-" + draw(SECRET_FILE_NAMES), draw(TEXT))
    if draw(st.booleans()):
        plan["transform.case_from"] = draw(st.sampled_from(list(CaseFormat)))
        plan["transform.case_to"] = draw(st.sampled_from(list(CaseFormat)))
    return plan


def assemble(plan: Mapping[str, Any], folder: Path) -> LoaderConfig:
    """The configuration a plan describes; its secrets and SSL files are made in ``folder``."""

    def value(item: Any) -> Any:
        if isinstance(item, SecretFile):
            path = folder / item.name
            path.write_text(item.text, encoding="utf-8")
            return Secret.from_file(path)
        if isinstance(item, FileName):
            path = folder / item.name
            path.write_text("-----BEGIN-----\n", encoding="utf-8")
            return str(path)
        return item

    def build(cls: type, prefix: str) -> Any:
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            key = prefix + f.name
            if f.metadata.get("icefloe.section") is not None:
                kwargs[f.name] = build(f.metadata["icefloe.section"], key + ".")
            elif key in plan:
                kwargs[f.name] = value(plan[key])
        return cls(**kwargs)

    config: LoaderConfig = build(LoaderConfig, "")
    return config


def _secrets(config: Any) -> dict[str, str | None]:
    """Dotted key -> the file each secret came from (``Secret`` equality compares text only)."""
    out: dict[str, str | None] = {}
    for key in settings.keys(type(config)):
        if key.setting.secret and not key.from_file:
            obj = config
            for part in key.key.split("."):
                obj = getattr(obj, part)
            out[key.key] = None if obj is None else obj.path
    return out


# -- the property --------------------------------------------------------------------------


@hsettings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(plan=plans())
def test_every_generated_configuration_round_trips(plan: dict[str, Any], tmp_path: Path) -> None:
    try:
        config = assemble(plan, tmp_path)
    except ConfigError as exc:  # a combination the loader refuses, e.g. a topic the pattern names
        assume(False)
        raise AssertionError from exc
    path = tmp_path / "loader.toml"
    path.write_text(config.to_toml(), encoding="utf-8")
    again = load_config(path, env={})
    assert again == config
    assert _secrets(again) == _secrets(config)
    # Written again, the text is the same: nothing drifts on a second trip.
    assert again.to_toml() == config.to_toml()


def test_every_setting_has_a_strategy() -> None:
    """A new setting is generated too, or this names it: a codec no strategy knows."""
    missing = [
        k.key
        for k in settings.keys(LoaderConfig)
        if not k.from_file and k.key not in TOGETHER and _strategy(k) is None
    ]
    assert missing == []
    every = {k.key for k in settings.keys(LoaderConfig) if not k.from_file}
    assert every >= TOGETHER and set(OWN) <= every  # no strategy for a setting that is gone


# -- None where the default is not: "no limit" ----------------------------------------------


# The [transform] section names the transforms' own types for type checkers only: loader/config.py
# imports the extension (loader/ext/transforms.py) only when a transform is set.
_EXTENSION_TYPES = {"CaseFormat": CaseFormat, "JsonPointer": JsonPointer, "Projection": Projection}


def _may_be_none(cls: type, prefix: str = "") -> list[tuple[str, dataclasses.Field[Any]]]:
    found = []
    hints = typing.get_type_hints(cls, localns=_EXTENSION_TYPES)
    for f in dataclasses.fields(cls):
        if f.metadata.get("icefloe.section") is not None:
            found += _may_be_none(f.metadata["icefloe.section"], f"{prefix}{f.name}.")
        elif type(None) in typing.get_args(hints[f.name]) and f.default is not None:
            found.append((prefix + f.name, f))
    return found


def test_a_setting_that_may_be_none_with_another_default_spells_none() -> None:
    found = _may_be_none(LoaderConfig)
    assert "kafka.max_offsets_per_trigger" in [key for key, _ in found]
    for key, f in found:
        assert f.metadata["icefloe.setting"].unset is not dataclasses.MISSING, key


MINIMAL = dict(
    table=TableId.parse("lake.s.t"),
    kafka=KafkaConfig(bootstrap="k:1", topics=("t",), max_offsets_per_trigger=None),
    catalog=CatalogConfig(uri="http://c"),
)


def test_no_batch_limit_survives_the_file(tmp_path: Path) -> None:
    config = LoaderConfig(**MINIMAL)  # type: ignore[arg-type]
    text = config.to_toml()
    assert "max_offsets_per_trigger = 0" in text
    path = tmp_path / "loader.toml"
    path.write_text(text)
    assert load_config(path, env={}).kafka.max_offsets_per_trigger is None
    assert "maxOffsetsPerTrigger" not in load_config(path, env={}).kafka.spark_options()


@pytest.mark.parametrize(
    ("env", "argv", "expected"),
    [
        ({"ICEFLOE_LOADER_KAFKA_MAX_OFFSETS_PER_TRIGGER": "0"}, [], None),
        ({}, ["--kafka-max-offsets-per-trigger", "0"], None),
        (
            {"ICEFLOE_LOADER_KAFKA_MAX_OFFSETS_PER_TRIGGER": "0"},
            ["--kafka-max-offsets-per-trigger", "7"],
            7,
        ),
        ({}, [], 500_000),
    ],
)
def test_no_limit_from_every_layer(
    tmp_path: Path, env: dict[str, str], argv: list[str], expected: int | None
) -> None:
    path = tmp_path / "loader.toml"
    path.write_text(
        dataclasses.replace(
            LoaderConfig(**MINIMAL), kafka=KafkaConfig(bootstrap="k:1", topics=("t",))
        ).to_toml()
    )  # type: ignore[arg-type]
    assert load_config(path, env=env, argv=argv).kafka.max_offsets_per_trigger == expected


@pytest.mark.parametrize("text", ["-1", "none", "null", "1.5", "", "unlimited"])
def test_nonsense_for_no_limit_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "loader.toml"
    path.write_text(LoaderConfig(**MINIMAL).to_toml())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"kafka\.max_offsets_per_trigger"):
        load_config(path, env={}, argv=["--kafka-max-offsets-per-trigger", text])
    toml = path.read_text().replace(
        "max_offsets_per_trigger = 0", f"max_offsets_per_trigger = {json.dumps(text)}"
    )
    path.write_text(toml)
    with pytest.raises(ConfigError, match=r"kafka\.max_offsets_per_trigger"):
        load_config(path, env={})


@dataclasses.dataclass(frozen=True, kw_only=True)
class _NoSpelling:
    limit: int | None = settings.setting(5, codec=settings.INTEGER, help="a limit")


def test_none_without_a_spelling_is_refused_not_dropped() -> None:
    """The bug's shape: such a setting left out of the file would load back as its default."""
    with pytest.raises(ValueError, match="limit is None but defaults to 5"):
        settings.to_toml(_NoSpelling(limit=None))


def test_a_direct_secret_is_never_written(tmp_path: Path) -> None:
    config = dataclasses.replace(
        LoaderConfig(**MINIMAL),  # type: ignore[arg-type]
        catalog=CatalogConfig(uri="http://c", s3_secret_key=Secret("hush-1")),
    )
    assert "hush-1" not in config.to_toml() and "s3_secret_key" not in config.to_toml()


def test_one_value_is_parsed_as_the_file_would_be() -> None:
    assert settings.parse(LoaderConfig, "kafka.max_offsets_per_trigger", "0", "t") is None
    assert settings.parse(LoaderConfig, "trigger_interval", "750ms", "t") == 0.75
    with pytest.raises(ConfigError, match=r"lease_ttl \(from t\) must be a duration"):
        settings.parse(LoaderConfig, "lease_ttl", "soon", "t")
    with pytest.raises(KeyError):
        settings.parse(LoaderConfig, "catalog.s3_secret_key", "x", "t")


def test_defaults_are_read_from_the_fields() -> None:
    assert settings.default(LoaderConfig, "trigger_interval") == 5.0
    assert settings.default(LoaderConfig, "kafka.max_offsets_per_trigger") == 500_000
    with pytest.raises(KeyError):
        settings.default(LoaderConfig, "kafka.bootstrap")
    with pytest.raises(KeyError):
        settings.default(LoaderConfig, "no.such")


def test_override_reads_values_as_a_later_layer(tmp_path: Path) -> None:
    secret = tmp_path / "s3"
    secret.write_text("from-file")
    base = dataclasses.replace(
        LoaderConfig(**MINIMAL),  # type: ignore[arg-type]
        catalog=CatalogConfig(uri="http://c", s3_secret_key=Secret("direct")),
    )
    same = settings.override(base, {}, "nothing")
    assert same == base and same.catalog.s3_secret_key == Secret("direct")
    changed = settings.override(
        base,
        {"spark": {"jit": "tiered"}, "trigger_interval": "2s", "kafka.max_offsets_per_trigger": 7},
        "the test's values",
    )
    assert (changed.spark.jit, changed.trigger_interval) == ("tiered", 2.0)
    assert changed.kafka.max_offsets_per_trigger == 7
    from_file = settings.override(base, {"catalog.s3_secret_key_file": str(secret)}, "a flag")
    assert from_file.catalog.s3_secret_key == Secret("from-file")
    with pytest.raises(ConfigError, match=r"spark\.gc \(from the test's values\) must be one of"):
        settings.override(base, {"spark.gc": "zgc"}, "the test's values")
    with pytest.raises(ConfigError, match=r"unknown setting 'spark\.gcc' in the test's values"):
        settings.override(base, {"spark.gcc": "g1"}, "the test's values")
