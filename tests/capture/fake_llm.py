"""A real HTTP server on 127.0.0.1 speaking the OpenAI chat-completions protocol with
canned replies, for the model extractor and judge tests (issue 11). Bounded: it serves
only the replies it is given (then HTTP 500) and stops with the test."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def completion(content: str) -> dict[str, Any]:
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": "fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}


class FakeLLM:
    """``with FakeLLM() as llm: llm.reply(...)``; ``llm.url`` is the base URL (``/v1``).

    Replies, served in order: ``reply(content)`` a completion with that message content;
    ``status(code, retry_after=None)`` an error status; ``hang(seconds)`` wait, then a
    500 (a client timeout); ``block()`` wait until :meth:`release` (a job killed mid-call).
    ``requests`` holds every JSON body received; ``arrived`` is set on each request.
    """

    def __init__(self) -> None:
        self.replies: deque[tuple[str, Any]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.arrived = threading.Event()
        self._release = threading.Event()
        self._lock = threading.Lock()
        self.default: tuple[str, Any] | None = None
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(n) or b"{}")
                with outer._lock:
                    outer.requests.append(body)
                    outer.headers.append(dict(self.headers))
                    kind, arg = outer.replies.popleft() if outer.replies else (outer.default or ("status", 500))
                outer.arrived.set()
                if kind == "block":
                    outer._release.wait(arg)
                    kind, arg = ("status", 500)
                if kind == "hang":
                    time.sleep(arg)
                    kind, arg = ("status", 500)
                if kind == "reply":
                    data = json.dumps(completion(arg)).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                code, retry_after = arg if isinstance(arg, tuple) else (arg, None)
                data = json.dumps({"error": {"message": f"status {code}"}}).encode()
                self.send_response(code)
                if retry_after is not None:
                    self.send_header("Retry-After", str(retry_after))
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except BrokenPipeError:
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def reply(self, content: str | dict[str, Any]) -> FakeLLM:
        self.replies.append(("reply", content if isinstance(content, str) else json.dumps(content)))
        return self

    def status(self, code: int, retry_after: float | None = None) -> FakeLLM:
        self.replies.append(("status", (code, retry_after)))
        return self

    def hang(self, seconds: float) -> FakeLLM:
        self.replies.append(("hang", seconds))
        return self

    def block(self, seconds: float = 60.0) -> FakeLLM:
        self.replies.append(("block", seconds))
        return self

    def release(self) -> None:
        self._release.set()

    def __enter__(self) -> FakeLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._release.set()
        self.server.shutdown()
        self.server.server_close()
