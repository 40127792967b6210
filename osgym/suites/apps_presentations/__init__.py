"""The ``apps-presentations`` suite: LibreOffice Impress tasks on the ``apps`` tier, evaluated by
``compare_pptx_files`` against a deck python-pptx builds from the variant's texts, or (a slide's layout,
a picture on it: :mod:`.slide_edits`) by ``check_include_exclude`` on facts read from the saved package.

Oracles work Impress by keys: Tab selects a slide's next placeholder, Enter edits it, Escape leaves it,
Ctrl+M adds a slide; they wait for the selection and the caret (from the accessibility tree) before
typing, since Impress drops the keys typed while it sets up a text edit.
"""

from __future__ import annotations

from osgym.suites.apps_presentations.impress import slides_append_slide, slides_title_bullets
from osgym.suites.apps_presentations.slide_edits import (
    slides_change_layout,
    slides_delete_slide,
    slides_insert_image,
)
from osgym.suites.generators import Template

NAME = "apps-presentations"
TIER = "apps"
"""A recipe of this suite must ask for ``tier: apps``."""
DESCRIPTION = ("LibreOffice Impress: slides from layouts, layout changes, pictures, deleted slides, saved as .pptx "
               "(needs tier: apps).")

TEMPLATES: list[Template] = [
    Template("slides-title-bullets", "libreoffice_impress", "a title slide and a bullet slide, saved as .pptx",
             slides_title_bullets, difficulty=1),
    Template("slides-append-slide", "libreoffice_impress", "add a bullet slide to a .pptx and save it anew",
             slides_append_slide, difficulty=2),
    Template("slides-change-layout", "libreoffice_impress", "change one slide's layout, save as .pptx",
             slides_change_layout, difficulty=2),
    Template("slides-insert-image", "libreoffice_impress", "insert a picture file onto one slide, save as .pptx",
             slides_insert_image, difficulty=2),
    Template("slides-delete-slide", "libreoffice_impress", "delete one slide of a deck, save as .pptx",
             slides_delete_slide, difficulty=1),
]
