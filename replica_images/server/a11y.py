"""Dump the AT-SPI accessibility tree as XML, in the layout OSWorld's server produces.

Run as a child process by the control server (``python3 a11y.py tree|terminal``),
so that a hung application or a huge tree can only cost that child: the parent
kills it at its deadline and bounds what it reads.

The XML: a ``desktop-frame`` root, one element per accessible named after its
role (``push-button``), the accessible's name as ``name``, states as
``st:<state>="true"``, object attributes as ``attr:<name>``, on-screen extents
as ``cp:screencoord="(x, y)"`` and ``cp:size="(w, h)"``, values under ``val:``,
actions under ``act:``, and its text as the element text.
"""

import argparse
import re
import sys
import urllib.parse
import xml.etree.ElementTree as ET

import protocol

NS = {
    "st": "https://accessibility.ubuntu.example.org/ns/state",
    "attr": "https://accessibility.ubuntu.example.org/ns/attributes",
    "cp": "https://accessibility.ubuntu.example.org/ns/component",
    "doc": "https://accessibility.ubuntu.example.org/ns/document",
    "docattr": "https://accessibility.ubuntu.example.org/ns/document/attributes",
    "txt": "https://accessibility.ubuntu.example.org/ns/text",
    "val": "https://accessibility.ubuntu.example.org/ns/value",
    "act": "https://accessibility.ubuntu.example.org/ns/action",
}
for _prefix, _uri in NS.items():
    ET.register_namespace(_prefix, _uri)

MAX_TEXT = 10_000
_BAD_NAME = re.compile(r"[^A-Za-z0-9_.-]")


def _xml_name(raw, default="unknown"):
    name = _BAD_NAME.sub("-", (raw or "").strip().replace(" ", "-")) or default
    return name if name[0].isalpha() or name[0] == "_" else "n" + name


def _clean(text):
    """Text safe for XML 1.0 (no control characters, no object-replacement characters)."""
    text = text.replace("\ufffc", "").replace("\ufffd", "")
    return "".join(ch for ch in text if ch in "\t\n\r" or ord(ch) >= 0x20)[:MAX_TEXT]


