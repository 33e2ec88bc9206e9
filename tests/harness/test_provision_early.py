"""The MinIO build first and beside the rest: the lock that makes a second build wait, the
record that places it on the critical path, and steps run beside the others (no network)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from icefloe.harness.provision import early, go, steps
from icefloe.harness.provision.layout import Layout
from icefloe.harness.provision.steps import Step, Timing, critical_path, report_lines

REPO = Path(__file__).resolve().parents[2]


def _fake_install(layout: Layout, calls: list[str], seconds: float = 0.0):  # type: ignore[no-untyped-def]
    def install(_layout: Layout, module: str, binary: Path) -> None:
        calls.append(module)
        time.sleep(seconds)
        binary.parent.mkdir(parents=True, exist_ok=True)
        binary.write_text("")

    return install


def test_a_second_build_waits_for_the_first_and_does_not_build_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = Layout(tmp_path)
    calls: list[str] = []
    monkeypatch.setattr(go, "install", _fake_install(layout, calls, seconds=0.5))
    results: list[object] = []
    first = threading.Thread(target=lambda: results.append(early.build_minio(layout, "make")))
    first.start()
    time.sleep(0.1)
    assert early.building(layout)
    began = time.monotonic()
    assert early.build_minio(layout, "provision") is None  # waited, found it built
    assert time.monotonic() - began > 0.2
    first.join()
    assert len(calls) == 1 and not early.building(layout)
    record = early.read_record(layout)
    assert record is not None and record.ok and record.by == "make"
    assert results == [record] and 0.4 < record.seconds < 5
    assert early.start(layout) is None  # built: nothing to start


def test_a_failed_build_is_recorded_and_the_next_one_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = Layout(tmp_path)

    def broken(_layout: Layout, module: str, binary: Path) -> None:
        raise RuntimeError("no network")

    monkeypatch.setattr(go, "install", broken)
    with pytest.raises(RuntimeError, match="no network"):
        early.build_minio(layout, "make")
    record = early.read_record(layout)
    assert record is not None and not record.ok
    calls: list[str] = []
    monkeypatch.setattr(go, "install", _fake_install(layout, calls))
    assert early.build_minio(layout, "provision") is not None and len(calls) == 1


def test_the_early_module_runs_on_the_standard_library_alone(tmp_path: Path) -> None:
    # What `make provision` runs before the virtualenv exists: no third-party import may load.
    code = (
        "import sys; sys.modules['rich'] = None; sys.modules['pyspark'] = None; "
        "sys.modules['pyiceberg'] = None; import icefloe.harness.provision.early as e; "
        "print(e.folder(e.Layout(e.cache_dir())))"
    )
    env = {"ICEFLOE_CACHE": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(str(tmp_path))


def test_a_step_beside_runs_while_the_others_run_in_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    order: list[str] = []
    slow_started = threading.Event()

    def slow() -> None:
        slow_started.set()
        time.sleep(0.4)
        order.append("slow done")

    def quick(name: str) -> Step:
        def run() -> None:
            assert slow_started.wait(2)  # the beside step started first
            order.append(name)

        return Step(name, lambda: False, run)

    monkeypatch.setattr(
        steps,
        "steps",
        lambda _layout: [quick("a"), quick("b"), Step("slow", lambda: False, slow, beside=True)],
    )
    monkeypatch.setattr(steps, "optional_steps", lambda _layout: {})
    assert steps.provision(Layout(tmp_path)) == 3
    assert order == ["a", "b", "slow done"]
    out = capsys.readouterr()
    assert "critical path: slow (beside)" in out.out + out.err


def test_a_failing_step_beside_is_raised_after_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[str] = []

    def broken() -> None:
        raise RuntimeError("build failed")

    monkeypatch.setattr(
        steps,
        "steps",
        lambda _layout: [
            Step("broken", lambda: False, broken, beside=True),
            Step("a", lambda: False, lambda: ran.append("a")),
        ],
    )
    monkeypatch.setattr(steps, "optional_steps", lambda _layout: {})
    with pytest.raises(RuntimeError, match="build failed"):
        steps.provision(Layout(tmp_path))
    assert ran == ["a"]


def test_the_critical_path_is_the_chain_that_ended_last() -> None:
    in_turn = [Timing("kafka", 0.0, 40.0), Timing("trino", 40.0, 20.0)]
    minio = Timing("minio", -60.0, 230.0, "started by make, beside the others")
    assert critical_path([*in_turn, minio]) == ("minio (started by make, beside the others)", 170)
    assert critical_path(in_turn) == ("the 2 step(s) in turn", 60.0)
    quick_minio = Timing("minio", 0.0, 10.0, "beside")
    assert critical_path([*in_turn, quick_minio])[0] == "the 2 step(s) in turn"
    lines = report_lines([*in_turn, minio], 172.0)
    assert lines[1].split()[:3] == ["-60.0", "230.0", "minio"]
    assert lines[-1].endswith("ended at 170 s; provisioning took 172 s")


def test_make_provision_starts_the_minio_build_before_the_virtualenv() -> None:
    makefile = (REPO / "Makefile").read_text()
    assert "provision: early-minio venv " in makefile
    assert "-m icefloe.harness.provision.early start" in makefile
    minio = next(s for s in steps.steps(Layout(Path("/nonexistent"))) if s.name.startswith("minio"))
    assert minio.beside
