"""Every `vllm serve` flag pagemill writes, for every preset, exists in the vLLM version the project pins."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from services.core.settings import Settings
from services.worker.engines.vllm.presets import PRESETS
from services.worker.engines.vllm.serve import DRAFT_METHODS, SPECULATIVE_METHODS, vllm_command

pytestmark = pytest.mark.vllm


@pytest.fixture(scope="module")
def venv() -> Path:
    venv = os.environ.get("PAGEMILL_VLLM_VENV")
    if not venv or not (Path(venv) / "bin" / "vllm").exists():
        pytest.fail("no vLLM venv: run `make test-vllm` (it builds one with scripts/vllm/setup.sh)")
    return Path(venv)


@pytest.fixture(scope="module")
def known_flags(venv: Path) -> set[str]:
    helped = subprocess.run([str(venv / "bin" / "vllm"), "serve", "--help=all"], capture_output=True, text=True,
                            timeout=300, check=True)
    return set(re.findall(r"--[a-zA-Z0-9][a-zA-Z0-9_-]*", helped.stdout))


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_flag_of_the_presets_command_is_known_to_vllm(preset: str, known_flags: set[str]) -> None:
    settings = Settings(engine={"kind": "vllm", "preset": preset, "serve": {"draft_model": "/models/draft"}}
                        if PRESETS[preset].speculative_method in DRAFT_METHODS
                        else {"kind": "vllm", "preset": preset})
    flags = [arg for arg in vllm_command(settings) if arg.startswith("--")]
    unknown = [f for f in flags if f not in known_flags]
    assert not unknown, f"{preset}: vllm serve does not know {unknown}"


ARCHITECTURES = ("DeepseekOCRForCausalLM", "HunYuanVLForConditionalGeneration", "Qwen3_5ForConditionalGeneration",
                 "DotsOCRForCausalLM", "PaddleOCRVLForConditionalGeneration", "GlmOcrForConditionalGeneration",
                 "LightOnOCRForConditionalGeneration", "DeepseekOCR2ForCausalLM")


@pytest.fixture(scope="module")
def vllm_knows(venv: Path) -> dict[str, list[str]]:
    """The pinned vLLM's speculative methods and model architectures (one import of vllm: it takes a while)."""
    script = ("import json, typing; from vllm.config import SpeculativeConfig; "
              "from vllm.model_executor.models.registry import ModelRegistry; "
              "method = typing.get_type_hints(SpeculativeConfig)['method']; "
              "print(json.dumps({'methods': list(typing.get_args(typing.get_args(method)[0])), "
              "'archs': list(ModelRegistry.get_supported_archs())}))")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", script], capture_output=True, text=True,
                         timeout=300, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_every_speculative_method_is_one_vllm_knows(vllm_knows: dict[str, list[str]]) -> None:
    assert set(SPECULATIVE_METHODS) - {"none"} <= set(vllm_knows["methods"]), vllm_knows["methods"]


def test_the_presets_architectures_are_in_the_pinned_vllm(vllm_knows: dict[str, list[str]]) -> None:
    missing = [arch for arch in ARCHITECTURES if arch not in vllm_knows["archs"]]
    assert not missing
