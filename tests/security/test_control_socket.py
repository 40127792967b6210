"""The agent cannot take over its replica's control channel (issue 13, finding "agent replaces control.sock").

Every attack here is sent the way an agent sends actions: ``/execute`` and ``/launch`` with
``python3 -c`` code, as `user`. After each, the host must still be talking to the genuine
server, whose screenshots and file reads reflect the replica's real state. The run-directory
and reaper tests check the host side: a run directory someone else made or may write is
refused, a non-root host shares the replica's directory without making anything
world-accessible, and the reaper deletes only pool directories inside its run root.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import shutil
import stat
import tempfile
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import docker.errors
import pytest
from PIL import Image

from osgym.errors import ConfigError
from osgym.replicas.client import Replica
from osgym.replicas.pool import OWNER_LABEL, POOL_LABEL, RUN_DIR_LABEL, ReplicaPool, reap

pytestmark = pytest.mark.docker


# The control socket where the current image puts it, and where images before the fix did.
SOCKETS = ["/run/osgym/ctl/control.sock", "/run/osgym/control.sock"]
TOKENS = ["/run/osgym/ctl/token", "/run/osgym/token"]

IMPOSTOR = textwrap.dedent('''
    # An agent's attempt to replace the control server: take the socket's path, serve
    # fake answers, and keep whatever bearer token the host sends.
    import http.server, json, os, socket, socketserver, sys
    class H(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a): pass
        def do_GET(self):
            with open("/tmp/stolen-token", "a") as f:
                f.write(self.headers.get("Authorization", "") + "\\n")
            body = json.dumps({"status": "ok", "impostor": True, "screen": [1, 1]}).encode()
            self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
            self.wfile.write(body)
        do_POST = do_PUT = do_GET
    class S(socketserver.ThreadingMixIn, socketserver.UnixStreamServer): daemon_threads = True
    report = {}
    for path in SOCKETS:
        try:
            os.rename(path, path + ".real")
            report[path] = "renamed"
        except OSError as exc:
            report[path] = f"rename: {type(exc).__name__}"
            try:
                os.unlink(path)
                report[path] = "unlinked"
            except OSError as exc2:
                report[path] += f"; unlink: {type(exc2).__name__}"
                continue
        try:
            srv = S(path, H)
        except OSError as exc:
            report[path] += f"; bind: {type(exc).__name__}"
            continue
        report[path] += "; serving"
        print(json.dumps(report), flush=True)
        srv.serve_forever()
    print(json.dumps(report), flush=True)
''')

PROBE = textwrap.dedent('''
    # What an agent can reach of the server: the run directory, the token, its process.
    import ctypes, json, os, signal, subprocess
    out = {}
    def attempt(name, fn):
        try:
            out[name] = ["ok", repr(fn())[:200]]
        except Exception as exc:
            out[name] = [type(exc).__name__, str(exc)[:200]]
    for d in ("/run/osgym", "/run/osgym/ctl"):
        attempt("list " + d, lambda d=d: os.listdir(d))
        attempt("create in " + d, lambda d=d: open(os.path.join(d, "evil"), "w").close())
    for t in TOKENS:
        attempt("read " + t, lambda t=t: open(t).read())
    pids = [int(p) for p in subprocess.run(["pgrep", "-f", "^(python3 /opt/osgym/osgym_replica.py|/sbin/docker-init)"],
                                           capture_output=True, text=True).stdout.split()]
    out["server_pids"] = pids
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    for pid in pids:
        attempt(f"environ {pid}", lambda pid=pid: open(f"/proc/{pid}/environ", "rb").read())
        attempt(f"mem {pid}", lambda pid=pid: open(f"/proc/{pid}/mem", "rb").read(1))
        def trace(pid=pid):
            if libc.ptrace(16, pid, None, None) != 0:  # PTRACE_ATTACH
                raise PermissionError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
            libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
            return "attached"
        attempt(f"ptrace {pid}", trace)
        attempt(f"signal {pid}", lambda pid=pid: os.kill(pid, signal.SIGSTOP) or os.kill(pid, signal.SIGCONT))
    # Anything readable that mentions a token: every process's environment and command line.
    leaks = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            for f in ("environ", "cmdline"):
                try:
                    leaks.append(open(f"/proc/{p}/{f}", "rb").read().decode("utf-8", "replace"))
                except OSError:
                    pass
    out["readable_proc_text"] = leaks
    print(json.dumps(out))
''')


def _agent_python(replica: Replica, code: str, timeout: float = 30) -> str:
    """Run ``code`` the way an agent's ``python -c`` action runs; its stdout."""
    res = replica.execute(["python3", "-c", code], timeout=timeout)
    assert res.returncode == 0, res
    return res.output


