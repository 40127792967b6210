"""A policy backed by any OpenAI-compatible chat-completions endpoint with images.

vLLM, SGLang and hosted APIs all speak ``POST {base_url}/chat/completions``.
Each :meth:`OpenAIPolicy.act` sends the system prompt, the last
``history_length`` turns (screenshot and the model's reply) and the current
screenshot as a base64 data URL, then parses the reply with the action format
that ``action_format`` names in the registry of :mod:`osgym.agents.formats`:

=============== ===================================================== ============
action_format   reply                                                 coordinates
=============== ===================================================== ============
``pyautogui``   pyautogui code in a fenced block, or WAIT/DONE/FAIL   image pixels
``computer_13`` computer_13 JSON, flat or OSWorld-nested              image pixels
``uitars``      ``Thought: ... Action: click(start_box='(x,y)')``     0..1000 or image pixels
``anthropic``   computer-use tool input JSON (give a ``system_prompt``) image pixels
``osgym``       OSGym's strings ``click(x,y)&type(hi)``, fenced or bare image pixels
=============== ===================================================== ============

A format registered elsewhere (:func:`osgym.agents.formats.register_format`) works the same way.

Coordinates are read in the space of the image the model saw (downscaled to
``max_side``) and mapped onto the screen, so models never need the real size.

The policy calls only endpoints under a prefix in the operator's
``OSGYM_MODEL_BASE_URLS`` (default: OpenAI's API), because every request carries
the operator's key (``OPENAI_API_KEY``): a recipe naming any other ``base_url`` is
refused when it loads, and so is a policy built with one. Redirects are not
followed, so an allowed endpoint cannot pass the key on either.

HTTP 429 and 5xx answers and transport errors are retried with exponential
backoff, honouring ``Retry-After``. Any other failure, and a reply that cannot
be parsed, raises :class:`~osgym.errors.PolicyError`, which the episode runner
records as ``policy_error``.
"""

from __future__ import annotations

import base64
import io
import random
import time
import weakref
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx
from PIL import Image, UnidentifiedImageError
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from osgym.agents.formats import CoordSpace, ReplyContext, format_names, get_format
from osgym.agents.policies.base import Decision, PastStep
from osgym.agents.policies.registry import register_policy
from osgym.errors import ConfigError, PolicyError
from osgym.replicas.actions import Action, check_reply
from osgym.replicas.observation import Observation
from osgym.retrying import backoff, retry_after_seconds, retrying
from osgym.settings import OPENAI_API_BASE, settings, url_under

__all__ = [
    "DEFAULT_USER_PROMPT",
    "check_endpoint",
    "OpenAIPolicy",
    "OpenAIPolicyConfig",
    "fill_prompt",
]

DEFAULT_BASE_URL = OPENAI_API_BASE
"""OpenAI's API, as in OpenAI's own client; a local vLLM or SGLang server is named with ``base_url``
(and allowed by the operator's ``OSGYM_MODEL_BASE_URLS``)."""
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_CONNECT_TIMEOUT_S = 10.0
_BODY_EXCERPT = 300

DEFAULT_USER_PROMPT = "Here is the current screenshot. What is the next action?"
"""The text sent with the first screenshot of the window of turns."""


def _default_api_key() -> SecretStr | None:
    return settings().openai_api_key


def check_endpoint(base_url: str) -> None:
    """Refuse a model endpoint the operator has not allowed: requests to it carry the operator's key.

    Raises:
        ConfigError: if ``base_url`` is not under a prefix in ``OSGYM_MODEL_BASE_URLS``.
    """
    allowed = settings().model_base_urls
    if not any(url_under(base_url, prefix) for prefix in allowed):
        raise ConfigError(f"openai policy config: base_url: {base_url!r} is not an endpoint this worker's operator "
                          f"allows (OSGYM_MODEL_BASE_URLS: {', '.join(allowed) or 'none'}); requests carry the "
                          "operator's API key, so the operator must add the endpoint to OSGYM_MODEL_BASE_URLS")


def fill_prompt(template: str, **values: Any) -> str:
    """Fill ``{name}`` placeholders, leaving every other brace alone.

    Unlike :meth:`str.format`, JSON examples in a prompt need no escaping,
    except that ``{{`` and ``}}`` still stand for single braces.

    >>> fill_prompt('Task: {instruction} as {"a": 1} {{x}}', instruction="save")
    'Task: save as {"a": 1} {x}'
    """
    for name, value in values.items():
        template = template.replace("{" + name + "}", str(value))
    return template.replace("{{", "{").replace("}}", "}")


