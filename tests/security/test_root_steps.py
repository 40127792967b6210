"""Root steps (a task's ``sudo`` commands, run by the host through ``docker exec``) are bounded (issue 38).

A task file is untrusted: its root step must not grow the worker's memory (``sudo cat /dev/zero``), hold the
worker past its time (a process that keeps the output open), keep a capability that reaches the replica's
server or its run directory (``sudo -u osgym``), or, as a ``launch`` step, run as the agent instead of root.
Real replicas throughout.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable

import pytest

from osgym.errors import SetupError
from osgym.replicas.client import Replica
from osgym.replicas.disk import writable_layer_usage
from osgym.replicas.execution import MAX_ROOT_FILE
from osgym.replicas.pool import ReplicaPool
from osgym.tasks.setup import run_step
from osgym.tasks.spec import SetupStep

pytestmark = pytest.mark.docker

CHILD = """
import json, sys, docker
from osgym.errors import SetupError
from osgym.replicas.client import Replica
from osgym.replicas.disk import writable_layer_usage
from osgym.replicas.execution import MAX_ROOT_FILE
container = docker.from_env().containers.get(sys.argv[1])
replica = Replica("probe", "unix:/nonexistent", None, container=container)
before = int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0])
res = replica.execute_as_root(sys.argv[2], shell=True, timeout=120)
peak = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0])
print(json.dumps({"status": res.status, "output": len(res.output), "error": res.error[-200:],
                  "grew_kib": peak - before}))
