"""A wheel of this checkout, built as a user's ``pip install`` builds it, for the tests that run
the kit as installed rather than from the checkout."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import icefloe

CHECKOUT = Path(icefloe.__file__).resolve().parents[1]


def _copy_of_the_checkout(target: Path) -> Path:
    """The checkout's files (committed or not, ignored ones left out), links kept as links: a
    build here cannot pick up a file list left in the checkout by an earlier build."""
    listed = (
        subprocess.run(
            ["git", "-C", str(CHECKOUT), "ls-files", "-z", "-co", "--exclude-standard"],
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        origin = CHECKOUT / name
        if not origin.exists() and not origin.is_symlink():
            continue  # deleted, not yet committed
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(origin, target / name, follow_symlinks=False)
    return target


def build_wheel(work: Path) -> Path:
    """Build the checkout's wheel under ``work`` (pip fetches setuptools from PyPI); its path."""
    source = _copy_of_the_checkout(work / "source")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(work / "dist"),
         str(source)],
        capture_output=True, text=True, check=False, cwd=work, timeout=600,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = (work / "dist").glob("icefloe-*.whl")
    return wheel
