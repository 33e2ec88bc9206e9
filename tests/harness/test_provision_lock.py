"""Two processes provisioning the same artifact at once: the second waits, then finds it there."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from icefloe.harness.provision import download as download_module
from icefloe.harness.provision import ivy
from icefloe.harness.provision.lock import held


def test_a_held_lock_makes_the_second_holder_wait(tmp_path: Path) -> None:
    order: list[str] = []
    inside = threading.Event()

    def first() -> None:
        with held(tmp_path / "x.lock"):
            inside.set()
            time.sleep(0.3)
            order.append("first out")

    thread = threading.Thread(target=first)
    thread.start()
    inside.wait()
    with held(tmp_path / "x.lock"):
        order.append("second in")
    thread.join()
    assert order == ["first out", "second in"]


def test_a_file_two_callers_download_at_once_is_fetched_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fetched: list[Path] = []

    def slow_fetch(url: str, dest: Path, sha1_url: str | None) -> None:
        fetched.append(dest)
        time.sleep(0.3)
        dest.write_text("jar")

    monkeypatch.setattr(download_module, "_fetch", slow_fetch)
    dest = tmp_path / "downloads" / "a.jar"
    callers = [
        threading.Thread(target=download_module.download, args=("https://x/a.jar", dest))
        for _ in range(2)
    ]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert fetched == [dest] and dest.read_text() == "jar"


def test_a_folder_resolved_while_waiting_is_not_resolved_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs: list[str] = []

    def slow_resolve(*args: object) -> list[Path]:
        dest = args[4]
        assert isinstance(dest, Path)
        runs.append(dest.name)
        time.sleep(0.3)
        dest.mkdir()
        (dest / "a.jar").write_text("jar")
        return [dest / "a.jar"]

    monkeypatch.setattr(ivy, "_resolve", slow_resolve)
    dest = tmp_path / "lib"
    results: list[list[Path]] = []
    callers = [
        threading.Thread(
            target=lambda: results.append(ivy.resolve(Path("java"), Path("ivy.jar"), "n", [], dest))
        )
        for _ in range(2)
    ]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert runs == ["lib"] and results == [[dest / "a.jar"]] * 2
