#!/usr/bin/env bash
# Make sure Tesseract OCR reads English: the compare_image_text metric runs it on the host
# (osgym/tasks/metrics/ocr.py), and its tests draw their pictures in DejaVu. Used by `make ocr` and
# `make test`. On Debian as root it installs Debian's packages if needed;
# elsewhere it says what to install and stops.
set -euo pipefail

fonts=/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf
if command -v tesseract >/dev/null 2>&1 && tesseract --list-langs 2>/dev/null | grep -qx eng && [ -f "$fonts" ]; then
  exit 0
fi

if [ ! -f /etc/debian_version ] || [ "$(id -u)" != 0 ]; then
  echo "compare_image_text needs Tesseract OCR with English data (and its tests the DejaVu fonts):" \
       "install tesseract-ocr, tesseract-ocr-eng and fonts-dejavu-core (or your system's equivalents), then run this again" >&2
  exit 1
fi

echo "installing Debian's tesseract-ocr, tesseract-ocr-eng and fonts-dejavu-core ..." >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  tesseract-ocr tesseract-ocr-eng fonts-dejavu-core >/dev/null
