"""vLLM's own token log-probabilities, placed on its answer and turned into each block's confidence.

The tiny random-weight model writes noise, so this asserts on the shape and the arithmetic, not on the text:
vLLM sends a log-probability for every token it generated (with n-gram speculation on, as the generic preset
serves), the tokens cover the answer in order, and every block of the page gets a confidence in (0, 1].
"""

from __future__ import annotations

from pathlib import Path

import pytest

from services.core import openai_api
from services.core.pdf import PDF, split_pdf
from services.core.settings import Settings
from services.worker.engines import PageInput
from services.worker.engines.vllm.engine import VllmEngine
from services.worker.engines.vllm.token_confidence import read_tokens
from services.worker.pipeline.inputs import CpuHypothesis, prepare_input
from services.worker.pipeline.page import with_elements
from tests.vllm_server import VllmServer

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

# Long enough for several blocks: a newline or two ends a block, a paragraph of noise is one.
SAMPLING = {"min_tokens": 40, "ignore_eos": True}


def test_vllm_sends_logprobs_and_every_block_gets_a_confidence(vllm_server: VllmServer, corpus: Path) -> None:
    settings = Settings(engine={**vllm_server.engine, "max_tokens": 64, "request_extra": SAMPLING})
    engine = VllmEngine(settings)
    data = (corpus / "dev/docling_multi_page/multi_page.pdf").read_bytes()
    page = PageInput("logprobs", 0, PDF, next(split_pdf(data, [1])))
    prepared = prepare_input(engine, page, settings)
    body = engine.request_body(prepared, temperature=0.0)
    assert body["logprobs"] is True

    # The request the engine sends, and vLLM's answer as it is.
    with openai_api.open_client(vllm_server.url, api_key=None, timeout_s=120) as client:
        answer = openai_api.request_json(client, "POST", "/v1/chat/completions", json=body)
    choice = answer["choices"][0]
    content = choice["message"]["content"]
    entries = choice["logprobs"]["content"]
    assert len(entries) == answer["usage"]["completion_tokens"] == 64
    assert all(set(entry) >= {"token", "logprob", "bytes"} and entry["logprob"] <= 0 for entry in entries)
    tokens = read_tokens(choice, content)
    assert tokens is not None and tokens.text == content
    assert all(-20.0 <= lp <= 0.0 for lp in tokens.logprobs)
    starts = [s for s, _ in tokens.spans]
    assert starts == sorted(starts) and all(0 <= s <= e <= len(content) for s, e in tokens.spans)
    for (start, end), entry in zip(tokens.spans, entries, strict=True):
        if entry["token"] in content:  # a special token the answer's text leaves out is not
            assert entry["token"] in content[start:end], (entry, content[start:end])

    output = engine.page_output(content, prepared, finish_reason=choice["finish_reason"], model=answer["model"],
                                prompt_tokens=answer["usage"]["prompt_tokens"], completion_tokens=len(entries),
                                ms=0, tokens=tokens)
    paged = with_elements(output, CpuHypothesis(page, settings), page)
    assert paged.elements, paged.markdown
    for element in paged.elements:
        assert element.confidence is not None and 0 < element.confidence <= 1, element
    assert paged.confidence is not None and 0 < paged.confidence <= 1
    assert paged.signals["tokens_scored"] == 64 and 0 < paged.signals["token_confidence"] <= 1
