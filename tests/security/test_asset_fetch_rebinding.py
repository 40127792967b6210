"""``osgym tasks fetch-assets`` connects only to addresses it vetted: DNS rebinding cannot reach the host.

Task files are untrusted, so a URL's host must resolve to public addresses only (unless the operator
passes ``--allow-private-hosts``). An attacker's name can answer a public address to the check and
127.0.0.1 (or the cloud metadata address) to the connection that follows. The world these tests run in
(``tests/security/rebinding_world.py``) is a private network namespace with a real DNS server whose names
do exactly that through the system resolver, a public-looking HTTP(S) server and listeners on the
namespace's 127.0.0.1 that must see no connection. Everything runs in one child process started with
``unshare --net --mount``: nothing leaves the namespace, and it all ends with the process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.security.rebinding_world import LOOPBACK_BODY, PUBLIC_BODY

ROOT = Path(__file__).resolve().parents[2]

# The world's DNS server counts queries per name for the whole run: a rebinding name serves one scenario.
SCENARIOS: list[dict[str, Any]] = [
    {"name": "rebind", "urls": ["http://assets.rebind.test/file.bin"]},
    {"name": "redirects", "urls": ["http://hop.rebind.test/hop"]},
    {"name": "rebound-between-hops", "urls": ["http://redirect.rebind.test/hop-rebound"]},
    {"name": "to-loopback", "urls": ["http://redirect.rebind.test/to-loopback"]},
    {"name": "both", "urls": ["http://both.rebind.test/file.bin"]},
    {"name": "private-refused", "urls": ["http://loopback.rebind.test/file.bin"]},
    {"name": "private-allowed", "urls": ["http://loopback.rebind.test/file.bin"], "allow_private_hosts": True},
    {"name": "tls", "urls": ["https://tls.rebind.test/file.bin"]},
    {"name": "wrong-cert", "urls": ["https://wrongcert.rebind.test/file.bin"]},
    {"name": "cookies", "urls": ["http://cookie.rebind.test/cookie", "http://neighbour.rebind.test/file.bin"]},
]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every scenario's outcome, from one run of the rebinding world."""
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("openssl") is None:
        pytest.fail("these tests need root, unshare (util-linux) and openssl")
    work = tmp_path_factory.mktemp("rebinding")
    proc = subprocess.run(["unshare", "--net", "--mount", sys.executable, "-m", "tests.security.rebinding_world",
                           str(work), json.dumps(SCENARIOS)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def _by(outcome: dict[str, Any], server: str, kind: str) -> list[dict[str, Any]]:
    return [e for e in outcome["events"] if e["server"] == server and e["kind"] == kind]


def _loopback(outcome: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in outcome["events"] if e["server"].startswith("loopback")]


def test_a_rebinding_name_is_resolved_once_and_fetched_from_the_vetted_address(world: dict[str, Any]) -> None:
    got = world["rebind"]
    assert [r["status"] for r in got["results"]] == ["fetched"], got["results"]
    assert got["cached"] == {"http://assets.rebind.test/file.bin": PUBLIC_BODY.decode()}
    assert _loopback(got) == []  # not one connection reached the host's loopback
    assert [(e["path"], e["host"]) for e in _by(got, "public-http", "request")] == [("/file.bin",
                                                                                      "assets.rebind.test")]
    assert [q["name"] for q in got["queries"]] == ["assets.rebind.test"]


def test_every_redirect_hop_is_resolved_once_vetted_and_keeps_its_host_name(world: dict[str, Any]) -> None:
    got = world["redirects"]
    assert [r["status"] for r in got["results"]] == ["fetched"], got["results"]
    assert got["cached"] == {"http://hop.rebind.test/hop": PUBLIC_BODY.decode()}
    assert _loopback(got) == []
    # /hop on a rebinding name sends to another name, whose /again redirects relative to itself
    assert [(e["path"], e["host"]) for e in _by(got, "public-http", "request")] == [
        ("/hop", "hop.rebind.test"), ("/again", "cdn.rebind.test"), ("/file.bin", "cdn.rebind.test")]
    assert [q["name"] for q in got["queries"]] == ["hop.rebind.test", "cdn.rebind.test", "cdn.rebind.test"]


def test_a_name_rebinding_between_two_hops_is_refused_at_the_second(world: dict[str, Any]) -> None:
    got = world["rebound-between-hops"]
    assert [r["status"] for r in got["results"]] == ["failed"]
    assert "'rebound.rebind.test' resolves to the non-public address 127.0.0.1" in got["results"][0]["reason"]
    assert got["cached"] == {} and _loopback(got) == []
    assert [(e["path"], e["host"]) for e in _by(got, "public-http", "request")] == [
        ("/hop-rebound", "redirect.rebind.test"), ("/again", "rebound.rebind.test")]
    assert [q["name"] for q in got["queries"]] == ["redirect.rebind.test", "rebound.rebind.test", "rebound.rebind.test"]


def test_a_redirect_to_loopback_is_refused_before_connecting(world: dict[str, Any]) -> None:
    got = world["to-loopback"]
    assert [r["status"] for r in got["results"]] == ["failed"]
    assert "non-public address 127.0.0.1" in got["results"][0]["reason"]
    assert got["cached"] == {} and _loopback(got) == []


def test_a_name_with_any_non_public_address_is_refused(world: dict[str, Any]) -> None:
    got = world["both"]
    assert [r["status"] for r in got["results"]] == ["failed"]
    assert "'both.rebind.test' resolves to the non-public address 127.0.0.1" in got["results"][0]["reason"]
    assert got["cached"] == {} and got["events"] == []


def test_allow_private_hosts_still_lifts_the_check(world: dict[str, Any]) -> None:
    refused, allowed = world["private-refused"], world["private-allowed"]
    assert [r["status"] for r in refused["results"]] == ["failed"] and refused["events"] == []
    assert "--allow-private-hosts" in refused["results"][0]["reason"]
    assert [r["status"] for r in allowed["results"]] == ["fetched"], allowed["results"]
    assert allowed["cached"] == {"http://loopback.rebind.test/file.bin": LOOPBACK_BODY.decode()}
    assert [e["host"] for e in _by(allowed, "loopback-http", "request")] == ["loopback.rebind.test"]


def test_https_to_the_vetted_address_keeps_the_server_name_and_verifies_it(world: dict[str, Any]) -> None:
    got = world["tls"]
    assert [r["status"] for r in got["results"]] == ["fetched"], got["results"]
    assert got["cached"] == {"https://tls.rebind.test/file.bin": PUBLIC_BODY.decode()}
    assert _loopback(got) == []
    assert [e["name"] for e in _by(got, "public-https", "sni")] == ["tls.rebind.test"]
    assert [e["host"] for e in _by(got, "public-https", "request")] == ["tls.rebind.test"]


def test_a_certificate_for_another_name_is_refused(world: dict[str, Any]) -> None:
    got = world["wrong-cert"]
    assert [r["status"] for r in got["results"]] == ["failed"]
    assert "CERTIFICATE_VERIFY_FAILED" in got["results"][0]["reason"], got["results"]
    assert [e["name"] for e in _by(got, "public-https", "sni")] == ["wrongcert.rebind.test"]
    assert _by(got, "public-https", "request") == [] and got["cached"] == {}


def test_cookies_follow_the_name_never_the_address(world: dict[str, Any]) -> None:
    got = world["cookies"]
    assert [r["status"] for r in got["results"]] == ["fetched", "fetched"], got["results"]
    assert [(e["path"], e["host"], e["cookie"]) for e in _by(got, "public-http", "request")] == [
        ("/cookie", "cookie.rebind.test", None), ("/file.bin", "cookie.rebind.test", "session=for-cookie-only"),
        ("/file.bin", "neighbour.rebind.test", None)]
