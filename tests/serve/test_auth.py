"""Access control: tokens, tokenless loopback only by the operator's choice and only on 127.0.0.1."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import docker
import httpx
import pytest
from serve_support import TOKEN, infeasible_task, running

from osgym.errors import ConfigError
from osgym.serving.auth import ANONYMOUS, Access, Caller, Forbidden, Unauthorized, fingerprint, peer_uid

GOOD = "g" * 32


def test_tokens_name_their_clients_and_nothing_else_gets_in() -> None:
    access = Access.with_tokens([GOOD, "h" * 32])
    assert access.owner(f"Bearer {GOOD}", Caller("203.0.113.9")) == fingerprint(GOOD) != fingerprint("h" * 32)
    for header in (None, "", f"Basic {GOOD}", "Bearer ", f"Bearer {GOOD}x"):
        with pytest.raises(Unauthorized):
            access.owner(header, Caller("127.0.0.1"))
    assert GOOD not in repr(access)


def test_tokenless_access_is_loopback_only() -> None:
    """The peer is this process's own socket pair on loopback: the kernel's table names its uid."""
    access = Access.with_tokens([], open_loopback=True)
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        with socket.socket(family) as server, socket.socket(family) as client:
            server.bind((host, 0))
            server.listen(1)
            client.connect(server.getsockname()[:2])
            port = client.getsockname()[1]
            server_addr = server.getsockname()[:2]
            me = Caller(host, port, f"{'[::1]' if ':' in host else host}:{server_addr[1]}", None, server_addr)
            assert peer_uid(me) == os.geteuid()
            assert access.owner(None, me) == ANONYMOUS
            assert access.owner(None, Caller(host, port, "localhost", "http://localhost", server_addr)) == ANONYMOUS
            # a page that reached the server through DNS rebinding names its own domain; another site's page
            # sends its Origin
            for bad in (Caller(host, port, "evil.example:8000", None, server_addr),
                        Caller(host, port, None, None, server_addr),
                        Caller(host, port, me.host_header, "http://evil.example", server_addr),
                        Caller(host, port, me.host_header, "null", server_addr),
                        Caller(host, port + 1 if port < 65535 else port - 1, me.host_header, None, server_addr)):
                with pytest.raises(Forbidden):
                    access.owner(None, bad)
    for host in ("10.0.0.2", None, "not-an-ip"):
        with pytest.raises(Forbidden):
            access.owner(None, Caller(host, 1, "127.0.0.1"))
    with pytest.raises(ConfigError, match="127.0.0.1"):
        Access.with_tokens([], open_loopback=True, host="0.0.0.0")
    with pytest.raises(ConfigError, match="at least one token"):
        Access.with_tokens([])
    with pytest.raises(ConfigError, match="at least 16"):
        Access.with_tokens(["short"])


@pytest.mark.docker
def test_a_tokenless_server_serves_osgyms_client_on_loopback(image: str, docker_client: docker.DockerClient,
                                                            tmp_path: Path) -> None:
    with running(image, docker_client, tmp_path, replicas=1, standby=0, tokens=[],
                 tokenless_loopback=True) as (s, url):
        r = httpx.post(f"{url}/reset", json={"task_config": infeasible_task(), "timeout": 60}, timeout=120)
        assert r.status_code == 200, r.text
        assert httpx.post(f"{url}/step", json={"vm_id": r.json()["vm_id"], "action": "call_user()"},
                          timeout=120).json()["reward"] == 1.0
        assert s.printed_token is None

        # what --tokenless-loopback used to let in: a rebinding page, another site's page, another local user
        assert httpx.get(f"{url}/v1/sessions", headers={"Host": "evil.example"}).status_code == 403
        assert httpx.get(f"{url}/v1/sessions", headers={"Origin": "http://evil.example"}).status_code == 403
        other_user = subprocess.run(
            ["/usr/bin/python3", "-c", OTHER_USER, url], user=65534, group=65534, extra_groups=[],
            capture_output=True, text=True, timeout=60, cwd="/")
        assert other_user.returncode == 0, other_user.stderr
        got = json.loads(other_user.stdout)
        assert got["status"] == 403 and "uid 65534" in got["body"], got
        assert httpx.get(f"{url}/v1/sessions").status_code == 200  # this user, plainly


OTHER_USER = """
import http.client, json, sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
c.request("GET", "/v1/sessions")
r = c.getresponse()
print(json.dumps({"status": r.status, "body": r.read().decode()}))
"""


@pytest.mark.docker
def test_a_body_larger_than_the_cap_is_refused_whatever_its_headers_say(image: str, docker_client: docker.DockerClient,
                                                                        tmp_path: Path) -> None:
    """Content-Length and chunked together: h11 reads the chunks; the server stops at the cap (413) instead of
    buffering them all."""
    with running(image, docker_client, tmp_path, replicas=1, standby=0) as (_s, url):
        host, port = url.removeprefix("http://").split(":")
        chunk = b"x" * 2**20
        with socket.create_connection((host, int(port)), timeout=60) as conn:
            conn.sendall(f"POST /v1/sessions HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {TOKEN}\r\n"
                         "Content-Type: application/json\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n"
                         .encode())
            sent = 0
            try:
                while sent < 64 * 2**20:  # bounded: eight times the cap
                    conn.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                    sent += len(chunk)
                conn.sendall(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server answered and closed: what it read stopped at the cap
            answer = b""
            while b"\r\n\r\n" not in answer:
                data = conn.recv(4096)
                if not data:
                    break
                answer += data
        assert answer.startswith(b"HTTP/1.1 413") and sent < 64 * 2**20, (sent, answer[:300])


def test_tokens_come_from_the_settings_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    from osgym.settings import settings

    monkeypatch.setenv("OSGYM_SERVE_TOKENS", f"{GOOD}, {'h' * 32}")
    tokens = settings().serve_tokens
    assert [t.get_secret_value() for t in tokens] == [GOOD, "h" * 32]
    assert GOOD not in repr(settings())
