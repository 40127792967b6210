"""How the replica reads its screen: frames close together through an MIT-SHM segment the server alone can
map, a frame after a pause through the X socket, the pixels exactly the X server's either way, the segment
freed when screenshots stop; and the PNG it writes, lossless at every level."""

from __future__ import annotations

import base64
import io
import time

from PIL import Image

from osgym.replicas.client import Replica

# The agent's own view of the screen, through the X socket as Pillow reads it (not the server's segment).
USER_GRAB = ("import base64, io, sys; from PIL import ImageGrab; b = io.BytesIO(); "
             "ImageGrab.grab(xdisplay=':0').convert('RGB').save(b, 'PNG'); "
             "sys.stdout.write(base64.b64encode(b.getvalue()).decode())")
OSGYM_UID = 990  # the control server's system user (replica_images/desktop/Dockerfile)
IDLE_S = 2.0  # replica_images/server/shm.py
SHM_DEST = 0o1000  # <linux/shm.h>: the segment goes with its last attachment


def _pixels(data: bytes) -> bytes:
    return Image.open(io.BytesIO(data)).convert("RGB").tobytes()


def _segments(replica: Replica) -> list[list[str]]:
    """The IPC namespace's shared-memory segments: [key, shmid, perms, size, cpid, lpid, nattch, uid, ...] each."""
    out = replica.execute(["cat", "/proc/sysvipc/shm"]).output.splitlines()
    return [line.split() for line in out[1:] if line.strip()]


def _wait_released(replica: Replica) -> None:
    deadline = time.monotonic() + IDLE_S * 3 + 5  # the release is checked every IDLE_S / 2; room for load
    while _segments(replica) and time.monotonic() < deadline:
        time.sleep(0.25)
    assert _segments(replica) == [], "the segment is still held after the screenshots stopped"


def test_screenshots_are_the_x_servers_pixels_through_shared_memory(shared_replica: Replica) -> None:
    assert shared_replica.health()["grab"] == "mit-shm"
    api = shared_replica.api

    def shot(**params: str) -> bytes:
        return api.request("GET", "/screenshot", params={"cursor": "0", **params}).content

    for _ in range(5):  # the screen may change between the reads (the panel's clock): try again, boundedly
        _wait_released(shared_replica)
        time.sleep(IDLE_S)  # and a pause: the next frame comes through the socket
        by_socket = shot()
        by_segment = shot()  # within IDLE_S of the last: through a segment, made for it
        assert len(_segments(shared_replica)) == 1
        small = shot(png_level="6")  # Pillow's filters, where level 1 leaves rows unfiltered
        mine = base64.b64decode(shared_replica.execute(["python3", "-c", USER_GRAB], timeout=30).output)
        if _pixels(by_socket) == _pixels(by_segment) == _pixels(small) == _pixels(mine):
            break
    assert _pixels(by_segment) == _pixels(mine), "the segment's frame differs from the X server's own"
    assert _pixels(by_segment) == _pixels(by_socket)
    assert _pixels(small) == _pixels(by_segment)
    assert Image.open(io.BytesIO(by_segment)).format == "PNG"


def test_the_frame_segment_is_the_servers_alone_and_freed_when_screenshots_stop(shared_replica: Replica) -> None:
    w, h = shared_replica.health()["screen"]
    shared_replica.screenshot()
    shared_replica.screenshot()
    segs = _segments(shared_replica)
    assert len(segs) == 1, segs
    perms, size, uid = int(segs[0][2], 8), int(segs[0][3]), int(segs[0][7])
    # Owned by the server's user, 0600: the agent (`user`) can neither map nor change it; marked for removal
    # (SHM_DEST) from the start, so it cannot outlive the two processes that map it.
    assert (perms & 0o777, size, uid) == (0o600, w * h * 4, OSGYM_UID)
    assert perms & SHM_DEST
    _wait_released(shared_replica)
    time.sleep(IDLE_S)
    assert _pixels(shared_replica.screenshot().data)  # after the pause, through the socket
    assert _segments(shared_replica) == []
