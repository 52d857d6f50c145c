"""Shared fixtures of the security suite: a TCP listener on 127.0.0.1 that counts the
connections it receives (the oracle for "no query reaches the network")."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest


class Listener:
    """Accepts and counts TCP connections on 127.0.0.1 (and answers nothing useful)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port: int = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = False
        self._t = threading.Thread(target=self._serve, daemon=True)
        self._t.start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            try:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/sparql-results+json\r\n"
                             b"Content-Length: 62\r\n\r\n"
                             b'{"head":{"vars":["x"]},"results":{"bindings":[{"x":{"type":"uri","value":"urn:remote"}}]}}'[:62])
            except OSError:
                pass
            conn.close()

    def close(self) -> None:
        self._stop = True
        self.sock.close()


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    lst = Listener()
    # the listener works: a plain client reaches it (so a count of 0 means something)
    with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as c:
        c.recv(16)
    import time

    deadline = time.time() + 5
    while lst.connections < 1 and time.time() < deadline:
        time.sleep(0.01)
    assert lst.connections == 1
    lst.connections = 0
    yield lst
    lst.close()
