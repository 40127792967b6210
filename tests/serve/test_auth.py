"""Access control: tokens, tokenless loopback only by the operator's choice and only on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import docker
import httpx
import pytest
from serve_support import infeasible_task, running

from osgym.errors import ConfigError
from osgym.serving.auth import ANONYMOUS, Access, Forbidden, Unauthorized, fingerprint

GOOD = "g" * 32


def test_tokens_name_their_clients_and_nothing_else_gets_in() -> None:
    access = Access.with_tokens([GOOD, "h" * 32])
    assert access.owner(f"Bearer {GOOD}", "203.0.113.9") == fingerprint(GOOD) != fingerprint("h" * 32)
    for header in (None, "", f"Basic {GOOD}", "Bearer ", f"Bearer {GOOD}x"):
        with pytest.raises(Unauthorized):
            access.owner(header, "127.0.0.1")
    assert GOOD not in repr(access)


def test_tokenless_access_is_loopback_only() -> None:
    access = Access.with_tokens([], open_loopback=True)
    assert access.owner(None, "127.0.0.1") == ANONYMOUS
    assert access.owner(None, "::1") == ANONYMOUS
    for host in ("10.0.0.2", None, "not-an-ip"):
        with pytest.raises(Forbidden):
            access.owner(None, host)
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


def test_tokens_come_from_the_settings_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    from osgym.settings import settings

    monkeypatch.setenv("OSGYM_SERVE_TOKENS", f"{GOOD}, {'h' * 32}")
    tokens = settings().serve_tokens
    assert [t.get_secret_value() for t in tokens] == [GOOD, "h" * 32]
    assert GOOD not in repr(settings())
