"""Settings: configuration sections whose dataclass fields are the settings.

A section is a frozen dataclass. Each field made with ``setting(...)`` is one setting: its
default (written once, on the field), its help line, and its ``Codec``, which turns a TOML
value or the text of an environment variable or flag into the field's value, and back. A
field made with ``section(...)`` is a nested TOML table. Everything else derives from the
fields:

- the dotted key is the field's path: ``kafka.bootstrap``;
- the environment variable spells it ``ICEFLOE_LOADER_KAFKA_BOOTSTRAP``;
- the flag spells it ``--kafka-bootstrap``; a secret's value is never a flag, ``ps`` would
  show it;
- a secret also has a ``<key>_file`` form naming a file that holds it;
- ``to_toml`` writes a configuration back as the file that would load it, exactly.

TOML has no null. A setting that may be unset (``None``) while its default is not names the
value that spells "unset" in the file, the environment and the flags (``unset=0``: ``0`` means
no limit); ``build`` reads that value as ``None`` and ``to_toml`` writes ``None`` as it.

``gather`` layers a TOML file, then the environment, then flags (later layers win), over
optional ``Defaults`` from the program that runs the loader (the lowest layer), and
``build`` validates the result once into the sections. A section checks itself in
``__post_init__`` and raises ``Invalid(field, message)``; ``build`` then names the setting and
the layer its value came from.

Environment and flag values are text: booleans are ``true/false/yes/no/1/0/on/off``, lists are
comma-separated (or a JSON array), mappings are a JSON object, durations are ``500ms``, ``5s``,
``2m``, ``1h`` or a number of seconds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from icefloe.loader.errors import ConfigError
from icefloe.loader.secret import Secret

__all__ = [
    "BOOLEAN",
    "DURATION",
    "ENV_PREFIX",
    "INTEGER",
    "MAPPING",
    "STRING",
    "STRINGS",
    "Codec",
    "Invalid",
    "Key",
    "add_flags",
    "build",
    "default",
    "env_var",
    "flag_values",
    "from_mapping",
    "gather",
    "keys",
    "override",
    "parse",
    "section",
    "setting",
    "to_toml",
]

ENV_PREFIX = "ICEFLOE_LOADER_"
_SETTING = "icefloe.setting"
_SECTION = "icefloe.section"


class Invalid(ConfigError):
    """A section's field holds a value the section refuses.

    Args:
        field: the field's name in its section.
        message: what is wrong, completing "<key> ...".
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field} {message}")
        self.field = field
        self.message = message


# ---------------------------------------------------------------------------
# Codecs: TOML value or text -> field value, and back
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Codec:
    """How one kind of setting is read and written.

    Attributes:
        expected: completes "<key> must be ...", e.g. ``an integer``.
        parse: a TOML value or a string -> the field's value; raises ``ValueError`` for a
            value of the wrong shape (or ``ConfigError`` with its own message).
        dump: the field's value -> a TOML value (str, int, float, bool, list or dict).
        metavar: how ``--help`` shows the value.
    """

    expected: str
    parse: Callable[[Any], Any]
    dump: Callable[[Any], Any] = lambda value: value
    metavar: str = "TEXT"


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(value)
    return value


def _integer(value: Any) -> int:
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value.strip()):
        return int(value)
    if type(value) is int:
        return value
    raise ValueError(value)


_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off"}


def _boolean(value: Any) -> bool:
    if type(value) is bool:
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(value)


_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h)?", re.ASCII)
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def _duration(value: Any) -> float:
    if type(value) in (int, float):
        return float(value)
    match = _DURATION.fullmatch(value.strip()) if isinstance(value, str) else None
    if not match:
        raise ValueError(value)
    return float(match[1]) * _DURATION_UNITS[match[2]]


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            value = json.loads(text)  # a ValueError names the setting
        else:
            value = [part.strip() for part in text.split(",") if part.strip()]
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise ValueError(value)
    return tuple(value)


def _mapping(value: Any) -> dict[str, str]:
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, dict) or not all(isinstance(x, str) for x in value.values()):
        raise ValueError(value)
    return dict(value)


STRING = Codec("a string", _string)
INTEGER = Codec("an integer", _integer, metavar="N")
BOOLEAN = Codec("true or false", _boolean, metavar="true|false")


