"""A local OpenAI-compatible server that misbehaves on purpose, for faults a real llama.cpp server cannot produce.

It answers `POST .../chat/completions` (streamed or not, as the request asks) with the fault it is set to:

- ``"stall"``       sends the 200 headers (and, for a streamed request, `tokens` text deltas), then goes silent
                    for `stall_s` seconds: a server or proxy that hangs after it has started to answer.
- ``"drop"``        sends a 200 and part of the body (streamed: `tokens` text deltas; otherwise less JSON than its
                    Content-Length), then closes the connection mid-body: the connection is lost mid-answer.
- ``"rate_limit"``  429 with a `Retry-After: <retry_after>` header.
- ``"error"``       500.
- ``"malformed"``   200 whose body (or, streamed, whose first event) is not valid JSON.
- ``"empty"``       200 with a well-formed completion whose text is empty.
- ``"trickle"``     200, then a keep-alive byte every `trickle_s` seconds and never a reply (streamed: an SSE
                    comment line; otherwise a space inside the JSON body): every read gets data, so only a
                    timeout on the whole reply ends it.

Error and malformed bodies quote the request's Authorization header back (as some providers echo a rejected
key), so a test can tell whether anything passes a server's reply text on to users or logs. Every request is
recorded in `requests` (path, headers, parsed JSON body). Only stdlib; bound to 127.0.0.1 on a free port.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAULTS = ("stall", "drop", "rate_limit", "error", "malformed", "empty", "trickle")
TOKENS = ["CoRF ", "reports ", "a ", "speedup ", "of ", "up ", "to ", "5.9x ", "[1]."]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # chunked bodies, so a cut-off stream is detectable as such
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
        pass

    # --- plumbing ---------------------------------------------------------------------------------------

    def _send_json(self, status: int, payload: object, extra: dict[str, str] | None = None) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _start_chunked(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _event(self, payload: object | str) -> None:
        data = payload if isinstance(payload, str) else json.dumps(payload)
        self._chunk(f"data: {data}\n\n".encode())

    def _end_chunked(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _error_body(self, message: str, kind: str) -> dict:
        echoed = self.headers.get("Authorization", "")
        return {"error": {"message": f"{message} (request authorization: {echoed})", "type": kind, "code": None}}

    # --- requests ---------------------------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [{"id": "fault", "object": "model"}]})
        else:
            self._send_json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        srv = self.server
        with srv.lock:
            srv.requests.append({"path": self.path, "headers": dict(self.headers.items()), "body": body})
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, self._error_body("not found", "invalid_request_error"))
            return
        stream = bool(isinstance(body, dict) and body.get("stream"))
        getattr(self, "_fault_" + srv.owner.fault)(stream)

    def _fault_stall(self, stream: bool) -> None:
        owner = self.server.owner
        if stream:
            self._start_chunked("text/event-stream")
            for tok in TOKENS[:owner.tokens]:
                self._event(_delta(tok))
        else:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "4096")
            self.end_headers()
            self.wfile.flush()
        owner.closing.wait(owner.stall_s)
        self.close_connection = True

    def _fault_trickle(self, stream: bool) -> None:
        owner = self.server.owner
        if stream:
            self._start_chunked("text/event-stream")
        else:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(b"{")
            self.wfile.flush()
        deadline = time.monotonic() + owner.stall_s
        try:
            while time.monotonic() < deadline and not owner.closing.wait(owner.trickle_s):
                if stream:
                    self._chunk(b": keep-alive\n\n")
                else:
                    self.wfile.write(b" ")
                    self.wfile.flush()
        except OSError:  # the client gave up: what it should do
            pass
        self.close_connection = True

    def _fault_drop(self, stream: bool) -> None:
        owner = self.server.owner
        if not stream:  # a non-streamed reply cut off: the body is shorter than announced
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "4096")
            self.end_headers()
            self.wfile.write(b'{"id": "chatcmpl-fault", "choices": [{"index": 0, "mess')
        else:
            self._start_chunked("text/event-stream")
            for tok in TOKENS[:owner.tokens]:
                self._event(_delta(tok))
                time.sleep(0.02)
        self.wfile.flush()
        self.close_connection = True  # the handler returns without the final chunk: the peer sees EOF mid-body

    def _fault_rate_limit(self, stream: bool) -> None:
        owner = self.server.owner
        self._send_json(429, self._error_body("Rate limit reached for requests", "rate_limit_error"),
                        {"Retry-After": str(owner.retry_after)})

    def _fault_error(self, stream: bool) -> None:
        self._send_json(500, self._error_body("The server had an error while processing your request",
                                              "server_error"))

    def _fault_malformed(self, stream: bool) -> None:
        echoed = json.dumps(self.headers.get("Authorization", ""))  # a proxy's broken page quoting the request
        if stream:
            self._start_chunked("text/event-stream")
            self._event('{"id": "chatcmpl-fault", "auth": ' + echoed + ', "choices": [{"delta": {"content": "Co')
            self._event("[DONE]")
            self._end_chunked()
        else:
            body = ('{"id": "chatcmpl-fault", "auth": ' + echoed + ', "choices": [{"message": ').encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def _fault_empty(self, stream: bool) -> None:
        if stream:
            self._start_chunked("text/event-stream")
            self._event(_delta("", role="assistant"))
            self._event(_delta(None, finish="stop"))
            self._event("[DONE]")
            self._end_chunked()
        else:
            self._send_json(200, {"id": "chatcmpl-fault", "object": "chat.completion", "created": int(time.time()),
                                  "model": "fault",
                                  "choices": [{"index": 0, "message": {"role": "assistant", "content": ""},
                                               "finish_reason": "stop"}],
                                  "usage": {"prompt_tokens": 1, "completion_tokens": 0, "total_tokens": 1}})


def _delta(content: str | None, role: str | None = None, finish: str | None = None) -> dict:
    delta: dict[str, str] = {}
    if role:
        delta["role"] = role
    if content is not None:
        delta["content"] = content
    return {"id": "chatcmpl-fault", "object": "chat.completion.chunk", "created": int(time.time()), "model": "fault",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, owner: FaultServer) -> None:
        self.owner = owner
        self.lock = threading.Lock()
        self.requests: list[dict] = []
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):  # a client hanging up is expected
            super().handle_error(request, client_address)


class FaultServer:
    """Start with `with FaultServer("error") as fs:` (or start()/close()); `fs.url` is the /v1 base URL."""

    def __init__(self, fault: str = "error", *, stall_s: float = 30.0, retry_after: int = 7, tokens: int = 4,
                 trickle_s: float = 5.0) -> None:
        self.fault = fault
        self.stall_s = stall_s
        self.trickle_s = trickle_s
        self.retry_after = retry_after
        self.tokens = tokens
        self.closing = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def fault(self) -> str:
        return self._fault

    @fault.setter
    def fault(self, value: str) -> None:
        if value not in FAULTS:
            raise ValueError(f"unknown fault {value!r}; one of {FAULTS}")
        self._fault = value

    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[dict]:
        assert self._server is not None, "not started"
        with self._server.lock:
            return list(self._server.requests)

    def start(self) -> FaultServer:
        self._server = _Server(self)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name=f"fault-server-{self.port}", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self.closing.set()  # releases stalled handlers at once
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
