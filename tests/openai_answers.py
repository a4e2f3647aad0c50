"""Chat completions as vLLM answers them, for the stand-in servers of the tests.

`completion` gives the body vLLM returns for `logprobs: true`: `choices[0].logprobs.content` lists every token
with its `logprob`, `bytes` and `top_logprobs` (empty unless asked for). The tokens are cut as a byte-level
tokenizer cuts them, words and their leading space, long words in pieces of at most `TOKEN_BYTES` bytes, and each
is written the way vLLM 0.32 writes it: a token that ends inside a multi-byte character as "", the token
that completes the character with all of it, and `bytes` those of that text, not the token's own.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

TOKEN_BYTES = 8
SURE = -0.01  # the log-probability a token gets unless `logprob_of` says otherwise
_WORDS = re.compile(r"\s*\S+|\s+")


def tokens_of(content: str) -> list[bytes]:
    """The answer cut into tokens' bytes (joined, they give `content` back)."""
    pieces: list[bytes] = []
    for word in _WORDS.findall(content):
        raw = word.encode()
        pieces.extend(raw[i:i + TOKEN_BYTES] for i in range(0, len(raw), TOKEN_BYTES))
    return pieces


def logprobs_content(content: str, logprob_of: Callable[[str], float] | None = None) -> list[dict[str, Any]]:
    """`choices[0].logprobs.content` for `content`: `logprob_of(token)` or SURE for each token.

    A token's text is what vLLM 0.32 writes: "" for one that ends inside a character, and on the token that
    completes it, everything since the last whole character."""
    entries = []
    pending = b""
    for piece in tokens_of(content):
        pending += piece
        try:
            token, pending = pending.decode(), b""
        except UnicodeDecodeError:
            token = ""
        entries.append({"token": token, "logprob": logprob_of(token) if logprob_of else SURE,
                        "bytes": list(token.encode("utf-8", errors="replace")), "top_logprobs": []})
    return entries


def completion(content: str, *, finish_reason: str = "stop", logprobs: bool = True, model: str = "m",
               logprob_of: Callable[[str], float] | None = None, prompt_tokens: int = 10) -> dict[str, Any]:
    """The whole chat completion body; `logprobs=False`: as answered to a request that did not ask for them."""
    tokens = logprobs_content(content, logprob_of) if logprobs else None
    return {"id": "chatcmpl-test", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "logprobs": {"content": tokens} if tokens is not None else None,
                         "finish_reason": finish_reason, "stop_reason": None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(tokens or []),
                      "total_tokens": prompt_tokens + len(tokens or [])}}