def _dump_duration(seconds: float) -> str | float:
    # "5s" where that reads back exactly; otherwise the number of seconds (TOML keeps a float).
    text = f"{seconds:g}"
    if _DURATION.fullmatch(text) and float(text) == seconds:
        return f"{text}s"
    return float(seconds)


DURATION = Codec(
    "a duration like 500ms, 5s, 2m or 1h", _duration, _dump_duration, metavar="DURATION"
)
STRINGS = Codec("a list of strings", _strings, list, metavar="A,B")
MAPPING = Codec("a mapping of names to strings (a JSON object)", _mapping, metavar="JSON")
_SECRET = Codec("a string", lambda value: Secret(_string(value)))


# ---------------------------------------------------------------------------
# Declaring sections
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """What ``setting(...)`` records on a field."""

    help: str
    codec: Codec
    secret: bool
    required: bool
    unset: Any = dataclasses.MISSING
    """The value that spells ``None`` for a setting whose default is not ``None``."""


def setting(
    default: Any = dataclasses.MISSING,
    *,
    help: str,
    codec: Codec = STRING,
    secret: bool = False,
    unset: Any = dataclasses.MISSING,
) -> Any:
    """A field that is one setting.

    Args:
        default: its default; none makes the setting required.
        help: one line saying what it does (shown by ``--help``).
        codec: how its values are read and written.
        secret: the value is a ``Secret``: never a flag, and also settable as ``<key>_file``.
        unset: for a field that may be ``None`` while its default is not: the value (as the
            codec parses it, e.g. ``0``) that stands for ``None`` in every layer. TOML has no
            null, so without it such a field could not be written.

    Returns:
        The dataclass field.
    """
    required = default is dataclasses.MISSING
    codec = _SECRET if secret else codec
    meta = {_SETTING: Setting(help, codec, secret, required, unset)}
    return dataclasses.field(default=default, metadata=meta)


def section(cls: type, *, required: bool = False) -> Any:
    """A field that is a nested section (a TOML table) of type ``cls``."""
    if required:
        return dataclasses.field(metadata={_SECTION: cls})
    return dataclasses.field(default_factory=cls, metadata={_SECTION: cls})


@dataclass(frozen=True)
class Key:
    """One setting as it is spelled in each layer.

    Attributes:
        key: the dotted key, ``kafka.bootstrap``.
        setting: its declaration.
        default: its default (``dataclasses.MISSING`` when required).
        from_file: this is the ``<key>_file`` form of a secret.
    """

    key: str
    setting: Setting
    default: Any
    from_file: bool = False

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.key.upper().replace(".", "_")

    @property
    def flag(self) -> str:
        return "--" + self.key.replace(".", "-").replace("_", "-")

    @property
    def on_command_line(self) -> bool:
        return self.from_file or not self.setting.secret

    @property
    def help(self) -> str:
        text = self.setting.help
        if self.from_file:
            text = f"a file holding the {text[0].lower()}{text[1:]}"
        elif self.default not in (None, (), dataclasses.MISSING):
            text = f"{text} (default {_toml_value(self.setting.codec.dump(self.default))})"
        return f"{text} [{self.env}]"


def keys(cls: type, prefix: str = "") -> Iterator[Key]:
    """Every setting of section ``cls`` and its sub-sections, in declaration order."""
    for f in dataclasses.fields(cls):
        if _SECTION in f.metadata:
            yield from keys(f.metadata[_SECTION], f"{prefix}{f.name}.")
        elif _SETTING in f.metadata:
            s: Setting = f.metadata[_SETTING]
            yield Key(prefix + f.name, s, f.default)
            if s.secret:
                yield Key(prefix + f.name + "_file", s, None, from_file=True)


def default(cls: type, key: str) -> Any:
    """The default of setting ``key`` (a dotted key) of section ``cls``: the one place it is
    written, for programs that need it (the harness's own records of loader settings).

    Args:
        cls: the root section.
        key: the dotted key, e.g. ``kafka.max_offsets_per_trigger``.

    Returns:
        The field's default.

    Raises:
        KeyError: no such setting, or it has no default (it is required).
    """
    for k in keys(cls):
        if k.key == key and not k.from_file:
            if k.default is dataclasses.MISSING:
                raise KeyError(f"{key} is required: it has no default")
            return k.default
    raise KeyError(key)


