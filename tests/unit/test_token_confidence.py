"""A model's token log-probabilities placed on its answer and turned into each block's confidence."""

from __future__ import annotations

import math
from typing import Any

from services.core.elements import ElementType
from services.worker.engines.base import PageWord
from services.worker.engines.vllm.align import align
from services.worker.engines.vllm.answer_blocks import split_answer
from services.worker.engines.vllm.token_confidence import (
    AGREEMENT_FLOOR,
    MIN_LOGPROB,
    page_confidence,
    read_tokens,
    score_elements,
    slice_tokens,
)
from services.worker.pipeline.group import page_tokens
from tests.openai_answers import completion

ANSWER = "# Annual Report\n\nRevenue grew strongly in the second half.\n\nProfit fell by a third.\n"


def choice_of(content: str, **kwargs: Any) -> dict[str, Any]:
    choice: dict[str, Any] = completion(content, **kwargs)["choices"][0]
    return choice


def words_of(text: str) -> list[PageWord]:
    return [PageWord(word, (10.0 * n, 0.0, 10.0 * n + 8, 10.0)) for n, word in enumerate(text.split())]


def test_every_token_is_placed_on_the_text_it_wrote() -> None:
    tokens = read_tokens(choice_of(ANSWER), ANSWER)
    assert tokens is not None and tokens.text == ANSWER
    assert "".join(ANSWER[s:e] for s, e in tokens.spans) == ANSWER
    assert all(lp == -0.01 for lp in tokens.logprobs)


def test_tokens_split_inside_a_character_still_cover_it() -> None:
    # vLLM 0.32 writes "" for a token that ends inside a character, the whole character on the one completing it.
    content = "年度报告 2024\n\n收入增长了百分之十。\n"
    entries = choice_of(content)["logprobs"]["content"]
    assert any(entry["token"] == "" for entry in entries)
    tokens = read_tokens(choice_of(content), content)
    assert tokens is not None
    assert all(content[s:e] == entry["token"] for (s, e), entry in zip(tokens.spans, entries, strict=True))


def placed(entries: list[tuple[str, float]], content: str) -> list[str]:
    choice = {"logprobs": {"content": [{"token": t, "logprob": lp, "bytes": [], "top_logprobs": []}
                                       for t, lp in entries]}}
    tokens = read_tokens(choice, content)
    assert tokens is not None
    return [content[s:e] for s, e in tokens.spans]


def test_bytes_that_never_make_a_character_go_to_the_token_after_them() -> None:
    # As the tiny random model answers: the content has U+FFFD where the tokens wrote "".
    entries = [("\x1b", -5.7), ("i", -5.8), ("", -5.7), ("')", -5.7), ("", -5.6), ("')", -5.7), ("{", -5.8)]
    assert placed(entries, "\x1bi\ufffd')\ufffd'){") == ["\x1b", "i", "", "\ufffd')", "", "\ufffd')", "{"]


def test_older_servers_parts_of_a_character_share_it() -> None:
    # vLLM before 0.32 (and a token it could not correct): each part of the character written as U+FFFD.
    assert placed([("a ", -0.1), ("\ufffd", -1.0), ("\ufffd", -1.0), ("b", -0.1)], "a 中b") == ["a ", "", "中", "b"]


def test_text_the_server_dropped_after_generating_it_stands_for_nothing() -> None:
    assert placed([("Hello", -0.1), ("<|im_end|>", -0.1), (" world", -0.1)], "Hello world") == [
        "Hello", "", " world"]


def test_a_token_that_wrote_nothing_counts_for_the_block_it_stands_in() -> None:
    content = "First.\n\n中文\n"
    choice = {"logprobs": {"content": [{"token": t, "logprob": lp} for t, lp in [
        ("First.", -0.01), ("\n\n", -0.01), ("", -3.0), ("中", -0.01), ("文", -0.01), ("\n", -0.01)]]}}
    scored, _, _ = score_elements(split_answer(content), read_tokens(choice, content), reading_has_words=False)
    assert scored[0].confidence == round(math.exp(-0.01), 4)
    assert scored[1].confidence is not None and scored[1].confidence < 0.5


def test_an_answer_without_logprobs_has_no_tokens() -> None:
    assert read_tokens(choice_of(ANSWER, logprobs=False), ANSWER) is None
    assert read_tokens({"message": {"content": ANSWER}}, ANSWER) is None


