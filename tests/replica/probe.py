"""An input probe that runs *inside* a replica (python3-tk is in the image).

A full-screen Tk window that appends every pointer and keyboard event it gets,
as one JSON object per line, to the file named by its first argument.
"""

import json
import sys
import tkinter

log = open(sys.argv[1], "a", buffering=1)
root = tkinter.Tk(className="osgymprobe")
root.title("osgym-probe")
root.geometry(f"{root.winfo_screenwidth() - 100}x{root.winfo_screenheight() - 150}+20+20")


def record(kind):
    def handler(e):
        log.write(json.dumps({"kind": kind, "x": e.x_root, "y": e.y_root, "num": getattr(e, "num", None),
                              "keysym": getattr(e, "keysym", None), "char": getattr(e, "char", None),
                              "state": int(e.state) if isinstance(e.state, int) else 0}) + "\n")
    return handler


for seq, kind in (("<ButtonPress>", "down"), ("<ButtonRelease>", "up"), ("<Double-Button-1>", "double"),
                  ("<B1-Motion>", "drag"), ("<KeyPress>", "key_down"), ("<KeyRelease>", "key_up"),
                  ("<Motion>", "motion")):
    root.bind(seq, record(kind))
root.after(50, lambda: log.write(json.dumps({"kind": "ready"}) + "\n"))
root.mainloop()