class Dumper:
    def __init__(self, max_nodes, max_depth, max_width, showing_only=False, window=None, find=None):
        """``find``: a ``protocol.A11yFind``; the walk (on screen only) stops at the first element it names."""
        import pyatspi  # imported here: only the child process needs it

        self.pyatspi = pyatspi
        self.find = find
        self.found = False
        self.showing_only = showing_only or find is not None
        self.window = window.lower() if window else None
        self.max_nodes = max_nodes
        self.max_depth = max_depth
        self.max_width = max_width
        self.nodes = 0
        self.truncated = False

    def _states(self, state_set, attrs):
        names = []
        for st in state_set.getStates():
            name = self.pyatspi.StateType._enum_lookup.get(int(st), "")
            name = name.split("_", 1)[1].lower() if "_" in name else name.lower()
            if name:
                names.append(name)
                attrs[f"{{{NS['st']}}}{_xml_name(name)}"] = "true"
        return names

    def node(self, node, depth, state_set=None, leaf=False):
        """``state_set``: the node's, when the caller has read it already (one D-Bus call fewer); ``leaf``:
        without its children."""
        self.nodes += 1
        attrs = {"name": _clean(node.name or "")}
        state_set = state_set or node.getState()
        states = self._states(state_set, attrs)
        try:
            for item in node.getAttributes() or []:  # ["key:value", ...]
                key, _, value = item.partition(":")
                if key:
                    attrs[f"{{{NS['attr']}}}{_xml_name(key)}"] = _clean(value)
        except Exception:  # an application may not implement attributes
            pass
        if "visible" in states and "showing" in states:
            try:
                ext = node.queryComponent().getExtents(self.pyatspi.XY_SCREEN)
                attrs[f"{{{NS['cp']}}}screencoord"] = f"({ext.x}, {ext.y})"
                attrs[f"{{{NS['cp']}}}size"] = f"({ext.width}, {ext.height})"
            except NotImplementedError:
                pass
        text = ""
        try:
            t = node.queryText()
            text = _clean(t.getText(0, min(t.characterCount, MAX_TEXT)))
        except NotImplementedError:
            pass
        if not self.showing_only:  # what it can do and its range: not needed to find or click it
            self._value_and_actions(node, attrs)
        el = ET.Element(_xml_name(node.getRoleName()), attrs)
        if text:
            el.text = text
        if leaf or depth >= self.max_depth:
            return el
        if self.find is not None and depth == 2:  # a top-level window: look in it for the one element
            self._find_in(node, depth, state_set, el)
            return el
        for child, child_states in self._children(node, depth, "manages_descendants" in states):
            try:
                el.append(self.node(child, depth + 1, child_states))
            except Exception:  # the accessible went away while we walked
                continue
        return el

    def _children(self, node, depth, manages):
        """The children of ``node`` (at ``depth``) that the walk takes, in order, each with its state set when the
        walk read it (``showing_only``), else None; ``manages``: whether ``node`` manages its descendants."""
        try:
            count = node.childCount
        except Exception:
            return
        seen_showing = False
        for i in range(min(count, self.max_width)):
            if self.found:
                return
            if self.nodes >= self.max_nodes:
                self.truncated = True
                return
            try:
                child = node.getChildAtIndex(i)
                if child is None:
                    continue
                if depth == 1 and self.window is not None and self.window not in (child.name or "").lower():
                    # another top-level window: a dialog's tree reads in a third of the time of the whole
                    # desktop's when LibreOffice's main window, with its menus, is left out
                    continue
                state_set = child.getState() if self.showing_only else None
                if state_set is not None and not state_set.contains(self.pyatspi.STATE_SHOWING):
                    # Off screen: no extents to click, no focus to hold. Skipping it skips most of the walk:
                    # LibreOffice exposes every item of its closed menus (a Writer window: 2,111 nodes in
                    # 6.8 s in all, 1,016 on screen).
                    if seen_showing and manages and count > self.max_width:
                        # A sheet's cells, row after row, more than we walk: the first row's on-screen
                        # ones have passed, and the rest of its columns would cost two calls each for
                        # nothing. A table we walk whole goes on: an off-screen cell there may be a
                        # hidden column's, with the next row's cells after it (VLC's playlist).
                        break
                    continue
            except Exception:  # the accessible went away while we walked
                continue
            seen_showing = True
            yield child, state_set

    def _find_in(self, top, depth, state_set, el):
        """Append to ``el`` (``top``'s) the first element under ``top`` that ``self.find`` names, if any."""
        f = self.find
        if f.focused and not state_set.contains(self.pyatspi.STATE_ACTIVE):
            return  # the caret of a window in the background takes no keys
        if self._matches(top, state_set):  # the window itself, as the tree's reader counts it too
            self.found = True
            return
        hit = self._seek(top, depth, state_set)
        if hit is not None:
            self.found = True
            el.append(self.node(hit[0], depth + 1, hit[1], leaf=True))

    def _seek(self, parent, depth, parent_states):
        """The first (node, state set) below ``parent`` that ``self.find`` names: the walk of :meth:`node` with
        ``showing_only`` (:meth:`_children`: the same elements in the same order), reading only what the match
        needs of each."""
        if depth >= self.max_depth:
            return None
        manages = parent_states.contains(self.pyatspi.STATE_MANAGES_DESCENDANTS)
        for child, state_set in self._children(parent, depth, manages):
            try:
                self.nodes += 1
                if self._matches(child, state_set):
                    return child, state_set
                hit = self._seek(child, depth + 1, state_set)
            except Exception:  # the accessible went away while we walked
                continue
            if hit is not None:
                return hit
        return None

    def _matches(self, node, state_set):
        """Whether ``node`` is the element ``self.find`` names; the cheapest tests first (the states are read)."""
        f, S = self.find, self.pyatspi
        if f.focused and not state_set.contains(S.STATE_FOCUSED):
            return False
        if f.name is not None and _clean(node.name or "") != f.name:
            return False
        if f.role and _xml_name(node.getRoleName()) != f.role:
            return False
        if f.sized:
            if not (state_set.contains(S.STATE_VISIBLE) and state_set.contains(S.STATE_SHOWING)):
                return False
            try:
                ext = node.queryComponent().getExtents(S.XY_SCREEN)
            except NotImplementedError:
                return False
            return ext.width > 0 and ext.height > 0
        return True

    def _value_and_actions(self, node, attrs):
        try:
            v = node.queryValue()
            for key, get in (("value", "currentValue"), ("min", "minimumValue"), ("max", "maximumValue"),
                             ("step", "minimumIncrement")):
                try:
                    attrs[f"{{{NS['val']}}}{key}"] = str(getattr(v, get))
                except Exception:
                    pass
        except NotImplementedError:
            pass
        try:
            a = node.queryAction()
            for i in range(min(a.nActions, 32)):
                name = _xml_name(a.getName(i))
                attrs[f"{{{NS['act']}}}{name}_desc"] = _clean(a.getDescription(i) or "")
                attrs[f"{{{NS['act']}}}{name}_kb"] = _clean(a.getKeyBinding(i) or "")
        except NotImplementedError:
            pass

    def tree(self):
        desktop = self.pyatspi.Registry.getDesktop(0)
        root = ET.Element("desktop-frame")
        for i in range(min(desktop.childCount, self.max_width)):
            if self.found:
                break
            try:
                app = desktop.getChildAtIndex(i)
                if app is not None:
                    root.append(self.node(app, 1))
            except Exception:
                continue
            if self.nodes >= self.max_nodes:
                self.truncated = True
                break
        if self.truncated:
            root.set("truncated", "true")
        if self.find is not None:  # a find's answer, not a tree: the element it asked for, or nothing
            root.set("found", "true" if self.found else "false")
        return root


def focused_terminal_text(root):
    """Text of the focused ``terminal`` element, as OSWorld's /terminal returns, or None."""
    focused = f"{{{NS['st']}}}focused"
    for el in root.iter("terminal"):
        if el.get(focused) == "true":
            return (el.text or "").rstrip()
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=("tree", "terminal"))
    p.add_argument("--max-nodes", type=int, default=20_000)
    p.add_argument("--max-depth", type=int, default=50)
    p.add_argument("--max-width", type=int, default=1024)
    p.add_argument("--showing-only", action="store_true",
                   help="only what is on screen, without values and actions: what a policy finds and clicks")
    p.add_argument("--window", help="only the top-level windows whose name contains this, any case")
    p.add_argument("--find", default="", help="stop at the first element on screen that these find_ query "
                   "parameters name (protocol.A11yFind), e.g. find_name=Save&find_role=push-button")
    args = p.parse_args()
    find = protocol.a11y_find(dict(urllib.parse.parse_qsl(args.find)))
    root = Dumper(args.max_nodes, args.max_depth, args.max_width, args.showing_only, args.window, find).tree()
    if args.mode == "terminal":
        text = focused_terminal_text(root)
        sys.stdout.write("" if text is None else "\x00" + text)
    else:
        sys.stdout.write(ET.tostring(root, encoding="unicode"))


if __name__ == "__main__":
    main()
