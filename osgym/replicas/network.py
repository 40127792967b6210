"""The networks replicas that need one run on, and the host firewall rules that fence them in.

A default replica has no network at all (Docker's ``none``). The others get a bridge network that
osgym creates, labels (``osgym.network=<kind>``) and owns, never Docker's default bridge, where every
container reaches every other one, the host's services and the cloud metadata address:

- ``osgym-egress`` (``egress=True``): the public internet only. Inter-container traffic is off
  (``com.docker.network.bridge.enable_icc=false``), and host rules drop what replicas send to private
  (RFC 1918), carrier-grade NAT (100.64/10), link-local (169.254/16, cloud metadata), loopback,
  "this network", IETF-reserved, benchmarking, multicast and reserved destinations, anything that
  starts a connection into the network, and everything replicas send to the host itself (the bridge
  gateway and every other host address). DNS to the host's own resolvers (``/etc/resolv.conf``) on
  port 53 stays open, because Docker's embedded DNS forwards from inside the replica.
- ``osgym-isolated`` (OSWorld compatibility replicas and ``transport="tcp"`` ones without egress):
  the same, and no egress at all; the pool reaches the replica only through its port published on
  the host's loopback.

IPv6 is switched off inside networked replicas (``net.ipv6.conf.*.disable_ipv6``) and dropped from
the bridges, so link-local ``fe80::/10`` reaches neither the host nor another replica.

The rules live in two chains of the ``filter`` table, for IPv4 and IPv6: ``OSGYM-FORWARD``, jumped to
from Docker's ``DOCKER-USER`` (which Docker evaluates before its own accept rules and never flushes),
and ``OSGYM-INPUT``, jumped to from ``INPUT``. Every rule names one bridge and carries a comment
starting ``osgym:``. :func:`prepare_network` creates the network if missing and adds whatever rule is
missing; it runs when a pool starts, so rules lost to a reboot or a firewall reload come back before
any replica starts. Rules are only ever added or deleted one by one, never flushed, so pools
starting at once do not disturb each other. :func:`remove_rules` deletes one bridge's rules; rules of
bridges that no longer exist are pruned at each install.

Because the rules are the host's own, they need root (``CAP_NET_ADMIN``), dockerd's iptables
integration (the ``DOCKER-USER`` chain) and a bridge visible on this machine: a pool refuses to
start networked replicas without them rather than run them unfenced.
"""

from __future__ import annotations

import ipaddress
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker.errors

from osgym.errors import PoolError

__all__ = [
    "BLOCKED_V4", "EGRESS", "HOSTS_FILE", "ISOLATED", "NETWORK_LABEL", "NETWORK_NAMES", "ReplicaNetwork",
    "container_sysctls", "ensure_network", "install_rules", "installed_rules", "prepare_network", "remove_rules",
    "write_hosts",
]

EGRESS = "egress"
ISOLATED = "isolated"
NETWORK_LABEL = "osgym.network"
NETWORK_NAMES = {EGRESS: "osgym-egress", ISOLATED: "osgym-isolated"}
"""The Docker network of each kind, shared by every pool on the host (like the image, it outlives pools)."""

FORWARD_CHAIN = "OSGYM-FORWARD"
INPUT_CHAIN = "OSGYM-INPUT"
COMMENT = "osgym:"
"""Every rule's comment starts with this (comments hold no quotes: ``iptables -S`` escapes them)."""

