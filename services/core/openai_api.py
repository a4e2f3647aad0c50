"""The one client of an OpenAI-compatible server (vLLM): connection, timeouts, and what its answers mean.

Used by the vllm engine (one page or a group of pages per request) and by the document tasks (translate,
extract, summarize). What an answer means is decided here once:

    a transport error or a timeout       → EngineUnavailable (retryable: the server is down, starting or slow)
    429, 502, 503, 504                   → EngineUnavailable (retryable: busy, restarting, or a proxy lost it)
    any other status ≥ 400               → ModelRefused (this request will not do; the caller names the error)
    a 2xx body that is not a JSON object → ModelAnswerNotJson

Callers turn `ModelRefused` and `ModelAnswerNotJson` into their own errors (a page's `engine_rejected`, a
document's `task_failed`): the status and the body travel with them.
"""

from __future__ import annotations

from typing import Any

import httpx

from services.core.errors import EngineUnavailable, clip

# Answers that mean "not now": the server is starting, restarting, overloaded, or a proxy in front lost it.
UNAVAILABLE_STATUS = frozenset({429, 502, 503, 504})
CONNECT_TIMEOUT_S = 5.0  # the server is on the same network: a connection slower than this is a down server
HEALTH_TIMEOUT_S = 5.0
NOT_JSON_CHARS = 200  # how much of a body that is not JSON an error quotes


class ModelRefused(Exception):
    """The server answered this request with an error status that retrying will not change."""

    def __init__(self, status_code: int, text: str) -> None:
        super().__init__(f"{status_code}: {clip(text)}")
        self.status_code = status_code
        self.text = text


class ModelAnswerNotJson(Exception):
    """The server answered with a success status but a body that is no JSON object."""

    def __init__(self, status_code: int, text: str) -> None:
        super().__init__(f"{status_code} without JSON: {text[:NOT_JSON_CHARS]}")
        self.status_code = status_code
        self.text = text


def open_client(base_url: str, *, api_key: str | None, timeout_s: float, max_connections: int | None = None
                ) -> httpx.Client:
    """An HTTP client for the server at `base_url`: bearer auth when `api_key` is set, `timeout_s` per request
    (connecting gets `CONNECT_TIMEOUT_S`), at most `max_connections` open when given."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    limits = (httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
              if max_connections is not None else httpx.Limits())
    return httpx.Client(base_url=base_url.rstrip("/"), headers=headers, limits=limits,
                        timeout=httpx.Timeout(timeout_s, connect=CONNECT_TIMEOUT_S))


def request_json(client: httpx.Client, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
    """The JSON object the server answers to one request; raises as the module's docstring draws."""
    try:
        response = client.request(method, path, **kwargs)
    except httpx.TimeoutException as exc:
        raise EngineUnavailable(f"vLLM at {client.base_url} timed out ({exc!r})") from exc
    except httpx.HTTPError as exc:
        raise EngineUnavailable(f"vLLM at {client.base_url} is unreachable ({exc!r})") from exc
    if response.status_code in UNAVAILABLE_STATUS:
        raise EngineUnavailable(f"vLLM answered {response.status_code}: {clip(response.text)}")
    if response.status_code >= 400:
        raise ModelRefused(response.status_code, response.text)
    try:
        found = response.json()
    except ValueError as exc:
        raise ModelAnswerNotJson(response.status_code, response.text) from exc
    if not isinstance(found, dict):
        raise ModelAnswerNotJson(response.status_code, response.text)
    return found


def check_health(client: httpx.Client) -> None:
    """Raises `EngineUnavailable` unless the server's `/health` answers 200."""
    try:
        response = client.get("/health", timeout=HEALTH_TIMEOUT_S)
    except httpx.HTTPError as exc:
        raise EngineUnavailable(f"vLLM at {client.base_url} is unreachable ({exc!r})") from exc
    if response.status_code != 200:
        raise EngineUnavailable(f"vLLM /health answered {response.status_code}")
