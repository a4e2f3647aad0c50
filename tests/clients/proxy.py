"""A tiny TCP proxy on 127.0.0.1 that breaks chosen exchanges, as a flaky network would: it forwards the request,
lets the server answer, then closes the client's connection without passing the answer on."""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass, field


@dataclass
class DroppingProxy:
    """`drop[prefix] = n`: the next n requests whose first bytes start with `prefix` lose their answer."""

    upstream: tuple[str, int]
    drop: dict[bytes, int] = field(default_factory=dict)
    dropped: list[bytes] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

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

    def close(self) -> None:
        self.listener.close()
