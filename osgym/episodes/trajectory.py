"""In-memory records of an episode: ``Step``, ``Trajectory`` and ``EpisodeResult``.

An episode (:mod:`osgym.episodes.episode`) records a :class:`Trajectory`. Collection and serving wrap it
with their metadata into an :class:`EpisodeResult` (:mod:`osgym.episodes.record`), which the dataset writer
stores: one ``episodes`` row plus its ``steps`` rows (``osgym.dataset.schema``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from osgym.errors import ERROR_CLASSES
from osgym.replicas.accounting import Usage
from osgym.replicas.observation import Window

MAX_RAW_CHARS = 32_768
"""A model reply longer than this is stored cut, with a note of how much was left out."""


def cap_raw(raw: str | None, limit: int = MAX_RAW_CHARS) -> str | None:
    """A model's reply as stored: whole up to ``limit`` characters, else cut with a note.

    >>> cap_raw("abcdef", limit=4)
    'abcd…[2 more characters not stored]'
    """
    if raw is None or len(raw) <= limit:
        return raw
    return f"{raw[:limit]}…[{len(raw) - limit} more characters not stored]"


def token_counts(usage: dict[str, Any] | None) -> tuple[int | None, int | None]:
    """Input and output tokens of a usage record, in either OpenAI shape (chat or responses API).

    >>> token_counts({"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940})
    (900, 40)
    >>> token_counts({"input_tokens": 5, "output_tokens": 2}), token_counts(None)
    ((5, 2), (None, None))
    """
    if not usage:
        return None, None

    def pick(*keys: str) -> int | None:
        for k in keys:
            v = usage.get(k)
            if isinstance(v, int | float) and not isinstance(v, bool):
                return int(v)
        return None

    return pick("input_tokens", "prompt_tokens"), pick("output_tokens", "completion_tokens")


def add_usage(records: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """Several policy calls' usage as one record (a wait asks the policy many times for one step).

    >>> add_usage([{"prompt_tokens": 3, "completion_tokens": 1}, None, {"input_tokens": 2, "output_tokens": 1}])
    {'input_tokens': 5, 'output_tokens': 2, 'calls': 3}
    """
    if not any(records):
        return None
    pairs = [token_counts(r) for r in records]
    return {"input_tokens": sum(i or 0 for i, _ in pairs), "output_tokens": sum(o or 0 for _, o in pairs),
            "calls": len(records)}

TERMINATIONS = ("done", "fail", "max_steps", "timeout", "error")
"""How an episode can end; ``error`` carries an ``error_class``."""


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class Step:
    """One observation and the action taken on it."""

    step: int
    ts: datetime
    screenshot: bytes
    screenshot_format: str  # "png" or "jpeg"; stored as the replica encoded it
    width: int
    height: int
    action: dict[str, Any]
    action_type: str
    thought: str | None = None
    a11y: str | None = None
    reward: float = 0.0
    done: bool = False
    policy_ms: float = 0.0
    env_ms: float = 0.0
    error: str | None = None
    raw: str | None = None
    usage: dict[str, Any] | None = None
    windows: tuple[Window, ...] = ()
    """The windows the policy saw, which was focused among them (not stored: the screenshot shows them);
    :mod:`osgym.episodes.focus` checks an oracle's input against them."""

    @property
    def screenshot_sha256(self) -> str:
        return hashlib.sha256(self.screenshot).hexdigest()

    def row(self, episode_id: str) -> dict[str, Any]:
        """This step as a row of the ``steps`` table."""
        return {
            "episode_id": episode_id,
            "step": self.step,
            "ts": self.ts,
            "screenshot": {"bytes": self.screenshot, "path": f"{episode_id}/{self.step:04d}.{self.screenshot_format}"},
            "screenshot_sha256": self.screenshot_sha256,
            "width": self.width,
            "height": self.height,
            "a11y": self.a11y,
            "action": json.dumps(self.action, sort_keys=True),
            "action_type": self.action_type,
            "thought": self.thought,
            "reward": self.reward,
            "done": self.done,
            "policy_ms": self.policy_ms,
            "env_ms": self.env_ms,
            "error": self.error,
            "raw": cap_raw(self.raw),
            "usage": json.dumps(self.usage, sort_keys=True, default=str) if self.usage else None,
            "input_tokens": token_counts(self.usage)[0],
            "output_tokens": token_counts(self.usage)[1],
        }

    @property
    def bytes_stored(self) -> int:
        """The payload this step stores: screenshot, tree and reply."""
        return len(self.screenshot) + len((self.a11y or "").encode()) + len((cap_raw(self.raw) or "").encode())


@dataclass
class Trajectory:
    """What one attempt at an episode produced: its steps, outcome and timings."""

    steps: list[Step] = field(default_factory=list)
    score: float = 0.0
    termination: str = "error"  # one of TERMINATIONS
    error_class: str | None = None
    error_message: str | None = None
    started_at: datetime = field(default_factory=utcnow)
    ended_at: datetime | None = None
    setup_s: float = 0.0
    policy_s: float = 0.0
    env_s: float = 0.0
    setup_failures: list[str] = field(default_factory=list)
    """The setup steps (``config[]``, then ``evaluator.postconfig``) that failed but that setup went on after, as
    OSWorld does (a command exiting non-zero): one message each, naming the step. Empty when every step ran."""

    @property
    def success(self) -> bool:
        return self.termination in ("done", "fail") and self.error_class is None and self.score >= 1.0


@dataclass
class EpisodeResult:
    """One finished episode: an ``episodes`` row and its steps, ready to write."""

    episode_id: str
    run_id: str
    task_id: str
    variant: str
    domain: str
    instruction: str
    policy: str
    policy_config: dict[str, Any]
    image: str
    replica_id: str | None
    host: str | None
    trajectory: Trajectory
    attempts: int = 1
    replica_s: float = 0.0
    cost_usd: float = 0.0
    usage: Usage | None = None  # what the replica used while leased (its cgroup), if readable
    related_apps: list[str] = field(default_factory=list)  # the task's applications
    hollow: bool = False  # a hollow replica ran it (osgym.replicas.hollow): a load test, not agent data

    def tokens(self) -> tuple[int | None, int | None]:
        """The episode's input and output tokens, None if no step reported usage."""
        counts = [token_counts(s.usage) for s in self.trajectory.steps if s.usage]
        if not counts:
            return None, None
        return sum(i or 0 for i, _ in counts), sum(o or 0 for _, o in counts)

    def bytes_written(self) -> int:
        return sum(s.bytes_stored for s in self.trajectory.steps)

    def episode_row(self) -> dict[str, Any]:
        """This episode as a row of the ``episodes`` table."""
        t = self.trajectory
        return {
            "episode_id": self.episode_id,
            "run_id": self.run_id,
            "task_id": self.task_id,
            "variant": self.variant,
            "domain": self.domain,
            "instruction": self.instruction,
            "policy": self.policy,
            "policy_config": json.dumps(self.policy_config, sort_keys=True, default=str),
            "image": self.image,
            "replica_id": self.replica_id,
            "host": self.host,
            "started_at": t.started_at,
            "ended_at": t.ended_at or t.started_at,
            "num_steps": len(t.steps),
            "success": t.success,
            "score": t.score,
            "termination": t.termination,
            "error_class": t.error_class,
            "error_message": t.error_message,
            "attempts": self.attempts,
            "setup_s": t.setup_s,
            "policy_s": t.policy_s,
            "env_s": t.env_s,
            "replica_s": self.replica_s,
            "cost_usd": self.cost_usd,
            "cpu_s": self.usage.cpu_s if self.usage else None,
            "mem_avg_mib": self.usage.mem_avg_mib if self.usage else None,
            "mem_peak_mib": self.usage.mem_peak_mib if self.usage else None,
            "net_bytes": self.usage.net_bytes if self.usage else None,
            "input_tokens": self.tokens()[0],
            "output_tokens": self.tokens()[1],
            "bytes_written": self.bytes_written(),
            "related_apps": list(self.related_apps),
            "setup_failures": list(t.setup_failures),
            "hollow": self.hollow,
        }

    def step_rows(self) -> list[dict[str, Any]]:
        return [s.row(self.episode_id) for s in self.trajectory.steps]

    def validate(self) -> None:
        """Check the record against the dataset contract.

        Raises:
            ValueError: naming the first field that breaks it.
        """
        t = self.trajectory
        if not self.episode_id:
            raise ValueError("episode_id is empty")
        if t.termination not in TERMINATIONS:
            raise ValueError(f"termination: expected one of {TERMINATIONS}, actual {t.termination!r}")
        if t.error_class is not None and t.error_class not in ERROR_CLASSES:
            raise ValueError(f"error_class: expected one of {ERROR_CLASSES}, actual {t.error_class!r}")
        if self.attempts < 1:
            raise ValueError(f"attempts: expected >= 1, actual {self.attempts}")
        for i, s in enumerate(t.steps):
            if s.step != i:
                raise ValueError(f"step numbers must run 0..n-1; step {i} is numbered {s.step}")
            if not s.screenshot:
                raise ValueError(f"step {i} has an empty screenshot")

