"""A private network where names rebind, for ``tests/security/test_asset_fetch_rebinding.py``.

Run as ``unshare --net --mount python3 -m tests.security.rebinding_world WORKDIR SCENARIOS_JSON``. The new
network namespace has only its loopback; the world adds ``PUBLIC`` (an address ``ipaddress`` counts as
global) to it, answers DNS on 127.0.0.1:53 and binds a resolv.conf naming that server over
``/etc/resolv.conf`` in its own mount namespace, so the system resolver (glibc's ``getaddrinfo``, which
osgym and httpx both call) asks this world. Rebinding names answer ``PUBLIC`` to their first query and
127.0.0.1 to every later one, with TTL 0, as an attacker's DNS server would. HTTP and HTTPS servers on
``PUBLIC`` and listeners on 127.0.0.1 log every connection, request and TLS server name.

Each scenario runs the real ``fetch_assets`` with the system resolver on one task file naming its URLs; the
world prints one JSON line: per scenario, the report, the bodies that reached the cache, the servers' logs
and the DNS queries. Nothing leaves the namespace, and every server and mount ends with the process.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import struct
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

PUBLIC = "192.0.0.9"  # globally reachable per IANA's registry and to ipaddress; here only on this loopback
LOOPBACK = "127.0.0.1"
PUBLIC_BODY = b"the body served by the public address the fetch vetted"
LOOPBACK_BODY = b"the body of a service on the host's loopback"

ZONE: dict[str, list[list[str]]] = {
    # the n-th A query of a name gets entry min(n, last); later entries are the rebinding
    "assets.rebind.test": [[PUBLIC], [LOOPBACK]],
    "hop.rebind.test": [[PUBLIC], [LOOPBACK]],
    "cdn.rebind.test": [[PUBLIC]],
    "rebound.rebind.test": [[PUBLIC], [LOOPBACK]],
    "tls.rebind.test": [[PUBLIC], [LOOPBACK]],
    "redirect.rebind.test": [[PUBLIC]],
    "both.rebind.test": [[PUBLIC, LOOPBACK]],
    "loopback.rebind.test": [[LOOPBACK]],
    "wrongcert.rebind.test": [[PUBLIC]],
    "cookie.rebind.test": [[PUBLIC]],
    "neighbour.rebind.test": [[PUBLIC]],  # another name on the same address
}
CERT_NAME = "tls.rebind.test"  # the only name the HTTPS server's certificate holds
REDIRECTS = {"/hop": "http://cdn.rebind.test/again", "/hop-rebound": "http://rebound.rebind.test/again",
             "/again": "/file.bin", "/to-loopback": "http://127.0.0.1/file.bin"}

_lock = threading.Lock()
events: list[dict[str, Any]] = []
queries: list[dict[str, Any]] = []


def _log(into: list[dict[str, Any]], **event: Any) -> None:
    with _lock:
        into.append(event)


class _Handler(BaseHTTPRequestHandler):
    server: _Logged

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        _log(events, server=self.server.name, kind="request", path=self.path, host=self.headers.get("Host"),
             cookie=self.headers.get("Cookie"))
        if self.path == "/cookie":
            self.send_response(302)
            self.send_header("Set-Cookie", "session=for-cookie-only; Path=/")
            self.send_header("Location", "/file.bin")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path in REDIRECTS:
            self.send_response(302)
            self.send_header("Location", REDIRECTS[self.path])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = self.server.body
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class _Logged(ThreadingHTTPServer):
    """An HTTP server that logs every connection it accepts (even one that never sends a byte)."""

    daemon_threads = True

    def __init__(self, name: str, addr: str, port: int, body: bytes) -> None:
        super().__init__((addr, port), _Handler)
        self.name, self.body = name, body

    def verify_request(self, request: Any, client_address: Any) -> bool:
        _log(events, server=self.name, kind="connection")
        return True


def _dns_reply(query: bytes, counts: dict[str, int]) -> bytes:
    """The answer to one DNS query (RFC 1035 wire format): A records from ZONE, no AAAA, NXDOMAIN elsewhere."""
    labels, i = [], 12
    while query[i]:
        labels.append(query[i + 1:i + 1 + query[i]].decode("ascii").lower())
        i += 1 + query[i]
    qtype = struct.unpack("!H", query[i + 1:i + 3])[0]
    question, name = query[12:i + 5], ".".join(labels)
    answers: list[str] = []
    if qtype == 1 and name in ZONE:
        n = counts.get(name, 0)
        counts[name] = n + 1
        answers = ZONE[name][min(n, len(ZONE[name]) - 1)]
        _log(queries, name=name, answer=answers)
    rcode = 0 if name in ZONE else 3
    flags = 0x8180 | (struct.unpack("!H", query[2:4])[0] & 0x0100) | rcode
    head = query[:2] + struct.pack("!HHHHH", flags, 1, len(answers), 0, 0)
    records = b"".join(struct.pack("!HHHIH", 0xC00C, 1, 1, 0, 4) + socket.inet_aton(a) for a in answers)
    return head + question + records


def _serve_dns(sock: socket.socket, stop: threading.Event) -> None:
    counts: dict[str, int] = {}
    sock.settimeout(0.2)
    while not stop.is_set():
        try:
            data, peer = sock.recvfrom(4096)
        except TimeoutError:
            continue
        sock.sendto(_dns_reply(data, counts), peer)


def _sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=30)


def _certificate(work: Path) -> tuple[Path, Path, Path]:
    """A test CA (the operator's SSL_CERT_FILE) and a leaf for CERT_NAME signed by it: (ca, leaf, key)."""
    ca_key, ca, key, csr, leaf, ext = (work / n for n in ("ca.key", "ca.pem", "leaf.key", "leaf.csr", "leaf.pem",
                                                          "leaf.ext"))
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _sh("openssl", "req", "-x509", *ec, "-keyout", str(ca_key), "-out", str(ca), "-days", "2",
        "-subj", "/CN=osgym rebinding test CA")
    _sh("openssl", "req", *ec, "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={CERT_NAME}")
    ext.write_text(f"subjectAltName=DNS:{CERT_NAME}\n")
    _sh("openssl", "x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
        "-out", str(leaf), "-days", "2", "-extfile", str(ext))
    return ca, leaf, key


def _start(server: _Logged) -> None:
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()


def _build(work: Path) -> threading.Event:
    """The namespace's addresses, resolver, DNS server and HTTP(S) servers; the event stops the DNS loop."""
    _sh("ip", "link", "set", "lo", "up")
    _sh("ip", "addr", "add", f"{PUBLIC}/32", "dev", "lo")
    resolv = work / "resolv.conf"
    resolv.write_text(f"nameserver {LOOPBACK}\noptions attempts:1 timeout:2\n")
    _sh("mount", "--bind", str(resolv), "/etc/resolv.conf")
    stop = threading.Event()
    dns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    dns.bind((LOOPBACK, 53))
    threading.Thread(target=_serve_dns, args=(dns, stop), daemon=True).start()
    ca, leaf, key = _certificate(work)
    os.environ["SSL_CERT_FILE"] = str(ca)
    tls = _Logged("public-https", PUBLIC, 443, PUBLIC_BODY)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(leaf, key)
    context.sni_callback = lambda _sock, name, _ctx: _log(events, server="public-https", kind="sni", name=name)
    tls.socket = context.wrap_socket(tls.socket, server_side=True)
    for server in (_Logged("public-http", PUBLIC, 80, PUBLIC_BODY), tls,
                   _Logged("loopback-http", LOOPBACK, 80, LOOPBACK_BODY),
                   _Logged("loopback-443", LOOPBACK, 443, LOOPBACK_BODY)):
        _start(server)
    return stop


def _run(work: Path, scenario: dict[str, Any]) -> dict[str, Any]:
    from osgym.errors import SetupError
    from osgym.tasks.asset_fetch import fetch_assets
    from osgym.tasks.assets import AssetCache

    root, cache_dir = work / scenario["name"] / "tasks", work / scenario["name"] / "cache"
    root.mkdir(parents=True)
    files = [{"url": u, "path": f"/home/user/f{i}"} for i, u in enumerate(scenario["urls"])]
    task = {"id": scenario["name"], "instruction": "x",
            "config": [{"type": "download", "parameters": {"files": files}}]}
    (root / "task.json").write_text(json.dumps(task))
    with _lock:
        events.clear()
        queries.clear()
    cache = AssetCache(cache_dir)
    report = fetch_assets(root, cache, attempts=1, backoff_s=0, timeout_s=10,
                          allow_private_hosts=scenario.get("allow_private_hosts", False))
    cached = {url: cache.read(url, where="test", error=SetupError).decode("latin-1") for url in cache.manifest()}
    with _lock:
        return {"results": [{"url": r.url, "status": r.status, "reason": r.reason} for r in report.results],
                "cached": cached, "events": list(events), "queries": list(queries)}


def main(work: Path, scenarios: list[dict[str, Any]]) -> None:
    stop = _build(work)
    try:
        out = {s["name"]: _run(work, s) for s in scenarios}
    finally:
        stop.set()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), json.loads(sys.argv[2]))
