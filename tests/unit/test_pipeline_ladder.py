"""The pipeline's answer checks, temperature ladder, rotation retry and flagged fallback.

The generative model is a scripted stand-in behind the Engine interface (a GPU model cannot run here); the
same paths run against a real vLLM server in tests/vllm. The fallback is the real cpu engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from services.core.errors import EngineUnavailable
from services.core.settings import Settings
from services.worker.engines.base import PageInput, PageOutput
from services.worker.engines.vllm.engine import EngineRejected
from services.worker.engines.vllm.presets import Preset, get_preset
from services.worker.pipeline.page import run_page
from tests.pdfs import SENTENCE, text_page
from tests.stand_in import answered_page, image_size

GOOD = "# Quarterly report\n\n" + SENTENCE + "\n"


@dataclass
class ScriptedModel:
    """Answers from a script, one per call, read back through a real preset's parser."""

    script: list[tuple[str, str] | Exception]  # (raw answer, finish_reason) or an error to raise
    preset: Preset = field(default_factory=lambda: get_preset("generic"))
    name: str = "vllm"
    model: str = "scripted-model"
    needs_text_layer: bool = True
    needs_image: bool = True
    needs_anchor: bool = True
    generative: bool = True
    render_longest_side: int = 200
    calls: list[dict[str, object]] = field(default_factory=list)

    def parse(self, page: PageInput, *, temperature: float = 0.0) -> PageOutput:
        self.calls.append({"temperature": temperature, "rotation": page.rotation, "anchor": page.anchor,
                           "size": image_size(page)})
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        raw, finish = step
        return answered_page(self.preset, page, raw, engine=self.name, model=self.model, finish_reason=finish)

    def check_health(self) -> None:
        return None


def settings(**engine: object) -> Settings:
    return Settings(engine={"kind": "vllm", "max_attempts": 4, **engine})


def pdf_page() -> PageInput:
    return PageInput("doc", 0, "application/pdf", text_page())


def test_invalid_answers_climb_the_temperature_ladder_until_one_is_good() -> None:
    model = ScriptedModel([("noise " * 50, "length"), ("loop " * 100, "stop"), ("", "stop"), (GOOD, "stop")])
    outcome = run_page(model, pdf_page(), settings())
    assert not outcome.is_fallback and outcome.output.engine == "vllm" and outcome.output.markdown == GOOD
    assert outcome.attempts == 4
    assert [c["temperature"] for c in model.calls] == [0.1, 0.1, 0.2, 0.3]
    assert [a["invalid"] for a in outcome.details["attempt_log"]] == ["length", "repetition", "empty", None]
    # The page's tokens are what every attempt cost.
    assert outcome.output.prompt_tokens == 400
    assert outcome.details["anchor_source"] == "text_layer"
    assert SENTENCE in str(model.calls[0]["anchor"])


def test_after_the_last_attempt_the_page_takes_the_cpu_reading_flagged() -> None:
    model = ScriptedModel([("noise " * 50, "length")] * 4)
    outcome = run_page(model, pdf_page(), settings())
    assert outcome.is_fallback and outcome.fallback_reason == "length"
    assert outcome.output.engine == "cpu" and SENTENCE in outcome.output.markdown  # the page's text layer
    assert outcome.attempts == 4 and len(model.calls) == 4
    assert outcome.details["primary_model"] == "scripted-model"
    assert outcome.details["primary_finish_reason"] == "length"
    assert outcome.output.completion_tokens == 200


def test_a_page_the_model_calls_turned_is_rendered_turned_and_read_again() -> None:
    turned = "---\nprimary_language: en\nis_rotation_valid: false\nrotation_correction: 90\n---\nsdrawkcab"
    upright = "---\nprimary_language: en\nis_rotation_valid: true\nrotation_correction: 0\n---\n" + GOOD
    model = ScriptedModel([(turned, "stop"), (upright, "stop")], preset=get_preset("olmocr"))
    outcome = run_page(model, pdf_page(), settings(preset="olmocr"))
    assert not outcome.is_fallback and outcome.output.markdown == GOOD and outcome.output.rotation == 90
    assert [c["rotation"] for c in model.calls] == [0, 90]
    (w0, h0), (w1, h1) = model.calls[0]["size"], model.calls[1]["size"]  # type: ignore[misc]
    assert w0 < h0 and w1 > h1  # a portrait page, then the same page turned on its side


