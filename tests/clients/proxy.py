"""Tiny TCP proxies on 127.0.0.1 in front of a real server. `DroppingProxy` breaks chosen exchanges, as a flaky
network would: it forwards the request, lets the server answer, then closes the client's connection without
passing the answer on."""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass, field


@dataclass
class LoopbackProxy:
    """Listens on a free port of 127.0.0.1 and hands each connection it accepts to `_serve`, in a thread."""

    upstream: tuple[str, int]

    def __post_init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.listener.close()


@dataclass
class DroppingProxy(LoopbackProxy):
    """`drop[prefix] = n`: the next n requests whose first bytes start with `prefix` lose their answer."""

    drop: dict[bytes, int] = field(default_factory=dict)
    dropped: list[bytes] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        super().__post_init__()

    def _should_drop(self, chunk: bytes) -> bool:
        with self.lock:
            for prefix, left in self.drop.items():
                if left > 0 and chunk.startswith(prefix):
                    self.drop[prefix] = left - 1
                    self.dropped.append(chunk.split(b"\r\n", 1)[0])
                    return True
        return False

    def _serve(self, client: socket.socket) -> None:
        upstream = socket.create_connection(self.upstream)
        doomed = threading.Event()

        def to_client() -> None:
            with contextlib.suppress(OSError):
                while data := upstream.recv(65536):
                    if doomed.is_set():  # the server answered: the request was handled; lose the answer
                        break
                    client.sendall(data)
            for sock in (client, upstream):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()

        threading.Thread(target=to_client, daemon=True).start()
        with contextlib.suppress(OSError):
            while data := client.recv(65536):
                if self._should_drop(data):
                    doomed.set()
                upstream.sendall(data)
