"""`pagemill specsim`: how many tokens per step n-gram speculation commits with and without a prompt anchor.

- `lookup`   prompt-lookup drafting as vLLM's n-gram proposer defines it;
- `simulate` greedy verification against an oracle that emits the target tokens;
- `corpus`   corpus cases and their page-level ground truth (the target output);
- `anchors`  the prompt: a fixed instruction plus no anchor, the text layer, or the cpu engine's OCR;
- `run`      the measurement over a corpus folder; `report` its table, JSON and docs section.
"""
