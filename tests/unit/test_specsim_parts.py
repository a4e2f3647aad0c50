"""specsim's pieces without a corpus: tokenizer, prompt, anchor clipping, reference cleaning, docs section."""

from __future__ import annotations

import json
from pathlib import Path

from pagemill_eval.specsim.anchors import prompt_text
from pagemill_eval.specsim.corpus import docling_items, latex_body, normalize_plain_text, split_docling_markdown
from pagemill_eval.specsim.report import END, START, write_section
from pagemill_eval.tokenizer import EOS, SPECIAL_TOKENS, TOKENIZER_FILE, VOCAB_SIZE, load_tokenizer, train_tokenizer
from services.worker.pipeline.quality import clip_anchor

REPO = Path(__file__).resolve().parents[2]


def test_tokenizer_is_a_real_bpe_with_qwen2_special_tokens() -> None:
    tokenizer = load_tokenizer()
    assert tokenizer.get_vocab_size() == VOCAB_SIZE + len(SPECIAL_TOKENS)
    ids = [tokenizer.token_to_id(token) for token in SPECIAL_TOKENS]
    assert ids == list(range(ids[0], ids[0] + len(SPECIAL_TOKENS)))  # one id each, after the BPE vocabulary
    text = "The committee approved the annual report. Überprüfung: 12,5 %. 발행일 2020년"
    encoded = tokenizer.encode(text)
    assert tokenizer.decode(encoded.ids) == text  # byte-level: nothing is lost
    assert len(encoded.ids) < 0.6 * len(text.encode())  # merges, not bytes
    assert {"Ġreport", "Ġthe"} <= set(encoded.tokens)
    assert [t for t in encoded.tokens if t.isdigit()] == list("125" "2020")  # digits one by one, as Qwen2 does
    prompt = tokenizer.encode(prompt_text("anchor words"), add_special_tokens=False)
    assert prompt.tokens[0] == "<|im_start|>" and prompt.ids.count(tokenizer.token_to_id(EOS)) == 2


def test_the_shipped_tokenizer_is_what_the_training_script_gives() -> None:
    raw = (REPO / "scripts" / "tokenizer_text.txt").read_text(encoding="utf-8")
    trained = train_tokenizer(raw).to_str()
    assert json.loads(trained) == json.loads(TOKENIZER_FILE.read_text(encoding="utf-8")), "run `make tokenizer`"
    assert train_tokenizer(raw).to_str() == trained  # deterministic


def test_clip_anchor_keeps_the_head_and_cuts_at_a_word() -> None:
    text = "alpha   beta\r\n\n\n\ngamma " + "delta " * 50
    clipped = clip_anchor(text, 40)
    assert clipped.startswith("alpha beta\n\ngamma delta")
    assert len(clipped) <= 40 and clipped.endswith("delta")
    assert clip_anchor("short", 100) == "short"
    assert prompt_text("") .count("PAGE_TEXT") == 0 and prompt_text("x").count("PAGE_TEXT") == 2


def test_reference_cleaning() -> None:
    assert normalize_plain_text("   1   IN  THE COURT   \n\n\n\n  2  x ") == "1 IN THE COURT\n\n2 x"
    source = "\\documentclass{article}\n\\begin{document}\n  Text % a comment\n\\begin{tikzpicture}\\draw;" \
             "\\end{tikzpicture}\n  50\\% of $x$\n\\end{document}\n"
    assert latex_body(source) == "Text\n\n50\\% of $x$"


def test_docling_markdown_is_split_by_its_items_pages() -> None:
    document = {
        "body": {"children": [{"$ref": "#/texts/0"}, {"$ref": "#/groups/0"}, {"$ref": "#/texts/3"},
                              {"$ref": "#/tables/0"}]},
        "groups": [{"children": [{"$ref": "#/texts/1"}, {"$ref": "#/texts/2"}]}],
        "texts": [
            {"text": "Title", "prov": [{"page_no": 1}]},
            {"text": "first item", "prov": [{"page_no": 1}]},
            {"text": "second_item on page two", "prov": [{"page_no": 2}]},
            {"text": "Footer", "prov": [{"page_no": 2}], "content_layer": "furniture"},
        ],
        "tables": [{"prov": [{"page_no": 3}], "data": {"table_cells": [{"text": ""}, {"text": "Cell & more"}]}}],
    }
    assert docling_items(document) == [(1, "Title"), (1, "first item"), (2, "second_item on page two"),
                                       (3, "Cell & more")]
    markdown = "# Title\n\n- first item\n- second\\_item on page two\n\n| a | Cell &amp; more |"
    assert split_docling_markdown(markdown, document, 3) == [
        "# Title\n\n- first item", "- second\\_item on page two\n", "| a | Cell &amp; more |"]


def test_docs_section_is_replaced_in_place(tmp_path: Path) -> None:
    path = tmp_path / "docs" / "benchmarks.md"
    write_section(path, f"{START}\nfirst\n{END}")
    assert path.read_text() == f"# Benchmarks\n\n{START}\nfirst\n{END}\n"
    path.write_text(f"# Benchmarks\n\n## Other\n\nmine\n\n{START}\nfirst\n{END}\n\n## Later\n\nalso mine\n")
    write_section(path, f"{START}\nsecond\n{END}")
    assert path.read_text() == f"# Benchmarks\n\n## Other\n\nmine\n\n{START}\nsecond\n{END}\n\n## Later\n\nalso mine\n"
    other = tmp_path / "other.md"
    other.write_text("# Benchmarks\n\n## Control plane\n")
    write_section(other, f"{START}\nx\n{END}")
    assert other.read_text() == f"# Benchmarks\n\n## Control plane\n\n{START}\nx\n{END}\n"
