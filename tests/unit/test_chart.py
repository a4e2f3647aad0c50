"""The Helm chart, checked without helm (which cannot be installed here).

`tests/gotemplate.py` renders the templates the way `helm template` does for the Go-template subset the chart
uses (and refuses anything else). The rendered YAML is then checked for what can be checked without a cluster:
it parses (no duplicate keys), `values.schema.json` accepts the values files and rejects typos, names and
selectors point at things that exist, every `PAGEMILL_*` variable is a real setting and the ConfigMap builds a
valid `Settings`, every container command parses with the real `pagemill` CLI, every queue has a consumer, and
the GPU pod, KEDA, the ServiceMonitor, the alert rules and the dashboards are wired as docs/operations.md says.
What is not checked: the Kubernetes API's own validation, KEDA, prometheus-operator and Grafana themselves.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from services.cli import main as cli
from services.core.queues import Queue
from tests.deploy import check_cli, settings_from_env, unknown_settings
from tests.gotemplate import Chart, Renderer, TemplateError, UniqueKeyLoader, deep_merge, parse
from tests.observability import CHART, DASHBOARDS, RULES

SCHEMA = json.loads((CHART / "values.schema.json").read_text())
SECRETS = {"secrets": {"databaseUrl": "postgresql://pagemill:secret@postgres:5432/pagemill",
                       "redisUrl": "redis://:secret@redis:6379/0", "redisPassword": "secret",
                       "awsAccessKeyId": "AKIA", "awsSecretAccessKey": "s3cr3t"}}
CHART_OBJ = Chart(CHART)
CPU, GPU = "values.yaml", "values-gpu.yaml"


def values(name: str, **overrides: Any) -> dict[str, Any]:
    files = [CHART / name] if name != CPU else []
    return deep_merge(CHART_OBJ.values(*files), overrides)


@cache
def _render(name: str) -> str:
    return json.dumps(CHART_OBJ.manifests(deep_merge(values(name), SECRETS)))


def render(name: str) -> list[dict[str, Any]]:
    """The manifests of values.yaml (+ values-gpu.yaml) with secrets set, rendered once, a fresh copy each call."""
    docs: list[dict[str, Any]] = json.loads(_render(name))
    return docs


def by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def pod_specs(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs if d["kind"] in ("Deployment", "Job")}


def containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*spec.get("initContainers", []), *spec["containers"]]


# Parsing and values --------------------------------------------------------------------------------------------


def test_every_template_parses() -> None:
    templates = sorted((CHART / "templates").glob("*"))
    assert {"gateway.yaml", "worker-cpu.yaml", "worker-gpu.yaml", "results.yaml", "reconciler.yaml",
            "migrations.yaml", "configmap.yaml", "secret.yaml", "servicemonitor.yaml", "prometheusrule.yaml",
            "dashboards.yaml", "_helpers.tpl"} <= {p.name for p in templates}
    for path in templates:
        parse(path.read_text())


@pytest.mark.parametrize("name", [CPU, GPU])
def test_the_schema_accepts_the_values_files(name: str) -> None:
    jsonschema.Draft7Validator.check_schema(SCHEMA)
    yaml.safe_load((CHART / name).read_text())
    jsonschema.validate(values(name), SCHEMA, cls=jsonschema.Draft7Validator)


@pytest.mark.parametrize("override", [
    {"gateway": {"replica": 3}},  # a typo
    {"config": {"ENGINE_KIND": "cpu"}},  # not a PAGEMILL_ variable
    {"config": {"PAGEMILL_ENGINE__KIND": "gpu"}},
    {"config": {"PAGEMILL_DATABASE_URL": "postgresql://x"}},  # secrets belong in the Secret
    {"cpuWorker": {"queues": ["pages.cpu", "pages.tpu"]}},
    {"keda": {"redis": {"address": "redis://redis:6379"}}},  # KEDA wants host:port
    {"vllm": {"commandFrom": "values", "command": []}},
])
def test_the_schema_rejects_mistakes(override: dict[str, Any]) -> None:
    assert not jsonschema.Draft7Validator(SCHEMA).is_valid(deep_merge(values(CPU), override))


def test_gpu_workers_need_the_vllm_engine() -> None:
    broken = deep_merge(values(GPU), {"config": {"PAGEMILL_ENGINE__KIND": "cpu"}})
    assert not jsonschema.Draft7Validator(SCHEMA).is_valid(broken)


def test_rendering_without_secrets_fails_like_helm_would() -> None:
    with pytest.raises(TemplateError, match="secrets.databaseUrl"):
        CHART_OBJ.manifests(values(CPU))
    docs = CHART_OBJ.manifests(deep_merge(values(CPU), {"secrets": {"existingSecret": "pagemill-prod"}}))
    assert "Secret" not in {d["kind"] for d in docs}
    job = by_kind(docs, "Job")["pagemill-migrations"]
    ref = job["spec"]["template"]["spec"]["containers"][0]["env"][0]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": "pagemill-prod", "key": "PAGEMILL_DATABASE_URL"}


def test_the_renderer_follows_go_templates_and_refuses_what_it_does_not_know() -> None:
    def run(source: str, values: dict[str, Any]) -> str:
        nodes, defines = parse(source)
        root = {"Values": values}
        return Renderer(defines).render(nodes, root, [{"$": root}])

    assert run("a  {{- .Values.x -}}  b", {"x": 1}) == "a1b"
    assert run("{{ range $k, $v := .Values.m }}{{ $k }}={{ $v }};{{ end }}", {"m": {"b": 2, "a": 1}}) == "a=1;b=2;"
    assert run("{{ if and .Values.o .Values.o.x }}y{{ else }}n{{ end }}", {"o": None}) == "n"
    assert run('{{ define "t" }}[{{ . }}]{{ end }}{{ include "t" .Values.x | upper }}', {"x": "v"}) == "[V]"
    assert run("{{ .Values.m | toYaml | nindent 2 }}", {"m": {"k": [1]}}) == "\n  k:\n  - 1"
    with pytest.raises(TemplateError, match="not supported"):
        run('{{ .Values.x | regexFind "a" }}', {"x": "a"})
    with pytest.raises(TemplateError, match="nil pointer"):
        run("{{ .Values.missing.deeper }}", {})
    with pytest.raises(TemplateError, match="duplicate keys"):
        yaml.load("a: 1\nb: 2\na: 3\n", Loader=UniqueKeyLoader)


# Structure ---------------------------------------------------------------------------------------------------

KNOWN = {
    ("v1", "ConfigMap"), ("v1", "Secret"), ("v1", "Service"), ("v1", "ServiceAccount"), ("apps/v1", "Deployment"),
    ("batch/v1", "Job"), ("autoscaling/v2", "HorizontalPodAutoscaler"), ("policy/v1", "PodDisruptionBudget"),
    ("keda.sh/v1alpha1", "ScaledObject"), ("keda.sh/v1alpha1", "TriggerAuthentication"),
    ("monitoring.coreos.com/v1", "ServiceMonitor"), ("monitoring.coreos.com/v1", "PrometheusRule"),
}


@pytest.mark.parametrize("name", [CPU, GPU])
def test_objects_reference_each_other_correctly(name: str) -> None:
    docs = render(name)
    names = [(d["kind"], d["metadata"]["name"]) for d in docs]
    assert len(names) == len(set(names)), "two objects with the same kind and name"
    for doc in docs:
        assert (doc["apiVersion"], doc["kind"]) in KNOWN, (doc["apiVersion"], doc["kind"])
        assert doc["metadata"]["name"].startswith("pagemill") and len(doc["metadata"]["name"]) <= 63
    deployments = by_kind(docs, "Deployment")
    config_maps, secrets = by_kind(docs, "ConfigMap"), by_kind(docs, "Secret")
    for dep_name, dep in deployments.items():
        pod_labels = dep["spec"]["template"]["metadata"]["labels"]
        assert dep["spec"]["selector"]["matchLabels"].items() <= pod_labels.items(), dep_name
    for pod_name, spec in pod_specs(docs).items():
        volumes = {v["name"] for v in spec.get("volumes", [])}
        for container in containers(spec):
            ports = {p["name"] for p in container.get("ports", [])}
            for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                if probe in container:
                    assert container[probe]["httpGet"]["port"] in ports, (pod_name, container["name"], probe)
            for mount in container.get("volumeMounts", []):
                assert mount["name"] in volumes, (pod_name, mount)
            for source in container.get("envFrom", []):
                if "configMapRef" in source:
                    assert source["configMapRef"]["name"] in config_maps
                if "secretRef" in source:
                    assert source["secretRef"]["name"] in secrets
            assert container.get("resources") or pod_name.endswith("migrations") or container["name"] == \
                "vllm-command", (pod_name, container["name"])
    for svc_name, svc in by_kind(docs, "Service").items():
        targets = [d for d in deployments.values()
                   if svc["spec"]["selector"].items() <= d["spec"]["template"]["metadata"]["labels"].items()]
        assert len(targets) == 1, f"service {svc_name} selects {len(targets)} deployments"
        pod = targets[0]["spec"]["template"]["spec"]
        named_ports = {p["name"] for c in containers(pod) for p in c.get("ports", [])}
        for port in svc["spec"]["ports"]:
            assert port["targetPort"] in named_ports, (svc_name, port)
    for kind in ("HorizontalPodAutoscaler", "ScaledObject"):
        for obj in by_kind(docs, kind).values():
            assert obj["spec"]["scaleTargetRef"]["name"] in deployments, obj["metadata"]["name"]
            target = deployments[obj["spec"]["scaleTargetRef"]["name"]]
            assert "replicas" not in target["spec"], "an autoscaled Deployment must not pin replicas"
    for pdb in by_kind(docs, "PodDisruptionBudget").values():
        matching = [d for d in deployments.values() if pdb["spec"]["selector"]["matchLabels"].items()
                    <= d["spec"]["template"]["metadata"]["labels"].items()]
        assert len(matching) == 1, pdb["metadata"]["name"]


@pytest.mark.parametrize("name", [CPU, GPU])
def test_pods_run_as_non_root_on_a_read_only_root(name: str) -> None:
    for pod_name, spec in pod_specs(render(name)).items():
        for container in containers(spec):
            if container["name"] == "vllm":
                continue  # the upstream vLLM image runs as root; its container gets only the GPU
            context = {**spec.get("securityContext", {}), **container.get("securityContext", {})}
            assert context.get("runAsNonRoot") is True and context.get("runAsUser", 0) != 0, pod_name
            assert container["securityContext"]["readOnlyRootFilesystem"] is True, pod_name
            assert container["securityContext"]["allowPrivilegeEscalation"] is False, pod_name


# Settings and commands ---------------------------------------------------------------------------------------


def chart_env(docs: list[dict[str, Any]]) -> dict[str, str]:
    """What a pod of the release sees: the ConfigMap and the Secret, as envFrom gives them."""
    env: dict[str, str] = {}
    for config in by_kind(docs, "ConfigMap").values():
        if config["metadata"]["name"].endswith("-config"):
            env.update(config["data"])
    for secret in by_kind(docs, "Secret").values():
        env.update(secret.get("stringData", {}))
    return env


@pytest.mark.parametrize("name", [CPU, GPU])
def test_every_pagemill_variable_is_a_real_setting(name: str) -> None:
    docs = render(name)
    names = set(chart_env(docs))
    for spec in pod_specs(docs).values():
        for container in containers(spec):
            names |= {e["name"] for e in container.get("env", [])}
    assert {n for n in names if n.startswith("PAGEMILL_")}, "the chart sets no setting at all?"
    assert unknown_settings(names) == set()
    assert unknown_settings({"PAGEMILL_ENGINE__KINDS", "PAGEMILL_WORKER__CONCURENCY"}) == \
        {"PAGEMILL_ENGINE__KINDS", "PAGEMILL_WORKER__CONCURENCY"}


@pytest.mark.parametrize("name", [CPU, GPU])
def test_the_configmap_builds_valid_settings(name: str) -> None:
    docs = render(name)
    for pod_name, spec in pod_specs(docs).items():
        for container in spec["containers"]:
            env = {**chart_env(docs), **{e["name"]: e["value"] for e in container.get("env", []) if "value" in e}}
            settings = settings_from_env(env)
            assert settings.log_json is True, pod_name
            assert settings.storage.kind == "s3" and settings.redis_url and settings.database_url
            if pod_name.endswith("worker-gpu"):
                assert settings.engine.kind.value == "vllm"


@pytest.mark.parametrize("name", [CPU, GPU])
def test_every_command_is_a_real_pagemill_command(name: str) -> None:
    docs = render(name)
    consumed: set[str] = set()
    for spec in pod_specs(docs).values():
        for container in containers(spec):
            if container["name"] == "vllm":
                continue
            if container["args"][:2] == ["sh", "-c"] and "vllm-command" in container["args"][2] \
                    and "vllm-command" not in cli.commands:
                continue  # arrives with the vLLM engine: test_the_vllm_sidecar_runs_pagemills_command
            params = check_cli(container["args"])
            if params["command"] == "worker":
                queues = params["queues"].split(",")
                assert set(queues) <= {q.value for q in Queue}, queues
                consumed |= set(queues)
            if params["command"] in ("worker", "reconcile"):
                port = params["metrics_port"]
                assert port in {p["containerPort"] for p in container["ports"] if p["name"] == "metrics"}
    expected = {q.value for q in Queue} - ({Queue.PAGES_GPU.value} if name == CPU else set())
    assert consumed == expected, "every queue pages can reach has a consumer"


# GPU, KEDA, monitoring ---------------------------------------------------------------------------------------


def gpu_pod() -> dict[str, Any]:
    return pod_specs(render(GPU))["pagemill-worker-gpu"]


def test_the_gpu_pod_has_a_vllm_sidecar_sized_to_the_worker() -> None:
    spec = gpu_pod()
    init = {c["name"]: c for c in spec["initContainers"]}
    worker = spec["containers"][0]
    vllm = init["vllm"]
    assert vllm["restartPolicy"] == "Always", "vLLM runs as a native sidecar, ready before the worker"
    assert list(init) == ["vllm-command", "vllm"], "the command is written before vLLM starts"
    assert vllm["image"].startswith("vllm/vllm-openai:")
    assert vllm["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert "nvidia.com/gpu" not in worker["resources"].get("limits", {}), "only vLLM holds the GPU"
    assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert any(t["key"] == "nvidia.com/gpu" for t in spec["tolerations"])
    vllm_port = vllm["ports"][0]["containerPort"]
    assert {"name": "PAGEMILL_ENGINE__VLLM_URL", "value": f"http://127.0.0.1:{vllm_port}"} in worker["env"]
    assert f"--port {vllm_port}" in vllm["command"][2] and "--host 0.0.0.0" in vllm["command"][2]
    assert vllm["startupProbe"]["httpGet"]["path"] == "/health"
    params = check_cli(worker["args"])
    settings = settings_from_env(chart_env(render(GPU)))
    assert params["pool"] == "threads" and params["concurrency"] == 2 * settings.engine.max_in_flight, \
        "threads = twice the requests in flight (= vLLM's max_num_seqs): half prepare the next pages"
    assert params["queues"] == Queue.PAGES_GPU.value
    env = {e["name"]: e.get("value") for e in worker["env"]}
    processes = int(env["PAGEMILL_ENGINE__PREPARE_PROCESSES"])
    assert processes == settings.engine.prepare_processes == 0, "pages prepared in the threads unless set"
    assert float(worker["resources"]["requests"]["cpu"]) >= processes + 1, \
        "a core for each preparing process and one for the worker's threads"


@pytest.mark.slow  # a Python process of its own
def test_the_vllm_sidecar_runs_pagemills_command() -> None:
    """The init container's `pagemill vllm-command`, run here with the pod's settings, prints a `vllm serve`
    line the sidecar can exec, with --max-num-seqs equal to the worker's requests in flight (half its threads)."""
    if "vllm-command" not in cli.commands:
        pytest.skip("`pagemill vllm-command` arrives with the vLLM engine (issue 3)")
    env = {**chart_env(render(GPU)), "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-m", "services.cli", "vllm-command"], env=env, capture_output=True,
                            text=True, cwd=Path(__file__).resolve().parents[2], timeout=600, check=False)
    assert result.returncode == 0, result.stderr
    argv = shlex.split(result.stdout.strip())
    assert argv[:2] == ["vllm", "serve"], argv
    spec = gpu_pod()
    concurrency = check_cli(spec["containers"][0]["args"])["concurrency"]
    assert 2 * int(argv[argv.index("--max-num-seqs") + 1]) == int(concurrency)


