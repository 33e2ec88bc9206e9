"""A runtime without jdk.incubator.vector gets a Java home Spark's launcher can start."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from icefloe.harness.provision import jdk


def _runtime(root: Path, modules: str) -> Path:
    """A fake Java runtime whose ``java`` prints its arguments, one per line."""
    home = root / "java-runtime"
    (home / "bin").mkdir(parents=True)
    (home / "lib").mkdir()
    (home / "release").write_text(f'JAVA_VERSION="21.0.8"\nMODULES="{modules}"\n')
    java = home / "bin" / "java"
    java.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    java.chmod(0o755)
    (home / "bin" / "jcmd").write_text("")
    return home


def _chosen(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    found = jdk.read_jdk(home)
    assert found is not None
    monkeypatch.setattr(jdk, "choose", lambda service, cache: found)


def test_a_runtime_without_the_module_gets_a_launcher_that_leaves_it_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = _runtime(tmp_path, "java.base java.sql jdk.unsupported")
    _chosen(monkeypatch, runtime)
    home = jdk.spark_java_home(tmp_path)
    assert home != runtime.resolve()
    args = ["-Xmx1g", jdk.VECTOR_MODULE_OPTION, "-cp", "a b", "Main", "it's"]
    done = subprocess.run(
        [str(home / "bin" / "java"), *args], capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines() == ["-Xmx1g", "-cp", "a b", "Main", "it's"]
    assert (home / "release").resolve() == (runtime / "release").resolve()
    assert (home / "bin" / "jcmd").resolve() == (runtime / "bin" / "jcmd").resolve()
    assert jdk.read_jdk(home) is not None  # Spark and the class-data archive see a Java home
    assert jdk.spark_java_home(tmp_path) == home  # made once


def test_a_runtime_with_the_module_is_used_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = _runtime(tmp_path, "java.base jdk.incubator.vector")
    _chosen(monkeypatch, runtime)
    assert jdk.spark_java_home(tmp_path) == runtime.resolve()
