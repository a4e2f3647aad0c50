"""The chart's pods, run: `helm template` (the real helm) with the CPU values, pointed at this machine's images
and at Redis, PostgreSQL and S3 in containers; its migration Job's pod, then its gateway, worker, results and
reconciler Deployments under `podman kube play` on the same network; a document parsed through the chart's
gateway. The objects kube play cannot run are listed in KUBE_PLAY_SKIPS with where each is checked instead.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.containers.stack import BACKING, Api, Stack, podman, record, require_podman, wait_healthy, wait_http
from tests.observability import CHART, REPO

pytestmark = [pytest.mark.deploy, pytest.mark.slow]

HELM = Path(os.environ.get("PAGEMILL_HELM", REPO / "tools" / "helm" / "bin" / "helm"))
RUNS = {"Deployment", "Job", "ConfigMap", "Secret"}
# What `podman kube play` cannot run, and where each is checked instead.
KUBE_PLAY_SKIPS = {
    "Service": "no cluster DNS or kube-proxy: the pods reach each other and the backing services on the "
               "podman network; selectors and target ports: tests/unit/test_chart.py",
    "ServiceAccount": "no API server: tests/unit/test_chart.py (names), helm lint (tests/unit/test_chart_helm.py)",
    "HorizontalPodAutoscaler": "no metrics server: scale target and replicas: tests/unit/test_chart.py",
    "PodDisruptionBudget": "no eviction API: selectors: tests/unit/test_chart.py",
    "ServiceMonitor": "prometheus-operator CRD: endpoints and relabelling: tests/unit/test_chart.py",
    "PrometheusRule": "prometheus-operator CRD: the rules with promtool: tests/unit/test_alert_rules.py",
    "ScaledObject": "KEDA CRD (GPU values): trigger and auth: tests/unit/test_chart.py",
    "TriggerAuthentication": "KEDA CRD (GPU values): tests/unit/test_chart.py",
}

# podman 4.3 (Debian bookworm's) `kube play` refuses to start a container of these images with "workdir "/app"
# does not exist on container" although `podman run` of the same image starts in /app (and a host /app does
# not help); the images read nothing from their working directory, so the played pods start in "/".
PLAY_WORKDIR = "/"


def helm_template(values: dict[str, Any], tmp_path: Path) -> list[dict[str, Any]]:
    if not HELM.is_file():
        pytest.skip(f"helm is not at {HELM} (make helm)")
    path = tmp_path / "deploy-values.yaml"
    path.write_text(yaml.safe_dump(values))
    result = subprocess.run([str(HELM), "template", "pagemill", str(CHART), "-f", str(path)], capture_output=True,
                            text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def job_as_pod(job: dict[str, Any]) -> dict[str, Any]:
    """kube play (podman 4) runs Pods and Deployments, not Jobs: the Job's own pod template, as a Pod."""
    spec = job["spec"]["template"]["spec"]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": job["metadata"]["name"], "labels": job["spec"]["template"]["metadata"]["labels"]},
            "spec": spec}


@pytest.fixture(scope="module")
def backing() -> Iterator[Stack]:
    """Redis, PostgreSQL and the S3 API from the compose file, alone on their compose network."""
    report = require_podman()
    stack = Stack(backing=report["backing"])
    stack.destroy()
    stack.compose("up", "-d", "--no-build", "--no-deps", *BACKING)
    try:
        for service in BACKING:
            wait_healthy(stack.container(service))
        yield stack
    finally:
        stack.destroy()


