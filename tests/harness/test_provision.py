"""Provisioning runs only the steps not yet done, and says so when there is nothing to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from icefloe.harness.provision import go
from icefloe.harness.provision import steps as provision
from icefloe.harness.provision.layout import Layout, cache_dir


def test_second_run_does_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "artifact"
    runs: list[str] = []

    def fake_steps(_layout: Layout) -> list[provision.Step]:
        def run() -> None:
            runs.append("fetch")
            marker.write_text("x")

        return [provision.Step("artifact", marker.exists, run)]

    monkeypatch.setattr(provision, "steps", fake_steps)
    assert provision.provision(Layout(tmp_path)) == 1
    assert provision.provision(Layout(tmp_path)) == 0
    assert runs == ["fetch"]
    assert "nothing to do" in capsys.readouterr().err


def test_every_real_step_is_cached_after_provisioning() -> None:
    """On a provisioned machine every step reports done (no network is touched)."""
    layout = Layout(cache_dir())
    if not layout.trino_home.is_dir():
        pytest.skip("cache not provisioned (make provision)")
    assert all(step.done() for step in provision.steps(layout))


@pytest.mark.parametrize(
    ("mem_total_kb", "expected"),
    [
        (24 * 2**20, 4 << 30),  # 24 GiB: 4 GiB, the most a compiler process gets
        (12 * 2**20, 2 << 30),  # 12 GiB: a sixth
        (4 * 2**20, 1 << 30),  # 4 GiB: never below 1 GiB
    ],
)
def test_the_go_compilers_memory_follows_the_machines(
    tmp_path: Path, mem_total_kb: int, expected: int
) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal:       {mem_total_kb} kB\nMemFree:        1000 kB\n")
    assert go.compiler_memory_limit(meminfo) == expected


def test_an_unreadable_meminfo_leaves_gos_collector_as_it_is(tmp_path: Path) -> None:
    assert go.compiler_memory_limit(tmp_path / "missing") is None
    (tmp_path / "odd").write_text("nothing here\n")
    assert go.compiler_memory_limit(tmp_path / "odd") is None


def _fake_go(tmp_path: Path, status: int) -> Path:
    """A `go` that prints 250 package lines, installs an empty command into $GOBIN unless it
    fails, and exits with ``status``."""
    script = tmp_path / "go"
    script.write_text(
        "#!/bin/sh\n"
        'i=0; while [ $i -lt 250 ]; do echo "example.com/pkg$i"; i=$((i+1)); done\n'
        f'[ {status} -eq 0 ] && touch "$GOBIN/server"\n'
        f"exit {status}\n"
    )
    script.chmod(0o755)
    return script


def test_a_go_build_closes_its_output_and_a_failed_one_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build's output pipe is closed when it ends: left open it is a ResourceWarning, which
    the suite's warning filter turns into an error in whichever test collects it."""
    layout = Layout(tmp_path / "cache")
    binary = tmp_path / "bin" / "server"
    binary.parent.mkdir()
    monkeypatch.setattr(go, "toolchain", lambda _layout: _fake_go(tmp_path, 0))
    go.install(layout, "example.com/cmd/server@v1.0.0", binary)
    assert binary.exists()
    binary.unlink()
    monkeypatch.setattr(go, "toolchain", lambda _layout: _fake_go(tmp_path, 3))
    with pytest.raises(RuntimeError, match=r"(?s)build failed:.*example.com/pkg249$"):
        go.install(layout, "example.com/cmd/server@v1.0.0", binary)
