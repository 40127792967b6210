"""Chromium's DevTools, asked from inside the replica (apps tier); used by getters and setup steps.

The apps tier's Chromium serves DevTools on the replica's own loopback (``127.0.0.1:9222``), never
published. A small Python program of ours (:data:`DEVTOOLS_SCRIPT`, stdlib only) runs inside the
replica as the agent's user, asks DevTools, and prints JSON; the request is one JSON argument.
"""

from __future__ import annotations

import json
from typing import Any

from osgym.errors import TaskError
from osgym.replicas.client import Replica

__all__ = ["DEVTOOLS", "DEVTOOLS_SCRIPT", "NO_BROWSER", "ask"]

DEVTOOLS = "127.0.0.1:9222"
"""Where DevTools listens inside the replica (the apps tier's Chromium flags)."""

# Runs inside the replica: python3 -c DEVTOOLS_SCRIPT '<json request>'. Stdlib only (the image has no
# websocket library): DevTools' JSON list over HTTP, and one short WebSocket session for Runtime.evaluate.
DEVTOOLS_SCRIPT = r"""
import base64, json, os, socket, struct, sys, time, urllib.request
req = json.loads(sys.argv[1])
BASE = "http://%s" % req["devtools"]

def http(path, method="GET", answer=True):
    r = urllib.request.Request(BASE + path, method=method)
    with urllib.request.urlopen(r, timeout=10) as f:
        body = f.read(16 << 20)
    return json.loads(body) if answer else None

def pages():
    try:
        return [t for t in http("/json/list") if t.get("type") == "page"]
    except OSError as exc:
        print(json.dumps({"no_devtools": "no DevTools at %s: %s" % (BASE, exc)}))
        sys.exit(0)

class WS:
    def __init__(self, url):
        host, _, path = url[len("ws://"):].partition("/")
        name, _, port = host.partition(":")
        self.s = socket.create_connection((name, int(port)), timeout=15)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(("GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, host, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.s.recv(4096)
            if not chunk:
                raise OSError("DevTools closed the handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise OSError("DevTools refused the WebSocket: %r" % head[:200])
        self.buf = head.split(b"\r\n\r\n", 1)[1]
        self.n = 0
    def _read(self, k):
        while len(self.buf) < k:
            chunk = self.s.recv(65536)
            if not chunk:
                raise OSError("DevTools closed the WebSocket")
            self.buf += chunk
        out, self.buf = self.buf[:k], self.buf[k:]
        return out
    def call(self, method, **params):
        self.n += 1
        data = json.dumps({"id": self.n, "method": method, "params": params}).encode()
        mask = os.urandom(4)
        n = len(data)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n)
                                if n < 65536 else bytes([0x80 | 127]) + struct.pack(">Q", n))
        self.s.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
        while True:
            message = b""
            while True:
                b0, b1 = self._read(2)
                n = b1 & 0x7F
                if n == 126:
                    n = struct.unpack(">H", self._read(2))[0]
                elif n == 127:
                    n = struct.unpack(">Q", self._read(8))[0]
                if n > 64 << 20:
                    raise OSError("DevTools message too large")
                message += self._read(n)
                if b0 & 0x80:
                    break
            if b0 & 0x0F == 0x8:
                raise OSError("DevTools closed the WebSocket")
            answer = json.loads(message)
            if answer.get("id") == self.n:
                if "error" in answer:
                    raise OSError("DevTools: %s" % answer["error"])
                return answer["result"]

def evaluate(target, expression):
    ws = WS(target["webSocketDebuggerUrl"])
    try:
        res = ws.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
    finally:
        ws.s.close()
    return res.get("result", {}).get("value")

PAGE = "({title: document.title, url: location.href, content: document.documentElement.outerHTML})"
op = req["op"]
if op == "tabs":
    print(json.dumps([{"title": t.get("title", ""), "url": t.get("url", "")} for t in pages()]))
elif op == "active":
    ps = pages()
    print(json.dumps({"url": ps[0]["url"], "title": ps[0].get("title", "")} if ps else None))
elif op in ("html", "query"):
    ps = pages()
    if not ps:
        print(json.dumps(None))
    else:
        expr = PAGE if op == "html" else "(%s)(%s)" % (req["function"], json.dumps(req["spec"]))
        print(json.dumps(evaluate(ps[0], expr)))
elif op == "open":
    pages()  # no browser: say so
    target = http("/json/new?" + urllib.request.quote(req["url"], safe=":/?&=%#"), method="PUT")
    try:
        deadline = time.monotonic() + req["timeout"]
        info = None
        while time.monotonic() < deadline:
            # about:blank is 'complete' before the navigation starts: wait for the page asked for.
            info = evaluate(target, "document.readyState === 'complete' && location.href !== 'about:blank' ? "
                            + PAGE + " : null")
            if info is not None:
                break
            time.sleep(0.25)
        print(json.dumps(info or evaluate(target, PAGE)))
    finally:
        http("/json/close/" + target["id"], answer=False)
elif op == "new_tabs":
    # Chromium may still be starting (a launch step just before): wait for DevTools, within bounds.
    deadline = time.monotonic() + req["wait"]
    while True:
        try:
            before = [t for t in http("/json/list") if t.get("type") == "page"]
            break
        except OSError as exc:
            if time.monotonic() > deadline:
                print(json.dumps({"no_devtools": "no DevTools at %s: %s" % (BASE, exc)}))
                sys.exit(0)
            time.sleep(0.5)
    for url in req["urls"]:
        http("/json/new?" + urllib.request.quote(url, safe=":/?&=%#"), method="PUT")
    if before and req["urls"]:  # as OSWorld: the tab the browser started with goes
        http("/json/close/" + before[-1]["id"], answer=False)
    print(json.dumps(len(req["urls"])))
elif op == "close_tabs":
    norm = lambda u: u.rstrip("/")
    wanted = {norm(u) for u in req["urls"]}
    closed = 0
    for t in pages():
        if norm(t.get("url", "")) in wanted:
            http("/json/close/" + t["id"], answer=False)
            closed += 1
    print(json.dumps(closed))
"""

NO_BROWSER = object()
"""What :func:`ask` returns when nothing answers on :data:`DEVTOOLS` (Chromium is not running)."""


def ask(replica: Replica, request: dict[str, Any], *, where: str, error: type[TaskError], timeout: float = 60) -> Any:
    """Run :data:`DEVTOOLS_SCRIPT` in the replica with ``request`` (``op`` and its fields); its JSON
    answer, or :data:`NO_BROWSER`.

    Raises:
        TaskError: ``error``, naming ``where``, if the program fails or answers no JSON.
    """
    res = replica.execute(["python3", "-c", DEVTOOLS_SCRIPT, json.dumps({"devtools": DEVTOOLS, **request})],
                          timeout=timeout)
    if res.returncode != 0:
        raise error(f"{where}: asking Chromium's DevTools failed: {res.error.strip()[-300:]}")
    try:
        answer = json.loads(res.output)
    except ValueError as exc:
        raise error(f"{where}: Chromium's DevTools answered no JSON: {res.output[:200]!r}") from exc
    if isinstance(answer, dict) and set(answer) == {"no_devtools"}:
        return NO_BROWSER
    return answer