def test_the_charts_pods_parse_a_document(backing: Stack, corpus: Path, tmp_path: Path) -> None:
    admin_key = f"admin-{uuid.uuid4().hex}"
    network = f"{backing.project}_default"
    docs = helm_template({
        "image": {"registry": "localhost", "tag": "dev", "pullPolicy": "Never"},
        "secrets": {"databaseUrl": "postgresql://pagemill:pagemill@postgres:5432/pagemill",
                    "redisUrl": "redis://redis:6379/0", "awsAccessKeyId": "pagemill",
                    "awsSecretAccessKey": "pagemill-secret", "adminKey": admin_key},
        "config": {"PAGEMILL_STORAGE__ENDPOINT_URL": "http://minio:9000", "PAGEMILL_STORAGE__CREATE_BUCKET": "true",
                   "PAGEMILL_CONVERT__ENABLED": "true"},
    }, tmp_path)
    kinds = {d["kind"] for d in docs}
    assert kinds - RUNS <= set(KUBE_PLAY_SKIPS), f"objects neither run nor accounted for: {kinds - RUNS}"
    config = [d for d in docs if d["kind"] == "ConfigMap" and "dashboards" not in d["metadata"]["name"]]
    secrets = [d for d in docs if d["kind"] == "Secret"]
    jobs = [d for d in docs if d["kind"] == "Job"]
    deployments = [d for d in docs if d["kind"] == "Deployment"]
    assert {d["metadata"]["name"] for d in deployments} == {"pagemill-gateway", "pagemill-worker-cpu",
                                                           "pagemill-results", "pagemill-reconciler"}
    assert [j["metadata"]["name"] for j in jobs] == ["pagemill-migrations"]
    for deployment in deployments:  # one pod each is enough here (kube play runs a Deployment as one pod)
        deployment["spec"]["replicas"] = 1
    for template in [*(d["spec"]["template"] for d in deployments), jobs[0]["spec"]["template"]]:
        for container in template["spec"]["containers"]:
            container.setdefault("workingDir", PLAY_WORKDIR)
            container.pop("ports", None)  # see PLAY_WORKDIR
    played: list[Path] = []

    def play(name: str, objects: list[dict[str, Any]]) -> None:
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump_all(objects))
        result = subprocess.run(["podman", "kube", "play", "--network", network, str(path)], capture_output=True,
                                text=True, check=False, env=backing.env())
        played.append(path)
        assert result.returncode == 0, result.stdout + result.stderr

    try:
        for secret in secrets:
            _create_secret(secret, backing)
        started = time.monotonic()
        play("migrations", [*config, job_as_pod(jobs[0])])
        migrate = _container_of("pagemill-migrations")
        assert podman("wait", migrate).stdout.strip() == "0", podman("logs", migrate, check=False).stderr[-3000:]
        migrated_s = round(time.monotonic() - started, 1)
        play("release", [*config, *deployments])
        gateway = _container_of("pagemill-gateway")
        address = _pod_address(gateway, network)
        url = f"http://{address}:8000"
        wait_http(f"{url}/readyz")
        ready_s = round(time.monotonic() - started, 1)
        for name in ("pagemill-gateway", "pagemill-worker-cpu", "pagemill-results", "pagemill-reconciler"):
            info = json.loads(podman("inspect", _container_of(name)).stdout)[0]
            assert info["State"]["Running"], name
            assert info["HostConfig"]["ReadonlyRootfs"] is True, name  # readOnlyRootFilesystem, as rendered
            assert podman("exec", _container_of(name), "id", "-u").stdout.strip() == "10001", name

        api = Api(url, admin_key)
        api.make_tenant()
        created = api.upload(corpus / "dev" / "docling_multi_page" / "multi_page.pdf")
        state = api.wait_done(created["id"])
        assert state["status"] == "succeeded", state
        assert "the evolution of the word processor" in api.result(created["id"]).text.lower()
        record("kube_play", {"migrated_s": migrated_s, "gateway_ready_s": ready_s,
                             "document_s": round(time.monotonic() - started - ready_s, 1),
                             "not_run": sorted(kinds - RUNS)})
    finally:
        for path in reversed(played):
            subprocess.run(["podman", "kube", "down", str(path)], capture_output=True, check=False,
                           env=backing.env())
        for secret in secrets:
            podman("secret", "rm", secret["metadata"]["name"], check=False)


def _create_secret(secret: dict[str, Any], backing: Stack) -> None:
    """A chart Secret as the podman secret its pods' `secretKeyRef`s read.

    Played as a kube object, podman 4.3 (Debian bookworm's) stores the Secret's YAML but reads a `secretKeyRef`
    as a JSON map of base64 values ("secret ... is not valid JSON"); later podman reads both. So the Secret is
    created here in the form every version reads: `{"KEY": "<base64>"}`, from `data` (already base64) and
    `stringData` (encoded here), as the API server would merge them.
    """
    name = secret["metadata"]["name"]
    values = dict(secret.get("data") or {})
    values.update({k: base64.b64encode(str(v).encode()).decode() for k, v in (secret.get("stringData") or {}).items()})
    podman("secret", "rm", name, check=False)
    result = subprocess.run(["podman", "secret", "create", name, "-"], input=json.dumps(values), capture_output=True,
                            text=True, check=False, env=backing.env())
    assert result.returncode == 0, result.stderr


def _container_of(workload: str) -> str:
    """The (non-infra) container kube play made for a Pod or Deployment of this name.

    A Pod's pod takes its name; a Deployment's is `<name>-pod-0` (podman 4.3) or `<name>-pod` (later podman).
    """
    names: list[str] = []
    for pod in (workload, f"{workload}-pod-0", f"{workload}-pod"):
        names = podman("ps", "-a", "--format", "{{.Names}}", "--filter", f"pod={pod}", check=False).stdout.split()
        names = [n for n in names if not n.endswith("-infra")]
        if names:
            break
    assert names, podman("pod", "ps", check=False).stdout
    return names[0]


def _pod_address(container: str, network: str) -> str:
    info = json.loads(podman("inspect", container).stdout)[0]
    networks = info["NetworkSettings"]["Networks"]
    if not networks:  # the pod's network belongs to its infra container
        pod = info["Pod"]
        infra = json.loads(podman("pod", "inspect", pod).stdout)["InfraContainerID"]
        networks = json.loads(podman("inspect", infra).stdout)[0]["NetworkSettings"]["Networks"]
    address: str = networks[network]["IPAddress"]
    return address
