"""The probe and the slow machine on demand."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from icefloe.harness import machine
from icefloe.harness.machine import Slowdown, SlowdownUnavailable


def test_the_probe_times_ten_million_additions() -> None:
    line = machine.probe_line()
    assert line.startswith("probe: 10,000,000 Python additions in ") and line.endswith(" s")
    assert 0.0 < machine.probe_s() < 60.0


@pytest.mark.parametrize("fraction", [0.0, -0.1, 1.5])
def test_a_share_outside_zero_to_one_is_refused(fraction: float) -> None:
    with pytest.raises(ValueError, match="in \\(0, 1\\]"):
        Slowdown(fraction)


def test_a_machine_without_the_cgroup_says_so(tmp_path: Path) -> None:
    with (
        pytest.raises(SlowdownUnavailable, match="no cgroup v1 cpu controller"),
        Slowdown(0.5, cgroup_root=tmp_path),
    ):
        pass


def test_the_whole_machine_takes_nothing(tmp_path: Path) -> None:
    with Slowdown(1.0, cgroup_root=tmp_path) as slowdown:
        assert slowdown.describe().startswith("no CPU quota")
    assert list(tmp_path.iterdir()) == []


REAL = machine.CGROUP_CPU / "cpu.rt_runtime_us"


@pytest.mark.skipif(
    not REAL.is_file() or os.geteuid() != 0, reason="needs root and cgroup v1's cpu controller"
)
def test_a_slowdown_slows_the_probe_and_leaves_nothing_behind() -> None:
    alone = min(machine.probe_s() for _ in range(2))
    with Slowdown(0.4) as slowdown:
        slowed = machine.probe_s()
        group = slowdown.group
        assert group.is_dir() and (group / "cpu.rt_runtime_us").read_text().strip() == "6000"
    assert not group.exists()
    assert slowed > 1.6 * alone, (alone, slowed)  # about 2.5x; a wide margin for a noisy machine