def env_var(cls: type, key: str) -> str:
    """The environment variable of setting ``key`` (a dotted key) of section ``cls``.

    Raises:
        KeyError: no such setting.
    """
    for k in keys(cls):
        if k.key == key:
            return k.env
    raise KeyError(key)


# ---------------------------------------------------------------------------
# Layers: file, then environment, then flags
# ---------------------------------------------------------------------------


class Defaults(Protocol):
    """Values below the file's: what the program running the loader knows (e.g. a local
    stack's endpoints). ``values`` gets the keys the file, environment and flags set, and
    returns dotted key -> value for others; ``origin`` names the layer in messages."""

    @property
    def origin(self) -> str: ...

    def values(self, configured: frozenset[str]) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class _Value:
    raw: Any
    origin: str  # "file x.toml", "env ICEFLOE_LOADER_X", "flag --x"
    layer: int


def _where(key: str, value: _Value | None) -> str:
    return f"{key} (from {value.origin})" if value is not None else key


def _unknown(key: str, origin: str, removed: Mapping[str, str] | None) -> ConfigError:
    if removed and key in removed:
        return ConfigError(f"{key!r} in {origin} is no longer a setting: {removed[key]}")
    return ConfigError(f"unknown setting {key!r} in {origin}")


def _flatten(
    table: Mapping[str, Any],
    prefix: str,
    known: set[str],
    origin: str,
    out: dict[str, _Value],
    removed: Mapping[str, str] | None = None,
) -> None:
    for name, value in table.items():
        key = prefix + name
        if key in known:
            out[key] = _Value(value, origin, 0)
        elif isinstance(value, dict) and any(k.startswith(key + ".") for k in known):
            _flatten(value, key + ".", known, origin, out, removed)
        else:
            raise _unknown(key, origin, removed)


def gather(
    cls: type,
    path: str | os.PathLike[str] | None,
    env: Mapping[str, str],
    flags: Mapping[str, str],
    *,
    ignore_env: frozenset[str] = frozenset(),
    defaults: Defaults | None = None,
    removed: Mapping[str, str] | None = None,
) -> dict[str, _Value]:
    """Collect raw values from a TOML file, the environment and flags, later layers winning.

    Args:
        cls: the root section.
        path: the TOML file, or ``None`` for none.
        env: the environment; every ``ICEFLOE_LOADER_*`` variable must name a setting.
        flags: dotted key -> text, from the command line.
        ignore_env: ``ICEFLOE_LOADER_*`` variables that are not settings (the file's name).
        defaults: a layer below the file, from the program that runs the loader: called with
            the keys the other layers set, it returns values for keys none of them set.
        removed: dotted keys that were settings once -> what to do instead (the message).

    Raises:
        ConfigError: an unreadable file, invalid TOML, an unknown key or variable.
    """
    by_key = {k.key: k for k in keys(cls)}
    removed = removed or {}
    merged: dict[str, _Value] = {}
    if path is not None:
        origin = f"file {os.fspath(path)}"
        try:
            with open(path, "rb") as fh:
                document = tomllib.load(fh)
        except OSError as exc:
            raise ConfigError(f"cannot read config {origin}: {exc.__class__.__name__}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"invalid TOML in {origin}: {exc}") from None
        _flatten(document, "", set(by_key), origin, merged, removed)
    by_env = {k.env: k for k in by_key.values()}
    removed_env = {ENV_PREFIX + key.upper().replace(".", "_"): key for key in removed}
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX) or name in ignore_env:
            continue
        if name in removed_env:
            raise _unknown(removed_env[name], f"env {name}", removed)
        if name not in by_env:
            raise ConfigError(f"unknown environment variable {name}")
        merged[by_env[name].key] = _Value(env[name], f"env {name}", 1)
    for key, text in flags.items():
        k = by_key.get(key)
        if k is None or not k.on_command_line:
            raise ConfigError(f"command line: no flag for {key!r}")
        merged[key] = _Value(text, f"flag {k.flag}", 2)
    if defaults is not None:
        for key, value in defaults.values(frozenset(merged)).items():
            if key not in by_key:
                raise ConfigError(f"unknown setting {key!r} in {defaults.origin}")
            merged.setdefault(key, _Value(value, defaults.origin, -1))
    return merged


