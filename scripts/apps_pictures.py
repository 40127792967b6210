"""Make the docs' pictures of the apps tier: docs/apps/<app>.png and docs/apps/README.md.

Usage::

    python3 scripts/apps_pictures.py [--apps chromium,calc] [--jobs 2]

For each app of tests/apps/test_apps_open.py's ``APPS`` (one fresh apps replica each, the tier's
limits, 1920x1080) it runs the test's own ``open_clean`` (launch as a task's setup does, window
mapped, nothing else opened, menus in the accessibility tree), takes a screenshot and stores it at
960x540 as a 256-colour PNG (about a fifth of a full-colour one; the repository stays small). Then it
writes docs/apps/README.md: a table of each app, the command that opens it, and its picture. Run it
again after a change to the image that alters how an app looks, and commit the result.
"""

from __future__ import annotations

import argparse
import io
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from PIL import Image

from osgym.replicas import images
from osgym.replicas.pool import ReplicaPool, limits_for, reap
from tests.apps.test_apps_open import APPS, SCREEN, App, open_clean

DOCS = Path(__file__).resolve().parent.parent / "docs" / "apps"
SIZE = (960, 540)


def picture(png: bytes) -> bytes:
    """``png`` downscaled to ``SIZE`` and quantized to 256 colours (UI screenshots have few), optimized."""
    small = Image.open(io.BytesIO(png)).convert("RGB").resize(SIZE, Image.Resampling.LANCZOS)
    out = io.BytesIO()
    small.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(out, "PNG", optimize=True)
    return out.getvalue()


def shoot(image: str, app: App) -> bytes:
    """A screenshot of ``app`` opened clean on a fresh replica of its own.

    Raises:
        AssertionError: from ``open_clean``, if the app did not open clean.
    """
    name = f"apps-pic-{uuid.uuid4().hex[:6]}"
    pool = ReplicaPool(image, 1, name=name, screen=SCREEN, standby=0, limits=limits_for("apps"))
    try:
        pool.start()
        with pool.lease(timeout=180) as replica:
            open_clean(replica, app)
            return replica.screenshot().data
    finally:
        pool.close()
        reap(pool=name)


def readme(image: str) -> str:
    rows = [f"| {a.id} | `{a.command}` | ![{a.id}]({a.id}.png) |" for a in APPS if (DOCS / f"{a.id}.png").exists()]
    return "\n".join([
        "# The apps tier's applications",
        "",
        f"Each app as a task's setup opens it on a fresh `apps` replica (1920x1080, shown at {SIZE[0]}x{SIZE[1]}),",
        "once it has settled: no dialog, tip or first-run page beside it (what `tests/apps/test_apps_open.py` checks).",
        f"Made by `python3 scripts/apps_pictures.py` from `{image}`; run it again after changing the image.",
        "",
        "| app | command | picture |",
        "|---|---|---|",
        *rows,
        "",
    ])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--apps", default=",".join(a.id for a in APPS), help="comma-separated app ids (default: all)")
    ap.add_argument("--jobs", type=int, default=2, help="replicas at a time")
    args = ap.parse_args()
    wanted = args.apps.split(",")
    unknown = sorted(set(wanted) - {a.id for a in APPS})
    if unknown:
        ap.error(f"--apps: unknown {unknown}; expected some of {[a.id for a in APPS]}")
    image = images.ensure_image("apps")
    DOCS.mkdir(parents=True, exist_ok=True)
    chosen = [a for a in APPS if a.id in wanted]
    with ThreadPoolExecutor(max(1, args.jobs)) as ex:
        for app, shot in zip(chosen, ex.map(lambda a: shoot(image, a), chosen), strict=True):
            data = picture(shot)
            (DOCS / f"{app.id}.png").write_bytes(data)
            print(f"{app.id}: docs/apps/{app.id}.png, {len(data) // 1024} KiB", flush=True)
    (DOCS / "README.md").write_text(readme(image))


if __name__ == "__main__":
    main()
