"""compare_image_text on pictures drawn here (terminal screenshots in DejaVu Sans Mono, light and dark), read
by the real Tesseract: text shown scores 1, text not shown (or in another case) 0. OSWorld's function reads
with easyocr, which cannot run here, so there is no parity test (docs/osworld-coverage.md)."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from osgym.errors import EvaluatorError, TaskLoadError
from osgym.tasks import metrics
from osgym.tasks.metrics import ocr
from osgym.tasks.spec import load_task
from tests.metrics.cases import Case, File, check, ids

FONTS = Path("/usr/share/fonts/truetype/dejavu")  # Debian's fonts-dejavu-core (scripts/ensure-tesseract.sh)
PROMPT = "user@user-virtual-machine:~$ "
LS = ["Desktop    Downloads  Music     Public  Templates", "Documents  notes.txt  Pictures  snap    Videos"]
DARK = ((48, 10, 36), (255, 255, 255))  # GNOME Terminal's default colours: white on aubergine
LIGHT = ((255, 255, 255), (0, 0, 0))


def picture(lines: list[str], colours: tuple[tuple[int, ...], tuple[int, ...]] = DARK, *, size: int = 14,
            mode: str = "RGB", font: str = "DejaVuSansMono.ttf") -> bytes:
    """A PNG of ``lines`` drawn as a terminal draws them; ``mode`` RGBA: the background left transparent."""
    face = ImageFont.truetype(str(FONTS / font), size)
    bg, fg = colours
    img = Image.new(mode, (40 + size * max(len(line) for line in lines), 30 + len(lines) * size * 3 // 2),
                    (0, 0, 0, 0) if mode == "RGBA" else bg)
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(lines):
        draw.text((15, 15 + i * size * 3 // 2), line, font=face, fill=fg)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def shot(lines: list[str], colours: tuple[tuple[int, ...], tuple[int, ...]] = DARK, *, size: int = 14,
         mode: str = "RGB", font: str = "DejaVuSansMono.ttf") -> File:
    return File(picture(lines, colours, size=size, mode=mode, font=font), "ls.png")


def xwd(png: bytes, *, bpp: int = 32, msb_first: bool = False, visual: int = 4) -> bytes:
    """The picture as ``xwd -root`` writes it: header, window name, 256 colour-map entries, then rows of
    pixels padded to 32 bits, red in the high bits."""
    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.uint32)
    h, w = rgb.shape[:2]
    value = (rgb[:, :, 0] << 16) | (rgb[:, :, 1] << 8) | rgb[:, :, 2]
    octets = np.stack([(value >> (8 * i)) & 0xFF for i in range(bpp // 8)], axis=-1).astype(np.uint8)
    if msb_first:
        octets = octets[:, :, ::-1]
    per_line = (w * bpp // 8 + 3) // 4 * 4
    rows = np.zeros((h, per_line), np.uint8)
    rows[:, :w * bpp // 8] = octets.reshape(h, -1)
    name = b"root\0"
    head = struct.pack(">25I", 100 + len(name), 7, 2, 24, w, h, 0, int(msb_first), 32, int(msb_first), 32, bpp,
                       per_line, visual, 0xFF0000, 0xFF00, 0xFF, 8, 256, 256, w, h, 0, 0, 0)
    return head + name + bytes(12 * 256) + rows.tobytes()


def text(want: str) -> dict[str, str]:
    return {"type": "text", "text": want}


TERMINAL = [PROMPT + "ls", *LS, PROMPT]
CASES = [
    Case("dark-word", shot(TERMINAL), text("Documents"), 1.0),
    Case("light-word", shot(TERMINAL, LIGHT), text("Templates"), 1.0),
    Case("dark-11px", shot(TERMINAL, size=11), text("Pictures snap Videos"), 1.0),
    Case("light-18px", shot(TERMINAL, LIGHT, size=18), text("Downloads Music"), 1.0),
    Case("dark-prompt", shot(TERMINAL), text("user@user-virtual-machine"), 1.0),
    # the terminal's run of spaces between columns reads as one space, as easyocr's pieces are joined
    Case("columns-one-space", shot(TERMINAL), text("Public Templates"), 1.0),
    Case("columns-as-drawn", shot(TERMINAL), text("Public  Templates"), 0.0),
    Case("dark-absent", shot(TERMINAL), text("Downloads2"), 0.0),
    Case("light-absent", shot(TERMINAL, LIGHT), text("Trash"), 0.0),
    Case("case-differs", shot(TERMINAL), text("documents"), 0.0),
    Case("larger-font", shot(["Quarterly report"], LIGHT, size=28, font="DejaVuSans.ttf"), text("Quarterly report"),
         1.0),
    Case("transparent-background", shot(["Hello Writer"], LIGHT, mode="RGBA"), text("Hello Writer"), 1.0),
    # an X11 screen dump saved under a PNG name, as ``xwd -root -out ls.png`` leaves it
    Case("xwd-32-bits", File(xwd(picture(TERMINAL)), "ls.png"), text("Documents"), 1.0),
    Case("xwd-24-bits-msb-first", File(xwd(picture(TERMINAL, LIGHT), bpp=24, msb_first=True), "ls.png"),
         text("Templates"), 1.0),
    Case("xwd-absent", File(xwd(picture(TERMINAL)), "ls.png"), text("Trash"), 0.0),
    Case("xwd-colour-map", File(xwd(picture(TERMINAL), visual=3), "ls.png"), text("Documents"), 0.0),
    Case("xwd-truncated", File(xwd(picture(TERMINAL))[:5000], "ls.png"), text("Documents"), 0.0),
    Case("no-file", None, text("Documents"), 0.0),
    Case("not-an-image", File("Desktop Documents\n", "ls.png"), text("Documents"), 0.0),
    Case("empty-file", File(b"", "ls.png"), text("Documents"), 0.0),
    Case("blank-picture", shot([" "], LIGHT), text("Documents"), 0.0),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_compare_image_text(case: Case, tmp_path: Path) -> None:
    check("compare_image_text", case, tmp_path)


def test_the_leading_space_of_the_osworld_rule_needs_a_word_before(tmp_path: Path) -> None:
    """The OSWorld task wants " Ls": "Ls" after another word, since the joined text neither starts nor ends
    with a space. Its screenshot shows the command ``ls`` after the prompt, which easyocr reads as "Ls";
    Tesseract reads the lowercase letters (or "1s"), so that screenshot scores 0 here."""
    cases = [Case("after-a-word", shot(["run Ls now"], LIGHT, font="DejaVuSans.ttf"), text(" Ls"), 1.0),
             Case("first-word", shot(["Ls first"], LIGHT, font="DejaVuSans.ttf"), text(" Ls"), 0.0),
             Case("terminal-ls", shot(TERMINAL), text(" Ls"), 0.0)]
    for case in cases:
        check("compare_image_text", case, tmp_path)


def test_compare_image_text_scores_0_for_a_picture_declaring_too_many_pixels(tmp_path: Path) -> None:
    huge = tmp_path / "huge.png"
    Image.new("1", (9000, 9000)).save(huge)  # 81 megapixels in a few kilobytes
    assert metrics.score("compare_image_text", str(huge), text("Documents"), {}) == 0.0


def test_compare_image_text_scores_0_when_tesseract_runs_out_of_time(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ls.png"
    path.write_bytes(picture(TERMINAL))
    monkeypatch.setattr(ocr, "TIMEOUT_S", 0.001)
    assert metrics.score("compare_image_text", str(path), text("Documents"), {}) == 0.0


def test_compare_image_text_without_tesseract_says_how_to_install_it(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ls.png"
    path.write_bytes(picture(TERMINAL))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(EvaluatorError, match="apt-get install tesseract-ocr tesseract-ocr-eng.*no `tesseract` on"):
        metrics.score("compare_image_text", str(path), text("Documents"), {})


def test_compare_image_text_without_english_data_says_how_to_install_it(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ls.png"
    path.write_bytes(picture(TERMINAL))
    monkeypatch.setenv("TESSDATA_PREFIX", str(tmp_path))  # a folder without eng.traineddata
    with pytest.raises(EvaluatorError, match="tesseract-ocr-eng.*tesseract exited with 1: .*eng"):
        metrics.score("compare_image_text", str(path), text("Documents"), {})


def _task(rules: object) -> dict[str, object]:
    return {"id": "t-ocr", "instruction": "x",
            "evaluator": {"func": "compare_image_text",
                          "result": {"type": "vm_file", "path": "/home/user/Desktop/ls.png", "dest": "ls.png"},
                          "expected": {"type": "rule", "rules": rules}}}


def test_compare_image_text_rules_load() -> None:
    assert load_task(_task(text(" Ls"))).evaluator.funcs == ["compare_image_text"]


@pytest.mark.parametrize("rules, named", [
    ({"type": "regex", "text": "ls"}, "rules.type: Input should be 'text'"),
    ({"type": "text"}, "rules.text: Field required"),
    ({"type": "text", "text": 5}, "rules.text: Input should be a valid string"),
    ({"type": "text", "text": "ls", "case": "ignore"}, "rules.case: Extra inputs are not permitted"),
])
def test_compare_image_text_bad_rules_fail_at_load(rules: dict[str, object], named: str) -> None:
    with pytest.raises(TaskLoadError, match=f"'compare_image_text': {named}"):
        load_task(_task(rules))


def test_compare_image_text_called_with_another_rule_type_raises_value_error(tmp_path: Path) -> None:
    path = tmp_path / "ls.png"
    path.write_bytes(picture(TERMINAL))
    with pytest.raises(ValueError, match="type"):
        metrics.score("compare_image_text", str(path), {"type": "regex", "text": "ls"}, {})


@pytest.mark.parametrize("bpp, msb_first", [(32, False), (32, True), (24, False), (24, True)])
def test_compare_image_text_reads_an_x11_screen_dump_pixel_for_pixel(tmp_path: Path, bpp: int,
                                                                      msb_first: bool) -> None:
    png = picture(TERMINAL, size=11)
    path = tmp_path / "ls.png"
    path.write_bytes(xwd(png, bpp=bpp, msb_first=msb_first))
    got = ocr.read_xwd(str(path))
    assert got is not None
    assert np.array_equal(np.asarray(got), np.asarray(Image.open(io.BytesIO(png)).convert("RGB")))


def test_compare_image_text_scores_0_for_a_screen_dump_declaring_too_many_pixels(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ls.png"
    path.write_bytes(xwd(picture(TERMINAL)))
    assert metrics.score("compare_image_text", str(path), text("Documents"), {}) == 1.0
    monkeypatch.setattr(ocr, "XWD_MAX_PIXELS", 100 * 100)
    assert metrics.score("compare_image_text", str(path), text("Documents"), {}) == 0.0