def test_keda_scales_gpu_workers_on_the_gpu_queue() -> None:
    docs = render(GPU)
    scaled = by_kind(docs, "ScaledObject")["pagemill-worker-gpu"]
    trigger = scaled["spec"]["triggers"][0]
    assert trigger["type"] == "redis"
    meta = trigger["metadata"]
    assert meta["listName"] == Queue.PAGES_GPU.value
    assert all(isinstance(v, str) for v in meta.values()), "KEDA's trigger metadata is a map of strings"
    assert meta["address"] == values(GPU)["keda"]["redis"]["address"]
    redis_url = SECRETS["secrets"]["redisUrl"]
    assert meta["databaseIndex"] == redis_url.rsplit("/", 1)[1]
    auth = by_kind(docs, "TriggerAuthentication")[trigger["authenticationRef"]["name"]]
    ref = auth["spec"]["secretTargetRef"][0]
    assert ref["key"] in by_kind(docs, "Secret")[ref["name"]]["stringData"]
    assert scaled["spec"]["minReplicaCount"] <= scaled["spec"]["maxReplicaCount"]
    assert "ScaledObject" not in {d["kind"] for d in render(CPU)}, "the cpu install scales by replicas"


def test_migrations_run_as_a_hook_before_install_and_upgrade() -> None:
    docs = render(CPU)
    job = by_kind(docs, "Job")["pagemill-migrations"]
    hooks = job["metadata"]["annotations"]
    assert set(hooks["helm.sh/hook"].split(",")) == {"pre-install", "pre-upgrade"}
    assert check_cli(job["spec"]["template"]["spec"]["containers"][0]["args"])["command"] == "migrate"
    secret = by_kind(docs, "Secret")["pagemill-migrations"]
    assert int(secret["metadata"]["annotations"]["helm.sh/hook-weight"]) < int(hooks["helm.sh/hook-weight"]), \
        "the hook's Secret exists before the Job that reads it"
    reconciler = by_kind(docs, "Deployment")["pagemill-reconciler"]
    assert reconciler["spec"]["replicas"] == 1 and reconciler["spec"]["strategy"]["type"] == "Recreate"


