"""A service's operating-system process: start detached, stop, kill -9, pause, resume, measure.

The pid and the process's start time are kept in the service's state directory, so any later
`icefloe` command (or a test) can control a process that an earlier command started, and a
recycled pid is never mistaken for the service.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import psutil

from icefloe.harness.waiting import poll

_MIN_OPEN_FILES = 65536  # Trino refuses to start below 4096; Kafka wants many too


class _DetachedPopen(subprocess.Popen[bytes]):
    """A service process meant to outlive the command that started it (`icefloe up` exits).

    Popen warns when a handle is collected while its child runs; for a detached service that
    is the intended state, so the warning is skipped while the child is alive.
    """

    def __del__(self) -> None:
        if self.returncode is None and self.poll() is None:
            return
        super().__del__()


# Children started by this Python process, kept so they can be reaped (and are not reported as
# leaked when a handle would otherwise be garbage-collected while the service runs on).
_CHILDREN: dict[int, _DetachedPopen] = {}


def _raise_open_files_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = _MIN_OPEN_FILES if hard == resource.RLIM_INFINITY else min(_MIN_OPEN_FILES, hard)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


LEFTOVER_WAIT_S = 10.0
"""How long the rest of a process group may outlive its stopped leader before it is killed."""


def _kill_leftovers(pgid: int) -> None:
    """SIGKILL what is left of process group `pgid` after `LEFTOVER_WAIT_S` seconds."""
    deadline = time.monotonic() + LEFTOVER_WAIT_S
    try:
        while time.monotonic() < deadline:
            os.killpg(pgid, 0)  # raises once the group is empty
            time.sleep(0.1)
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return


class ManagedProcess:
    """One long-running process of a service, tracked through a pid file."""

    def __init__(self, name: str, state_dir: Path) -> None:
        self.name = name
        self.state_dir = state_dir
        self.pid_file = state_dir / "pid.json"
        self.log_file = state_dir / f"{name}.log"
        self._child: _DetachedPopen | None = None

    def start(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> int:
        """Start the process in its own session, output appended to the log file.

        Secrets reach the process through `env`, never through argv, so `ps` does not show them.
        """
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as log:
            log.write(f"\n--- icefloe: starting {self.name} at {time.ctime()} ---\n".encode())
            log.flush()
            proc = _DetachedPopen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=dict(env),
                cwd=cwd,
                start_new_session=True,
                preexec_fn=_raise_open_files_limit,
            )
        _CHILDREN[proc.pid] = proc
        self._child = proc
        created = psutil.Process(proc.pid).create_time()
        self.pid_file.write_text(json.dumps({"pid": proc.pid, "created": created}))
        return proc.pid

    def process(self) -> psutil.Process | None:
        """The live process, or None if it is not running (or the pid now belongs to another)."""
        try:
            record = json.loads(self.pid_file.read_text())
            proc = psutil.Process(record["pid"])
            if abs(proc.create_time() - record["created"]) > 1:
                return None
            if proc.status() == psutil.STATUS_ZOMBIE:
                self._reap(proc.pid)
                return None
            return proc
        except (FileNotFoundError, json.JSONDecodeError, KeyError, psutil.Error):
            return None

    @property
    def started_pid(self) -> int | None:
        """The pid of the last process this object started (None if it started none)."""
        return self._child.pid if self._child is not None else None

    def returncode(self) -> int | None:
        """The exit code of the last process this object started; None while it runs."""
        if self._child is None:
            return None
        code = self._child.poll()
        if code is None and not self.is_running():
            # poll() answers None while another thread is reaping the same child.
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = self._child.wait(timeout=5)
        return code

    @property
    def pid(self) -> int | None:
        proc = self.process()
        return proc.pid if proc else None

    def is_running(self) -> bool:
        return self.process() is not None

    def is_paused(self) -> bool:
        proc = self.process()
        try:
            return proc is not None and proc.status() == psutil.STATUS_STOPPED
        except psutil.Error:
            return False

    def _signal_group(self, sig: signal.Signals) -> bool:
        proc = self.process()
        if proc is None:
            return False
        try:
            os.killpg(os.getpgid(proc.pid), sig)
        except ProcessLookupError:
            return False
        return True

    @staticmethod
    def _reap(pid: int) -> None:
        # Only our own children can be reaped; processes started by an earlier command are
        # reaped by init.
        child = _CHILDREN.get(pid)
        if child is not None:
            if child.poll() is not None:
                del _CHILDREN[pid]
            return
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)

    def wait_exit(self, timeout: float) -> bool:
        """Wait until the process is gone; True if it went within `timeout` seconds."""
        return poll(lambda: self.process() is None, timeout_s=timeout, every_s=0.1)

    def stop(self, timeout: float = 30.0, *, leader_only: bool = False) -> None:
        """Stop gracefully (SIGTERM), then by force (SIGKILL) after `timeout` seconds.

        Args:
            timeout: how long the process may take to stop before it is killed.
            leader_only: send the SIGTERM to the group's leader alone, for a process that stops
                its own children (a PySpark driver stops its JVM; a JVM that gets a SIGTERM of
                its own quits under the driver's query). Whatever of the group outlives the
                leader by `LEFTOVER_WAIT_S` is killed.
        """
        self._signal_group(signal.SIGCONT)  # a paused process cannot handle SIGTERM
        proc = self.process()
        if leader_only and proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGTERM)
            if not self.wait_exit(timeout):
                self.kill()
            _kill_leftovers(proc.pid)
        elif self._signal_group(signal.SIGTERM) and not self.wait_exit(timeout):
            self.kill()
        self.pid_file.unlink(missing_ok=True)

    def kill(self) -> None:
        """kill -9 the whole process group, as a crash would."""
        self._signal_group(signal.SIGKILL)
        self.wait_exit(10)

    def pause(self) -> None:
        """Freeze the process (SIGSTOP): it holds its ports but answers nothing."""
        if self._signal_group(signal.SIGSTOP):
            poll(self.is_paused, timeout_s=5.0, every_s=0.02)  # signals arrive asynchronously

    def resume(self) -> None:
        """Thaw a paused process (SIGCONT)."""
        if self._signal_group(signal.SIGCONT):
            poll(lambda: not self.is_paused(), timeout_s=5.0, every_s=0.02)

    def rss_bytes(self) -> int:
        """Resident memory of the process and its children."""
        proc = self.process()
        if proc is None:
            return 0
        total = 0
        for p in [proc, *proc.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except psutil.Error:
                continue
        return total

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the log file."""
        try:
            with self.log_file.open("rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 64 * 1024))
                text = f.read().decode(errors="replace")
        except FileNotFoundError:
            return "(no log yet)"
        return "\n".join(text.splitlines()[-lines:])
