"""Keyboard and mouse input through the XTEST extension, in-process.

One X connection, guarded by a lock: python-xlib displays are not thread-safe.
Every event is synced (one round trip each), and keys stay paced as pyautogui paces them
(it syncs per event too). ``sync`` ends a batch.

A synced pointer event has been *processed*, not necessarily *delivered*. The server stamps a
button event with the sprite position of when it delivers it (``ProcessDeviceEvent`` sets
root_x/root_y from ``GetSpritePosition``), and while a client holds a synchronous grab the
core pointer is frozen: events are queued and delivered only once the grab's owner calls
``XAllowEvents``. openbox holds exactly such a grab on every press in a client window
(its Client-context click-to-focus bindings, ``GrabModeSync`` then ``ReplayPointer``), so
a release, move and next press sent before openbox has replayed the press were all queued
and then delivered at the *last* queued position (a right-click logged at the next click's
point). So every pointer event waits until the server shows it delivered: QueryPointer
reports the delivered sprite position and button state, which stay put while the pointer
is frozen.
"""

import threading
import time

from Xlib import XK, X, display
from Xlib.ext import xtest

BUTTONS = {"left": 1, "middle": 2, "right": 3}
CLICK_INTERVAL = 0.02  # seconds between the clicks of a double or triple click: well inside any double-click time
SCROLL_BUTTONS = {"up": 4, "down": 5, "left": 6, "right": 7}
BUTTON_MASKS = {1: X.Button1Mask, 2: X.Button2Mask, 3: X.Button3Mask}
DELIVERY_TIMEOUT = 1.0  # seconds to wait for a frozen pointer to thaw before going on regardless

# pyautogui / xdotool key names -> X keysym names
KEY_ALIASES = {
    "enter": "Return", "return": "Return", "\n": "Return", "esc": "Escape", "escape": "Escape",
    "tab": "Tab", "\t": "Tab", "space": "space", " ": "space", "backspace": "BackSpace",
    "delete": "Delete", "del": "Delete", "insert": "Insert", "home": "Home", "end": "End",
    "pageup": "Prior", "pgup": "Prior", "page_up": "Prior", "pagedown": "Next", "pgdn": "Next",
    "page_down": "Next", "up": "Up", "down": "Down", "left": "Left", "right": "Right",
    "ctrl": "Control_L", "control": "Control_L", "ctrlleft": "Control_L", "ctrlright": "Control_R",
    "shift": "Shift_L", "shiftleft": "Shift_L", "shiftright": "Shift_R",
    "alt": "Alt_L", "altleft": "Alt_L", "altright": "Alt_R", "option": "Alt_L",
    "win": "Super_L", "super": "Super_L", "cmd": "Super_L", "command": "Super_L", "meta": "Super_L",
    "winleft": "Super_L", "winright": "Super_R", "capslock": "Caps_Lock", "numlock": "Num_Lock",
    "printscreen": "Print", "prtsc": "Print", "menu": "Menu", "apps": "Menu", "pause": "Pause",
}


class InputError(ValueError):
    """Raised for an input the X server cannot produce (unknown key name)."""


