"""The answer of a document's model task (translate, extract, summarize), made from its parsed pages.

The pages are parsed first, by whichever engine the mode picks; the task then goes to the vLLM engine's server
(`PAGEMILL_ENGINE__VLLM_URL`) as text: the pages' Markdown for translate and summarize, the element tree (each
element with its id) for extract. Text rather than page images because the parse already paid for reading the
pixels, the text is a fraction of the image tokens, and extract can then name the elements a value came from.

- translate: one request per page (a page fits the context; the translation keeps the page markers);
- extract: one request with vLLM structured outputs (`structured_outputs.json`), so the answer is JSON valid
  against `{"data": <the schema>, "element_ids": [...]}`; `element_ids` may only name elements of the
  document; the answer is checked against the schema again before it is stored;
- summarize: one request over the document's Markdown (clipped to `tasks.max_input_chars`).

An unreachable or busy server raises `EngineUnavailable` (the assembly is retried); an answer that cannot be
used (refused, cut at the token budget, invalid) raises `TaskFailed`, and the document ends `failed` with it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from jsonschema import Draft202012Validator, validators

from services.core import openai_api
from services.core.document_tasks import TaskKind, TaskSpec
from services.core.errors import DETAIL_CHARS, EngineUnavailable, PagemillError, clip
from services.core.logging import get_logger
from services.core.pages import PageEntry
from services.core.settings import Settings
from services.core.storage import ObjectNotFound, ObjectStore, document_result_key
from services.results.render.markdown import page_marker

log = get_logger(__name__)
T = TypeVar("T")

MAX_ENUM_IDS = 2000  # past this many elements the ids are checked after the answer, not by the grammar
MAX_SOURCE_IDS = 32

TRANSLATE_PROMPT = (
    "Translate this page of a document into {language}. Keep its Markdown as it is: headings, lists, HTML tables "
    "and LaTeX formulas keep their markup; translate only the words. Answer with the translated page alone.\n\n"
    "<<<PAGE\n{page}\nPAGE>>>"
)
EXTRACT_PROMPT = (
    "Extract what the JSON Schema asks for from the document below. The document is a list of elements, each "
    "line starting with the element's id in brackets. Answer with a JSON object: `data` holds the values, valid "
    "against the schema; `element_ids` lists the ids of the elements the values were read from.\n\n"
    "JSON Schema:\n{schema}\n\n{fields}Document:\n{document}"
)
FIELDS_PROMPT = (
    "The document's fields, as read from its form and layout (JSON; `element_id` is the element each is in; "
    "prefer these values, they are the form's own):\n{fields}\n\n"
)
MAX_FIELDS = 500  # a document of more fields than this sends the first ones

SUMMARIZE_PROMPT = (
    "Summarize the document below in a few short paragraphs, in the document's own language: what it is, its "
    "main points and any figures that matter. Answer in Markdown, without a title.\n\n<<<DOCUMENT\n{document}\n"
    "DOCUMENT>>>"
)


class TaskFailed(PagemillError):
    """The model's answer to the document's task could not be used."""

    status_code = 422
    code = "task_failed"


class ContextTooLong(TaskFailed):
    """vLLM refused the prompt as longer than the model's context."""


MAX_SHRINKS = 5  # a prompt over the context is sent again with half the document text, at most this often


