"""The platform as real processes: a gateway (uvicorn), Celery workers and a reconciler, on real servers."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from services.core.db.session import migrate
from services.core.settings import Settings
from tests.servers import free_port, wait_for

REPO = Path(__file__).resolve().parents[1]
# The shared corpus sits beside the clone (../shared/corpus); PAGEMILL_CORPUS points elsewhere. Tests reach it
# through the `corpus` fixture, which skips them, with the reason, when it is absent.
CORPUS = Path(os.environ.get("PAGEMILL_CORPUS") or REPO.parent / "shared" / "corpus")
FINAL = {"succeeded", "partial", "failed", "cancelled"}
# What a crashed task, request or process leaves in its log: Celery's ERROR records ("raised unexpected", a lost
# pool worker), a structlog error, uvicorn's "Exception in ASGI application", any traceback.
LOG_ERROR = re.compile(r"Traceback \(most recent call last\)|raised unexpected|Task handler raised error|"
                       r": (ERROR|CRITICAL)/|\[(error|critical) *\]|\"level\": ?\"(error|critical)\"|"
                       r"^(ERROR|CRITICAL):", re.MULTILINE)
# A new log record starts with a timestamp (Celery, structlog), a JSON object or a uvicorn level name; every
# other line (a traceback, Celery's "Task handler raised error") continues the record above it.
_RECORD_START = re.compile(r"^(\[?\d{4}-\d\d-\d\d|\{|(INFO|WARNING|ERROR|CRITICAL|DEBUG):)")


def _redis_db_share() -> range:
    """Redis databases 1-15, split between pytest-xdist workers: with one Redis server configured for the
    whole run (PAGEMILL_REDIS_URL), two workers never flush each other's database."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    share = 15 // max(1, min(workers, 15))
    return range(1 + worker * share, 1 + (worker + 1) * share)


_redis_dbs = itertools.cycle(_redis_db_share())


def redis_database(server_url: str) -> str:
    """A Redis database of its own (flushed) on the server, for one platform or one in-process app."""
    import redis

    url = f"{server_url.rsplit('/', 1)[0]}/{next(_redis_dbs)}"
    redis.Redis.from_url(url).flushdb()
    return url


