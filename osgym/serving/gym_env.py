"""Gymnasium environments over osgym replicas: ``osgym/Desktop-v0`` and a vector env with group reset.

``gymnasium.make("osgym/Desktop-v0", ...)`` (after ``import osgym.serving.gym_env``, or through the
``gymnasium.envs`` entry point of an installed osgym) gives a :class:`DesktopEnv` over one of:

* servers: ``url="http://host:20000", token=...`` (``osgym serve``'s native ``/v1`` API), or a list of
  URLs: each session goes to the server with the most free capacity, and a session whose server is lost
  ends with :class:`~osgym.errors.ServerLost` naming it (:mod:`osgym.serving.servers`);
* a :class:`~osgym.serving.sessions.SessionManager` in this process (``manager=``), shared by many envs;
* its own one-replica pool (``image=`` or ``tier=``), closed with the env.

Observations are ``{"image": uint8 (H, W, 3), "instruction": str}``; actions are text in a registered
action format (``action_format``, default ``"osgym"``: ``click(x,y)&type(hi)&finish()``), or typed
computer_13 actions (a dict or a list of dicts) whatever the format. ``finish()`` (``DONE``) or
``call_user()`` (``FAIL``) ends the episode (``terminated``) with the task's score as the reward; the
server's step budget ends it too (``truncated``). An action that cannot be parsed runs nothing: the
step returns the same observation, reward 0 and ``info["error"]`` naming the problem.

``reset(seed=s)`` draws the task from the suite with ``s`` (same seed, same task variant, same first
screen); ``options={"task": {...}}`` runs that task file instead. :class:`DesktopVectorEnv` steps its
sub-envs in parallel threads, and its ``reset(seed=s)`` is a *group reset*: sub-env ``i`` gets seed
``s + i // group_size``, so each group of ``group_size`` replicas is set up from the same task and seed
(GRPO's N samples of one prompt), and over several servers each group is placed on one server; a sub-env
whose server is lost ends its episode (``truncated``, ``info["error"]`` naming the server) and is reset on
another at its next step. ``gymnasium.make_vec("osgym/Desktop-v0", num_envs=N,
vectorization_mode="vector_entry_point", group_size=N)`` builds it; Gymnasium's own ``SyncVectorEnv``
and ``AsyncVectorEnv`` work too, and group-reset with ``reset(seed=[s] * N)`` (the async one over a
server, with ``vector_kwargs={"shared_memory": False}``: instructions are any text, not a fixed charset).
"""

from __future__ import annotations

import contextlib
import io
import string
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from numpy.typing import NDArray
from PIL import Image

from osgym.agents.formats import get_format
from osgym.errors import ConfigError, OsgymError, PolicyError, ServerLost
from osgym.replicas.pool import ReplicaPool
from osgym.serving.gym_backends import Backend, Frame, HttpBackend, LocalBackend
from osgym.serving.limits import ObservationOptions, ServeLimits
from osgym.serving.servers import Server, ServerSet
from osgym.serving.sessions import SessionManager
from osgym.tasks.spec import TaskSpec

__all__ = ["ENV_ID", "DesktopEnv", "DesktopVectorEnv", "HttpBackend", "LocalBackend", "register_envs"]

ENV_ID = "osgym/Desktop-v0"
DEFAULT_SCREEN = (1280, 800)
MAX_TEXT = 20_000


class AnyText(spaces.Text):
    """A text space that holds any string up to ``max_length`` (instructions are any Unicode)."""

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length


class ActionText(AnyText):
    """Action text: any string up to ``max_length``; ``sample()`` draws a harmless valid action
    (a pointer move, or a short wait) so that random agents and checkers exercise a real step."""

    def __init__(self, screen: tuple[int, int], action_format: str, seed: int | None = None) -> None:
        super().__init__(MAX_TEXT, min_length=1, charset=string.printable, seed=seed)
        self.screen = screen
        self.action_format = action_format

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        x, y = (int(self.np_random.integers(0, n)) for n in self.screen)
        if self.action_format == "osgym":
            return f"move({x},{y})"
        if self.action_format == "pyautogui":
            return f"pyautogui.moveTo({x}, {y})"
        if self.action_format == "computer_13":
            return f'{{"action_type": "MOVE_TO", "x": {x}, "y": {y}}}'
        return "WAIT"


def _decode(data: bytes) -> NDArray[np.uint8]:
    with Image.open(io.BytesIO(data)) as img:
        return np.asarray(img.convert("RGB"), dtype=np.uint8).copy()


