"""A real HTTP server speaking OpenAI's chat-completions protocol, answering from a script.

No language model can run in the tests, so this stands in for Ollama/vLLM/llama.cpp: a real socket, real
HTTP, the real request and response shapes; only the model's answer is scripted. Each request takes the next
step of the script (the last step repeats): an answer, a 500, a delay (to time the client out), or text
that is not JSON.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Step:
    """One scripted reply: an HTTP status, the assistant's text, and a delay before answering."""

    content: str = ""
    status: int = 200
    delay: float = 0.0


def facts_answer(*facts: dict[str, Any]) -> Step:
    """A step answering with these facts as the model's JSON."""
    return Step(json.dumps({"facts": list(facts)}, ensure_ascii=False))


@dataclass
class ChatEndpoint:
    """The scripted server's state: the script, and every request body received."""

    script: list[Step] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def play(self, *steps: Step) -> None:
        """Replace the script and forget earlier requests."""
        with self.lock:
            self.script = list(steps)
            self.requests.clear()

    def next_step(self, body: dict[str, Any]) -> Step:
        """Record a request and take the next step."""
        with self.lock:
            self.requests.append(body)
            if len(self.script) > 1:
                return self.script.pop(0)
            return self.script[0] if self.script else Step(status=503, content="no script")


def _handler(state: ChatEndpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

        def do_POST(self) -> None:
            """Answer /v1/chat/completions from the script."""
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            step = state.next_step(body)
            time.sleep(step.delay)
            if step.status != 200:
                payload = json.dumps({"error": {"message": step.content}}).encode()
            else:
                payload = json.dumps({
                    "id": "chatcmpl-script", "object": "chat.completion", "model": body.get("model", ""),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": step.content}}],
                }, ensure_ascii=False).encode()
            try:
                self.send_response(step.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                pass

    return Handler


def serve_chat() -> Iterator[ChatEndpoint]:
    """Run the scripted endpoint on a free port in a thread for the duration of the generator."""
    state = ChatEndpoint()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
