"""Audio similarity: OSWorld's ``compare_audios`` (``vlc.py`` in desktop-env 1.0.2).

OSWorld loads both files with ``librosa.load`` (libsndfile decodes them; mixed to mono; resampled to
22,050 Hz with libsoxr's HQ filter), takes librosa's 20 MFCCs, scales each coefficient's row to a peak
of 1, aligns the two sequences of frames with ``fastdtw`` (radius 1) under cosine distance and scores
``exp(-distance / path length)``: 1 for the same audio, lower the more the two differ, and never below
exp(-2), about 0.14, since a cosine distance is at most 2.

osgym decodes with the same libsndfile (``soundfile``) and resamples with the same libsoxr (``soxr``);
the MFCC chain (:func:`mfcc`) and fastdtw's coarse-to-fine search (:func:`fastdtw`) are written in numpy
after librosa 0.11 and fastdtw 0.3.4 (its pure-Python version, which is what pip installs: the C++
extension does not build from the sdist). The parity tests compare the scores with OSWorld's.

The last step ties between coming from above and the diagonal; fastdtw takes the step from above:

>>> d, path = fastdtw(np.array([[1.0, 0], [1, 1], [0, 1]]), np.array([[1.0, 0], [0, 1]]))
>>> round(d, 4), path
(0.2929, [(0, 0), (1, 1), (2, 1)])
"""

from __future__ import annotations

import math

import numpy as np
import soundfile as sf
import soxr
from numpy.typing import NDArray

from osgym.tasks.metrics import metric

__all__ = ["compare_audios", "fastdtw", "load", "mfcc"]

SR = 22_050  # librosa.load's default rate
N_FFT, HOP, N_MELS, N_MFCC = 2048, 512, 128, 20  # librosa.feature.mfcc's defaults
AMIN, TOP_DB = 1e-10, 80.0  # librosa.power_to_db's defaults
RADIUS = 1  # fastdtw's default
# The files OSWorld's tasks compare are songs and soundtracks of a few minutes. The alignment runs a
# Python loop over about 10 cells per frame (43 frames a second), and decoding holds the whole signal:
# ten minutes of 48 kHz stereo bounds both (a few seconds of time, 230 MB of samples). Longer audio is
# refused, not cut, since a cut file would score differently from OSWorld.
MAX_SECONDS = 600.0
MAX_SAMPLES = int(MAX_SECONDS * 48_000 * 2)  # samples of all channels decoded at most
_FRAMES_PER_FFT = 1024  # STFT frames transformed at a time, to bound the windowed copies (16 MB)

F64 = NDArray[np.float64]


class AudioError(ValueError):
    """A file that cannot be decoded as audio, or is longer than :data:`MAX_SECONDS`."""


def load(path: str) -> NDArray[np.float32]:
    """The file's samples as ``librosa.load`` returns them: mono (the channels' mean), float32, at 22,050 Hz.

    Raises:
        AudioError: if libsndfile cannot decode it or it is longer than :data:`MAX_SECONDS`.
    """
    try:
        with sf.SoundFile(path) as f:
            rate = f.samplerate
            if rate <= 0 or f.frames > MAX_SECONDS * rate or f.frames * f.channels > MAX_SAMPLES:
                raise AudioError(f"{path!r}: longer than {MAX_SECONDS:.0f} s or {MAX_SAMPLES} samples")
            # One read of as many frames as the header declares: libsndfile's MP3 decoder returns other
            # samples after the first of several reads, and librosa reads once.
            frames = f.read(dtype="float32", always_2d=True).T
    except (sf.SoundFileError, OSError, RuntimeError) as exc:
        raise AudioError(f"{path!r} is not audio libsndfile can decode: {exc}") from None
    # librosa.to_mono: the float32 mean over the channels (one channel: unchanged)
    y = frames[0] if len(frames) == 1 else frames.mean(axis=0)
    if not np.isfinite(y).all():  # librosa refuses such a signal; only a float WAV can hold one
        raise AudioError(f"{path!r} holds samples that are not finite numbers")
    if rate == SR or not len(y):
        return np.asarray(y, dtype=np.float32)
    try:
        out = soxr.resample(y, rate, SR, quality="soxr_hq")
    except (ValueError, RuntimeError) as exc:  # a rate libsoxr cannot convert
        raise AudioError(f"{path!r}: cannot resample {rate} Hz to {SR} Hz: {exc}") from None
    # librosa fixes the length at ceil(n * ratio), trimming or padding with zeros
    n = int(math.ceil(len(y) * (float(SR) / rate)))
    fixed = np.zeros(n, np.float32)
    fixed[:min(n, len(out))] = out[:n]
    return fixed


