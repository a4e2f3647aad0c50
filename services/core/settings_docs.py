"""The settings reference, generated from `Settings`: docs/settings.md and README's short table stay true.

    Settings ──walk──▶ one row per setting: env name, default, the description under the field
             ──render──▶ docs/settings.md (every setting, by group)   README.md (the few in `SUMMARY`)

`pagemill config --write` puts both between their markers; tests/unit/test_settings_docs.py fails when
either is stale, when a field has no description, or when a document names a setting that does not exist.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr

from services.core.settings import Settings

PREFIX, NESTED = "PAGEMILL_", "__"
REPO_ROOT = Path(__file__).resolve().parents[2]
REFERENCE = REPO_ROOT / "docs" / "settings.md"
README = REPO_ROOT / "README.md"
REFERENCE_MARKERS = ("<!-- settings:start -->", "<!-- settings:end -->")
SUMMARY_MARKERS = ("<!-- settings-summary:start -->", "<!-- settings-summary:end -->")
# README's short table: what a newcomer sets first. Everything else is in docs/settings.md.
SUMMARY = (
    "PAGEMILL_DATA_DIR", "PAGEMILL_DATABASE_URL", "PAGEMILL_REDIS_URL", "PAGEMILL_ADMIN_KEY",
    "PAGEMILL_ENGINE__KIND", "PAGEMILL_ENGINE__PRESET", "PAGEMILL_ENGINE__VLLM_URL", "PAGEMILL_ENGINE__MAX_IN_FLIGHT",
    "PAGEMILL_STORAGE__KIND", "PAGEMILL_STORAGE__BUCKET", "PAGEMILL_STORAGE__ENDPOINT_URL",
    "PAGEMILL_LIMITS__MAX_FILE_BYTES", "PAGEMILL_LIMITS__MAX_PAGES", "PAGEMILL_LIMITS__REQUESTS_PER_MINUTE",
    "PAGEMILL_LIMITS__PAGES_IN_FLIGHT", "PAGEMILL_RETENTION__DAYS", "PAGEMILL_CACHE__ENABLED",
    "PAGEMILL_WEBHOOKS__ALLOW_PRIVATE_URLS", "PAGEMILL_LOG_JSON",
)
GENERAL = "Where pagemill keeps its state, how it logs, who may administer it."
# Variables read outside `Settings` (command-line tools and tests), listed so the reference is complete.
OTHER_VARIABLES = {
    "PAGEMILL_API_KEY": "`pagemill parse --server`, `pagemill mcp` and the Python SDK: the bearer key sent to a "
                        "running pagemill.",
    "PAGEMILL_BASE_URL": "`pagemill mcp` and the Python SDK: the pagemill to call (default http://127.0.0.1:8000).",
    "PAGEMILL_CORPUS": "tests and `make` targets: where the shared evaluation corpus is.",
    "PAGEMILL_VLLM_VENV": "`make test-vllm`: the venv with `vllm serve` and the tiny model.",
    "PAGEMILL_VLLM_PRESET_MODELS": "`make test-vllm-presets`: the folder of the presets' tiny models "
                                   "(default the venv's models/presets, built by `make vllm-env`).",
    "PAGEMILL_VLLM_PRESETS_AHEAD": "`make test-vllm-presets`: preset servers starting at once, ahead of their "
                                   "test (default 3; 1: one at a time).",
    "PAGEMILL_PYTHON_IMAGE": "`make images`: the Dockerfiles' base image (default Docker Hub's "
                             "python:3.11-slim-bookworm, else one made with debootstrap).",
    "PAGEMILL_CPU_WORKERS": "`docker/compose.yaml`: replicas of the CPU worker.",
    "PAGEMILL_GATEWAY_PORT": "`docker/compose.yaml`: the gateway's published port.",
    "PAGEMILL_MINIO_CONSOLE_PORT": "`docker/compose.yaml`: the S3 console's published port.",
    "PAGEMILL_REDIS_IMAGE": "`docker/compose.yaml`: the Redis image (a stand-in where Docker Hub cannot be pulled).",
    "PAGEMILL_POSTGRES_IMAGE": "`docker/compose.yaml`: the PostgreSQL image (likewise).",
    "PAGEMILL_S3_IMAGE": "`docker/compose.yaml`: the S3 API image (likewise).",
}


@dataclass(frozen=True, slots=True)
class Setting:
    env: str
    default: str
    description: str


@dataclass(frozen=True, slots=True)
class Group:
    title: str  # "engine.serve"; "" for the top-level settings
    description: str
    settings: list[Setting]


def groups(model: type[BaseModel] = Settings, path: tuple[str, ...] = ()) -> list[Group]:
    """Every setting under `model`, one group per (nested) model, in declaration order."""
    own: list[Setting] = []
    nested: list[Group] = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            nested += groups(annotation, (*path, name))
            continue
        env = PREFIX + NESTED.join((*path, name)).upper()
        own.append(Setting(env, render_default(field.get_default(call_default_factory=True)),
                           " ".join((field.description or "").split())))
    title = ".".join(path)
    description = " ".join((model.__doc__ or "").split()) if path else GENERAL
    return [Group(title, description, own), *nested] if own else nested


def render_default(value: Any) -> str:
    if value is None or (isinstance(value, SecretStr) and not value.get_secret_value()):
        return "unset"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, bool):
        text = str(value).lower()
    elif isinstance(value, float) and value.is_integer():
        text = str(int(value))
    elif isinstance(value, list | dict):
        text = json.dumps(value, separators=(",", ":"))
    elif isinstance(value, str) and not value:
        text = '""'
    else:
        text = str(value)
    return f"`{text}`"


def all_settings() -> list[Setting]:
    return [setting for group in groups() for setting in group.settings]


def _table(settings: list[Setting]) -> list[str]:
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    rows += [f"| `{s.env}` | {s.default} | {_cell(s.description)} |" for s in settings]
    return rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def reference_markdown() -> str:
    """docs/settings.md's generated part: every setting, by group."""
    lines = [REFERENCE_MARKERS[0],
             "<!-- generated by `pagemill config --write` from services/core/settings.py: edit the descriptions "
             "there -->", ""]
    for group in groups():
        variables = f"PAGEMILL_{NESTED.join(group.title.split('.')).upper()}__*" if group.title else "PAGEMILL_*"
        lines += [f"## {group.title or 'general'} — `{variables}`", "", group.description, "",
                  *_table(group.settings), ""]
    lines += ["## Read outside the settings", "", "| variable | meaning |", "|---|---|"]
    lines += [f"| `{name}` | {meaning} |" for name, meaning in OTHER_VARIABLES.items()]
    return "\n".join([*lines, REFERENCE_MARKERS[1]])


