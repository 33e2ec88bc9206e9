"""A Python package that pins what the kit's own virtualenv holds at other versions, installed
from PyPI by name into a virtualenv of its own in the cache (PyFlink, ministack)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path


def install(venv: Path, requirement: str) -> Path:
    """Make ``venv`` and install ``requirement`` (``name==version``) into it, unless its
    Python is there already; a half-made virtualenv is made again.

    Returns:
        The virtualenv's Python.

    Raises:
        subprocess.CalledProcessError: the virtualenv or pip failed (its output is shown).
    """
    python = venv / "bin" / "python"
    marker = venv / "installed.txt"
    if marker.is_file() and marker.read_text(encoding="utf-8") == requirement and python.is_file():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         requirement],
        check=True,
    )  # fmt: skip
    marker.write_text(requirement, encoding="utf-8")
    return python
