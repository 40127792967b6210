import time, json, docker
from pathlib import Path
from osgym.replicas.pool import ReplicaPool, limits_for
from osgym.replicas import images

def cpu_s(cid):
    return int(Path(f"/sys/fs/cgroup/cpuacct/docker/{cid}/cpuacct.usage").read_text()) / 1e9

def calc(r):
    r.launch(["libreoffice", "--calc"])
    t0 = time.monotonic()
    while time.monotonic() - t0 < 120:
        ws = [w for w in r.windows() if "libreoffice-calc" in w.wm_class.lower()]
        if ws:
            return ws[0], time.monotonic() - t0
        time.sleep(0.1)
    raise TimeoutError

out = []
for reset, warm in (("restore", "libreoffice"), ("cold", "desktop")):
    with ReplicaPool(images.ensure_image("apps"), 1, standby=0, screen=(1920, 1080), limits=limits_for("apps"),
                     reset=reset, warm=warm if reset == "restore" else "desktop", name=f"calcfirst-{int(time.time())}") as pool, pool.lease() as r:
        cid = r.container.id
        time.sleep(5)
        for i in (1, 2):
            c0 = cpu_s(cid); w, took = calc(r); time.sleep(3); c1 = cpu_s(cid)
            out.append({"reset": reset, "calc_window": i, "cpu_s_to_window_plus_3s": round(c1 - c0, 2), "window_s": round(took, 2)})
            r.close_window(w.title, timeout=10)
            time.sleep(3)
print(json.dumps(out, indent=1))