class XInput:
    def __init__(self, display_name):
        self.d = display.Display(display_name)
        self.root = self.d.screen().root
        self.lock = threading.RLock()
        self._scratch = self._find_scratch_keycode()
        self._scratch_sym = None

    def _find_scratch_keycode(self):
        first = self.d.display.info.min_keycode
        count = self.d.display.info.max_keycode - first + 1
        mapping = self.d.get_keyboard_mapping(first, count)
        for i in range(count - 1, -1, -1):
            if not any(mapping[i]):
                return first + i
        return self.d.display.info.max_keycode

    # ---- keys -------------------------------------------------------------
    def keysym(self, name):
        if len(name) == 1:
            if name in KEY_ALIASES:
                return XK.string_to_keysym(KEY_ALIASES[name])
            code = ord(name)
            return code if (0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF) else 0x01000000 | code
        sym = XK.string_to_keysym(KEY_ALIASES.get(name.lower(), name))
        if not sym:
            sym = XK.string_to_keysym(name.capitalize() if name.lower().startswith("f") else name)
        if not sym:
            raise InputError(f"unknown key name {name!r}")
        return sym

    def _keycode(self, sym):
        """(keycode, needs_shift) for a keysym, remapping a spare keycode if none has it."""
        for code, index in self.d.keysym_to_keycodes(sym):
            if index in (0, 1):
                return code, index == 1
        if self._scratch_sym != sym:
            self.d.change_keyboard_mapping(self._scratch, [(sym, sym)])
            self.d.sync()
            self._scratch_sym = sym
        return self._scratch, False

    def key_down(self, name):
        with self.lock:
            code, shift = self._keycode(self.keysym(name))
            if shift:
                xtest.fake_input(self.d, X.KeyPress, self._keycode(XK.XK_Shift_L)[0])
            xtest.fake_input(self.d, X.KeyPress, code)
            self.d.sync()

    def key_up(self, name):
        with self.lock:
            code, shift = self._keycode(self.keysym(name))
            xtest.fake_input(self.d, X.KeyRelease, code)
            if shift:
                xtest.fake_input(self.d, X.KeyRelease, self._keycode(XK.XK_Shift_L)[0])
            self.d.sync()

    def press(self, name):
        with self.lock:
            self.key_down(name)
            self.key_up(name)

    def hotkey(self, names):
        with self.lock:
            syms = [self.keysym(n) for n in names]  # validate every name before pressing any
            codes = [self._keycode(s)[0] for s in syms]
            for c in codes:
                xtest.fake_input(self.d, X.KeyPress, c)
            for c in reversed(codes):
                xtest.fake_input(self.d, X.KeyRelease, c)
            self.d.sync()

    def type_text(self, text, interval=0.0):
        with self.lock:
            for ch in text:
                self.press(ch)
                if interval:
                    time.sleep(interval)

    # ---- pointer ----------------------------------------------------------
    def _until_delivered(self, delivered):
        """Poll QueryPointer until ``delivered(reply)``: the pointer is not frozen by a synchronous
        grab (or it stayed frozen for DELIVERY_TIMEOUT, e.g. a client that never releases it)."""
        deadline = time.monotonic() + DELIVERY_TIMEOUT
        while not delivered(self.root.query_pointer()) and time.monotonic() < deadline:
            time.sleep(0.001)

    def move(self, x, y):
        with self.lock:
            s = self.d.screen()
            target = min(max(int(x), 0), s.width_in_pixels - 1), min(max(int(y), 0), s.height_in_pixels - 1)
            before = self.pointer()
            xtest.fake_input(self.d, X.MotionNotify, x=target[0], y=target[1])
            self.d.sync()
            # delivered: the sprite is at the target, or at least moved (a grab may confine it)
            self._until_delivered(lambda p: (p.root_x, p.root_y) == target or (p.root_x, p.root_y) != before)

    def button(self, button, down):
        with self.lock:
            code = BUTTONS[button]
            xtest.fake_input(self.d, X.ButtonPress if down else X.ButtonRelease, code)
            self.d.sync()
            mask = BUTTON_MASKS[code]
            self._until_delivered(lambda p: bool(p.mask & mask) == down)

    def click(self, x=None, y=None, button="left", clicks=1):
        with self.lock:
            if x is not None and y is not None:
                self.move(x, y)
            for i in range(clicks):
                if i:
                    time.sleep(CLICK_INTERVAL)  # clicks in the same X millisecond get lost by some toolkits (Tk)
                self.button(button, True)
                self.button(button, False)

    def drag_to(self, x, y, button="left"):
        with self.lock:
            self.button(button, True)
            pos = self.pointer()
            steps = 8
            for i in range(1, steps + 1):
                self.move(pos[0] + (x - pos[0]) * i // steps, pos[1] + (y - pos[1]) * i // steps)
            self.button(button, False)

    def scroll(self, dx=0, dy=0, x=None, y=None):
        with self.lock:
            if x is not None and y is not None:
                self.move(x, y)
            for amount, neg, pos in ((dy, "down", "up"), (dx, "left", "right")):
                b = SCROLL_BUTTONS[pos if amount > 0 else neg]
                for _ in range(abs(int(amount))):
                    xtest.fake_input(self.d, X.ButtonPress, b)
                    xtest.fake_input(self.d, X.ButtonRelease, b)
            self.d.sync()

    def sync(self):
        """Wait until the X server has processed every input sent so far (one round trip per batch,
        not per event: input requests are only flushed as they are made)."""
        with self.lock:
            self.d.sync()

    def pointer(self):
        with self.lock:
            p = self.root.query_pointer()
            return p.root_x, p.root_y
