"""Toxiproxy on the wire, for real: a broker of the test's own (its PROXIED listener advertising
the proxy) and a Toxiproxy on free ports, with proxies to that broker and to the stack's MinIO
and catalog. A latency toxic delays a Kafka metadata request and an S3 request, reset_peer
breaks a connection, and healing restores it. Then the stack's own Toxiproxy (the `toxiproxy`
fixture) carries an S3 request and a wire fault through the run's fault hooks."""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Iterator
from typing import Any

import psutil
import pytest
import requests

from icefloe.harness.scenarios.faults import build_fault, parse_fault
from icefloe.harness.stack.kafka import Kafka
from icefloe.harness.stack.ports import free_port
from icefloe.harness.stack.toxiproxy import Toxic, Toxiproxy, proxy_specs

pytestmark = [pytest.mark.integration, pytest.mark.exclusive]  # Toxiproxy is the stack's

LATENCY_MS = 800


def _free_ports(count: int, first: int = 29100) -> list[int]:
    ports: list[int] = []
    for _ in range(count):
        ports.append(free_port(ports[-1] + 1 if ports else first))
    return ports


@pytest.fixture(scope="module")
def wire(stack: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Toxiproxy]:
    names = (
        "kafka_port",
        "kafka_controller_port",
        "kafka_proxied_port",
        "toxiproxy_port",
        "toxiproxy_kafka_port",
        "toxiproxy_minio_port",
        "toxiproxy_catalog_port",
    )
    config = dataclasses.replace(
        stack.config,
        run_dir=tmp_path_factory.mktemp("wire"),
        kafka_heap="256m",
        **dict(zip(names, _free_ports(len(names)), strict=True)),
    )
    broker = Kafka(config, stack.credentials)
    proxy = Toxiproxy(config, stack.credentials)
    try:
        broker.start()
        proxy.start()
        yield proxy
    finally:
        proxy.stop()
        broker.stop()


def _metadata(bootstrap: str) -> tuple[float, Any]:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    started = time.monotonic()
    metadata = admin.list_topics(timeout=15)
    return time.monotonic() - started, metadata


def _s3_list(stack: Any, endpoint: str) -> float:
    from pyarrow import fs

    from icefloe.harness.stack import keys

    s3 = fs.S3FileSystem(
        access_key=stack.credentials.access_key,
        secret_key=stack.credentials.secret_key.reveal(),
        endpoint_override=endpoint.removeprefix("http://"),
        scheme="http",
        region=keys.S3_REGION,
        connect_timeout=5,
        request_timeout=10,
    )
    started = time.monotonic()
    info = s3.get_file_info(keys.WAREHOUSE_BUCKET)
    assert info.type == fs.FileType.Directory
    return time.monotonic() - started


def test_a_client_bootstrapped_at_the_proxy_is_told_to_stay_on_it(wire: Toxiproxy) -> None:
    c = wire.config
    _, metadata = _metadata(wire.proxied_endpoints().bootstrap_servers)
    (broker,) = metadata.brokers.values()
    assert (broker.host, broker.port) == (c.host, c.toxiproxy_kafka_port)
    # A direct client is told the broker's own address.
    _, direct = _metadata(f"{c.host}:{c.kafka_port}")
    assert [b.port for b in direct.brokers.values()] == [c.kafka_port]


def test_toxiproxy_listens_on_loopback_only(wire: Toxiproxy) -> None:
    assert wire.process.pid is not None
    listening = [
        c.laddr
        for c in psutil.Process(wire.process.pid).net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    ]
    assert {a.port for a in listening} == set(wire.ports)
    assert {a.ip for a in listening} <= {"127.0.0.1", "::ffff:127.0.0.1"}


def test_latency_delays_a_kafka_metadata_request_and_heal_restores_it(wire: Toxiproxy) -> None:
    client = wire.client()
    bootstrap = wire.proxied_endpoints().bootstrap_servers
    before, _ = _metadata(bootstrap)
    client.add_toxic("kafka", Toxic.latency("slow", LATENCY_MS))
    try:
        delayed, metadata = _metadata(bootstrap)
    finally:
        assert client.remove_toxic("kafka", "slow")
    after, _ = _metadata(bootstrap)
    assert metadata.brokers  # it was answered, late
    assert delayed >= LATENCY_MS / 1000
    assert before < LATENCY_MS / 2000 and after < LATENCY_MS / 2000, (before, after)


def test_latency_delays_an_s3_request_and_heal_restores_it(stack: Any, wire: Toxiproxy) -> None:
    client = wire.client()
    endpoint = wire.proxied_endpoints().s3_endpoint
    before = _s3_list(stack, endpoint)
    client.add_toxic("minio", Toxic.latency("slow", LATENCY_MS, jitter_ms=50))
    try:
        delayed = _s3_list(stack, endpoint)
    finally:
        assert client.remove_toxic("minio", "slow")
    after = _s3_list(stack, endpoint)
    assert delayed >= (LATENCY_MS - 50) / 1000
    assert before < LATENCY_MS / 2000 and after < LATENCY_MS / 2000, (before, after)


def test_reset_peer_breaks_a_connection_and_heal_restores_it(wire: Toxiproxy) -> None:
    client = wire.client()
    config_url = wire.proxied_endpoints().catalog_uri + "/v1/config"
    with requests.Session() as session:
        assert session.get(config_url, timeout=5).status_code == 200
        client.add_toxic("catalog", Toxic.reset_peer("rst", 0, stream="upstream"))
        try:
            with pytest.raises(requests.ConnectionError):
                session.get(config_url, timeout=5)
        finally:
            assert client.remove_toxic("catalog", "rst")
        assert session.get(config_url, timeout=5).status_code == 200


def test_the_stacks_toxiproxy_carries_s3_and_a_wire_fault(stack: Any, toxiproxy: Any) -> None:
    proxies = toxiproxy.client().proxies()
    assert [proxies[s.name].spec for s in proxy_specs(stack.config)] == list(
        proxy_specs(stack.config)
    )
    endpoint = toxiproxy.proxied_endpoints().s3_endpoint
    assert _s3_list(stack, endpoint) < LATENCY_MS / 2000
    run = type("Run", (), {"stack": stack})()
    kind, params = parse_fault({"fault": "wire_latency", "target": "minio"}, "test")
    fault = build_fault(kind, dataclasses.replace(params, latency_ms=LATENCY_MS), random.Random(0))
    facts = fault.inject(run)
    assert facts["toxic"]["attributes"]["latency"] == LATENCY_MS
    try:
        assert _s3_list(stack, endpoint) >= LATENCY_MS / 1000
    finally:
        assert fault.heal(run)["removed"] is True
    assert _s3_list(stack, endpoint) < LATENCY_MS / 2000
