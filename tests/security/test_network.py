"""Networked replicas are fenced in: no neighbour, no private, link-local or host address; public egress stays.

Every packet stays on this machine. The "outside" is a network namespace the test creates (``ip netns``
plus a veth pair, routed from the host) holding decoy listeners on a private address (10.213.N.2), a
link-local one (169.254.N.2, never .169.254) and a public-looking one (198.51.100.N, TEST-NET-2, routed
into the namespace by a /32 route so it never follows the default route). Further decoys listen on the
replica network's gateway address and on every host address (the host's services). Without osgym's
rules a replica on Docker's default bridge reaches all of them; with them it reaches only the
public-looking one. The namespace, veths, routes and the test's own networks and rules are removed at
the end.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import shutil
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import docker
import pytest

from osgym.errors import ConfigError
from osgym.replicas.pool import ReplicaPool

PROBE = r"""
import json, socket, sys
from concurrent.futures import ThreadPoolExecutor
targets = json.loads(sys.argv[1])
def probe(target):
    host, port = target
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        addr = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)[0][4]
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.settimeout(3)
            s.connect(addr)
            return s.recv(100).decode("utf-8", "replace").strip() or "connected"
    except OSError as exc:
        return f"unreachable: {type(exc).__name__}: {exc}"
with ThreadPoolExecutor(len(targets)) as ex:
    print(json.dumps(dict(zip([f"{h}:{p}" for h, p in targets], ex.map(probe, targets)))))
"""

SERVE = r"""
import socket, sys, threading, time
port, addrs = int(sys.argv[1]), sys.argv[2:]
def listening(addr):
    s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(16)
    return addr, s
def serve(addr, s):
    while True:
        conn, _ = s.accept()
        with conn:
            conn.sendall(f"decoy {addr}\n".encode())
# every address listens before "ready" (CI, 2026-12-06: a thread that had not bound yet refused the host)
for a, s in [listening(a) for a in addrs]:
    threading.Thread(target=serve, args=(a, s), daemon=True).start()
print("ready", flush=True)
time.sleep(600)  # a bounded life even if the test dies without stopping it
"""

DECOY_PORT = 8765


def _sh(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True, timeout=30).stdout


@dataclass
class Outside:
    """The namespace standing in for the world: its decoy addresses and the listener serving them."""

    ns: str
    host_if: str
    host_addr: str
    private: str
    link_local: str
    public: str
    server: subprocess.Popen[str] | None = None


def _wait_ready(proc: subprocess.Popen[str], timeout: float = 10) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(max(0.0, deadline - time.monotonic()))
    assert line and line[0].strip() == "ready", f"decoy server did not start: {line}"


@pytest.fixture(scope="module")
def netsec_outside() -> Iterator[Outside]:
    """A namespace with decoys on a private, a link-local and a public-looking address, routed from the host."""
    if shutil.which("ip") is None:
        pytest.fail("these tests need iproute2 (ip netns, veth)")
    tag = uuid.uuid4().hex[:5]
    # a number whose three decoy routes are all free: a run killed before its teardown leaves its namespace and
    # routes behind (seen: one from 09:46 met by a later run that drew the same number)
    routed = _sh("ip", "-4", "route", "show")
    free = [n for n in range(100, 251)
            if not re.search(rf"^(10\.213\.{n}\.0/24|169\.254\.{n}\.2|198\.51\.100\.{n}) ", routed, re.M)]
    assert free, f"every decoy subnet 10.213.100-250.0/24 is routed here already: {routed}"
    n = random.choice(free)
    out = Outside(ns=f"osgymt-{tag}", host_if=f"ogt{tag}h", host_addr=f"10.213.{n}.1",
                  private=f"10.213.{n}.2", link_local=f"169.254.{n}.2", public=f"198.51.100.{n}")
    peer = f"ogt{tag}n"
    try:
        _sh("ip", "netns", "add", out.ns)
        _sh("ip", "link", "add", out.host_if, "type", "veth", "peer", "name", peer)
        _sh("ip", "link", "set", peer, "netns", out.ns)
        _sh("ip", "addr", "add", f"{out.host_addr}/24", "dev", out.host_if)
        _sh("ip", "link", "set", out.host_if, "up")
        inside = ["ip", "netns", "exec", out.ns]
        _sh(*inside, "ip", "link", "set", "lo", "up")
        _sh(*inside, "ip", "addr", "add", f"{out.private}/24", "dev", peer)
        for addr in (out.link_local, out.public):
            _sh(*inside, "ip", "addr", "add", f"{addr}/32", "dev", peer)
        _sh(*inside, "ip", "link", "set", peer, "up")
        _sh(*inside, "ip", "route", "add", "default", "via", out.host_addr)
        # /32 routes: more specific than the default route, so these never leave the machine
        for addr in (out.link_local, out.public):
            _sh("ip", "route", "add", f"{addr}/32", "via", out.private, "dev", out.host_if)
        out.server = subprocess.Popen([*inside, "python3", "-c", SERVE, str(DECOY_PORT), out.private,
                                       out.link_local, out.public], stdout=subprocess.PIPE, text=True)
        _wait_ready(out.server)
        for addr in (out.private, out.link_local, out.public):  # the decoys answer the host: the routing works
            with socket.create_connection((addr, DECOY_PORT), timeout=3) as s:
                assert s.recv(100).startswith(b"decoy"), addr
        yield out
    finally:
        if out.server is not None:
            out.server.kill()
            out.server.wait(timeout=10)
        subprocess.run(["ip", "netns", "delete", out.ns], capture_output=True, check=False)  # takes the veth pair
        subprocess.run(["ip", "link", "delete", out.host_if], capture_output=True, check=False)
        for addr in (out.link_local, out.public):
            subprocess.run(["ip", "route", "delete", f"{addr}/32"], capture_output=True, check=False)
    assert out.ns not in _sh("ip", "netns", "list")
    assert not _sh("ip", "-4", "route", "show", f"10.213.{n}.0/24")


@dataclass
class HostDecoy:
    """A listener in the test process (the host's network namespace) that greets whoever connects."""

    addr: str
    sock: socket.socket = field(init=False)
    port: int = field(init=False)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET6 if ":" in self.addr else socket.AF_INET)
        if ":" in self.addr:
            self.sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)  # "::" serves IPv4 too
        self.sock.bind((self.addr, 0))
        self.port = self.sock.getsockname()[1]
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.sendall(b"decoy host\n")

    def close(self) -> None:
        self._stop.set()
        self.sock.close()


