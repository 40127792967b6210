"""Make the apps tier's screenshot references: tests/apps/references/<app>.png and phash.json.

Usage::

    python3 scripts/apps_references.py [--apps chromium,calc] [--max-distance 12]

For each app (one fresh apps replica each, the tier's limits, 1920x1080) it runs the test's own
``open_clean`` (launch, window mapped, settled, menu items in the accessibility tree), then
stores a 480x270 copy of the screenshot (for people to look at) and the full screenshot's
64-bit pHash. Run it again after a change to the image that alters how an app looks, and commit the result; the test
fails when a settled app is more than ``max_distance`` bits from its reference.
"""

from __future__ import annotations

import argparse
import io
import json
import uuid

from PIL import Image

from osgym.replicas import images
from osgym.replicas.pool import ReplicaPool, limits_for, reap
from tests.apps.phash import phash
from tests.apps.test_apps_open import APPS, REFERENCES, SCREEN, open_clean


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--apps", default=",".join(a.id for a in APPS))
    ap.add_argument("--max-distance", type=int, default=12,
                    help="bits of 64 a settled app may differ from its reference (clock, caret, cursor)")
    args = ap.parse_args()
    wanted = args.apps.split(",")
    image = images.ensure_image("apps")
    REFERENCES.parent.mkdir(parents=True, exist_ok=True)
    refs = json.loads(REFERENCES.read_text()) if REFERENCES.exists() else {"apps": {}}
    refs["max_distance"] = args.max_distance
    for app in (a for a in APPS if a.id in wanted):
        name = f"apps-ref-{uuid.uuid4().hex[:6]}"
        pool = ReplicaPool(image, 1, name=name, screen=SCREEN, standby=0, limits=limits_for("apps"))
        try:
            pool.start()
            with pool.lease(timeout=120) as replica:
                open_clean(replica, app)
                shot = replica.screenshot().data
        finally:
            pool.close()
            reap(pool=name)
        refs["apps"][app.id] = f"{phash(shot):016x}"
        Image.open(io.BytesIO(shot)).convert("RGB").resize((480, 270), Image.Resampling.LANCZOS).save(
            REFERENCES.parent / f"{app.id}.png", optimize=True)
        print(app.id, refs["apps"][app.id], flush=True)
    refs["image"] = image
    REFERENCES.write_text(json.dumps(refs, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