_UNSET = object()


def _parse(key: str, codec: Codec, value: _Value | None) -> Any:
    if value is None:
        return _UNSET
    try:
        return codec.parse(value.raw)
    except ConfigError as exc:
        raise ConfigError(f"{_where(key, value)}: {exc}") from None
    except ValueError:
        raise ConfigError(f"{_where(key, value)} must be {codec.expected}") from None


def _secret(key: str, values: Mapping[str, _Value]) -> Any:
    direct, from_file = values.get(key), values.get(key + "_file")
    if direct is not None and from_file is not None and direct.layer == from_file.layer:
        raise ConfigError(f"set either {key} or {key}_file, not both ({direct.origin})")
    if from_file is not None and (direct is None or from_file.layer > direct.layer):
        return Secret.from_file(_parse(key + "_file", STRING, from_file))
    return _parse(key, _SECRET, direct)


def build(cls: type, values: Mapping[str, _Value], prefix: str = "") -> Any:
    """Validate gathered values into section ``cls`` (recursively); defaults fill the rest.

    Raises:
        ConfigError: the first problem found, naming the setting and where its value came
            from (secret values are never included).
    """
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        key = prefix + f.name
        if _SECTION in f.metadata:
            given = any(k.startswith(key + ".") for k in values)
            if given or f.default_factory is dataclasses.MISSING:
                kwargs[f.name] = build(f.metadata[_SECTION], values, key + ".")
            continue
        s: Setting | None = f.metadata.get(_SETTING)
        if s is None:
            continue
        value = _secret(key, values) if s.secret else _parse(key, s.codec, values.get(key))
        if s.unset is not dataclasses.MISSING and value is not _UNSET and value == s.unset:
            value = None
        if s.required and (value is _UNSET or value in ("", ())):
            k = Key(key, s, f.default)
            raise ConfigError(f"{key} is required (file, {k.env} or {k.flag})")
        if value is not _UNSET:
            kwargs[f.name] = value
    try:
        return cls(**kwargs)
    except Invalid as exc:
        key = prefix + exc.field
        raise ConfigError(f"{_where(key, values.get(key))} {exc.message}") from None
    except ConfigError as exc:
        if not prefix:
            raise
        raise ConfigError(f"{prefix.rstrip('.')}: {exc}") from None


def from_mapping(cls: type, table: Mapping[str, Any], origin: str) -> Any:
    """Build section ``cls`` from a TOML-shaped mapping (e.g. a table of another file).

    Args:
        cls: the section.
        table: its keys and values, as they would appear in the loader's TOML file.
        origin: where the mapping came from, for messages.

    Raises:
        ConfigError: an unknown key or an invalid value.
    """
    values: dict[str, _Value] = {}
    _flatten(table, "", {k.key for k in keys(cls)}, origin, values)
    return build(cls, values)


def parse(cls: type, key: str, raw: Any, origin: str) -> Any:
    """One setting's value from a TOML value or a flag's text, as ``load_config`` reads it
    (its ``unset`` spelling gives ``None``); the section's checks are not run.

    Args:
        cls: the root section.
        key: the dotted key (not a secret's).
        raw: the value.
        origin: where it comes from, for messages.

    Returns:
        The field's value.

    Raises:
        KeyError: no such setting, or a secret.
        ConfigError: a value of the wrong shape.
    """
    for k in keys(cls):
        if k.key == key and not k.setting.secret:
            value = _parse(key, k.setting.codec, _Value(raw, origin, 0))
            unset = k.setting.unset
            return None if unset is not dataclasses.MISSING and value == unset else value
    raise KeyError(key)


