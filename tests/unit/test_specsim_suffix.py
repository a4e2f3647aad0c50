"""The suffix-decoding simulator against sequences whose drafts and accepted lengths are worked out by hand."""

from __future__ import annotations

import pytest

from pagemill_eval.specsim.lookup import LookupParams
from pagemill_eval.specsim.suffix import SuffixCache, SuffixParams, SuffixTree, simulate_document
from pagemill_eval.specsim.variants import Variant, best_variant, measure
from tests.specsim_pages import Page


def test_draft_length_grows_with_the_match_and_the_best_score_wins() -> None:
    # prompt 1 2 3 4 5, output 9 1 2 3 4 5 6, k = 4, spec factor 1, min prob 0.1.
    # prefill commits 9; pattern ..5 9 has no continuation: no draft, 1 committed.
    # pattern ..9 1: [1] occurs twice, once followed by 2 (p 0.5), a match of 1 allows 1 token: draft [2];
    #   accepted, bonus 3: 2 committed.
    # pattern ..1 2 3: [3] -> [4] (0.5); [2 3] -> [4 5] (1.0); [1 2 3] -> [4 5 9] (1.5, three tokens allowed);
    #   longer matches end at the context's end (score 0). Draft [4 5 9]: 4 5 accepted, 6 the bonus: 3 committed.
    stats = SuffixCache(SuffixParams(num_speculative_tokens=4)).simulate([1, 2, 3, 4, 5], [9, 1, 2, 3, 4, 5, 6])
    assert (stats.generated, stats.steps, stats.drafted, stats.accepted) == (7, 4, 4, 3)


def test_earlier_pages_outputs_are_the_history() -> None:
    # page 2 repeats page 1's output; its own prompt holds none of it.
    # with page 1 in the global tree: prefill 1; [1] -> [2] (p 0.5, one token); 2 accepted + bonus 3;
    # [1 2 3] -> [4 5] (score 1.0, the end of the output), both accepted: 3 steps for 5 tokens.
    pages = [([7], [1, 2, 3, 4, 5]), ([8], [1, 2, 3, 4, 5])]
    first, second = simulate_document(pages, SuffixParams(num_speculative_tokens=4))
    assert (first.steps, second.steps) == (5, 3)
    assert (second.drafted, second.accepted) == (3, 3)
    alone = SuffixCache(SuffixParams(num_speculative_tokens=4)).simulate([8], [1, 2, 3, 4, 5])
    assert (alone.steps, alone.drafted) == (5, 0)


def test_counts_and_min_token_prob() -> None:
    tree = SuffixTree(max_depth=24)
    tree.extend(0, [1, 2, 1, 3, 1, 4])
    assert tree.root.children[1].count == 3
    # [1] is followed by 2, 3 and 4 once each: 2 (seen first) at 1/3, then one path on at 1/3 per token
    draft, score = tree.speculate([4, 1], SuffixParams(max_spec_factor=4.0))
    assert draft == [2, 1, 3, 1] and abs(score - 4 / 3) < 1e-9
    assert tree.speculate([4, 1], SuffixParams(max_spec_factor=1.0))[0] == [2]
    assert tree.speculate([4, 1], SuffixParams(max_spec_factor=4.0, min_token_prob=0.5)) == ([], 0.0)


def test_depth_bounds_match_plus_draft() -> None:
    tree = SuffixTree(max_depth=3)
    tree.extend(0, [1, 2, 3, 4, 5])
    assert max(child.depth for child in tree.root.children[1].children[2].children.values()) == 3
    assert not tree.root.children[1].children[2].children[3].children
    # in a depth-3 tree the match [1 2] leaves room for [3] (score 1), the match [2] for [3 4] (score 2): it wins
    assert tree.speculate([1, 2], SuffixParams(max_spec_factor=8.0, max_tree_depth=3)) == ([3, 4], 2.0)


def test_no_global_tree_when_no_request_is_cached() -> None:
    # suffix_decoding_max_cached_requests 0: page 2 cannot draft from page 1's output (same as decoding alone)
    pages = [([7], [1, 2, 3, 4, 5]), ([8], [1, 2, 3, 4, 5])]
    cache = SuffixCache(SuffixParams(num_speculative_tokens=4), use_global=False)
    first, second = (cache.simulate(prompt, target) for prompt, target in pages)
    assert (first.steps, second.steps) == (5, 5) and second.drafted == 0


def test_ngram_fallback_drafts_only_where_the_trees_have_nothing() -> None:
    # prompt 5 6 7 8, output 9 5 6 7 8: after 9 5 the suffix trees draft [6] (a match of 1 allows one token);
    # alone, each step commits 2. The n-gram fallback (min 1) adds nothing there: the trees already drafted.
    # With max_spec_factor 0 the trees never draft, so every draft is the n-gram proposer's: 5 -> [6 7 8].
    prompt, target = [5, 6, 7, 8], [9, 5, 6, 7, 8]
    lookup = LookupParams(num_speculative_tokens=4, prompt_lookup_min=1, prompt_lookup_max=2)
    plain = SuffixCache(SuffixParams(num_speculative_tokens=4)).simulate(prompt, target)
    both = SuffixCache(SuffixParams(num_speculative_tokens=4), fallback=lookup).simulate(prompt, target)
    assert (plain.steps, plain.accepted) == (both.steps, both.accepted)
    silent = SuffixParams(num_speculative_tokens=4, max_spec_factor=0.0)
    assert SuffixCache(silent).simulate(prompt, target).drafted == 0
    ngram_only = SuffixCache(silent, fallback=lookup).simulate(prompt, target)
    # prefill 9; nothing ends in 9 earlier: 5 alone; then [5] -> [6 7 8 9]: 6 7 8 accepted, the end: 3 steps
    assert (ngram_only.steps, ngram_only.accepted) == (3, 3)


def test_histories_decide_what_the_global_tree_holds() -> None:
    def run(history: str) -> list[int]:
        pages = [Page("a", [7], [1, 2, 3, 4, 5]), Page("b", [8], [1, 2, 3, 4, 5]), Page("b", [9], [1, 2, 3, 4, 5])]
        variant = Variant(SuffixParams(), history)
        measure(pages, variant, 4, LookupParams())
        return [page.stats[4][variant.name].steps for page in pages]

    assert run("prompt") == [5, 5, 5]  # nobody's output but its own
    pages = [Page("a", [1, 2, 3, 4, 5, 6, 7, 8], [9, 1, 2, 3, 4, 5, 6, 7, 8])]
    timid, bold = Variant(SuffixParams()), Variant(SuffixParams(max_spec_factor=4.0))
    for variant in (timid, bold):
        measure(pages, variant, 8, LookupParams())
    # a copy of the prompt: a match of one token may draft four, so the bold variant commits more per step
    assert pages[0].stats[8][bold.name].steps < pages[0].stats[8][timid.name].steps
    assert best_variant(pages, [timid, bold], [8]) is bold
    assert best_variant(pages, [timid, timid], [8]) is timid
    assert run("document") == [5, 5, 3]  # b's second page sees b's first
    assert run("corpus") == [5, 3, 3]  # and b's first page sees a's
    assert Variant(SuffixParams(), "prompt").vllm_config(8) == {
        "method": "suffix", "num_speculative_tokens": 8, "suffix_decoding_max_tree_depth": 24,
        "suffix_decoding_max_spec_factor": 1.0, "suffix_decoding_min_token_prob": 0.1,
        "suffix_decoding_max_cached_requests": 0}
    with pytest.raises(ValueError, match="one speculative method"):
        Variant(SuffixParams(), ngram_fallback=True).vllm_config(4)
