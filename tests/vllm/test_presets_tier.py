"""Every preset's request, exactly as its engine builds it, answered by a real vLLM server.

The server runs the tiny random-weight Qwen2-VL (vLLM's CPU backend, tests/vllm_server.py): the presets' own
architectures (DeepSeek-OCR, HunYuanVL, Qwen3.5, dots.ocr, PaddleOCR-VL, GLM-OCR, Qwen2.5-VL) have no tiny
checkpoint here, so what is checked against the server is each preset's request shape — its prompt and where
the image goes, its sampling fields (DeepSeek-OCR's `skip_special_tokens` and `vllm_xargs`, HunyuanOCR's `top_k`
and `repetition_penalty`, Qwen3.5's `chat_template_kwargs`), its render size, several images in one request for
the multi-page preset — and that the answer comes back through the preset's parser as a page. That the real
checkpoints read pages well is not something a CPU test can show.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from services.core.pdf import PDF, split_pdf
from services.core.settings import Settings
from services.worker.engines import PageInput
from services.worker.engines.vllm.engine import VllmEngine
from services.worker.engines.vllm.presets import PRESETS
from services.worker.pipeline.group import run_group
from services.worker.pipeline.inputs import prepare_input
from tests.vllm_server import VllmServer

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

STOP_EARLY = {"stop": ["e", "a", " ", "|"], "min_tokens": 8}


def preset_engine(server: VllmServer, preset: str, **engine: Any) -> tuple[VllmEngine, Settings]:
    settings = Settings(engine={**server.engine, "preset": preset, "max_tokens": 32, "request_extra": STOP_EARLY,
                                "render_longest_side": 0, **engine})
    return VllmEngine(settings), settings


def pdf_pages(corpus: Path, numbers: list[int]) -> list[PageInput]:
    data = (corpus / "dev/docling_multi_page/multi_page.pdf").read_bytes()
    return [PageInput("preset", i, PDF, page) for i, page in enumerate(split_pdf(data, numbers))]


@pytest.fixture
def server_for(request: pytest.FixtureRequest) -> Any:
    """The tier's server a preset's requests go to: hunyuan_ocr's own (no speculation), else the generic one."""
    return lambda preset: request.getfixturevalue("hunyuan_server" if preset == "hunyuan_ocr" else "vllm_server")


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_the_presets_request_is_answered_by_vllm_and_read_as_a_page(server_for: Any, corpus: Path,
                                                                     preset: str) -> None:
    vllm_server = server_for(preset)
    engine, settings = preset_engine(vllm_server, preset)
    page = prepare_input(engine, pdf_pages(corpus, [1])[0], settings)
    body = engine.request_body(page, temperature=0.0)
    for key, value in PRESETS[preset].sampling.items():
        assert body[key] == value  # the preset's own sampling fields are what went to vLLM
    before = vllm_server.metrics()
    output = engine.parse(page, temperature=0.0)
    after = vllm_server.metrics()
    assert output.engine == "vllm" and output.model == "tiny-vlm"
    assert output.finish_reason in ("stop", "length") and output.completion_tokens >= 8
    assert output.details["preset"] == preset and output.width_px > 0
    assert after["vllm:prompt_tokens_total"] - before.get("vllm:prompt_tokens_total", 0) == output.prompt_tokens


def test_several_pages_go_in_one_request_with_every_image(hunyuan_server: VllmServer, corpus: Path) -> None:
    """hunyuan_ocr's group request: the second image is in the prompt vLLM counted (the tiny model's processor
    makes a page image some 30 to 64 tokens), and the whole group is one request."""
    engine, settings = preset_engine(hunyuan_server, "hunyuan_ocr")
    one, two = (prepare_input(engine, p, settings) for p in pdf_pages(corpus, [1, 2]))
    alone = engine.parse_group([one])
    before = hunyuan_server.metrics()
    group = engine.parse_group([one, two])
    after = hunyuan_server.metrics()
    assert after["vllm:request_success_total"] - before.get("vllm:request_success_total", 0) == 1
    assert after["vllm:prompt_tokens_total"] - before.get("vllm:prompt_tokens_total", 0) == group.prompt_tokens
    assert group.prompt_tokens - alone.prompt_tokens >= 16, (alone.prompt_tokens, group.prompt_tokens)
    assert engine.group_body([one, two], temperature=0.0)["max_tokens"] == 2 * engine.max_tokens


def test_a_group_answer_marked_page_by_page_becomes_its_pages(hunyuan_server: VllmServer, corpus: Path) -> None:
    """The random weights never write page markers of their own: a regex (vLLM structured outputs) makes them
    answer in the marked form, so the split runs on a real server's answer."""
    marked = {"structured_outputs": {"regex": r"<!-- page 1 -->\n[a-z]{6,20}( [a-z]{2,12}){3,6}\.\n"
                                              r"<!-- page 2 -->\n[a-z]{6,20}( [a-z]{2,12}){3,6}\."}}
    engine, settings = preset_engine(hunyuan_server, "hunyuan_ocr", request_extra=marked, max_tokens=96)
    before = hunyuan_server.metrics()
    outcomes = run_group(engine, pdf_pages(corpus, [1, 2]), settings)
    after = hunyuan_server.metrics()
    assert after["vllm:request_success_total"] - before.get("vllm:request_success_total", 0) == 1
    assert [o.details["group"]["split"] for o in outcomes] == ["ok", "ok"]
    assert all(o.output.engine == "vllm" and not o.is_fallback and o.output.markdown.strip() for o in outcomes)
    assert "<!-- page" not in "".join(o.output.markdown for o in outcomes)
    assert sum(o.output.prompt_tokens for o in outcomes) == outcomes[0].details["group"]["prompt_tokens"]


def test_a_group_answer_without_markers_falls_back_to_one_page_per_request(hunyuan_server: VllmServer,
                                                                            corpus: Path) -> None:
    engine, settings = preset_engine(hunyuan_server, "hunyuan_ocr")
    before = hunyuan_server.metrics()
    outcomes = run_group(engine, pdf_pages(corpus, [1, 2]), settings)
    after = hunyuan_server.metrics()
    # noise never marks its pages: no markers, or no end before the budget of two pages
    assert {o.details["group"]["split"] for o in outcomes} <= {"no_page_markers", "length"}
    assert len({o.details["group"]["split"] for o in outcomes}) == 1
    requests = after["vllm:request_success_total"] - before.get("vllm:request_success_total", 0)
    assert requests == 1 + sum(o.attempts for o in outcomes)  # the group, then each page on its own
    spent = after["vllm:prompt_tokens_total"] - before.get("vllm:prompt_tokens_total", 0)
    assert spent == sum(o.output.prompt_tokens for o in outcomes)  # the group's tokens are counted on its pages
