"""The vllm engine's sender threads (services/worker/engines/vllm/senders.py): no more requests open than its
threads, every caller gets its own answer or error, bodies leave in the order they came, the bytes are httpx's."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from services.worker.engines.vllm.senders import Senders, json_body

WAIT_S = 10.0


class Server:
    """A `send` that holds each body until the test lets it go, recording what is open and in which order."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.open: list[bytes] = []
        self.started: list[bytes] = []
        self.peak = 0
        self.released: set[bytes] = set()

    def send(self, body: bytes) -> str:
        with self.changed:
            self.open.append(body)
            self.started.append(body)
            self.peak = max(self.peak, len(self.open))
            self.changed.notify_all()
            assert self.changed.wait_for(lambda: body in self.released, WAIT_S)
            self.open.remove(body)
        if body.startswith(b"bad"):
            raise ValueError(body.decode())
        return "answer to " + body.decode()

    def release(self, body: bytes) -> None:
        with self.changed:
            self.released.add(body)
            self.changed.notify_all()

    def wait_open(self, count: int, without: bytes = b"") -> list[bytes]:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.open) == count and without not in self.open, WAIT_S), \
                self.open
            return list(self.open)


def wait_until(state: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not state():
        assert time.monotonic() < deadline, "the state never came"
        time.sleep(0.001)


def test_no_more_open_than_threads_and_the_next_body_leaves_when_one_ends() -> None:
    server = Server()
    senders = Senders(server.send, 2)
    bodies = [f"page {i}".encode() for i in range(5)]
    with ThreadPoolExecutor(len(bodies)) as callers:
        futures = []
        for body in bodies:  # one at a time, so that the queue's order is known
            futures.append(callers.submit(senders.call, body))
            if len(futures) <= 2:
                server.wait_open(len(futures))
            else:
                wait_until(lambda: senders.waiting == len(futures) - 2)
        assert sorted(server.wait_open(2)) == bodies[:2]
        server.release(bodies[0])
        assert sorted(server.wait_open(2, without=bodies[0])) == [bodies[1], bodies[2]]  # the oldest waiting
        for body in bodies[1:]:
            server.release(body)
        answers = [future.result(WAIT_S) for future in futures]
    assert answers == [f"answer to page {i}" for i in range(5)]
    assert server.peak == 2
    assert server.started == bodies
    senders.close()


def test_a_failed_send_raises_in_its_caller_only() -> None:
    server = Server()
    senders = Senders(server.send, 2)
    server.release(b"bad page")
    server.release(b"good page")
    with pytest.raises(ValueError, match="bad page"):
        senders.call(b"bad page")
    assert senders.call(b"good page") == "answer to good page"
    senders.close()


def test_closed_senders_refuse_and_their_threads_end() -> None:
    server = Server()
    senders = Senders(server.send, 3, name="test-sender")
    server.release(b"one")
    assert senders.call(b"one") == "answer to one"
    assert sum(t.name.startswith("test-sender") for t in threading.enumerate()) == 3
    senders.close()
    assert not any(t.name.startswith("test-sender") for t in threading.enumerate())
    with pytest.raises(RuntimeError, match="closed"):
        senders.call(b"two")


def test_json_body_is_what_httpx_sends_for_json() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "é « » \n"}]}],
            "max_tokens": 256, "temperature": 0.0, "logprobs": True}
    assert json_body(body) == httpx.Request("POST", "http://x/v1", json=body).content
