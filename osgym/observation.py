"""What a policy sees at each step."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Window:
    """One top-level window as the replica's window manager reports it."""

    id: int
    title: str
    x: int
    y: int
    width: int
    height: int
    focused: bool = False
    wm_class: str = ""

    @property
    def center(self) -> tuple[int, int]:
        return self.x + self.width // 2, self.y + self.height // 2


@dataclass(frozen=True)
class Observation:
    """A screenshot (as the replica encoded it) plus cheap structured context."""

    screenshot: bytes
    screenshot_format: str  # "png" or "jpeg"
    width: int
    height: int
    instruction: str
    step: int
    windows: tuple[Window, ...] = field(default_factory=tuple)
    a11y: str | None = None

    def window(self, title_contains: str) -> Window | None:
        """The first window whose title or class contains ``title_contains`` (case-insensitive)."""
        needle = title_contains.lower()
        for w in self.windows:
            if needle in w.title.lower() or needle in w.wm_class.lower():
                return w
        return None
