"""`pagemill vllm-command`: the `vllm serve` line built from the preset and the settings."""

from __future__ import annotations

import json
import shlex

import pytest
from click.testing import CliRunner

from services.cli import main
from services.core.settings import Settings
from services.worker.engines.vllm.presets import PRESETS
from services.worker.engines.vllm.serve import DRAFT_METHODS, SPECULATIVE_METHODS, speculative_config, vllm_command


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_the_olmocr_command_carries_fp8_the_batch_size_and_ngram_speculation() -> None:
    argv = vllm_command(Settings(engine={"kind": "vllm", "preset": "olmocr", "max_in_flight": 24}))
    assert argv[:3] == ["vllm", "serve", "allenai/olmOCR-2-7B-1025"]
    assert flag(argv, "--served-model-name") == "allenai/olmOCR-2-7B-1025"
    assert flag(argv, "--quantization") == "fp8" and flag(argv, "--kv-cache-dtype") == "fp8"
    assert flag(argv, "--max-num-seqs") == "24" and flag(argv, "--max-model-len") == "16384"
    assert json.loads(flag(argv, "--limit-mm-per-prompt")) == {"image": 1, "video": 0}
    assert json.loads(flag(argv, "--speculative-config")) == {
        "method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 32, "prompt_lookup_min": 1}


def test_settings_override_the_preset() -> None:
    settings = Settings(engine={
        "kind": "vllm", "preset": "generic", "model": "tiny", "max_in_flight": 4,
        "serve": {"model_path": "/models/tiny", "port": 9000, "quantization": "", "kv_cache_dtype": "",
                  "max_num_seqs": 16, "max_model_len": 4096, "num_speculative_tokens": 8, "prompt_lookup_min": 3,
                  "prompt_lookup_max": 5, "extra_args": ["--enforce-eager", "--dtype", "bfloat16"]}})
    argv = vllm_command(settings, executable="/venv/bin/vllm")
    assert argv[:3] == ["/venv/bin/vllm", "serve", "/models/tiny"]
    assert "--quantization" not in argv and "--kv-cache-dtype" not in argv
    assert flag(argv, "--port") == "9000" and flag(argv, "--max-num-seqs") == "16"
    assert flag(argv, "--served-model-name") == "tiny" and flag(argv, "--max-model-len") == "4096"
    assert json.loads(flag(argv, "--speculative-config"))["prompt_lookup_min"] == 3
    assert argv[-3:] == ["--enforce-eager", "--dtype", "bfloat16"]


def test_mtp_eagle3_and_no_speculation() -> None:
    assert speculative_config(Settings(engine={"preset": "glm_ocr"})) == {"method": "mtp", "num_speculative_tokens": 1}
    eagle = Settings(engine={"serve": {"speculative_method": "eagle3", "draft_model": "org/drafter-eagle3",
                                       "num_speculative_tokens": 3}})
    assert speculative_config(eagle) == {"method": "eagle3", "num_speculative_tokens": 3, "model": "org/drafter-eagle3"}
    assert speculative_config(Settings(engine={"serve": {"speculative_method": "none"}})) is None
    assert "--speculative-config" not in vllm_command(Settings(engine={"serve": {"speculative_method": "none"}}))
    with pytest.raises(ValueError, match="draft model"):
        speculative_config(Settings(engine={"serve": {"speculative_method": "eagle3"}}))
    with pytest.raises(ValueError, match="choose one of"):
        speculative_config(Settings(engine={"serve": {"speculative_method": "medusa"}}))


def test_the_cli_prints_a_shell_line_and_json_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from services.core.settings import get_settings

    monkeypatch.setenv("PAGEMILL_ENGINE__PRESET", "dots_ocr")
    monkeypatch.setenv("PAGEMILL_ENGINE__SERVE__PORT", "8001")
    get_settings.cache_clear()
    try:
        line = CliRunner().invoke(main, ["vllm-command"])
        as_json = CliRunner().invoke(main, ["vllm-command", "--json", "--preset", "olmocr"])
        bad = CliRunner().invoke(main, ["vllm-command", "--preset", "nope"])
    finally:
        get_settings.cache_clear()
    argv = shlex.split(line.output)
    assert line.exit_code == 0 and argv[2] == "rednote-hilab/dots.ocr" and "--trust-remote-code" in argv
    assert flag(argv, "--port") == "8001"
    assert json.loads(as_json.output)[2] == "allenai/olmOCR-2-7B-1025"
    assert bad.exit_code == 2 and "unknown engine preset" in bad.output


def test_the_image_limit_follows_the_pages_of_one_request() -> None:
    hunyuan = Settings(engine={"preset": "hunyuan_ocr", "serve": {"model_path": "/models/HunyuanOCR"}})
    assert json.loads(flag(vllm_command(hunyuan), "--limit-mm-per-prompt")) == {"image": 2, "video": 0}
    assert json.loads(flag(vllm_command(Settings(engine={"pages_per_request": 3})), "--limit-mm-per-prompt")) == {
        "image": 3, "video": 0}
    assert json.loads(flag(vllm_command(Settings(engine={"serve": {"max_images": 4}})), "--limit-mm-per-prompt"))[
        "image"] == 4


def test_extraction_json_is_compact_by_the_servers_structured_outputs_config() -> None:
    config = json.loads(flag(vllm_command(Settings()), "--structured-outputs-config"))
    assert config == {"backend": "xgrammar", "disable_any_whitespace": True}


@pytest.mark.parametrize("method", ["", *SPECULATIVE_METHODS])
@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_no_line_carries_a_logits_processor_and_speculation_together(preset: str, method: str) -> None:
    """vLLM 0.32 refuses to start with both ("Custom logits processors are not supported when speculative
    decoding is enabled."): whatever the preset and the method, the line has one or the other."""
    serve: dict[str, str] = {"speculative_method": method} if method else {}
    if (method or PRESETS[preset].speculative_method) in DRAFT_METHODS:
        serve["draft_model"] = "/models/draft"
    argv = vllm_command(Settings(engine={"kind": "vllm", "preset": preset, "serve": serve}))
    assert not ("--speculative-config" in argv and "--logits-processors" in argv), argv
    if PRESETS[preset].logits_processors and "--speculative-config" not in argv:
        assert flag(argv, "--logits-processors") == PRESETS[preset].logits_processors[0]
