"""The settings docs stay true: docs/settings.md and README's table are what the code generates today, every
setting has a description, and no document names a setting that does not exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from services.core import settings_docs
from services.core.settings import Settings

REPO = Path(__file__).resolve().parents[2]
STALE = "run `make docs` (pagemill config --write) and commit the result"


def test_docs_settings_md_is_what_the_settings_generate() -> None:
    text = (REPO / "docs" / "settings.md").read_text(encoding="utf-8")
    assert settings_docs.section_of(text, settings_docs.REFERENCE_MARKERS) == settings_docs.reference_markdown(), \
        f"docs/settings.md is stale: {STALE}"


def test_readme_settings_table_is_what_the_settings_generate() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert settings_docs.section_of(text, settings_docs.SUMMARY_MARKERS) == settings_docs.summary_markdown(), \
        f"README's settings table is stale: {STALE}"
    assert "(docs/settings.md)" in text


def test_every_setting_is_listed_once_with_a_description() -> None:
    settings = settings_docs.all_settings()
    names = [s.env for s in settings]
    assert len(names) == len(set(names))
    assert {"PAGEMILL_ENGINE__SERVE__QUANTIZATION", "PAGEMILL_WEBHOOKS__MAX_ATTEMPTS",
            "PAGEMILL_METRICS__TENANT_TOP_N", "PAGEMILL_ADMIN_KEY"} <= set(names)
    undescribed = [s.env for s in settings if not s.description]
    assert not undescribed, f"write a description (the string under the field) for: {undescribed}"
    assert all(group.description for group in settings_docs.groups())


def test_the_names_are_the_ones_pydantic_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PAGEMILL_ENGINE__SERVE__MAX_NUM_SEQS", "PAGEMILL_RETENTION__SWEEP_INTERVAL_S",
                 "PAGEMILL_WORKER__MAX_MEMORY_MB"):
        assert name in {s.env for s in settings_docs.all_settings()}
        monkeypatch.setenv(name, "777")
    settings = Settings()
    assert (settings.engine.serve.max_num_seqs, settings.retention.sweep_interval_s,
            settings.worker.max_memory_mb) == (777, 777.0, 777)


def test_defaults_are_rendered_as_an_operator_writes_them() -> None:
    by_env = {s.env: s.default for s in settings_docs.all_settings()}
    assert by_env["PAGEMILL_ENGINE__KIND"] == "`cpu`" and by_env["PAGEMILL_CACHE__ENABLED"] == "`true`"
    assert by_env["PAGEMILL_ENGINE__TEMPERATURES"] == "`[0.1,0.1,0.2,0.3,0.5,0.8,0.9,1.0]`"
    assert by_env["PAGEMILL_DATABASE_URL"] == by_env["PAGEMILL_ADMIN_KEY"] == "unset"
    assert by_env["PAGEMILL_RETENTION__DAYS"] == "`30`" and by_env["PAGEMILL_ENGINE__MODEL"] == '`""`'


def test_documents_name_only_settings_that_exist() -> None:
    known = {s.env for s in settings_docs.all_settings()} | set(settings_docs.OTHER_VARIABLES)
    documents = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")),
                 *sorted((REPO / "charts" / "pagemill").glob("values*.yaml")), REPO / "docker" / "compose.yaml"]
    unknown = {}
    for path in documents:
        for name in re.findall(r"PAGEMILL_[A-Z0-9_]*[A-Z0-9](?:__\*)?", path.read_text(encoding="utf-8")):
            if name.endswith("__*"):  # a group: PAGEMILL_ENGINE__SERVE__*
                if not any(k.startswith(name[:-1]) for k in known):
                    unknown[name] = path.name
            elif name not in known:
                unknown[name] = path.name
    assert not unknown, f"documents name settings that do not exist: {unknown}"


def test_write_replaces_only_the_marked_sections(tmp_path: Path) -> None:
    reference, readme = tmp_path / "settings.md", tmp_path / "README.md"
    start, end = settings_docs.REFERENCE_MARKERS
    reference.write_text(f"# Settings\n\nmine\n\n{start}\nold\n{end}\n\nalso mine\n")
    readme.write_text(f"intro\n{settings_docs.SUMMARY_MARKERS[0]}\n{settings_docs.SUMMARY_MARKERS[1]}\noutro\n")
    assert settings_docs.write(reference, readme) == [reference, readme]
    assert reference.read_text() == f"# Settings\n\nmine\n\n{settings_docs.reference_markdown()}\n\nalso mine\n"
    assert readme.read_text() == f"intro\n{settings_docs.summary_markdown()}\noutro\n"
    assert settings_docs.write(reference, readme) == []  # nothing left to change
    readme.write_text("no markers")
    with pytest.raises(ValueError):
        settings_docs.write(reference, readme)
