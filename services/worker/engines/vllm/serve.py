"""The `vllm serve` command line built from settings, so deployments and docs never drift from the engine.

`pagemill vllm-command` prints it; the chart and the `make test-vllm` server are started from it.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from services.core.settings import Settings
from services.worker.engines.vllm.presets import get_preset

# vLLM's SpeculativeConfig methods pagemill drives: prompt lookup, suffix trees over the prompt and earlier outputs,
# a draft head (EAGLE/EAGLE-3, e.g. a FastMTP head served as `eagle`; DFlash, a block-diffusion drafter), the
# model's own MTP layers, or none.
SPECULATIVE_METHODS = ("ngram", "suffix", "eagle", "eagle3", "dflash", "mtp", "none")
DRAFT_METHODS = ("eagle", "eagle3", "dflash")
STRUCTURED_OUTPUTS = {"backend": "xgrammar", "disable_any_whitespace": True}
# vLLM's `suffix` method (Arctic Inference's suffix trees over the prompt and the earlier requests' outputs) with
# the parameters `pagemill specsim --sweep` measured best on dev (docs/benchmarks.md, specsim).
SUFFIX_DECODING: dict[str, int | float] = {
    "suffix_decoding_max_tree_depth": 24, "suffix_decoding_max_spec_factor": 4.0,
    "suffix_decoding_min_token_prob": 0.05,
}


def speculative_config(settings: Settings) -> dict[str, Any] | None:
    """vLLM's `--speculative-config` for the configured method, or None when speculation is off."""
    serve = settings.engine.serve
    preset = get_preset(settings.engine.preset)
    method = serve.speculative_method or preset.speculative_method
    if method not in SPECULATIVE_METHODS:
        raise ValueError(f"speculative method {method!r}: choose one of {', '.join(SPECULATIVE_METHODS)}")
    if method == "none":
        return None
    tokens = serve.num_speculative_tokens or preset.num_speculative_tokens
    config: dict[str, Any] = {"method": method, "num_speculative_tokens": tokens}
    if method == "ngram":
        if serve.prompt_lookup_min > serve.prompt_lookup_max:
            raise ValueError("prompt_lookup_min must not exceed prompt_lookup_max")
        # Prompt lookup: drafts are copied from the prompt (the page's anchor text) when the last
        # `prompt_lookup_min`..`max` generated tokens occur there.
        config.update(prompt_lookup_max=serve.prompt_lookup_max, prompt_lookup_min=serve.prompt_lookup_min)
    elif method == "suffix":
        # Drafts from suffix trees over the request's prompt (the anchor) and the outputs of earlier requests
        # (earlier pages); vLLM needs the arctic-inference package in the server's environment for it.
        config.update(SUFFIX_DECODING)
    elif method in DRAFT_METHODS:
        draft = serve.draft_model
        if not draft and preset.draft_folder and serve.model_path:
            draft = f"{serve.model_path.rstrip('/')}/{preset.draft_folder}"  # the checkpoint's own drafter
        if not draft:
            where = (f" (the preset's draft is the checkpoint's {preset.draft_folder}/ folder: set "
                     "PAGEMILL_ENGINE__SERVE__MODEL_PATH to the downloaded checkpoint)" if preset.draft_folder else "")
            raise ValueError(f"{method} needs a draft model: set PAGEMILL_ENGINE__SERVE__DRAFT_MODEL{where} "
                             "(or PAGEMILL_ENGINE__SERVE__SPECULATIVE_METHOD=none)")
        config["model"] = draft
    elif serve.draft_model:  # mtp reads the target model's own prediction layers
        raise ValueError("mtp uses the model's own layers; unset PAGEMILL_ENGINE__SERVE__DRAFT_MODEL")
    return config


def pages_per_request(settings: Settings) -> int:
    return settings.engine.pages_per_request or get_preset(settings.engine.preset).pages_per_request


def images_per_request(settings: Settings) -> int:
    """What `--limit-mm-per-prompt` allows: the pages of one request, unless the serve settings say more."""
    return max(settings.engine.serve.max_images, pages_per_request(settings), 1)


def vllm_command(settings: Settings, *, executable: str = "vllm") -> list[str]:
    """argv of `vllm serve` for the configured preset and engine settings.

    The API key is not put on the line (it would show in process lists): vLLM reads `VLLM_API_KEY`.
    """
    engine, serve = settings.engine, settings.engine.serve
    preset = get_preset(engine.preset)
    argv = [
        executable, "serve", serve.model_path or preset.model,
        "--served-model-name", engine.model or preset.model,
        "--host", serve.host, "--port", str(serve.port),
        "--max-num-seqs", str(serve.max_num_seqs or engine.max_in_flight),
        "--max-model-len", str(serve.max_model_len or preset.max_model_len),
        "--limit-mm-per-prompt", json.dumps({"image": images_per_request(settings), "video": 0}),
    ]
    # A preset's own quantization ("" for pre-quantized checkpoints) applies unless the setting was given.
    quantization = serve.quantization
    if "quantization" not in serve.model_fields_set and preset.quantization is not None:
        quantization = preset.quantization
    if quantization:
        argv += ["--quantization", quantization]
    if preset.prefix_caching is not None:
        argv.append("--enable-prefix-caching" if preset.prefix_caching else "--no-enable-prefix-caching")
    if serve.kv_cache_dtype:
        argv += ["--kv-cache-dtype", serve.kv_cache_dtype]
    if serve.gpu_memory_utilization:
        argv += ["--gpu-memory-utilization", f"{serve.gpu_memory_utilization:g}"]
    spec = speculative_config(settings)
    if spec is not None:
        argv += ["--speculative-config", json.dumps(spec)]
    elif preset.logits_processors:
        # Never both: vLLM 0.32 refuses custom logits processors while speculating (see Preset.logits_processors).
        argv += ["--logits-processors", *preset.logits_processors]
    # The extract task's JSON (structured outputs) without whitespace between tokens: budget it does not need,
    # and noise a weak model can run on in. vLLM sets this per server only, and only for xgrammar or guidance.
    argv += ["--structured-outputs-config", json.dumps(STRUCTURED_OUTPUTS)]
    return argv + list(preset.serve_args) + list(serve.extra_args)


def shell_line(argv: list[str]) -> str:
    return shlex.join(argv)
