"""The deploy tier's driver: docker/compose.yaml under podman-compose and the chart's pods under `podman kube
play`, as an operator runs them, with what `make images` built (.pagemill/images.json).

Every wait is on a signal: a container's own health check (`podman healthcheck run`), a job's exit
(`podman wait`), the gateway's /readyz, a document's status (long-polled). Figures (start times, the replica,
kill and restart results) go to the JSON report `make test-deploy` writes (PAGEMILL_DEPLOY_REPORT), from which
docs/deploy.md quotes.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import FINAL, wait_until

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker" / "compose.yaml"
IMAGES_REPORT = Path(os.environ.get("PAGEMILL_IMAGES_REPORT", REPO / ".pagemill" / "images.json"))
BACKING = ("redis", "postgres", "minio")
PAGEMILL = ("gateway", "worker-cpu", "results", "reconciler")


def podman_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("CONTAINERS_CONF", str(REPO / "docker" / "podman" / "containers.conf"))
    return env


def require_podman() -> dict[str, Any]:
    """The images report, or a skip that says what is missing."""
    for tool in ("podman", "podman-compose"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed (make container-tools)")
    if subprocess.run(["podman", "info"], env=podman_env(), capture_output=True, check=False).returncode:
        pytest.skip("podman cannot run containers here")
    if not IMAGES_REPORT.exists():
        pytest.skip(f"no {IMAGES_REPORT}: run make images (make test-deploy does)")
    report: dict[str, Any] = json.loads(IMAGES_REPORT.read_text())
    if not report.get("backing"):
        pytest.skip("the images report names no Redis/PostgreSQL/S3 images: run python -m tools.images --backing")
    return report


def run(argv: list[str], *, check: bool = True, env: dict[str, str] | None = None,
        timeout: float = 600) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, env=env or podman_env(), capture_output=True, text=True, timeout=timeout,
                            check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"{shlex.join(argv)} exited {result.returncode}:\n{result.stdout[-3000:]}\n"
                             f"{result.stderr[-3000:]}")
    return result


def podman(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run(["podman", *args], check=check)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def record(section: str, figures: dict[str, Any]) -> None:
    path = os.environ.get("PAGEMILL_DEPLOY_REPORT")
    if not path:
        return
    report_path = Path(path)
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    report.setdefault(section, {}).update(figures)
    report_path.parent.mkdir(parents=True, exist_ok=True)
    report_path.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")


def wait_healthy(container: str, timeout: float = 180) -> None:
    """The container's own health check (the compose file's), run until it passes."""
    wait_until(lambda: podman("healthcheck", "run", container, check=False).returncode == 0, timeout,
               f"{container} to pass its health check", every=0.5)


def wait_http(url: str, timeout: float = 180) -> None:
    def ready() -> bool:
        try:
            return httpx.get(url, timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    wait_until(ready, timeout, f"{url} to answer 200", every=0.5)


@dataclass
class Api:
    """The gateway's HTTP API through its published port, as a customer uses it."""

    url: str
    admin_key: str
    api_key: str = ""

    def client(self, **kwargs: Any) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60, **kwargs)

    def make_tenant(self) -> None:
        with httpx.Client(base_url=self.url, timeout=60,
                          headers={"Authorization": f"Bearer {self.admin_key}"}) as admin:
            created = admin.post("/v1/admin/tenants", json={"name": f"deploy-{uuid.uuid4().hex[:8]}"})
            assert created.status_code == 201, created.text
            key = admin.post(f"/v1/admin/tenants/{created.json()['id']}/keys", json={"name": "deploy"})
            assert key.status_code == 201, key.text
            self.api_key = key.json()["key"]

    def upload(self, path: Path, **fields: str) -> dict[str, Any]:
        with self.client() as client, path.open("rb") as handle:
            response = client.post("/v1/documents", files={"file": (path.name, handle)}, data=fields)
        assert response.status_code == 202, response.text
        body: dict[str, Any] = response.json()
        return body

    def state(self, document_id: str, wait: int = 0) -> dict[str, Any]:
        with self.client() as client:
            response = client.get(f"/v1/documents/{document_id}", params={"wait": wait} if wait else {})
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    def wait_done(self, document_id: str, timeout: float = 600) -> dict[str, Any]:
        """Long-polls the document (the gateway answers when it changes or after 5 s) until it is final."""
        deadline = time.monotonic() + timeout
        while (state := self.state(document_id, wait=5))["status"] not in FINAL:
            assert time.monotonic() < deadline, f"{document_id} still {state} after {timeout} s"
        return state

    def result(self, document_id: str, fmt: str = "markdown") -> httpx.Response:
        with self.client() as client:
            return client.get(f"/v1/documents/{document_id}/result", params={"format": fmt})


