"""The suffix-decoding simulator against sequences whose drafts and accepted lengths are worked out by hand."""

from __future__ import annotations

from pagemill_eval.specsim.suffix import SuffixCache, SuffixParams, SuffixTree, simulate_document


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
