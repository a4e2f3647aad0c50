"""The model-family presets added for DeepSeek-OCR fine-tunes, small OCR experts and Qwen3.5-VL parsers."""

from __future__ import annotations

import json

import pytest

from services.core.settings import Settings
from services.worker.engines.vllm.presets import get_preset, parse_deepseek
from services.worker.engines.vllm.serve import speculative_config, vllm_command
from services.worker.pipeline.quality import invalid_reason


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_deepseek_grounding_tags_become_blocks_with_boxes_and_leave_the_markdown_clean() -> None:
    answer = ("<|ref|>title<|/ref|><|det|>[[100, 50, 899, 90]]<|/det|>\n# Annual report\n\n"
              "<|ref|>text<|/ref|><|det|>[[100, 120, 899, 300]]<|/det|>\nRevenue grew by 4 %.\n"
              "<\uff5cend\u2581of\u2581sentence\uff5c>")
    parsed = parse_deepseek(answer)
    assert parsed.markdown == "# Annual report\n\nRevenue grew by 4 %.\n"
    assert "<|" not in parsed.markdown and not parsed.empty
    blocks = parsed.meta["blocks"]
    assert [b["kind"] for b in blocks] == ["title", "text"]
    assert blocks[0]["bbox_norm"] == pytest.approx([100 / 999, 50 / 999, 899 / 999, 90 / 999])


def test_deepseek_null_is_an_empty_page_not_a_bad_answer() -> None:
    parsed = parse_deepseek("null")
    assert parsed.empty and parsed.markdown == ""
    # The pipeline asks invalid_reason with page_has_text=False for such an answer: nothing to retry.
    assert invalid_reason(parsed.markdown, "stop", page_has_text=False) is None
    assert not parse_deepseek("Plain text without tags").empty


def test_deepseek_serve_line_follows_vllms_recipe_with_its_no_repeat_processor_and_no_speculation() -> None:
    argv = vllm_command(Settings(engine={"kind": "vllm", "preset": "deepseek_ocr"}))
    assert argv[2] == "deepseek-ai/DeepSeek-OCR"
    assert "--no-enable-prefix-caching" in argv and flag(argv, "--mm-processor-cache-gb") == "0"
    assert flag(argv, "--logits-processors").endswith("deepseek_ocr:NGramPerReqLogitsProcessor")
    assert "--speculative-config" not in argv
    assert speculative_config(Settings(engine={"preset": "deepseek_ocr"})) is None


def test_deepseek_with_a_draft_head_speculates_and_drops_the_processor_vllm_refuses_beside_it() -> None:
    settings = Settings(engine={"kind": "vllm", "preset": "deepseek_ocr",
                                "serve": {"speculative_method": "eagle", "draft_model": "/models/fastmtp-head"}})
    argv = vllm_command(settings)
    assert json.loads(flag(argv, "--speculative-config")) == {
        "method": "eagle", "num_speculative_tokens": 3, "model": "/models/fastmtp-head"}
    assert "--logits-processors" not in argv
    with pytest.raises(ValueError, match="draft model"):
        vllm_command(Settings(engine={"preset": "deepseek_ocr", "serve": {"speculative_method": "eagle"}}))


def test_qwen35_keeps_the_checkpoints_quantization_unless_told_and_shares_a_prefix() -> None:
    argv = vllm_command(Settings(engine={"kind": "vllm", "preset": "qwen35_vl"}))
    assert "--quantization" not in argv and "--enable-prefix-caching" in argv
    forced = vllm_command(Settings(engine={"preset": "qwen35_vl", "serve": {"quantization": "fp8"}}))
    assert flag(forced, "--quantization") == "fp8"
    preset = get_preset("qwen35_vl")
    assert not preset.image_first  # the shared text prompt first, so vLLM's prefix cache covers it
    assert preset.sampling["chat_template_kwargs"] == {"enable_thinking": False}


def test_hunyuan_ocr_renders_large_turns_caching_off_and_its_dflash_draft_is_the_checkpoints_folder() -> None:
    # No speculation by default: the pinned vLLM refuses dflash on HunYuanVL (tests/vllm/test_preset_models.py).
    argv = vllm_command(Settings(engine={"kind": "vllm", "preset": "hunyuan_ocr"}))
    assert "--speculative-config" not in argv and "--no-enable-prefix-caching" in argv
    preset = get_preset("hunyuan_ocr")
    assert preset.render_longest_side == 2048 and preset.strips_furniture and preset.anchor_template == ""
    dflash = {"speculative_method": "dflash", "model_path": "/models/HunyuanOCR/"}
    argv = vllm_command(Settings(engine={"kind": "vllm", "preset": "hunyuan_ocr", "serve": dflash}))
    assert json.loads(flag(argv, "--speculative-config")) == {
        "method": "dflash", "num_speculative_tokens": 15, "model": "/models/HunyuanOCR/dflash"}
    # A draft set by the settings wins; a hub id has no folder to point at, so the line asks for one.
    own = Settings(engine={"preset": "hunyuan_ocr", "serve": {**dflash, "draft_model": "/drafts/hy"}})
    assert speculative_config(own) == {"method": "dflash", "num_speculative_tokens": 15, "model": "/drafts/hy"}
    with pytest.raises(ValueError, match="dflash/ folder"):
        vllm_command(Settings(engine={"preset": "hunyuan_ocr", "serve": {"speculative_method": "dflash"}}))


def test_lighton_ocr_sends_the_page_alone_at_its_processors_size() -> None:
    preset = get_preset("lighton_ocr")
    assert preset.user_text("anchor text") == "" and preset.render_longest_side == 1540
    argv = vllm_command(Settings(engine={"kind": "vllm", "preset": "lighton_ocr"}))
    assert argv[2] == "lightonai/LightOnOCR-2-1B" and flag(argv, "--mm-processor-cache-gb") == "0"
    assert "--no-enable-prefix-caching" in argv and "--trust-remote-code" not in argv


def test_deepseek_ocr2_keeps_its_scripts_no_repeat_window_and_no_speculation() -> None:
    argv = vllm_command(Settings(engine={"kind": "vllm", "preset": "deepseek_ocr2"}))
    assert argv[2] == "deepseek-ai/DeepSeek-OCR-2" and "--speculative-config" not in argv
    assert flag(argv, "--logits-processors").endswith("deepseek_ocr:NGramPerReqLogitsProcessor")
    preset = get_preset("deepseek_ocr2")
    assert preset.sampling["vllm_xargs"] == {"ngram_size": 20, "window_size": 50,
                                             "whitelist_token_ids": [128821, 128822]}
    assert preset.parse("null").empty


def test_the_older_presets_keep_the_settings_quantization() -> None:
    for name in ("generic", "olmocr", "dots_ocr", "paddleocr_vl", "glm_ocr"):
        argv = vllm_command(Settings(engine={"kind": "vllm", "preset": name}))
        assert flag(argv, "--quantization") == "fp8", name
        assert "--enable-prefix-caching" not in argv, name