@pytest.fixture
def netsec_host_decoys() -> Iterator[Callable[[str], HostDecoy]]:
    decoys: list[HostDecoy] = []

    def make(addr: str) -> HostDecoy:
        decoys.append(HostDecoy(addr))
        return decoys[-1]

    yield make
    for d in decoys:
        d.close()


def _network_of(replica: Any) -> tuple[str, dict[str, Any]]:
    replica.container.reload()
    (name, settings), = replica.container.attrs["NetworkSettings"]["Networks"].items()
    return name, settings


def _bridge_of(client: docker.DockerClient, network: str) -> str:
    attrs = client.api.inspect_network(network)
    return str((attrs.get("Options") or {}).get("com.docker.network.bridge.name") or f"br-{attrs['Id'][:12]}")


def _link_local_v6(iface: str) -> str | None:
    for line in _sh("ip", "-6", "-o", "addr", "show", "dev", iface, "scope", "link").splitlines():
        return line.split()[3].split("/")[0]
    return None


def _host_addresses() -> list[str]:
    """Every global IPv4 address of this machine (its uplink, the decoy veth, Docker bridges)."""
    return [line.split()[3].split("/")[0] for line in _sh("ip", "-4", "-o", "addr", "show", "scope", "global")
            .splitlines()]


def _probe(replica: Any, targets: list[tuple[str, int]]) -> dict[str, str]:
    res = replica.execute(["python3", "-c", PROBE, json.dumps(targets)], timeout=30)
    assert res.returncode == 0, res
    return dict(json.loads(res.output))


def _reached(results: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in results.items() if v.startswith("decoy")}


def _start_listener(replica: Any) -> None:
    """A decoy inside ``replica`` (as the agent's user), answering on every address; waits until it answers."""
    replica.launch(["python3", "-c", SERVE, str(DECOY_PORT), "0.0.0.0"])
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if _reached(_probe(replica, [("127.0.0.1", DECOY_PORT)])):
            return
        time.sleep(0.2)
    raise AssertionError("the decoy inside the replica never answered")


@pytest.mark.docker
def test_egress_replica_reaches_public_decoy_only(  # type: ignore[no-untyped-def]
    make_pool, docker_client, netsec_outside: Outside, netsec_host_decoys: Callable[[str], HostDecoy]
) -> None:
    pool: ReplicaPool = make_pool(2, egress=True)
    with pool.lease() as a, pool.lease() as b:
        net, settings = _network_of(a)
        assert net != "bridge", "egress replicas must not share Docker's default bridge"
        assert _network_of(b)[0] == net
        gateway, bridge = settings["Gateway"], _bridge_of(docker_client, net)
        _start_listener(b)
        on_gateway = netsec_host_decoys(gateway)
        everywhere = netsec_host_decoys("::")  # the host's services: every address, IPv4 and IPv6
        o = netsec_outside
        targets: list[tuple[str, int]] = [
            (o.public, DECOY_PORT),                                   # the only one that must answer
            (_network_of(b)[1]["IPAddress"], DECOY_PORT),             # (a) a replica of the same pool
            (gateway, on_gateway.port),                               # (b) the bridge gateway
            (o.private, DECOY_PORT), (o.link_local, DECOY_PORT),      # (b) private and link-local
            *((addr, everywhere.port) for addr in _host_addresses()),  # (c) every host address
        ]
        ll = _link_local_v6(bridge)
        if ll:
            targets.append((f"{ll}%eth0", everywhere.port))         # (c) the host over IPv6 link-local
        # the decoys answer from the host: what the replica fails to reach is fenced, not broken
        for host, port in targets[2:]:
            if "%" not in host:
                with socket.create_connection((host, port), timeout=3) as s:
                    assert s.recv(100).startswith(b"decoy"), (host, port)
        results = _probe(a, targets)
        print("\negress probe:", json.dumps(results, indent=1))
        reached = _reached(results)
        assert list(reached) == [f"{o.public}:{DECOY_PORT}"], json.dumps(results, indent=1)
        assert a.health()["status"] == "ok" and a.screenshot(max_side=64).data  # the pool still drives it


