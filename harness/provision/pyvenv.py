"""A Python package that pins what the kit's own virtualenv holds at other versions, installed
from PyPI by name into a virtualenv of its own in the cache (PyFlink, ministack)."""

from __future__ import annotations

import platform
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


def download_wheels(folder: Path, requirement: str, python_version: str) -> Path:
    """Fetch ``requirement`` and its dependencies from PyPI as wheels for CPython
    ``python_version`` on this machine's architecture (Linux), into ``folder``, unless they are
    there already: what an image installs with ``pip install --no-index --find-links``.

    Raises:
        subprocess.CalledProcessError: pip failed (its output is shown).
    """
    marker = folder / "downloaded.txt"
    wanted = f"{requirement} cp{python_version}"
    if marker.is_file() and marker.read_text(encoding="utf-8") == wanted:
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    machine = platform.machine()
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
         "--dest", str(folder), "--only-binary=:all:", "--implementation", "cp",
         "--python-version", python_version, "--platform", f"manylinux2014_{machine}",
         "--platform", f"manylinux_2_17_{machine}", "--platform", f"manylinux_2_28_{machine}",
         requirement],
        check=True,
    )  # fmt: skip
    marker.write_text(wanted, encoding="utf-8")
    return folder
