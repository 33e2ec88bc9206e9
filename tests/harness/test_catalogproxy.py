"""The catalog fault proxy against a tiny fake catalog: every mode does what it says.

The fake upstream is a threading HTTP/1.1 server that notes every request it received (what
"applied" means here) and each connection it was reached on; the client is ``http.client``,
so keep-alive is visible as one socket carrying several requests.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.history import PROXY_FIRED, History, select
from icefloe.harness.stack.catalogproxy import COMMIT_PATH, CatalogProxy, Rule

COMMIT = "/v1/namespaces/ns/tables/t"


class FakeCatalog:
    """An HTTP/1.1 server that answers like a catalog and remembers what reached it.

    ``POST`` answers ``status_for[path]`` (200 by default) with a JSON body; ``GET /chunked``
    answers with a chunked body; a ``GET`` of a path in ``tables`` with that table; any other
    ``GET`` with a JSON body of the path.
    """

    def __init__(self) -> None:
        self.received: list[tuple[str, str, bytes]] = []
        self.tables: dict[str, Any] = {}
        self.connections: set[int] = set()
        self.status_for: dict[str, int] = {}
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # no delayed-ACK stalls between head and body

            def log_message(self, *args: Any) -> None:
                pass

            def _body(self) -> bytes:
                if "chunked" in self.headers.get("Transfer-Encoding", ""):
                    parts = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0], 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b""):
                                pass
                            return b"".join(parts)
                        parts.append(self.rfile.read(size))
                        self.rfile.readline()
                return self.rfile.read(int(self.headers.get("Content-Length", 0)))

            def _note(self, body: bytes) -> None:
                with fake.lock:
                    fake.received.append((self.command, self.path, body))
                    fake.connections.add(self.client_address[1])

            def _json(self, status: int, doc: Any) -> None:
                data = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._note(b"")
                if self.path == "/chunked":
                    self.send_response(200)
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for part in (b"first,", b"second"):
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                    self.wfile.write(b"0\r\n\r\n")
                    return
                if self.path == "/large":  # more than the proxy's and the client's buffers
                    self._json(200, {"data": "x" * (32 << 20)})
                    return
                if self.path in fake.tables:
                    self._json(200, fake.tables[self.path])
                    return
                self._json(200, {"path": self.path})

            def do_POST(self) -> None:
                body = self._body()
                self._note(body)
                self._json(fake.status_for.get(self.path, 200), {"got": len(body)})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def posts(self) -> list[bytes]:
        with self.lock:
            return [body for method, _, body in self.received if method == "POST"]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake() -> Iterator[FakeCatalog]:
    catalog = FakeCatalog()
    yield catalog
    catalog.close()


@pytest.fixture
def proxy(fake: FakeCatalog) -> Iterator[CatalogProxy]:
    with CatalogProxy(fake.url, seed=7) as running:
        yield running


def connect(proxy: CatalogProxy) -> http.client.HTTPConnection:
    return http.client.HTTPConnection(proxy.host, proxy.port, timeout=10)


def post(conn: http.client.HTTPConnection, body: bytes = b'{"updates": []}') -> tuple[int, bytes]:
    conn.request("POST", COMMIT, body=body, headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    return response.status, response.read()


def test_forwards_unchanged_and_keeps_the_connection_alive(
    proxy: CatalogProxy, fake: FakeCatalog
) -> None:
    conn = connect(proxy)
    try:
        assert post(conn, b'{"a": 1}') == (200, b'{"got": 8}')
        sock = conn.sock
        conn.request("GET", "/chunked")
        response = conn.getresponse()
        assert response.getheader("Transfer-Encoding") == "chunked"
        assert response.read() == b"first,second"
        conn.request("POST", COMMIT, body=iter([b"ab", b"cde"]), encode_chunked=True)
        assert conn.getresponse().read() == b'{"got": 5}'
        conn.request("GET", "/v1/config?warehouse=w")
        assert json.loads(conn.getresponse().read()) == {"path": "/v1/config?warehouse=w"}
        assert conn.sock is sock  # one client connection carried all four
    finally:
        conn.close()
    assert fake.posts() == [b'{"a": 1}', b"abcde"]
    assert len(fake.connections) == 1  # and one upstream connection
    assert proxy.fired == ()


def test_drop_after_forward_applies_then_answers_nothing(
    proxy: CatalogProxy, fake: FakeCatalog
) -> None:
    rule = proxy.add(Rule("drop_after_forward"))
    conn = connect(proxy)
    try:
        with pytest.raises(http.client.RemoteDisconnected):
            post(conn)
        conn.close()
        assert post(conn) == (200, b'{"got": 15}')  # times=1: the next one passes
    finally:
        conn.close()
    assert len(fake.posts()) == 2
    (fired,) = proxy.fired_by(rule.name)
    assert (fired.applied, fired.status, fired.answered) == (True, 200, None)
    assert fired.method == "POST" and fired.path == COMMIT


@pytest.mark.parametrize("status", [500, 502, 504])
def test_status_after_forward_applies_and_answers_the_status(
    proxy: CatalogProxy, fake: FakeCatalog, status: int
) -> None:
    proxy.add(Rule("status_after_forward", status=status, times=2))
    fake.status_for[COMMIT] = 200
    conn = connect(proxy)
    try:
        assert post(conn)[0] == status
        fake.status_for[COMMIT] = 409  # the catalog refused this one: not applied
        assert post(conn)[0] == status  # on the same connection: it stayed alive
    finally:
        conn.close()
    assert len(fake.posts()) == 2
    assert [(f.applied, f.status, f.answered) for f in proxy.fired] == [
        (True, 200, status),
        (False, 409, status),
    ]


def test_refuse_does_not_forward(proxy: CatalogProxy, fake: FakeCatalog) -> None:
    proxy.add(Rule("refuse", retry_after_s=3, name="with"))
    conn = connect(proxy)
    try:
        conn.request("POST", COMMIT, body=b"{}")
        response = conn.getresponse()
        assert (response.status, response.getheader("Retry-After")) == (503, "3")
        response.read()
        proxy.add(Rule("refuse", name="without"))
        conn.request("POST", COMMIT, body=b"{}")
        response = conn.getresponse()
        assert (response.status, response.getheader("Retry-After")) == (503, None)
        response.read()
        proxy.add(Rule("refuse", drop=True, name="dropped"))
        with pytest.raises(http.client.RemoteDisconnected):
            post(conn)
    finally:
        conn.close()
    assert fake.posts() == []
    assert [(f.rule, f.applied, f.status, f.answered) for f in proxy.fired] == [
        ("with", False, None, 503),
        ("without", False, None, 503),
        ("dropped", False, None, None),
    ]


def test_delay_forwards_late_and_answers_late(proxy: CatalogProxy, fake: FakeCatalog) -> None:
    proxy.add(Rule("delay", delay_ms=300, answer_delay_ms=200))
    conn = connect(proxy)
    try:
        began = time.monotonic()
        assert post(conn)[0] == 200
        took = time.monotonic() - began
    finally:
        conn.close()
    assert 0.5 <= took < 2.0
    (fired,) = proxy.fired
    assert (fired.applied, fired.status, fired.answered) == (True, 200, 200)


def test_a_healed_black_hole_releases_its_requests(proxy: CatalogProxy, fake: FakeCatalog) -> None:
    proxy.add(Rule("black_hole", times=None))
    conn = connect(proxy)
    healer = threading.Timer(0.5, proxy.heal)
    healer.start()
    began = time.monotonic()
    try:
        with pytest.raises(http.client.RemoteDisconnected):
            post(conn)
    finally:
        conn.close()
        healer.join()
    assert 0.4 <= time.monotonic() - began < 3.0
    assert fake.posts() == []
    (fired,) = proxy.fired
    assert (fired.applied, fired.status, fired.answered) == (False, None, None)
    assert proxy.rules == ()
    conn = connect(proxy)
    try:
        assert post(conn)[0] == 200  # healed: requests pass again
    finally:
        conn.close()


def test_a_black_hole_closes_after_its_hold(proxy: CatalogProxy, fake: FakeCatalog) -> None:
    proxy.add(Rule("black_hole", hold_s=0.3))
    conn = connect(proxy)
    began = time.monotonic()
    try:
        with pytest.raises(http.client.RemoteDisconnected):
            post(conn)
    finally:
        conn.close()
    assert 0.25 <= time.monotonic() - began < 2.0
    assert fake.posts() == []


def test_deliver_late_answers_504_then_applies(proxy: CatalogProxy, fake: FakeCatalog) -> None:
    rule = proxy.add(Rule("deliver_late", late_s=0.5))
    conn = connect(proxy)
    try:
        began = time.monotonic()
        assert post(conn)[0] == 504
        assert time.monotonic() - began < 0.4
        assert fake.posts() == []  # not yet
    finally:
        conn.close()
    (fired,) = proxy.wait_fired(1, timeout_s=5, rule=rule.name)
    assert len(fake.posts()) == 1
    assert (fired.applied, fired.status, fired.answered) == (True, 200, 504)
    assert fired.seconds >= 0.5


def test_rules_match_method_and_whole_path(proxy: CatalogProxy, fake: FakeCatalog) -> None:
    proxy.add(Rule("refuse", times=None))
    conn = connect(proxy)
    try:
        conn.request("GET", COMMIT)  # a table load, not a commit
        assert conn.getresponse().read() == json.dumps({"path": COMMIT}).encode()
        conn.request("POST", COMMIT + "/metrics", body=b"{}")  # a metrics report
        assert conn.getresponse().read() == b'{"got": 2}'
        assert post(conn)[0] == 503
    finally:
        conn.close()
    assert len(proxy.fired) == 1


def test_probability_is_seeded_and_times_counts_firings(fake: FakeCatalog) -> None:
    def answers(seed: int) -> list[int]:
        with CatalogProxy(fake.url, seed=seed) as proxy:
            proxy.add(Rule("refuse", probability=0.5, times=3))
            conn = connect(proxy)
            try:
                return [post(conn)[0] for _ in range(20)]
            finally:
                conn.close()

    first = answers(11)
    assert first == answers(11)
    assert first.count(503) == 3 and first.count(200) == 17
    assert first != answers(12)


def test_a_rule_can_be_removed_while_running(proxy: CatalogProxy, fake: FakeCatalog) -> None:
    rule = proxy.add(Rule("refuse", times=None))
    conn = connect(proxy)
    try:
        assert post(conn)[0] == 503
        assert proxy.remove(rule.name) is True
        assert proxy.remove(rule.name) is False
        assert post(conn)[0] == 200
    finally:
        conn.close()
    with pytest.raises(ValueError, match="armed already"):
        proxy.add(Rule("refuse", name="x"))
        proxy.add(Rule("refuse", name="x"))


def test_firings_go_into_the_history(fake: FakeCatalog) -> None:
    history = History()
    with CatalogProxy(fake.url, history=history) as proxy:
        proxy.add(Rule("status_after_forward", status=502))
        conn = connect(proxy)
        try:
            assert post(conn)[0] == 502
        finally:
            conn.close()
    (event,) = select(history, kind="fault", name=PROXY_FIRED)
    assert event.data["applied"] is True and event.data["status"] == 200
    assert event.data["answered"] == 502 and event.data["mode"] == "status_after_forward"


def test_an_unreachable_catalog_closes_the_client_connection(fake: FakeCatalog) -> None:
    url = fake.url
    fake.close()
    with CatalogProxy(url) as proxy:
        conn = connect(proxy)
        try:
            with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
                post(conn)
        finally:
            conn.close()
        assert proxy.fired == ()


def test_a_client_that_reads_nothing_does_not_hold_the_stop(fake: FakeCatalog) -> None:
    proxy = CatalogProxy(fake.url).start()
    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        client.connect((proxy.host, proxy.port))
        client.sendall(b"GET /large HTTP/1.1\r\nHost: catalog\r\n\r\n")
        time.sleep(1.0)  # the answer is forwarded; the client, as a frozen loader, reads none
        began = time.monotonic()
        proxy.stop()
        assert time.monotonic() - began < 5, "the stop waited for the client"
    finally:
        client.close()


def test_bad_rules_are_refused() -> None:
    with pytest.raises(ValueError, match="mode"):
        Rule("explode")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="probability"):
        Rule("refuse", probability=2)
    with pytest.raises(ValueError, match="upstream"):
        CatalogProxy("https://example.invalid")


def test_runs_as_its_own_process(fake: FakeCatalog, tmp_path: Path) -> None:
    from icefloe.harness.stack.ports import free_port

    port = free_port(18000)
    rule = json.dumps({"mode": "refuse", "times": None, "path": "/v1/config", "method": "GET"})
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "icefloe.harness.stack.catalogproxy"),
            *("--port", str(port), "--upstream", fake.url, "--rule", rule),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == f"catalog proxy on http://127.0.0.1:{port}"
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            conn.request("GET", "/v1/config")
            assert conn.getresponse().status == 503
        finally:
            conn.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0
    assert json.loads(err.strip().splitlines()[-1])["answered"] == 503


# -- the fault kind -------------------------------------------------------------------------


class _Run:
    """What ``catalog_http`` needs of a run: its history and its catalog proxy."""

    def __init__(self, proxy: CatalogProxy | None) -> None:
        self.history = History()
        self.catalog_proxy = proxy


def _fault(**params: Any) -> Any:
    import random

    from icefloe.harness.scenarios.faults import build_fault, parse_fault

    kind, parsed = parse_fault({"fault": "catalog_http", **params}, "test")
    return build_fault(kind, parsed, random.Random(1))


def test_the_fault_arms_a_rule_and_heals_with_what_landed(fake: FakeCatalog) -> None:
    with CatalogProxy(fake.url) as proxy:
        run = _Run(proxy)
        fault = _fault(mode="status_after_forward", status=504, times=2)
        facts = fault.inject(run)
        assert facts["path"] == COMMIT_PATH and facts["method"] == "POST"
        conn = connect(proxy)
        try:
            assert post(conn)[0] == 504
            fake.status_for[COMMIT] = 409
            assert post(conn)[0] == 504
            assert post(conn)[0] == 409  # times=2: the third one passes
        finally:
            conn.close()
        healed = fault.heal(run)
        assert proxy.rules == ()
    assert healed == {
        "rule": facts["rule"],
        "fired": 2,
        "applied": 1,
        "not_applied": 1,
        "unknown": 0,
        "in_flight": 0,
    }
    assert len(select(run.history, name=PROXY_FIRED)) == 2


def test_healing_the_fault_releases_a_black_hole(fake: FakeCatalog) -> None:
    with CatalogProxy(fake.url) as proxy:
        run = _Run(proxy)
        fault = _fault(mode="black_hole", times=None)
        fault.inject(run)
        conn = connect(proxy)
        healer = threading.Timer(0.3, fault.heal, args=(run,))
        healer.start()
        try:
            with pytest.raises(http.client.RemoteDisconnected):
                post(conn)
        finally:
            conn.close()
            healer.join()
    (event,) = select(run.history, name=PROXY_FIRED)
    assert event.data["applied"] is False and fake.posts() == []


def test_the_fault_waits_for_its_firings_when_asked(fake: FakeCatalog) -> None:
    with CatalogProxy(fake.url) as proxy:
        run = _Run(proxy)
        fault = _fault(mode="drop_after_forward", wait_s=5.0)

        def commit_soon() -> None:
            time.sleep(0.3)
            conn = connect(proxy)
            try:
                with pytest.raises(http.client.RemoteDisconnected):
                    post(conn)
            finally:
                conn.close()

        committer = threading.Thread(target=commit_soon)
        committer.start()
        facts = fault.inject(run)
        committer.join()
        assert facts["fired"] == 1
        assert fault.heal(run)["applied"] == 1


def test_a_run_without_a_catalog_proxy_skips_the_fault() -> None:
    from icefloe.harness.scenarios.faults import FaultSkipped

    with pytest.raises(FaultSkipped, match="proxy"):
        _fault(mode="refuse").inject(_Run(None))


def test_bad_fault_parameters_are_refused_when_read() -> None:
    from icefloe.harness.scenarios.params import ParamError

    with pytest.raises(ParamError, match="mode"):
        _fault(mode="explode")
    with pytest.raises(ParamError):
        _fault(mode="refuse", probability=1.5)
    with pytest.raises(ParamError, match="on"):
        _fault(mode="refuse", on="everything")


def test_a_black_hole_ends_when_the_client_gives_up(proxy: CatalogProxy, fake: FakeCatalog) -> None:
    rule = proxy.add(Rule("black_hole", times=None))
    conn = http.client.HTTPConnection(proxy.host, proxy.port, timeout=0.3)
    try:
        with pytest.raises(TimeoutError):
            post(conn)
    finally:
        conn.close()
    (fired,) = proxy.wait_fired(1, timeout_s=5, rule=rule.name)
    assert fired.seconds < 2.0 and fired.answered is None
    assert proxy.rules[0][0].name == rule.name  # still armed: only that request ended


def test_a_run_gets_a_catalog_proxy_in_front_of_its_catalog(fake: FakeCatalog) -> None:
    from types import SimpleNamespace

    from icefloe.harness.scenarios.faults.commits import attach_catalog_proxy

    run: Any = _Run(None)
    run.stack = SimpleNamespace(catalog_uri=fake.url)
    run.seed = 5
    proxy = attach_catalog_proxy(run)
    try:
        assert run.catalog_proxy is proxy and proxy.history is run.history
        fault = _fault(mode="refuse")
        fault.inject(run)
        conn = connect(proxy)
        try:
            assert post(conn)[0] == 503
        finally:
            conn.close()
        assert fault.heal(run)["not_applied"] == 1
    finally:
        proxy.stop()


def _glue(conn: http.client.HTTPConnection, operation: str) -> int:
    """A Glue request (AWS JSON 1.1: a POST to "/", the operation in ``X-Amz-Target``)."""
    headers = {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": operation}
    conn.request("POST", "/", body=b'{"DatabaseName": "d", "Name": "t"}', headers=headers)
    response = conn.getresponse()
    response.read()
    return response.status


def test_on_glue_the_fault_fires_on_update_table_only(fake: FakeCatalog) -> None:
    with CatalogProxy(fake.url, catalog="glue") as proxy:
        run = _Run(proxy)
        fault = _fault(mode="refuse", times=1)
        facts = fault.inject(run)
        assert facts["operation"] == r"AWSGlue\.UpdateTable"
        conn = connect(proxy)
        try:
            assert _glue(conn, "AWSGlue.GetTable") == 200  # a load passes
            assert _glue(conn, "AWSGlue.UpdateTable") == 503  # the commit is refused
            assert _glue(conn, "AWSGlue.UpdateTable") == 200  # times=1
            assert post(conn)[0] == 200  # a REST commit's path is not Glue's commit
        finally:
            conn.close()
        (fired,) = proxy.fired
        assert (fired.operation, fired.applied) == ("AWSGlue.UpdateTable", False)


def test_on_glue_a_multi_table_commit_is_no_request() -> None:
    from icefloe.harness.scenarios.faults import FaultSkipped
    from icefloe.harness.scenarios.faults.commits import CatalogHttpParams

    with pytest.raises(FaultSkipped, match="glue catalog has no 'transaction'"):
        CatalogHttpParams(mode="refuse", on="transaction").rule("r", "glue")


def test_a_rule_can_spare_a_clients_own_retries(fake: FakeCatalog) -> None:
    with CatalogProxy(fake.url, catalog="glue") as proxy:
        rule = proxy.add(Rule("refuse", method="POST", path="/", times=1, on_retries=False))
        conn = connect(proxy)
        try:
            for attempt, status in ((2, 200), (1, 503)):
                conn.request(
                    "POST",
                    "/",
                    body=b"{}",
                    headers={"amz-sdk-request": f"attempt={attempt}; max=3"},
                )
                response = conn.getresponse()
                response.read()
                assert response.status == status
        finally:
            conn.close()
        (fired,) = proxy.fired_by(rule.name)
        assert fired.attempt == 1


def test_ack_unapplied_answers_a_commit_as_applied_and_forwards_nothing(fake: FakeCatalog) -> None:
    table = {"metadata-location": "s3://b/t/m1.json", "metadata": {"format-version": 2}}
    fake.tables[COMMIT] = {**table, "config": {}}
    with CatalogProxy(fake.url) as proxy:
        proxy.add(Rule("ack_unapplied", times=2))
        conn = connect(proxy)
        try:
            status, body = post(conn, b'{"updates": [{"action": "add-snapshot"}]}')
            assert (status, json.loads(body)) == (200, table)  # the table as it stands
        finally:
            conn.close()
        assert fake.posts() == []  # the commit never reached the catalog
        assert [m for m, _, _ in fake.received] == ["GET"]
    with CatalogProxy(fake.url, catalog="glue") as proxy:
        proxy.add(Rule("ack_unapplied", method="POST", path="/", operation=r"AWSGlue\.UpdateTable"))
        conn = connect(proxy)
        try:
            assert _glue(conn, "AWSGlue.UpdateTable") == 200
            assert _glue(conn, "AWSGlue.GetTable") == 200
        finally:
            conn.close()
        (fired,) = proxy.fired
        assert (fired.applied, fired.answered) == (False, 200)
    assert fake.posts() == [b'{"DatabaseName": "d", "Name": "t"}']  # only GetTable went on


def test_ack_unapplied_answers_nothing_when_there_is_no_table_to_answer_with(
    proxy: CatalogProxy, fake: FakeCatalog
) -> None:
    proxy.add(Rule("ack_unapplied"))
    conn = connect(proxy)
    try:
        with pytest.raises(http.client.RemoteDisconnected):
            post(conn)  # the fake's GET answers no table
    finally:
        conn.close()
    assert fake.posts() == []
