"""Misbehaving HTTP peers on 127.0.0.1, for the failures a well-behaved server never shows.

``raw_server({"/path": Answer(...)})`` answers each request for a path with the exact bytes
given (then closes), holds it without answering until shutdown (``hold=True``), or sends the
bytes and resets the connection (``reset=True``: the peer sees ECONNRESET). A path with no
answer is held too. :func:`unanswered_port` is a listening port whose accept queue is full, so
a new connection is never established (a connect timeout); :func:`closed_port` refuses.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from socketserver import BaseRequestHandler, ThreadingTCPServer

HOLD_LIMIT_S = 10.0


@dataclass(frozen=True)
class Answer:
    data: bytes = b""
    hold: bool = False
    reset: bool = False


class _Server(ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    answers: Mapping[str, Answer]
    release: threading.Event

    def handle_error(self, request: object, client_address: object) -> None:
        """Clients that hang up early are expected; stay quiet."""


class _Handler(BaseRequestHandler):
    server: _Server
    request: socket.socket

    def handle(self) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.request.recv(4096)
            if not chunk:
                return
            head += chunk
        path = head.split(b" ", 2)[1].decode("ascii", "replace").split("?", 1)[0]
        answer = self.server.answers.get(path, Answer(hold=True))
        if answer.hold:
            self.server.release.wait(HOLD_LIMIT_S)
            return
        self.request.sendall(answer.data)
        if answer.reset:
            self.request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.request.close()  # now, before the server's shutdown(SHUT_WR) sends a FIN


@contextmanager
def raw_server(answers: Mapping[str, Answer]) -> Iterator[int]:
    """Serve ``answers`` on an ephemeral port of 127.0.0.1; yields the port."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.answers = answers
    server.release = threading.Event()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextmanager
def unanswered_port() -> Iterator[int]:
    """A port on 127.0.0.1 that listens but whose accept queue is full: the handshake of a
    new connection never completes (Linux drops the SYN), so connecting times out."""
    with ExitStack() as stack:
        listener = stack.enter_context(socket.socket())
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = int(listener.getsockname()[1])
        for _ in range(2):  # fill the queue; the second may stay half-open, which is as good
            filler = stack.enter_context(socket.socket())
            filler.setblocking(False)
            try:
                filler.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
        yield port


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound once, then released): connecting is
    refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
