"""A small OpenAI-compatible chat-completions client (``POST {base_url}/chat/completions``)
over httpx, for the model extractor and the model conflict judge.

Configuration (arguments win over the environment):

=======================  ==============================================  ==============
argument                 environment                                     default
=======================  ==============================================  ==============
``base_url``             ``RECKON_LLM_BASE_URL`` (e.g. ``http://127.0.0.1:8080/v1``)  required
``api_key``              ``RECKON_LLM_API_KEY``                          none (no header)
``model``                ``RECKON_LLM_MODEL``                            required
``timeout``              ``RECKON_LLM_TIMEOUT`` (seconds)                8
=======================  ==============================================  ==============

Errors are :class:`LLMError` with ``retryable``: a timeout, a connection failure, HTTP
429 (``retry_after`` from the ``Retry-After`` header, seconds) and 5xx are retryable by
the job layer (retries with backoff); other 4xx and a reply that is not a chat
completion are not. The client itself never retries: the durable job does (seed 003 §5
"retryable: a failure re-runs instead of dropping context").
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import httpx

from reckon._errors import InvalidInput, ReckonError

__all__ = ["ChatClient", "LLMError"]


class LLMError(ReckonError):
    """A chat-completions call failed.

    :ivar retryable: whether re-running later may succeed (timeout, 429, 5xx, network).
    :ivar status: the HTTP status, if any.
    :ivar retry_after: seconds the server asked to wait (``Retry-After``), if given.
    """

    def __init__(self, message: str, *, retryable: bool, status: int | None = None,
                 retry_after: float | None = None) -> None:
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after
        super().__init__(message)


@dataclass
class ChatClient:
    """OpenAI-compatible chat-completions client.

    :param base_url: API root, e.g. ``https://api.openai.com/v1`` or a local server.
    :param model: model name sent as ``model``.
    :param api_key: sent as ``Authorization: Bearer <key>`` when given.
    :param timeout: seconds for the whole request.
    :raises InvalidInput: when ``base_url`` or ``model`` is missing (argument and env).
    """

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    timeout: float | None = None
    transport: Any = None  # an httpx transport (tests)

    def __post_init__(self) -> None:
        self.base_url = (self.base_url or os.environ.get("RECKON_LLM_BASE_URL") or "").rstrip("/")
        self.model = self.model or os.environ.get("RECKON_LLM_MODEL")
        self.api_key = self.api_key or os.environ.get("RECKON_LLM_API_KEY") or None
        if self.timeout is None:
            self.timeout = float(os.environ.get("RECKON_LLM_TIMEOUT", "8"))
        if not self.base_url:
            raise InvalidInput("base_url: give base_url or set RECKON_LLM_BASE_URL", field="base_url")
        if not self.model:
            raise InvalidInput("model: give model or set RECKON_LLM_MODEL", field="model")

    @classmethod
    def from_env(cls) -> ChatClient | None:
        """A client from ``RECKON_LLM_*``, or ``None`` when no base URL is configured."""
        if not os.environ.get("RECKON_LLM_BASE_URL"):
            return None
        return cls()

    def complete(self, messages: list[dict[str, Any]], *, json_mode: bool = True,
                 temperature: float = 0.0, max_tokens: int | None = None) -> str:
        """Send ``messages``; return the first choice's message content.

        :param json_mode: ask for ``response_format: {"type": "json_object"}``.
        :raises LLMError: on a timeout, a transport error, a non-2xx status or a reply
            without ``choices[0].message.content``.
        """
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": temperature}
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        url = f"{self.base_url}/chat/completions"
        try:
            with httpx.Client(timeout=self.timeout, transport=self.transport) as http:
                r = http.post(url, json=body, headers=headers)
        except httpx.TimeoutException as exc:
            raise LLMError(f"chat completion timed out after {self.timeout} s ({url})", retryable=True) from exc
        except httpx.HTTPError as exc:
            raise LLMError(f"chat completion failed: {type(exc).__name__}: {exc} ({url})", retryable=True) from exc
        if r.status_code == 429 or r.status_code >= 500:
            ra = r.headers.get("Retry-After")
            try:
                retry_after = float(ra) if ra is not None else None
            except ValueError:
                retry_after = None
            raise LLMError(f"chat completion: HTTP {r.status_code} from {url}", retryable=True,
                           status=r.status_code, retry_after=retry_after)
        if r.status_code >= 400:
            raise LLMError(f"chat completion: HTTP {r.status_code} from {url}: {r.text[:300]}",
                           retryable=False, status=r.status_code)
        try:
            data = r.json()
            content = data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"chat completion: not a chat completion reply ({r.text[:200]!r})",
                           retryable=False, status=r.status_code) from exc
        if not isinstance(content, str):
            raise LLMError("chat completion: message content is not text", retryable=False, status=r.status_code)
        return content


def parse_json_object(text: str) -> dict[str, Any]:
    """The JSON object in a model reply (a ```json fence is tolerated).

    :raises LLMError: (retryable: a model may answer well next time) when it is not a
        JSON object.
    """
    t = text.strip()
    if t.startswith("```"):
        t = t.strip("`")
        t = t[4:] if t.lower().startswith("json") else t
    try:
        obj = json.loads(t)
    except ValueError as exc:
        raise LLMError(f"model reply is not JSON: {text[:120]!r}", retryable=True) from exc
    if not isinstance(obj, dict):
        raise LLMError(f"model reply is not a JSON object: {text[:120]!r}", retryable=True)
    return obj
