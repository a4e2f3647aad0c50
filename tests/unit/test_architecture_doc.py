"""docs/architecture.md's code map is what tools/architecture.py writes from today's modules (`make docs`)."""

from __future__ import annotations

from pathlib import Path

from tools import architecture


def test_the_code_map_is_fresh() -> None:
    text = architecture.DOC.read_text(encoding="utf-8")
    assert architecture.render(text) == text, "docs/architecture.md's code map is stale: run `make docs`"


def test_every_module_has_a_one_line_summary() -> None:
    missing = [line for line in architecture.code_map().splitlines() if line.endswith("— ")]
    assert not missing, f"modules without a docstring: {missing}"


def test_a_new_module_shows_in_the_map(tmp_path: Path) -> None:
    package = tmp_path / "services" / "demo"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""A demo package."""\n')
    (package / "thing.py").write_text('"""Does the thing.\n\nMore words."""\n')
    assert "- `thing.py` — Does the thing." in architecture.code_map(tmp_path)