def _hz_to_mel(f: F64) -> F64:
    # Slaney's scale: linear below 1 kHz, logarithmic above
    f_sp, min_log_hz, logstep = 200.0 / 3, 1000.0, math.log(6.4) / 27.0
    mels = f / f_sp
    log = f >= min_log_hz
    mels[log] = min_log_hz / f_sp + np.log(f[log] / min_log_hz) / logstep
    return mels


def _mel_to_hz(m: F64) -> F64:
    f_sp, min_log_hz, logstep = 200.0 / 3, 1000.0, math.log(6.4) / 27.0
    freqs = f_sp * m
    log = m >= min_log_hz / f_sp
    freqs[log] = min_log_hz * np.exp(logstep * (m[log] - min_log_hz / f_sp))
    return freqs


def _mel_basis() -> F64:
    """librosa.filters.mel(sr=22050, n_fft=2048, n_mels=128): Slaney-normalised triangles, kept in float32."""
    fft_freqs = np.fft.rfftfreq(N_FFT, 1.0 / SR)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(np.array([0.0]))[0], _hz_to_mel(np.array([SR / 2]))[0], N_MELS + 2))
    fdiff = np.diff(edges)
    ramps = np.subtract.outer(edges, fft_freqs)
    lower = -ramps[:N_MELS] / fdiff[:N_MELS, None]
    upper = ramps[2:] / fdiff[1:, None]
    tri = np.maximum(0, np.minimum(lower, upper)).astype(np.float32)
    enorm = 2.0 / (edges[2:N_MELS + 2] - edges[:N_MELS])
    return np.asarray((tri * enorm[:, None]).astype(np.float32), dtype=np.float64)


def _dct_ortho(n_out: int, n_in: int) -> F64:
    k = np.arange(n_out)[:, None]
    n = np.arange(n_in)[None, :]
    scale = np.where(k == 0, math.sqrt(1.0 / n_in), math.sqrt(2.0 / n_in))
    return np.asarray(scale * np.cos(np.pi * k * (2 * n + 1) / (2 * n_in)), dtype=np.float64)


_MEL = _mel_basis()
_DCT = _dct_ortho(N_MFCC, N_MELS)
# scipy's periodic Hann window, as librosa's STFT takes it
_WINDOW = 0.5 + 0.5 * np.cos(np.linspace(-np.pi, np.pi, N_FFT + 1)[:-1])


def mfcc(y: NDArray[np.floating]) -> F64:
    """librosa.feature.mfcc at 22,050 Hz, frames by coefficients: a centred (zero-padded) 2048-point STFT
    every 512 samples, its power in 128 Slaney mel bands, in dB (floor 1e-10, at most 80 dB below the
    peak), and the first 20 coefficients of the orthonormal DCT-II."""
    padded = np.pad(np.asarray(y, dtype=np.float64), N_FFT // 2)
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP]
    mel = np.empty((len(frames), N_MELS))
    for start in range(0, len(frames), _FRAMES_PER_FFT):
        spec = np.fft.rfft(frames[start:start + _FRAMES_PER_FFT] * _WINDOW, axis=1)
        mel[start:start + _FRAMES_PER_FFT] = (spec.real ** 2 + spec.imag ** 2) @ _MEL.T
    db = 10.0 * np.log10(np.maximum(AMIN, mel))
    db = np.maximum(db, db.max() - TOP_DB)
    return np.asarray(db @ _DCT.T, dtype=np.float64)


def _peak_normalise(m: F64) -> F64:
    # librosa.util.normalize(axis=1) on the coefficients-by-frames matrix: each coefficient over time
    peak = np.abs(m).max(axis=0, keepdims=True)
    peak[peak < np.finfo(np.float32).tiny] = 1.0
    return np.asarray(m / peak, dtype=np.float64)


def _cosine(x: F64, y: F64, i: NDArray[np.intp], j: NDArray[np.intp]) -> F64:
    """scipy's cosine distance between rows x[i] and y[j], clipped to [0, 2]; a zero row (no direction,
    where scipy gives NaN) counts as orthogonal."""
    a, b = x[i], y[j]
    uv = np.einsum("ij,ij->i", a, b)
    with np.errstate(invalid="ignore", divide="ignore"):
        d = 1.0 - uv / np.sqrt(np.einsum("ij,ij->i", a, a) * np.einsum("ij,ij->i", b, b))
    return np.asarray(np.nan_to_num(np.clip(d, 0.0, 2.0), nan=1.0), dtype=np.float64)