def _with_paths(code: str) -> str:
    return f"SOCKETS = {SOCKETS!r}\nTOKENS = {TOKENS!r}\n{code}"


def _token(replica: Replica) -> str:
    return str(replica.api.headers["Authorization"]).split()[1]


def _assert_genuine(replica: Replica) -> None:
    """The host is talking to the real server: its answers match the replica's real state.

    A fresh client, so that a keep-alive connection opened before an attack does not hide a
    replaced socket: every new connection goes to whatever now listens at the path.
    """
    fresh = Replica(replica.id, replica.api.endpoint, _token(replica), container=replica.container)
    try:
        health = fresh.health()
        assert "impostor" not in health and health["desktop"]["xvfb"] is True, health
        # A file the agent writes is read back as written, and one the host writes is owned by `user`.
        marker = secrets.token_hex(8)
        fresh.execute(f"echo {marker} > ~/osgym-genuine.txt", shell=True, timeout=10)
        assert fresh.read_file("~/osgym-genuine.txt").decode().strip() == marker
        fresh.write_file("/tmp/osgym-from-host.txt", marker.encode())
        res = fresh.execute(["stat", "-c", "%U", "/tmp/osgym-from-host.txt"], timeout=10)
        assert res.output.strip() == "user", res
        # A screenshot shows what is on the screen: a window of a colour chosen here.
        rgb = tuple(secrets.randbelow(200) + 28 for _ in range(3))
        colour = "#" + "".join(f"{c:02x}" for c in rgb)
        title = f"osgym-genuine-{marker}"
        fresh.launch(["python3", "-c", f"import tkinter as t; r = t.Tk(); r.title({title!r}); "
                      f"r.geometry('300x200+100+100'); r.configure(bg={colour!r}); r.mainloop()"])
        fresh.wait_window(title, timeout=20)
        deadline = time.monotonic() + 10
        while True:
            shot = Image.open(io.BytesIO(fresh.screenshot(format="png").data)).convert("RGB")
            if shot.getpixel((250, 200)) == rgb or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert shot.getpixel((250, 200)) == rgb
    finally:
        fresh.api.close()


@pytest.fixture
def sec_replica(make_pool: Callable[..., ReplicaPool]) -> Iterator[Replica]:
    """A fresh native replica per test: the attacks may damage it."""
    pool = make_pool(1)
    with pool.lease() as r:
        yield r


def test_agent_cannot_replace_the_control_socket(sec_replica: Replica) -> None:
    # The impostor runs in a session of its own, so that it outlives the action that started it.
    out = _agent_python(sec_replica, _with_paths(
        "import subprocess, sys\n"
        f"p = subprocess.Popen([sys.executable, '-c', {_with_paths(IMPOSTOR)!r}], stdout=subprocess.PIPE, "
        "stderr=subprocess.DEVNULL, start_new_session=True, text=True)\n"
        "print(p.stdout.readline().strip())\n"))
    report = json.loads(out.strip().splitlines()[-1])
    try:
        _assert_genuine(sec_replica)
    finally:
        stolen = sec_replica.execute("cat /tmp/stolen-token 2>/dev/null || true", shell=True, timeout=10).output
        assert stolen.strip() == "", "the host sent its token to an impostor"
    assert not any("serving" in v or "renamed" in v or "unlinked" in v for v in report.values()), report


def test_agent_cannot_read_the_token_signal_or_ptrace_the_server(sec_replica: Replica) -> None:
    out = json.loads(_agent_python(sec_replica, _with_paths(PROBE)))
    assert out["server_pids"], out
    for name, result in out.items():
        if name in ("server_pids", "readable_proc_text"):
            continue
        assert result[0] in ("PermissionError", "FileNotFoundError"), (name, result)
    token = _token(sec_replica)
    assert not any(token in text for text in out["readable_proc_text"])
    _assert_genuine(sec_replica)


