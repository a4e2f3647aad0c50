"""The vllm engine's open requests, sent by `max_in_flight` threads: the next one as soon as one ends.

Each sender thread sends the next waiting request as soon as its own answer is in, the way a client that keeps N
requests open does. The page threads of a GPU worker used to take one of N slots (a semaphore) and send their
request themselves. When a request ended, its thread released the slot and a page thread asleep on it had to
wake, win the GIL from the threads preparing pages and encode its ~300 KiB body before the request left: a slot of
vLLM's batch stood empty ~25 ms at the median between two requests (8 ms for a client with its bodies ready) and
over 100 ms in a busy worker's tail. Here the body is encoded by the page's thread before it waits (`json_body`),
and a sender that gets its answer takes the next body off the queue in the same breath; the page's thread waits
for its answer on a future, off the path between two requests. Bodies go in the order they came; never more than
`count` requests are open. Measured against a GPU stand-in at the H100 rate, this took ~0.5 % of the run's time
off what pagemill loses between requests (docs/benchmarks.md, the GPU stand-in).
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

T = TypeVar("T")

# How long `close` waits for a sender to finish the request it is in.
CLOSE_WAIT_S = 5.0


def json_body(body: dict[str, Any]) -> bytes:
    """The request's JSON as httpx would send it for `json=body` (the same bytes on the wire)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


class Senders(Generic[T]):
    """`count` threads started on the first request, each calling `send` on the next body waiting."""

    def __init__(self, send: Callable[[bytes], T], count: int, name: str = "vllm-sender") -> None:
        if count < 1:
            raise ValueError("Senders needs at least one thread")
        self._send, self.count, self.name = send, count, name
        self._queue: queue.SimpleQueue[tuple[bytes, Future[T]] | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False

    def call(self, body: bytes) -> T:
        """`send(body)`'s answer (or its exception) once a sender got to it; blocks until then."""
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the engine's senders are closed")
            if not self._threads:
                self._threads = [threading.Thread(target=self._run, name=f"{self.name}-{i}", daemon=True)
                                 for i in range(self.count)]
                for thread in self._threads:
                    thread.start()
            self._queue.put((body, future))
        return future.result()

    @property
    def waiting(self) -> int:
        """Bodies queued for a sender now."""
        return self._queue.qsize()

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            body, future = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(self._send(body))
            except BaseException as exc:  # noqa: BLE001 - the page's thread raises it, as if it had sent the body
                future.set_exception(exc)

    def close(self) -> None:
        """Stops the threads once the bodies already queued are sent (each waited for at most CLOSE_WAIT_S)."""
        with self._lock:
            self._closed = True
            threads, self._threads = self._threads, []
        for _ in threads:
            self._queue.put(None)
        for thread in threads:
            thread.join(CLOSE_WAIT_S)