@dataclass
class Stack:
    """One compose project (its own name, network, volumes and published ports on 127.0.0.1)."""

    backing: dict[str, str]  # PAGEMILL_REDIS_IMAGE / PAGEMILL_POSTGRES_IMAGE / PAGEMILL_S3_IMAGE -> image
    project: str = field(default_factory=lambda: f"pmdeploy{uuid.uuid4().hex[:6]}")
    gateway_port: int = field(default_factory=free_port)
    admin_key: str = field(default_factory=lambda: f"admin-{uuid.uuid4().hex}")
    cpu_workers: int = 1

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.gateway_port}"

    def env(self) -> dict[str, str]:
        return {**podman_env(), **self.backing,
                "PAGEMILL_ADMIN_KEY": self.admin_key,
                "PAGEMILL_GATEWAY_PORT": f"127.0.0.1:{self.gateway_port}",
                "PAGEMILL_MINIO_CONSOLE_PORT": f"127.0.0.1:{free_port()}",
                "PAGEMILL_PUBLIC_URL": self.url,
                "PAGEMILL_CPU_WORKERS": str(self.cpu_workers)}

    def compose(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run(["podman-compose", "-p", self.project, "-f", str(COMPOSE), *args], check=check, env=self.env())

    def container(self, service: str, number: int = 1) -> str:
        return f"{self.project}_{service}_{number}"

    def up(self) -> dict[str, float]:
        """Starts the stack in the order compose's `depends_on` conditions give (Debian 12's podman-compose
        1.0.3 starts containers in order but does not wait on conditions): backing services healthy, the
        migration job exited 0, then the pagemill services; the gateway ready. Returns seconds per step."""
        figures: dict[str, float] = {}
        started = time.monotonic()
        self.compose("up", "-d", "--no-build", "--no-deps", *BACKING)
        for service in BACKING:
            wait_healthy(self.container(service))
        figures["backing_healthy_s"] = round(time.monotonic() - started, 1)
        mark = time.monotonic()
        self.compose("up", "-d", "--no-build", "--no-deps", "migrate")
        exit_code = podman("wait", self.container("migrate")).stdout.strip()
        assert exit_code == "0", podman("logs", self.container("migrate"), check=False).stderr[-3000:]
        figures["migrate_s"] = round(time.monotonic() - mark, 1)
        mark = time.monotonic()
        self.compose("up", "-d", "--no-build", "--no-deps", *PAGEMILL)
        wait_http(f"{self.url}/readyz")
        figures["pagemill_ready_s"] = round(time.monotonic() - mark, 1)
        figures["total_s"] = round(time.monotonic() - started, 1)
        return figures

    def scale_cpu_workers(self, count: int) -> None:
        self.cpu_workers = count
        self.compose("up", "-d", "--no-build", "--no-deps", "worker-cpu")

    def down(self, *, volumes: bool = False) -> None:
        self.compose("down", *(["-v"] if volumes else []), check=False)

    def destroy(self) -> None:
        self.down(volumes=True)
        podman("network", "rm", "-f", f"{self.project}_default", check=False)
        for volume in podman("volume", "ls", "-q", "--filter", f"label=io.podman.compose.project={self.project}",
                             check=False).stdout.split():
            podman("volume", "rm", "-f", volume, check=False)

    def logs(self, container: str) -> str:
        result = podman("logs", container, check=False)
        return result.stdout + result.stderr

    def psql(self, sql: str) -> list[list[str]]:
        """A query on the stack's PostgreSQL, inside its container (the database is not published)."""
        out = podman("exec", self.container("postgres"), "psql", "-U", "pagemill", "-d", "pagemill", "-At",
                     "-F", "\t", "-c", sql).stdout
        return [line.split("\t") for line in out.splitlines() if line]

    def bucket_keys(self) -> list[str]:
        """The objects in the stack's bucket, listed from inside the network (the S3 API is not published)."""
        probe = ("import boto3, os\n"
                 "s3 = boto3.client('s3', endpoint_url=os.environ['PAGEMILL_STORAGE__ENDPOINT_URL'])\n"
                 "pages = s3.get_paginator('list_objects_v2').paginate(Bucket=os.environ['PAGEMILL_STORAGE__BUCKET'])\n"
                 "print('\\n'.join(o['Key'] for p in pages for o in p.get('Contents', [])))\n")
        out = podman("exec", self.container("gateway"), "python", "-c", probe).stdout
        return out.split()

    def page_events(self, container: str, document_id: str) -> list[int]:
        """Indexes of the pages a worker container logged as parsed for this document (its JSON log).

        A line may carry a prefix before its JSON object (a Celery pool child's stderr goes through Celery's
        redirect, which prefixes the level and process), so the object is read from the line's first `{`.
        """
        indexes = []
        for line in self.logs(container).splitlines():
            if '"page.parsed"' not in line or document_id not in line or "{" not in line:
                continue
            try:
                event = json.loads(line[line.index("{"):])
            except ValueError:
                continue
            if event.get("event") == "page.parsed" and event.get("document_id") == document_id:
                indexes.append(int(event["page"]))
        return indexes