def test_tcp_token_stays_out_of_the_agents_reach(make_pool: Callable[..., ReplicaPool]) -> None:
    """With the TCP transport the token is copied in as a file the server reads and deletes: no
    process the agent can read shows it."""
    pool = make_pool(1, transport="tcp")
    with pool.lease() as replica:
        out = json.loads(_agent_python(replica, _with_paths(PROBE)))
        token = _token(replica)
        assert out["readable_proc_text"] and not any(token in text for text in out["readable_proc_text"])
        for name, result in out.items():
            if name.startswith(("environ", "mem", "ptrace", "signal")):
                assert result[0] == "PermissionError", (name, result)
        _assert_genuine(replica)


def test_agent_has_no_sudo_and_no_capabilities(sec_replica: Replica) -> None:
    res = sec_replica.execute("echo password | sudo -S -p '' id -u", shell=True, timeout=20)
    assert res.output.strip() != "0" and res.returncode != 0, res
    groups = sec_replica.execute(["id", "-nG"], timeout=10).output.split()
    assert "sudo" not in groups and "root" not in groups, groups
    status = sec_replica.execute(["cat", "/proc/self/status"], timeout=10).output
    caps = {line.split(":")[0]: int(line.split()[1], 16) for line in status.splitlines() if line.startswith("Cap")}
    assert caps["CapEff"] == caps["CapPrm"] == caps["CapInh"] == caps["CapAmb"] == 0, caps
    assert "NoNewPrivs:\t1" in status


def test_server_runs_as_osgym_with_setuid_and_setgid_only(sec_replica: Replica) -> None:
    """What the host sees: the server and Xvfb run as `osgym`, the session as `user`; the server's capabilities."""
    from osgym.replicas import provision

    server_uid = getattr(provision, "SERVER_UID", None)

    api = sec_replica.container.client.api
    cid = sec_replica.container.id
    rows = api.top(cid, ps_args="-eo uid,pid,args")["Processes"]
    uid_of = {args.split()[0 if args.startswith(("Xvfb", "openbox")) else -1]: int(uid) for uid, _, args in rows
              if args.startswith(("python3 /opt/osgym/osgym_replica.py", "Xvfb", "openbox"))}
    assert uid_of == {"/opt/osgym/osgym_replica.py": server_uid, "Xvfb": server_uid, "openbox": 1000}, rows
    ex = api.exec_create(cid, ["sh", "-c", "grep ^Cap /proc/$(pgrep -u osgym -f osgym_replica.py)/status"],
                         user="root")
    caps = dict(line.split(":\t") for line in api.exec_start(ex).decode().splitlines())
    assert {k: int(v, 16) for k, v in caps.items()} == {"CapInh": 0, "CapPrm": 0xC0, "CapEff": 0xC0,
                                                        "CapBnd": 0xC0, "CapAmb": 0}, caps
    hc = api.inspect_container(cid)["HostConfig"]
    assert hc["CapDrop"] == ["ALL"] and sorted(hc["CapAdd"]) == ["SETGID", "SETPCAP", "SETUID"]
    assert "no-new-privileges" in hc["SecurityOpt"]


def test_root_setup_steps_run_through_docker_not_the_agent(sec_replica: Replica) -> None:
    from osgym.tasks.setup import run_step
    from osgym.tasks.spec import SetupStep

    run_step(sec_replica, SetupStep(type="execute", parameters={
        "command": "echo password | sudo -S -p '' sh -c 'id -u > /etc/osgym-root-step'", "shell": True}))
    assert sec_replica.execute(["cat", "/etc/osgym-root-step"], timeout=10).output.strip() == "0"
    # The agent itself still cannot write there.
    res = sec_replica.execute("echo x > /etc/osgym-root-step", shell=True, timeout=10)
    assert res.returncode != 0


# ---- run directory -----------------------------------------------------------------------------

