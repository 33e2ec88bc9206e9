"""Resolve Maven artifacts with their transitive dependencies, using Apache Ivy.

Ivy is one jar on Maven Central with no dependencies of its own, so a JRE is all it needs. It
reads POMs the way Spark's `--packages` does and copies every jar of a bundle into one folder.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from xml.sax.saxutils import quoteattr

from icefloe.harness.console import say
from icefloe.harness.provision import versions
from icefloe.harness.provision.lock import held
from icefloe.harness.provision.maven_proxy import relay

_SETTINGS = """<ivysettings>
  <settings defaultResolver="central"/>
  <resolvers>
    <ibiblio name="central" m2compatible="true" root={root}/>
  </resolvers>
</ivysettings>
"""


class ResolveError(RuntimeError):
    """Ivy could not resolve a bundle."""


def _exclude(indent: str, group: str, module: str) -> str:
    return f"{indent}<exclude org={quoteattr(group)} module={quoteattr(module)}/>"


def _dependency(a: versions.MavenArtifact) -> str:
    head = (
        f"    <dependency org={quoteattr(a.group)} name={quoteattr(a.artifact)} "
        f'rev={quoteattr(a.version)} conf="default->default"'
    )
    if not a.excludes:
        return head + "/>"
    inner = "\n".join(_exclude("      ", g, m) for g, m in a.excludes)
    return f"{head}>\n{inner}\n    </dependency>"


def module_xml(
    name: str,
    artifacts: Sequence[versions.MavenArtifact],
    overrides: Sequence[versions.MavenArtifact] = (),
    excludes: Sequence[tuple[str, str]] = (),
) -> str:
    """An ivy.xml asking for `artifacts` with their runtime dependencies.

    Each of `overrides` replaces the version any POM of the bundle asks for that module. An
    artifact's own `excludes` leave modules out of its dependencies only (Gradle's `exclude` on
    one dependency); `excludes` here leave them out of the whole bundle.
    """
    deps = "\n".join(
        [_dependency(a) for a in artifacts]
        + [_exclude("    ", g, m) for g, m in excludes]
        + [
            f"    <override org={quoteattr(o.group)} module={quoteattr(o.artifact)} "
            f"rev={quoteattr(o.version)}/>"
            for o in overrides
        ]
    )
    return (
        '<ivy-module version="2.0">\n'
        f'  <info organisation="icefloe" module={quoteattr(name)}/>\n'
        f"  <dependencies>\n{deps}\n  </dependencies>\n</ivy-module>\n"
    )


def resolve(
    java: Path,
    ivy_jar: Path,
    name: str,
    artifacts: Sequence[versions.MavenArtifact],
    dest: Path,
    overrides: Sequence[versions.MavenArtifact] = (),
    excludes: Sequence[tuple[str, str]] = (),
) -> list[Path]:
    """Copy `artifacts` and their dependencies into `dest`, with `overrides` pinned and
    `excludes` (group, module) left out of the whole bundle.

    Returns:
        The jars in dest.

    Raises:
        ResolveError: Ivy failed; its output is in the message.
    """
    # One Ivy at a time per folder: they share its Ivy cache (``.ivy-cache``) and staging.
    with held(dest.parent / ".ivy.lock"):
        if dest.is_dir():  # resolved by another process while this one waited
            return sorted(dest.glob("*.jar"))
        return _resolve(java, ivy_jar, name, artifacts, dest, overrides, excludes)


def _resolve(
    java: Path,
    ivy_jar: Path,
    name: str,
    artifacts: Sequence[versions.MavenArtifact],
    dest: Path,
    overrides: Sequence[versions.MavenArtifact],
    excludes: Sequence[tuple[str, str]],
) -> list[Path]:
    work = dest.parent / f".{dest.name}-ivy"
    work.mkdir(parents=True, exist_ok=True)
    (work / "ivy.xml").write_text(module_xml(name, artifacts, overrides, excludes))
    staging = dest.with_name(dest.name + ".part")
    cmd = [
        str(java), "-jar", str(ivy_jar),
        "-settings", str(work / "ivysettings.xml"),
        "-ivy", str(work / "ivy.xml"),
        "-cache", str(dest.parent / ".ivy-cache"),
        "-confs", "default",
        "-retrieve", str(staging / "[artifact]-[revision](-[classifier]).[ext]"),
    ]  # fmt: skip
    say(f"resolve {name}: " + ", ".join(a.coordinates for a in artifacts))
    with relay() as root:
        (work / "ivysettings.xml").write_text(_SETTINGS.format(root=quoteattr(root + "/")))
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-30:])
        raise ResolveError(f"Ivy could not resolve {name}:\n{tail}")
    jars = sorted(staging.glob("*.jar"))
    if not jars:
        raise ResolveError(f"Ivy resolved nothing for {name}")
    staging.rename(dest)
    say(f"resolve {name}: {len(jars)} jars")
    return sorted(dest.glob("*.jar"))
