"""A loopback HTTP fault proxy in front of an S3 API server (moto), for the fault-injection tests.

Every request is forwarded to the upstream server unchanged. A :class:`Rule` that matches a request
(method and a regular expression searched in the decoded path, ``/bucket/key`` with path-style
addressing) changes
what the client gets back, a given number of times or always:

* ``"error500"``: an S3 ``InternalError`` answer with status 500 (the request is not forwarded);
* ``"truncate"``: the upstream status and headers (with the full ``Content-Length``), half of the
  body, then the connection is closed;
* ``"stall"``: the headers and half of the body, then nothing for ``stall_seconds`` before closing;
* ``"hang"``: nothing at all for ``stall_seconds`` (a hung endpoint), then the whole answer.

Example::

    with FaultProxy("http://127.0.0.1:5000") as proxy:
        proxy.add(Rule("GET", r"/in/.*\\.xml$", "truncate", times=1))
        ...  # point FEEDROUTER_S3_ENDPOINT_URL at proxy.url
"""

from __future__ import annotations

import contextlib
import http.client
import re
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal
from urllib.parse import unquote, urlsplit

Action = Literal["error500", "truncate", "stall", "hang"]

#: Headers of one connection, not of the message: never forwarded.
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"}
)
ERROR_BODY = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code>'
    b"<Message>injected by the fault proxy</Message></Error>"
)


@dataclass
class Rule:
    """What to do to requests that match ``method`` and ``path`` (a regex searched in the path).

    Attributes:
        times: how many matching requests to spoil (None: all of them).
        hits: how many it has spoiled so far.
    """

    method: str
    path: str
    action: Action
    times: int | None = None
    stall_seconds: float = 3.0
    hits: int = 0

    def matches(self, method: str, path: str) -> bool:
        """True for a live rule and a request of its method whose decoded path it finds."""
        spent = self.times is not None and self.hits >= self.times
        return not spent and method == self.method and re.search(self.path, unquote(path)) is not None


class FaultProxy:
    """The proxy server on a free loopback port; a context manager that starts and stops it."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.rules: list[Rule] = []
        self.requests: list[tuple[str, str]] = []  # (method, path) of every request seen
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def add(self, rule: Rule) -> Rule:
        with self._lock:
            self.rules.append(rule)
        return rule

    def clear(self) -> None:
        with self._lock:
            self.rules.clear()

    def rule_for(self, method: str, path: str) -> Rule | None:
        """The first live rule for the request, counted as a hit."""
        with self._lock:
            self.requests.append((method, path))
            for rule in self.rules:
                if rule.matches(method, path):
                    rule.hits += 1
                    return rule
        return None

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def _handler_for(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(_Forwarder):
        pass

    Handler.proxy = proxy
    return Handler


class _Forwarder(BaseHTTPRequestHandler):
    proxy: FaultProxy
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet: the tests assert on proxy.requests

    def do_GET(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def do_HEAD(self) -> None:
        self._handle()

    def _handle(self) -> None:
        body = self._request_body()
        rule = self.proxy.rule_for(self.command, self.path)
        if rule is not None and rule.action == "error500":
            self._send(500, [("Content-Type", "application/xml")], ERROR_BODY)
            return
        if rule is not None and rule.action == "hang":
            time.sleep(rule.stall_seconds)
            rule = None
        status, headers, payload = self._forward(body)
        if rule is None or self.command == "HEAD" or not payload:
            self._send(status, headers, payload)
            return
        self._send_half(status, headers, payload, rule)

    def _request_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            return self._chunked_body()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _chunked_body(self) -> bytes:
        chunks = []
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(chunks)
            chunks.append(self.rfile.read(size))
            self.rfile.readline()

    def _forward(self, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        connection = http.client.HTTPConnection(*self.proxy.upstream, timeout=30)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            if body or self.command in ("PUT", "POST"):
                headers["Content-Length"] = str(len(body))
            connection.request(self.command, self.path, body=body, headers=headers)
            response = connection.getresponse()
            payload = response.read()
            kept = [(k, v) for k, v in response.getheaders() if k.lower() not in HOP_BY_HOP]
            return response.status, kept, payload
        finally:
            connection.close()

    def _send(self, status: int, headers: list[tuple[str, str]], payload: bytes) -> None:
        self.send_response(status)
        for name, value in headers:
            if name.lower() != "content-length":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def _send_half(self, status: int, headers: list[tuple[str, str]], payload: bytes, rule: Rule) -> None:
        cut_response(self, status, headers, payload, rule)


def cut_response(
    handler: BaseHTTPRequestHandler, status: int, headers: list[tuple[str, str]], payload: bytes, rule: Rule
) -> None:
    """Write a response that announces ``payload`` whole but delivers half of it."""
    handler.send_response(status)
    for name, value in headers:
        if name.lower() not in ("content-length", "connection"):
            handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(payload)))
    handler.send_header("Connection", "close")
    handler.end_headers()
    handler.wfile.write(payload[: max(1, len(payload) // 2)])
    handler.wfile.flush()
    if rule.action == "stall":
        time.sleep(rule.stall_seconds)
    handler.close_connection = True
    with contextlib.suppress(OSError):
        handler.connection.shutdown(socket.SHUT_RDWR)
