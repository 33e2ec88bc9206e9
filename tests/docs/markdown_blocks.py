"""The shell blocks of Markdown files, and a runner that runs them as a reader would.

A block is a fenced ```bash (or sh, shell) block. An HTML comment on the line before its fence
says how the tests treat it (invisible when the Markdown is rendered):

    <!-- doc-test: skip REASON -->   not run by the tests (a 60-minute soak, a container
                                     set-up); the test lists it, with the reason, as skipped
    <!-- doc-test: background -->    a long-running command (the loader in the foreground):
                                     started in the background, stopped (SIGTERM) once every
                                     later block of the file has run

Every other block runs with `bash -e -o pipefail` from the repository's folder, with the
virtualenv's `bin` first on PATH, so `icefloe ...` and `.venv/bin/icefloe ...` both work. A
block fails when any of its commands fails.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_FENCE = re.compile(r"^```(bash|sh|shell)\s*$")
_MARK = re.compile(r"^<!--\s*doc-test:\s*(skip|background)\b\s*(.*?)\s*-->\s*$")
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
"""The Markdown files whose shell blocks `tests/docs` runs, in this order."""
WORKSHOP = sorted((ROOT / "docs" / "workshop").glob("[0-9]*.md"))
"""The workshop's modules, in order; `tests/workshop` runs their blocks with their checks."""
FILES_OF_THE_REPO = [*DOCS, *sorted((ROOT / "docs" / "workshop").glob("*.md"))]


@dataclass(frozen=True)
class Block:
    """One shell block of a Markdown file.

    Attributes:
        path: the file.
        line: the line of its opening fence (1-based).
        text: the commands.
        mode: ``run``, ``skip`` or ``background``.
        reason: why it is skipped.
    """

    path: Path
    line: int
    text: str
    mode: str = "run"
    reason: str = ""

    @property
    def name(self) -> str:
        """``file:line``, relative to the repository."""
        try:
            where = self.path.relative_to(ROOT)
        except ValueError:
            where = self.path
        return f"{where}:{self.line}"

    @property
    def first_command(self) -> str:
        return next((line.strip() for line in self.text.splitlines() if line.strip()), "")


def blocks(path: Path) -> list[Block]:
    """The shell blocks of one Markdown file, in order.

    Raises:
        ValueError: a doc-test mark not followed by a shell block, or a skip with no reason.
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    mark: tuple[str, str, int] | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        marked = _MARK.match(line.strip())
        if marked:
            mark = (marked[1], marked[2], i + 1)
            i += 1
            continue
        fence = _FENCE.match(line.strip())
        if fence:
            end = i + 1
            while end < len(lines) and not lines[end].strip().startswith("```"):
                end += 1
            mode, reason = (mark[0], mark[1]) if mark else ("run", "")
            if mode == "skip" and not reason:
                raise ValueError(f"{path}:{i + 1}: a skipped block must say why")
            found.append(Block(path, i + 1, "\n".join(lines[i + 1 : end]) + "\n", mode, reason))
            mark = None
            i = end + 1
            continue
        if mark and line.strip():
            raise ValueError(f"{path}:{mark[2]}: a doc-test mark must come right before a fence")
        i += 1
    if mark:
        raise ValueError(f"{path}:{mark[2]}: a doc-test mark at the end of the file")
    return found


def environment(bin_dir: Path | None = None) -> dict[str, str]:
    """The environment blocks run in: this one, with a virtualenv's bin first on PATH (this
    interpreter's, unless ``bin_dir`` names another)."""
    env = dict(os.environ)
    first = bin_dir or Path(sys.executable).parent
    env["PATH"] = f"{first}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("TERM", "dumb")
    env["COLUMNS"] = "120"
    return env


@dataclass
class Outcome:
    """What running a block printed, and its exit code."""

    code: int
    output: str
    seconds: float


class Runner:
    """Runs the blocks of one file in order; background blocks are stopped by `close`.

    Args:
        log_dir: where the output of background blocks goes.
        timeout_s: the longest one block may take.
        bin_dir: the virtualenv whose commands the blocks run (default: this interpreter's).
        cwd: where the blocks start (default: the checkout).
    """

    def __init__(
        self,
        log_dir: Path,
        timeout_s: float = 900.0,
        bin_dir: Path | None = None,
        cwd: Path = ROOT,
    ) -> None:
        self.log_dir = log_dir
        self.timeout_s = timeout_s
        self.bin_dir = bin_dir
        self.cwd = cwd
        self.background: list[tuple[Block, subprocess.Popen[bytes], Path]] = []

    def run(self, block: Block) -> Outcome:
        """Run one block (a background block is started and left running)."""
        argv = ["bash", "-e", "-o", "pipefail", "-c", block.text]
        began = time.monotonic()
        if block.mode == "background":
            self.log_dir.mkdir(parents=True, exist_ok=True)
            log = self.log_dir / f"background-{len(self.background)}.log"
            with log.open("wb") as sink:
                process = subprocess.Popen(
                    argv, cwd=self.cwd, env=environment(self.bin_dir), stdout=sink,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )  # fmt: skip
            self.background.append((block, process, log))
            time.sleep(1.0)
            if process.poll() not in (None, 0):
                return Outcome(process.returncode, log.read_text(errors="replace"), 1.0)
            return Outcome(0, f"started in the background (pid {process.pid}), log {log}", 1.0)
        done = subprocess.run(
            argv,
            cwd=self.cwd,
            env=environment(self.bin_dir),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=self.timeout_s,
            check=False,
        )
        output = done.stdout.decode(errors="replace")
        return Outcome(done.returncode, output, time.monotonic() - began)

    def background_failures(self) -> list[str]:
        """Background blocks that already ended with an error, with their log's tail."""
        failures = []
        for block, process, log in self.background:
            code = process.poll()
            if code not in (None, 0):
                tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
                failures.append(f"{block.name} exited with {code}:\n{tail}")
        return failures

    def close(self) -> None:
        """Stop every background block: SIGTERM to its process group, SIGKILL to whatever of
        the group is left after 90 s (the shell goes at once, the loader in it takes longer)."""
        for _block, process, _log in self.background:
            _signal_group(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 90
        for _block, process, _log in self.background:
            while _group_alive(process) and time.monotonic() < deadline:
                time.sleep(0.5)
            _signal_group(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        self.background.clear()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def _group_alive(process: subprocess.Popen[bytes]) -> bool:
    process.poll()  # reap the shell, the group's leader, once it has gone
    try:
        os.killpg(process.pid, 0)
    except ProcessLookupError:
        return False
    return True
