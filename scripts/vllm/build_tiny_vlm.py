#!/usr/bin/env python3
"""Build a tiny, random-weight Qwen2-VL checkpoint entirely offline (for `make test-vllm`).

Adapted from the shared vLLM-on-CPU recipe.

No downloads: the tokenizer is a byte-level BPE trained here on a few lines of
text, the weights are random (seeded), and the processor / chat template are
constructed locally. The result can be served by `vllm serve <dir>`.

Usage:  python build_tiny_vlm.py OUT_DIR

Sizes (all tiny on purpose):
  text:   hidden 128, 2 layers, 2 heads (head_dim 64; vLLM CPU attention
          supports head sizes 32/64/80/...), 1 KV head, mrope_section [8,12,12]
  vision: embed_dim 64, depth 2, 2 heads (head_dim 32), patch 14,
          spatial_merge 2, temporal_patch 2
  images are resized to at most 224x224 pixels -> at most 64 image tokens.
"""
import json
import os
import sys

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import (
    PreTrainedTokenizerFast,
    Qwen2VLConfig,
    Qwen2VLForConditionalGeneration,
    Qwen2VLProcessor,
)

OUT = sys.argv[1]
SEED = 0
MIN_PIXELS = 56 * 56
MAX_PIXELS = 224 * 224

# Special tokens in the same order as Qwen2-VL (ids follow the BPE vocab).
SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
]

# Qwen2-VL-Instruct style chat template (handles OpenAI image_url parts too).
CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}"
    "{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}"
    "{% set video_count.value = video_count.value + 1 %}"
    "{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}"
    "{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Invoice number 12345 dated 2024-01-31. Total amount due: $1,234.56.",
    "Document parsing extracts text, tables and figures from PDF pages.",
    "Describe the image. What is in this picture? Read the text in the image.",
    "Table 1: Name | Quantity | Price. Row 1: Widget | 3 | 9.99.",
    "You are a helpful assistant. Please answer the question concisely.",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.",
    "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ !?.,;:'\"()[]{}<>-_/\\|@#$%^&*+=~`",
    "Markdown: # Heading\n- bullet one\n- bullet two\n```python\nprint('hello')\n```",
]


def build_tokenizer() -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1024,
        min_frequency=1,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # all 256 bytes -> no OOV
        special_tokens=[],
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 20, trainer=trainer)
    hf_tok = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        bos_token=None,
        additional_special_tokens=SPECIAL_TOKENS,
        model_max_length=4096,
        clean_up_tokenization_spaces=False,
        split_special_tokens=False,
    )
    # make sure every special token really is one id
    hf_tok.add_special_tokens({"additional_special_tokens": SPECIAL_TOKENS})
    hf_tok.chat_template = CHAT_TEMPLATE
    return hf_tok


def build_image_processor():
    kw = dict(
        min_pixels=MIN_PIXELS,
        max_pixels=MAX_PIXELS,
        patch_size=14,
        temporal_patch_size=2,
        merge_size=2,
    )
    try:  # torchvision backend (default in transformers 5)
        from transformers import Qwen2VLImageProcessor

        return Qwen2VLImageProcessor(**kw)
    except Exception:  # pragma: no cover - PIL backend fallback
        from transformers.models.qwen2_vl import Qwen2VLImageProcessorPil

        return Qwen2VLImageProcessorPil(**kw)


def build_video_processor():
    try:
        from transformers import Qwen2VLVideoProcessor

        return Qwen2VLVideoProcessor(
            min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS, patch_size=14, temporal_patch_size=2, merge_size=2
        )
    except Exception as e:  # needs torchvision
        print("video processor unavailable:", e)
        return None


def main():
    torch.manual_seed(SEED)
    os.makedirs(OUT, exist_ok=True)

    tok = build_tokenizer()
    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    assert len(set(ids.values())) == len(SPECIAL_TOKENS), ids
    n_vocab = len(tok)
    vocab_size = ((n_vocab + 63) // 64) * 64  # pad like real checkpoints

    text_config = dict(
        vocab_size=vocab_size,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        hidden_act="silu",
        max_position_embeddings=4096,
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "mrope_section": [8, 12, 12], "rope_theta": 1000000.0},
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
        use_sliding_window=False,
        tie_word_embeddings=False,
    )
    vision_config = dict(
        depth=2,
        embed_dim=64,
        hidden_size=128,  # merger output dim == text hidden size
        hidden_act="quick_gelu",
        mlp_ratio=2,
        num_heads=2,
        in_channels=3,
        patch_size=14,
        spatial_merge_size=2,
        temporal_patch_size=2,
    )
    config = Qwen2VLConfig(
        text_config=text_config,
        vision_config=vision_config,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False,
    )
    config.architectures = ["Qwen2VLForConditionalGeneration"]

    model = Qwen2VLForConditionalGeneration(config)
    model = model.to(torch.bfloat16).eval()
    model.generation_config.eos_token_id = [ids["<|im_end|>"], ids["<|endoftext|>"]]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.generation_config.bos_token_id = ids["<|endoftext|>"]
    model.generation_config.do_sample = False
    model.save_pretrained(OUT, safe_serialization=True)

    processor = Qwen2VLProcessor(
        image_processor=build_image_processor(),
        tokenizer=tok,
        video_processor=build_video_processor(),
        chat_template=CHAT_TEMPLATE,
    )
    processor.save_pretrained(OUT)
    tok.save_pretrained(OUT)  # also writes tokenizer chat template

    n_params = sum(p.numel() for p in model.parameters())
    summary = {
        "out": OUT,
        "params": n_params,
        "tokenizer_len": n_vocab,
        "vocab_size": vocab_size,
        "special_ids": ids,
        "files": sorted(os.listdir(OUT)),
    }
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