def test_run_dir_owned_by_someone_else_or_writable_by_others_is_refused(
        image: str, docker_client: docker.DockerClient, pool_name: str, traversable_tmp: Path) -> None:
    tmp_path = traversable_tmp  # short: a socket path has at most 107 bytes
    cases: dict[str, Path] = {}
    foreign = tmp_path / "foreign"
    foreign.mkdir(mode=0o700)
    os.chown(foreign, 4321, 4321)  # another user made it first (the test runs as root)
    cases["foreign"] = foreign
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    cases["world-writable"] = shared
    group = tmp_path / "group"
    group.mkdir()
    group.chmod(0o770)
    cases["group-writable"] = group
    (tmp_path / "target").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(tmp_path / "target")
    cases["symlink"] = tmp_path / "link"
    for what, run_dir in cases.items():
        pool = ReplicaPool(image, 1, standby=0, name=f"{pool_name}-{what}", docker_client=docker_client,
                           run_dir=run_dir, screen=(640, 480))
        try:
            with pytest.raises(ConfigError, match=str(run_dir)):
                pool.start()
        finally:
            pool.close()
        assert not (run_dir / pool.name).exists(), what


def test_fresh_run_dir_is_private_and_the_replica_dir_belongs_to_the_server(
        traversable_tmp: Path, make_pool: Callable[..., ReplicaPool]) -> None:
    # traversable_tmp first: fixtures are torn down in reverse, so the pool closes before its directory goes.
    from osgym.replicas import provision

    server_uid = getattr(provision, "SERVER_UID", None)
    root = traversable_tmp / "r" / "d"  # short: a socket path has at most 107 bytes
    pool = make_pool(1, run_dir=root)
    assert stat.S_IMODE(root.stat().st_mode) == 0o700 and root.stat().st_uid == os.geteuid()
    assert stat.S_IMODE(pool.run_dir.stat().st_mode) == 0o700
    with pool.lease() as replica:
        rdir = pool.run_dir / replica.id
        st = rdir.stat()
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (server_uid, 0o700)
        sock = (rdir / "control.sock").stat()
        assert (sock.st_uid, stat.S_IMODE(sock.st_mode)) == (server_uid, 0o660)
        assert not (rdir / "token").exists()  # read and deleted by the server
        assert replica.health()["status"] == "ok"


def _as_uid(uid: int, fn: Callable[[], str]) -> str:
    """``fn()`` in a child process running as host uid ``uid`` (gid the same, no other groups): a non-root user.

    A fork, not a new interpreter: this interpreter and its packages may live where other uids cannot read.
    """
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop to uid, run, report, and leave without running any cleanup of the parent's
        code = 1
        try:
            os.close(r)
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            out = fn()
            code = 0
        except BaseException as exc:  # noqa: B036 - reported to the parent, whatever it was
            out = f"{type(exc).__name__}: {exc}"
        os.write(w, out.encode())
        os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        out = f.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, out
    return out


def _prepare(rdir: Path, token: str) -> Callable[[], str]:
    from osgym.replicas.provision import Provisioner

    def run() -> str:
        Provisioner._write_token(rdir, token)
        return "ok"
    return run


def _health(sock: Path, token: str) -> Callable[[], str]:
    import httpcore  # noqa: F401 - httpx loads its transport's package lazily; the child's uid cannot read it
    import httpx

    def run() -> str:
        try:
            with httpx.Client(transport=httpx.HTTPTransport(uds=str(sock)), timeout=5) as c:
                return str(c.get("http://replica/health", headers={"Authorization": f"Bearer {token}"}).status_code)
        except (httpx.HTTPError, OSError) as exc:
            return type(exc).__name__
    return run


@pytest.fixture
def traversable_tmp() -> Iterator[Path]:
    """A temporary directory other uids may pass through (pytest's tmp_path is root's, mode 0700)."""
    d = Path(tempfile.mkdtemp(prefix="osgym-sec-", dir="/tmp"))
    d.chmod(0o711)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("host_uid", [4321, 1000], ids=["other-uid", "agent-uid"])