def _dtw(x: F64, y: F64, lo: list[int], hi: list[int]) -> tuple[float, list[tuple[int, int]]]:
    """Dynamic time warping within a window: row i of the cost matrix spans columns lo[i]..hi[i].
    Ties go to the step from the row above, then from the left, then the diagonal, as fastdtw's
    ``min`` over those three picks them."""
    rows = np.repeat(np.arange(len(x)), [h - lo_ + 1 for lo_, h in zip(lo, hi, strict=True)])
    cols = np.concatenate([np.arange(lo_, h + 1) for lo_, h in zip(lo, hi, strict=True)])
    dist = _cosine(x, y, rows, cols).tolist()
    inf = math.inf
    cost: list[dict[int, float]] = []
    back: list[dict[int, int]] = []  # 0: from above, 1: from the left, 2: diagonal
    k = 0
    for i in range(len(x)):
        above = cost[i - 1] if i else {}
        row: dict[int, float] = {}
        step: dict[int, int] = {}
        for j in range(lo[i], hi[i] + 1):
            up = above.get(j, inf)
            left = row.get(j - 1, inf)
            # the start sits diagonally before (0, 0)
            diag = above.get(j - 1, inf) if i else (0.0 if j == 0 else inf)
            best, how = up, 0
            if left < best:
                best, how = left, 1
            if diag < best:
                best, how = diag, 2
            row[j] = best + dist[k]
            step[j] = how
            k += 1
        cost.append(row)
        back.append(step)
    i, j = len(x) - 1, len(y) - 1
    path = []
    while i >= 0 and j >= 0:
        path.append((i, j))
        how = back[i][j]
        i, j = (i - 1, j) if how == 0 else (i, j - 1) if how == 1 else (i - 1, j - 1)
    path.reverse()
    return cost[-1][len(y) - 1], path


def _window(path: list[tuple[int, int]], len_x: int, len_y: int, radius: int) -> tuple[list[int], list[int]]:
    """fastdtw's window for the finer level: the coarse path widened by ``radius`` cells each way, each
    cell then standing for the 2 x 2 cells it was averaged from."""
    n = path[-1][0] + 1
    first, last = [len_y] * n, [-1] * n
    for i, j in path:
        first[i], last[i] = min(first[i], j), max(last[i], j)
    lo, hi = [], []
    for i in range(len_x):
        c = i // 2  # the coarse row this fine row came from
        lo_c = max(0, first[max(0, min(n - 1, c - radius))] - radius)
        hi_c = last[min(n - 1, c + radius)] + radius
        lo.append(min(2 * lo_c, len_y - 1))
        hi.append(min(2 * hi_c + 1, len_y - 1))
    return lo, hi


def _halve(x: F64) -> F64:
    m = len(x) - len(x) % 2
    return np.asarray((x[:m:2] + x[1:m:2]) / 2, dtype=np.float64)


def fastdtw(x: F64, y: F64, radius: int = RADIUS) -> tuple[float, list[tuple[int, int]]]:
    """fastdtw's approximate DTW under cosine distance: the distance and the path of (row of x, row of y).
    Series shorter than ``radius + 2`` are aligned exactly; longer ones are halved (neighbours averaged),
    aligned, and the path refined within its widened window."""
    if len(x) < radius + 2 or len(y) < radius + 2:
        return _dtw(x, y, [0] * len(x), [len(y) - 1] * len(x))
    _, coarse = fastdtw(_halve(x), _halve(y), radius)
    lo, hi = _window(coarse, len(x), len(y), radius)
    return _dtw(x, y, lo, hi)


def _features(path: str) -> F64 | None:
    """The normalised MFCC frames of the file, ``None`` if it holds no samples."""
    y = load(path)
    return _peak_normalise(mfcc(y)) if len(y) else None


@metric("compare_audios", files=True)
def compare_audios(result: str | None, expected: str) -> float:
    """exp(-(DTW distance of the two files' MFCC frames) / (length of the alignment)): 1 for the same
    audio, lower the more they differ. 0 for no result file, one that is not decodable audio, or an
    empty one against a non-empty expected file; 1 if both hold no samples.

    Raises:
        AudioError: if the expected file is not decodable audio or longer than :data:`MAX_SECONDS`.
    """
    if not result:
        return 0.0
    try:
        gold = _features(expected)
    except AudioError as exc:
        raise AudioError(f"compare_audios: the expected file {exc}") from None
    try:
        mine = _features(result)
    except AudioError:
        return 0.0
    if gold is None or mine is None:
        return 1.0 if gold is None and mine is None else 0.0
    distance, path = fastdtw(mine, gold)
    return math.exp(-distance / len(path))
