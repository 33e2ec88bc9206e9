"""Where icefloe keeps downloads (the cache) and running state (the run directory).

Both live outside the repository. The cache holds what provisioning fetched and is shared by
every run; the run directory holds one stack's data, logs, pids and generated credentials.
"""

from __future__ import annotations

import os
from pathlib import Path

from harness import keys


def cache_dir() -> Path:
    """Return the provisioning cache: $ICEFLOE_CACHE, else the user's cache directory."""
    explicit = os.environ.get(keys.ENV_CACHE)
    if explicit:
        return Path(explicit).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser().resolve() / "icefloe"


def run_dir() -> Path:
    """Return the stack's run directory: $ICEFLOE_RUN_DIR, else the user's state directory."""
    explicit = os.environ.get(keys.ENV_RUN_DIR)
    if explicit:
        return Path(explicit).expanduser().resolve()
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base).expanduser().resolve() / "icefloe" / "run"