def override(config: Any, values: Mapping[str, Any], origin: str) -> Any:
    """``config`` with further settings layered over it, read as a file or a flag would be.

    What a program running the loader adds to a configuration it built (a scenario's extra
    settings, the flags of ``icefloe loader start``): each value goes through its setting's
    codec and the sections' checks, as if it came after ``config`` in ``load_config``.

    Args:
        config: a root section (a ``LoaderConfig``).
        values: dotted key (or a section's table) -> a TOML value or a flag's text, e.g.
            ``{"spark.jit": "tiered"}``, ``{"spark": {"jit": "tiered"}}``,
            ``{"trigger_interval": "2s"}``, ``{"catalog.s3_secret_key_file": "/run/s3"}``.
        origin: where the values come from, for messages.

    Returns:
        The new configuration (``config`` itself is frozen).

    Raises:
        ConfigError: an unknown key, or a value the setting refuses (naming it and
            ``origin``; never a secret's value).
    """
    cls = type(config)
    known = {k.key for k in keys(cls)}
    merged: dict[str, _Value] = {}
    _flatten(tomllib.loads(to_toml(config)), "", known, "the configuration", merged)
    for k in keys(cls):  # a secret given as its value is not in the file
        if k.setting.secret and not k.from_file:
            secret = config
            for part in k.key.split("."):
                secret = getattr(secret, part)
            if secret is not None and secret.path is None:
                merged[k.key] = _Value(secret.reveal(), "the configuration", 0)
    given: dict[str, _Value] = {}
    _flatten(values, "", known, origin, given)
    merged.update({key: _Value(v.raw, v.origin, 1) for key, v in given.items()})
    return build(cls, merged)


# ---------------------------------------------------------------------------
# Flags and TOML
# ---------------------------------------------------------------------------


def add_flags(parser: argparse.ArgumentParser | Any, cls: type) -> None:
    """Add one flag per setting of ``cls`` (not secrets' values), each with its help line.

    The flag's value lands in the namespace under the dotted key; see ``flag_values``.
    """
    for k in keys(cls):
        if k.on_command_line:
            metavar = "FILE" if k.from_file else k.setting.codec.metavar
            parser.add_argument(k.flag, dest=k.key, default=None, metavar=metavar, help=k.help)


def flag_values(cls: type, args: argparse.Namespace) -> dict[str, str]:
    """The flags given on the command line: dotted key -> text."""
    out = {}
    for k in keys(cls):
        value = getattr(args, k.key, None) if k.on_command_line else None
        if value is not None:
            out[k.key] = value
    return out


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _toml_string(text: str) -> str:
    # JSON's escapes are TOML's, but TOML also wants DEL escaped, and \uXXXX of a surrogate
    # half (what ensure_ascii makes of characters beyond the BMP) is invalid TOML.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml_key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else _toml_string(name)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return _toml_string(str(value))


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, tuple | list | dict) and not value)


def to_toml(config: Any) -> str:
    """The TOML text that loads back into ``config``, every setting exactly.

    A setting that is unset (``None``) or empty where its default is the same is left out; an
    unset setting with another default is written as its ``unset`` spelling, an empty one as
    an empty list or table. A secret is written as ``<key>_file`` when it was read from a
    file, and left out otherwise: a secret value is never written.

    Args:
        config: a root section.

    Returns:
        The TOML text.

    Raises:
        ValueError: a setting is ``None``, its default is not, and it declares no ``unset``
            spelling (the file would load back with the default).
    """
    out: list[str] = []

    def emit(obj: Any, name: str) -> None:
        lines: list[str] = []
        tables: list[tuple[str, Any]] = []
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if _SECTION in f.metadata:
                tables.append((f"{name}.{f.name}" if name else f.name, value))
                continue
            s: Setting | None = f.metadata.get(_SETTING)
            if s is None:
                continue
            if s.secret:
                if value is not None and value.path is not None:
                    lines.append(f"{_toml_key(f.name + '_file')} = {_toml_value(value.path)}")
                continue
            if value is None and f.default is not None and s.unset is dataclasses.MISSING:
                where = f"{name}.{f.name}" if name else f.name
                raise ValueError(f"{where} is None but defaults to {f.default!r}: no spelling")
            if _empty(value) and (f.default is dataclasses.MISSING or _empty(f.default)):
                continue
            dumped = s.codec.dump(s.unset if value is None else value)
            if isinstance(dumped, dict) and dumped:
                tables.append((f"{name}.{f.name}" if name else f.name, dumped))
            else:
                lines.append(f"{_toml_key(f.name)} = {_toml_value(dumped)}")
        if name and lines:
            out.append(f"[{name}]")
        out.extend(lines)
        if lines:
            out.append("")
        for sub, value in tables:
            if isinstance(value, dict):
                if value:
                    out.append(f"[{sub}]")
                    out.extend(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items())
                    out.append("")
            else:
                emit(value, sub)

    emit(config, "")
    return "\n".join(out)