def test_an_impossible_token_lowers_its_block_without_wiping_it_out() -> None:
    tokens = read_tokens(choice_of(ANSWER, logprob_of=lambda t: -9999.0 if "third" in t else -0.01), ANSWER)
    assert tokens is not None and min(tokens.logprobs) == MIN_LOGPROB
    scored, _, _ = score_elements(split_answer(ANSWER), tokens, reading_has_words=False)
    confidence = {e.text: e.confidence for e in scored}
    assert 0 < (confidence["Profit fell by a third."] or 0) < 0.1
    assert confidence["Revenue grew strongly in the second half."] == round(math.exp(-0.01), 4)


def test_a_block_the_model_hesitated_over_scores_below_the_others() -> None:
    tokens = read_tokens(choice_of(ANSWER, logprob_of=lambda t: -1.5 if t.strip() in ("grew", "second") else -0.01),
                         ANSWER)
    scored, page, signals = score_elements(split_answer(ANSWER), tokens, reading_has_words=False)
    by_type = {e.text: e.confidence for e in scored}
    doubtful = by_type["Revenue grew strongly in the second half."]
    assert tokens is not None and doubtful is not None and doubtful < (by_type["Profit fell by a third."] or 0)
    assert page is not None and doubtful < page < 1
    assert signals["tokens_scored"] == len(tokens.logprobs)


def test_agreement_with_the_reading_multiplies_where_both_exist() -> None:
    page_words = words_of("Annual Report Revenue grew strongly in the second half. Something else entirely")
    blocks = align(split_answer(ANSWER), page_words)
    tokens = read_tokens(choice_of(ANSWER), ANSWER)
    scored, _, signals = score_elements(blocks, tokens, reading_has_words=True)
    read_right, made_up = scored[1], scored[2]
    assert read_right.alignment == 1.0 and read_right.confidence == round(math.exp(-0.01), 4)
    assert made_up.alignment == 0.0
    assert made_up.confidence == round(math.exp(-0.01) * AGREEMENT_FLOOR, 4)
    assert 0 < signals["agreement"] < 1
    # With no words to agree with, the tokens alone speak.
    alone, _, _ = score_elements(blocks, tokens, reading_has_words=False)
    assert alone[2].confidence == round(math.exp(-0.01), 4)


def test_a_figure_is_not_judged_by_agreement_and_no_signal_means_no_confidence() -> None:
    answer = "![A bar chart of sales by region](figure.png)\n"
    blocks = align(split_answer(answer), words_of("Sales North South"))
    assert blocks[0].type == ElementType.FIGURE
    scored, page, _ = score_elements(blocks, read_tokens(choice_of(answer), answer), reading_has_words=True)
    assert scored[0].confidence == round(math.exp(-0.01), 4) == page
    unscored, none, signals = score_elements(blocks, None, reading_has_words=True)
    assert unscored[0].confidence is None and none is None and signals == {}


def test_a_block_written_differently_from_the_tokens_takes_the_whole_answer() -> None:
    tokens = read_tokens(choice_of("Some other answer", logprob_of=lambda t: -0.5), "Some other answer")
    scored, _, _ = score_elements(split_answer("Nothing alike"), tokens, reading_has_words=False)
    assert scored[0].confidence == round(math.exp(-0.5), 4)


def test_the_page_weighs_blocks_by_their_length() -> None:
    blocks = split_answer("# Title\n\n" + "word " * 40 + "\n")
    scored = [blocks[0].model_copy(update={"confidence": 0.2}), blocks[1].model_copy(update={"confidence": 1.0})]
    assert 0.9 < (page_confidence(scored) or 0) < 1


def test_each_page_of_a_group_gets_the_tokens_between_its_markers() -> None:
    answer = "<!-- page 1 -->\nFirst page text.\n<!-- page 2 -->\nSecond page text.\n"
    tokens = read_tokens(choice_of(answer, logprob_of=lambda t: -2.0 if "Second" in t else -0.01), answer)
    assert tokens is not None
    first, second = page_tokens(tokens, 2)
    assert first is not None and second is not None
    assert first.text.strip() == "First page text." and max(first.logprobs) == min(first.logprobs) == -0.01
    assert -2.0 in second.logprobs and -2.0 not in first.logprobs
    assert page_tokens(tokens, 3) == [None, None, None]
    part = slice_tokens(tokens, 0, 5)
    assert all(0 <= s <= e <= 5 for s, e in part.spans)
