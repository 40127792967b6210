"""The operator's settings: one object, read from ``OSGYM_*`` environment variables.

Recipes say what to collect; settings say how this machine runs it. Read them with :func:`settings`.

>>> Settings(host_name="worker-3").host_name
'worker-3'
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import unquote, urlsplit

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from osgym.errors import ConfigError

OPENAI_API_BASE = "https://api.openai.com/v1"
"""OpenAI's own API root: the only place the operator's key may go unless ``OSGYM_MODEL_BASE_URLS`` says more."""


def _split_list(value: Any) -> Any:
    """``a,b`` or a JSON list (``["a", "b"]``) from the environment; lists pass through."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            import json

            return json.loads(text)
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


def check_url_prefix(url: str) -> str:
    """An allowed model-endpoint prefix: an absolute http(s) URL without credentials, query or fragment.

    >>> check_url_prefix("https://api.openai.com/v1/")
    'https://api.openai.com/v1'
    >>> check_url_prefix("https://key@api.openai.com/v1")
    Traceback (most recent call last):
    ...
    ValueError: expected an http(s) URL without user, query or fragment, actual 'https://key@api.openai.com/v1'

    Raises:
        ValueError: if ``url`` is not one.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username is not None \
            or parts.password is not None or parts.query or parts.fragment:
        raise ValueError(f"expected an http(s) URL without user, query or fragment, actual {url!r}")
    if any(seg in (".", "..") for seg in unquote(parts.path).split("/")):
        raise ValueError(f"expected a URL without . or .. path segments, actual {url!r}")
    return url.rstrip("/")


def url_under(url: str, prefix: str) -> bool:
    """True if ``url`` is ``prefix`` or below it: same scheme, host and port, and a path under the prefix's.

    Compared as parsed URLs, not strings, so a look-alike host or a sibling path does not match.

    >>> url_under("https://api.openai.com/v1", "https://api.openai.com/v1")
    True
    >>> url_under("https://api.openai.com:443/v1/x", "https://API.openai.com/v1/")
    True
    >>> url_under("https://api.openai.com.evil.example/v1", "https://api.openai.com/v1")
    False
    >>> url_under("https://api.openai.com/v10", "https://api.openai.com/v1")
    False
    >>> url_under("http://api.openai.com/v1", "https://api.openai.com/v1")
    False
    """
    try:
        url, prefix = check_url_prefix(url), check_url_prefix(prefix)
        u, p = urlsplit(url), urlsplit(prefix)
        default = {"http": 80, "https": 443}
        same_origin = (u.scheme == p.scheme and u.hostname == p.hostname
                       and (u.port or default[u.scheme]) == (p.port or default[p.scheme]))
    except ValueError:  # not a URL we would send a key to, or a port out of range
        return False
    base = p.path.rstrip("/")
    return same_origin and (u.path.rstrip("/") == base or u.path.startswith(base + "/"))


class Settings(BaseSettings):
    """Every ``OSGYM_*`` variable osgym reads. docs/operations.md, "Settings", lists them."""

    model_config = SettingsConfigDict(env_prefix="OSGYM_", extra="ignore")

    run_dir: Path | None = Field(None, description="host directory for replicas' control sockets "
                                                    "(default /run/osgym as root, else /tmp/osgym-<uid>); "
                                                    "created mode 0700, refused if another user owns it or "
                                                    "others may write it")
    checkpoint_dir: Path = Field(Path("/var/lib/osgym/checkpoints"),
                                 description="where reset by restore keeps checkpoints of warmed replicas (root's, "
                                             "mode 0700; a few hundred MiB each)")
    images_dir: Path | None = Field(None, description="where replica_images/ lives (default: beside the package)")
    host_name: str = Field("local", description="this worker's name in pool events and episode rows")
    task_files_dir: Path | None = Field(None, description="the one directory task files may read local files from "
                                                          "(download, upload_file, cloud_file); unset: none")
    asset_cache: str | None = Field(None, description="the offline asset cache task files' http(s) URLs are read "
                                                      "from (a directory or s3://bucket/prefix, filled by osgym tasks "
                                                      "fetch-assets); unset: remote URLs are refused")
    prices: Path | None = Field(None, description="a YAML price table merged into osgym's own (hosts, model "
                                                  "tokens, storage; see osgym/replicas/prices.yaml)")
    replica_runtime: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
                                        description="the OCI runtime replicas run under (a name registered with "
                                                    "dockerd, e.g. crun); unset: the daemon's default (runc)")
    replica_reset: Literal["cold", "restore"] = Field(
        "cold", description="how a pool starts replicas when its caller does not say: cold (boot), or restore (from "
                            "a checkpoint of a warmed replica, where the pool can: container replicas on the unix "
                            "transport without a network or compat; osgym.replicas.restore)")
    replica_disk_mib: int | None = Field(None, gt=0, description="size of each replica's writable layer (Docker "
                                         "storage_opt; overlay2 on xfs with pquota, btrfs or zfs only)")
    replica_swap_mib: int = Field(0, ge=0, description="swap each replica may use beyond its memory limit (Docker "
                                  "memswap_limit); 0: none. Meant for zram: `osgym host tune --zram SIZE`")
    openai_api_key: SecretStr | None = Field(None, validation_alias="OPENAI_API_KEY",
                                             description="the openai policy's key (the usual variable); "
                                                         "recipes cannot carry keys")
    # Privileged switches: a recipe may ask for them, and gets a ConfigError unless the operator
    # consented here (osgym.collection.recipe.Recipe.check_consent).
    allow_compat: bool = Field(False, description="let recipes ask for OSWorld compatibility mode "
                                                  "(compat: true): tokenless replicas where sudo works")
    allow_egress: bool = Field(False, description="let recipes give replicas a network (egress: open, "
                                                  "which compat: true needs too)")
    allow_force: bool = Field(False, description="let recipes start more replicas than the hosts' "
                                                 "planned capacity (force: true)")
    hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Docker hosts a run's pool spreads replicas over, comma-separated "
                                          "URLs (default: DOCKER_HOST or the local socket); recipes cannot name hosts")
    model_base_urls: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: [OPENAI_API_BASE],
        description="comma-separated URL prefixes the openai policy may call, and so send the operator's key "
                    "to (default: OpenAI's API only)")

    serve_allow_root_steps: bool = Field(False, description="let `osgym serve` clients' task files run commands "
                                         "with sudo (root steps in their replica); off, such a task is refused")
    serve_allow_task_files: bool = Field(False, description="let `osgym serve` clients' task files read files of "
                                         "OSGYM_TASK_FILES_DIR (local paths); off, such a task is refused")
    serve_tokens: Annotated[list[SecretStr], NoDecode] = Field(
        default_factory=list, description="comma-separated bearer tokens `osgym serve` accepts (each at least 16 "
                                          "characters); unset: it makes one at start and prints it once")

    @field_validator("hosts", "model_base_urls", "serve_tokens", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> Any:
        return _split_list(value)

    @field_validator("model_base_urls")
    @classmethod
    def _prefixes(cls, value: list[str]) -> list[str]:
        return [check_url_prefix(u) for u in value]

    def resolved_run_dir(self) -> Path:
        if self.run_dir is not None:
            return self.run_dir
        return Path("/run/osgym") if os.geteuid() == 0 else Path(f"/tmp/osgym-{os.getuid()}")


def settings() -> Settings:
    """The settings as the environment says now (read at each call: they are read rarely, at a
    pool's start or a policy's creation, and a test or an operator may change the environment).

    Raises:
        ConfigError: naming the ``OSGYM_*`` variable whose value is not valid.
    """
    try:
        return Settings()
    except ValidationError as exc:
        err = exc.errors()[0]
        name = str(err["loc"][0]) if err["loc"] else "settings"
        var = name if name.isupper() else f"OSGYM_{name.upper()}"
        raise ConfigError(f"setting {var}: {err['msg']}") from exc
