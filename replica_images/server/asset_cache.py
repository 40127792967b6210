"""The host's offline asset cache, as a compatibility replica sees it: read-only at /run/osgym/assets.

The pool mounts the operator's local cache there (``ReplicaPool(assets_dir=...)``), inside the
server's own 0700 directory; OSWorld's ``/setup/download_file`` reads a URL's bytes from it, since
the replica has no network. The layout is osgym.tasks.assets's: ``manifest.json`` maps each URL to
the sha256 of its bytes in ``blobs/<sha256>``. Every read verifies the sha256 and the size.
"""

import hashlib
import json
import os
import re

import uids
from files import MAX_FILE
from protocol import HttpError

ROOT = "/run/osgym/assets"
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _entry(url):
    try:
        with open(os.path.join(ROOT, "manifest.json"), "rb") as f:
            assets = json.load(f).get("assets")
    except FileNotFoundError:
        raise HttpError(503, "this replica has no asset cache: the operator's OSGYM_ASSET_CACHE must name a "
                             "local directory for compatibility replicas to serve downloads offline") from None
    except (OSError, ValueError, AttributeError) as exc:
        raise HttpError(500, f"the asset cache's manifest cannot be read: {exc}") from None
    entry = assets.get(url) if isinstance(assets, dict) else None
    if not isinstance(entry, dict):
        raise HttpError(404, f"{url!r:.500} is not in the asset cache; fetch it first (osgym tasks fetch-assets)")
    sha, size = entry.get("sha256"), entry.get("size")
    if not isinstance(sha, str) or not _SHA256.fullmatch(sha) or not isinstance(size, int):
        raise HttpError(500, f"the asset cache's entry for {url!r:.500} is malformed")
    return sha, size


def read(url):
    """The cached bytes of ``url``, checked against the manifest's sha256 and size.

    Raises:
        HttpError: 503 without a cache, 404 for a URL it does not hold, 413 for one over MAX_FILE,
            500 for a blob that is missing or does not match its sha256.
    """
    with uids.fs_as_server():  # the route runs as `user`, who cannot enter /run/osgym
        sha, size = _entry(url)
        if size > MAX_FILE:
            raise HttpError(413, f"{url!r:.500} is {size} bytes, over the {MAX_FILE}-byte limit of a download")
        try:
            with open(os.path.join(ROOT, "blobs", sha), "rb") as f:
                data = f.read(MAX_FILE + 1)
        except OSError as exc:
            raise HttpError(500, f"the cached copy of {url!r:.500} cannot be read: {exc.strerror}") from None
    if len(data) != size or hashlib.sha256(data).hexdigest() != sha:
        raise HttpError(500, f"the cached copy of {url!r:.500} does not match its sha256: refused")
    return data
