"""A perceptual hash (DCT pHash) of a screenshot, to tell "the app looks as it did" from "something else is
on screen" while tolerating the panel clock, the caret and antialiasing.

The usual library (imagehash) would pull scipy and PyWavelets into the dev dependencies for one
function; the DCT below is a few lines of numpy (already there through pyarrow).
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

SIDE = 32
LOW = 8


def _dct_matrix(n: int) -> np.ndarray:
    k = np.arange(n)[:, None]
    x = np.arange(n)[None, :]
    return np.cos(np.pi * (2 * x + 1) * k / (2 * n))


_C = _dct_matrix(SIDE)


def phash(png: bytes) -> int:
    """64-bit pHash: grey 32x32, 2-D DCT, the 8x8 lowest frequencies against their median."""
    grey = np.asarray(Image.open(io.BytesIO(png)).convert("L").resize((SIDE, SIDE), Image.Resampling.LANCZOS),
                      dtype=np.float64)
    low = (_C @ grey @ _C.T)[:LOW, :LOW].flatten()
    bits = low > np.median(low)
    return int("".join("1" if b else "0" for b in bits), 2)


def distance(a: int, b: int) -> int:
    """Hamming distance between two hashes (0..64)."""
    return bin(a ^ b).count("1")
