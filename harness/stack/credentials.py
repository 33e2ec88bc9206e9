"""Generated credentials for the stack's object store, kept in the run directory.

They are made once per run directory (file mode 0600) and handed to services through their
environment, never on a command line. The secret key is a `loader.secret.Secret`, which never
shows its value when printed or logged.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from icefloe.loader.secret import Secret


@dataclass(frozen=True)
class S3Credentials:
    """Access key and secret key of the object store's root user."""

    access_key: str
    secret_key: Secret


def load_or_create(run_dir: Path) -> S3Credentials:
    """Read the run directory's credentials, generating them on first use."""
    path = run_dir / "secrets.json"
    if not path.exists():
        run_dir.mkdir(parents=True, exist_ok=True)
        data = {
            "s3_access_key": "icefloe-" + secrets.token_hex(6),
            "s3_secret_key": secrets.token_urlsafe(30),
        }
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
    data = json.loads(path.read_text())
    return S3Credentials(data["s3_access_key"], Secret(data["s3_secret_key"]))
