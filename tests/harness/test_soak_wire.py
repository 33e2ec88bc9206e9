"""The soak mixes faults on the wire into its infra lane, and puts its loader behind them."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from icefloe.harness.scenarios.generative.generate import (
    PROFILES,
    SOAK_LOADER,
    WorldOptions,
    scenario_doc,
    schedules,
)
from icefloe.harness.scenarios.model import parse

WIRE = {"catalog_http", "wire_latency", "wire_reset_peer", "wire_limit_data", "wire_bandwidth"}


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(schedules(PROFILES["soak"]))
def test_soak_chapters_parse_with_the_loader_behind_the_fault_points(schedule: object) -> None:
    doc = scenario_doc(schedule, PROFILES["soak"], WorldOptions(loader=SOAK_LOADER), name="s")  # type: ignore[arg-type]
    scenario = parse(doc)
    assert scenario.loader.via == ("catalog_proxy", "toxiproxy")
    assert scenario.loader.settings["progress_timeout"] == "180s"


def test_the_soaks_infra_lane_draws_wire_kinds_and_ci_does_not() -> None:
    assert set(PROFILES["soak"].lanes["infra"].kinds) >= WIRE
    assert not WIRE & set(PROFILES["ci"].lanes["infra"].kinds)
