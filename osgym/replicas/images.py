"""Build and inspect replica images (drives ``replica_images/``).

``osgym/base:bookworm`` comes from debootstrap + ``docker import``, so no registry
is needed. ``osgym/<tier>:<hash>`` is built FROM it; the tag is a hash of every
build input, so a build whose inputs did not change is a no-op.

Tiers: ``desktop`` (openbox, xterm, mousepad, pcmanfm) and ``apps``
(``replica_images/apps/``: an XFCE session with Chromium, LibreOffice, GIMP, VLC,
Thunderbird, Thunar, xfce4-terminal, gedit).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors

from osgym.errors import ImageError
from osgym.replicas.hosts import DEFAULT_DOCKER_HOST, DockerHost
from osgym.settings import settings

BASE_IMAGE = "osgym/base:bookworm"
TIERS = ("desktop", "apps")
DOCKERFILES = {"desktop": "desktop/Dockerfile", "apps": "apps/Dockerfile"}
"""Each tier's Dockerfile, relative to ``replica_images/`` (the build context of every tier)."""
INPUT_DIRS = {"desktop": ("desktop", "server"), "apps": ("apps", "desktop", "server")}
"""The directories whose files go into each tier's content hash. ``apps`` reads
``desktop/requirements-user.txt`` too, so it covers ``desktop/``; the desktop tier does not
cover ``apps/``, so editing the apps tier leaves their tags (and images) as they are."""
LABEL = "osgym.image"


def images_dir() -> Path:
    """Where ``replica_images/`` lives: $OSGYM_IMAGES_DIR, else beside the ``osgym`` package."""
    configured = settings().images_dir
    path = configured if configured is not None else Path(__file__).resolve().parents[2] / "replica_images"
    if not (path / "desktop" / "Dockerfile").is_file():
        raise ImageError(f"replica_images not found at {path}: run from the osgym checkout or set OSGYM_IMAGES_DIR")
    return path


WHEEL_REQUIREMENTS = "desktop/requirements-user.txt"
WHEEL_EPOCH = "315532800"  # SOURCE_DATE_EPOCH for wheels built from sdists, so their bytes (and the hash) repeat


def _requirements(root: Path) -> list[str]:
    path = root / WHEEL_REQUIREMENTS
    if not path.is_file():
        return []
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def _wheel_name(requirement: str) -> str:
    """The normalised distribution name a wheel file starts with: ``PyMsgBox==2`` -> ``pymsgbox``."""
    name = requirement.split("==", 1)[0].split(">", 1)[0].split("<", 1)[0].strip()
    return name.lower().replace("-", "_").replace(".", "_")


def missing_wheels(root: Path | None = None) -> list[str]:
    """Requirements of the user's Python packages that have no wheel in ``replica_images/wheels`` yet."""
    root = root or images_dir()
    wheels = root / "wheels"
    have = {p.name.split("-", 1)[0].lower() for p in wheels.glob("*.whl")} if wheels.is_dir() else set()
    return [r for r in _requirements(root) if _wheel_name(r) not in have]


def ensure_wheels(root: Path | None = None, log: Callable[[str], None] = print) -> bool:
    """Build the wheels the image installs (pyautogui and its pure-Python deps) on the host, if missing.

    pip over https fails inside the build containers (TLS is re-signed), so the
    Dockerfile installs these wheels with ``pip install --no-index``. Returns True
    if anything was built.

    Raises:
        ImageError: if ``pip wheel`` fails.
    """
    root = root or images_dir()
    missing = missing_wheels(root)
    if not missing:
        return False
    log(f"building wheels for the image: {', '.join(missing)}")
    out = root / "wheels"
    out.mkdir(exist_ok=True)
    env = {**os.environ, "SOURCE_DATE_EPOCH": WHEEL_EPOCH}
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), *missing],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise ImageError(f"pip wheel {' '.join(missing)} failed: {proc.stderr.strip()[-2000:]}")
    still = missing_wheels(root)
    if still:
        raise ImageError(f"pip wheel built no wheel for {still} in {out}")
    return True


CODE_SERVER_PIN = "apps/code-server/VERSION"
CODE_SERVER_FETCH = "apps/code-server/fetch.sh"
CODE_SERVER_CACHE = "code-server"
"""Where :func:`ensure_code_server` leaves ``code-server.tar.gz`` for the apps Dockerfile, under
``replica_images/`` (gitignored, outside every tier's :data:`INPUT_DIRS`: the tag hashes the pin
and the fetch script, which decide the archive, not its 27 MB)."""
CODE_SERVER_FETCH_TIMEOUT_S = 900


