"""Guards for the agent's files before a document library unpacks them.

xlsx, docx and pptx files are zip archives. A result file is the agent's output, so untrusted: a
few kilobytes can declare gigabytes of XML. Python's ``zipfile`` never inflates a member past the
size its header declares, so summing the declared sizes bounds what openpyxl, pandas, python-docx
and python-pptx can be made to read.

>>> too_big("/nonexistent.xlsx")
False
"""

from __future__ import annotations

import zipfile

MAX_UNPACKED = 256 * 2**20  # bytes of XML and media an office file may unpack to; real ones are far smaller


def too_big(path: str) -> bool:
    """Whether the archive at ``path`` declares more than ``MAX_UNPACKED`` bytes (False if it is no archive:
    the document library then reports it unreadable)."""
    try:
        with zipfile.ZipFile(path) as z:
            return sum(i.file_size for i in z.infolist()) > MAX_UNPACKED
    except (OSError, zipfile.BadZipFile, ValueError):
        return False