class TaskModel:
    """One chat completion at a time against the vLLM server, text only."""

    def __init__(self, settings: Settings) -> None:
        engine = settings.engine
        self.settings = settings
        self.client = openai_api.open_client(engine.vllm_url, api_key=engine.api_key,
                                             timeout_s=engine.request_timeout_s)
        self._model = engine.model

    @property
    def model(self) -> str:
        """The served model name: the setting, else the first model the server lists."""
        if not self._model:
            models = self._send("GET", "/v1/models").get("data") or []
            if not models:
                raise EngineUnavailable("the vLLM server lists no model")
            self._model = str(models[0]["id"])
        return self._model

    def complete(self, prompt: str, *, extra: dict[str, Any] | None = None) -> tuple[str, str, dict[str, int]]:
        """(answer, finish_reason, usage) of one user message."""
        tasks = self.settings.tasks
        body = {**tasks.request_extra, **(extra or {}), "model": self.model,
                "messages": [{"role": "user", "content": prompt}], "max_tokens": tasks.max_tokens,
                "temperature": tasks.temperature}
        answer = self._send("POST", "/v1/chat/completions", json=body)
        choice = (answer.get("choices") or [{}])[0]
        usage = answer.get("usage") or {}
        return ((choice.get("message") or {}).get("content") or "", choice.get("finish_reason") or "stop",
                {"prompt_tokens": int(usage.get("prompt_tokens") or 0),
                 "completion_tokens": int(usage.get("completion_tokens") or 0)})

    def _send(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            return openai_api.request_json(self.client, method, path, **kwargs)
        except openai_api.ModelRefused as exc:
            error = TaskFailed if "context length" not in exc.text else ContextTooLong
            raise error(f"vLLM refused the task request ({exc.status_code}): {clip(exc.text, 400)}") from exc
        except openai_api.ModelAnswerNotJson as exc:
            raise TaskFailed(f"vLLM answered without JSON: {exc.text[:openai_api.NOT_JSON_CHARS]}") from exc

    def close(self) -> None:
        self.client.close()


def run_document_task(task: TaskSpec, document_id: str, entries: list[PageEntry], settings: Settings,
                      store: ObjectStore, fields: list[dict[str, Any]] | None = None) -> dict[str, bytes]:
    """{result format: body} of the task's answer ({} for `parse`); `fields`: the JSON's `fields`, given to
    extract as structured input. An answer already stored (the assembly ran
    before and was interrupted) is used again, not asked for twice."""
    fmt = task.result_format
    if fmt is None:
        return {}
    try:
        return {fmt: store.get(document_result_key(document_id, fmt))}
    except ObjectNotFound:
        pass
    model = TaskModel(settings)
    try:
        if task.kind is TaskKind.TRANSLATE:
            body = translate(model, entries, str(task.params["target_language"]), settings).encode()
        elif task.kind is TaskKind.EXTRACT:
            body = json.dumps(extract(model, entries, task.params["schema"], settings, fields),
                              ensure_ascii=False).encode()
        else:
            body = summarize(model, entries, settings).encode()
    finally:
        model.close()
    log.info("document.task_answered", document_id=document_id, task=task.kind.value, bytes=len(body))
    return {fmt: body}


# translate ------------------------------------------------------------------------------------------------------

def translate(model: TaskModel, entries: list[PageEntry], language: str, settings: Settings) -> str:
    """The document's Markdown in `language`, page by page (pages in parallel, up to engine.max_in_flight)."""

    def one(page: PageEntry) -> str:
        body = (page.get("markdown") or "").strip()
        if page.get("status") != "succeeded" or not body:
            return f"{page_marker(page)}\n"
        text, finish, _ = model.complete(TRANSLATE_PROMPT.format(language=language, page=body))
        note = "" if finish != "length" else f"<!-- page {page['page_number']}: cut at the token budget -->\n"
        return f"{page_marker(page)}\n\n{note}{text.strip()}\n"

    with ThreadPoolExecutor(max_workers=settings.engine.max_in_flight) as pool:
        return "\n".join(pool.map(one, entries))


# extract --------------------------------------------------------------------------------------------------------

def element_lines(entries: list[PageEntry], budget: int) -> tuple[str, list[str]]:
    """The document as `[id] markdown` lines (clipped to `budget` characters) and the ids it holds."""
    lines: list[str] = []
    ids: list[str] = []
    used = 0
    for page in entries:
        for element in page.get("elements") or []:
            text = " ".join(str(element.get("markdown") or element.get("text") or "").split())
            if not text:
                continue
            line = f"[{element['id']}] {text}"
            if used + len(line) > budget:
                return "\n".join(lines), ids
            lines.append(line)
            ids.append(str(element["id"]))
            used += len(line) + 1
    return "\n".join(lines), ids


def answer_schema(schema: dict[str, Any], ids: list[str]) -> dict[str, Any]:
    """What the grammar holds the answer to: the user's schema under `data` (its local `$ref`s re-pointed),
    and the source element ids, limited to the document's own where there are not too many."""
    item: dict[str, Any] = {"type": "string"}
    if ids and len(ids) <= MAX_ENUM_IDS:
        item = {"enum": ids}
    return {"type": "object", "additionalProperties": False, "required": ["data", "element_ids"],
            "properties": {"data": _repoint_refs(schema, "#/properties/data"),
                           "element_ids": {"type": "array", "items": item, "maxItems": MAX_SOURCE_IDS}}}


def _repoint_refs(value: Any, base: str) -> Any:
    if isinstance(value, dict):
        return {k: (base + v[1:] if k == "$ref" and isinstance(v, str) and v.startswith("#") else
                    _repoint_refs(v, base)) for k, v in value.items()}
    if isinstance(value, list):
        return [_repoint_refs(v, base) for v in value]
    return value


def fitted(ask: Callable[[int], T], budget: int) -> T:
    """`ask(chars)` with the document clipped to `budget` characters, halved while vLLM says the prompt is over
    the model's context (`tasks.max_input_chars` is in characters, the context in tokens)."""
    for _ in range(MAX_SHRINKS):
        try:
            return ask(budget)
        except ContextTooLong:
            budget //= 2
            log.info("document.task_shrunk", chars=budget)
    return ask(budget)


def fields_block(fields: list[dict[str, Any]], budget: int) -> str:
    """The document's fields (AcroForm, checkboxes, key–value pairs) as compact JSON for the prompt, within
    `budget` characters (fields past it are left out); "" when it has none."""
    kept: list[str] = []
    used = 0
    for field in fields[:MAX_FIELDS]:
        item = {"element_id": field.get("element_id"), "name": field.get("label") or field.get("name"),
                "type": field.get("type"), "value": field.get("value")}
        if field.get("checked") is not None:
            item["checked"] = field["checked"]
        line = json.dumps(item, ensure_ascii=False, separators=(",", ":"))
        if used + len(line) + 1 > budget:
            break
        kept.append(line)
        used += len(line) + 1
    return FIELDS_PROMPT.format(fields="[" + ",\n".join(kept) + "]") if kept else ""


def extract_prompt(entries: list[PageEntry], schema: dict[str, Any], fields: list[dict[str, Any]],
                   budget: int) -> tuple[str, list[str]]:
    """What extract asks the model, within `budget` characters of document (the fields take at most a quarter
    of it), and the element ids the document holds."""
    given = fields_block(fields, budget // 4)
    document, ids = element_lines(entries, budget - len(given))
    return EXTRACT_PROMPT.format(schema=json.dumps(schema, ensure_ascii=False), fields=given, document=document), ids


def extract(model: TaskModel, entries: list[PageEntry], schema: dict[str, Any],
            settings: Settings, fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    def ask(budget: int) -> tuple[tuple[str, str, dict[str, int]], list[str]]:
        prompt, ids = extract_prompt(entries, schema, fields or [], budget)
        # Compact JSON comes from the server's --structured-outputs-config (services/worker/engines/vllm/serve.py).
        structured = {"json": answer_schema(schema, ids)}
        return model.complete(prompt, extra={"structured_outputs": structured}), ids

    (text, finish, usage), ids = fitted(ask, settings.tasks.max_input_chars)
    if finish == "length":
        raise TaskFailed(f"the extraction ran into the token budget ({settings.tasks.max_tokens}, "
                         "PAGEMILL_TASKS__MAX_TOKENS) before its JSON was complete")
    try:
        # strict=False: xgrammar's JSON strings let raw control characters through (a tab, a newline), which
        # strict JSON does not; stored, they are escaped again.
        answer = json.loads(text, strict=False)
    except ValueError as exc:
        raise TaskFailed(f"the extraction is not JSON ({exc})") from exc
    data = answer.get("data") if isinstance(answer, dict) else None
    errors = sorted(validators.validator_for(schema, default=Draft202012Validator)(schema).iter_errors(data),
                    key=lambda e: list(e.path))
    if errors:
        raise TaskFailed(clip(f"the extraction does not match the schema: {errors[0].message}", DETAIL_CHARS))
    known = set(ids)
    sources = list(dict.fromkeys(str(i) for i in answer.get("element_ids") or [] if str(i) in known))
    return {"task": "extract", "data": data, "element_ids": sources, "model": model.model, "finish_reason": finish,
            **usage}


# summarize ------------------------------------------------------------------------------------------------------

def summarize(model: TaskModel, entries: list[PageEntry], settings: Settings) -> str:
    document = "\n\n".join((p.get("markdown") or "").strip() for p in entries if p.get("status") == "succeeded")
    text, finish, _ = fitted(lambda budget: model.complete(SUMMARIZE_PROMPT.format(document=document[:budget])),
                             settings.tasks.max_input_chars)
    if finish == "length":
        log.warning("document.summary_cut", chars=len(text))
    return text.strip() + "\n"