def ensure_code_server(root: Path | None = None, log: Callable[[str], None] = print) -> bool:
    """Fetch the pinned code-server (VS Code for the apps tier) with npm on the host, if not cached.

    Runs ``apps/code-server/fetch.sh``: npm over https fails TLS inside the build containers
    (as pip does, see :func:`ensure_wheels`), so the registry is reached from the host and the
    Dockerfile gets ``code-server/code-server.tar.gz``. A stamp (the hash of the pin file and the
    script) makes a second call with nothing changed a no-op. Returns True if it fetched.

    Raises:
        ImageError: if npm is not installed, the registry cannot be reached, or the fetch fails
            (the message carries npm's output's tail).
    """
    root = root or images_dir()
    pin, script = root / CODE_SERVER_PIN, root / CODE_SERVER_FETCH
    stamp = hashlib.sha256(pin.read_bytes() + b"\0" + script.read_bytes()).hexdigest()
    out = root / CODE_SERVER_CACHE
    if (out / "code-server.tar.gz").is_file() and (out / "stamp").is_file() and (out / "stamp").read_text() == stamp:
        return False
    if shutil.which("npm") is None or shutil.which("node") is None:
        raise ImageError("the apps tier's VS Code (code-server) is fetched with npm on the host, and npm is not "
                         "installed: on Debian, `apt-get install nodejs npm` (as root), then build again")
    log(f"fetching code-server ({pin.read_text().split('version=', 1)[-1].split()[0]}) with npm for the apps tier")
    try:
        proc = subprocess.run(["bash", str(script), str(pin), str(out)], capture_output=True, text=True,
                              timeout=CODE_SERVER_FETCH_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise ImageError(f"fetching code-server with npm took over {CODE_SERVER_FETCH_TIMEOUT_S} s: "
                         "is the npm registry (npm config get registry) reachable from this host?") from exc
    if proc.returncode != 0:
        tail = (proc.stderr.strip() or proc.stdout.strip())[-2000:]
        unreachable = any(code in tail for code in ("ENOTFOUND", "ECONNREFUSED", "ETIMEDOUT", "EAI_AGAIN",
                                                    "ECONNRESET", "network", "SELF_SIGNED", "CERT_"))
        hint = (" The npm registry (npm config get registry) is not reachable from this host; the apps tier "
                "needs it once, to fetch code-server.") if unreachable else ""
        raise ImageError(f"fetching code-server with {script.name} failed (exit {proc.returncode}).{hint}\n{tail}")
    (out / "stamp").write_text(stamp)
    return True


def _inputs(root: Path, tier: str = "desktop") -> list[Path]:
    files = [p for sub in INPUT_DIRS[tier] for p in sorted((root / sub).rglob("*")) if p.is_file()]
    wheels = root / "wheels"
    if wheels.is_dir():
        files += sorted(p for p in wheels.glob("*.whl") if p.is_file())
    return [p for p in files if "__pycache__" not in p.parts]


def content_hash(tier: str = "desktop", base: str = BASE_IMAGE, root: Path | None = None) -> str:
    """A short hash of everything that goes into the image: files, tier and base.

    Raises:
        ImageError: if ``tier`` is not one of :data:`TIERS`.
    """
    if tier not in TIERS:
        raise ImageError(f"tier: expected one of {TIERS}, actual {tier!r}")
    root = root or images_dir()
    ensure_wheels(root, log=lambda _m: None)
    h = hashlib.sha256(f"{tier}\0{base}\0".encode())
    for p in _inputs(root, tier):
        h.update(str(p.relative_to(root)).encode() + b"\0")
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def image_tag(tier: str = "desktop", base: str = BASE_IMAGE) -> str:
    """The tag the current inputs build to, e.g. ``osgym/desktop:3f2a9c0b1d4e``."""
    if tier not in TIERS:
        raise ImageError(f"tier: expected one of {TIERS}, actual {tier!r}")
    return f"osgym/{tier}:{content_hash(tier, base)}"


def _exists(client: docker.DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


@dataclass(frozen=True)
class BuildResult:
    """The outcome of :func:`build`: the tag and whether anything was built."""

    tag: str
    built: bool
    base_built: bool


def build_base(client: docker.DockerClient, tag: str = BASE_IMAGE, log: Callable[[str], None] = print) -> bool:
    """Create the base image with debootstrap + docker import if it is absent. Returns True if built."""
    if _exists(client, tag):
        return False
    log(f"building {tag} with debootstrap (about a minute)")
    script = images_dir() / "base" / "build.sh"
    proc = subprocess.run(["bash", str(script), tag], capture_output=True, text=True)
    if proc.returncode != 0:
        raise ImageError(f"base image build failed: {proc.stderr.strip()[-2000:]}")
    return True


def build(
    tier: str = "desktop",
    *,
    client: docker.DockerClient | None = None,
    base: str = BASE_IMAGE,
    log: Callable[[str], None] = print,
) -> BuildResult:
    """Build the replica image for ``tier`` unless one with the same inputs exists.

    Raises:
        ImageError: if the base or the desktop build fails; the message carries the build log's tail.
    """
    client = client or docker.from_env()
    ensure_wheels(log=log)
    tag = image_tag(tier, base)
    base_built = build_base(client, base, log) if base == BASE_IMAGE else False
    if _exists(client, tag):
        return BuildResult(tag, False, base_built)
    if tier == "apps":  # only when building: a host with the image built needs no npm
        ensure_code_server(log=log)
    log(f"building {tag}")
    root = images_dir()
    tail: list[str] = []
    try:
        for chunk in client.api.build(
            path=str(root), dockerfile=DOCKERFILES[tier], tag=tag, rm=True, forcerm=True, decode=True,
            buildargs={"BASE": base}, labels={LABEL: tier}, network_mode="host",
        ):
            if "stream" in chunk:
                line = chunk["stream"].rstrip()
                if line:
                    tail = (tail + [line])[-40:]
                    if line.startswith("Step "):
                        log(line)
            if "error" in chunk:
                raise ImageError(f"building {tag} failed: {chunk['error']}\n" + "\n".join(tail))
    except docker.errors.APIError as exc:
        raise ImageError(f"building {tag} failed: {exc}") from exc
    client.images.get(tag).tag(f"osgym/{tier}", "latest")
    return BuildResult(tag, True, base_built)


BUILD_COMMANDS = {"desktop": "make images", "apps": "make images-apps"}
"""What builds each tier's image on a replica host, from the checkout (docs/operations.md, "Production")."""


def require_image(tier: str = "desktop", hosts: Sequence[str] | None = None, *, host_name: str = "local",
                  image: str | None = None) -> str:
    """The tag a run's replicas start from (``image``, else the tier's), checked on every Docker host of the run.

    A run does not build images: on a worker's host that lacks one, a build (debootstrap, then the tier's
    Dockerfile, minutes) would start inside the flow run. ``hosts`` are the pool's Docker URLs
    (``OSGYM_HOSTS``); without them, the daemon of DOCKER_HOST (else the local one), called ``host_name``. A
    host that does not answer is left to the pool, which reports it.

    Raises:
        ImageError: naming each host that lacks the image, the image, and the command that builds it there.
    """
    tag = image or image_tag(tier)
    targets = [(DockerHost(url).name, url) for url in hosts] if hosts else \
        [(host_name, os.environ.get("DOCKER_HOST") or DEFAULT_DOCKER_HOST)]
    missing = []
    for name, url in targets:
        try:  # from DOCKER_HOST and its TLS settings, as the pool's default host is
            client = docker.DockerClient(base_url=url, timeout=30) if hosts else docker.from_env(timeout=30)
        except docker.errors.DockerException:
            continue
        try:
            if not _exists(client, tag):
                missing.append(f"{name} ({url})")
        except docker.errors.DockerException:
            continue
        finally:
            client.close()
    if not missing:
        return tag
    if image:
        how = f"load it there (`docker save {tag} | docker -H <host's URL> load`), or name another image"
    else:
        how = (f"build it there from this checkout with `{BUILD_COMMANDS.get(tier, 'make images')}` (for a daemon "
               f"other than the default, `DOCKER_HOST=<its URL> python3 -m osgym images build --tier {tier}`)")
    raise ImageError(f"replica image {tag} is not on Docker host {', '.join(missing)}: {how}. A run does not build "
                     "images")


def ensure_image(tier: str = "desktop", client: docker.DockerClient | None = None) -> str:
    """The tag of a built image for ``tier``, building it first if needed."""
    return build(tier, client=client, log=lambda _m: None).tag
