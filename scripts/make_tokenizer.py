#!/usr/bin/env python3
"""Trains pagemill's BPE tokenizer on `scripts/tokenizer_text.txt` and writes `pagemill_eval/tokenizer.json`, the
file `pagemill specsim` loads (`make tokenizer`). Deterministic: the same text and `tokenizers` version give the
same file, which tests/unit/test_specsim_parts.py checks.

usage: python scripts/make_tokenizer.py [OUT]
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEXT = REPO / "scripts" / "tokenizer_text.txt"
sys.path.insert(0, str(REPO))  # this checkout's pagemill_eval, whatever is installed

from pagemill_eval.tokenizer import TOKENIZER_FILE, train_tokenizer  # noqa: E402


def trained_json() -> str:
    return train_tokenizer(TEXT.read_text(encoding="utf-8")).to_str() + "\n"


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else TOKENIZER_FILE
    text = trained_json()
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out} ({len(text)} characters)")


if __name__ == "__main__":
    main()
