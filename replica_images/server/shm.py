"""The screen read through the X server's MIT-SHM extension, into a segment both processes map.

A plain GetImage (what Pillow's ``ImageGrab`` sends) carries the whole frame through the X socket: 8 MB at
1920x1080, written by Xvfb and read back by us in 64 KiB pieces, each a wake-up of the other process.
That was 11 ms and 9 ms of CPU of every screenshot (and of every look of a ``frames`` settle) on a
2-core host; with the segment the X server writes the frame into memory we read in place, 0.3 ms, and
what is left is converting its BGRX pixels to RGB (BENCHMARKS.md, "The step, end to end").

A segment costs memory, a frame's 8 MB, and making one costs its page faults (more than the socket saves
on one frame). So it is made for frames that come close together, a step that follows another within
``IDLE_S`` (an episode's steps, back to back) and a ``frames`` settle's looks, and freed ``IDLE_S`` after
the last grab; a frame after a longer pause (a model thinking between steps) comes through the socket as
before. A replica stepped at a model's pace, idle or being checkpointed holds no segment, and pays nothing
for it: at that pace its memory, not its CPU, is what a host runs out of (BENCHMARKS.md, "Cost at the
agent's pace").
It is created by the server's user with mode 0600, in the replica's own IPC namespace, and marked for
removal as soon as the X server has attached it: it goes away with the last of the two processes.

Spoken through libxcb (already loaded by Pillow's grab) rather than Xlib: an X error is a reply here, not a
call to ``exit()``. Anything unexpected (no extension, another pixel format) makes :func:`open_grabber`
return None, and the caller reads the screen the old way.
"""

import ctypes
import hashlib
import sys
import threading
import time

from PIL import Image

IDLE_S = 2.0
# Pillow frees an image's memory when it goes, and the next frame faults 8 MB in again (5 ms of a 1920x1080
# screenshot, in the server's threads); while frames are being taken it keeps one frame's block for the next.
BLOCKS_KEPT = 1
IPC_PRIVATE, IPC_CREAT, IPC_RMID = 0, 0o1000, 0
Z_PIXMAP = 2


class _Cookie(ctypes.Structure):
    _fields_ = [("sequence", ctypes.c_uint)]


class _ImageReply(ctypes.Structure):
    _fields_ = [("response_type", ctypes.c_uint8), ("depth", ctypes.c_uint8), ("sequence", ctypes.c_uint16),
                ("length", ctypes.c_uint32), ("visual", ctypes.c_uint32), ("size", ctypes.c_uint32)]


class _Error(ctypes.Structure):
    _fields_ = [("response_type", ctypes.c_uint8), ("error_code", ctypes.c_uint8), ("sequence", ctypes.c_uint16)]


