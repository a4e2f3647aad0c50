"""The prompt-lookup proposer and the committed-per-step arithmetic, on hand-made token sequences."""

from __future__ import annotations

import random

import pytest

from pagemill_eval.specsim.lookup import LookupParams, NgramIndex, propose
from pagemill_eval.specsim.simulate import simulate


def both(context: list[int], params: LookupParams) -> list[int]:
    """The reference and the incremental index must agree; every assertion below checks both."""
    index = NgramIndex(params)
    index.extend(context)
    reference = propose(context, params)
    assert index.propose() == reference
    return reference


def test_vllm_docstring_example() -> None:
    # vLLM's own example: [4,2,3] has no earlier match, [2,3] does; only three tokens follow it.
    assert both([1, 2, 3, 4, 2, 3], LookupParams(num_speculative_tokens=4, prompt_lookup_min=2,
                                                   prompt_lookup_max=3)) == [4, 2, 3]


def test_longest_match_wins_over_a_shorter_earlier_one() -> None:
    # suffix [7,8,9]: [8,9] occurs first at 1 (followed by 50), [7,8,9] only at 4 (followed by 60).
    context = [0, 8, 9, 50, 7, 8, 9, 60, 61, 7, 8, 9]
    assert both(context, LookupParams(num_speculative_tokens=2, prompt_lookup_min=2, prompt_lookup_max=3)) == [60, 61]
    # capped at max 2, the 2-gram's earliest occurrence is used
    assert both(context, LookupParams(num_speculative_tokens=2, prompt_lookup_min=2, prompt_lookup_max=2)) == [50, 7]


def test_earliest_occurrence_of_the_longest_ngram() -> None:
    context = [5, 6, 1, 5, 6, 2, 5, 6]
    assert both(context, LookupParams(num_speculative_tokens=1, prompt_lookup_min=2, prompt_lookup_max=4)) == [1]


def test_min_is_respected() -> None:
    context = [1, 2, 9, 3, 2]  # only the 1-gram [2] recurs
    assert both(context, LookupParams(prompt_lookup_min=2, prompt_lookup_max=4)) == []
    assert both(context, LookupParams(num_speculative_tokens=2, prompt_lookup_min=1, prompt_lookup_max=4)) == [9, 3]


def test_max_is_respected() -> None:
    # suffix [1,2,3,4,5]: the 5-gram first occurs at 7 (then 77); the 4-gram [2,3,4,5] already at 1 (then 88).
    context = [0, 2, 3, 4, 5, 88, 9, 1, 2, 3, 4, 5, 77, 1, 2, 3, 4, 5]
    assert both(context, LookupParams(num_speculative_tokens=1, prompt_lookup_min=2, prompt_lookup_max=5)) == [77]
    assert both(context, LookupParams(num_speculative_tokens=1, prompt_lookup_min=2, prompt_lookup_max=4)) == [88]


def test_k_is_respected_and_the_draft_stops_at_the_context_end() -> None:
    context = [1, 2, 3, 4, 5, 6, 7, 8, 1, 2]
    assert both(context, LookupParams(num_speculative_tokens=3)) == [3, 4, 5]
    assert both(context, LookupParams(num_speculative_tokens=8)) == [3, 4, 5, 6, 7, 8, 1, 2]
    assert both(context, LookupParams(num_speculative_tokens=20)) == [3, 4, 5, 6, 7, 8, 1, 2]


def test_no_match_no_draft() -> None:
    assert both(list(range(30)), LookupParams()) == []
    assert both([7], LookupParams()) == []
    assert both([], LookupParams()) == []


def test_overlapping_occurrence_counts() -> None:
    # the 3-gram [1,1,1] at 0 overlaps the suffix at 1 and ends before the last token: one token follows it.
    assert both([1, 1, 1, 1], LookupParams(num_speculative_tokens=4)) == [1]


def test_index_agrees_with_the_definition_on_random_sequences() -> None:
    rng = random.Random(7)
    for _ in range(300):
        params = LookupParams(num_speculative_tokens=rng.randint(1, 8), prompt_lookup_min=rng.randint(1, 3),
                              prompt_lookup_max=rng.randint(3, 5))
        context = [rng.randint(0, 3) for _ in range(rng.randint(0, 40))]
        index = NgramIndex(params)
        for cut in range(len(context) + 1):  # grown one token at a time, as decoding does
            assert index.propose() == propose(context[:cut], params)
            if cut < len(context):
                index.extend([context[cut]])


def test_parameters_are_checked() -> None:
    with pytest.raises(ValueError):
        LookupParams(num_speculative_tokens=0)
    with pytest.raises(ValueError):
        LookupParams(prompt_lookup_min=5, prompt_lookup_max=4)


def test_target_inside_the_prompt_commits_k_plus_one_per_step() -> None:
    target = list(range(1000, 1400))
    prompt = [1, 2, 3, *target, 4, 5]
    for k in (4, 8):
        stats = simulate(prompt, target, LookupParams(num_speculative_tokens=k))
        # The prefill commits 1 token without a draft; the next step has only a 1-gram to look up (below min 2),
        # so it commits 1 too; from then on every step accepts k draft tokens and adds the bonus token.
        assert stats.steps == 2 + -(-398 // (k + 1))
        assert stats.generated == 400
        assert stats.committed_per_step == pytest.approx(400 / stats.steps)
        assert stats.committed_per_step > 0.9 * (k + 1)


def test_no_overlap_commits_exactly_one_per_step() -> None:
    target = list(range(1000, 1100))
    stats = simulate(list(range(50)), target, LookupParams())
    assert (stats.generated, stats.steps, stats.drafted, stats.accepted) == (100, 100, 0, 0)
    assert stats.committed_per_step == 1.0


def test_a_wrong_draft_still_commits_the_bonus_token() -> None:
    # The prompt holds [10, 11, 12, 13, 14]; the target follows it for [10, 11, 12] and then diverges.
    prompt = [10, 11, 12, 13, 14]
    target = [10, 11, 12, 99, 98]
    stats = simulate(prompt, target, LookupParams(num_speculative_tokens=4))
    # prefill: [10]; step 2: no 2-gram yet → [11]; step 3: [10,11] drafts [12,13,14,10] → accept 12, bonus 99;
    # step 4: [12,99] unseen → [98]
    assert (stats.steps, stats.drafted, stats.accepted) == (4, 4, 1)
    assert stats.committed_per_step == pytest.approx(5 / 4)


def test_repetition_in_the_output_itself_is_drafted_without_any_prompt() -> None:
    row = list(range(200, 210))
    stats = simulate([], row * 10, LookupParams(num_speculative_tokens=4))
    # the first row costs a step a token; every later row is drafted from the generated text, 5 tokens a step
    assert stats.steps == 30
    assert stats.committed_per_step > 3.0