@pytest.mark.docker
@pytest.mark.parametrize("mode", ["compat", "tcp", "compat-egress"])
def test_compat_and_tcp_replicas_have_no_egress_and_loopback_only_ports(  # type: ignore[no-untyped-def]
    make_pool, docker_client, netsec_outside: Outside, netsec_host_decoys: Callable[[str], HostDecoy], mode: str
) -> None:
    """No egress at all unless the operator allows it (then public only); reached only through loopback."""
    kw = {"compat": {"compat": True}, "tcp": {"transport": "tcp"}, "compat-egress": {"compat": True, "egress": True}}
    pool: ReplicaPool = make_pool(1, **kw[mode])
    with pool.lease() as r:
        net, settings = _network_of(r)
        assert net != "bridge"
        assert docker_client.api.inspect_network(net)["Options"].get("com.docker.network.bridge.enable_icc") == "false"
        r.container.reload()
        bindings = r.container.attrs["NetworkSettings"]["Ports"]["5000/tcp"]
        assert bindings and all(b["HostIp"].startswith("127.") for b in bindings), bindings
        everywhere = netsec_host_decoys("::")
        o = netsec_outside
        targets = [(o.public, DECOY_PORT), (o.private, DECOY_PORT), (o.link_local, DECOY_PORT),
                   (settings["Gateway"], everywhere.port), *((a, everywhere.port) for a in _host_addresses())]
        results = _probe(r, targets)
        expected = [f"{o.public}:{DECOY_PORT}"] if mode == "compat-egress" else []
        assert list(_reached(results)) == expected, json.dumps(results, indent=1)
        assert r.health()["status"] == "ok"  # reached only through the loopback mapping, which still works


@pytest.mark.docker
def test_rules_are_labelled_idempotent_and_removable(docker_client: docker.DockerClient) -> None:
    from osgym.replicas import network

    name = f"osgymt-net-{uuid.uuid4().hex[:6]}"
    try:
        net = network.prepare_network(docker_client, network.EGRESS, name=name)
        attrs = docker_client.api.inspect_network(name)
        assert attrs["Labels"][network.NETWORK_LABEL] == network.EGRESS
        assert attrs["Options"]["com.docker.network.bridge.enable_icc"] == "false"
        mine = [r for r in network.installed_rules() if f" {net.bridge} " in r]
        assert len(mine) >= len(network.BLOCKED_V4) + 2
        assert all("osgym:" in r for r in mine)
        assert "-A DOCKER-USER -j OSGYM-FORWARD" in _sh("iptables", "-S", "DOCKER-USER")
        assert "-A INPUT -j OSGYM-INPUT" in _sh("iptables", "-S", "INPUT")
        network.prepare_network(docker_client, network.EGRESS, name=name)  # again: nothing added twice
        assert [r for r in network.installed_rules() if f" {net.bridge} " in r] == mine
        assert _sh("iptables", "-S", "DOCKER-USER").count("OSGYM-FORWARD") == 1
        network.remove_rules(net.bridge)
        assert not [r for r in network.installed_rules() + network.installed_rules("ip6tables")
                    if f" {net.bridge} " in r]
    finally:
        with contextlib.suppress(docker.errors.NotFound):
            docker_client.api.remove_network(name)


def test_a_network_osgym_does_not_own_is_refused(docker_client: docker.DockerClient) -> None:
    from osgym.errors import PoolError
    from osgym.replicas import network

    name = f"osgymt-foreign-{uuid.uuid4().hex[:6]}"
    docker_client.api.create_network(name, driver="bridge")
    try:
        with pytest.raises(PoolError, match=f"network {name}: expected osgym's bridge network"):
            network.ensure_network(docker_client, network.EGRESS, name=name)
    finally:
        docker_client.api.remove_network(name)


@pytest.mark.parametrize("transport", ["unix", "tcp"])
@pytest.mark.parametrize("url", ["tcp://127.0.0.1:9", "ssh://nobody@127.0.0.1"])
def test_remote_docker_hosts_are_refused_when_the_pool_is_built(url: str, transport: str) -> None:
    with pytest.raises(ConfigError, match=r"hosts: expected Docker daemons on this machine .*remote"):
        ReplicaPool("osgym/desktop:any", 1, hosts=["unix:///var/run/docker.sock", url], transport=transport)


def test_a_client_for_a_remote_daemon_is_refused() -> None:
    client = docker.DockerClient(base_url="tcp://127.0.0.1:9", version="1.41")  # no connection is made
    try:
        with pytest.raises(ConfigError, match="remote"):
            ReplicaPool("osgym/desktop:any", 1, docker_client=client)
    finally:
        client.close()