BLOCKED_V4: tuple[tuple[str, str], ...] = (
    ("10.0.0.0/8", "private (RFC 1918)"),
    ("172.16.0.0/12", "private (RFC 1918)"),
    ("192.168.0.0/16", "private (RFC 1918)"),
    ("100.64.0.0/10", "carrier-grade NAT (RFC 6598)"),
    ("169.254.0.0/16", "link-local, cloud metadata"),
    ("127.0.0.0/8", "loopback"),
    ("0.0.0.0/8", "this network"),
    ("192.0.0.0/24", "IETF protocol assignments, some cloud metadata"),
    ("198.18.0.0/15", "benchmarking (RFC 2544)"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved and broadcast"),
)
"""Destinations an egress replica may not reach: everything that is not the public internet
(TEST-NET documentation ranges are left alone: they are never routed)."""

_ICC_OPTION = "com.docker.network.bridge.enable_icc"
_BRIDGE_OPTION = "com.docker.network.bridge.name"
_IPTABLES_TIMEOUT_S = 30


@dataclass(frozen=True)
class ReplicaNetwork:
    """One osgym network on one Docker host: its Docker name, kind, Linux bridge, subnet and gateway."""

    name: str
    kind: str
    bridge: str
    subnet: str
    gateway: str


def _describe(attrs: dict[str, Any], kind: str) -> ReplicaNetwork:
    options = attrs.get("Options") or {}
    bridge = options.get(_BRIDGE_OPTION) or f"br-{attrs['Id'][:12]}"
    config = ((attrs.get("IPAM") or {}).get("Config") or [{}])[0]
    return ReplicaNetwork(attrs["Name"], kind, bridge, config.get("Subnet", ""), config.get("Gateway", ""))


def ensure_network(client: Any, kind: str, name: str | None = None) -> ReplicaNetwork:
    """The osgym network of ``kind`` on ``client``'s daemon, created (labelled, no inter-container traffic) if missing.

    Args:
        client: a ``docker.DockerClient``.
        kind: :data:`EGRESS` or :data:`ISOLATED`.
        name: the Docker network name (default :data:`NETWORK_NAMES` ``[kind]``; tests pass their own).

    Raises:
        PoolError: if a network of that name exists but is not osgym's (no label, or inter-container
            traffic on), or Docker fails.
    """
    if kind not in NETWORK_NAMES:
        raise PoolError(f"network kind: expected one of {sorted(NETWORK_NAMES)}, actual {kind!r}")
    name = name or NETWORK_NAMES[kind]
    api = client.api
    try:
        try:
            attrs = api.inspect_network(name)
        except docker.errors.NotFound:
            try:
                api.create_network(name, driver="bridge", options={_ICC_OPTION: "false"},
                                   labels={NETWORK_LABEL: kind}, check_duplicate=True)
            except docker.errors.APIError as exc:
                if exc.status_code != 409:  # 409: another pool created it meanwhile
                    raise
            attrs = api.inspect_network(name)
    except docker.errors.DockerException as exc:
        raise PoolError(f"network {name}: Docker failed to create or inspect it: {exc}") from exc
    labels = attrs.get("Labels") or {}
    options = attrs.get("Options") or {}
    if labels.get(NETWORK_LABEL) != kind or options.get(_ICC_OPTION) != "false" or attrs.get("Driver") != "bridge":
        raise PoolError(f"network {name}: expected osgym's bridge network (label {NETWORK_LABEL}={kind}, "
                        f"{_ICC_OPTION}=false), actual driver {attrs.get('Driver')!r}, labels {labels}, "
                        f"options {options}: remove it (docker network rm {name}) and osgym recreates it")
    return _describe(attrs, kind)


# ---- host rules ---------------------------------------------------------------
def _rules(net: ReplicaNetwork) -> dict[str, list[tuple[str, list[str], bool]]]:
    """Per binary (iptables, ip6tables): (chain, rule, first) for ``net``; ``first`` rules go on top of the chain."""
    br = net.bridge
    drop_new_in = ["-o", br, "-m", "conntrack", "--ctstate", "NEW",
                   "-m", "comment", "--comment", f"{COMMENT} nothing starts a connection into a replica",
                   "-j", "DROP"]
    host = ["-i", br, "-m", "conntrack", "!", "--ctstate", "ESTABLISHED,RELATED",
            "-m", "comment", "--comment", f"{COMMENT} replicas may not reach the host", "-j", "DROP"]
    v4: list[tuple[str, list[str], bool]] = [(FORWARD_CHAIN, drop_new_in, False), (INPUT_CHAIN, host, False)]
    if net.kind == EGRESS:
        for resolver in _resolvers():
            for proto in ("udp", "tcp"):
                v4.append((FORWARD_CHAIN, ["-i", br, "-d", f"{resolver}/32", "-p", proto, "--dport", "53",
                                           "-m", "comment", "--comment", f"{COMMENT} DNS to a resolver of the host",
                                           "-j", "RETURN"], True))
        for cidr, why in BLOCKED_V4:
            v4.append((FORWARD_CHAIN, ["-i", br, "-d", cidr, "-m", "comment", "--comment",
                                       f"{COMMENT} egress, no {why}", "-j", "DROP"], False))
    else:
        v4.append((FORWARD_CHAIN, ["-i", br, "-m", "comment", "--comment", f"{COMMENT} isolated, no egress",
                                   "-j", "DROP"], False))
    no_v6 = ["-m", "comment", "--comment", f"{COMMENT} no IPv6 on replica networks", "-j", "DROP"]
    v6 = [(FORWARD_CHAIN, ["-i", br, *no_v6], False), (FORWARD_CHAIN, ["-o", br, *no_v6], False),
          (INPUT_CHAIN, ["-i", br, *no_v6], False)]
    return {"iptables": v4, "ip6tables": v6}


def _resolvers() -> list[str]:
    """The IPv4 nameservers Docker's embedded DNS forwards to (the host's, as dockerd reads them)."""
    out: list[str] = []
    for conf in (Path("/etc/resolv.conf"), Path("/run/systemd/resolve/resolv.conf")):
        try:
            lines = conf.read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "nameserver":
                try:
                    addr = ipaddress.ip_address(parts[1])
                except ValueError:
                    continue
                if addr.version == 4 and not addr.is_loopback and str(addr) not in out:
                    out.append(str(addr))
        if out:
            break  # dockerd reads systemd-resolved's upstream file only when resolv.conf lists loopback alone
    return out


def _run(binary: str, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([binary, "-w", "10", *args], capture_output=True, text=True,
                              timeout=_IPTABLES_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PoolError(f"network isolation: running {binary} failed: {exc}") from exc


def _must(binary: str, *args: str) -> None:
    res = _run(binary, *args)
    if res.returncode != 0:
        raise PoolError(f"network isolation: `{binary} {shlex.join(args)}` failed: {res.stderr.strip()}")


def _ensure_chain(binary: str, chain: str, parent: str) -> None:
    """Create ``chain`` if missing and make sure ``parent`` jumps to it first."""
    if _run(binary, "-S", chain).returncode != 0:
        res = _run(binary, "-N", chain)
        if res.returncode != 0 and "exists" not in res.stderr:
            raise PoolError(f"network isolation: `{binary} -N {chain}` failed: {res.stderr.strip()}")
    if _run(binary, "-C", parent, "-j", chain).returncode != 0:
        _must(binary, "-I", parent, "1", "-j", chain)


def _forward_parent(binary: str) -> str:
    """DOCKER-USER where dockerd made it (it runs before Docker's accepts); FORWARD for IPv6 without it."""
    if _run(binary, "-S", "DOCKER-USER").returncode == 0:
        return "DOCKER-USER"
    if binary == "iptables":
        raise PoolError("network isolation: iptables has no DOCKER-USER chain, so dockerd runs without its "
                        "iptables integration (--iptables=false) or with another firewall backend; osgym's "
                        "networked replicas need dockerd's iptables rules")
    return "FORWARD"


def _check_can_install() -> None:
    if os.geteuid() != 0:
        raise PoolError("network isolation: networked replicas (egress, compat, transport='tcp') need host "
                        "firewall rules, which need root; run the pool as root or keep replicas networkless")
    if shutil.which("iptables") is None:
        raise PoolError("network isolation: the iptables command is missing (Debian: apt-get install iptables)")


def _ipv6() -> bool:
    return Path("/proc/sys/net/ipv6").is_dir() and shutil.which("ip6tables") is not None


def install_rules(net: ReplicaNetwork) -> None:
    """Add whichever of ``net``'s host rules is missing (idempotent), and prune rules of vanished bridges.

    Raises:
        PoolError: if not root, iptables is missing, dockerd runs without iptables, the bridge is not
            visible on this machine (a rootless or remote daemon), or an iptables command fails.
    """
    _check_can_install()
    if not Path("/sys/class/net", net.bridge).exists():
        raise PoolError(f"network isolation: network {net.name}'s bridge {net.bridge} is not on this machine "
                        "(a rootless or remote Docker daemon?), so its replicas cannot be fenced in")
    for binary, rules in _rules(net).items():
        if binary == "ip6tables" and not _ipv6():
            continue
        _ensure_chain(binary, FORWARD_CHAIN, _forward_parent(binary))
        _ensure_chain(binary, INPUT_CHAIN, "INPUT")
        _prune(binary)
        for chain, rule, first in rules:
            if _run(binary, "-C", chain, *rule).returncode != 0:
                # exceptions (RETURN) go on top, drops at the end: the order is right whatever was there before
                if first:
                    _must(binary, "-I", chain, "1", *rule)
                else:
                    _must(binary, "-A", chain, *rule)


def installed_rules(binary: str = "iptables") -> list[str]:
    """The osgym rules now in the host's firewall, as ``iptables -S`` lines (empty if there are none)."""
    lines: list[str] = []
    for chain in (FORWARD_CHAIN, INPUT_CHAIN):
        res = _run(binary, "-S", chain)
        if res.returncode == 0:
            lines += [line for line in res.stdout.splitlines() if line.startswith("-A ")]
    return lines


def _interface(rule: list[str]) -> str | None:
    for flag in ("-i", "-o"):
        if flag in rule:
            return rule[rule.index(flag) + 1]
    return None


def _delete_where(binary: str, keep: Any) -> None:
    for line in installed_rules(binary):
        rule = shlex.split(line)
        if not keep(_interface(rule)):
            _run(binary, "-D", *rule[1:])


def _prune(binary: str) -> None:
    """Delete rules whose bridge no longer exists (its network was removed)."""
    _delete_where(binary, lambda iface: iface is None or Path("/sys/class/net", iface).exists())


def remove_rules(bridge: str) -> None:
    """Delete every osgym rule that names ``bridge`` (IPv4 and IPv6). The chains and jumps stay (empty)."""
    for binary in ("iptables", "ip6tables"):
        if shutil.which(binary) is not None:
            _delete_where(binary, lambda iface: iface != bridge)


def prepare_network(client: Any, kind: str, name: str | None = None) -> ReplicaNetwork:
    """:func:`ensure_network`, then :func:`install_rules`: what a pool does before starting networked replicas.

    Raises:
        PoolError: see :func:`ensure_network` and :func:`install_rules`.
    """
    net = ensure_network(client, kind, name)
    install_rules(net)
    return net


def container_sysctls() -> dict[str, str]:
    """Sysctls for a replica's network namespace: no IPv6, so no link-local ``fe80::`` route to the host or a
    neighbour on a network, and on a replica without one, a loopback as Docker's sandbox leaves it (IPv4 only)."""
    if not Path("/proc/sys/net/ipv6").is_dir():
        return {}
    return {"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"}


HOSTS_FILE = "hosts"
"""A replica without a network has no network sandbox of Docker's (``network_disabled``: no prestart hook to run
on every start and restore), and Docker writes a container's /etc/hosts only into a sandbox; so the pool writes
this file into the replica's run directory and binds it read-only at /etc/hosts."""
HOSTS = ("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\n"
         "ff00::0\tip6-mcastprefix\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n")
"""What Docker's sandbox writes for a container on no network: the loopback names only."""


def write_hosts(run_dir: Path) -> Path:
    """Write :data:`HOSTS` as ``run_dir``/:data:`HOSTS_FILE` (0644, the writer's: a replica's server, which owns
    ``run_dir``, can remove it, not change what its bind shows) and return its path."""
    path = run_dir / HOSTS_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as f:
        f.write(HOSTS)
    return path