class OpenAIPolicyConfig(BaseModel):
    """Settings of :class:`OpenAIPolicy`; a value object whose repr masks the key.

    Prompts may use ``{instruction}``, ``{width}`` and ``{height}`` (the size of
    the image the model sees); other braces are left as they are.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str = DEFAULT_BASE_URL
    """The API root, ending where ``/chat/completions`` is appended (``.../v1``)."""
    model: str = Field(min_length=1)
    api_key: SecretStr | None = Field(default_factory=_default_api_key)
    """Sent as a bearer token; defaults to ``$OPENAI_API_KEY``; never in ``config()``."""
    system_prompt: str | None = None
    """``None`` picks the action format's registered prompt (``get_format(action_format).prompt``)."""
    user_prompt: str = DEFAULT_USER_PROMPT
    action_format: str = "pyautogui"
    """A name in the action-format registry (:func:`osgym.agents.formats.format_names`)."""
    history_length: int = Field(default=2, ge=0, le=50)
    """Previous turns (screenshot plus reply) sent before the current screenshot."""
    max_side: int | None = Field(default=1280, ge=32)
    """Screenshots whose longer side exceeds this are downscaled; ``None`` sends them whole."""
    uitars_coord_space: CoordSpace = "relative1000"
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=1024, ge=1)
    timeout: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, le=3600)
    """Seconds for a whole request to be read (connecting gets at most 10 s)."""
    max_retries: int = Field(default=4, ge=0, le=20)
    backoff_base: float = Field(default=1.0, ge=0)
    """First retry delay in seconds; doubled on each further retry."""
    backoff_max: float = Field(default=60.0, ge=0)
    """Cap on any one retry delay, including one asked for by ``Retry-After``."""
    send_seed: bool = False
    """Send ``seed`` (episode seed plus step) for reproducible sampling where supported."""
    extra_body: dict[str, Any] = Field(default_factory=dict)
    """Extra fields merged into each request body (``top_p``, vLLM's ``top_k`` ...)."""

    @field_validator("base_url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"expected an http:// or https:// URL, actual {value!r}")
        return value.rstrip("/")

    @field_validator("action_format")
    @classmethod
    def _check_format(cls, value: str) -> str:
        if value not in format_names():
            raise ValueError(f"expected one of {', '.join(format_names())}, actual {value!r}")
        return value

    @model_validator(mode="after")
    def _check_prompts(self) -> OpenAIPolicyConfig:
        if self.system_prompt is None and get_format(self.action_format).prompt is None:
            raise ValueError(f"action format {self.action_format!r} has no default prompt: expected a system_prompt")
        if "{instruction}" not in self.resolved_system_prompt + self.user_prompt:
            raise ValueError("expected {instruction} in system_prompt or user_prompt, actual in neither")
        return self

    @property
    def resolved_system_prompt(self) -> str:
        """The system prompt template in effect (the configured or the default one)."""
        if self.system_prompt is not None:
            return self.system_prompt
        return get_format(self.action_format).prompt or ""

    def public(self) -> dict[str, Any]:
        """This config as JSON-ready data, without the API key."""
        return self.model_dump(mode="json", exclude={"api_key"})


class _Busy(Exception):
    """An answer worth retrying: 429 or 5xx."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"HTTP {response.status_code}")
        self.response = response


@dataclass(frozen=True)
class _Turn:
    image_url: str
    reply: str


@dataclass(frozen=True)
class _Image:
    url: str
    size: tuple[int, int]


@register_policy("openai")
class OpenAIPolicy:
    """Asks a vision-language model behind an OpenAI-compatible API for each action.

    One keep-alive :class:`httpx.Client` serves all requests; :meth:`close`
    releases it (so does garbage collection), and the policy is a context manager.

    Args:
        config: an :class:`OpenAIPolicyConfig` or a mapping of its fields.
        transport: an httpx transport to use instead of the network (tests).
        sleep: the function that waits between retries.

    Raises:
        ConfigError: if ``config`` is not valid, or its ``base_url`` is not under a prefix the
            operator allows (``OSGYM_MODEL_BASE_URLS``).
    """

    name = "openai"
    options_model: ClassVar[type[BaseModel]] = OpenAIPolicyConfig
    """A recipe's ``policy.options`` are this config's fields (an unknown key is refused when it loads)."""

    def __init__(
        self,
        config: OpenAIPolicyConfig | Mapping[str, Any],
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not isinstance(config, OpenAIPolicyConfig):
            config = self.check_options(config)
        check_endpoint(config.base_url)  # also for a ready-made config: this is where the key leaves
        self._config = config
        self._sleep = sleep
        self._jitter = random.Random()
        headers = {"Accept": "application/json"}
        if config.api_key is not None:
            headers["Authorization"] = f"Bearer {config.api_key.get_secret_value()}"
        timeout = httpx.Timeout(config.timeout, connect=min(config.timeout, DEFAULT_CONNECT_TIMEOUT_S))
        # follow_redirects=False (httpx's default, spelled out): a redirect would carry the key elsewhere.
        self._client = httpx.Client(headers=headers, timeout=timeout, transport=transport, follow_redirects=False)
        # A policy dropped without close() (one per episode, say) still releases its connections.
        self._finalizer = weakref.finalize(self, self._client.close)
        self._url = f"{config.base_url}/chat/completions"
        self._turns: deque[_Turn] = deque(maxlen=max(config.history_length, 1))
        self._instruction: str | None = None
        self._seed = 0
        self._steps = 0
        self._closed = False

    @staticmethod
    def check_options(options: Mapping[str, Any]) -> OpenAIPolicyConfig:
        """The config that ``options`` describe; a recipe calls this when it loads.

        Raises:
            ConfigError: naming the first bad field.
        """
        try:
            config = OpenAIPolicyConfig.model_validate(dict(options))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "config"
            raise ConfigError(f"openai policy config: {where}: {err['msg']}") from exc
        check_endpoint(config.base_url)
        return config

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> OpenAIPolicy:
        """The policy a recipe's ``policy.options`` describe (they are its config)."""
        return cls(options)

    def __repr__(self) -> str:
        return f"OpenAIPolicy({self._config!r})"

    def __enter__(self) -> OpenAIPolicy:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def settings(self) -> OpenAIPolicyConfig:
        """The full config, key included (masked in its repr)."""
        return self._config

    def close(self) -> None:
        """Close the HTTP client. Idempotent; :meth:`act` raises afterwards."""
        self._closed = True
        self._finalizer()

    def config(self) -> dict[str, Any]:
        """The settings that describe this policy, without secrets."""
        return self._config.public()

    def reset(self, task: Any, *, seed: int) -> None:
        """Start an episode on ``task``; only ``task.instruction`` is read."""
        instruction = getattr(task, "instruction", None)
        if not isinstance(instruction, str):
            kind = type(instruction).__name__
            raise PolicyError(f"expected a task with a string instruction, actual {kind}")
        self._instruction = instruction
        self._seed = seed
        self._steps = 0
        self._turns.clear()

    def act(self, observation: Observation, history: Sequence[PastStep]) -> Decision:
        """Ask the model for the next actions on ``observation``.

        The policy keeps its own record of earlier turns (it needs the model's
        raw replies), so ``history`` is not read.

        Raises:
            PolicyError: if the policy is closed or not reset, the endpoint
                fails past its retries or answers an error, or the reply cannot
                be parsed into at least one action.
        """
        if self._closed:
            raise PolicyError("the openai policy is closed; create a new one")
        if self._instruction is None:
            raise PolicyError("act() called before reset(): expected a task first")
        image = self._encode(observation)
        payload = self._payload(image)
        started = time.perf_counter()
        data, attempts = self._post(payload)
        latency_ms = (time.perf_counter() - started) * 1000
        raw, reasoning = _reply_text(data)
        thought, actions = self._parse(raw, image.size, (observation.width, observation.height))
        self._turns.append(_Turn(image.url, raw))
        self._steps += 1
        usage = data.get("usage")
        return Decision(
            actions=actions,
            thought=thought or reasoning,
            raw=raw,
            usage=usage if isinstance(usage, dict) else None,
            extra={"attempts": attempts, "latency_ms": round(latency_ms, 1), "image_size": list(image.size)},
        )

    # ------------------------------------------------------------------ request

    def _encode(self, observation: Observation) -> _Image:
        """The screenshot as a data URL, downscaled to ``max_side`` if larger."""
        try:
            with Image.open(io.BytesIO(observation.screenshot)) as img:
                size = img.size
                fmt = (img.format or observation.screenshot_format or "png").lower()
                limit = self._config.max_side
                if limit is None or max(size) <= limit:
                    data = observation.screenshot
                else:
                    scale = limit / max(size)
                    size = (max(1, round(size[0] * scale)), max(1, round(size[1] * scale)))
                    source = img if img.mode in ("RGB", "L") else img.convert("RGB")
                    small = source.resize(size, Image.Resampling.BICUBIC, reducing_gap=2.0)
                    out = io.BytesIO()
                    if fmt == "jpeg":
                        small.save(out, format="JPEG", quality=85)
                    else:
                        fmt = "png"
                        small.save(out, format="PNG", compress_level=1)
                    data = out.getvalue()
        except (UnidentifiedImageError, OSError, ValueError) as exc:
            raise PolicyError(
                f"expected a PNG or JPEG screenshot, actual {len(observation.screenshot)} undecodable bytes"
            ) from exc
        return _Image(f"data:image/{fmt};base64,{base64.b64encode(data).decode('ascii')}", size)

    def _payload(self, image: _Image) -> dict[str, Any]:
        cfg = self._config
        values = {"instruction": self._instruction, "width": image.size[0], "height": image.size[1]}
        system = fill_prompt(cfg.resolved_system_prompt, **values)
        user_text = {"type": "text", "text": fill_prompt(cfg.user_prompt, **values)}
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system.strip() else []
        window = list(self._turns)[-cfg.history_length:] if cfg.history_length else []
        for i, turn in enumerate(window):
            picture = {"type": "image_url", "image_url": {"url": turn.image_url}}
            messages.append({"role": "user", "content": [user_text, picture] if i == 0 else [picture]})
            messages.append({"role": "assistant", "content": turn.reply})
        current = {"type": "image_url", "image_url": {"url": image.url}}
        messages.append({"role": "user", "content": [current] if window else [user_text, current]})
        payload: dict[str, Any] = {
            **cfg.extra_body,
            "model": cfg.model,
            "messages": messages,
            "temperature": cfg.temperature,
            "max_tokens": cfg.max_tokens,
        }
        if cfg.send_seed:
            payload["seed"] = self._seed + self._steps
        return payload

    def _backoff(self, attempt: int) -> float:
        """The wait after failed attempt number ``attempt`` (1-based): doubling, capped, jittered."""
        cfg = self._config
        return backoff(cfg.backoff_base, cfg.backoff_max, attempt) * (0.5 + self._jitter.random() / 2)

    def _post(self, payload: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """POST with retries; the decoded JSON answer and the number of attempts."""
        cfg = self._config
        attempts = 0

        def wait(exc: BaseException) -> float:
            # The server's Retry-After when it gives one, else the jittered backoff (the helper caps both).
            hinted = retry_after_seconds(exc.response.headers.get("Retry-After")) if isinstance(exc, _Busy) else None
            return self._backoff(attempts) if hinted is None else hinted

        try:
            for attempt in retrying(attempts=cfg.max_retries + 1, on=(httpx.TransportError, _Busy),
                                    backoff_max_s=cfg.backoff_max, wait_hint=wait, sleep=self._sleep):
                with attempt:
                    attempts += 1
                    response = self._client.post(self._url, json=payload)
                    if response.status_code == 429 or response.status_code >= 500:
                        raise _Busy(response)
        except httpx.TransportError as exc:
            raise PolicyError(
                f"{self._url} unreachable after {attempts} attempts: {type(exc).__name__}: {exc}"
            ) from exc
        except _Busy as exc:
            raise PolicyError(
                f"expected HTTP 200 from {self._url}, actual {exc.response.status_code} after {attempts} attempts: "
                f"{_excerpt(exc.response.text)}"
            ) from None
        status = response.status_code
        body = _excerpt(response.text)
        if status != 200:
            raise PolicyError(f"expected HTTP 200 from {self._url}, actual {status}: {body}")
        try:
            data = response.json()
        except ValueError as exc:
            raise PolicyError(f"expected a JSON body from {self._url}, actual {body}") from exc
        if not isinstance(data, dict):
            raise PolicyError(f"expected a JSON object from {self._url}, actual {body}")
        return data, attempts

    # ------------------------------------------------------------------ reply

    def _parse(
        self, raw: str, image_size: tuple[int, int], screen: tuple[int, int]
    ) -> tuple[str | None, list[Action]]:
        fmt = self._config.action_format
        context = ReplyContext(image_size, screen, self._config.uitars_coord_space)
        try:
            thought, actions = get_format(fmt).parse(raw, context)
            check_reply(actions)  # every format, a registered third-party one too
        except PolicyError as exc:
            raise PolicyError(f"cannot parse the {fmt} reply ({exc}): {_excerpt(raw)}") from exc
        if not actions:
            raise PolicyError(f"expected at least one {fmt} action, actual none in: {_excerpt(raw)}")
        return thought, actions


def _excerpt(text: str) -> str:
    text = text.strip().replace("\n", "\\n")
    return text if len(text) <= _BODY_EXCERPT else text[: _BODY_EXCERPT - 3] + "..."


def _reply_text(data: dict[str, Any]) -> tuple[str, str | None]:
    """The assistant's text (and any separate reasoning) from a chat completion."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise PolicyError(f"expected a completion with choices, actual {_excerpt(repr(data))}")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise PolicyError(f"expected choices[0].message, actual {_excerpt(repr(choices[0]))}")
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if not isinstance(content, str) or not content.strip():
        reason = choices[0].get("finish_reason")
        raise PolicyError(f"expected reply text, actual {content!r:.80} (finish_reason={reason!r})")
    reasoning = message.get("reasoning_content")
    return content, (reasoning.strip() or None) if isinstance(reasoning, str) else None
