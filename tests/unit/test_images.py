"""The Dockerfiles, checked without Docker (it cannot run here): multi-stage, slim, non-root, every COPY source
in the build context, the default command a real `pagemill` command on the port the image exposes, the entry
point's behaviour, and the gateway image's claim that it never imports the OCR stack it leaves out."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.deploy import check_cli
from tests.observability import REPO

DOCKER = REPO / "docker"
DOCKERFILES = sorted(DOCKER.glob("*.Dockerfile"))


@dataclass
class Instruction:
    name: str
    args: str
    stage: int


def instructions(path: Path) -> list[Instruction]:
    """Dockerfile instructions with line continuations joined and comments dropped."""
    out: list[Instruction] = []
    stage = -1
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pending = f"{pending} {line}" if pending else line
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
            continue
        name, _, args = pending.partition(" ")
        if name.upper() == "FROM":
            stage += 1
        out.append(Instruction(name.upper(), args.strip(), stage))
        pending = ""
    return out


def exec_form(args: str) -> list[str]:
    value = json.loads(args)
    assert isinstance(value, list), f"use the exec form: {args}"
    return [str(v) for v in value]


def dockerignored(relative: str) -> bool:
    patterns = [p.strip() for p in (REPO / ".dockerignore").read_text().splitlines()
                if p.strip() and not p.startswith("#")]
    return any(fnmatch.fnmatch(relative, p) or relative.startswith(p.rstrip("/") + "/") for p in patterns)


def test_one_dockerfile_per_deployable() -> None:
    assert [p.name for p in DOCKERFILES] == ["gateway.Dockerfile", "worker-gpu.Dockerfile", "worker.Dockerfile"]


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_multi_stage_slim_non_root(path: Path) -> None:
    steps = instructions(path)
    args = {s.args.split("=")[0]: s.args.split("=", 1)[1] for s in steps if s.name == "ARG" and "=" in s.args}
    froms = [s for s in steps if s.name == "FROM"]
    assert len(froms) >= 2, "build in one stage, run in another"
    final = froms[-1].stage
    base = froms[-1].args.split()[0]
    base = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], base)
    assert re.fullmatch(r"python:3\.1[1-9]-slim(-\w+)?", base), base
    users = [s.args for s in steps if s.name == "USER" and s.stage == final]
    assert users, "the runtime stage must not run as root"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0, "a numeric non-root uid (Kubernetes' runAsNonRoot can check it)"
    assert not any(s.name == "RUN" and "pip install" in s.args for s in steps if s.stage == final), \
        "nothing is built in the runtime stage"
    assert any(s.name == "COPY" and s.args.startswith("--from=build") for s in steps if s.stage == final)


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_copy_sources_are_in_the_build_context(path: Path) -> None:
    for step in instructions(path):
        if step.name != "COPY" or step.args.startswith("--from"):
            continue
        *sources, _ = shlex.split(step.args)
        for source in sources:
            assert (REPO / source).exists(), f"{path.name}: COPY {source} does not exist"
            assert not dockerignored(source), f"{path.name}: COPY {source} is excluded by .dockerignore"


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_default_command_is_real_and_listens_where_exposed(path: Path) -> None:
    steps = instructions(path)
    entrypoint = exec_form(next(s.args for s in steps if s.name == "ENTRYPOINT"))
    assert entrypoint == ["/usr/local/bin/pagemill-entrypoint"]
    assert any(s.name == "COPY" and s.args == "docker/entrypoint.sh /usr/local/bin/pagemill-entrypoint"
               for s in steps)
    command = exec_form(next(s.args for s in steps if s.name == "CMD"))
    params = check_cli(command)
    port = params.get("port") or params.get("metrics_port")
    exposed = {int(p) for s in steps if s.name == "EXPOSE" for p in s.args.split()}
    assert exposed == {port}, (exposed, port)
    if path.name == "worker-gpu.Dockerfile":
        assert params["queues"] == "pages.gpu" and params["pool"] == "threads"


def test_the_entrypoint_empties_the_metrics_folder_and_runs_the_command(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    (metrics / "counter_123.db").write_bytes(b"stale")
    (metrics / "sub").mkdir()
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(metrics)}
    result = subprocess.run(["sh", str(DOCKER / "entrypoint.sh"), "sh", "-c", 'ls -A "$1"; exit 7', "_",
                             str(metrics)], env=env, capture_output=True, text=True)
    assert result.returncode == 7 and result.stdout == "", (result.stdout, result.stderr)
    assert metrics.is_dir()
    fresh = tmp_path / "fresh" / "metrics"
    result = subprocess.run(["sh", str(DOCKER / "entrypoint.sh"), "true"],
                            env={**env, "PROMETHEUS_MULTIPROC_DIR": str(fresh)}, capture_output=True)
    assert result.returncode == 0 and fresh.is_dir()
    assert os.access(DOCKER / "entrypoint.sh", os.X_OK)


@pytest.mark.slow  # a Python process of its own
def test_the_gateway_never_imports_the_ocr_stack_its_image_leaves_out() -> None:
    probe = ("import sys\n"
             "from services.core.settings import Settings\n"
             "from services.gateway.app import create_app\n"
             "import services.cli\n"
             "create_app(Settings(redis_url='redis://127.0.0.1:1/0', database_url='sqlite://'))\n"
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'rapidocr', 'onnxruntime', 'cv2'}))\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
    gateway = (DOCKER / "gateway.Dockerfile").read_text()
    assert "pip uninstall -y rapidocr onnxruntime opencv-python-headless" in gateway
