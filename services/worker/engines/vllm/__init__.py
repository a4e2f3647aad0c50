"""The vllm engine: an OCR vision-language model served by vLLM over its OpenAI API.

    engine.py         the Engine: pages to requests, answers to element trees, the cpu reading as anchor
    presets.py        one preset per model family: prompts, answer parsers, `vllm serve` defaults
    serve.py          the `vllm serve` command line a preset and the settings make
    layout_answer.py  a layout answer (boxes and classes) into elements
    answer_blocks.py  a text answer's blocks into elements
    align.py          answer text aligned with the page's text layer
"""
