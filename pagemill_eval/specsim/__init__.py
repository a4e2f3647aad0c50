"""`pagemill specsim`: how many tokens per step speculative decoding commits: n-gram drafts with and without a
prompt anchor, and vLLM's suffix decoding with earlier pages as history.

- `lookup`   prompt-lookup drafting as vLLM's n-gram proposer defines it;
- `suffix`   suffix-tree drafting as vLLM's suffix method (Arctic Inference) defines it;
- `variants` the suffix parameters and histories measured, over a run's pages;
- `simulate` greedy verification against an oracle that emits the target tokens;
- `corpus`   corpus cases and their page-level ground truth (the target output);
- `anchors`  the prompt: a fixed instruction plus no anchor, the text layer, or the cpu engine's OCR; and the
             oracle anchors made from the page's reference (what an anchor could reach at best);
- `run`      the measurement over a corpus folder; `report` its table, JSON and docs section.
"""
