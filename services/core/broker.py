"""kombu's Redis transport, with one defect worked around (a channel closed after its connection) and one cost
saved (a Redis client built per command, see `Channel.conn_or_acquire`).

The defect: when the broker goes away, kombu's `Connection.close()` may fail to close a channel (the close
itself needs the dead server), swallow that error and drop the transport's connection info (`transport.client = None`).
The channel is closed later; closing it restores its unacknowledged messages, which builds a new Redis pool
from the connection info that is gone: `AttributeError: 'NoneType' object has no attribute 'hostname'`.
That error is not one of the broker's connection errors, so Celery's consumer calls it unrecoverable and the
worker's main process exits, pages in hand (seen in the Redis-restart fault test about one run in four).

Here the channel keeps its own copy of the connection info, so the restore reaches the broker that is back;
a restore that still fails (the broker is still down) is logged and dropped. Nothing is lost by dropping it:
the messages are still in Redis's unacked index if Redis kept them (kombu's `restore_visible` brings them back
after the visibility timeout), and the database is the record either way, so the reconciler sends again
whatever a lost message carried. `make_celery` selects this transport for `redis://` and `rediss://` URLs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kombu.transport import redis as kombu_redis

from services.core.logging import get_logger

log = get_logger(__name__)

TRANSPORT = "services.core.broker:Transport"


class QoS(kombu_redis.QoS):
    def restore_unacked(self, client: Any = None) -> None:
        try:
            super().restore_unacked(client)  # type: ignore[no-untyped-call]
        except self.channel.connection.connection_errors as error:
            log.warning("broker.restore_unacked_failed", messages=len(self._delivered), error=repr(error))
            self._delivered.clear()


class Channel(kombu_redis.Channel):
    QoS = QoS

    def __init__(self, connection: Any, *args: Any, **kwargs: Any) -> None:
        self._conninfo = connection.client  # the Connection, kept: the transport forgets it on a failed close
        self._sync_client: tuple[Any, Any] | None = None  # (pool, client) for `conn_or_acquire`
        super().__init__(connection, *args, **kwargs)  # type: ignore[no-untyped-call]

    @contextmanager
    def conn_or_acquire(self, client: Any = None) -> Iterator[Any]:
        """kombu builds a new `redis.Redis` for every publish and acknowledgement, and building one (its table
        of response callbacks) costs more than the command it sends. One client over the channel's pool, made
        again when the pool is, serves them all (a client takes a connection from the pool per command, so it
        is as safe to share as the pool)."""
        if client:
            yield client
            return
        pool = self.pool
        if self._sync_client is None or self._sync_client[0] is not pool:
            self._sync_client = (pool, self._create_client())  # type: ignore[no-untyped-call]
        yield self._sync_client[1]

    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        transport = self.connection
        if transport.client is not None:
            return super()._connparams(asynchronous=asynchronous)  # type: ignore[no-untyped-call,no-any-return]
        transport.client = self._conninfo  # only for the time it takes to read it
        try:
            return super()._connparams(asynchronous=asynchronous)  # type: ignore[no-untyped-call,no-any-return]
        finally:
            transport.client = None


class Transport(kombu_redis.Transport):
    Channel = Channel