def test_non_root_host_shares_the_replica_dir_by_group_without_world_access(
        image: str, docker_client: docker.DockerClient, pool_name: str, traversable_tmp: Path, host_uid: int) -> None:
    """A non-root host user (here the numeric uid ``host_uid``; 1000 is also the agent's uid inside)
    prepares the replica directory, the replica's server joins its group, and only that user connects."""
    # the suite runs as root (make test starts dockerd); a skip here would hide the non-root host case
    assert os.geteuid() == 0, "this test switches to other host uids: run it as root"
    from osgym.replicas import provision

    # getattr: the same test runs against images and pools from before the fix (it must fail there).
    ctl_mount = getattr(provision, "CTL_MOUNT", "/run/osgym")
    cap_add = getattr(provision, "NATIVE_CAP_ADD", [])

    root = traversable_tmp / "run"
    root.mkdir(mode=0o700)
    os.chown(root, host_uid, host_uid)
    rdir = root / "r1"
    token = secrets.token_urlsafe(24)
    _as_uid(host_uid, _prepare(rdir, token))
    for p in (rdir, rdir / "token"):
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode & 0o007 == 0, f"{p} is accessible to others: {mode:04o}"
    name = f"{pool_name}-{host_uid}"
    container = docker_client.containers.create(
        image, name=name, labels={POOL_LABEL: name}, init=True, network_mode="none",
        environment={"OSGYM_LISTEN": f"unix:{ctl_mount}/control.sock", "OSGYM_SCREEN": "640x480"},
        volumes={str(rdir): {"bind": ctl_mount, "mode": "rw"}}, cap_drop=["ALL"], cap_add=cap_add,
        security_opt=["no-new-privileges"], mem_limit="512m", pids_limit=512)
    try:
        container.start()
        sock = rdir / "control.sock"
        deadline = time.monotonic() + 30
        while not sock.exists():
            container.reload()
            assert container.status == "running" and time.monotonic() < deadline, \
                container.logs(tail=20).decode(errors="replace")
            time.sleep(0.05)
        assert stat.S_IMODE(sock.stat().st_mode) & 0o007 == 0
        assert _as_uid(host_uid, _health(sock, token)) == "200"
        assert _as_uid(4322, _health(sock, token)) == "ConnectError"  # cannot pass the run root
        assert not (rdir / "token").exists()
        # The agent (uid 1000 inside) cannot reach the mount, even when its uid owns the host directory.
        ex = docker_client.api.exec_create(container.id, ["ls", ctl_mount], user="user")
        out = docker_client.api.exec_start(ex).decode()
        assert docker_client.api.exec_inspect(ex["Id"])["ExitCode"] != 0 and "Permission denied" in out, out
    finally:
        container.remove(force=True)


# ---- reaper ------------------------------------------------------------------------------------

def test_reaper_deletes_only_pool_dirs_inside_its_run_root(
        image: str, docker_client: docker.DockerClient, pool_name: str, tmp_path: Path) -> None:
    """Container labels may name any directory; the reaper (root, for `osgym pool reap`) must not follow them."""
    root = tmp_path / "run"
    root.mkdir(mode=0o700)
    victims = {"a": tmp_path / "precious", "d": tmp_path / f"{pool_name}-d"}  # both outside the run root
    for v in victims.values():
        v.mkdir()
        (v / "data").write_text("keep me")
    inside_no_owner = root / f"{pool_name}-b"  # inside, but not a pool dir (no owner file)
    inside_no_owner.mkdir()
    ours = root / f"{pool_name}-c"
    ours.mkdir()
    (ours / "owner").write_text("gone:1:1")
    dead = f"{os.uname().nodename}:999999999:1"
    made = []
    try:
        # a: a label naming any directory; b: a directory of the run root that is no pool's;
        # c: a pool directory (removed); d: a path through the run root that leads out of it,
        # named like its pool.
        for suffix, label_dir in (("a", victims["a"]), ("b", inside_no_owner), ("c", ours),
                                  ("d", root / ".." / victims["d"].name)):
            name = f"{pool_name}-{suffix}"
            labels = {POOL_LABEL: name, OWNER_LABEL: dead, RUN_DIR_LABEL: str(label_dir)}
            made.append(docker_client.api.create_container(image, name=f"{name}-{uuid.uuid4().hex[:4]}",
                                                           labels=labels)["Id"])
            # As `osgym pool reap --pool NAME` does; never an all-orphans reap here (other
            # processes' containers on this host are not this test's to remove).
            assert reap(docker_client, pool=name, run_dir=root) == 1
        for v in victims.values():
            assert (v / "data").read_text() == "keep me"
        assert inside_no_owner.is_dir()
        assert not ours.exists()
    finally:
        for c in made:
            try:
                docker_client.api.remove_container(c, force=True)
            except docker.errors.NotFound:
                pass
