"""compare_audios on generated audio (a short melody as WAV at two rates, in stereo 16-bit, and as MP3; another
melody; noise): the same audio scores 1, its resampled, remixed or MP3-coded copies nearly 1, other audio less,
noise least; no file, a file that is not audio or an empty one against audio scores 0. The score is continuous
(OSWorld's task files use it as it is, with no threshold), so the parity test compares the numbers themselves."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from osgym.tasks import metrics
from osgym.tasks.metrics import audio
from tests.metrics.cases import Case, File, check, ids, materialize, ours, parity
from tests.metrics.conftest import OSWorld

SCALE = [0, 2, 4, 5, 7, 9, 11, 12, 11, 9, 7, 5, 4, 2, 0, 0]
ARPEGGIO = [12, 7, 4, 0, 7, 12, 4, 7, 0, 5, 9, 12, 9, 5, 0, 0]
# Both implementations compute the same chain; float32 (librosa) against float64 (osgym) arithmetic and
# numpy's against scipy's sums leave differences near 1e-8 in these scores.
TOLERANCE = 1e-6


def melody(notes: list[int], rate: int, note_s: float = 0.25) -> np.ndarray:
    """Notes (semitones above middle C) with a soft attack and release and one overtone."""
    t = np.arange(int(rate * note_s)) / rate
    envelope = np.minimum(1.0, np.minimum(t * 50, (note_s - t) * 50))
    tones = []
    for n in notes:
        f = 261.63 * 2 ** (n / 12)
        tones.append(envelope * (0.5 * np.sin(2 * np.pi * f * t) + 0.2 * np.sin(4 * np.pi * f * t)))
    return np.concatenate(tones).astype(np.float32)


def encode(samples: np.ndarray, rate: int, name: str, **kw: str) -> File:
    buf = io.BytesIO()
    fmt = "MP3" if name.endswith(".mp3") else "WAV"
    sf.write(buf, samples, rate, format=fmt, **kw)
    return File(buf.getvalue(), name)


def noise(rate: int, seconds: float) -> np.ndarray:
    return (0.3 * np.random.default_rng(7).standard_normal(int(rate * seconds))).astype(np.float32)


GOLD = encode(melody(SCALE, 44_100), 44_100, "gold.wav")
RESAMPLED = encode(melody(SCALE, 22_050), 22_050, "song.wav")
MP3 = encode(melody(SCALE, 44_100), 44_100, "song.mp3")
STEREO = encode(np.stack([melody(SCALE, 48_000), 0.5 * melody(SCALE, 48_000)], axis=1), 48_000, "song.wav",
                subtype="PCM_16")
OTHER = encode(melody(ARPEGGIO, 44_100), 44_100, "song.wav")
NOISE = encode(noise(44_100, 4.0), 44_100, "song.wav")
EMPTY = encode(np.zeros(0, np.float32), 44_100, "song.wav")

CASES = [
    Case("same", GOLD, GOLD, 1.0),
    Case("missing-file", None, GOLD, 0.0),
    Case("not-audio", File(b"ID3 but no frames at all" * 40, "song.mp3"), GOLD, 0.0),
    Case("empty-against-audio", EMPTY, GOLD, 0.0),
    Case("both-empty", EMPTY, encode(np.zeros(0, np.float32), 44_100, "gold.wav"), 1.0),
]
# (case, lowest, highest score): copies of the gold melody score near 1, other audio lower
GRADED = [
    (Case("resampled-22k", RESAMPLED, GOLD, 1.0), 0.9999, 1.0),
    (Case("stereo-48k-16-bit", STEREO, GOLD, 1.0), 0.9999, 1.0),
    (Case("mp3", MP3, GOLD, 1.0), 0.98, 0.9999),
    (Case("other-melody", OTHER, GOLD, 1.0), 0.5, 0.9),
    (Case("noise", NOISE, GOLD, 1.0), 0.0, 0.5),
    # a handful of frames against the whole melody: fastdtw aligns them exactly (too short to halve)
    (Case("first-note-only", encode(melody(SCALE, 44_100)[:2_000], 44_100, "song.wav"), GOLD, 1.0), 0.0, 0.9),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_compare_audios(case: Case, tmp_path: Path) -> None:
    check("compare_audios", case, tmp_path)


@pytest.mark.parametrize(("case", "low", "high"), GRADED, ids=[c.id for c, _, _ in GRADED])
def test_compare_audios_grades_similarity(case: Case, low: float, high: float, tmp_path: Path) -> None:
    assert low <= ours("compare_audios", case, tmp_path) <= high


def test_compare_audios_ranks_copies_above_other_audio(tmp_path: Path) -> None:
    scores = [ours("compare_audios", c, tmp_path) for c, _, _ in GRADED]
    mp3, other, noisy = scores[2:5]
    assert min(scores[:2]) > mp3 > other > noisy


def test_compare_audios_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "vlc", "compare_audios", CASES + [c for c, _, _ in GRADED], tmp_path, tolerance=TOLERANCE)


def test_compare_audios_unreadable_expected_file_is_an_error(tmp_path: Path) -> None:
    result = materialize(GOLD, tmp_path / "r")
    expected = materialize(File(b"not audio", "gold.wav"), tmp_path / "e")
    with pytest.raises(ValueError, match="compare_audios: the expected file .* is not audio libsndfile can decode"):
        metrics.score("compare_audios", result, expected, {})


def test_compare_audios_refuses_audio_longer_than_the_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    short = materialize(encode(melody(SCALE[:4], 44_100), 44_100, "short.wav"), tmp_path / "s")
    long = materialize(GOLD, tmp_path / "l")
    monkeypatch.setattr(audio, "MAX_SECONDS", 2.0)
    assert metrics.score("compare_audios", long, short, {}) == 0.0
    with pytest.raises(ValueError, match="the expected file .*longer than 2 s"):
        metrics.score("compare_audios", short, long, {})


def test_fastdtw_is_exact_dtw_on_short_series_and_follows_a_shifted_copy() -> None:
    x = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    assert audio.fastdtw(x, x) == (0.0, [(0, 0), (1, 1), (2, 2)])
    t = np.linspace(0, 6, 200)[:, None]
    a = np.hstack([np.sin(t * k + k) for k in range(1, 5)])  # smooth, as MFCC frames of music are
    b = np.concatenate([a[:1].repeat(5, axis=0), a])  # the same series, five frames late
    distance, path = audio.fastdtw(b, a)
    assert distance == pytest.approx(0.0, abs=1e-9) and path[-1] == (204, 199) and len(path) == 205
    # the coarse-to-fine search only narrows the search: exact DTW (a radius as long as the series) is no worse
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((60, 4)), rng.standard_normal((50, 4))
    assert audio.fastdtw(x, y, radius=60)[0] <= audio.fastdtw(x, y)[0]
