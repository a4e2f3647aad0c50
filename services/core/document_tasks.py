"""What a document is submitted for (`task`): parsing alone, or parsing and then a language-model answer on top.

    parse      the page results and the five parse formats (markdown, html, latex, json, chunks)
    translate  + `translation`: the document's Markdown in `target_language`
    extract    + `extraction`: JSON valid against the JSON Schema in `schema`, with the element ids it came from
    summarize  + `summary`: a short Markdown summary

The task and its parameters are checked at submit and stored on the document (`Document.task`,
`Document.task_params`); the results service makes the answer once the pages are parsed
(services/results/document_task.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from jsonschema import Draft202012Validator, SchemaError, validators

from services.core.errors import DETAIL_CHARS, InvalidJsonSchema, TaskNeedsModel, ValidationFailed, clip
from services.core.settings import EngineKind, Settings

MAX_SCHEMA_BYTES = 16_384
MAX_LANGUAGE_CHARS = 64


class TaskKind(StrEnum):
    PARSE = "parse"
    TRANSLATE = "translate"
    EXTRACT = "extract"
    SUMMARIZE = "summarize"


# The result format (`result?format=`) each model task adds to the parse formats.
TASK_FORMATS = {TaskKind.TRANSLATE: "translation", TaskKind.EXTRACT: "extraction", TaskKind.SUMMARIZE: "summary"}


@dataclass(frozen=True, slots=True)
class TaskSpec:
    kind: TaskKind = TaskKind.PARSE
    params: dict[str, Any] = field(default_factory=dict)  # target_language | schema

    @property
    def result_format(self) -> str | None:
        return TASK_FORMATS.get(self.kind)


def parse_task(task: str | None, target_language: str | None, schema: str | None, settings: Settings) -> TaskSpec:
    """The task form fields of an upload, checked: 422 `validation_error` for a field that is wrong,
    `invalid_json_schema` for a schema that is not one, `task_needs_model` where no vLLM engine runs."""
    raw = (task or "").strip() or TaskKind.PARSE.value
    try:
        kind = TaskKind(raw)
    except ValueError:
        raise ValidationFailed(f"task: must be one of {', '.join(k.value for k in TaskKind)}") from None
    if kind is TaskKind.PARSE:
        if (target_language or "").strip() or (schema or "").strip():
            raise ValidationFailed("target_language and schema go with task=translate and task=extract")
        return TaskSpec()
    if settings.engine.kind != EngineKind.VLLM:
        raise TaskNeedsModel(f"task={kind.value} needs a language model: this deployment runs the "
                             f"{settings.engine.kind.value} engine, not vllm (PAGEMILL_ENGINE__KIND)")
    if kind is TaskKind.TRANSLATE:
        return TaskSpec(kind, {"target_language": _language(target_language)})
    if (target_language or "").strip():
        raise ValidationFailed("target_language: only with task=translate")
    if kind is TaskKind.EXTRACT:
        return TaskSpec(kind, {"schema": parse_schema(schema)})
    if (schema or "").strip():
        raise ValidationFailed("schema: only with task=extract")
    return TaskSpec(kind)


def _language(value: str | None) -> str:
    language = (value or "").strip()
    if not language:
        raise ValidationFailed("target_language: required with task=translate (e.g. 'German' or 'de')")
    if len(language) > MAX_LANGUAGE_CHARS or not language.isprintable():
        raise ValidationFailed(f"target_language: 1 to {MAX_LANGUAGE_CHARS} printable characters")
    return language


def parse_schema(raw: str | None) -> dict[str, Any]:
    """A JSON Schema (draft 2020-12 or the draft its `$schema` names) as a JSON object of at most 16 KiB."""
    if raw is None or not raw.strip():
        raise InvalidJsonSchema("schema: required with task=extract (a JSON Schema object)")
    if len(raw.encode()) > MAX_SCHEMA_BYTES:
        raise InvalidJsonSchema(f"schema: at most {MAX_SCHEMA_BYTES // 1024} KiB")
    try:
        schema = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise InvalidJsonSchema(clip(f"schema: not valid JSON ({exc})")) from exc
    if not isinstance(schema, dict):
        raise InvalidJsonSchema("schema: must be a JSON Schema object")
    validator = validators.validator_for(schema, default=Draft202012Validator)
    try:
        validator.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "(root)"
        message = f"schema: not a valid JSON Schema at {where}: {exc.message}"
        raise InvalidJsonSchema(clip(message, DETAIL_CHARS)) from exc
    if any(isinstance(ref, str) and not ref.startswith("#") for ref in _refs(schema)):
        raise InvalidJsonSchema("schema: only local $ref (#/...) is allowed; nothing is fetched")
    return schema


def _refs(value: Any) -> list[Any]:
    found, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "$ref" in item:
                found.append(item["$ref"])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def task_of(kind: str | None, params: dict[str, Any] | None) -> TaskSpec:
    """The stored task of a document (rows from before tasks existed are `parse`)."""
    return TaskSpec(TaskKind(kind or TaskKind.PARSE.value), dict(params or {}))