def wait_until(check: Any, timeout: float, what: str, *, every: float = 0.2) -> Any:
    """Polls `check` until it returns something truthy (and returns that), or fails after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)


@dataclass(frozen=True)
class TenantKey:
    id: str
    key: str
    key_id: str


@dataclass
class Platform:
    workdir: Path
    database_url: str
    redis_base_url: str
    s3_endpoint: str | None = None
    engine: str = "cpu"
    extra_env: dict[str, str] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    nodes: dict[str, str] = field(default_factory=dict)  # a worker's name -> its Celery node name
    port: int = 0
    # Every platform gets an admin key; `start()` makes a tenant and its API key, which `client()` sends.
    admin_key: str = field(default_factory=lambda: f"admin-{uuid.uuid4().hex}")
    api_key: str | None = None
    tenant_id: str | None = None
    # Regexes of log records a test causes on purpose (a SIGKILLed pool worker, Redis going away); any other
    # error record in a process log fails the test (`platform_factory` checks before stopping the platform).
    expected_log_errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.redis_url = redis_database(self.redis_base_url)
        self.bucket = f"pagemill-{uuid.uuid4().hex[:12]}"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        (self.workdir / "logs").mkdir(parents=True, exist_ok=True)

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PAGEMILL_")}
        env.update({
            "PAGEMILL_DATA_DIR": str(self.workdir / "data"),
            "PAGEMILL_DATABASE_URL": self.database_url,
            "PAGEMILL_REDIS_URL": self.redis_url,
            "PAGEMILL_ENGINE__KIND": self.engine,
            "PAGEMILL_RECONCILER__INTERVAL_S": "1",
            "PAGEMILL_LOG_LEVEL": "INFO",
            "PAGEMILL_ADMIN_KEY": self.admin_key,
            # The tests' webhook receivers listen on 127.0.0.1.
            "PAGEMILL_WEBHOOKS__ALLOW_PRIVATE_URLS": "true",
            "PROMETHEUS_MULTIPROC_DIR": str(self.workdir / "metrics"),
            "PYTHONPATH": str(REPO),
        })
        if self.s3_endpoint:
            env.update({
                "PAGEMILL_STORAGE__KIND": "s3", "PAGEMILL_STORAGE__ENDPOINT_URL": self.s3_endpoint,
                "PAGEMILL_STORAGE__BUCKET": self.bucket, "PAGEMILL_STORAGE__CREATE_BUCKET": "true",
                "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
            })
        env.update(self.extra_env)
        return env

    def settings(self) -> Settings:
        """The same settings the processes read from their environment."""
        saved = dict(os.environ)
        try:
            os.environ.clear()
            os.environ.update(self.env)
            return Settings()
        finally:
            os.environ.clear()
            os.environ.update(saved)

    def _spawn(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        log = (self.workdir / "logs" / f"{name}.log").open("ab")
        process = subprocess.Popen([sys.executable, "-m", "services.cli", *args], env=self.env, cwd=REPO,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.processes[name] = process
        return process

    def start(self, *, worker: bool = True, reconciler: bool = False, concurrency: int = 2,
              webhook_worker: bool = False) -> Platform:
        """With `webhook_worker`, webhooks get a thread-pool worker of their own (as `pagemill serve` does)."""
        (self.workdir / "metrics").mkdir(parents=True, exist_ok=True)
        migrate(self.database_url)
        self.start_gateway(wait=False)
        if worker:
            queues = "pages.gpu,pages.cpu,documents,results" if webhook_worker else None
            self.start_worker("worker", concurrency=concurrency, queues=queues)
        if webhook_worker:
            self.start_worker("webhooks", concurrency=4, queues="webhooks", pool="threads")
        if reconciler:
            self.start_reconciler()
        wait_for(lambda: httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200, 60, "gateway")
        if self.api_key is None:
            tenant = self.create_tenant(f"tenant-{uuid.uuid4().hex[:8]}")
            self.tenant_id, self.api_key = tenant.id, tenant.key
        return self

    def start_gateway(self, name: str = "gateway", *, port: int | None = None, wait: bool = True) -> str:
        """A gateway process (another one: give it a `name` and a `port`); returns its base URL."""
        port = port or self.port
        self._spawn(name, "gateway", "--host", "127.0.0.1", "--port", str(port))
        url = f"http://127.0.0.1:{port}"
        if wait:
            wait_for(lambda: httpx.get(f"{url}/readyz", timeout=2).status_code == 200, 60, name)
        return url

    def start_worker(self, name: str = "worker", *, concurrency: int = 2, queues: str | None = None,
                     pool: str = "prefork", metrics_port: int | None = None) -> subprocess.Popen[bytes]:
        self.nodes[name] = f"{name}@{uuid.uuid4().hex[:6]}"
        args = ["worker", "--concurrency", str(concurrency), "--pool", pool, "--name", self.nodes[name]]
        if queues:
            args += ["--queues", queues]
        if metrics_port:
            args += ["--metrics-port", str(metrics_port)]
        return self._spawn(name, *args)

    def wait_workers(self, *names: str, timeout: float = 60) -> None:
        """Until each named worker answers a Celery ping: it consumes its queues (a test that needs work spread
        over several workers must not upload while one of them is still importing)."""
        from services.core.queues import get_celery
        control = get_celery(self.settings()).control
        nodes = {self.nodes[name] for name in names}

        def answered() -> bool:
            replies = control.ping(destination=sorted(nodes), timeout=1.0)
            return nodes <= {node for reply in replies for node in reply}
        wait_for(answered, timeout, f"workers {', '.join(names)}")

    def start_reconciler(self, metrics_port: int | None = None) -> subprocess.Popen[bytes]:
        args = ["reconcile", "--loop"]
        if metrics_port:
            args += ["--metrics-port", str(metrics_port)]
        return self._spawn("reconciler", *args)

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        process = self.processes.pop(name)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        process.wait(30)

    def stop(self, *, graceful: bool = True) -> None:
        """SIGTERM to every process (each exits as it does in production), or with `graceful=False` SIGKILL:
        a test's teardown has nothing to wait for, and a warm Celery shutdown takes seconds."""
        for name in list(self.processes):
            process = self.processes[name]
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM if graceful else signal.SIGKILL)
        for name in list(self.processes):
            try:
                self.processes[name].wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.processes[name].pid, signal.SIGKILL)
            self.processes.pop(name)

    def messages_waiting(self) -> int:
        """Messages on the queues plus those a worker has taken but not acknowledged: Celery's Redis transport
        keeps a message in its `unacked` hash until the task has returned (acks_late). 0: no work is left."""
        import redis

        client = redis.Redis.from_url(self.redis_url)
        lists = [key for key in client.scan_iter() if client.type(key) == b"list"]
        return sum(int(client.llen(key)) for key in lists) + int(client.hlen("unacked"))

    def log(self, name: str) -> str:
        path = self.workdir / "logs" / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def log_tails(self, lines: int = 80) -> dict[str, str]:
        """The last `lines` lines of every process log, by process name: what a failed test's report shows."""
        return {path.stem: "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
                for path in sorted((self.workdir / "logs").glob("*.log"))}

    def expect_log_errors(self, *patterns: str) -> None:
        self.expected_log_errors.extend(patterns)

    def log_errors(self) -> list[str]:
        """Error records of every process log (`logs/*.log`) that no `expected_log_errors` pattern explains."""
        found = []
        for path in sorted((self.workdir / "logs").glob("*.log")):
            records: list[list[str]] = []
            for line in path.read_text(errors="replace").splitlines():
                if _RECORD_START.match(line) or not records:
                    records.append([line])
                else:
                    records[-1].append(line)
            for lines in records:
                record = "\n".join(lines)
                if LOG_ERROR.search(record) and not any(re.search(p, record) for p in self.expected_log_errors):
                    found.append(f"{path.name}: {record[:3000]}")
        return found

    # the HTTP API, as a customer uses it ----------------------------------------------------------------------

    def admin(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60, headers={"Authorization": f"Bearer {self.admin_key}"})

    def create_tenant(self, name: str, **limits: float) -> TenantKey:
        """A tenant (with limit overrides) and one API key, through the admin HTTP API."""
        with self.admin() as admin:
            response = admin.post("/v1/admin/tenants", json={"name": name, "limits": limits or None})
            assert response.status_code == 201, response.text
            tenant_id = response.json()["id"]
            response = admin.post(f"/v1/admin/tenants/{tenant_id}/keys", json={"name": "tests"})
            assert response.status_code == 201, response.text
            return TenantKey(tenant_id, response.json()["key"], response.json()["id"])

    def client(self, *, key: str | None = None, auth: bool = True, **kwargs: Any) -> httpx.Client:
        """An HTTP client that sends the platform tenant's key (or `key`); `auth=False` sends none."""
        headers = dict(kwargs.pop("headers", None) or {})
        if auth and (key or self.api_key):
            headers.setdefault("Authorization", f"Bearer {key or self.api_key}")
        kwargs.setdefault("timeout", 60)
        return httpx.Client(base_url=self.url, headers=headers, **kwargs)

    def upload(self, path: Path, *, expect: int = 202, headers: dict[str, str] | None = None,
               key: str | None = None, **fields: str) -> dict[str, Any]:
        with self.client(key=key) as client, path.open("rb") as handle:
            response = client.post("/v1/documents", files={"file": (path.name, handle)}, data=fields,
                                   headers=headers or {})
        assert response.status_code == expect, response.text
        body: dict[str, Any] = response.json()
        return body

    def wait_done(self, document_id: str, timeout: float = 180, headers: dict[str, str] | None = None,
                  key: str | None = None) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self.client(headers=headers or {}, key=key) as client:
            while True:
                response = client.get(f"/v1/documents/{document_id}", params={"wait": 5})
                assert response.status_code == 200, response.text
                state: dict[str, Any] = response.json()
                if state["status"] in FINAL:
                    return state
                if time.monotonic() > deadline:
                    raise AssertionError(f"document {document_id} still {state} after {timeout}s\n"
                                         f"{self.log('worker')[-3000:]}")

    def result(self, document_id: str, fmt: str = "markdown", headers: dict[str, str] | None = None,
               key: str | None = None) -> Any:
        with self.client(headers=headers or {}, key=key) as client:
            response = client.get(f"/v1/documents/{document_id}/result", params={"format": fmt})
        assert response.status_code == 200, response.text
        return response.json() if fmt == "json" else response.text
