"""A screenshot's parts, timed inside a replica: the grab (X socket or MIT-SHM), the cursor, the encoders,
the frames settle's hash and the window list; and what glibc's fixed malloc thresholds cost a grab.

One replica of the image, its screen at ``--screen`` with Mousepad open on a text file (as
``bench_step_latency.py`` has it); a script piped into ``docker exec -u osgym`` (the control server's user,
whose X authority it uses) times each part 40 times in a fresh interpreter, with the server's own modules
(``/opt/osgym``). Wall p50 and CPU per call (``os.times``), printed as JSON. ``--thresholds`` times a socket
grab plus a JPEG with glibc's default malloc thresholds, then with the fixed ones the control server sets
(``memory.return_freed_buffers``): run it on an image from before the MIT-SHM grab, whose server grabs so.

Usage:
    python bench/bench_screenshot_parts.py [--image osgym/apps:TAG] [--tier apps] [--screen 1920x1080] [--thresholds]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import docker  # noqa: E402

from bench.bench_step_latency import open_text  # noqa: E402
from osgym.replicas import images  # noqa: E402
from osgym.replicas.pool import ReplicaPool, limits_for  # noqa: E402

TIMER = '''
import ctypes, hashlib, io, json, os, statistics, sys, time
sys.path.insert(0, "/opt/osgym")
from PIL import ImageGrab

def timed(f, n=40):
    walls = []
    c0 = os.times()
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        walls.append((time.perf_counter() - t0) * 1000)
    c1 = os.times()
    return {"p50_ms": round(statistics.median(walls), 2),
            "cpu_ms": round((c1.user + c1.system - c0.user - c0.system) * 1000 / n, 2)}

def save(img, fmt, **kw):
    buf = io.BytesIO()
    img.save(buf, fmt, **kw)
    return buf.getvalue()
'''

PARTS = TIMER + '''
import png_writer
from screen import Screen
s = Screen(":0")
img = s.grab()
s.shm.used_at = time.monotonic()  # frames close together: through the segment
out = {
    "grab, X socket (Pillow's ImageGrab)": timed(lambda: ImageGrab.grab(xdisplay=":0")),
    "grab, MIT-SHM": timed(lambda: s.shm.grab()),
    "cursor composited": timed(lambda: s._draw_cursor(img)),
    "JPEG q80": timed(lambda: save(img, "JPEG", quality=80)),
    "PNG level 1, Pillow's adaptive filters": timed(lambda: save(img, "PNG", compress_level=1), 15),
    "PNG level 1, unfiltered rows (png_writer)": timed(lambda: png_writer.encode(img, 1), 15),
    "frame hash, X socket + BLAKE2b": timed(
        lambda: hashlib.blake2b(ImageGrab.grab(xdisplay=":0").tobytes(), digest_size=16).digest()),
    "frame hash, MIT-SHM + SHA-256": timed(lambda: s.shm.digest()),
    "window list": timed(lambda: s.windows()),
    "sizes_kib": {"png_pillow": len(save(img, "PNG", compress_level=1)) // 1024,
                  "png_unfiltered": len(png_writer.encode(img, 1)) // 1024,
                  "jpeg_q80": len(save(img, "JPEG", quality=80)) // 1024},
}
print(json.dumps(out))
'''

THRESHOLDS = TIMER + '''
libc = ctypes.CDLL("libc.so.6")
shot = lambda: save(ImageGrab.grab(xdisplay=":0"), "JPEG", quality=80)
out = {"socket grab + JPEG, glibc's default thresholds": timed(shot)}
libc.mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD and M_TRIM_THRESHOLD, as memory.return_freed_buffers() sets them
libc.mallopt(-1, 128 * 1024)
out["socket grab + JPEG, the control server's fixed 128 KiB thresholds"] = timed(shot)
print(json.dumps(out))
'''


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--image", help="an image tag (default: build --tier)")
    p.add_argument("--tier", default="apps", choices=images.TIERS)
    p.add_argument("--screen", default="1920x1080")
    p.add_argument("--thresholds", action="store_true", help="time glibc's malloc thresholds instead of the parts")
    args = p.parse_args()
    width, _, height = args.screen.partition("x")
    screen = (int(width), int(height))
    client = docker.from_env()
    tag = args.image or images.build(args.tier, client=client).tag
    load = round(os.getloadavg()[0], 2)
    with ReplicaPool(tag, 1, standby=0, screen=screen, docker_client=client, limits=limits_for(args.tier),
                     name=f"bench-parts-{int(time.time())}") as pool, pool.lease() as replica:
        open_text(replica)
        proc = subprocess.run(["docker", "exec", "-i", "-u", "osgym", "-e", "DISPLAY=:0",
                               "-e", "XAUTHORITY=/run/osgym/Xauthority", replica.container.id, "python3", "-"],
                              input=THRESHOLDS if args.thresholds else PARTS, capture_output=True, text=True,
                              timeout=600)
    if proc.returncode != 0:
        raise SystemExit(f"the timing script failed in the replica:\n{proc.stderr[-2000:]}")
    result = json.loads(proc.stdout)
    result.update(image=tag, screen=list(screen), loadavg_1m_before=load, loadavg_1m_after=round(os.getloadavg()[0], 2))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
