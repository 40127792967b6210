"""A plain container's create, start and remove, with Docker's network sandbox (network `none`) and without
(`network_disabled`), alternating (ABBA in each round); the whole machine's busy CPU seconds (/proc/stat) and the
wall seconds of each, medians of --rounds each."""
import argparse
import os
import statistics
import time

import docker


def machine_cpu_s() -> float:
    f = [int(v) for v in open("/proc/stat").readline().split()[1:]]
    return (sum(f[:8]) - f[3] - f[4]) / os.sysconf("SC_CLK_TCK")


ap = argparse.ArgumentParser()
ap.add_argument("--image", default="osgym/desktop:latest")
ap.add_argument("--rounds", type=int, default=10)
args = ap.parse_args()
client = docker.from_env()
res: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
for i in range(args.rounds):
    for disabled in ((False, True) if i % 2 == 0 else (True, False)):
        c0, t0 = machine_cpu_s(), time.monotonic()
        ct = client.containers.create(args.image, command=["sleep", "30"], entrypoint=[], network_mode="none",
                                      network_disabled=disabled, labels={"osgym-bench": "plain-container"})
        ct.start()
        ct.remove(force=True)
        res[disabled].append((time.monotonic() - t0, machine_cpu_s() - c0))
for disabled, v in res.items():
    print(f"network_disabled={disabled}: n {len(v)}, wall p50 {statistics.median(x[0] for x in v):.3f} s, "
          f"machine CPU p50 {statistics.median(x[1] for x in v):.3f} s")
