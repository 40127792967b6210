"""Screenshots (with the cursor drawn in) and the window list."""

import array
import hashlib
import io
import sys
import threading

import png_writer
import shm
from PIL import Image, ImageGrab
from Xlib import X, display
from Xlib.ext import xfixes  # noqa: F401  (registers the extension methods)


class Screen:
    def __init__(self, display_name):
        self.name = display_name
        self.d = display.Display(display_name)
        self.root = self.d.screen().root
        self.lock = threading.Lock()
        self.has_xfixes = self.d.has_extension("XFIXES")
        if self.has_xfixes:
            self.d.xfixes_query_version()
        self._atoms = {}
        self._cursor_cache = None
        self.shm = shm.open_grabber(display_name, self.root.id, *self.size)

    @property
    def size(self):
        s = self.d.screen()
        return s.width_in_pixels, s.height_in_pixels

    def grab(self, cursor=True):
        """The screen as an RGB image; the cursor composited in when asked."""
        img = self._via_shm(shm.ShmGrabber.grab)
        if img is None:
            img = ImageGrab.grab(xdisplay=self.name)
            if img.mode != "RGB":
                img = img.convert("RGB")
        if cursor:
            self._draw_cursor(img)
        return img

    def frame_hash(self):
        digest = self._via_shm(shm.ShmGrabber.digest)
        if digest is None:
            digest = hashlib.sha256(ImageGrab.grab(xdisplay=self.name).tobytes()).digest()
        return digest

    def _via_shm(self, read):
        """``read(grabber)``'s answer; None for a frame the grabber leaves to the socket, and from the first
        time it fails on (then every frame is the socket's)."""
        grabber = self.shm
        if grabber is None:
            return None
        try:
            return read(grabber)
        except OSError as exc:
            print(f"osgym: screenshots without MIT-SHM from now on: {exc}", file=sys.stderr, flush=True)
            self.shm = None
            return None

    def _cursor(self):
        """(RGBA image, left, top) of the cursor now; the image is cached by the cursor's serial."""
        with self.lock:
            c = self.d.xfixes_get_cursor_image(self.root)
        w, h = c.width, c.height
        if not w or not h:
            return None
        serial = (c.cursor_serial, w, h)
        if self._cursor_cache is None or self._cursor_cache[0] != serial:
            # ARGB as native 32-bit ints -> bytes B,G,R,A on little-endian X hosts: one C-level conversion.
            raw = array.array("I", c.cursor_image[: w * h]).tobytes()
            mode = "BGRA" if sys.byteorder == "little" else "ARGB"
            self._cursor_cache = (serial, Image.frombytes("RGBA", (w, h), raw, "raw", mode))
        return self._cursor_cache[1], c.x - c.xhot, c.y - c.yhot

    def _draw_cursor(self, img):
        if not self.has_xfixes:
            return
        cur = self._cursor()
        if cur is not None:
            image, left, top = cur
            img.paste(image, (left, top), image)

    def encode(self, img, fmt="png", quality=80, max_side=None, png_level=1):
        if max_side and max(img.size) > max_side:
            scale = max_side / max(img.size)
            img = img.resize((max(1, round(img.width * scale)), max(1, round(img.height * scale))), Image.BILINEAR)
        if fmt != "jpeg":
            return png_writer.encode(img, int(png_level)), img.size
        buf = io.BytesIO()
        img.save(buf, "JPEG", quality=int(quality))
        return buf.getvalue(), img.size

    # ---- windows ----------------------------------------------------------
    def _atom(self, name):
        if name not in self._atoms:
            self._atoms[name] = self.d.intern_atom(name)
        return self._atoms[name]

    def _prop(self, win, name, kind=X.AnyPropertyType):
        try:
            p = win.get_full_property(self._atom(name), kind)
        except Exception:
            return None
        return p.value if p is not None else None

    def _hidden_types(self):
        return (self._atom("_NET_WM_WINDOW_TYPE_DOCK"), self._atom("_NET_WM_WINDOW_TYPE_DESKTOP"))

    def windows(self):
        """Top-level client windows, as the EWMH window manager lists them."""
        with self.lock:
            ids = self._prop(self.root, "_NET_CLIENT_LIST") or []
            active = self._prop(self.root, "_NET_ACTIVE_WINDOW")
            active_id = int(active[0]) if active is not None and len(active) else 0
            out = []
            for wid in ids:
                win = self.d.create_resource_object("window", int(wid))
                try:
                    name = self._prop(win, "_NET_WM_NAME", self._atom("UTF8_STRING")) or self._prop(win, "WM_NAME")
                    if isinstance(name, bytes):
                        name = name.decode("utf-8", "replace")
                    cls = win.get_wm_class() or ("", "")
                    geo = win.get_geometry()
                    pos = self.root.translate_coords(win, 0, 0)
                    state = self._prop(win, "_NET_WM_STATE") or []
                    types = list(self._prop(win, "_NET_WM_WINDOW_TYPE") or [])
                except Exception:  # the window vanished while we looked
                    continue
                if any(t in self._hidden_types() for t in types):
                    continue  # the panel and the desktop are not application windows
                out.append({
                    "id": int(wid), "title": name or "", "wm_class": cls[1] if len(cls) > 1 else "",
                    "wm_instance": cls[0] if cls else "",
                    "x": pos.x, "y": pos.y, "width": geo.width, "height": geo.height,
                    "focused": int(wid) == active_id,
                    "minimized": self._atom("_NET_WM_STATE_HIDDEN") in list(state),
                })
            return out

    def activate(self, wid):
        from Xlib.protocol import event
        with self.lock:
            win = self.d.create_resource_object("window", int(wid))
            ev = event.ClientMessage(window=win, client_type=self._atom("_NET_ACTIVE_WINDOW"),
                                     data=(32, [2, X.CurrentTime, 0, 0, 0]))
            self.root.send_event(ev, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)
            self.d.sync()

    def close(self, wid):
        from Xlib.protocol import event
        with self.lock:
            win = self.d.create_resource_object("window", int(wid))
            ev = event.ClientMessage(window=win, client_type=self._atom("_NET_CLOSE_WINDOW"),
                                     data=(32, [X.CurrentTime, 2, 0, 0, 0]))
            self.root.send_event(ev, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)
            self.d.sync()