def _libs():
    xcb, xshm, libc = ctypes.CDLL("libxcb.so.1"), ctypes.CDLL("libxcb-shm.so.0"), ctypes.CDLL(None, use_errno=True)
    p, u32 = ctypes.c_void_p, ctypes.c_uint32
    xcb.xcb_connect.restype, xcb.xcb_connect.argtypes = p, [ctypes.c_char_p, p]
    xcb.xcb_connection_has_error.argtypes = [p]
    xcb.xcb_generate_id.restype, xcb.xcb_generate_id.argtypes = u32, [p]
    xcb.xcb_request_check.restype, xcb.xcb_request_check.argtypes = ctypes.POINTER(_Error), [p, _Cookie]
    xcb.xcb_flush.argtypes = [p]
    xshm.xcb_shm_attach_checked.restype = _Cookie
    xshm.xcb_shm_attach_checked.argtypes = [p, u32, u32, ctypes.c_uint8]
    xshm.xcb_shm_detach.restype, xshm.xcb_shm_detach.argtypes = _Cookie, [p, u32]
    xshm.xcb_shm_get_image.restype = _Cookie
    xshm.xcb_shm_get_image.argtypes = [p, u32, ctypes.c_int16, ctypes.c_int16, ctypes.c_uint16, ctypes.c_uint16,
                                       u32, ctypes.c_uint8, u32, u32]
    xshm.xcb_shm_get_image_reply.restype = ctypes.POINTER(_ImageReply)
    xshm.xcb_shm_get_image_reply.argtypes = [p, _Cookie, ctypes.POINTER(ctypes.POINTER(_Error))]
    libc.shmget.restype, libc.shmget.argtypes = ctypes.c_int, [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
    libc.shmat.restype, libc.shmat.argtypes = p, [ctypes.c_int, p, ctypes.c_int]
    libc.shmdt.argtypes = [p]
    libc.shmctl.argtypes = [ctypes.c_int, ctypes.c_int, p]
    libc.free.argtypes = [p]
    return xcb, xshm, libc


class ShmGrabber:
    """Frames of one X screen (``root`` of ``width`` x ``height``, 24-bit TrueColor) through a shared segment."""

    def __init__(self, display_name, root, width, height):
        self.xcb, self.xshm, self.libc = _libs()
        self.root, self.size = root, (width, height)
        self.nbytes = width * height * 4
        self._frame = ctypes.c_char * self.nbytes  # the segment as a buffer (a ctypes type: made once)
        self.lock = threading.Lock()
        self.c = self.xcb.xcb_connect(display_name.encode(), None)
        if not self.c or self.xcb.xcb_connection_has_error(self.c):
            raise OSError(f"cannot connect to X display {display_name}")
        self.seg = None  # (xcb segment id, address) while one is attached
        self.used_at = -IDLE_S  # the last frame asked for, through the segment or not

    def grab(self):
        """The screen now, as an RGB image of its own (the segment is reused by the next grab), or None where
        this frame is better read through the socket (see the module's doc)."""
        with self.lock:
            buf = self._read(always=False)
            return None if buf is None else self._rgb(buf)

    def digest(self):
        """A hash of the screen's pixels now, for telling whether it changed. Always through the segment: a
        settle's looks come close together, and a look through the socket would hash other bytes (RGB, not
        the segment's BGRX), so the first two looks of every settle would differ. SHA-256: on CPUs with SHA
        instructions 4.6 ms for 8 MB, against 9.6 for BLAKE2b; CRC-32 was faster still, but 32 bits."""
        with self.lock:
            return hashlib.sha256(self._read()).digest()

    def check(self):
        """Read one frame through a segment made for it, then free it (and forget the frame, so the next grab
        after a pause is still the socket's). Raises OSError where MIT-SHM cannot serve."""
        with self.lock:
            self._rgb(self._read())
            self._detach()
            self.used_at = -IDLE_S

    def _rgb(self, buf):
        return Image.frombuffer("RGB", self.size, buf, "raw", "BGRX", 0, 1)

    def _read(self, always=True):
        """The segment, holding the screen now; without ``always``, None where no segment is attached and the
        last frame was ``IDLE_S`` ago or more (a frame after a pause is the socket's)."""
        now, last = time.monotonic(), self.used_at
        self.used_at = now
        if self.seg is None:
            if not always and now - last >= IDLE_S:
                return None
            self._attach()
        xseg, addr = self.seg
        w, h = self.size
        err = ctypes.POINTER(_Error)()
        reply = self.xshm.xcb_shm_get_image_reply(
            self.c, self.xshm.xcb_shm_get_image(self.c, self.root, 0, 0, w, h, 0xFFFFFFFF, Z_PIXMAP, xseg, 0),
            ctypes.byref(err))
        if not reply:
            code = err.contents.error_code if err else None
            self.libc.free(err)
            raise OSError(f"MIT-SHM GetImage failed (X error {code})")
        depth, size = reply.contents.depth, reply.contents.size
        self.libc.free(reply)
        if depth != 24 or size != self.nbytes:  # 32 bits a pixel, as the segment was sized
            raise OSError(f"MIT-SHM GetImage: depth {depth}, {size} bytes, expected 24 and {self.nbytes}")
        return self._frame.from_address(addr)

    def _attach(self):
        shmid = self.libc.shmget(IPC_PRIVATE, self.nbytes, IPC_CREAT | 0o600)
        if shmid < 0:
            raise OSError(ctypes.get_errno(), "shmget")
        addr = self.libc.shmat(shmid, None, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            self.libc.shmctl(shmid, IPC_RMID, None)
            raise OSError(ctypes.get_errno(), "shmat")
        xseg = self.xcb.xcb_generate_id(self.c)
        err = self.xcb.xcb_request_check(self.c, self.xshm.xcb_shm_attach_checked(self.c, xseg, shmid, 0))
        # Marked now, the segment lives exactly as long as its two attachments.
        self.libc.shmctl(shmid, IPC_RMID, None)
        if err:
            code = err.contents.error_code
            self.libc.free(err)
            self.libc.shmdt(addr)
            raise OSError(f"MIT-SHM attach failed (X error {code})")
        self.seg = (xseg, addr)
        Image.core.set_blocks_max(BLOCKS_KEPT)
        threading.Thread(target=self._release_when_idle, args=(self.seg,), name="shm-idle", daemon=True).start()

    def _release_when_idle(self, seg):
        while True:
            time.sleep(IDLE_S / 2)
            with self.lock:
                if self.seg is not seg:  # released meanwhile
                    return
                if time.monotonic() - self.used_at >= IDLE_S:
                    self._detach()
                    return

    def _detach(self):
        xseg, addr = self.seg
        self.seg = None
        self.xshm.xcb_shm_detach(self.c, xseg)
        self.xcb.xcb_flush(self.c)
        self.libc.shmdt(addr)
        Image.core.set_blocks_max(0)  # and the frames Pillow kept: an idle replica holds none


def open_grabber(display_name, root, width, height):
    """A :class:`ShmGrabber` that has read one frame (and freed its segment again), or None (and why, on
    stderr) where MIT-SHM cannot serve."""
    try:
        grabber = ShmGrabber(display_name, root, width, height)
        grabber.check()
        return grabber
    except OSError as exc:
        print(f"osgym: screenshots without MIT-SHM: {exc}", file=sys.stderr, flush=True)
        return None
