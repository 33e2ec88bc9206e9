"""Where the kit's own files are, installed or in a checkout: one place, read as package data.

The wheel carries what a run needs besides code (the built-in scenarios and hostile inputs, the
container images' build files, the example loader) as data of the ``icefloe`` package. In a
checkout, ``icefloe/scenarios``, ``icefloe/containers`` and ``icefloe/examples`` are links to the
top-level folders of those names, so an editable install and a wheel read the same files through
`kit_file`. No other module computes a path from where its own source file lies
(tests/test_resources.py fails on a new one).

`checkout` is the one exception, and it says so: the git checkout the kit runs from when it is
an editable install, for what only a contributor's checkout has (its commit, its workflows); it
is None for an installed wheel, even one installed inside a user's own git repository.
"""

from __future__ import annotations

import subprocess
from importlib import resources
from pathlib import Path

PACKAGE = "icefloe"


def kit_file(*parts: str) -> Path:
    """The kit's file or folder ``parts`` (e.g. ``"scenarios"``), as a real path on disk.

    The kit runs from files on disk (its scenarios are read, its containers' folders are build
    contexts), so a zipped install is not supported.
    """
    return Path(str(resources.files(PACKAGE).joinpath(*parts))).resolve()


def importable_from() -> Path:
    """The ``sys.path`` entry that ``icefloe`` was imported from (site-packages or a checkout).

    A child process on another Python (the machine's, before the virtualenv exists) imports the
    kit with this folder on its ``PYTHONPATH``.
    """
    return Path(str(resources.files(PACKAGE))).resolve().parent


def checkout() -> Path | None:
    """The kit's own git checkout when it runs from one (an editable install), else None.

    A checkout is the folder above the ``icefloe`` package holding a ``pyproject.toml`` of the
    project ``icefloe`` and a ``.git``: site-packages has neither, whatever repository the
    virtualenv sits in.
    """
    root = importable_from()
    project = root / "pyproject.toml"
    if not (root / ".git").exists() or not project.is_file():
        return None
    if 'name = "icefloe"' not in project.read_text(encoding="utf-8"):
        return None
    return root


def commit(dirty: bool = True) -> str | None:
    """The kit's commit (``git describe --always``, ``-dirty`` when asked and it is), or None.

    None when the kit is not a checkout (an installed wheel) or git cannot tell.
    """
    root = checkout()
    if root is None:
        return None
    command = ["git", "-C", str(root), "describe", "--always", *(["--dirty"] if dirty else [])]
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None