class DesktopEnv(gymnasium.Env[dict[str, Any], Any]):
    """One desktop replica per episode, as a Gymnasium environment (see the module docstring).

    Args:
        url, token: an ``osgym serve`` server (a URL), several (a list of URLs, or a
            :class:`~osgym.serving.servers.ServerSet` shared with other envs) and their bearer token.
        manager: a session manager in this process (shared with other envs).
        image, tier: otherwise, the env starts its own one-replica pool of this image (or tier).
        screen: the replicas' screen, which is the image shape (default: the server's or the manager's pool's;
            for an own pool 1280x800).
        suite, template: where ``reset`` draws tasks from (default: ``desktop-basics``, any template).
        task: a fixed task file (a dict, or a loaded TaskSpec) instead of a suite.
        action_format: how text actions are read (a registered format; ``osgym`` by default).
        observation: screenshot encoding (``max_side`` is not supported here: the image shape is the screen).
        max_steps, settle_s: for an own pool, the episode's step budget and settle window.
    """

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, *, url: str | Sequence[str] | ServerSet | None = None, token: str | None = None,
                 manager: SessionManager | None = None,
                 image: str | None = None, tier: str = "desktop", screen: tuple[int, int] | None = None,
                 suite: str = "desktop-basics", template: str | None = None,
                 task: TaskSpec | dict[str, Any] | None = None, action_format: str = "osgym",
                 observation: ObservationOptions = ObservationOptions(), max_steps: int = 100,
                 settle_s: float = 0.5, render_mode: str | None = None, docker_client: Any = None,
                 pool_name: str | None = None) -> None:
        if observation.max_side is not None:
            raise OsgymError("observation.max_side: expected None (the image shape is the screen's)")
        get_format(action_format)  # an unknown format fails here, naming the known ones
        if render_mode not in (None, "rgb_array"):
            raise OsgymError(f"render_mode: expected None or 'rgb_array', actual {render_mode!r}")
        self.render_mode = render_mode
        self.backend: Backend
        if url is not None:
            http = HttpBackend(url, token)
            self.backend = http
            try:
                screen = screen or http.screen()
            except OsgymError:
                http.close()
                raise
        elif manager is not None:
            self.backend = LocalBackend(manager)
            screen = manager.pool.screen
        else:
            from osgym.collection.collector import new_run_id
            from osgym.replicas.images import ensure_image

            tag = image or ensure_image(tier, client=docker_client)
            screen = screen or DEFAULT_SCREEN
            pool = ReplicaPool(tag, 1, standby=1, screen=screen, docker_client=docker_client, name=pool_name)
            pool.start()
            limits = ServeLimits(max_steps=max_steps, settle_s=settle_s, max_sessions_per_owner=1)
            self.backend = LocalBackend(SessionManager(pool, run_id=new_run_id(), image=tag, limits=limits),
                                        own_pool=True)
        assert screen is not None
        self.screen = screen
        self.suite, self.template, self.task = suite, template, task
        self.action_format = action_format
        self.observation_options = observation
        width, height = screen
        self.observation_space = spaces.Dict({
            "image": spaces.Box(0, 255, (height, width, 3), np.uint8),
            "instruction": AnyText(MAX_TEXT, min_length=0, charset=string.printable),
        })
        self.action_space = ActionText(screen, action_format)
        self._session: Any = None
        self._last: dict[str, Any] | None = None
        self._closed = False

    def _obs(self, frame: Frame) -> dict[str, Any]:
        obs = {"image": _decode(frame.screenshot), "instruction": frame.instruction}
        self._last = obs
        return obs

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        """End the current episode (if any), start one: ``options["task"]``, or a suite variant drawn with ``seed``.

        ``options["server"]``: over several servers, the URL of the one to open the session on (else the one
        with the most free capacity). ``info`` holds ``session_id`` and ``seed`` (over servers, ``server`` too).

        Raises:
            ServerLost: if every server is down (or ``options["server"]`` is).
        """
        super().reset(seed=seed)
        self._end()
        options = options or {}
        task = options.get("task", self.task)
        variant_seed = seed if seed is not None else int(self.np_random.integers(2**31))
        server = None
        if options.get("server") is not None:
            if not isinstance(self.backend, HttpBackend):
                raise ConfigError("options['server']: only an env over servers (url=) places sessions")
            server = self.backend.servers.server(str(options["server"]))
        handle, frame = self.backend.open(task, options.get("suite", self.suite),
                                          options.get("template", self.template), variant_seed,
                                          self.observation_options, server)
        self._session = handle
        return self._obs(frame), {**self.backend.info(handle), "seed": variant_seed}

    def step(self, action: str | dict[str, Any] | Sequence[dict[str, Any]]
             ) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Act on the replica; see the module docstring for rewards, endings and invalid actions.

        Raises:
            ServerLost: if the session's server is lost (or restarted): the episode is gone; reset to go on.
        """
        if self._session is None or self._last is None:
            raise gymnasium.error.ResetNeeded("call reset() before step(), and after an episode ends")
        typed = [action] if isinstance(action, dict) else action if not isinstance(action, str) else None
        try:
            out = self.backend.step(self._session, list(typed) if typed is not None else str(action),
                                    self.action_format)
        except PolicyError as exc:  # nothing ran: the same screen again
            last = {"image": self._last["image"].copy(), "instruction": self._last["instruction"]}
            return last, 0.0, False, False, {"error": str(exc)}
        except ServerLost:
            self._session = None  # gone with its server
            raise
        info: dict[str, Any] = {"termination": out.termination}
        if out.error:
            info["error"] = out.error
        if out.terminated or out.truncated:
            self._session = None  # the server ended it and gave its replica back
        return self._obs(out.frame), out.reward, out.terminated, out.truncated, info

    @property
    def server(self) -> str | None:
        """The URL of the server that holds the current session (None: no session, or not on a server)."""
        if self._session is None:
            return None
        url: str | None = self.backend.info(self._session).get("server")
        return url

    def render(self) -> NDArray[np.uint8] | None:
        if self.render_mode != "rgb_array" or self._last is None:
            return None
        image: NDArray[np.uint8] = self._last["image"].copy()
        return image

    def _end(self) -> None:
        if self._session is not None:
            self.backend.end(self._session)
            self._session = None

    def close(self) -> None:
        """End the episode and release what the env owns. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._end()
        self.backend.close()


