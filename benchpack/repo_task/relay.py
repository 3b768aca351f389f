"""The one network path a sandboxed external agent has: to the model endpoint, nothing else.

A bubblewrap sandbox has its own network namespace with only a loopback
interface. An external agent still has to call the model, so the runner
relays exactly one destination:

    agent ──TCP 127.0.0.1:PORT──▶ in-sandbox relay ──unix socket──▶ ModelRelay ──TCP──▶ endpoint host:PORT

`ModelRelay` (runner side) listens on a Unix socket in a private directory
that is bound into the sandbox; every connection on it is piped to the
endpoint's host and port. `wrap_agent_argv` puts `IN_SANDBOX_RELAY` in front
of the agent: it listens on 127.0.0.1 and ::1 at the endpoint's port inside
the sandbox, starts the agent, pipes each connection to the socket, and exits
with the agent's status. So a loopback endpoint URL works unchanged inside
the sandbox, and nothing but the endpoint is reachable. The in-sandbox part
runs where the candidate could tamper with it; the worst it can do is not
relay — the runner-side end only ever connects to the endpoint.
"""

from __future__ import annotations

import socket
import tempfile
import threading
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

SOCKET_NAME = "model.sock"
BUFFER = 65536
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def endpoint_address(endpoint: str) -> tuple[str, int] | None:
    """(host, port) the relay connects to, or None for an endpoint it cannot relay (https, malformed)."""
    try:
        parts = urlsplit(endpoint)
        port = parts.port or 80
    except ValueError:
        return None
    if parts.scheme != "http" or not parts.hostname:
        return None
    return parts.hostname, port


def sandbox_endpoint(endpoint: str) -> str:
    """The endpoint as the agent must address it inside the sandbox (loopback, same port and path)."""
    address = endpoint_address(endpoint)
    if address is None:
        return endpoint
    host, port = address
    if host in LOOPBACK_HOSTS:
        return endpoint
    parts = urlsplit(endpoint)
    return urlunsplit((parts.scheme, f"127.0.0.1:{port}", parts.path, parts.query, parts.fragment))


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(BUFFER):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        for sock, how in ((sink, socket.SHUT_WR), (source, socket.SHUT_RD)):
            try:
                sock.shutdown(how)
            except OSError:
                pass


class ModelRelay:
    """Runner side: a Unix socket whose connections go to `endpoint`'s host and port only.

    `target` (the measuring proxy's address) is where connections go instead; `address` stays the
    endpoint's, whose port the in-sandbox end listens on, so the agent's URL is the endpoint's own.
    """

    def __init__(self, endpoint: str, target: tuple[str, int] | None = None) -> None:
        self.address = endpoint_address(endpoint)
        self.target = target if self.address is not None and target is not None else self.address
        self._dir: tempfile.TemporaryDirectory | None = None
        self._server: socket.socket | None = None
        self._threads: list[threading.Thread] = []
        self._connections: list[socket.socket] = []
        self._lock = threading.Lock()

    @property
    def directory(self) -> Path | None:
        return Path(self._dir.name) if self._dir else None

    @property
    def socket_path(self) -> Path | None:
        return self.directory / SOCKET_NAME if self._dir else None

    def __enter__(self) -> ModelRelay:
        if self.address is None:
            return self
        self._dir = tempfile.TemporaryDirectory(prefix="benchpack-relay-")
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.socket_path))
        self._server.listen(16)
        thread = threading.Thread(target=self._accept, name="benchpack-model-relay", daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def _accept(self) -> None:
        while True:
            try:
                inner, _ = self._server.accept()
            except OSError:
                return
            try:
                outer = socket.create_connection(self.target, timeout=30)
                outer.settimeout(None)
            except OSError:
                inner.close()
                continue
            with self._lock:
                self._connections += [inner, outer]
            for a, b in ((inner, outer), (outer, inner)):
                thread = threading.Thread(target=_pipe, args=(a, b), daemon=True)
                thread.start()

    def __exit__(self, *exc) -> None:
        if self._server is not None:
            try:
                self._server.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._server.close()
        with self._lock:
            for sock in self._connections:
                try:
                    sock.close()
                except OSError:
                    pass
            self._connections.clear()
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None


# Runs inside the sandbox as `python -I -B -c IN_SANDBOX_RELAY SOCKET PORT -- AGENT...`.
IN_SANDBOX_RELAY = r"""
import os, signal, socket, subprocess, sys, threading
sock_path, port, argv = sys.argv[1], int(sys.argv[2]), sys.argv[4:]
def pipe(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    for s, how in ((b, socket.SHUT_WR), (a, socket.SHUT_RD)):
        try:
            s.shutdown(how)
        except OSError:
            pass
def serve(listener):
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            up.connect(sock_path)
        except OSError:
            conn.close()
            continue
        for a, b in ((conn, up), (up, conn)):
            threading.Thread(target=pipe, args=(a, b), daemon=True).start()
for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
    try:
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(16)
    except OSError:
        continue
    threading.Thread(target=serve, args=(listener,), daemon=True).start()
try:
    child = subprocess.Popen(argv)
except OSError as exc:
    print(f"benchpack: could not start the external agent {argv[0]!r}: {exc.strerror or exc}", file=sys.stderr)
    os._exit(127)
for sig in (signal.SIGTERM, signal.SIGINT):
    signal.signal(sig, lambda n, f: child.send_signal(n))
code = child.wait()
sys.stdout.flush()
os._exit(code if code >= 0 else 128 - code)
"""


def wrap_agent_argv(argv: list[str], socket_path: str, port: int, python: str) -> list[str]:
    return [python, "-I", "-B", "-c", IN_SANDBOX_RELAY, socket_path, str(port), "--", *argv]

