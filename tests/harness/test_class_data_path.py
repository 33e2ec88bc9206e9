"""The loader's class-data archive is named after its Java and class path: what changes either
gets a new archive, and old archives go when a new one is about to be made."""

from __future__ import annotations

import os
import time
from pathlib import Path

from icefloe.harness.provision.jdk import make_base_class_data
from icefloe.harness.provision.layout import CLASS_DATA_KEEP_S, Layout


def test_the_name_follows_the_java_and_the_jars(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "cache")
    java = tmp_path / "jdk"
    java.mkdir()
    (java / "release").write_text('JAVA_VERSION="17.0.15"\n')
    jar = tmp_path / "a.jar"
    jar.write_bytes(b"one")
    first = layout.loader_class_data(str(java), [str(jar)])
    assert first == layout.loader_class_data(str(java), [str(jar)])
    assert first.parent == layout.class_data and first.suffix == ".jsa"

    jar.write_bytes(b"other")  # a rebuilt jar
    rebuilt = layout.loader_class_data(str(java), [str(jar)])
    assert rebuilt != first
    (java / "release").write_text('JAVA_VERSION="17.0.16"\n')  # another JDK build
    assert layout.loader_class_data(str(java), [str(jar)]) != rebuilt


def test_old_archives_go_when_a_new_one_is_made(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "cache")
    layout.class_data.mkdir(parents=True)
    old, recent = layout.class_data / "loader-old.jsa", layout.class_data / "loader-new.jsa"
    for path in (old, recent):
        path.write_bytes(b"x")
    past = time.time() - CLASS_DATA_KEEP_S - 60
    os.utime(old, (past, past))
    layout.loader_class_data(str(tmp_path), [])
    assert not old.exists() and recent.exists()


def test_a_jdk_without_a_base_archive_gets_one_once(tmp_path: Path) -> None:
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    (home / "lib" / "server").mkdir(parents=True)
    calls = tmp_path / "calls"
    java = home / "bin" / "java"  # stands in for the JDK's java: records the call, dumps
    java.write_text(
        f'#!/bin/sh\necho "$@" >> {calls}\n: > {home / "lib" / "server" / "classes.jsa"}\n'
    )
    java.chmod(0o755)
    make_base_class_data(home)
    make_base_class_data(home)  # there now: not made again
    assert calls.read_text().split("\n")[0].startswith("-Xshare:dump")
    assert len(calls.read_text().splitlines()) == 1