def test_service_monitor_scrapes_every_component_and_vllm() -> None:
    docs = render(GPU)
    monitor = by_kind(docs, "ServiceMonitor")["pagemill"]
    selector = monitor["spec"]["selector"]["matchLabels"]
    scraped = {n: s for n, s in by_kind(docs, "Service").items()
               if selector.items() <= s["metadata"]["labels"].items()}
    components = {s["metadata"]["labels"]["app.kubernetes.io/component"] for s in scraped.values()}
    assert components == {"gateway", "worker-cpu", "worker-gpu", "results", "reconciler"}
    endpoint_ports = {e["port"]: e for e in monitor["spec"]["endpoints"]}
    assert all(any(p["name"] == "metrics" for p in s["spec"]["ports"]) for s in scraped.values())
    vllm = endpoint_ports["vllm"]
    assert {"targetLabel": "component", "replacement": "vllm"} in vllm["relabelings"], \
        "PagemillVllmDown selects up{component=\"vllm\"}"
    assert "vllm" not in {e["port"] for e in by_kind(render(CPU), "ServiceMonitor")["pagemill"]["spec"]["endpoints"]}


def test_prometheus_rules_and_dashboards_ship_unchanged() -> None:
    docs = render(GPU)
    rules = by_kind(docs, "PrometheusRule")
    assert rules["pagemill"]["spec"] == yaml.safe_load((RULES / "pagemill.rules.yaml").read_text())
    assert rules["pagemill-vllm"]["spec"] == yaml.safe_load((RULES / "vllm.rules.yaml").read_text())
    assert set(by_kind(render(CPU), "PrometheusRule")) == {"pagemill"}
    dashboards = by_kind(docs, "ConfigMap")["pagemill-dashboards"]
    assert dashboards["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dashboards["data"] == {p.name: p.read_text() for p in DASHBOARDS.glob("*.json")}
