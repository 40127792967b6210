"""The one spelling of an action list, and equality of two lists in it: what a rendered reply is checked by.

Some actions have two spellings that run the same (a right ``Click`` and a ``RightClick``); a format's parser
reads back one of them, so a written reply is compared with the actions in :func:`canonical` form.
"""

from __future__ import annotations

from collections.abc import Sequence

from osgym.replicas.actions import Action, Click, DoubleClick, Hotkey, KeyDown, KeyUp, Press, RightClick

__all__ = ["canonical", "same_actions"]


def _key(name: str) -> str:
    # pyautogui and UI-TARS lower-case named keys (pyautogui itself does): 'Return' and 'return' are one key.
    return name.lower() if len(name) > 1 else name


def canonical(actions: Sequence[Action]) -> list[Action]:
    """The one spelling of actions that have two: a right ``Click`` is a ``RightClick``, a left double
    ``Click`` a ``DoubleClick``, a one-key ``Hotkey`` a ``Press``, and named keys are lower case.

    >>> canonical([Click(x=1, y=2, button="right"), Hotkey(keys=["Return"])])
    [RightClick(action_type='RIGHT_CLICK', x=1, y=2), Press(action_type='PRESS', key='return')]
    """
    out: list[Action] = []
    for a in actions:
        if isinstance(a, Click) and a.button == "right" and a.num_clicks == 1:
            a = RightClick(x=a.x, y=a.y)
        elif isinstance(a, Click) and a.button == "left" and a.num_clicks == 2:
            a = DoubleClick(x=a.x, y=a.y)
        elif isinstance(a, Hotkey):
            a = Press(key=_key(a.keys[0])) if len(a.keys) == 1 else Hotkey(keys=[_key(k) for k in a.keys])
        elif isinstance(a, Press | KeyDown | KeyUp):
            a = a.model_copy(update={"key": _key(a.key)})
        out.append(a)
    return out


def same_actions(got: Sequence[Action], want: Sequence[Action], tolerance: float = 0.0) -> bool:
    """Whether two action lists are equal in canonical form, coordinates within ``tolerance`` pixels.

    >>> same_actions([Click(x=1, y=2, button="right")], [RightClick(x=2, y=2)], tolerance=1)
    True
    """
    got, want = canonical(got), canonical(want)
    if len(got) != len(want):
        return False
    for g, w in zip(got, want, strict=True):
        gd, wd = g.model_dump(), w.model_dump()
        for axis in ("x", "y"):
            gv, wv = gd.pop(axis, None), wd.pop(axis, None)
            if (gv is None) != (wv is None) or (gv is not None and abs(gv - wv) > tolerance):
                return False
        if gd != wd:
            return False
    return True
