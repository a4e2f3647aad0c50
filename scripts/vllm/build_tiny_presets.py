#!/usr/bin/env python3
"""Build, entirely offline, one tiny model per architecture the vLLM presets serve (for `make test-vllm`).

Usage:  python build_tiny_presets.py OUT_DIR      (run with the vLLM venv's python: some configs are vLLM's)

Each model is built from its architecture's own config class — transformers' where it has one, vLLM's where
vLLM carries it (DeepSeek-OCR's DeepseekVLV2Config, dots.ocr's DotsOCRConfig) — with tiny sizes, a byte-level
BPE trained here on a few lines of text plus the family's special tokens, its own processor and a chat
template. Nothing comes from a model hub. No weight files are written: the servers load vLLM's random
(`--load-format dummy`) weights of exactly that architecture, so one builder covers architectures that
transformers cannot instantiate (vLLM-only models) as well as those it can.

OUT_DIR/manifest.json maps each preset to its model folder; OUT_DIR/<family>/ holds the checkpoint. A stamp
(this file's hash) makes a second run with the same builder a no-op.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Invoice number 12345 dated 2024-01-31. Total amount due: $1,234.56.",
    "Document parsing extracts text, tables and figures from PDF pages.",
    "Convert the document to markdown. Extract the text content from this image.",
    "Table 1: Name | Quantity | Price. Row 1: Widget | 3 | 9.99. <table><tr><td>1</td></tr></table>",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.",
    "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ !?.,;:'\"()[]{}<>-_/\\|@#$%^&*+=~`",
    "Markdown: # Heading\n- bullet one\n- bullet two\n$$x^2 + y^2 = z^2$$",
]
# Small images: every page becomes a few dozen image tokens, so several fit a short context.
MAX_PIXELS = 224 * 224
MIN_PIXELS = 56 * 56

QWEN_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
               "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>"]
# A Qwen-style chat template that takes OpenAI image parts (vLLM's chat API sends them as such).
QWEN_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' or 'image' in part or 'image_url' in part %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif 'text' in part %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def tokenizer(special: list[str], *, eos: str, pad: str, bos: str | None = None,
              named: dict[str, str] | None = None, template: str = QWEN_TEMPLATE) -> PreTrainedTokenizerFast:
    """A byte-level BPE (every byte is a token: no unknown input) with the family's special tokens appended."""
    model = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    model.normalizer = normalizers.NFC()
    model.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    model.decoder = decoders.ByteLevel()
    model.train_from_iterator(CORPUS * 20, trainer=trainers.BpeTrainer(
        vocab_size=768, min_frequency=1, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[],
        show_progress=False))
    tok = PreTrainedTokenizerFast(tokenizer_object=model, eos_token=eos, pad_token=pad, bos_token=bos,
                                  unk_token=None, model_max_length=8192, clean_up_tokenization_spaces=False,
                                  split_special_tokens=False, extra_special_tokens=named or {})
    tok.add_special_tokens({"additional_special_tokens": special})
    tok.chat_template = template
    return tok


def ids(tok: PreTrainedTokenizerFast, *tokens: str) -> list[int]:
    found = [tok.convert_tokens_to_ids(token) for token in tokens]
    assert len(set(found)) == len(tokens) and all(isinstance(i, int) for i in found), list(found)
    return found


