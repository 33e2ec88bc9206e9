"""Toxiproxy without services: its settings, the broker's PROXIED listener, the API client (on
the in-memory fake), provisioning only on demand, and the wire faults' inject and heal."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.provision import steps
from icefloe.harness.provision.layout import Layout
from icefloe.harness.scenarios.faults import FAULTS, build_fault, parse_fault
from icefloe.harness.scenarios.params import ParamError
from icefloe.harness.stack import config as stack_config
from icefloe.harness.stack.config import StackConfig
from icefloe.harness.stack.kafka import Kafka
from icefloe.harness.stack.ports import free_port
from icefloe.harness.stack.toxiproxy import (
    PROXIED,
    FakeToxiproxyApi,
    Toxic,
    Toxiproxy,
    ToxiproxyClient,
    ToxiproxyError,
    proxied_endpoints,
    proxy_specs,
)

WIRE_KINDS = (
    "wire_latency",
    "wire_bandwidth",
    "wire_reset_peer",
    "wire_timeout",
    "wire_slicer",
    "wire_limit_data",
)


def _config(tmp_path: Path, **ports: int) -> StackConfig:
    return StackConfig(run_dir=tmp_path / "run", cache_dir=tmp_path / "cache", **ports)


def _client(config: StackConfig) -> tuple[ToxiproxyClient, FakeToxiproxyApi]:
    api = FakeToxiproxyApi(proxy_specs(config))
    return ToxiproxyClient("http://127.0.0.1:8474", session=api), api


# -- settings and the broker's listener -----------------------------------------------------


def test_toxiproxy_ports_have_one_default_each_and_move_by_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = _config(tmp_path)
    ours = (
        c.kafka_proxied_port,
        c.toxiproxy_port,
        c.toxiproxy_kafka_port,
        c.toxiproxy_minio_port,
        c.toxiproxy_catalog_port,
    )
    assert ours == (9094, 8474, 18092, 18000, 18181)
    monkeypatch.setenv("ICEFLOE_STACK_TOXIPROXY_PORT", "28474")
    assert stack_config.load(tmp_path / "absent.toml").toxiproxy_port == 28474
    with pytest.raises(ValueError, match="share a port"):
        _config(tmp_path, toxiproxy_minio_port=c.minio_port)


def test_the_broker_advertises_the_proxy_on_its_proxied_listener(tmp_path: Path) -> None:
    c = _config(tmp_path)
    props = Kafka(c, None).properties()  # type: ignore[arg-type]
    listeners = dict(x.split("://") for x in str(props["listeners"]).split(","))
    advertised = dict(x.split("://") for x in str(props["advertised.listeners"]).split(","))
    assert listeners["PROXIED"] == f"127.0.0.1:{c.kafka_proxied_port}"
    assert advertised["PROXIED"] == f"127.0.0.1:{c.toxiproxy_kafka_port}"
    assert advertised["PLAINTEXT"] == f"127.0.0.1:{c.kafka_port}"  # direct clients stay direct
    assert "PROXIED:PLAINTEXT" in str(props["listener.security.protocol.map"])
    assert c.kafka_proxied_port in Kafka(c, None).ports  # type: ignore[arg-type]
    # The proxy forwards to that listener and listens where it advertises.
    kafka = {s.name: s for s in proxy_specs(c)}["kafka"]
    assert kafka.upstream == listeners["PROXIED"]
    assert kafka.listen == advertised["PROXIED"]


def test_proxied_endpoints_are_the_proxies_listen_addresses(tmp_path: Path) -> None:
    c = _config(tmp_path, toxiproxy_minio_port=28000)
    specs = {s.name: s for s in proxy_specs(c)}
    assert tuple(specs) == PROXIED
    ends = proxied_endpoints(c)
    assert ends.bootstrap_servers == specs["kafka"].listen == f"127.0.0.1:{c.toxiproxy_kafka_port}"
    assert ends.s3_endpoint == f"http://{specs['minio'].listen}" == "http://127.0.0.1:28000"
    assert ends.catalog_uri == f"http://{specs['catalog'].listen}"
    assert specs["minio"].upstream == f"127.0.0.1:{c.minio_port}"
    assert specs["catalog"].upstream == f"127.0.0.1:{c.catalog_port}"
    assert Toxiproxy(c, None).proxied_endpoints() == ends  # type: ignore[arg-type]


# -- the client ------------------------------------------------------------------------------


def test_client_adds_lists_and_removes_toxics(tmp_path: Path) -> None:
    client, _ = _client(_config(tmp_path))
    assert set(client.proxies()) == set(PROXIED)
    added = client.add_toxic("minio", Toxic.latency("slow", 300, 20, stream="upstream"))
    assert added == Toxic("slow", "latency", "upstream", 1.0, {"latency": 300, "jitter": 20})
    client.add_toxic("minio", Toxic.reset_peer("rst", 5))
    assert [t.name for t in client.toxics("minio")] == ["slow", "rst"]
    assert client.proxies()["minio"].toxics[1].attributes == {"timeout": 5}
    assert client.remove_toxic("minio", "slow") is True
    assert client.remove_toxic("minio", "slow") is False  # healing twice is harmless
    assert [t.name for t in client.toxics("minio")] == ["rst"]
    client.reset()
    assert client.toxics("minio") == []


def test_client_enables_and_disables_a_proxy(tmp_path: Path) -> None:
    client, _ = _client(_config(tmp_path))
    client.set_enabled("catalog", False)
    assert client.proxies()["catalog"].spec.enabled is False
    client.set_enabled("catalog", True)
    assert client.proxies()["catalog"].spec.enabled is True


def test_client_errors_name_the_request_and_the_answer(tmp_path: Path) -> None:
    client, _ = _client(_config(tmp_path))
    with pytest.raises(ToxiproxyError, match=r"POST .*/proxies/nope/toxics: 404"):
        client.add_toxic("nope", Toxic.timeout("hole"))
    client.add_toxic("kafka", Toxic.timeout("hole"))
    with pytest.raises(ToxiproxyError, match="409"):
        client.add_toxic("kafka", Toxic.timeout("hole"))


def test_client_says_when_nothing_answers() -> None:
    port = free_port(28900)
    client = ToxiproxyClient(f"http://127.0.0.1:{port}", timeout=1.0)
    with pytest.raises(ToxiproxyError, match=f"127.0.0.1:{port}/version"):
        client.version()


def test_toxic_constructors_use_the_servers_attribute_names() -> None:
    assert Toxic.bandwidth("b", 64).attributes == {"rate": 64}
    assert Toxic.timeout("t").attributes == {"timeout": 0}
    assert Toxic.slicer("s", 10, 5, 100).attributes == {
        "average_size": 10,
        "size_variation": 5,
        "delay": 100,
    }
    assert Toxic.limit_data("l", 512).attributes == {"bytes": 512}
    assert Toxic.slow_close("c", 50).to_json()["type"] == "slow_close"
    with pytest.raises(ValueError, match="toxicity"):
        Toxic("x", "latency", toxicity=1.5)
    with pytest.raises(ValueError, match="negative"):
        Toxic.latency("x", -1)


# -- the service and its provisioning ---------------------------------------------------------


def test_the_service_listens_on_loopback_and_is_built_only_when_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = _config(tmp_path)
    service = Toxiproxy(c, None)  # type: ignore[arg-type]
    assert service.command()[1:] == ["-host", "127.0.0.1", "-port", str(c.toxiproxy_port)]
    assert service.ports == (8474, 18092, 18000, 18181)
    built: list[Path] = []
    monkeypatch.setattr(steps, "build_toxiproxy", lambda layout: built.append(layout.cache))
    service.prepare()
    assert built == [c.cache_dir]
    binary = Layout(c.cache_dir).toxiproxy_bin
    binary.parent.mkdir(parents=True)
    binary.write_text("")
    service.prepare()
    assert built == [c.cache_dir]


def test_toxiproxy_is_no_default_step_but_can_be_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = Layout(tmp_path)
    assert not any("toxiproxy" in s.name for s in steps.steps(layout))
    ran: list[str] = []
    monkeypatch.setattr(steps, "steps", lambda _layout: [])
    monkeypatch.setattr(
        steps,
        "optional_steps",
        lambda _layout: {
            "toxiproxy": steps.Step("toxiproxy", lambda: False, lambda: ran.append("t"))
        },
    )
    assert steps.provision(layout) == 0
    assert steps.provision(layout, ["toxiproxy"]) == 1
    assert ran == ["t"]
    assert set(steps.optional_steps(layout)) == set(steps.OPTIONAL)


def test_provision_with_toxiproxy_on_the_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from icefloe.harness.cli import main as cli_main
    from icefloe.harness.cli import stack as cli_stack

    assert cli_stack.OPTIONAL_ARTIFACTS == steps.OPTIONAL
    asked: list[Any] = []
    monkeypatch.setattr(steps, "provision", lambda layout, extras=(): asked.append(extras) or 0)
    assert cli_main.main(["provision", "--with", "toxiproxy"]) == 0
    assert asked == [["toxiproxy"]]


def test_its_image_is_optional_and_copies_the_provisioned_server(tmp_path: Path) -> None:
    from icefloe.harness.containers import images

    layout = Layout(tmp_path)
    (spec,) = [s for s in images.optional_image_specs(layout) if s.service == "toxiproxy"]
    assert spec.inputs == {"toxiproxy": layout.toxiproxy_bin}
    assert (spec.source / "Containerfile").is_file()
    assert spec.tag.endswith(f"/toxiproxy:{layout.toxiproxy_bin.parts[-3]}")
    assert spec.service not in images.LOCAL_IMAGES  # not one of the stack's four


def test_the_stack_knows_toxiproxy_but_does_not_start_it(tmp_path: Path) -> None:
    from icefloe.harness.stack.lakehouse import Stack

    stack = Stack(_config(tmp_path))
    assert stack.service("toxiproxy") is stack.toxiproxy
    assert "toxiproxy" not in stack.services  # not in `up`, nor in `healthy`
    assert "toxiproxy" not in [s.name for s in stack.status()]  # listed only when it runs


# -- wire faults ------------------------------------------------------------------------------


class _FakeService:
    def __init__(self, config: StackConfig, running: bool) -> None:
        self.api = FakeToxiproxyApi(proxy_specs(config))
        self.running = running
        self.starts = 0
        self.process = self

    def is_running(self) -> bool:
        return self.running

    def start(self) -> float:
        self.starts += 1
        self.running = True
        return 0.1

    def client(self) -> ToxiproxyClient:
        return ToxiproxyClient("http://127.0.0.1:8474", session=self.api)


class _FakeRun:
    def __init__(self, service: _FakeService) -> None:
        self.stack = type("S", (), {"toxiproxy": service})()


def _fault(kind: str, **params: Any) -> Any:
    kind, typed = parse_fault({"fault": kind, **params}, "test")
    return build_fault(kind, typed, random.Random(0))


def test_every_wire_kind_is_registered_in_the_infra_lane() -> None:
    _fault("wire_down", target="kafka")
    for kind in (*WIRE_KINDS, "wire_down"):
        assert FAULTS[kind].lane == "infra"


@pytest.mark.parametrize("kind", WIRE_KINDS)
def test_a_wire_fault_adds_its_toxic_and_heals_by_removing_it(kind: str, tmp_path: Path) -> None:
    service = _FakeService(_config(tmp_path), running=True)
    run = _FakeRun(service)
    fault = _fault(kind, target="minio", stream="upstream", toxicity=0.5)
    assert fault.name == f"{kind}_minio"
    facts = fault.inject(run)
    (toxic,) = service.client().toxics("minio")
    assert toxic.type == kind.removeprefix("wire_")
    assert (toxic.stream, toxic.toxicity) == ("upstream", 0.5)
    assert facts["toxic"] == toxic.to_json() and facts["proxy"] == "minio"
    assert facts["started_toxiproxy"] is False
    assert fault.heal(run) == {"proxy": "minio", "toxic": toxic.name, "removed": True}
    assert service.client().toxics("minio") == []
    assert fault.heal(run)["removed"] is False


def test_wire_fault_attributes_reach_the_toxic(tmp_path: Path) -> None:
    service = _FakeService(_config(tmp_path), running=True)
    run = _FakeRun(service)
    _fault("wire_latency", target="kafka", latency_ms=250, jitter_ms=30).inject(run)
    _fault("wire_limit_data", target="catalog", bytes=100).inject(run)
    assert service.client().toxics("kafka")[0].attributes == {"latency": 250, "jitter": 30}
    assert service.client().toxics("catalog")[0].attributes == {"bytes": 100}
    # Two faults of one kind on one proxy get toxics of their own.
    _fault("wire_latency", target="kafka").inject(run)
    assert len({t.name for t in service.client().toxics("kafka")}) == 2


def test_a_wire_fault_starts_toxiproxy_but_healing_does_not(tmp_path: Path) -> None:
    service = _FakeService(_config(tmp_path), running=False)
    run = _FakeRun(service)
    fault = _fault("wire_timeout", target="catalog")
    assert fault.inject(run)["started_toxiproxy"] is True
    service.running = False  # it went away: its toxics with it
    assert fault.heal(run)["removed"] is False
    assert service.starts == 1


def test_wire_down_disables_and_enables_the_proxy(tmp_path: Path) -> None:
    service = _FakeService(_config(tmp_path), running=True)
    run = _FakeRun(service)
    fault = _fault("wire_down", target="kafka")
    fault.inject(run)
    assert service.client().proxies()["kafka"].spec.enabled is False
    assert fault.heal(run) == {"proxy": "kafka", "enabled": True}
    assert service.client().proxies()["kafka"].spec.enabled is True


def test_wire_parameters_are_checked_when_read() -> None:
    with pytest.raises(ParamError, match="target"):
        _fault("wire_latency", target="trino")
    with pytest.raises(ParamError, match="toxicity"):
        _fault("wire_reset_peer", target="kafka", toxicity=2)
    with pytest.raises(ParamError, match="unknown parameter"):
        _fault("wire_down", target="kafka", stream="upstream")


def test_a_stack_without_toxiproxy_says_so(tmp_path: Path) -> None:
    run = type("R", (), {"stack": object()})()
    with pytest.raises(RuntimeError, match="only the local stack"):
        _fault("wire_latency", target="kafka").inject(run)


def test_the_fake_api_refuses_what_the_server_refuses(tmp_path: Path) -> None:
    client, api = _client(_config(tmp_path))
    client.create(dataclasses.replace(proxy_specs(_config(tmp_path))[0], name="extra"))
    with pytest.raises(ToxiproxyError, match="409"):
        client.create(dataclasses.replace(proxy_specs(_config(tmp_path))[0], name="extra"))
    client.delete("extra")
    with pytest.raises(ToxiproxyError, match="404"):
        client.delete("extra")
    assert ("DELETE", "/proxies/extra") in api.calls
