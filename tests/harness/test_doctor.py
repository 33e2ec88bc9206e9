"""`icefloe doctor`: an empty cache is reported missing with its fix, a taken port as in use."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from icefloe.harness import doctor
from icefloe.harness.provision.layout import Layout
from icefloe.harness.provision.steps import steps
from icefloe.harness.stack.config import StackConfig


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_empty_cache_is_missing_and_names_its_fix(tmp_path: Path) -> None:
    config = StackConfig(run_dir=tmp_path / "run", cache_dir=tmp_path / "cache")
    found = doctor.findings(config)
    cache = [f for f in found if f.area == "cache"]
    trino = next(f for f in cache if f.name.startswith("trino "))
    assert trino.state == doctor.MISSING
    assert trino.fix == "icefloe provision"
    assert str(tmp_path / "cache") in trino.detail
    toxiproxy = next(f for f in cache if f.name.startswith("toxiproxy "))
    assert toxiproxy.state == doctor.OPTIONAL, "an optional artifact is no problem"
    assert toxiproxy.fix == "icefloe provision --with toxiproxy"
    wrong = doctor.problems(found)
    assert trino in wrong and toxiproxy not in wrong
    assert not (tmp_path / "run").exists(), "the doctor writes nothing"


def test_a_provisioned_artifact_is_ok_with_its_size(tmp_path: Path) -> None:
    config = StackConfig(run_dir=tmp_path / "run", cache_dir=tmp_path / "cache")
    step = next(s for s in steps(Layout(config.cache_dir)) if s.name.startswith("trino "))
    assert step.where is not None
    (step.where / "bin").mkdir(parents=True)
    (step.where / "bin" / "launcher").write_bytes(b"x" * 3 * 2**20)
    trino = next(f for f in doctor.findings(config) if f.name == step.name)
    assert trino.state == doctor.OK
    assert "3.0 MiB" in trino.detail


def test_a_taken_port_is_in_use_unless_the_stack_holds_it(tmp_path: Path) -> None:
    port = _free_port()
    config = StackConfig(run_dir=tmp_path / "run", cache_dir=tmp_path / "cache", trino_port=port)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port))
        listener.listen()
        taken = next(f for f in doctor.findings(config) if f.name == f"trino_port {port}")
        held = next(
            f for f in doctor.findings(config, frozenset({port})) if f.name == f"trino_port {port}"
        )
    assert taken.state == doctor.IN_USE
    assert "TRINO_PORT" in taken.fix
    assert held.state == doctor.OK
    free = next(f for f in doctor.findings(config) if f.name == f"trino_port {port}")
    assert free.state == doctor.OK


def test_a_taken_port_only_some_commands_bind_is_busy_not_a_problem(tmp_path: Path) -> None:
    port = _free_port()
    config = StackConfig(
        run_dir=tmp_path / "run", cache_dir=tmp_path / "cache", tested_catalog_port=port
    )
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port))
        listener.listen()
        found = doctor.findings(config)
    busy = next(f for f in found if f.name == f"tested_catalog_port {port}")
    assert busy.state == doctor.BUSY
    assert "`icefloe catalogs check` needs it free" in busy.detail
    assert "TESTED_CATALOG_PORT" in busy.fix
    assert busy not in doctor.problems(found)  # `icefloe up` binds it not


def test_the_summary_of_problems_keeps_the_settings_table_it_names(
    tmp_path: Path, monkeypatch: Any, capfd: Any
) -> None:
    from icefloe.harness.cli.main import main

    port = _free_port()
    monkeypatch.setenv("ICEFLOE_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("ICEFLOE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ICEFLOE_STACK_TRINO_PORT", str(port))
    from icefloe.harness import console

    # Wide enough for the whole line: the console's width is fixed when it is made, and the
    # line holds the temporary folder's path, whose length varies from run to run.
    monkeypatch.setattr(console.console, "width", 2000)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port))
        listener.listen()
        assert main(["doctor"]) == 1
    summary = capfd.readouterr().err.split("problem(s):", 1)[1]
    assert f"trino_port {port}" in summary
    assert "under [stack] in icefloe.toml" in summary, summary
