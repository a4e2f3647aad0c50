"""The raw webhook receivers count a connection out when its sender hangs up, even before the thread serving it
wakes to that: a test that bounds a tenant's open attempts must not see a sender's last attempt and its next one
at once because a thread was slow (a fresh-clone CI run saw 3 where the sender held 2)."""

from __future__ import annotations

import socket
import threading

from tests.receivers import Connection, _RawReceiver


class _Unwoken(_RawReceiver):
    """Answers, then does not look at its connection again until `release` is set."""

    def __init__(self) -> None:
        self.release = threading.Event()
        super().__init__()

    def answer(self, client: socket.socket, connection: Connection) -> None:
        client.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
        self.release.wait(30)


def _request(url: str, webhook_id: str) -> socket.socket:
    port = int(url.split(":")[2].split("/")[0])
    sender = socket.create_connection(("127.0.0.1", port))
    sender.sendall(f"POST /hooks HTTP/1.1\r\nhost: x\r\nwebhook-id: {webhook_id}\r\ncontent-length: 0\r\n\r\n".encode())
    return sender


def test_a_sender_that_hung_up_is_counted_out_when_its_next_connection_comes() -> None:
    receiver = _Unwoken()
    try:
        first = _request(receiver.url, "first")
        receiver.wait_for(lambda: receiver.open_now == 1, 10, "the first request")
        first.close()  # its serving thread is still waiting: it has not seen the hang-up
        second = _request(receiver.url, "second")
        receiver.wait_for(lambda: len(receiver.connections) == 2, 10, "the second request")
        assert receiver.max_open == 1 and receiver.open_now == 1
        assert receiver.connections[0].closed is not None and receiver.connections[1].closed is None
        receiver.release.set()
        second.close()
        receiver.wait_for(lambda: receiver.open_now == 0, 10, "both connections to end")
        assert [c.webhook_id for c in receiver.connections] == ["first", "second"]
    finally:
        receiver.release.set()
        receiver.close()
