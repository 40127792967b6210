#!/usr/bin/env python3
"""Chromium's window titles as Google Chrome's: ``<page> - Google Chrome``, not ``<page> - Chromium``.

OSWorld's Chrome tasks name the browser's window by its title (``activate_window "Google Chrome"``, wmctrl's
rule: a substring of the title), and on OSWorld's VM the browser is Google Chrome. Chromium takes the title's
format from its locale pack (``IDS_BROWSER_WINDOW_TITLE_FORMAT``, ``$1 - Chromium``), so this rewrites those
strings in the pack, found by their text, and nothing else: menus and dialogs still say Chromium.

Usage: chrome-title.py PAK (e.g. /usr/lib/chromium/locales/en-US.pak), in place. Exits non-zero, leaving the
file as it was, if the pack is not a version 5 pack or has no such string.

Pack version 5: a 12-byte header (uint32 version, uint8 encoding, 3 bytes padding, uint16 resource count,
uint16 alias count), then count + 1 entries (uint16 id, uint32 offset of its data; the last one marks the end),
then the aliases (uint16 id, uint16 entry index), then the data. Every offset is from the file's start.
"""

import os
import struct
import sys

TITLES = {
    b"$1 - Chromium": b"$1 - Google Chrome",
    b"$1 - Network Sign-in - Chromium": b"$1 - Network Sign-in - Google Chrome",
}


def rewrite(data):
    """The pack ``data`` with TITLES replaced; raises ValueError if it is not a v5 pack or has none of them."""
    version, encoding, count, aliases = struct.unpack_from("<IB3xHH", data, 0)
    if version != 5:
        raise ValueError(f"pack version {version}, expected 5")
    entries = [struct.unpack_from("<HI", data, 12 + 6 * i) for i in range(count + 1)]
    alias_table = data[12 + 6 * (count + 1):12 + 6 * (count + 1) + 4 * aliases]
    start = 12 + 6 * (count + 1) + 4 * aliases
    if entries[0][1] != start:
        raise ValueError(f"the data starts at {entries[0][1]}, expected {start}")
    blobs = [data[entries[i][1]:entries[i + 1][1]] for i in range(count)]
    changed = 0
    for i, blob in enumerate(blobs):
        if blob in TITLES:
            blobs[i] = TITLES[blob]
            changed += 1
    if not changed:
        raise ValueError("no window title format (" + ", ".join(t.decode() for t in TITLES) + ") in the pack")
    out = [struct.pack("<IB3xHH", version, encoding, count, aliases)]
    offset = start
    for i in range(count):
        out.append(struct.pack("<HI", entries[i][0], offset))
        offset += len(blobs[i])
    out.append(struct.pack("<HI", entries[count][0], offset))
    return b"".join(out) + alias_table + b"".join(blobs), changed


def main(path):
    with open(path, "rb") as f:
        data = f.read()
    try:
        new, changed = rewrite(data)
    except (ValueError, struct.error) as exc:
        sys.exit(f"{path}: {exc}")
    tmp = path + ".osgym"
    with open(tmp, "wb") as f:
        f.write(new)
    os.chmod(tmp, os.stat(path).st_mode & 0o7777)
    os.replace(tmp, path)
    print(f"{path}: {changed} window title format(s) now say Google Chrome")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: chrome-title.py PAK")
    main(sys.argv[1])