"""


@pytest.fixture
def root_replica(make_pool: Callable[..., ReplicaPool]) -> Replica:
    pool = make_pool(1)
    return pool.acquire()


def test_a_root_step_keeps_no_capability(root_replica: Replica) -> None:
    caps = root_replica.execute_as_root("grep ^Cap /proc/self/status; id -u", shell=True, timeout=30).output
    assert {line.split(":")[0]: int(line.split()[1], 16) for line in caps.splitlines()[:5]} == {
        "CapInh": 0, "CapPrm": 0, "CapEff": 0, "CapBnd": 0, "CapAmb": 0}, caps
    assert caps.splitlines()[-1] == "0"  # still root: it owns root's files
    for command in ("echo password | sudo -S -u osgym id -u", "setpriv --reuid=990 --regid=990 --clear-groups id -u",
                    "touch /run/osgym/ctl/probe"):
        res = root_replica.execute_as_root(command, shell=True, timeout=30)
        assert res.returncode != 0 and "990" not in res.output, (command, res)
    assert root_replica.health()["status"] == "ok"


def test_a_root_steps_output_is_capped_on_the_host(root_replica: Replica) -> None:
    """300 MiB of output: the host keeps at most the cap, and the worker's memory grows by about that much."""
    run = subprocess.run([sys.executable, "-c", CHILD, root_replica.container.id, "head -c 300M /dev/zero"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.splitlines()[-1])
    assert got["status"] == "error" and "passed" in got["error"] and got["output"] <= 16 * 2**20, got
    assert got["grew_kib"] < 80 * 1024, got  # the 16 MiB kept plus its decoding, never the 300 MiB


def test_a_root_steps_time_is_clamped(root_replica: Replica) -> None:
    """A task may ask for any timeout; timeout(1) in the replica is given at most MAX_ROOT_STEP_S, and a step
    past its own timeout ends as a timeout."""
    parent = root_replica.execute_as_root("tr '\\0' ' ' < /proc/$PPID/cmdline", shell=True, timeout=10**9).output
    assert parent.split()[:3] == ["timeout", "--kill-after=2", "600"], parent
    started = time.monotonic()
    res = root_replica.execute_as_root("sleep 600", shell=True, timeout=2)
    assert res.status == "timeout" and time.monotonic() - started < 2 + 2 + 30, res


def test_a_launch_step_with_sudo_runs_as_root(root_replica: Replica) -> None:
    run_step(root_replica, SetupStep(type="launch", parameters={
        "command": "echo password | sudo -S sh -c 'id -u > /tmp/launched-as'", "shell": True}))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        out = root_replica.execute("cat /tmp/launched-as 2>/dev/null", shell=True, timeout=10).output.strip()
        if out:
            break
        time.sleep(0.2)
    assert out == "0"


def test_a_root_steps_writes_to_the_layer_are_bounded(root_replica: Replica) -> None:
    """The agent's account writes only to capped tmpfs mounts; root owns the rest, on the unbounded layer. A root
    step writes no file past MAX_ROOT_FILE, and the layer past MAX_ROOT_LAYER fails the step."""
    write = f"head -c {MAX_ROOT_FILE + 2**20} /dev/zero > /big; s=$?; stat -c %s /big; exit $s"
    one = root_replica.execute_as_root(write, shell=True, timeout=120)
    assert one.returncode != 0 and int(one.output.split()[-1]) == MAX_ROOT_FILE, one
    layer = writable_layer_usage(root_replica.container).bytes
    assert layer < MAX_ROOT_FILE + 64 * 2**20
    with pytest.raises(SetupError, match="writable layer holds"):
        root_replica.execute_as_root(f"for i in 1 2 3; do head -c {MAX_ROOT_FILE - 2**20} /dev/zero > /big$i; done",
                                     shell=True, timeout=120)


HOME_STATE = "find /home/user -xdev -printf '%m %U %G %p\\n' | sort"
"""Every entry of the agent's home with its mode and owner (as `user`); ACL entries show in the mode's group bits."""


def test_sudo_in_a_root_step_means_what_it_means_on_ubuntu(root_replica: Replica) -> None:
    """The shapes of OSWorld's e0df059f and 7688b85f (commands of our own): the step's shell expands ``~`` and
    ``$HOME`` as the user's, only the command after ``sudo`` sees root's HOME, and what it makes in the user's
    Desktop is root's, as on Ubuntu; the agent can rename it there. The step's other programs do not get the
    user's HOME (they run as root and must not read the agent's dotfiles), and the agent still has no sudo."""
    before = root_replica.execute(HOME_STATE, shell=True, timeout=60).output
    run_step(root_replica, SetupStep(type="execute", parameters={
        "command": "echo 'password' | sudo -S mkdir ~/Desktop/osgym_sudo_dir", "shell": True, "check": True}))
    run_step(root_replica, SetupStep(type="execute", parameters={
        "command": "echo 'password' | sudo -S touch ~/Desktop/osgym_notes.txt && sudo mkdir ~/Desktop/osgym_done",
        "shell": "true", "check": True}))
    run_step(root_replica, SetupStep(type="execute", parameters={
        "command": "echo 'password' | sudo -S chmod 777 ~/Desktop/osgym_notes.txt && "
                   "sudo chmod 777 ~/Desktop/osgym_done", "shell": True, "check": True}))
    made = root_replica.execute("cd ~/Desktop && stat -c '%U %a %n' osgym_sudo_dir osgym_notes.txt osgym_done",
                                shell=True, timeout=30)
    assert made.output.splitlines() == ["root 755 osgym_sudo_dir", "root 777 osgym_notes.txt", "root 777 osgym_done"]
    assert root_replica.execute_as_root("test -e /root/Desktop || echo none", shell=True, timeout=30).output == "none\n"
    renamed = root_replica.execute("mv ~/Desktop/osgym_sudo_dir ~/Desktop/osgym_sudo_dir2 && "
                                   "mv ~/Desktop/osgym_notes.txt ~/Desktop/osgym_done/", shell=True, timeout=30)
    assert renamed.returncode == 0, renamed

    seen = root_replica.execute_as_root(
        "echo password | sudo -S sh -c 'echo $HOME $USER $LOGNAME $SUDO_USER'; echo $HOME $USER $LOGNAME ~; pwd; "
        "python3 -c 'import os; print(os.environ.get(\"HOME\"), os.path.expanduser(\"~\"))'", shell=True, timeout=60)
    assert seen.output.splitlines() == ["/root root root user", "/home/user user user /home/user", "/home/user",
                                        "None /root"], seen
    assert root_replica.execute_as_root(["sudo", "ls", "-d", "~/Desktop"], timeout=30).output == "/home/user/Desktop\n"

    # root's access to the home lasts as long as its step: modes, owners and ACLs are as they were
    # (the desktop session may add files meanwhile: the entries of both listings are compared)
    after = root_replica.execute(HOME_STATE, shell=True, timeout=60).output
    was, now = ({line.split(" ", 3)[3]: line for line in out.splitlines()} for out in (before, after))
    assert len(was) > 10 and "/home/user/Desktop" in was
    assert {p: now.get(p) for p in was} == was
    acl = root_replica.execute("python3 -c 'import os, sys; print(sum(\"system.posix_acl_access\" in "
                               "os.listxattr(os.path.join(t, n)) for t, ds, fs in os.walk(sys.argv[1]) "
                               "for n in ds + fs))' /home/user", shell=True, timeout=60)
    assert acl.output == "0\n", acl

    agent = root_replica.execute("echo password | sudo -S id -u", shell=True, timeout=30)
    assert agent.returncode != 0 and "0" not in agent.output.split(), agent