def summary_markdown() -> str:
    """README's short table: the settings in `SUMMARY`."""
    by_env = {s.env: s for s in all_settings()}
    missing = [name for name in SUMMARY if name not in by_env]
    if missing:
        raise KeyError(f"SUMMARY names settings that do not exist: {missing}")
    lines = [SUMMARY_MARKERS[0], *_table([by_env[name] for name in SUMMARY]), SUMMARY_MARKERS[1]]
    return "\n".join(lines)


def replace_between(text: str, markers: tuple[str, str], section: str) -> str:
    """`text` with everything from the start marker to the end marker replaced by `section` (markers included)."""
    start, end = markers
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise ValueError(f"expected one {start} … {end} pair")
    before, rest = text.split(start, 1)
    return before + section + rest.split(end, 1)[1]


def section_of(text: str, markers: tuple[str, str]) -> str:
    """The part of `text` between the markers, markers included."""
    start, end = markers
    begin = text.index(start)
    return text[begin:text.index(end, begin) + len(end)]


def write(reference: Path = REFERENCE, readme: Path = README) -> list[Path]:
    """Regenerates both sections in place. Returns the files that changed."""
    changed = []
    for path, markers, section in ((reference, REFERENCE_MARKERS, reference_markdown()),
                                   (readme, SUMMARY_MARKERS, summary_markdown())):
        text = path.read_text(encoding="utf-8")
        updated = replace_between(text, markers, section)
        if updated != text:
            path.write_text(updated, encoding="utf-8")
            changed.append(path)
    return changed