def padded_vocab(tok: PreTrainedTokenizerFast) -> int:
    return ((len(tok) + 63) // 64) * 64


def write(out: Path, config: Any, tok: PreTrainedTokenizerFast, processor: Any | None,
          architecture: str, generation: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    config.architectures = [architecture]
    config.save_pretrained(out)
    tok.save_pretrained(out)
    if processor is not None:
        processor.save_pretrained(out)
    (out / "generation_config.json").write_text(json.dumps({"do_sample": False, **generation}, indent=1))


def text_sizes(vocab: int, **extra: Any) -> dict[str, Any]:
    """A two-layer decoder, head size 64 (a size vLLM's CPU attention supports)."""
    return {"vocab_size": vocab, "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2,
            "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 64, "max_position_embeddings": 8192,
            "rms_norm_eps": 1e-6, "tie_word_embeddings": False, **extra}


# The families ---------------------------------------------------------------------------------------------------

def qwen2_5_vl(out: Path) -> None:
    """generic, olmocr: Qwen2.5-VL."""
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLProcessor, Qwen2VLImageProcessor, Qwen2VLVideoProcessor

    tok = tokenizer(QWEN_TOKENS, eos="<|im_end|>", pad="<|endoftext|>")
    pad, eos, image, video, start, end = ids(tok, "<|endoftext|>", "<|im_end|>", "<|image_pad|>", "<|video_pad|>",
                                             "<|vision_start|>", "<|vision_end|>")
    text = text_sizes(padded_vocab(tok), bos_token_id=pad, eos_token_id=eos, pad_token_id=pad,
                      rope_parameters={"rope_type": "default", "mrope_section": [8, 12, 12], "rope_theta": 1e6})
    vision = {"depth": 2, "hidden_size": 64, "intermediate_size": 128, "num_heads": 2, "out_hidden_size": 128,
              "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "window_size": 112,
              "fullatt_block_indexes": [1], "hidden_act": "silu"}
    config = Qwen2_5_VLConfig(text_config=text, vision_config=vision, image_token_id=image, video_token_id=video,
                              vision_start_token_id=start, vision_end_token_id=end, tie_word_embeddings=False)
    images = Qwen2VLImageProcessor(min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS, patch_size=14,
                                   temporal_patch_size=2, merge_size=2)
    videos = Qwen2VLVideoProcessor(min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS, patch_size=14,
                                   temporal_patch_size=2, merge_size=2)
    processor = Qwen2_5_VLProcessor(image_processor=images, tokenizer=tok, video_processor=videos,
                                    chat_template=QWEN_TEMPLATE)
    write(out, config, tok, processor, "Qwen2_5_VLForConditionalGeneration", {"eos_token_id": [eos]})


def hunyuan_vl(out: Path) -> None:
    """hunyuan_ocr: HunYuanVL (vLLM serves it through its Transformers backend), and a DFlash drafter in
    `dflash/`, as HunyuanOCR-1.5's checkpoint ships one."""
    from transformers import HunYuanVLConfig, HunYuanVLImageProcessor, HunYuanVLProcessor, Qwen3Config

    named = {"image_token": "<hy_image>", "image_start_token": "<hy_image_start>",
             "image_end_token": "<hy_image_end>"}
    special = ["<hy_pad>", "<hy_bos>", "<hy_eos>", "<hy_user>", "<hy_assistant>", "<hy_newline>", "<hy_mask>",
               *named.values()]
    template = ("<hy_bos>{% for message in messages %}{% if message['role'] == 'user' %}<hy_user>"
                "{% else %}<hy_assistant>{% endif %}{% if message['content'] is string %}{{ message['content'] }}"
                "{% else %}{% for part in message['content'] %}"
                "{% if part['type'] == 'image' or 'image' in part or 'image_url' in part %}"
                "<hy_image_start><hy_image><hy_image_end>{% elif 'text' in part %}{{ part['text'] }}{% endif %}"
                "{% endfor %}{% endif %}{% if message['role'] != 'user' %}<hy_eos>{% endif %}{% endfor %}"
                "{% if add_generation_prompt %}<hy_assistant>{% endif %}")
    tok = tokenizer(special, eos="<hy_eos>", pad="<hy_pad>", bos="<hy_bos>", named=named, template=template)
    pad, bos, eos, image, start, end, newline, mask = ids(tok, "<hy_pad>", "<hy_bos>", "<hy_eos>", "<hy_image>",
                                                          "<hy_image_start>", "<hy_image_end>", "<hy_newline>",
                                                          "<hy_mask>")
    vocab = padded_vocab(tok)
    text = text_sizes(vocab, pad_token_id=pad, bos_token_id=bos, eos_token_id=eos, eod_token_id=eos,
                      sep_token_id=pad, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    vision = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 2, "num_hidden_layers": 2,
              "out_hidden_size": 128, "patch_size": 16, "spatial_merge_size": 2, "max_image_size": 448,
              "min_image_size": 64, "max_vit_seq_len": 1024, "img_max_token_num": 256}
    config = HunYuanVLConfig(text_config=text, vision_config=vision, image_token_id=image, im_start_id=start,
                             im_end_id=end, im_newline_id=newline, tie_word_embeddings=False)
    images = HunYuanVLImageProcessor(min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS)
    processor = HunYuanVLProcessor(image_processor=images, tokenizer=tok, chat_template=template)
    write(out, config, tok, processor, "HunYuanVLForConditionalGeneration", {"eos_token_id": [eos]})
    # The drafter: one Qwen3 layer reading the target's hidden states at two layers (vLLM's DFlashDraftModel).
    draft = Qwen3Config(**text_sizes(vocab, num_hidden_layers=1, bos_token_id=bos, eos_token_id=eos,
                                     pad_token_id=pad),
                        block_size=16, dflash_config={"target_layer_ids": [0, 1], "mask_token_id": mask})
    write(out / "dflash", draft, tok, None, "DFlashDraftModel", {"eos_token_id": [eos]})


def lighton_ocr(out: Path) -> None:
    """lighton_ocr: LightOnOCR-2's checkpoint layout (a Mistral3 config over a Pixtral encoder and a Qwen3
    decoder, architecture LightOnOCRForConditionalGeneration) and a Pixtral processor."""
    from transformers import Mistral3Config, PixtralImageProcessor, PixtralProcessor

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "[IMG]", "[IMG_BREAK]", "[IMG_END]"]
    template = QWEN_TEMPLATE.replace("<|vision_start|><|image_pad|><|vision_end|>", "[IMG]")
    tok = tokenizer(special, eos="<|im_end|>", pad="<|endoftext|>", template=template)
    pad, eos, image, brk, img_end = ids(tok, "<|endoftext|>", "<|im_end|>", "[IMG]", "[IMG_BREAK]", "[IMG_END]")
    text = {"model_type": "qwen3", **text_sizes(padded_vocab(tok), bos_token_id=pad, eos_token_id=eos,
                                                 pad_token_id=pad, rope_parameters={"rope_type": "default",
                                                                                    "rope_theta": 1e6})}
    vision = {"model_type": "pixtral", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
              "num_attention_heads": 2, "head_dim": 32, "patch_size": 14, "image_size": 224,
              "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}, "hidden_act": "silu"}
    config = Mistral3Config(text_config=text, vision_config=vision, image_token_index=image,
                            spatial_merge_size=2, projector_hidden_act="gelu", multimodal_projector_bias=False,
                            vision_feature_layer=-1, tie_word_embeddings=False)
    images = PixtralImageProcessor(size={"longest_edge": 224}, patch_size=14)
    processor = PixtralProcessor(image_processor=images, tokenizer=tok, patch_size=14, spatial_merge_size=2,
                                 image_token="[IMG]", image_break_token="[IMG_BREAK]", image_end_token="[IMG_END]",
                                 chat_template=template)
    del brk, img_end
    write(out, config, tok, processor, "LightOnOCRForConditionalGeneration", {"eos_token_id": [eos]})


def deepseek(out: Path, architecture: str) -> None:
    """deepseek_ocr, deepseek_ocr2: vLLM's DeepseekVLV2Config (the checkpoints' own layout) with a tiny
    DeepSeek-V2 decoder. The SAM and CLIP encoders are built at fixed sizes by vLLM, whatever the config says."""
    from vllm.transformers_utils.configs.deepseek_vl2 import DeepseekVLV2Config

    special = ["<\uff5cbegin\u2581of\u2581sentence\uff5c>", "<\uff5cend\u2581of\u2581sentence\uff5c>",
               "<\uff5c\u2581pad\u2581\uff5c>", "<image>", "<|ref|>", "<|/ref|>", "<|det|>", "<|/det|>",
               "<|grounding|>"]
    # DeepSeek-OCR is prompted with plain text: the image placeholder, then the instruction.
    template = ("{{ bos_token }}{% for message in messages %}{% if message['content'] is string %}"
                "{{ message['content'] }}{% else %}{% for part in message['content'] %}"
                "{% if part['type'] == 'image' or 'image' in part or 'image_url' in part %}<image>\n"
                "{% elif 'text' in part %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}{% endfor %}")
    tok = tokenizer(special, eos=special[1], pad=special[2], bos=special[0], template=template)
    bos, eos, pad = ids(tok, *special[:3])
    language = {"vocab_size": padded_vocab(tok), "hidden_size": 128, "intermediate_size": 256,
                "moe_intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
                "num_key_value_heads": 2, "head_dim": 64,
                # plain multi-head attention, as DeepSeek-OCR's decoder has (no MLA: no latent ranks)
                "qk_nope_head_dim": 0, "qk_rope_head_dim": 0, "v_head_dim": 0, "kv_lora_rank": None,
                "q_lora_rank": None, "use_mla": False,
                # its MoE layers start after the dense ones: two dense layers keep the tiny decoder dense
                "n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1, "first_k_dense_replace": 2,
                "bos_token_id": bos, "eos_token_id": eos, "pad_token_id": pad, "max_position_embeddings": 8192,
                "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
                "architectures": ["DeepseekV2ForCausalLM"]}
    config = DeepseekVLV2Config(architectures=[architecture], language_config=language,
                                # the width of vLLM's fixed encoders: SAM+CLIP 2048 (OCR), the Qwen2 flow 896 (OCR-2)
                                projector_config={"projector_type": "linear", "n_embed": 128,
                                                  "input_dim": 896 if "OCR2" in architecture else 2048},
                                # DeepSeek-OCR-2 reads its global view's size (1024) from here
                                vision_config={"image_size": 1024} if "OCR2" in architecture else {},
                                tile_tag="2D", global_view_pos="head",
                                candidate_resolutions=[[1024, 1024]])
    write(out, config, tok, None, architecture, {"eos_token_id": [eos]})
    # The checkpoints name the decoder's config `language_config`: the config class reads it under that name.
    saved = json.loads((out / "config.json").read_text())
    saved["language_config"] = saved.pop("text_config")
    (out / "config.json").write_text(json.dumps(saved, indent=2))


def paddleocr_vl(out: Path) -> None:
    """paddleocr_vl: PaddleOCR-VL (transformers' own classes; the checkpoint's remote code is the same model)."""
    from transformers import PaddleOCRVLConfig, PaddleOCRVLImageProcessor, PaddleOCRVLProcessor

    named = {"image_token": "<|IMAGE_PLACEHOLDER|>"}
    special = ["<unk>", "<s>", "</s>", "<|IMAGE_START|>", "<|IMAGE_END|>", "<|video_pad|>", *named.values()]
    template = ("<s>{% for message in messages %}{% if message['role'] == 'user' %}User: {% else %}Assistant: "
                "{% endif %}{% if message['content'] is string %}{{ message['content'] }}{% else %}"
                "{% for part in message['content'] %}"
                "{% if part['type'] == 'image' or 'image' in part or 'image_url' in part %}"
                "<|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>{% elif 'text' in part %}{{ part['text'] }}"
                "{% endif %}{% endfor %}{% endif %}\n{% endfor %}{% if add_generation_prompt %}Assistant: "
                "{% endif %}")
    tok = tokenizer(special, eos="</s>", pad="<unk>", bos="<s>", named=named, template=template)
    pad, bos, eos, start, end, video, image = ids(tok, *special)
    text = text_sizes(padded_vocab(tok), pad_token_id=pad, bos_token_id=bos, eos_token_id=eos,
                      rope_parameters={"rope_type": "default", "mrope_section": [8, 12, 12], "rope_theta": 5e5})
    vision = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
              "patch_size": 14, "image_size": 224, "spatial_merge_size": 2}
    config = PaddleOCRVLConfig(text_config=text, vision_config=vision, image_token_id=image, video_token_id=video,
                               vision_start_token_id=start, vision_end_token_id=end, tie_word_embeddings=False)
    images = PaddleOCRVLImageProcessor(min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS, patch_size=14, merge_size=2,
                                       temporal_patch_size=1)
    processor = PaddleOCRVLProcessor(image_processor=images, tokenizer=tok, chat_template=template)
    write(out, config, tok, processor, "PaddleOCRVLForConditionalGeneration", {"eos_token_id": [eos]})


def glm_ocr(out: Path) -> None:
    """glm_ocr: GLM-OCR with one multi-token-prediction layer (what the preset's `mtp` speculation reads)."""
    from transformers import Glm46VImageProcessor, Glm46VProcessor, Glm46VVideoProcessor, GlmOcrConfig

    special = ["<|endoftext|>", "[gMASK]", "<sop>", "<|user|>", "<|assistant|>", "<|begin_of_image|>",
               "<|end_of_image|>", "<|image|>", "<|begin_of_video|>", "<|end_of_video|>", "<|video|>"]
    template = ("[gMASK]<sop>{% for message in messages %}<|{{ message['role'] }}|>\n"
                "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
                "{% for part in message['content'] %}"
                "{% if part['type'] == 'image' or 'image' in part or 'image_url' in part %}"
                "<|begin_of_image|><|image|><|end_of_image|>{% elif 'text' in part %}{{ part['text'] }}{% endif %}"
                "{% endfor %}{% endif %}{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}")
    tok = tokenizer(special, eos="<|endoftext|>", pad="<|endoftext|>", template=template)
    eos, user, start, end, image, vstart, vend, video = ids(tok, "<|endoftext|>", "<|user|>", "<|begin_of_image|>",
                                                           "<|end_of_image|>", "<|image|>", "<|begin_of_video|>",
                                                           "<|end_of_video|>", "<|video|>")
    text = text_sizes(padded_vocab(tok), eos_token_id=[eos, user], pad_token_id=eos, num_nextn_predict_layers=1,
                      partial_rotary_factor=0.5,
                      rope_parameters={"rope_type": "default", "mrope_section": [4, 6, 6], "rope_theta": 10000.0})
    vision = {"depth": 2, "hidden_size": 64, "intermediate_size": 128, "num_heads": 2, "out_hidden_size": 128,
              "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "image_size": 224}
    config = GlmOcrConfig(text_config=text, vision_config=vision, image_token_id=image, video_token_id=video,
                          image_start_token_id=start, image_end_token_id=end, video_start_token_id=vstart,
                          video_end_token_id=vend, tie_word_embeddings=False)
    size = {"shortest_edge": MIN_PIXELS, "longest_edge": MAX_PIXELS}
    processor = Glm46VProcessor(image_processor=Glm46VImageProcessor(size=size, patch_size=14, merge_size=2,
                                                                      temporal_patch_size=2),
                                tokenizer=tok, video_processor=Glm46VVideoProcessor(size=size),
                                chat_template=template)
    write(out, config, tok, processor, "GlmOcrForConditionalGeneration", {"eos_token_id": [eos, user]})


def qwen3_5(out: Path) -> None:
    """qwen35_vl: Qwen3.5 (hybrid: gated-delta-net linear attention layers beside full attention)."""
    from transformers import Qwen2VLImageProcessor, Qwen3_5Config, Qwen3VLProcessor, Qwen3VLVideoProcessor

    tok = tokenizer(QWEN_TOKENS, eos="<|im_end|>", pad="<|endoftext|>")
    pad, eos, image, video, start, end = ids(tok, "<|endoftext|>", "<|im_end|>", "<|image_pad|>", "<|video_pad|>",
                                             "<|vision_start|>", "<|vision_end|>")
    text = text_sizes(padded_vocab(tok), eos_token_id=eos, pad_token_id=pad,
                      layer_types=["linear_attention", "full_attention"], linear_conv_kernel_dim=4,
                      linear_key_head_dim=32, linear_value_head_dim=32, linear_num_key_heads=2,
                      linear_num_value_heads=2,
                      rope_parameters={"rope_type": "default", "mrope_section": [8, 12, 12], "rope_theta": 1e7,
                                       "mrope_interleaved": True, "partial_rotary_factor": 1.0})
    vision = {"depth": 2, "hidden_size": 64, "intermediate_size": 128, "num_heads": 2, "out_hidden_size": 128,
              "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2, "num_position_embeddings": 256}
    config = Qwen3_5Config(text_config=text, vision_config=vision, image_token_id=image, video_token_id=video,
                           vision_start_token_id=start, vision_end_token_id=end, tie_word_embeddings=False)
    images = Qwen2VLImageProcessor(min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS, patch_size=16,
                                   temporal_patch_size=2, merge_size=2)
    videos = Qwen3VLVideoProcessor(size={"shortest_edge": MIN_PIXELS, "longest_edge": MAX_PIXELS}, patch_size=16,
                                   temporal_patch_size=2, merge_size=2)
    processor = Qwen3VLProcessor(image_processor=images, tokenizer=tok, video_processor=videos,
                                 chat_template=QWEN_TEMPLATE)
    write(out, config, tok, processor, "Qwen3_5ForConditionalGeneration", {"eos_token_id": [eos]})


# dots.ocr's checkpoint brings its config class as remote code; the tiny one brings vLLM's, which is the same.
DOTS_REMOTE_CODE = "from vllm.transformers_utils.configs.dotsocr import DotsOCRConfig, DotsVisionConfig  # noqa\n"


def dots_ocr(out: Path) -> None:
    """dots_ocr, dots_ocr_layout: dots.ocr (a Qwen2 decoder, its own vision tower, a Qwen2-VL processor)."""
    from transformers import Qwen2VLImageProcessor, Qwen2VLProcessor, Qwen2VLVideoProcessor
    from vllm.transformers_utils.configs.dotsocr import DotsOCRConfig

    tokens = [*QWEN_TOKENS, "<|imgpad|>", "<|img|>", "<|endofimg|>"]
    template = QWEN_TEMPLATE.replace("<|vision_start|><|image_pad|><|vision_end|>", "<|img|><|imgpad|><|endofimg|>")
    tok = tokenizer(tokens, eos="<|im_end|>", pad="<|endoftext|>", template=template)
    pad, eos, image, video = ids(tok, "<|endoftext|>", "<|im_end|>", "<|imgpad|>", "<|video_pad|>")
    vision = {"embed_dim": 64, "hidden_size": 128, "intermediate_size": 128, "num_hidden_layers": 2,
              "num_attention_heads": 2, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 1}
    config = DotsOCRConfig(image_token_id=image, video_token_id=video, vision_config=vision,
                           **text_sizes(padded_vocab(tok), eos_token_id=eos, pad_token_id=pad, bos_token_id=pad,
                                        rope_parameters={"rope_type": "default", "rope_theta": 1e6}))
    config.auto_map = {"AutoConfig": "configuration_dots.DotsOCRConfig"}
    images = Qwen2VLImageProcessor(min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS, patch_size=14,
                                   temporal_patch_size=1, merge_size=2)
    videos = Qwen2VLVideoProcessor(min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS, patch_size=14,
                                   temporal_patch_size=1, merge_size=2)
    processor = Qwen2VLProcessor(image_processor=images, tokenizer=tok, video_processor=videos,
                                 chat_template=template)
    write(out, config, tok, processor, "DotsOCRForCausalLM", {"eos_token_id": [eos]})
    (out / "configuration_dots.py").write_text(DOTS_REMOTE_CODE)


FAMILIES: dict[str, Callable[[Path], None]] = {
    "qwen2_5_vl": qwen2_5_vl,
    "hunyuan_vl": hunyuan_vl,
    "lighton_ocr": lighton_ocr,
    "deepseek_ocr": lambda out: deepseek(out, "DeepseekOCRForCausalLM"),
    "deepseek_ocr2": lambda out: deepseek(out, "DeepseekOCR2ForCausalLM"),
    "paddleocr_vl": paddleocr_vl,
    "glm_ocr": glm_ocr,
    "qwen3_5": qwen3_5,
    "dots_ocr": dots_ocr,
}
# Which family serves which preset (a preset not listed here has no tiny model: the test says why).
PRESET_FAMILY = {
    "generic": "qwen2_5_vl",
    "olmocr": "qwen2_5_vl",
    "hunyuan_ocr": "hunyuan_vl",
    "lighton_ocr": "lighton_ocr",
    "deepseek_ocr": "deepseek_ocr",
    "deepseek_ocr2": "deepseek_ocr2",
    "paddleocr_vl": "paddleocr_vl",
    "glm_ocr": "glm_ocr",
    "qwen35_vl": "qwen3_5",
    "dots_ocr": "dots_ocr",
    "dots_ocr_layout": "dots_ocr",
}


def main() -> None:
    out = Path(sys.argv[1])
    only = set(sys.argv[2:])  # families to build (all when none is named)
    stamp = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    manifest_path = out / "manifest.json"
    if manifest_path.exists() and json.loads(manifest_path.read_text()).get("stamp") == stamp:
        print(f"tiny preset models up to date: {out}")
        return
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    built: dict[str, str] = {}
    for family, build in FAMILIES.items():
        if only and family not in only:
            continue
        build(out / family)
        built[family] = str(out / family)
        print(f"built {family}: {sorted(os.listdir(out / family))}")
    presets = {preset: {"family": family, "model": built[family]} for preset, family in PRESET_FAMILY.items()
               if family in built}
    manifest_path.write_text(json.dumps({"stamp": stamp, "presets": presets}, indent=1))


if __name__ == "__main__":
    main()
