"""The machine a timing ran on: the probe printed beside every timing, and a slow machine on demand.

Machines of one kind differ up to 2x from day to day, so no timing stands without the **probe**: ten
million additions in one Python thread, timed (``probe_s``, ``probe_line``). A figure is compared
only with figures of the same run, and read beside its probe.

A **slow machine on demand** (``Slowdown``) makes a fast day reproduce a slow one. A slow day on a
shared host is each CPU running only part of the time, whatever runs on it; so ``Slowdown(F)``
leaves each CPU to the machine for the fraction ``F`` of every 10 ms and takes the rest with one
busy thread per CPU, pinned to it, real-time (``SCHED_FIFO``) and throttled by the kernel to
``1 - F`` of each period through a cgroup of its own (cgroup v1's ``cpu.rt_runtime_us``). Every
process on the machine, the system under test, the stack and the harness alike, then runs at
about ``F`` of its speed on each CPU, one thread or many: with F = 0.37 the probe takes about
2.7 times as long, alone or beside a second copy. A CFS quota (``cpu.cfs_quota_us``) would not do:
it caps a group's total and lets one thread run at full speed.

Stdlib only: ``.ci/run`` runs it on the machine's Python before the virtualenv exists.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

PROBE_ADDITIONS = 10_000_000
CGROUP_CPU = Path("/sys/fs/cgroup/cpu")
"""cgroup v1's cpu controller, where real-time throttling per group lives."""
PERIOD_US = 10_000
"""The throttling period: a CPU is taken for ``1 - F`` of every 10 ms, in stalls as a host's are."""

# The busy thread: it spins until its parent is gone, so a killed harness leaves no CPU taken.
_HOG = (
    "import os, sys\nparent = int(sys.argv[1])\nwhile os.getppid() == parent:\n"
    "    for _ in range(100_000):\n        pass\n"
)


# At module level, as ``python3 -c`` runs it (names looked up as globals): the form whose times the
# docs and issues quote (0.83 s on a fast day, 1.45-1.65 s on a slow one). Inside a function the
# same loop takes about half as long.
_PROBE = compile(
    f"import time\nbegan = time.perf_counter()\ntotal = 0\nfor i in range({PROBE_ADDITIONS}):\n"
    "    total += i\nseconds = time.perf_counter() - began\n",
    "<probe>",
    "exec",
)


def probe_s() -> float:
    """Time ten million additions in this Python thread, in seconds."""
    scope: dict[str, float] = {}
    exec(_PROBE, scope)
    return scope["seconds"]


def probe_line(label: str = "probe") -> str:
    """The probe as one line to print beside a timing: ``probe: 10,000,000 Python additions in
    0.52 s``."""
    return f"{label}: {PROBE_ADDITIONS:,} Python additions in {probe_s():.2f} s"


class SlowdownUnavailable(RuntimeError):
    """This machine cannot be slowed this way (no cgroup v1 cpu controller, not root, ...)."""


class Slowdown:
    """Each CPU left to the machine for ``fraction`` of its time, the rest taken (see above).

    Use as a context manager; ``fraction`` 1.0 takes nothing and starts nothing.

    Raises:
        ValueError: ``fraction`` outside (0, 1].
        SlowdownUnavailable: the machine has no way to do it, with the reason.
    """

    def __init__(self, fraction: float, *, cgroup_root: Path = CGROUP_CPU) -> None:
        if not 0.0 < fraction <= 1.0:
            raise ValueError(f"the share of each CPU left must be in (0, 1], not {fraction}")
        self.fraction = fraction
        self.group = cgroup_root / f"icefloe-steal-{os.getpid()}"
        self._root = cgroup_root
        self._hogs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Slowdown:
        if self.fraction >= 1.0:
            return self
        if not (self._root / "cpu.rt_runtime_us").is_file():
            raise SlowdownUnavailable(
                f"no cgroup v1 cpu controller with real-time group scheduling at {self._root}"
            )
        try:
            self.group.mkdir()
            (self.group / "cpu.rt_period_us").write_text(str(PERIOD_US))
            (self.group / "cpu.rt_runtime_us").write_text(str(self.taken_us))
        except OSError as exc:
            self._remove_group()
            raise SlowdownUnavailable(f"cannot make {self.group}: {exc}") from exc
        try:
            for cpu in sorted(os.sched_getaffinity(0)):
                self._start_hog(cpu)
        except (OSError, PermissionError) as exc:
            self.__exit__()
            raise SlowdownUnavailable(f"cannot run a real-time thread: {exc}") from exc
        return self

    @property
    def taken_us(self) -> int:
        """Microseconds of every period taken from each CPU."""
        return round((1.0 - self.fraction) * PERIOD_US)

    def _start_hog(self, cpu: int) -> None:
        hog = subprocess.Popen([sys.executable, "-c", _HOG, str(os.getpid())])
        self._hogs.append(hog)
        os.sched_setaffinity(hog.pid, {cpu})
        (self.group / "cgroup.procs").write_text(str(hog.pid))
        os.sched_setscheduler(hog.pid, os.SCHED_FIFO, os.sched_param(1))

    def __exit__(self, *_exc: object) -> None:
        for hog in self._hogs:
            hog.kill()
            hog.wait()
        self._hogs.clear()
        self._remove_group()

    def _remove_group(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.group.rmdir()

    def describe(self) -> str:
        """One line: what was taken, for a report's header."""
        if self.fraction >= 1.0:
            return "no CPU quota (each CPU wholly the machine's)"
        return (
            f"CPU quota {self.fraction:.2f}: each CPU left for {self.fraction:.0%} of every "
            f"{PERIOD_US // 1000} ms (a throttled real-time thread per CPU takes the rest)"
        )


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m icefloe.harness.machine", description=__doc__)
    sub = parser.add_subparsers(dest="verb", required=True)
    sub.add_parser("probe", help="print the probe")
    slow = sub.add_parser(
        "slow", help="run a command with each CPU left for a fraction of its time"
    )
    slow.add_argument("--cpu-quota", type=float, required=True, metavar="F")
    slow.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.verb == "probe":
        print(probe_line())
        return 0
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("slow: no command given")
    try:
        with Slowdown(args.cpu_quota) as slowdown:
            print(f"{slowdown.describe()}; {probe_line()}", flush=True)
            child = subprocess.Popen(command)
            signal.signal(signal.SIGTERM, lambda *_: child.terminate())
            code = child.wait()
            print(f"{slowdown.describe()}; {probe_line('probe at the end')}", flush=True)
            return code
    except SlowdownUnavailable as exc:
        print(f"cannot slow this machine: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
