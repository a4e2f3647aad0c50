"""docker/compose.yaml, checked without Docker: it parses, builds from Dockerfiles that exist, every
`PAGEMILL_*` variable is a real setting and each service's environment builds valid Settings, every command is a
real `pagemill` command, every queue has a consumer, Prometheus scrapes exactly the services that serve metrics
on the ports they listen on (and, with promtool, loads the config and the rules as mounted), and Grafana's
provisioning points at the dashboards and at Prometheus."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlparse

import pytest
import yaml

from services.core.queues import Queue
from tests.deploy import check_cli, settings_from_env, unknown_settings
from tests.observability import DASHBOARDS, REPO, RULES

DOCKER = REPO / "docker"
COMPOSE = DOCKER / "compose.yaml"
PAGEMILL_SERVICES = {"migrate", "gateway", "worker-cpu", "results", "reconciler", "vllm-command", "worker-gpu"}


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's `${VAR:-default}` / `${VAR}` / `$$` with the given environment."""
    def repl(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, default = match.group(1), match.group(3) or ""
        return env.get(name) or default

    return re.sub(r"\$\$|\$\{(\w+)(:-([^}]*))?\}", repl, text)


def compose(env: dict[str, str] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(interpolate(COMPOSE.read_text(), env or {}))
    return data


def services(profile: str | None = None, env: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """The services `docker compose [--profile P] up` starts."""
    return {name: svc for name, svc in compose(env)["services"].items()
            if not svc.get("profiles") or profile in svc["profiles"]}


def host_path(volume: str) -> tuple[Path, str]:
    source, target = volume.split(":")[:2]
    return (DOCKER / source).resolve(), target


def test_compose_parses_and_builds_from_existing_dockerfiles() -> None:
    data = compose()
    assert data["name"] == "pagemill"
    for name, svc in data["services"].items():
        if "build" in svc:
            context = (DOCKER / svc["build"]["context"]).resolve()
            assert context == REPO, name
            assert (context / svc["build"]["dockerfile"]).is_file(), name
        for dependency in svc.get("depends_on", {}):
            assert dependency in data["services"], (name, dependency)
            if not svc.get("profiles"):
                assert not data["services"][dependency].get("profiles"), f"{name} needs a profile-only service"
        for volume in svc.get("volumes", []):
            if volume.startswith("."):
                assert host_path(volume)[0].exists(), (name, volume)
            else:
                assert volume.split(":")[0] in data["volumes"], (name, volume)
    assert {"redis", "postgres", "minio", "gateway", "worker-cpu", "results", "reconciler", "prometheus",
            "grafana"} <= set(services())


@pytest.mark.parametrize("profile", [None, "gpu"])
def test_pagemill_services_have_real_settings_and_commands(profile: str | None) -> None:
    env = {"PAGEMILL_ENGINE__KIND": "vllm"} if profile == "gpu" else {}
    running = services(profile, env)
    consumed: set[str] = set()
    for name in PAGEMILL_SERVICES & set(running):
        svc = running[name]
        environment = {k: str(v) for k, v in svc["environment"].items()}
        assert unknown_settings(environment) == set(), name
        settings = settings_from_env(environment)
        assert settings.redis_url and settings.database_url and settings.storage.kind == "s3", name
        if name == "vllm-command" and not _has_vllm_command():
            continue  # `pagemill vllm-command` arrives with the vLLM engine (issue 3)
        params = check_cli(svc["command"])
        if params["command"] == "worker":
            consumed |= set(params["queues"].split(","))
    expected = {q.value for q in Queue} - (set() if profile == "gpu" else {Queue.PAGES_GPU.value})
    assert consumed == expected


def _has_vllm_command() -> bool:
    from services.cli import main

    return "vllm-command" in main.commands


def listening_port(name: str, svc: dict[str, Any]) -> int:
    """The port a service serves /metrics on, read from its command."""
    command = svc.get("command") or svc.get("entrypoint")
    text = " ".join(command)
    match = re.search(r"--(?:metrics-)?port[ =](\d+)", text)
    assert match, (name, text)
    return int(match.group(1))


def test_prometheus_scrapes_every_metrics_endpoint_on_its_port() -> None:
    config = yaml.safe_load((DOCKER / "prometheus" / "prometheus.yml").read_text())
    (job,) = config["scrape_configs"]
    scraped = {name: sd["port"] for sd in job["dns_sd_configs"] for name in sd["names"]}
    everything = services("gpu", {"PAGEMILL_ENGINE__KIND": "vllm"})
    with_metrics = {n for n in everything if n in PAGEMILL_SERVICES - {"migrate", "vllm-command"}} | {"vllm"}
    assert set(scraped) == with_metrics
    for name, port in scraped.items():
        assert listening_port(name, everything[name]) == port, name
    assert {"source_labels": ["__meta_dns_name"], "target_label": "component"} in job["relabel_configs"], \
        "targets carry component=<service>, as on Kubernetes (PagemillVllmDown reads up{component=\"vllm\"})"
    vllm_url = urlparse(everything["worker-gpu"]["environment"]["PAGEMILL_ENGINE__VLLM_URL"])
    assert (vllm_url.hostname, vllm_url.port) == ("vllm", scraped["vllm"])


def test_prometheus_gets_the_chart_rules_and_the_config_loads(tmp_path: Path) -> None:
    prometheus = services()["prometheus"]
    mounts = dict(host_path(v) for v in prometheus["volumes"] if v.startswith("."))
    config_target = PurePosixPath(mounts[(DOCKER / "prometheus" / "prometheus.yml").resolve()])
    rules_target = PurePosixPath(mounts[RULES.resolve()])
    config = yaml.safe_load((DOCKER / "prometheus" / "prometheus.yml").read_text())
    for pattern in config["rule_files"]:
        resolved = config_target.parent / pattern
        assert resolved.parent == rules_target, "rule_files resolve into the mounted rules folder"
    if not shutil.which("promtool"):
        pytest.skip("promtool is not installed (make ops-tools)")
    # Lay the files out as the container sees them, then let promtool load config and rules.
    (tmp_path / "prometheus.yml").write_text((DOCKER / "prometheus" / "prometheus.yml").read_text())
    (tmp_path / rules_target.name).symlink_to(RULES)
    result = subprocess.run(["promtool", "check", "config", str(tmp_path / "prometheus.yml")],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(list(RULES.glob('*.yaml')))} rule files found" in result.stdout


def test_grafana_provisions_the_dashboards_and_prometheus() -> None:
    grafana = services()["grafana"]
    mounts = dict(host_path(v) for v in grafana["volumes"])
    provisioning = PurePosixPath(mounts[(DOCKER / "grafana" / "provisioning").resolve()])
    assert provisioning == PurePosixPath("/etc/grafana/provisioning")
    dashboards_target = PurePosixPath(mounts[DASHBOARDS.resolve()])
    providers = yaml.safe_load((DOCKER / "grafana" / "provisioning" / "dashboards" / "pagemill.yaml").read_text())
    assert [PurePosixPath(p["options"]["path"]) for p in providers["providers"]] == [dashboards_target]
    home = PurePosixPath(grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"])
    assert home.parent == dashboards_target and (DASHBOARDS / home.name).is_file()
    sources = yaml.safe_load((DOCKER / "grafana" / "provisioning" / "datasources" / "prometheus.yaml").read_text())
    (source,) = sources["datasources"]
    url = urlparse(source["url"])
    assert source["type"] == "prometheus" and source["isDefault"] is True
    assert url.hostname == "prometheus" and "prometheus" in services()
    assert f"{url.port}:{url.port}" in services()["prometheus"]["ports"]