def test_an_outage_is_not_a_bad_answer_and_a_refused_request_falls_back_at_once() -> None:
    with pytest.raises(EngineUnavailable):
        run_page(ScriptedModel([EngineUnavailable("down")]), pdf_page(), settings())
    model = ScriptedModel([EngineRejected("prompt too long")])
    outcome = run_page(model, pdf_page(), settings())
    assert outcome.is_fallback and outcome.fallback_reason == "engine_rejected" and len(model.calls) == 1


def test_the_anchor_sent_is_the_cpu_engines_reading_and_the_one_specsim_measures() -> None:
    """`auto` sends the cpu engine's Markdown of the page (its layout of the text layer); specsim builds its
    `engine` anchor with the same function, so what it measures is what the model is sent."""
    from pagemill_eval.specsim.anchors import engine_anchor
    from services.core.pdf import pdf_text_layer
    from services.worker.engines import load_engine
    from services.worker.pipeline.quality import clip_anchor

    model = ScriptedModel([(GOOD, "stop")])
    page, config = pdf_page(), settings(anchor_max_chars=120)
    outcome = run_page(model, page, config)
    reading = load_engine("cpu", config).parse(page).markdown
    assert model.calls[0]["anchor"] == clip_anchor(reading, 120) and outcome.details["anchor_source"] == "text_layer"
    assert engine_anchor(config, page, 120) == (model.calls[0]["anchor"], "text_layer")
    assert model.calls[0]["anchor"] != clip_anchor(pdf_text_layer(page.data), 120)  # laid out, not the raw layer
    raw = ScriptedModel([(GOOD, "stop")])
    run_page(raw, page, settings(anchor="text_layer", anchor_max_chars=120))
    assert raw.calls[0]["anchor"] == clip_anchor(pdf_text_layer(page.data), 120)


def test_no_anchor_when_switched_off() -> None:
    model = ScriptedModel([(GOOD, "stop")])
    outcome = run_page(model, pdf_page(), settings(anchor="none"))
    assert model.calls[0]["anchor"] is None and outcome.details["anchor_source"] == "none"


def test_a_good_answer_becomes_elements_boxed_by_the_page_words() -> None:
    answer = "# Kapitel eins\n\n" + SENTENCE + "\n"
    outcome = run_page(ScriptedModel([(answer, "stop")]), pdf_page(), settings())
    heading, paragraph = outcome.output.elements
    assert heading.type == "title" and heading.bbox is None  # nothing on the page says so: no box
    assert paragraph.type == "paragraph" and paragraph.alignment is not None and paragraph.alignment > 0.8
    assert paragraph.bbox is not None and outcome.output.width > 0
    x0, y0, x1, y1 = paragraph.bbox
    assert 0 <= x0 < x1 <= outcome.output.width and 0 <= y0 < y1 <= outcome.output.height
    assert outcome.output.markdown == answer and outcome.details["elements_boxed"] == 1


def test_a_figure_the_model_placed_keeps_its_place_in_points() -> None:
    model = ScriptedModel([(SENTENCE + "\n\n![a chart](page_10_20_100_50.png)\n", "stop")])
    outcome = run_page(model, pdf_page(), settings())
    figure = outcome.output.elements[1]
    width, height = model.calls[0]["size"]  # type: ignore[misc]
    sx, sy = outcome.output.width / width, outcome.output.height / height
    assert figure.type == "figure" and figure.bbox == pytest.approx((10 * sx, 20 * sy, 110 * sx, 70 * sy), abs=0.1)
