"""Sample every process's CPU once a second while a command runs; print CPU by process name (its own, and its reaped
children's), the replicas' processes (in a docker cgroup) apart, and the machine's busy time from /proc/stat.

    python3 procsplit.py python3 bench/bench_collect.py --order flow+restore ...
"""

import collections
import os
import subprocess
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")


def machine() -> float:
    v = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) / HZ


def snap() -> dict[tuple[int, int], tuple[str, float, float, bool]]:
    """(pid, start time) -> (name, own CPU-s, reaped children's CPU-s, in a container)."""
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            stat = open(f"/proc/{p}/stat").read()
            cgroup = open(f"/proc/{p}/cgroup").read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        rest = stat[stat.rindex(")") + 2:].split()
        ut, st, cut, cst = (int(x) for x in rest[11:15])
        out[(int(p), int(rest[19]))] = (comm, (ut + st) / HZ, (cut + cst) / HZ,
                                        "docker/" in cgroup or "docker-" in cgroup)
    return out


first = snap()
last = dict(first)
m0 = machine()
proc = subprocess.Popen(sys.argv[1:])
while proc.poll() is None:
    time.sleep(1)
    last.update(snap())
last.update(snap())
m1 = machine()
by: collections.Counter[str] = collections.Counter()
for k, (comm, own, children, in_replica) in last.items():
    own0, children0 = (first[k][1], first[k][2]) if k in first else (0.0, 0.0)
    name = ("replica:" if in_replica else "") + comm
    by[name] += own - own0
    by[name + " (reaped children)"] += children - children0
print(f"machine busy {m1 - m0:.1f} CPU-s; processes seen {sum(by.values()):.1f} (own + reaped children; children that "
      "outlive a dead parent may double count)")
print(f"outside replicas {sum(v for k, v in by.items() if not k.startswith('replica:')):.1f}")
for k, v in by.most_common(40):
    if v > 0.2:
        print(f"{v:8.1f}  {k}")
