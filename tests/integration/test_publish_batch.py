"""Page jobs go out in one Redis pipeline: the round trips of a batch do not grow with its messages, every
message arrives, and a batch whose pipeline fails is sent again message by message once Redis is back."""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
import redis
from kombu.exceptions import OperationalError
from structlog.testing import capture_logs

from services.core.queues import Job, Queue, TaskName, make_celery, redis_lists, send_jobs
from services.core.settings import Settings
from tests.clients.proxy import LoopbackProxy
from tests.harness import redis_database


@dataclass
class CountingProxy(LoopbackProxy):
    """A TCP proxy in front of Redis that counts the replies it forwards to its clients: one request/reply
    exchange per round trip (loopback delivers a pipeline's replies together), and can drop its connections."""

    replies: int = 0
    connections: list[socket.socket] = field(default_factory=list)
    failing: bool = False

    def _serve(self, client: socket.socket) -> None:
        if self.failing:
            client.close()
            return
        server = socket.create_connection(self.upstream)
        self.connections += [client, server]
        threading.Thread(target=self._pipe, args=(client, server, False), daemon=True).start()
        self._pipe(server, client, True)

    def _pipe(self, source: socket.socket, destination: socket.socket, is_reply: bool) -> None:
        try:
            while data := source.recv(65536):
                if is_reply:
                    self.replies += 1
                destination.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, destination):
                end.close()

    def cut(self) -> None:
        """Drops every connection and refuses new ones until `failing` is set back."""
        self.failing = True
        for connection in self.connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            connection.close()
        self.connections.clear()

    def close(self) -> None:
        self.cut()
        super().close()


@pytest.fixture
def proxied(redis_server: str) -> Iterator[tuple[CountingProxy, str, redis.Redis]]:
    direct = redis.Redis.from_url(redis_database(redis_server))
    database = direct.connection_pool.connection_kwargs["db"]
    host, port = direct.connection_pool.connection_kwargs["host"], direct.connection_pool.connection_kwargs["port"]
    proxy = CountingProxy((host, int(port)))
    url = f"redis://127.0.0.1:{proxy.port}/{database}"
    yield proxy, url, direct
    proxy.close()
    direct.flushdb()
    direct.close()


def page_jobs(count: int, first: int = 0) -> list[Job]:
    return [Job(TaskName.PARSE_PAGE, Queue.PAGES_CPU, {"document_id": "doc_batch", "page_index": first + i})
            for i in range(count)]


def waiting(client: redis.Redis) -> list[int]:
    indexes = []
    for name in redis_lists(Queue.PAGES_CPU):
        for raw in client.lrange(name, 0, -1):  # type: ignore[union-attr]
            body = json.loads(base64.b64decode(json.loads(raw)["body"]))
            indexes.append(body[0][0]["page_index"])
    return sorted(indexes)


def round_trips(proxy: CountingProxy, app: object, jobs: list[Job]) -> int:
    before = proxy.replies
    send_jobs(app, jobs)  # type: ignore[arg-type]
    return proxy.replies - before


def test_a_batch_of_page_jobs_takes_the_round_trips_of_one_job(
        proxied: tuple[CountingProxy, str, redis.Redis]) -> None:
    proxy, url, direct = proxied
    app = make_celery(Settings(redis_url=url))
    send_jobs(app, page_jobs(1, first=1000))  # the connection and the queue's bindings are made once
    one = round_trips(proxy, app, page_jobs(1, first=2000))
    forty = round_trips(proxy, app, page_jobs(40))
    # one message at a time is forty exchanges (one reply each); a pipeline is one, whose forty replies Redis
    # writes in a few segments
    assert one == 1 and forty <= 8, (one, forty)
    assert waiting(direct) == sorted([1000, 2000, *range(40)])


def test_a_batch_after_a_dropped_connection_arrives_whole(proxied: tuple[CountingProxy, str, redis.Redis]) -> None:
    proxy, url, direct = proxied
    app = make_celery(Settings(redis_url=url))
    send_jobs(app, page_jobs(1, first=1000))
    proxy.cut()  # the producer's pooled connection is dead: the pipeline's first write fails
    proxy.failing = False  # Redis answers again (the client reconnects)
    send_jobs(app, page_jobs(10))
    # Every message is there; one that a failed pipeline had delivered may be there twice (a page claimed
    # twice is run once), none is missing.
    assert set(waiting(direct)) == {1000, *range(10)}


def test_a_batch_redis_never_takes_is_tried_again_one_by_one_then_raises(
        proxied: tuple[CountingProxy, str, redis.Redis]) -> None:
    proxy, url, direct = proxied
    app = make_celery(Settings(redis_url=url))
    send_jobs(app, page_jobs(1, first=1000))
    proxy.cut()  # and it stays down: the outbox logs the failure and the reconciler sends the pages later
    with capture_logs() as logs, pytest.raises(OperationalError):
        send_jobs(app, page_jobs(10))
    assert [entry["jobs"] for entry in logs if entry["event"] == "queue.batch_send_failed"] == [10]
    assert waiting(direct) == [1000]
