"""Secret: a value that never shows itself when printed, logged or formatted.

The loader's passwords and keys, and the harness's generated object-store credentials, are all
held as ``Secret``; ``reveal()`` is called only where a client needs the text.
"""

from __future__ import annotations

import hmac
import os
from pathlib import Path
from typing import Any

from icefloe.loader.errors import ConfigError

__all__ = ["REDACTED", "Secret"]

REDACTED = "********"


class Secret:
    """A secret string that prints as ``********``.

    Args:
        value: the secret text.
        path: the file it was read from, if any (not secret: a configuration written back
            names the file instead of the value).
    """

    __slots__ = ("_value", "path")

    def __init__(self, value: str, path: str | None = None) -> None:
        self._value = value
        self.path = path

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
        return cls(text.removesuffix("\n").removesuffix("\r"), os.fspath(path))

    def reveal(self) -> str:
        """The secret text; pass it straight to the client that needs it."""
        return self._value

    def __repr__(self) -> str:
        return REDACTED

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and hmac.compare_digest(
            self._value.encode(), other._value.encode()
        )

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> tuple[Any, ...]:
        # Spark pickles the configuration to executors; keep it working.
        return (Secret, (self._value, self.path))
