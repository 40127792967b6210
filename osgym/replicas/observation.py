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

    def matches(self, title_contains: str) -> bool:
        """Whether the title or the class contains ``title_contains`` (case-insensitive)."""
        needle = title_contains.lower()
        return needle in self.title.lower() or needle in self.wm_class.lower()


@dataclass(frozen=True)
class Observation:
    """A screenshot (as the replica encoded it) plus cheap structured context.

    ``width``/``height`` are the screenshot's pixels; ``screen`` is the replica's
    screen size, the space that action coordinates and window geometry live in.
    They differ when the recipe downscales screenshots (``max_side``).
    """

    screenshot: bytes
    screenshot_format: str  # "png" or "jpeg"
    width: int
    height: int
    instruction: str
    step: int
    windows: tuple[Window, ...] = field(default_factory=tuple)
    a11y: str | None = None
    screen: tuple[int, int] = (0, 0)

    def __post_init__(self) -> None:
        if self.screen == (0, 0):
            object.__setattr__(self, "screen", (self.width, self.height))

    def to_screen(self, x: float, y: float) -> tuple[int, int]:
        """Map a point in screenshot pixels to screen coordinates.

        >>> Observation(b"x", "png", 640, 400, "", 0, screen=(1280, 800)).to_screen(10, 20)
        (20, 40)
        """
        sx, sy = self.screen[0] / self.width, self.screen[1] / self.height
        return round(x * sx), round(y * sy)

    def window(self, title_contains: str) -> Window | None:
        """The first window whose title or class contains ``title_contains`` (case-insensitive)."""
        return next((w for w in self.windows if w.matches(title_contains)), None)

    @property
    def focused_window(self) -> Window | None:
        """The active window, if the window manager reports one."""
        return next((w for w in self.windows if w.focused), None)