class DesktopVectorEnv(VectorEnv[Any, Any, Any]):
    """``num_envs`` :class:`DesktopEnv` stepped in parallel threads, with group reset.

    Without ``url`` or ``manager`` it starts one pool of ``num_envs`` replicas (plus ``standby``)
    shared by its sub-envs, and closes it with the vector env. Sub-envs that end are reset at the
    next step (Gymnasium's next-step autoreset).

    Over several servers (``url`` a list) the sub-envs share one :class:`~osgym.serving.servers.ServerSet`:
    ``reset`` places each group on one server (the one with the most free capacity for the whole group; a
    group whose server is lost while it opens is placed again on another), and a sub-env whose server is
    lost mid-episode returns ``truncated`` with ``info["error"]`` naming the server (``ServerLost: ...``),
    then is reset on a server that is up at its next step.

    Args:
        num_envs: sub-envs (replicas in use at once).
        group_size: sub-envs per group; ``reset(seed=s)`` gives group ``g`` the seed ``s + g``, so each
            group starts from one task and seed (default: all of them, one group).
        **kwargs: as for :class:`DesktopEnv`.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int, *, group_size: int | None = None, standby: int = 0,
                 **kwargs: Any) -> None:
        if num_envs < 1:
            raise OsgymError(f"num_envs: expected >= 1, actual {num_envs}")
        self.group_size = group_size or num_envs
        self._own: SessionManager | None = None
        self._servers: ServerSet | None = None
        self._own_servers = False
        url = kwargs.get("url")
        if url is not None:
            self._servers, self._own_servers = ServerSet.given_or_new(url, kwargs.get("token"))
            kwargs["url"] = self._servers
            try:
                kwargs["screen"] = kwargs.get("screen") or HttpBackend(self._servers).screen()  # asked once
            except OsgymError:
                self._close_servers()
                raise
        if url is None and kwargs.get("manager") is None:
            from osgym.collection.collector import new_run_id
            from osgym.replicas.images import ensure_image

            tag = kwargs.pop("image", None) or ensure_image(kwargs.pop("tier", "desktop"),
                                                            client=kwargs.get("docker_client"))
            kwargs["screen"] = kwargs.get("screen") or DEFAULT_SCREEN
            pool = ReplicaPool(tag, num_envs, standby=standby, screen=kwargs["screen"],
                               docker_client=kwargs.pop("docker_client", None), name=kwargs.pop("pool_name", None))
            pool.start()
            limits = ServeLimits(max_steps=kwargs.pop("max_steps", 100), settle_s=kwargs.pop("settle_s", 0.5),
                                 max_sessions_per_owner=num_envs)
            self._own = SessionManager(pool, run_id=new_run_id(), image=tag, limits=limits)
            kwargs["manager"] = self._own
        try:
            self.envs = [DesktopEnv(**kwargs) for _ in range(num_envs)]
        except BaseException:
            self._close_servers()
            raise
        self.num_envs = num_envs
        self.single_observation_space = self.envs[0].observation_space
        self.single_action_space = self.envs[0].action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._threads = ThreadPoolExecutor(max_workers=num_envs, thread_name_prefix="osgym-vec")
        self._needs_reset = [False] * num_envs
        self._closed = False

    def _batch(self, observations: list[dict[str, Any]]) -> dict[str, Any]:
        return {"image": np.stack([o["image"] for o in observations]),
                "instruction": tuple(o["instruction"] for o in observations)}

    def reset(self, *, seed: int | Sequence[int] | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Group reset: sub-env ``i`` gets seed ``seed + i // group_size`` (or ``seed[i]`` from a list)."""
        if seed is None:
            seeds: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, int):
            seeds = [seed + i // self.group_size for i in range(self.num_envs)]
        else:
            seeds = list(seed)
        if self._servers is None:
            results = list(self._threads.map(lambda i: self.envs[i].reset(seed=seeds[i], options=options),
                                              range(self.num_envs)))
        else:
            results = self._reset_groups(self._servers, seeds, options or {})
        self._needs_reset = [False] * self.num_envs
        infos: dict[str, Any] = {key: np.array([r[1][key] for r in results]) for key in ("session_id", "seed", "server")
                 if key in results[0][1]}
        return self._batch([r[0] for r in results]), infos

    def _reset_groups(self, servers: ServerSet, seeds: list[int | None], options: dict[str, Any]
                      ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Reset every group on one server each; a group whose server is lost meanwhile goes to another."""
        groups = [list(range(g, min(g + self.group_size, self.num_envs)))
                  for g in range(0, self.num_envs, self.group_size)]
        tried: list[list[Server]] = [[] for _ in groups]
        results: list[Any] = [None] * self.num_envs
        todo = list(range(len(groups)))
        while todo:
            with contextlib.ExitStack() as held:  # every group's places, held until its sessions opened
                placed = {g: held.enter_context(servers.reserve(len(groups[g]), exclude=tried[g])) for g in todo}

                def one(i: int, server: Server) -> Any:
                    try:
                        return self.envs[i].reset(seed=seeds[i], options={**options, "server": server.url})
                    except ServerLost as exc:
                        return exc

                jobs = [(i, placed[g]) for g in todo for i in groups[g]]
                for (i, _), out in zip(jobs, self._threads.map(lambda job: one(*job), jobs), strict=True):
                    results[i] = out
            lost = [g for g in todo if any(isinstance(results[i], ServerLost) for i in groups[g])]
            for g in lost:
                tried[g].append(placed[g])
                for i in groups[g]:
                    self.envs[i]._end()  # the group's sessions that did open: it starts again elsewhere
            todo = lost
        return results

    def _step_one(self, i: int, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        env = self.envs[i]
        if self._needs_reset[i]:
            obs, info = env.reset()
            return obs, 0.0, False, False, info
        last = env._last
        try:
            return env.step(action)
        except ServerLost as exc:  # the episode is gone: truncated, reset on a server that is up next step
            assert last is not None
            return last, 0.0, False, True, {"error": f"ServerLost: {exc}"}

    def step(self, actions: Any) -> tuple[dict[str, Any], NDArray[np.float64], NDArray[np.bool_],
                                          NDArray[np.bool_], dict[str, Any]]:
        results = list(self._threads.map(lambda i: self._step_one(i, actions[i]), range(self.num_envs)))
        self._needs_reset = [r[2] or r[3] for r in results]
        infos = {"termination": np.array([r[4].get("termination") for r in results], dtype=object),
                 "error": np.array([r[4].get("error") for r in results], dtype=object)}
        if self._servers is not None:  # where each sub-env's session is now (None: it has none)
            infos["server"] = np.array([e.server for e in self.envs], dtype=object)
        return (self._batch([r[0] for r in results]), np.array([r[1] for r in results], dtype=np.float64),
                np.array([r[2] for r in results]), np.array([r[3] for r in results]), infos)

    def close_extras(self, **kwargs: Any) -> None:
        if self._closed:
            return
        self._closed = True
        list(self._threads.map(lambda e: e.close(), self.envs))
        self._threads.shutdown()
        if self._own is not None:
            self._own.shutdown()
            self._own.pool.close()
        self._close_servers()

    def _close_servers(self) -> None:
        if self._servers is not None and self._own_servers:
            self._servers.close()


def register_envs() -> None:
    """Register ``osgym/Desktop-v0`` with Gymnasium (idempotent; also the ``gymnasium.envs`` entry point)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="osgym.serving.gym_env:DesktopEnv",
                           vector_entry_point="osgym.serving.gym_env:DesktopVectorEnv")


register_envs()
